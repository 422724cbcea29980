/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: compile-time constants for the reflected CRC-32 (IEEE 802.3) engines.
 *
 * Private header (not installed). Everything here is derived from the
 * polynomial at compile time by constexpr functions; nothing is a magic
 * number copied from elsewhere. The derivation is in doc/icrc.md; in short
 * (following the method of Intel's white paper "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ Instruction", Gopal et al., 2009):
 *
 *  - A 16-byte little-endian load V holds the bit-reflection of a degree<128
 *    polynomial A (message bit j is the coefficient of x^(127-j)).
 *  - A carry-less multiply of a 64-bit reflected operand and a 33-bit
 *    reflected constant rev33(c) is the 96-bit reflection of the product,
 *    i.e. rev128(a * c * x^32) when read as a 128-bit lane.
 *  - Folding A forward by D bits: A*x^D = A_hi*x^(D+64) + A_lo*x^D
 *    == A_hi * (x^(D+32) mod P) * x^32 + A_lo * (x^(D-32) mod P) * x^32,
 *    so the constant pair is { rev33(x^(D+32) mod P), rev33(x^(D-32) mod P) }.
 *  - 128 -> 32 bit reduction uses x^128, x^96, x^64 mod P and a Barrett step
 *    with mu = floor(x^64 / P).
 */
#ifndef UROCE_ICRC_CRC32_FOLD_CONSTS_H
#define UROCE_ICRC_CRC32_FOLD_CONSTS_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace uroce::crc32_detail {

/* IEEE 802.3 CRC-32 generator, normal (MSB-first) form without the x^32 term. */
inline constexpr uint32_t poly_normal = 0x04C11DB7u;

constexpr uint32_t rev32(uint32_t v) {
    uint32_t r = 0;
    for (int i = 0; i < 32; i++)
        r |= ((v >> i) & 1u) << (31 - i);
    return r;
}

/* The reflected polynomial that table-driven code uses (0xEDB88320). */
inline constexpr uint32_t poly_reflected = rev32(poly_normal);

/* x^k mod P in normal form (bit i = coefficient of x^i), by k steps of
 * "multiply by x, reduce". Linear in k, but only evaluated at compile time. */
constexpr uint32_t xpow_mod(uint32_t k) {
    uint32_t v = 1; /* x^0 */
    for (uint32_t i = 0; i < k; i++)
        v = (v << 1) ^ ((v & 0x80000000u) ? poly_normal : 0u);
    return v;
}

/* 33-bit reflection of a degree<=31 polynomial: bit (32-i) = coeff of x^i.
 * Bit 0 (the x^32 coefficient) is therefore 0. */
constexpr uint64_t rev33_of_mod(uint32_t normal) {
    return uint64_t(rev32(normal)) << 1;
}

/* floor(x^64 / P) by long division, normal form, 33 bits (degree 32). */
constexpr uint64_t barrett_mu_normal() {
    const uint64_t p33 = (uint64_t(1) << 32) | poly_normal;
    uint64_t rem = 0, quo = 0;
    /* Dividend x^64: a 1 followed by 64 zero bits, fed MSB first. */
    for (int bit = 64; bit >= 0; bit--) {
        rem = (rem << 1) | (bit == 64 ? 1u : 0u);
        quo <<= 1;
        if (rem & (uint64_t(1) << 32)) {
            rem ^= p33;
            quo |= 1;
        }
    }
    return quo;
}

/* 33-bit reflection of a degree<=32 polynomial given in normal form. */
constexpr uint64_t rev33(uint64_t normal33) {
    uint64_t r = 0;
    for (int i = 0; i <= 32; i++)
        r |= ((normal33 >> i) & 1u) << (32 - i);
    return r;
}

/* Carry-less 32x33 multiply, for the self-checks below. */
constexpr uint64_t clmul_scalar(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    for (int i = 0; i < 64; i++)
        if ((b >> i) & 1u) r ^= a << i;
    return r;
}

inline constexpr uint64_t mu_normal = barrett_mu_normal();
/* Self-check of the division: mu * P + (x^64 mod P) == x^64. With
 * mu = x^32 + mu_lo and P = x^32 + p_lo, mu * P = x^64 + x^32 * p_lo + mu_lo * P;
 * everything but the x^64 term fits in 64 bits and must cancel. */
static_assert((mu_normal >> 32) == 1, "mu must have degree 32");
static_assert(((uint64_t(poly_normal) << 32) ^
               clmul_scalar(mu_normal & 0xFFFFFFFFu, (uint64_t(1) << 32) | poly_normal) ^
               xpow_mod(64)) == 0,
              "Barrett mu inconsistent with x^64 mod P");

/* Barrett constants, reflected: rev33(mu) and rev33(P). */
inline constexpr uint64_t k_mu = rev33(mu_normal);
inline constexpr uint64_t k_poly = rev33((uint64_t(1) << 32) | poly_normal);

/* 128->64 bit reduction constants (doc/icrc.md, "Final reduction"). */
inline constexpr uint64_t k_x128 = rev33_of_mod(xpow_mod(128));
inline constexpr uint64_t k_x96 = rev33_of_mod(xpow_mod(96));
inline constexpr uint64_t k_x64 = rev33_of_mod(xpow_mod(64));

/* Fold-by-distance table. fold_k(d) folds a 16-byte block forward by d
 * blocks (D = 128*d bits): { lo: rev33(x^(D+32) mod P), hi: rev33(x^(D-32) mod P) }.
 * The table is stored in DEcreasing distance so that consecutive entries form
 * the constant of a wide register whose lanes hold consecutive blocks: a
 * 256-bit register with its low lane at distance d and its high lane at d-1
 * is one 32-byte load, a 512-bit one (lanes at d, d-1, d-2, d-3) one 64-byte
 * load. 64 distances cover the 512-bit engine's 8 accumulators (its final
 * fold reaches distance 8*4-1+32 = 63, see uroce_crc32_vclmul512.cpp). */
inline constexpr unsigned fold_max_dist = 64;

struct alignas(16) fold_pair {
    uint64_t lo; /* multiplies bytes 0..7 of the block (the higher-degree half) */
    uint64_t hi; /* multiplies bytes 8..15 */
};

constexpr std::array<fold_pair, fold_max_dist + 1> make_fold_table() {
    std::array<fold_pair, fold_max_dist + 1> t{};
    for (unsigned j = 0; j <= fold_max_dist; j++) {
        const unsigned d = fold_max_dist - j;
        if (d == 0) {
            t[j] = fold_pair{0, 0}; /* distance 0 is the identity, never multiplied */
            continue;
        }
        const uint32_t bits = 128 * d;
        t[j] = fold_pair{rev33_of_mod(xpow_mod(bits + 32)), rev33_of_mod(xpow_mod(bits - 32))};
    }
    return t;
}

alignas(64) inline constexpr std::array<fold_pair, fold_max_dist + 1> fold_table =
    make_fold_table();

/* Index of the constant for distance d (1..fold_max_dist) in fold_table. */
constexpr unsigned fold_index(unsigned d) {
    return fold_max_dist - d;
}

/* Direct 512 -> 64 bit reduction (the 512-bit engine's inputs of at most 64
 * bytes, doc/icrc.md): a zmm holds four blocks, lane l sitting 3 - l blocks
 * before the last one. Each 32-bit piece j of lane l (bytes 4j..4j+3, piece 0
 * the highest-degree one) times rev33(x^(128 (3-l) + 128 - 32 j) mod P) is a
 * product of at most 64 bits congruent to its share of the register, the
 * same as reduce128 does for one block (where piece 3's x^32 is a shift).
 * a[l] multiplies pieces 0 and 2 (the low halves of the two qwords), b[l]
 * pieces 1 and 3 (the high halves, shifted down). */
struct alignas(64) piece_consts {
    fold_pair a[4];
    fold_pair b[4];
};

constexpr piece_consts make_piece_consts() {
    piece_consts c{};
    for (unsigned l = 0; l < 4; l++) {
        const uint32_t base = 128 * (3 - l);
        c.a[l] = fold_pair{rev33_of_mod(xpow_mod(base + 128)), rev33_of_mod(xpow_mod(base + 64))};
        c.b[l] = fold_pair{rev33_of_mod(xpow_mod(base + 96)), rev33_of_mod(xpow_mod(base + 32))};
    }
    return c;
}

inline constexpr piece_consts piece_table = make_piece_consts();

/* The longest input of the 512-bit engine's loop-free direct-reduction form
 * (four zmm registers, uroce_crc32_vclmul512.cpp). */
inline constexpr unsigned zmm_direct_max = 256;

/* rev33(x^(8n) mod P), n = 0..zmm_direct_max: the start register's share of
 * the result for an n-byte input is the register times x^(8n) (doc/icrc.md,
 * notation). */
constexpr std::array<uint64_t, zmm_direct_max + 1> make_reg_shift_table() {
    std::array<uint64_t, zmm_direct_max + 1> t{};
    for (unsigned n = 0; n <= zmm_direct_max; n++)
        t[n] = rev33_of_mod(xpow_mod(8 * n));
    return t;
}

inline constexpr std::array<uint64_t, zmm_direct_max + 1> reg_shift_table = make_reg_shift_table();

/* pshufb control bytes for variable byte shifts of a 16-byte register:
 * loading 16 bytes at shuf_table + 16 - s gives "shift up by s bytes"
 * (byte j <- byte j-s, zero-fill); at shuf_table + 16 + s "shift down by s"
 * (byte j <- byte j+s, zero-fill). 0x80 makes pshufb write zero. */
alignas(64) inline constexpr uint8_t shuf_table[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* Slicing-by-8 tables: tables[k][b] is the register after byte b followed by
 * k zero bytes, starting from 0. Defined in uroce_crc32_scalar.cpp; the SIMD
 * engines use tables[0] for 1..3 byte inputs. */
struct crc_tables {
    uint32_t t[8][256];
};
extern const crc_tables tables;

} // namespace uroce::crc32_detail

#endif

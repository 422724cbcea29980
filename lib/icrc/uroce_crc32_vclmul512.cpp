/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 with VPCLMULQDQ folding on 512-bit (zmm) registers.
 *
 * Needs AVX-512F/BW/VL/VBMI + VPCLMULQDQ with the OS saving the ZMM state: every
 * function here is compiled with UROCE_ZMM_TARGET and only ever called after
 * the run-time CPUID/XGETBV check in uroce_crc32.cpp (which also honours
 * DPDK's max SIMD bitwidth, doc/icrc.md "Dispatch").
 *
 * The layout is the one of the 128- and 256-bit engines: 16-byte blocks
 * aligned to the end of the buffer, the partial head block in front, every
 * block folded to the position of the last one. A zmm holds four consecutive
 * blocks, its lane l one block closer to the end than lane l-1, so its
 * constant is four consecutive entries of the distance-descending fold table
 * (one 64-byte load). The main loop keeps UROCE_ZMM_ACCS zmm accumulators,
 * each folded by 4 * UROCE_ZMM_ACCS blocks per iteration, and merges the two
 * products and the next data with one VPTERNLOGQ.
 *
 * Inputs of 16 to 256 bytes take one to four zmm folded onto the last one
 * and a direct 512 -> 64 bit reduction (zmm_direct + pieces512), also the
 * ICRC's masked header form (icrc_masked_vclmul512, with the seed's share
 * from a table). Below 16 bytes the 256-bit engine's short form (a direct
 * tail call). The 64 -> 32 bit step is a table look-up (reduce64_tables,
 * doc/icrc.md "Final reduction").
 */
/* GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands
 * from self-initialised variables, which -Wmaybe-uninitialized (and, in some
 * inlining contexts, -Wuninitialized) flags once inlined (GCC bug 105593);
 * both must be off before <immintrin.h> comes in. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <uroce/crc32.h>
#include <uroce/icrc.h>
#include "crc32_clmul_engine.h"
#include "crc32_internal.h"

#ifndef UROCE_ZMM_ACCS
#define UROCE_ZMM_ACCS 4
#endif
/* From this many bytes the accumulator loop, below it the loop-free form. */
#ifndef UROCE_ZMM_LOOP_MIN
#define UROCE_ZMM_LOOP_MIN 1024
#endif
#ifndef UROCE_ZMM_REDUCE64
#define UROCE_ZMM_REDUCE64 reduce64_tables
#endif
/* Up to this many bytes the loop-free direct form (zmm_direct). */
#ifndef UROCE_ZMM_DIRECT_MAX
#define UROCE_ZMM_DIRECT_MAX 256
#endif
static_assert(UROCE_ZMM_DIRECT_MAX >= 64 &&
                  UROCE_ZMM_DIRECT_MAX <= uroce::crc32_detail::zmm_direct_max,
              "bad zmm direct-form limit");
static_assert(8 * UROCE_ZMM_ACCS - 1 <= uroce::crc32_detail::fold_max_dist,
              "the final fold of the zmm loop needs distances up to 8 * UROCE_ZMM_ACCS - 1");
static_assert(UROCE_ZMM_LOOP_MIN >= 16 * (4 * UROCE_ZMM_ACCS + 1) &&
                  UROCE_ZMM_LOOP_MIN <= 16 * (uroce::crc32_detail::fold_max_dist + 1),
              "bad zmm loop threshold");
static_assert(uroce::crc32_detail::crc32_zmm_min >= 16 * 6, "the zmm short form needs 6+ blocks");

#define UROCE_ZMM_TARGET                                                                           \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,vpclmulqdq,avx2,pclmul")))
#define UROCE_ZMM_INLINE UROCE_ZMM_TARGET __attribute__((always_inline)) inline

namespace uroce {
namespace crc32_detail {
namespace {

UROCE_ZMM_INLINE __m256i loadu256(const void *p) {
    return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

UROCE_ZMM_INLINE __m512i loadu512(const void *p) {
    return _mm512_loadu_si512(p);
}

template <class IO> UROCE_ZMM_INLINE __m256i ld256(const IO &io, const uint8_t *p) {
    const __m256i v = loadu256(p);
    if constexpr (IO::copy) io.put(p, v);
    return v;
}

template <class IO> UROCE_ZMM_INLINE __m512i ld512(const IO &io, const uint8_t *p) {
    const __m512i v = loadu512(p);
    if constexpr (IO::copy) io.put(p, v);
    return v;
}

/* a ^ b ^ c in one instruction. */
UROCE_ZMM_INLINE __m512i xor3(__m512i a, __m512i b, __m512i c) {
    return _mm512_ternarylogic_epi64(a, b, c, 0x96);
}

/* Constants for a ymm whose lanes sit d and d-1 blocks before the last block
 * (2 <= d <= fold_max_dist). */
UROCE_ZMM_INLINE __m256i fold_k2(unsigned d) {
    return loadu256(&fold_table[fold_index(d)]);
}

/* Constants for a zmm whose lanes sit d, d-1, d-2, d-3 blocks before the
 * last block (4 <= d <= fold_max_dist). */
UROCE_ZMM_INLINE __m512i fold_k4(unsigned d) {
    return loadu512(&fold_table[fold_index(d)]);
}

UROCE_ZMM_INLINE __m256i fold32(__m256i x, __m256i k) {
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                            _mm256_clmulepi64_epi128(x, k, 0x11));
}

/* acc ^ x folded by k. */
UROCE_ZMM_INLINE __m512i fold64_into(__m512i acc, __m512i x, __m512i k) {
    return xor3(acc, _mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11));
}

/* XOR of the four 128-bit lanes: the three upper lanes extracted side by
 * side (independent) and XORed in two steps, rather than 512 -> 256 -> 128
 * (two extracts in series): one cross-lane latency on the critical path
 * instead of two (0.3-0.5 ns per header ICRC on the Zen 5, doc/icrc.md). */
UROCE_ZMM_INLINE __m128i xor_lanes(__m512i z) {
    return _mm_ternarylogic_epi64(
        _mm_xor_si128(_mm512_castsi512_si128(z), _mm512_extracti32x4_epi32(z, 1)),
        _mm512_extracti32x4_epi32(z, 2), _mm512_extracti32x4_epi32(z, 3), 0x96);
}

/* Folds the c consecutive blocks at q, block j sitting d0 - j blocks before
 * the last block (d0 - c + 1 >= 1), into x (one single block, if c is odd),
 * y (one pair, if c & 2) and z0/z1 (the quads, alternately). The single and
 * the pair come first, where the distances are largest, so every quad's
 * distances are >= 1. */
template <class IO>
UROCE_ZMM_INLINE void fold_run(const IO &io, const uint8_t *q, unsigned c, unsigned d0, __m128i &x,
                               __m256i &y, __m512i &z0, __m512i &z1) {
    unsigned j = 0;
    if (c & 1) {
        x = _mm_xor_si128(x, fold16(ld128(io, q), fold_k(d0)));
        j = 1;
    }
    if (c & 2) {
        y = _mm256_xor_si256(y, fold32(ld256(io, q + 16 * j), fold_k2(d0 - j)));
        j += 2;
    }
    for (unsigned i = 0; j < c; j += 4, i++) {
        if (i & 1)
            z1 = fold64_into(z1, ld512(io, q + 16 * j), fold_k4(d0 - j));
        else
            z0 = fold64_into(z0, ld512(io, q + 16 * j), fold_k4(d0 - j));
    }
}

/* The 128-bit sum of everything folded so far. */
UROCE_ZMM_INLINE __m128i sum128(__m128i x, __m256i y, __m512i z0, __m512i z1) {
    const __m128i yz = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    return _mm_xor_si128(_mm_xor_si128(x, yz), xor_lanes(_mm512_xor_si512(z0, z1)));
}

/* T (the folded value of the message up to end - t) followed by the t tail
 * bytes end[-t..-1] (1 <= t <= 15, at least 16 bytes readable before end):
 * the 16 + t byte message T || tail, cut like every other input into a
 * t-byte head (T's first t bytes, zero-padded in front) and one block (T's
 * last 16 - t bytes, then the tail), folded into one 128-bit value. */
template <class IO>
UROCE_ZMM_INLINE __m128i append_tail(const IO &io, __m128i t128, const uint8_t *end, unsigned t) {
    const __m128i tail = _mm_maskz_mov_epi8(static_cast<__mmask16>(0xFFFFu << (16 - t)),
                                            ld128(io, end - 16)); /* tail at the top */
    const __m128i block = _mm_or_si128(_mm_shuffle_epi8(t128, shuf_down(t)), tail);
    const __m128i head = _mm_shuffle_epi8(t128, shuf_up(16 - t));
    return _mm_xor_si128(block, fold16(head, fold_k(1)));
}

/* The 64 bytes of z, its last byte the last byte of the message, to a
 * 64-bit Z congruent to their share of the register (reduce128's Z). No
 * 128-bit stage: each 32-bit piece of each lane is multiplied by its own
 * constant straight to 64 bits (piece_table, 4 multiplies for all 16
 * pieces), then the lanes are XORed. */
UROCE_ZMM_INLINE __m128i pieces512(__m512i z) {
    const __m512i even = _mm512_maskz_mov_epi32(0x5555, z); /* pieces 0 and 2 of each lane */
    const __m512i odd = _mm512_srli_epi64(z, 32);           /* pieces 1 and 3 */
    const __m512i ka = _mm512_load_si512(piece_table.a);
    const __m512i kb = _mm512_load_si512(piece_table.b);
    const __m512i s =
        xor3(_mm512_clmulepi64_epi128(even, ka, 0x00), _mm512_clmulepi64_epi128(even, ka, 0x11),
             _mm512_clmulepi64_epi128(odd, kb, 0x00));
    return xor_lanes(_mm512_xor_si512(s, _mm512_clmulepi64_epi128(odd, kb, 0x11)));
}

/* The register after an n-byte message (n <= zmm_direct_max) started from
 * reg, whose last 64 bytes are folded into z: the start register's share is
 * reg x^(8n) mod P, one more multiply (by reg_shift_table[n]) that does not
 * wait for the data, added to Z before the final reduction. */
UROCE_ZMM_INLINE uint32_t reduce512(__m512i z, uint32_t reg, size_t n) {
    const __m128i r = _mm_clmulepi64_si128(
        _mm_cvtsi32_si128(static_cast<int>(reg)),
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(&reg_shift_table[n])), 0x00);
    return UROCE_ZMM_REDUCE64(_mm_xor_si128(r, pieces512(z)));
}

/* icrc_seed after n zero bytes, n = 0..zmm_direct_max: the ICRC seed's share
 * of the register after an n-byte masked header call (the reduction is
 * linear, so it is XORed in after it: no multiply at all). */
constexpr std::array<uint32_t, zmm_direct_max + 1> make_icrc_seed_shift() {
    std::array<uint32_t, zmm_direct_max + 1> t{};
    uint32_t reg = icrc_seed;
    for (unsigned n = 0; n <= zmm_direct_max; n++) {
        t[n] = reg;
        for (int b = 0; b < 8; b++)
            reg = (reg >> 1) ^ ((reg & 1u) ? poly_reflected : 0u);
    }
    return t;
}

alignas(64) constexpr std::array<uint32_t, zmm_direct_max + 1> icrc_seed_shift =
    make_icrc_seed_shift();

/* 64 bytes at p + off, ORed with the mask bytes at the same offset if Masked. */
template <bool Masked, class IO>
UROCE_ZMM_INLINE __m512i load512_m(const IO &io, const uint8_t *p, const uint8_t *mask,
                                   ptrdiff_t off) {
    static_assert(!(Masked && IO::copy), "a masked load is never copied");
    const __m512i v = ld512(io, p + off);
    if constexpr (Masked)
        return _mm512_or_si512(v, loadu512(mask + off));
    else
        return v;
}

/* byte_up_index + 64 - s: the VPERMB index that moves a register's bytes up
 * by s (0..64): index i - s for byte i (the bytes below s are masked off). */
constexpr std::array<int8_t, 128> make_byte_up_index() {
    std::array<int8_t, 128> t{};
    for (int i = 0; i < 128; i++)
        t[size_t(i)] = static_cast<int8_t>(i - 64);
    return t;
}
alignas(64) constexpr std::array<int8_t, 128> byte_up_index = make_byte_up_index();

/* 16 <= n <= zmm_direct_max bytes in k = ceil(n / 64) zmm registers (1..4),
 * no loop and no 128-bit stage; returns them folded into one (then
 * reduce512). The registers are cut from the END: the last one holds the
 * last 64 bytes, the first one the n - 64 (k - 1) leading bytes at its top
 * (leading zeros are free). Each earlier register folds straight onto the
 * last one: all its lanes move by the same 4 (k - 1 - i) blocks, one
 * broadcast constant and two independent multiplies. If Masked, each byte is
 * ORed with its mask byte (crc32_update_masked; the mask is read at the same
 * offsets).
 *
 * The first register's bytes are loaded from p itself, byte-masked to the
 * 64 - lead that belong to it, and moved up by VPERMB. A masked load that
 * started lead bytes before p (reading nothing there architecturally) still
 * waited for the cache line before p: in front of a received frame's IP
 * header, that is the mbuf's headroom, which nothing else touches, so with
 * thousands of QPs every 64 B SEND's ICRC waited for a miss (doc/icrc.md,
 * "16 to 256 bytes"). The copying forms store the first register's bytes
 * from the unmoved register, with the same mask, so no line before dst is
 * written or asked for either. */
template <bool Masked, class IO = io_crc>
UROCE_ZMM_INLINE __m512i zmm_direct(const uint8_t *p, const uint8_t *mask, size_t n,
                                    const IO &io = {}) {
    const unsigned k = static_cast<unsigned>((n + 63) >> 6);
    const unsigned lead = 64 * k - static_cast<unsigned>(n); /* 0..63 */
    const __mmask64 own = ~uint64_t(0) >> lead;              /* bytes [0, 64 - lead) */
    __m512i first = _mm512_maskz_loadu_epi8(own, p);
    if constexpr (IO::other)
        _mm512_mask_storeu_epi8(io.template at<void>(p), own,
                                _mm512_maskz_loadu_epi8(own, io.from(p)));
    else if constexpr (IO::copy)
        _mm512_mask_storeu_epi8(io.template at<void>(p), own, first);
    if constexpr (Masked) first = _mm512_or_si512(first, _mm512_maskz_loadu_epi8(own, mask));
    first = _mm512_maskz_permutexvar_epi8(~uint64_t(0) << lead,
                                          loadu512(byte_up_index.data() + 64 - lead), first);
    if (k == 1) return first;
    const ptrdiff_t last = static_cast<ptrdiff_t>(n) - 64;
    __m512i acc = fold64_into(load512_m<Masked>(io, p, mask, last), first,
                              _mm512_broadcast_i32x4(fold_k(4 * (k - 1))));
    for (unsigned i = 1; i + 1 < k; i++)
        acc = fold64_into(acc, load512_m<Masked>(io, p, mask, ptrdiff_t(64 * i - lead)),
                          _mm512_broadcast_i32x4(fold_k(4 * (k - 1 - i))));
    return acc;
}

/* 6 * 16 <= n < 16 * (fold_max_dist + 1) bytes, no loop: every block folds
 * straight to the last block's position, all multiplies independent. As in
 * the 256-bit short form, the seeded first block and the head are folded as
 * 16-byte blocks (no insert into a wide register on the critical path), the
 * last block is XORed as it is, and blocks 1..m-2 go through fold_run. */
template <class IO>
UROCE_ZMM_INLINE uint32_t crc_zmm_short(uint32_t reg, const uint8_t *p, size_t n, const IO &io) {
    const unsigned r = static_cast<unsigned>(n & 15);
    const unsigned m = static_cast<unsigned>(n >> 4); /* 6..fold_max_dist */
    const uint8_t *q = p + r;
    __m128i head;
    const __m128i b0 = first_block(reg, p, r, &head, io);
    __m128i x = _mm_xor_si128(ld128(io, q + 16 * (m - 1)), fold16(b0, fold_k(m - 1)));
    if (r) x = _mm_xor_si128(x, fold16(head, fold_k(m)));
    __m256i y = _mm256_setzero_si256();
    __m512i z0 = _mm512_setzero_si512(), z1 = z0;
    fold_run(io, q + 16, m - 2, m - 2, x, y, z0, z1);
    return reduce128(sum128(x, y, z0, z1));
}

/* 16 * (4N + 1) bytes or more: N zmm accumulators stride over 4N blocks.
 * Unlike the shorter forms, the blocks here are cut from the START of the
 * buffer and the n mod 16 tail bytes are appended at the end (append_tail):
 * then the 64-byte loads are aligned whenever the buffer is, whatever its
 * length. End-aligned blocks made every load of an aligned 9000-byte buffer
 * straddle two cache lines, which cost 12% here (doc/icrc.md). */
template <unsigned N, class IO>
UROCE_ZMM_INLINE uint32_t crc_zmm(uint32_t reg, const uint8_t *p, size_t n, const IO &io) {
    const unsigned t = static_cast<unsigned>(n & 15);
    const uint8_t *q = p;
    size_t m = n >> 4; /* full blocks, > 4N */

    __m512i acc[N];
    /* The register goes onto the first four message bytes. */
    acc[0] = _mm512_xor_si512(ld512(io, q),
                              _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(reg))));
#pragma GCC unroll 16
    for (unsigned i = 1; i < N; i++)
        acc[i] = ld512(io, q + 64 * i);
    q += 64 * N;
    m -= 4 * N; /* full blocks left, including the last one */
    const __m512i k4N = _mm512_broadcast_i32x4(fold_k(4 * N));
    while (m > 4 * N) {
#pragma GCC unroll 16
        for (unsigned i = 0; i < N; i++)
            acc[i] = fold64_into(ld512(io, q + 64 * i), acc[i], k4N);
        q += 64 * N;
        m -= 4 * N;
    }
    /* L = m-1 blocks before the last full one (0 <= L < 4N). Accumulator i:
     * lane l sits L + 4N - 4i - l blocks before the last block (>= L + 1). */
    const unsigned L = static_cast<unsigned>(m - 1);
    __m512i z0 = _mm512_setzero_si512(), z1 = z0;
#pragma GCC unroll 16
    for (unsigned i = 0; i < N; i++) {
        if (i & 1)
            z1 = fold64_into(z1, acc[i], fold_k4(L + 4 * N - 4 * i));
        else
            z0 = fold64_into(z0, acc[i], fold_k4(L + 4 * N - 4 * i));
    }
    __m128i x = ld128(io, q + 16 * L); /* the last full block, distance 0 */
    __m256i y = _mm256_setzero_si256();
    fold_run(io, q, L, L, x, y, z0, z1);
    x = sum128(x, y, z0, z1);
    if (t) x = append_tail(io, x, p + n, t);
    return reduce128(x);
}

} // namespace
} // namespace crc32_detail

namespace crc32_detail {

UROCE_ZMM_TARGET uint32_t crc32_update_masked_vclmul512(uint32_t reg, const uint8_t *p,
                                                        const uint8_t *mask, size_t n) {
    return reduce512(zmm_direct<true>(p, mask, n), reg, n);
}

UROCE_ZMM_TARGET uint32_t icrc_masked_vclmul512(const uint8_t *p, const uint8_t *mask, size_t n) {
    return UROCE_ZMM_REDUCE64(pieces512(zmm_direct<true>(p, mask, n))) ^ icrc_seed_shift[n];
}

} // namespace crc32_detail

UROCE_ZMM_TARGET uint32_t crc32_update_vclmul512(uint32_t reg, const void *data, size_t len) {
    using namespace crc32_detail;
    const uint8_t *p = static_cast<const uint8_t *>(data);
    const io_crc io;
    if (len < 16) return crc32_update_vclmul(reg, data, len);
    if (len <= UROCE_ZMM_DIRECT_MAX)
        return reduce512(zmm_direct<false>(p, nullptr, len, io), reg, len);
    if (len < crc32_zmm_min) return crc32_update_vclmul(reg, data, len);
    if (len < UROCE_ZMM_LOOP_MIN) return crc_zmm_short(reg, p, len, io);
    return crc_zmm<UROCE_ZMM_ACCS>(reg, p, len, io);
}

/* The same engine storing every load to dst (crc32_copy_update), with the
 * same length split. */
UROCE_ZMM_TARGET uint32_t crc32_copy_update_vclmul512(uint32_t reg, void *dst, const void *src,
                                                      size_t len) {
    using namespace crc32_detail;
    const uint8_t *p = static_cast<const uint8_t *>(src);
    const io_copy io = copy_to(dst, src);
    if (len < 16) return crc32_copy_update_vclmul(reg, dst, src, len);
    if (len <= UROCE_ZMM_DIRECT_MAX)
        return reduce512(zmm_direct<false>(p, nullptr, len, io), reg, len);
    if (len < crc32_zmm_min) return crc32_copy_update_vclmul(reg, dst, src, len);
    if (len < UROCE_ZMM_LOOP_MIN) return crc_zmm_short(reg, p, len, io);
    return crc_zmm<UROCE_ZMM_ACCS>(reg, p, len, io);
}

/* The CRC of data and the copy of src to dst in one pass (crc32_update_place),
 * with the same length split. */
UROCE_ZMM_TARGET uint32_t crc32_update_place_vclmul512(uint32_t reg, const void *data, void *dst,
                                                       const void *src, size_t len) {
    using namespace crc32_detail;
    const uint8_t *p = static_cast<const uint8_t *>(data);
    const io_place io = place_to(data, dst, src);
    if (len < 16) return crc32_update_place_vclmul(reg, data, dst, src, len);
    if (len <= UROCE_ZMM_DIRECT_MAX)
        return reduce512(zmm_direct<false>(p, nullptr, len, io), reg, len);
    if (len < crc32_zmm_min) return crc32_update_place_vclmul(reg, data, dst, src, len);
    if (len < UROCE_ZMM_LOOP_MIN) return crc_zmm_short(reg, p, len, io);
    return crc_zmm<UROCE_ZMM_ACCS>(reg, p, len, io);
}

} // namespace uroce

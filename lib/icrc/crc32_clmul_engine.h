/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: 128-bit PCLMULQDQ folding engine for the reflected CRC-32.
 *
 * Private header, included by uroce_crc32_clmul.cpp and uroce_crc32_vclmul.cpp
 * (the latter inlines it for short inputs). All functions carry
 * target("pclmul") so that this header compiles under the -march=x86-64-v2
 * baseline (which has SSSE3/SSE4.1 but not PCLMULQDQ); callers must only run
 * them after CPUID said PCLMULQDQ is there.
 *
 * Method (doc/icrc.md has the full derivation): Intel white paper "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction". The input
 * is cut into 16-byte blocks, aligned to the END of the buffer; the 0..15
 * leftover bytes form a zero-padded "head" block in front (leading zeros do
 * not change a polynomial). Every block is folded forward to the position of
 * the last block by a carry-less multiply with a distance constant, the
 * results are XORed, and the 128-bit sum is reduced to 32 bits. The initial
 * register is XORed into the first four message bytes, which is the same as
 * multiplying it by x^(8*len).
 *
 * No load ever touches a byte outside [p, p+n): inputs of 16+ bytes use only
 * full 16-byte loads inside the buffer, shorter inputs use overlapping 4- or
 * 8-byte loads.
 */
#ifndef UROCE_ICRC_CRC32_CLMUL_ENGINE_H
#define UROCE_ICRC_CRC32_CLMUL_ENGINE_H

#include <immintrin.h>

#include <cstring>

#include "crc32_fold_consts.h"

#define UROCE_CLMUL_INLINE __attribute__((target("pclmul"), always_inline)) inline

namespace uroce::crc32_detail {

UROCE_CLMUL_INLINE __m128i loadu128(const void *p) {
    return _mm_loadu_si128(static_cast<const __m128i *>(p));
}

/* Where the engines' data loads go (a template parameter, so the plain CRC
 * compiles to exactly the code it had). io_crc: nowhere, CRC only. io_copy:
 * every load is also stored at the same offset from dst (delta = dst - src),
 * which makes the engine a one-pass copy and CRC (crc32_copy_update).
 * io_place: every load also copies the bytes at the same offset of another
 * buffer to dst: the CRC of one buffer and the copy of another in one pass
 * (crc32_update_place). The engines load every byte of [p, p+n) at least
 * once and nothing outside it, so the stores cover [dst, dst+n) exactly;
 * overlapping loads store the same bytes twice, which is harmless as long as
 * the buffers do not overlap. put(p, v) stores what goes to dst for the load
 * v at p. */
struct io_crc {
    static constexpr bool copy = false;
    static constexpr bool other = false;
};
struct io_copy {
    static constexpr bool copy = true;
    static constexpr bool other = false;
    uintptr_t delta;
    template <class T> T *at(const uint8_t *p) const {
        return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(p) + delta);
    }
    template <class V> __attribute__((always_inline)) void put(const uint8_t *p, const V &v) const {
        std::memcpy(at<void>(p), &v, sizeof(v));
    }
};
struct io_place {
    static constexpr bool copy = true;
    static constexpr bool other = true;
    uintptr_t delta;      /* dst - p */
    uintptr_t from_delta; /* the copy's source - p */
    template <class T> T *at(const uint8_t *p) const {
        return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(p) + delta);
    }
    const uint8_t *from(const uint8_t *p) const {
        return reinterpret_cast<const uint8_t *>(reinterpret_cast<uintptr_t>(p) + from_delta);
    }
    template <class V> __attribute__((always_inline)) void put(const uint8_t *p, const V &) const {
        std::memcpy(at<void>(p), from(p), sizeof(V));
    }
};

inline io_copy copy_to(void *dst, const void *src) {
    return io_copy{reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)};
}

inline io_place place_to(const void *data, void *dst, const void *src) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(data);
    return io_place{reinterpret_cast<uintptr_t>(dst) - p, reinterpret_cast<uintptr_t>(src) - p};
}

template <class IO> UROCE_CLMUL_INLINE __m128i ld128(const IO &io, const uint8_t *p) {
    const __m128i v = loadu128(p);
    if constexpr (IO::copy) io.put(p, v);
    return v;
}

/* n bytes (1..8) by an ordinary copy, for the engines' sub-vector loads. */
template <class IO, class T> UROCE_CLMUL_INLINE T ld_scalar(const IO &io, const uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    if constexpr (IO::copy) io.put(p, v);
    return v;
}

/* Constant pair that folds a block forward by d blocks (1 <= d <= fold_max_dist). */
UROCE_CLMUL_INLINE __m128i fold_k(unsigned d) {
    return _mm_load_si128(reinterpret_cast<const __m128i *>(&fold_table[fold_index(d)]));
}

/* x * x^(128*d) mod-P-congruent 128-bit value: bytes 0..7 (the high-degree
 * half) times k.lo, bytes 8..15 times k.hi. */
UROCE_CLMUL_INLINE __m128i fold16(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* pshufb control: "shift up by s bytes" (byte j <- j-s), 0 <= s <= 16. */
UROCE_CLMUL_INLINE __m128i shuf_up(unsigned s) {
    return loadu128(shuf_table + 16 - s);
}
/* pshufb control: "shift down by s bytes" (byte j <- j+s), 0 <= s <= 16. */
UROCE_CLMUL_INLINE __m128i shuf_down(unsigned s) {
    return loadu128(shuf_table + 16 + s);
}

/* Barrett reduction of the 64-bit Z in the low qword of z (reflected: bit i
 * is the coefficient of x^(63-i)) to the register Z mod P:
 * q = floor(floor(Z / x^32) * mu / x^32), Z - q P, with mu = floor(x^64 / P)
 * (exact for polynomials, no correction step). The low 32 bits of a
 * carry-less product depend only on the low 32 bits of the operands, so the
 * first multiply needs no masking. */
UROCE_CLMUL_INLINE uint32_t barrett64(__m128i z) {
    const __m128i k_barrett =
        _mm_set_epi64x(static_cast<long long>(k_poly), static_cast<long long>(k_mu));
    __m128i q = _mm_clmulepi64_si128(z, k_barrett, 0x00);           /* (Z_hi32 * mu) ... */
    q = _mm_and_si128(q, _mm_set_epi32(0, 0, 0, -1));               /* floor(./x^32) */
    z = _mm_xor_si128(z, _mm_clmulepi64_si128(q, k_barrett, 0x10)); /* Z - q P */
    return static_cast<uint32_t>(_mm_extract_epi32(z, 1));
}

/* The same reduction of the 64-bit Z by table look-ups instead of two
 * multiplies: Z = Zhi x^32 + Zlo (Zhi in the low dword, reflected, Zlo in
 * the high one), and Zhi x^32 mod P is the register h = Zhi after four zero
 * bytes, i.e. the slicing-by-4 step on tables[3..0] (the scalar engine's
 * tables, tables[k][b] = b followed by k zero bytes). On a CPU that starts a
 * carry-less multiply only every other cycle (doc/icrc.md, "Measured") four
 * L1 loads are cheaper than the two serial multiplies, and shorter. */
UROCE_CLMUL_INLINE uint32_t reduce64_tables(__m128i z) {
    const uint64_t v = static_cast<uint64_t>(_mm_cvtsi128_si64(z));
    const uint32_t h = static_cast<uint32_t>(v);
    const auto &t = tables.t;
    return static_cast<uint32_t>(v >> 32) ^ t[3][h & 0xFFu] ^ t[2][(h >> 8) & 0xFFu] ^
           t[1][(h >> 16) & 0xFFu] ^ t[0][h >> 24];
}

#ifndef UROCE_REDUCE64
#define UROCE_REDUCE64 reduce64_tables
#endif

/* Final reduction: the 128-bit block T (polynomial R, last block of the
 * message) -> register = R * x^32 mod P.
 * Split R into 32-bit pieces R = H1 x^96 + H0 x^64 + L1 x^32 + L0, so
 * R x^32 = H1 x^128 + H0 x^96 + L1 x^64 + L0 x^32. The first three products
 * (32-bit piece times x^k mod P) have degree <= 62, so three INDEPENDENT
 * multiplies give a 64-bit Z == R x^32 (mod P) -- one multiply latency
 * instead of the two serial 128->96->64 folds of the white paper. Then the
 * Barrett step. */
UROCE_CLMUL_INLINE uint32_t reduce128(__m128i t) {
    const __m128i lo32_mask = _mm_set_epi32(0, -1, 0, -1);
    const __m128i k_h1_l1 =
        _mm_set_epi64x(static_cast<long long>(k_x64), static_cast<long long>(k_x128));
    const __m128i k_h0 = _mm_set_epi64x(0, static_cast<long long>(k_x96));

    const __m128i a = _mm_and_si128(t, lo32_mask); /* lane0: H1, lane1: L1 (reflected) */
    const __m128i b = _mm_srli_epi64(t, 32);       /* lane0: H0, lane1: L0 */
    __m128i z = _mm_xor_si128(_mm_clmulepi64_si128(a, k_h1_l1, 0x00),
                              _mm_clmulepi64_si128(a, k_h1_l1, 0x11));
    z = _mm_xor_si128(z, _mm_xor_si128(_mm_clmulepi64_si128(b, k_h0, 0x00), _mm_srli_si128(b, 8)));
    return UROCE_REDUCE64(z);
}

/* 0..15 bytes. */
template <class IO = io_crc>
UROCE_CLMUL_INLINE uint32_t crc_short(uint32_t reg, const uint8_t *p, size_t n, const IO &io = {}) {
    if (n < 4) {
        /* Too short to hold the 4-byte register; three table steps at most. */
        for (; n; n--, p++)
            reg = tables.t[0][(reg ^ ld_scalar<IO, uint8_t>(io, p)) & 0xFFu] ^ (reg >> 8);
        return reg;
    }
    /* Place the n bytes at the top of a zeroed 16-byte block (leading zeros
     * are free) using two overlapping loads that stay inside [p, p+n). */
    const __m128i up = shuf_up(16 - static_cast<unsigned>(n));
    __m128i v;
    if (n >= 8) {
        const uint64_t lo = ld_scalar<IO, uint64_t>(io, p);
        const uint64_t hi = ld_scalar<IO, uint64_t>(io, p + n - 8);
        v = _mm_or_si128(_mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<long long>(lo)), up),
                         _mm_slli_si128(_mm_cvtsi64_si128(static_cast<long long>(hi)), 8));
    } else {
        const uint32_t lo = ld_scalar<IO, uint32_t>(io, p);
        const uint32_t hi = ld_scalar<IO, uint32_t>(io, p + n - 4);
        v = _mm_or_si128(_mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(lo)), up),
                         _mm_slli_si128(_mm_cvtsi32_si128(static_cast<int>(hi)), 12));
    }
    /* The register goes onto the first four message bytes. */
    v = _mm_xor_si128(v, _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(reg)), up));
    return reduce128(v);
}

/* Common prologue for 16+ bytes: r = n mod 16 head bytes, then m >= 1 full
 * blocks starting at p + r. Returns the first full block with the register
 * bytes that fall into it XORed in; *head gets the register-seeded,
 * zero-padded head block (zero if r == 0). */
template <class IO = io_crc>
UROCE_CLMUL_INLINE __m128i first_block(uint32_t reg, const uint8_t *p, unsigned r, __m128i *head,
                                       const IO &io = {}) {
    const __m128i regv = _mm_cvtsi32_si128(static_cast<int>(reg));
    /* Register bytes that land in the head go up to byte 16-r; the ones that
     * spill past it (r < 4) land in the first full block. */
    __m128i b0 = _mm_xor_si128(ld128(io, p + r), _mm_shuffle_epi8(regv, shuf_down(r)));
    *head = r ? _mm_shuffle_epi8(_mm_xor_si128(ld128(io, p), regv), shuf_up(16 - r))
              : _mm_setzero_si128();
    return b0;
}

/* 16 bytes at p + off, ORed with the mask bytes at the same offset if Masked. */
template <bool Masked, class IO>
UROCE_CLMUL_INLINE __m128i load_m(const IO &io, const uint8_t *p, const uint8_t *mask, size_t off) {
    static_assert(!(Masked && IO::copy), "a masked load is never copied");
    const __m128i v = ld128(io, p + off);
    if constexpr (Masked)
        return _mm_or_si128(v, loadu128(mask + off));
    else
        return v;
}

/* first_block, with the loads ORed with the mask if Masked. */
template <bool Masked, class IO>
UROCE_CLMUL_INLINE __m128i first_block_m(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                         unsigned r, __m128i *head, const IO &io) {
    if constexpr (!Masked) return first_block(reg, p, r, head, io);
    const __m128i regv = _mm_cvtsi32_si128(static_cast<int>(reg));
    const __m128i b0 =
        _mm_xor_si128(load_m<Masked>(io, p, mask, r), _mm_shuffle_epi8(regv, shuf_down(r)));
    *head =
        r ? _mm_shuffle_epi8(_mm_xor_si128(load_m<Masked>(io, p, mask, 0), regv), shuf_up(16 - r))
          : _mm_setzero_si128();
    return b0;
}

/* 16 <= n <= 16 * (fold_max_dist + 1) bytes, no loop: every block folds
 * straight to the last block's position, all multiplies independent (the
 * fastest form for short inputs, where latency matters). Block j of the m
 * full blocks sits m-1-j blocks before the end, the head m blocks.
 * If Masked, every input byte i is ORed with mask[i] as it is loaded (the
 * ICRC uses this to set its variant header fields to ones without a copy);
 * mask must be readable for n bytes. */
template <bool Masked, class IO = io_crc>
UROCE_CLMUL_INLINE uint32_t crc_xmm_short(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                          size_t n, const IO &io = {}) {
    const unsigned r = static_cast<unsigned>(n & 15);
    const unsigned m = static_cast<unsigned>(n >> 4); /* 1..fold_max_dist */
    const __m128i regv = _mm_cvtsi32_si128(static_cast<int>(reg));
    const __m128i b0 =
        _mm_xor_si128(load_m<Masked>(io, p, mask, r), _mm_shuffle_epi8(regv, shuf_down(r)));
    __m128i t0 = _mm_setzero_si128(), t1 = t0, t2 = t0, t3 = t0;
    if (r)
        t1 = fold16(
            _mm_shuffle_epi8(_mm_xor_si128(load_m<Masked>(io, p, mask, 0), regv), shuf_up(16 - r)),
            fold_k(m));
    if (m == 1) return reduce128(_mm_xor_si128(t1, b0));
    t0 = fold16(b0, fold_k(m - 1));
    for (unsigned j = 1; j + 1 < m; j++) {
        const __m128i f = fold16(load_m<Masked>(io, p, mask, r + 16 * j), fold_k(m - 1 - j));
        if (j & 1)
            t2 = _mm_xor_si128(t2, f);
        else
            t3 = _mm_xor_si128(t3, f);
    }
    const __m128i last = load_m<Masked>(io, p, mask, r + 16 * (m - 1));
    return reduce128(
        _mm_xor_si128(_mm_xor_si128(t0, t1), _mm_xor_si128(_mm_xor_si128(t2, t3), last)));
}

/* 16+ bytes: the loop-free form up to ShortMax blocks, else N independent
 * 16-byte accumulators in the main loop. */
template <unsigned N, unsigned ShortMax, class IO = io_crc>
UROCE_CLMUL_INLINE uint32_t crc_xmm(uint32_t reg, const uint8_t *p, size_t n, const IO &io = {}) {
    static_assert(N >= 2 && N % 2 == 0 && 2 * N <= fold_max_dist, "unsupported accumulator count");
    static_assert(ShortMax >= 2 * N && ShortMax <= fold_max_dist, "unsupported short-path limit");
    if ((n >> 4) <= ShortMax) return crc_xmm_short<false>(reg, p, nullptr, n, io);

    const unsigned r = static_cast<unsigned>(n & 15);
    const uint8_t *q = p + r;
    size_t m = n >> 4; /* full blocks, > 2N */
    __m128i head;
    const __m128i b0 = first_block(reg, p, r, &head, io);
    __m128i t0 = _mm_setzero_si128(), t1 = t0, t2 = t0, t3 = t0;

    /* Long: N accumulators stride over N blocks at a time. */
    __m128i acc[N];
    acc[0] = r ? _mm_xor_si128(b0, fold16(head, fold_k(1))) : b0;
    for (unsigned i = 1; i < N; i++)
        acc[i] = ld128(io, q + 16 * i);
    q += 16 * N;
    m -= N; /* blocks left, including the last one */
    const __m128i kN = fold_k(N);
    while (m > N) {
        for (unsigned i = 0; i < N; i++)
            acc[i] = _mm_xor_si128(fold16(acc[i], kN), ld128(io, q + 16 * i));
        q += 16 * N;
        m -= N;
    }
    /* L = m-1 blocks remain before the last one (0 <= L < N); accumulator i
     * sits L + N - i blocks before the last block, leftover block j L - j. */
    const unsigned L = static_cast<unsigned>(m - 1);
    for (unsigned i = 0; i < N; i += 2) {
        t0 = _mm_xor_si128(t0, fold16(acc[i], fold_k(L + N - i)));
        t1 = _mm_xor_si128(t1, fold16(acc[i + 1], fold_k(L + N - i - 1)));
    }
    for (unsigned j = 0; j < L; j++) {
        const __m128i f = fold16(ld128(io, q + 16 * j), fold_k(L - j));
        if (j & 1)
            t2 = _mm_xor_si128(t2, f);
        else
            t3 = _mm_xor_si128(t3, f);
    }
    const __m128i last = ld128(io, q + 16 * L);
    return reduce128(
        _mm_xor_si128(_mm_xor_si128(t0, t1), _mm_xor_si128(_mm_xor_si128(t2, t3), last)));
}

} // namespace uroce::crc32_detail

#endif

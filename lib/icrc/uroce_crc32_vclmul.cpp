/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 with VPCLMULQDQ folding on 256-bit (ymm) registers.
 *
 * Needs AVX2 + VPCLMULQDQ only (no AVX-512): every function here is compiled
 * with target("avx2,vpclmulqdq,pclmul") and only ever called after the
 * run-time CPUID/XGETBV check in uroce_crc32.cpp. A ymm VPCLMULQDQ performs
 * the two 64x64 multiplies of two 16-byte blocks at once, so each fold
 * instruction pair advances 32 bytes instead of 16; with UROCE_VCLMUL_ACCS
 * independent accumulators the multiplier pipes stay busy (doc/icrc.md).
 *
 * Layout is the same as the 128-bit engine: the input is cut into 16-byte
 * blocks aligned to the end, the partial head block in front. A ymm register
 * simply holds two consecutive blocks: its low lane is one block further from
 * the end than its high lane, so its constant is two consecutive entries of
 * the (distance-descending) fold table -- one 32-byte load.
 */
#include <uroce/crc32.h>
#include <uroce/icrc.h>
#include "crc32_clmul_engine.h"
#include "crc32_internal.h"

#ifndef UROCE_VCLMUL_ACCS
#define UROCE_VCLMUL_ACCS 4
#endif

/* Below YMM_MIN bytes the 128-bit short path (latency-bound anyway), below
 * LOOP_MIN the loop-free 256-bit path, then the N-accumulator loop. */
#ifndef UROCE_VCLMUL_YMM_MIN
#define UROCE_VCLMUL_YMM_MIN 144
#endif
#ifndef UROCE_VCLMUL_LOOP_MIN
#define UROCE_VCLMUL_LOOP_MIN 512
#endif
#ifndef UROCE_VCLMUL_MASKED_YMM_MIN
#define UROCE_VCLMUL_MASKED_YMM_MIN 96
#endif
static_assert(UROCE_VCLMUL_MASKED_YMM_MIN >= 48, "the 256-bit short form needs 3+ blocks");
static_assert(UROCE_VCLMUL_YMM_MIN >= 48 &&
                  UROCE_VCLMUL_LOOP_MIN <= 16 * (uroce::crc32_detail::fold_max_dist + 1) &&
                  UROCE_VCLMUL_LOOP_MIN >= 16 * (2 * UROCE_VCLMUL_ACCS + 1),
              "bad vclmul thresholds");

#define UROCE_VCLMUL_INLINE __attribute__((target("avx2,vpclmulqdq,pclmul"), always_inline)) inline

namespace uroce {
namespace crc32_detail {
namespace {

UROCE_VCLMUL_INLINE __m256i loadu256(const void *p) {
    return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

template <class IO> UROCE_VCLMUL_INLINE __m256i ld256(const IO &io, const uint8_t *p) {
    const __m256i v = loadu256(p);
    if constexpr (IO::copy) io.put(p, v);
    return v;
}

/* 32 bytes at p + off, ORed with the mask bytes at the same offset if Masked. */
template <bool Masked, class IO>
UROCE_VCLMUL_INLINE __m256i load256_m(const IO &io, const uint8_t *p, const uint8_t *mask,
                                      size_t off) {
    const __m256i v = ld256(io, p + off);
    if constexpr (Masked)
        return _mm256_or_si256(v, loadu256(mask + off));
    else
        return v;
}

UROCE_VCLMUL_INLINE __m256i fold32(__m256i x, __m256i k) {
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                            _mm256_clmulepi64_epi128(x, k, 0x11));
}

/* Constants for a ymm whose low lane is d blocks before the last block and
 * whose high lane is d-1 blocks before it (2 <= d <= fold_max_dist). */
UROCE_VCLMUL_INLINE __m256i fold_k2(unsigned d) {
    return loadu256(&fold_table[fold_index(d)]);
}

/* 48 <= n < 16 * (fold_max_dist + 1) bytes, no loop: like crc_xmm_short but
 * two blocks per multiply. The last block (distance 0) is XORed as is. The
 * seeded first block and the head are folded as single 16-byte blocks, so
 * the register never has to be inserted into a ymm (an insert on the critical
 * path cost ~2 ns here); so is block 1 if needed to leave an even count, and
 * the rest go in pairs. */
template <bool Masked, class IO>
UROCE_VCLMUL_INLINE uint32_t crc_ymm_short(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                           size_t n, const IO &io) {
    const unsigned r = static_cast<unsigned>(n & 15);
    const unsigned m = static_cast<unsigned>(n >> 4); /* 3..fold_max_dist */
    __m128i head;
    const __m128i b0 = first_block_m<Masked>(reg, p, mask, r, &head, io);
    __m128i x0 =
        _mm_xor_si128(load_m<Masked>(io, p, mask, r + 16 * (m - 1)), fold16(b0, fold_k(m - 1)));
    __m128i x1 = r ? fold16(head, fold_k(m)) : _mm_setzero_si128();
    unsigned j = 1;
    if ((m - 2) & 1) {
        x1 = _mm_xor_si128(x1, fold16(load_m<Masked>(io, p, mask, r + 16), fold_k(m - 2)));
        j = 2;
    }
    __m256i y0 = _mm256_setzero_si256(), y1 = y0;
    for (; j + 1 < m - 1; j += 2) { /* pair (j, j+1), both before the last block */
        const __m256i f = fold32(load256_m<Masked>(io, p, mask, r + 16 * j), fold_k2(m - 1 - j));
        if (j & 2)
            y1 = _mm256_xor_si256(y1, f);
        else
            y0 = _mm256_xor_si256(y0, f);
    }
    const __m256i y = _mm256_xor_si256(y0, y1);
    const __m128i x =
        _mm_xor_si128(_mm_xor_si128(x0, x1),
                      _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1)));
    return reduce128(x);
}

/* 16 * (2N + 1) bytes or more. */
template <unsigned N, class IO>
UROCE_VCLMUL_INLINE uint32_t crc_ymm(uint32_t reg, const uint8_t *p, size_t n, const IO &io) {
    static_assert(N >= 1 && 4 * N <= fold_max_dist, "unsupported accumulator count");
    const unsigned r = static_cast<unsigned>(n & 15);
    const uint8_t *q = p + r;
    size_t m = n >> 4; /* full blocks, > 2N */
    __m128i head;
    __m128i b0 = first_block(reg, p, r, &head, io);
    if (r) b0 = _mm_xor_si128(b0, fold16(head, fold_k(1)));

    __m256i acc[N];
    /* acc[0] = blocks 0 and 1, with block 0 replaced by the seeded b0. */
    acc[0] = _mm256_inserti128_si256(ld256(io, q), b0, 0);
    for (unsigned i = 1; i < N; i++)
        acc[i] = ld256(io, q + 32 * i);
    q += 32 * N;
    m -= 2 * N; /* blocks left, including the last one */
    const __m256i k2N = _mm256_broadcastsi128_si256(fold_k(2 * N));
    while (m > 2 * N) {
        for (unsigned i = 0; i < N; i++)
            acc[i] = _mm256_xor_si256(fold32(acc[i], k2N), ld256(io, q + 32 * i));
        q += 32 * N;
        m -= 2 * N;
    }
    /* L = m-1 blocks before the last (0 <= L < 2N). Accumulator i: low lane
     * L + 2N - 2i blocks before the last block, high lane one less (>= L+1). */
    const unsigned L = static_cast<unsigned>(m - 1);
    __m256i y0 = _mm256_setzero_si256(), y1 = y0;
    for (unsigned i = 0; i < N; i++) {
        const __m256i f = fold32(acc[i], fold_k2(L + 2 * N - 2 * i));
        if (i & 1)
            y1 = _mm256_xor_si256(y1, f);
        else
            y0 = _mm256_xor_si256(y0, f);
    }
    /* Leftover blocks j = 0..L-1 sit L - j blocks before the last: one single
     * block if L is odd, then pairs (distances >= 2 and >= 1). */
    __m128i x = ld128(io, q + 16 * L); /* the last block, distance 0 */
    unsigned j = 0;
    if (L & 1) {
        x = _mm_xor_si128(x, fold16(ld128(io, q), fold_k(L)));
        j = 1;
    }
    for (; j < L; j += 2) {
        const __m256i f = fold32(ld256(io, q + 16 * j), fold_k2(L - j));
        if (j & 2)
            y1 = _mm256_xor_si256(y1, f);
        else
            y0 = _mm256_xor_si256(y0, f);
    }
    const __m256i y = _mm256_xor_si256(y0, y1);
    x = _mm_xor_si128(x, _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1)));
    return reduce128(x);
}

} // namespace
} // namespace crc32_detail

namespace crc32_detail {
namespace {

template <class IO>
UROCE_VCLMUL_INLINE uint32_t vclmul_body(uint32_t reg, const void *data, size_t len, const IO &io) {
    constexpr unsigned N = UROCE_VCLMUL_ACCS;
    const uint8_t *p = static_cast<const uint8_t *>(data);
    if (len < 16) return crc_short(reg, p, len, io);
    if (len < UROCE_VCLMUL_YMM_MIN) return crc_xmm_short<false>(reg, p, nullptr, len, io);
    if (len < UROCE_VCLMUL_LOOP_MIN) return crc_ymm_short<false>(reg, p, nullptr, len, io);
    return crc_ymm<N>(reg, p, len, io);
}

} // namespace
} // namespace crc32_detail

__attribute__((target("avx2,vpclmulqdq,pclmul"))) uint32_t
crc32_update_vclmul(uint32_t reg, const void *data, size_t len) {
    return crc32_detail::vclmul_body(reg, data, len, crc32_detail::io_crc{});
}

__attribute__((target("avx2,vpclmulqdq,pclmul"))) uint32_t
crc32_copy_update_vclmul(uint32_t reg, void *dst, const void *src, size_t len) {
    return crc32_detail::vclmul_body(reg, src, len, crc32_detail::copy_to(dst, src));
}

/* Not the engine with io_place: on the Zen 5 the 256-bit loop with a second
 * load and a store per ymm ran at 0.76-0.94x of the CRC then the copy (256 B
 * to 9 KB, doc/icrc.md "Place while checking"), while the 512-bit and
 * 128-bit engines gain. */
__attribute__((target("avx2,vpclmulqdq,pclmul"))) uint32_t
crc32_update_place_vclmul(uint32_t reg, const void *data, void *dst, const void *src, size_t len) {
    reg = crc32_detail::vclmul_body(reg, data, len, crc32_detail::io_crc{});
    std::memcpy(dst, src, len);
    return reg;
}

namespace crc32_detail {

/* The masked update (16 <= n <= 256): the 128-bit short form below
 * UROCE_VCLMUL_MASKED_YMM_MIN bytes, the loop-free 256-bit form above it
 * (pairs of blocks per multiply: 11 multiplies instead of 15 for a 104-byte
 * frame, on a CPU whose multiplier takes any width at the same rate). */
__attribute__((target("avx2,vpclmulqdq,pclmul"))) uint32_t
crc32_update_masked_vclmul(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n) {
    if (n < UROCE_VCLMUL_MASKED_YMM_MIN) return crc_xmm_short<true>(reg, p, mask, n);
    return crc_ymm_short<true>(reg, p, mask, n, io_crc{});
}

__attribute__((target("avx2,vpclmulqdq,pclmul"))) uint32_t
icrc_masked_vclmul(const uint8_t *p, const uint8_t *mask, size_t n) {
    if (n < UROCE_VCLMUL_MASKED_YMM_MIN) return crc_xmm_short<true>(icrc_seed, p, mask, n);
    return crc_ymm_short<true>(icrc_seed, p, mask, n, io_crc{});
}

} // namespace crc32_detail

} // namespace uroce

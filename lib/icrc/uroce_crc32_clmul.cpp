/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 with 128-bit PCLMULQDQ folding.
 *
 * The engine itself is in crc32_clmul_engine.h (shared with the VPCLMULQDQ
 * path, which uses it below its 256-bit threshold). This file instantiates it
 * twice: with target("pclmul") (legacy-SSE encoding, any PCLMULQDQ CPU) and
 * with target("avx,pclmul") (VEX encoding), see crc32_internal.h for why.
 * The main loop keeps UROCE_CLMUL_ACCS independent 16-byte folds in flight: a
 * PCLMULQDQ has a latency of several cycles but the CPU starts a new one every
 * cycle or two (measured, doc/icrc.md).
 */
#include <uroce/crc32.h>
#include <uroce/icrc.h>
#include "crc32_clmul_engine.h"
#include "crc32_internal.h"

#ifndef UROCE_CLMUL_ACCS
#define UROCE_CLMUL_ACCS 4
#endif
/* Up to this many 16-byte blocks, the loop-free form (all folds independent). */
#ifndef UROCE_CLMUL_SHORT_BLOCKS
#define UROCE_CLMUL_SHORT_BLOCKS 8
#endif

namespace uroce {
namespace crc32_detail {
namespace {

template <class IO = io_crc>
UROCE_CLMUL_INLINE uint32_t clmul_body(uint32_t reg, const void *data, size_t len,
                                       const IO &io = {}) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    if (len < 16) return crc_short(reg, p, len, io);
    return crc_xmm<UROCE_CLMUL_ACCS, UROCE_CLMUL_SHORT_BLOCKS>(reg, p, len, io);
}

} // namespace

__attribute__((target("pclmul"))) uint32_t crc32_update_clmul_sse(uint32_t reg, const void *data,
                                                                  size_t len) {
    return clmul_body(reg, data, len);
}

__attribute__((target("avx,pclmul"))) uint32_t
crc32_update_clmul_vex(uint32_t reg, const void *data, size_t len) {
    return clmul_body(reg, data, len);
}

__attribute__((target("pclmul"))) uint32_t
crc32_update_masked_clmul_sse(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n) {
    return crc_xmm_short<true>(reg, p, mask, n);
}

__attribute__((target("avx,pclmul"))) uint32_t
crc32_update_masked_clmul_vex(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n) {
    return crc_xmm_short<true>(reg, p, mask, n);
}

/* The same with the start register fixed at the ICRC seed (icrc_masked). */
__attribute__((target("pclmul"))) uint32_t icrc_masked_clmul_sse(const uint8_t *p,
                                                                 const uint8_t *mask, size_t n) {
    return crc_xmm_short<true>(icrc_seed, p, mask, n);
}

__attribute__((target("avx,pclmul"))) uint32_t
icrc_masked_clmul_vex(const uint8_t *p, const uint8_t *mask, size_t n) {
    return crc_xmm_short<true>(icrc_seed, p, mask, n);
}

/* The same engine, storing every load to dst as it goes (crc32_copy_update). */
__attribute__((target("pclmul"))) uint32_t
crc32_copy_update_clmul_sse(uint32_t reg, void *dst, const void *src, size_t len) {
    return clmul_body(reg, src, len, copy_to(dst, src));
}

__attribute__((target("avx,pclmul"))) uint32_t
crc32_copy_update_clmul_vex(uint32_t reg, void *dst, const void *src, size_t len) {
    return clmul_body(reg, src, len, copy_to(dst, src));
}

/* The same engine, copying another buffer as it goes (crc32_update_place). */
__attribute__((target("pclmul"))) uint32_t crc32_update_place_clmul_sse(uint32_t reg,
                                                                        const void *data, void *dst,
                                                                        const void *src,
                                                                        size_t len) {
    return clmul_body(reg, data, len, place_to(data, dst, src));
}

__attribute__((target("avx,pclmul"))) uint32_t
crc32_update_place_clmul_vex(uint32_t reg, const void *data, void *dst, const void *src,
                             size_t len) {
    return clmul_body(reg, data, len, place_to(data, dst, src));
}

} // namespace crc32_detail

uint32_t crc32_update_place_clmul(uint32_t reg, const void *data, void *dst, const void *src,
                                  size_t len) {
    return crc32_detail::cpu_has_avx()
               ? crc32_detail::crc32_update_place_clmul_vex(reg, data, dst, src, len)
               : crc32_detail::crc32_update_place_clmul_sse(reg, data, dst, src, len);
}

uint32_t crc32_copy_update_clmul(uint32_t reg, void *dst, const void *src, size_t len) {
    return crc32_detail::cpu_has_avx()
               ? crc32_detail::crc32_copy_update_clmul_vex(reg, dst, src, len)
               : crc32_detail::crc32_copy_update_clmul_sse(reg, dst, src, len);
}

uint32_t crc32_update_clmul(uint32_t reg, const void *data, size_t len) {
    /* A well-predicted branch on a value fixed at start-up. */
    return crc32_detail::cpu_has_avx() ? crc32_detail::crc32_update_clmul_vex(reg, data, len)
                                       : crc32_detail::crc32_update_clmul_sse(reg, data, len);
}

} // namespace uroce

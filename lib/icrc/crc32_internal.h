/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: internal (not installed) entry points of the CRC-32 engines.
 */
#ifndef UROCE_ICRC_CRC32_INTERNAL_H
#define UROCE_ICRC_CRC32_INTERNAL_H

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace uroce::crc32_detail {

/* The 128-bit PCLMULQDQ engine in two encodings. The legacy-SSE one runs on
 * any PCLMULQDQ CPU; the VEX one (needs AVX) is what the dispatcher uses when
 * AVX is there, because legacy-SSE instructions run at about half speed while
 * some other code (e.g. ISA-L's AVX-512 CRC, which ends without VZEROUPPER)
 * has left the upper vector state dirty -- measured, doc/icrc.md. */
uint32_t crc32_update_clmul_sse(uint32_t reg, const void *data, size_t len);
uint32_t crc32_update_clmul_vex(uint32_t reg, const void *data, size_t len);

/* The fused copy + CRC engines in the two encodings (see above). */
uint32_t crc32_copy_update_clmul_sse(uint32_t reg, void *dst, const void *src, size_t len);
uint32_t crc32_copy_update_clmul_vex(uint32_t reg, void *dst, const void *src, size_t len);

/* crc32_update_place's 128-bit engine in the two encodings. */
uint32_t crc32_update_place_clmul_sse(uint32_t reg, const void *data, void *dst, const void *src,
                                      size_t len);
uint32_t crc32_update_place_clmul_vex(uint32_t reg, const void *data, void *dst, const void *src,
                                      size_t len);

/* crc32_update over the n bytes p[i] | mask[i] without copying them, for
 * 16 <= n <= 256 (mask readable for n bytes). icrc_begin() uses it to set the
 * ICRC's variant header fields to ones. crc32_update_masked follows the active
 * path; the others are its per-engine implementations. */
uint32_t crc32_update_masked(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t crc32_update_masked_scalar(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t crc32_update_masked_clmul_sse(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                       size_t n);
uint32_t crc32_update_masked_clmul_vex(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                       size_t n);
/* The 128-bit short form, or from 96 bytes the 256-bit one. */
uint32_t crc32_update_masked_vclmul(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n);
/* One to four zmm folded onto the last one, direct 512 -> 64 bit reduction. */
uint32_t crc32_update_masked_vclmul512(uint32_t reg, const uint8_t *p, const uint8_t *mask,
                                       size_t n);

/* The ICRC's header call, crc32_update_masked(icrc_seed, p, mask, n) for
 * 16 <= n <= 256: the engine's masked form with the start register fixed at
 * the ICRC seed, so that the zmm form takes the seed's share from a table
 * instead of a multiply. icrc_masked() calls the active path's one directly
 * (uroce_icrc.cpp is its only caller, on every frame). */
using icrc_masked_fn = uint32_t (*)(const uint8_t *p, const uint8_t *mask, size_t n);
extern std::atomic<icrc_masked_fn> g_icrc_masked_fn;
inline uint32_t icrc_masked(const uint8_t *p, const uint8_t *mask, size_t n) {
    return g_icrc_masked_fn.load(std::memory_order_relaxed)(p, mask, n);
}
uint32_t icrc_masked_scalar(const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t icrc_masked_clmul_sse(const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t icrc_masked_clmul_vex(const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t icrc_masked_vclmul(const uint8_t *p, const uint8_t *mask, size_t n);
uint32_t icrc_masked_vclmul512(const uint8_t *p, const uint8_t *mask, size_t n);

/* AVX usable (CPUID + OS-enabled YMM state). */
bool cpu_has_avx();

/* While DPDK's SIMD limit is unknown the dispatcher sends every call shorter
 * than this to the 256-bit engine, and reads the limit on longer ones (the
 * 512-bit engine itself runs its zmm forms from 16 bytes; doc/icrc.md,
 * "Dispatch"). */
#ifndef UROCE_ZMM_MIN
#define UROCE_ZMM_MIN 256
#endif
inline constexpr size_t crc32_zmm_min = UROCE_ZMM_MIN;

} // namespace uroce::crc32_detail

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 (IEEE 802.3 / zlib polynomial), vectorized.
 *
 * This is the CRC that RoCEv2 uses for its Invariant CRC (see uroce_icrc.h).
 * Four engines, chosen once at start-up (no per-call CPUID):
 *   scalar             slicing-by-8 tables, any CPU
 *   pclmulqdq          128-bit carry-less multiply folding (Intel white paper
 *                      "Fast CRC Computation for Generic Polynomials Using
 *                      PCLMULQDQ Instruction")
 *   vpclmulqdq-avx2    the same folding on 256-bit ymm registers (VPCLMULQDQ +
 *                      AVX2, no AVX-512 required)
 *   vpclmulqdq-avx512  the same on 512-bit zmm registers (AVX-512F/BW/VL/VBMI
 *                      + VPCLMULQDQ), for inputs of 16 bytes and more (up to
 *                      256 in one to four registers with no loop); shorter
 *                      ones run the vpclmulqdq-avx2 code
 * The environment variable
 * UROCE_CRC32_PATH=scalar|pclmulqdq|vpclmulqdq-avx2|vpclmulqdq-avx512 forces a
 * path at start-up (ignored with a warning if the CPU lacks it).
 *
 * DPDK's max SIMD bitwidth (rte_vect_get_max_simd_bitwidth(), EAL option
 * --force-max-simd-bitwidth) gates vpclmulqdq-avx512: once EAL is up, the
 * path is supported only if the limit is 512 or more (DPDK's x86 default is
 * 256). The limit is read again on the first call long enough to run zmm code
 * after rte_eal_init, so nothing needs to be called; after changing it at run
 * time with rte_vect_set_max_simd_bitwidth(), call crc32_refresh_path().
 * Before rte_eal_init (limit 0), or without DPDK, there is no limit.
 * Design notes and measured figures: doc/icrc.md.
 */
#ifndef UROCE_CRC32_H
#define UROCE_CRC32_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>

namespace uroce {

enum class crc32_path : uint8_t { scalar, clmul, vclmul, vclmul512 };

/* Raw reflected CRC-32 register update (poly 0x04C11DB7, reflected
 * 0xEDB88320) with NO pre/post inversion, like Linux crc32_le():
 *   crc32_update(~0u, p, n) ^ ~0u == zlib crc32(0, p, n).
 * Chaining is plain: crc32_update(crc32_update(r, a, n), b, m) is the update
 * over the concatenation a||b. Never reads outside [data, data+len). */
UROCE_API uint32_t crc32_update(uint32_t reg, const void *data, size_t len); /* dispatched */
UROCE_API uint32_t crc32_update_scalar(uint32_t reg, const void *data,
                                       size_t len); /* slicing-by-8 */
UROCE_API uint32_t crc32_update_clmul(uint32_t reg, const void *data,
                                      size_t len); /* only if supported;
                                                     VEX-encoded if AVX is usable */
UROCE_API uint32_t crc32_update_vclmul(uint32_t reg, const void *data,
                                       size_t len); /* only if supported */
UROCE_API uint32_t crc32_update_vclmul512(uint32_t reg, const void *data,
                                          size_t len); /* only if the CPU has it
                                                         (ignores DPDK's limit) */

/* One-pass copy and CRC: copies len bytes from src to dst (like memcpy, the
 * two must not overlap) and returns crc32_update(reg, src, len). Each engine
 * loads 16, 32 or 64 bytes, stores them to dst and folds them into the CRC in
 * the same pass, so the data is read once (doc/icrc.md, "Fused copy"). Reads
 * exactly [src, src+len), writes exactly [dst, dst+len); chains like
 * crc32_update. The dispatched one follows the active path; the others have
 * the same support rules as their crc32_update_* twins. */
UROCE_API uint32_t crc32_copy_update(uint32_t reg, void *dst, const void *src,
                                     size_t len); /* dispatched */
UROCE_API uint32_t crc32_copy_update_scalar(uint32_t reg, void *dst, const void *src, size_t len);
UROCE_API uint32_t crc32_copy_update_clmul(uint32_t reg, void *dst, const void *src, size_t len);
UROCE_API uint32_t crc32_copy_update_vclmul(uint32_t reg, void *dst, const void *src, size_t len);
UROCE_API uint32_t crc32_copy_update_vclmul512(uint32_t reg, void *dst, const void *src,
                                               size_t len);

/* The CRC of one buffer and the copy of another in one pass: returns
 * crc32_update(reg, data, len) and copies len bytes from src to dst (like
 * memcpy; none of the three may overlap dst). Each vector load of data comes
 * with a load of src at the same offset and its store to dst, so the copy's
 * loads and stores run in the slots the CRC's carry-less multiplies leave
 * idle: the receive path places one checked frame's payload while it checks
 * the next frame's ICRC (doc/icrc.md, "Place while checking"). Reads exactly
 * [data, data+len) and [src, src+len), writes exactly [dst, dst+len). The
 * scalar engine runs the CRC, then the copy. */
UROCE_API uint32_t crc32_update_place(uint32_t reg, const void *data, void *dst, const void *src,
                                      size_t len); /* dispatched */
UROCE_API uint32_t crc32_update_place_scalar(uint32_t reg, const void *data, void *dst,
                                             const void *src, size_t len);
UROCE_API uint32_t crc32_update_place_clmul(uint32_t reg, const void *data, void *dst,
                                            const void *src, size_t len);
UROCE_API uint32_t crc32_update_place_vclmul(uint32_t reg, const void *data, void *dst,
                                             const void *src, size_t len);
UROCE_API uint32_t crc32_update_place_vclmul512(uint32_t reg, const void *data, void *dst,
                                                const void *src, size_t len);

/* CPU/OS support, and for vpclmulqdq-avx512 DPDK's SIMD limit (above). */
UROCE_API bool crc32_path_supported(crc32_path p);
UROCE_API crc32_path crc32_best_path();
UROCE_API crc32_path crc32_active_path();
/* Force a path (tests, benchmarks). Returns false, and changes nothing, if
 * the CPU/OS (or DPDK's SIMD limit) does not support it. Not meant to race
 * with running updates: concurrent callers see either the old or the new
 * engine, both correct. */
UROCE_API bool crc32_set_path(crc32_path p);
/* Reads DPDK's SIMD limit again and re-applies the path choice: the best
 * path if none was forced, else the forced one if it is (again) allowed,
 * else the best path (with a warning on stderr). Only needed after
 * rte_vect_set_max_simd_bitwidth() once EAL is up. Returns the active path. */
UROCE_API crc32_path crc32_refresh_path();
/* "scalar", "pclmulqdq", "vpclmulqdq-avx2", "vpclmulqdq-avx512" (the
 * UROCE_CRC32_PATH spellings). */
UROCE_API const char *crc32_path_name(crc32_path p);

/* zlib-compatible convenience: crc32_ieee(prev, p, n) == zlib crc32(prev, p, n). */
static inline uint32_t crc32_ieee(uint32_t prev, const void *p, size_t n) {
    return ~crc32_update(~prev, p, n);
}

/* Register after 'len' zero bytes: crc32_zeros(reg, n) == crc32_update(reg,
 * zeros, n) in O(log n) without touching memory. */
UROCE_API uint32_t crc32_zeros(uint32_t reg, uint64_t len);

/* zlib crc32_combine() semantics on final (inverted) CRC values: given
 * crc_a = crc32_ieee(0, A, |A|) and crc_b = crc32_ieee(0, B, len_b), returns
 * crc32_ieee(0, A||B, |A|+len_b). */
UROCE_API uint32_t crc32_ieee_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 (IEEE 802.3 / zlib polynomial), vectorized.
 *
 * This is the CRC that RoCEv2 uses for its Invariant CRC (see uroce_icrc.h).
 * Three engines, chosen once at start-up (no per-call CPUID):
 *   scalar           slicing-by-8 tables, any CPU
 *   pclmulqdq        128-bit carry-less multiply folding (Intel white paper
 *                    "Fast CRC Computation for Generic Polynomials Using
 *                    PCLMULQDQ Instruction")
 *   vpclmulqdq-avx2  the same folding on 256-bit ymm registers (VPCLMULQDQ +
 *                    AVX2, no AVX-512 required)
 * The environment variable UROCE_CRC32_PATH=scalar|pclmulqdq|vpclmulqdq-avx2
 * forces a path at start-up (ignored with a warning if the CPU lacks it).
 * Design notes and measured figures: doc/icrc.md.
 */
#ifndef UROCE_CRC32_H
#define UROCE_CRC32_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>

namespace uroce {

enum class crc32_path : uint8_t { scalar, clmul, vclmul };

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

UROCE_API bool crc32_path_supported(crc32_path p);
UROCE_API crc32_path crc32_best_path();
UROCE_API crc32_path crc32_active_path();
/* Force a path (tests, benchmarks). Returns false, and changes nothing, if
 * the CPU/OS does not support it. Not meant to race with running updates:
 * concurrent callers see either the old or the new engine, both correct. */
UROCE_API bool crc32_set_path(crc32_path p);
/* "scalar", "pclmulqdq", "vpclmulqdq-avx2" (the UROCE_CRC32_PATH spellings). */
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

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: reflected CRC-32 with 128-bit PCLMULQDQ folding.
 *
 * The engine itself is in crc32_clmul_engine.h (shared with the VPCLMULQDQ
 * path, which uses it below its 256-bit threshold). This file only picks the
 * number of accumulators: a PCLMULQDQ has a latency of several cycles while
 * the CPU can start one or two per cycle, so the main loop keeps
 * UROCE_CLMUL_ACCS independent 16-byte folds in flight (measured, doc/icrc.md).
 */
#include "uroce_crc32.h"
#include "crc32_clmul_engine.h"

#ifndef UROCE_CLMUL_ACCS
#define UROCE_CLMUL_ACCS 8
#endif

namespace uroce {

__attribute__((target("pclmul"))) uint32_t crc32_update_clmul(uint32_t reg, const void *data, size_t len)
{
    const uint8_t *p = static_cast<const uint8_t *>(data);
    if (len < 16)
        return crc32_detail::crc_short(reg, p, len);
    return crc32_detail::crc_xmm<UROCE_CLMUL_ACCS>(reg, p, len);
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * 24-bit PSN arithmetic (IBTA 9.7.1: PSNs are modulo 2^24; a PSN is "ahead"
 * of another when it lies within the next 2^23 values, as rxe's psn_compare).
 */
#ifndef UROCE_PSN_H
#define UROCE_PSN_H

#include <cstdint>

namespace uroce {

inline constexpr uint32_t psn_mask = 0xffffff;

static inline constexpr uint32_t psn_add(uint32_t psn, uint32_t n) {
    return (psn + n) & psn_mask;
}
static inline constexpr uint32_t psn_sub(uint32_t psn, uint32_t n) {
    return (psn - n) & psn_mask;
}
/* Signed distance a - b in [-2^23, 2^23): > 0 when a is ahead of b. */
static inline constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
    return int32_t((a - b) << 8) >> 8;
}

static_assert(psn_diff(0, 0xffffff) == 1);
static_assert(psn_diff(0xffffff, 0) == -1);
static_assert(psn_add(0xffffff, 2) == 1);
static_assert(psn_diff(5, 3) == 2 && psn_diff(3, 5) == -2);

} // namespace uroce

#endif

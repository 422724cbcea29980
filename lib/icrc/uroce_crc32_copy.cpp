/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: the portable one-pass copy and CRC (crc32_copy_update_scalar), and
 * the portable CRC-one-copy-another (crc32_update_place_scalar).
 *
 * The fallback of crc32_copy_update: slicing-by-8 like crc32_update_scalar,
 * each 8-byte word stored to the destination as it is loaded. The SIMD
 * engines' fused forms are their own engines instantiated with io_copy
 * (crc32_clmul_engine.h); the dispatch is in uroce_crc32.cpp.
 */
#include <uroce/crc32.h>
#include "crc32_fold_consts.h"

#include <bit>
#include <cstring>

namespace uroce {

uint32_t crc32_copy_update_scalar(uint32_t reg, void *dst, const void *src, size_t len) {
    const auto &t = crc32_detail::tables.t;
    const uint8_t *p = static_cast<const uint8_t *>(src);
    uint8_t *d = static_cast<uint8_t *>(dst);
    /* No alignment prologue: the destination would rarely share it. */
    while (len >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        std::memcpy(d, &w, 8);
        if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
        const uint32_t lo = uint32_t(w) ^ reg;
        const uint32_t hi = uint32_t(w >> 32);
        reg = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^
              t[4][lo >> 24] ^ t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^
              t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
        p += 8;
        d += 8;
        len -= 8;
    }
    for (; len; len--) {
        const uint8_t b = *p++;
        *d++ = b;
        reg = t[0][(reg ^ b) & 0xFFu] ^ (reg >> 8);
    }
    return reg;
}

/* Without vector registers there are no idle slots for the copy to fill:
 * the CRC, then the copy. */
uint32_t crc32_update_place_scalar(uint32_t reg, const void *data, void *dst, const void *src,
                                   size_t len) {
    reg = crc32_update_scalar(reg, data, len);
    std::memcpy(dst, src, len);
    return reg;
}

} // namespace uroce

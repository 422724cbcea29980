/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: portable reflected CRC-32, slicing-by-8.
 *
 * Slicing-by-8 (Kounavis & Berry, "A Systematic Approach to Building High
 * Performance Software-based CRC Generators", Intel, 2005): 8 table lookups
 * per 8 input bytes, all independent except for the final XOR. It is the
 * fallback engine and the reference the SIMD engines are tested against
 * (besides zlib). The tables are generated at compile time.
 */
#include <uroce/crc32.h>
#include "crc32_fold_consts.h"

#include <bit>
#include <cstring>

namespace uroce {
namespace crc32_detail {

namespace {

constexpr crc_tables make_tables() {
    crc_tables s{};
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = (c >> 1) ^ ((c & 1u) ? poly_reflected : 0u);
        s.t[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t b = 0; b < 256; b++)
            s.t[k][b] = (s.t[k - 1][b] >> 8) ^ s.t[0][s.t[k - 1][b] & 0xFFu];
    return s;
}

inline uint32_t load_le32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
    return v;
}

} // namespace

/* Exported for the SIMD engines' 1..3 byte path (declared in crc32_fold_consts.h). */
alignas(64) constexpr crc_tables tables = make_tables();
/* Known values: 0x80 is x^0 reflected, whose CRC is the reflected polynomial
 * itself; 0x01 gives the familiar first non-trivial table entry. */
static_assert(tables.t[0][0x80] == 0xEDB88320u, "CRC table generation broken");
static_assert(tables.t[0][1] == 0x77073096u, "CRC table generation broken");

} // namespace crc32_detail

uint32_t crc32_update_scalar(uint32_t reg, const void *data, size_t len) {
    using namespace crc32_detail;
    const auto &t = tables.t;
    const uint8_t *p = static_cast<const uint8_t *>(data);

    /* Byte steps up to 8-byte alignment make the wide loads cheaper on
     * CPUs that care; harmless on x86. */
    while (len && (reinterpret_cast<uintptr_t>(p) & 7u)) {
        reg = t[0][(reg ^ *p++) & 0xFFu] ^ (reg >> 8);
        len--;
    }
    while (len >= 8) {
        const uint32_t lo = load_le32(p) ^ reg;
        const uint32_t hi = load_le32(p + 4);
        reg = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^
              t[4][lo >> 24] ^ t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^
              t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        reg = t[0][(reg ^ *p++) & 0xFFu] ^ (reg >> 8);
    return reg;
}

} // namespace uroce

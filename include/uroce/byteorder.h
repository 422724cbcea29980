/* SPDX-License-Identifier: BSD-3-Clause
 * Byte-order-explicit loads and stores on unaligned wire bytes.
 *
 * Every wire header in uroce is a struct of byte arrays (alignof == 1), so a
 * header can be overlaid at any offset of a packet. Fields are read and
 * written only through these helpers, which say the byte order in their name.
 * memcpy + bswap compiles to a single movbe/mov+bswap.
 */
#ifndef UROCE_BYTEORDER_H
#define UROCE_BYTEORDER_H

#include <uroce/export.h>

#include <bit>
#include <cstdint>
#include <cstring>

namespace uroce {

static_assert(std::endian::native == std::endian::little, "uroce targets little-endian hosts");

static inline constexpr uint16_t bswap16(uint16_t v) {
    return __builtin_bswap16(v);
}
static inline constexpr uint32_t bswap32(uint32_t v) {
    return __builtin_bswap32(v);
}
static inline constexpr uint64_t bswap64(uint64_t v) {
    return __builtin_bswap64(v);
}

static inline uint16_t load_be16(const uint8_t *p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return bswap16(v);
}
static inline uint32_t load_be24(const uint8_t *p) {
    return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | uint32_t(p[2]);
}
static inline uint32_t load_be32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return bswap32(v);
}
/* A 24-bit field that ends the big-endian 32-bit word at `word`, as BTH's
 * destination QP and PSN, AETH's MSN and DETH's source QP each follow a
 * byte of their header: one load and a mask, where load_be24's three byte
 * loads and their shifts were 7 instructions. */
static inline uint32_t load_be24_in_word(const uint8_t *word) {
    return load_be32(word) & 0x00ffffffu;
}
static inline uint64_t load_be64(const uint8_t *p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return bswap64(v);
}
static inline uint32_t load_le32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

static inline void store_be16(uint8_t *p, uint16_t v) {
    v = bswap16(v);
    std::memcpy(p, &v, sizeof(v));
}
static inline void store_be24(uint8_t *p, uint32_t v) {
    p[0] = uint8_t(v >> 16);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v);
}
static inline void store_be32(uint8_t *p, uint32_t v) {
    v = bswap32(v);
    std::memcpy(p, &v, sizeof(v));
}
static inline void store_be64(uint8_t *p, uint64_t v) {
    v = bswap64(v);
    std::memcpy(p, &v, sizeof(v));
}
static inline void store_le32(uint8_t *p, uint32_t v) {
    std::memcpy(p, &v, sizeof(v));
}

} // namespace uroce

#endif

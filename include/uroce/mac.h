/* SPDX-License-Identifier: BSD-3-Clause
 * The Ethernet MAC address (IEEE 802): its type, its text form, and the
 * mappings of IP multicast groups to Ethernet group addresses.
 */
#ifndef UROCE_MAC_H
#define UROCE_MAC_H

#include <uroce/export.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace uroce {

struct UROCE_API mac_addr {
    std::array<uint8_t, 6> b{};

    static mac_addr from_bytes(const uint8_t *p) {
        mac_addr m;
        std::memcpy(m.b.data(), p, 6);
        return m;
    }
    static constexpr mac_addr broadcast() { return mac_addr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
    void copy_to(uint8_t *p) const { std::memcpy(p, b.data(), 6); }
    /* The I/G bit (IEEE 802, bit 0 of the first octet) marks group addresses;
     * broadcast is a group address too. */
    bool is_multicast() const { return b[0] & 1; }
    bool is_zero() const { return (b[0] | b[1] | b[2] | b[3] | b[4] | b[5]) == 0; }
    /* Unicast and not all-zero: the only kind a neighbour may claim as its own. */
    bool is_valid_unicast() const { return !is_multicast() && !is_zero(); }

    /* "02:00:00:00:00:01" */
    std::string to_string() const;
    /* Accepts six ':' or '-' separated hex octets. */
    static std::optional<mac_addr> parse(std::string_view text);

    friend bool operator==(const mac_addr &, const mac_addr &) = default;
};
static_assert(sizeof(mac_addr) == 6);

/* RFC 1112 section 6.4: IPv4 multicast group -> 01:00:5e + low 23 bits. */
static inline mac_addr ipv4_multicast_mac(uint32_t group_host) {
    return mac_addr{{0x01, 0x00, 0x5e, uint8_t((group_host >> 16) & 0x7f), uint8_t(group_host >> 8),
                     uint8_t(group_host)}};
}
/* RFC 2464 section 7: IPv6 multicast -> 33:33 + the last four octets. */
static inline mac_addr ipv6_multicast_mac(const uint8_t *addr16) {
    return mac_addr{{0x33, 0x33, addr16[12], addr16[13], addr16[14], addr16[15]}};
}

} // namespace uroce

#endif

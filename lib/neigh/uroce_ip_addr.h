/* SPDX-License-Identifier: BSD-3-Clause
 * Address classification and derived addresses shared by the address table,
 * the cache and the protocols (internal to lib/neigh): which IPv4/IPv6
 * addresses are host unicast, link-local, multicast or solicited-node, the
 * Ethernet mapping of multicast groups, and the link-local address derived
 * from a MAC.
 *
 * References: RFC 1122 3.2.1.3 (IPv4 host addresses), RFC 1112 6.4 (IPv4
 * multicast MACs), RFC 4291 2.5-2.7 and appendix A (IPv6 address
 * architecture, solicited-node groups, modified EUI-64), RFC 2464 7 (IPv6
 * multicast MACs), RFC 4862 5.3 (link-local addresses).
 */
#ifndef UROCE_IP_ADDR_H
#define UROCE_IP_ADDR_H

#include <cstdint>
#include <cstring>

#include <uroce/gid.h>
#include <uroce/local_addr.h>

namespace uroce {

/* ---------------------------------------------------------------- IPv4 */

/* RFC 1122 3.2.1.3: 0/8 "this network", 127/8 loopback, class D/E and the
 * limited broadcast are never a host's (or a neighbour's) address. */
static inline bool ipv4_is_host_unicast(uint32_t a) {
    return (a >> 24) != 0 && (a >> 24) != 127 && a < 0xe0000000u;
}

/* ---------------------------------------------------------------- IPv6 */

static inline bool ipv6_is_multicast(const uint8_t *a) {
    return a[0] == 0xff; /* RFC 4291 2.7 */
}
static inline bool ipv6_is_unspecified(const uint8_t *a) {
    for (int i = 0; i < 16; i++)
        if (a[i]) return false;
    return true;
}
static inline bool ipv6_is_link_local(const uint8_t *a) {
    return a[0] == 0xfe && (a[1] & 0xc0) == 0x80; /* fe80::/10, RFC 4291 2.5.6 */
}
static inline bool ipv6_is_loopback(const uint8_t *a) {
    for (int i = 0; i < 15; i++)
        if (a[i]) return false;
    return a[15] == 1; /* ::1, RFC 4291 2.5.3 */
}
/* RFC 4291 2.7.1: solicited-node multicast ff02::1:ffXX:XXXX from the low 24 bits. */
static inline gid ipv6_solicited_node(const uint8_t *addr16) {
    gid g;
    g.raw = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, addr16[13], addr16[14], addr16[15]};
    return g;
}
static inline bool ipv6_is_solicited_node(const uint8_t *a) {
    static constexpr uint8_t prefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};
    return std::memcmp(a, prefix, sizeof(prefix)) == 0;
}
/* ff02::1, all nodes on the link (RFC 4291 2.7.1). */
static inline gid ipv6_all_nodes() {
    gid g;
    g.raw = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return g;
}
/* RFC 4291 appendix A / RFC 2464 section 4: modified EUI-64 interface id from
 * a 48-bit MAC (ff:fe inserted in the middle, universal/local bit inverted),
 * and the link-local address fe80::/64 + that id (RFC 4862 5.3). */
static inline gid ipv6_link_local_from_mac(const mac_addr &m) {
    gid g;
    g.raw = {0xfe,   0x80,   0,    0,    0,      0,      0,     0, uint8_t(m.b[0] ^ 0x02),
             m.b[1], m.b[2], 0xff, 0xfe, m.b[3], m.b[4], m.b[5]};
    return g;
}

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * The port's own addresses: local_addr_table (IPv4
 * and IPv6 addresses, the link-local address derived from the MAC, the GID
 * table, source address selection). Depends on neither the neighbour cache
 * nor the protocols. RFC 4862 5.3 / RFC 4291 appendix A (link-local from
 * EUI-64), RFC 1122 3.2.1.3 (host addresses), RFC 1122 3.3.4.3 and RFC 4861
 * 7.2.2 (source selection), RFC 4861 7.2.1 (solicited-node groups).
 * Design: doc/neigh.md, "Address table and GID table".
 */
#include <uroce/local_addr.h>

#include <algorithm>
#include <cstdio>

#include "uroce_ip_addr.h"

namespace uroce {

/* ================================================================ local_addr_table */

namespace {

uint32_t ipv4_mask(uint8_t plen) {
    return plen == 0 ? 0 : ~0u << (32 - plen);
}

bool ipv6_prefix_match(const uint8_t *a, const uint8_t *b, uint8_t plen) {
    size_t full = plen / 8;
    if (std::memcmp(a, b, full) != 0) return false;
    if (plen % 8 == 0) return true;
    uint8_t mask = uint8_t(0xff << (8 - plen % 8));
    return (a[full] & mask) == (b[full] & mask);
}

} // namespace

void local_addr_table::set_mac(const mac_addr &m) {
    mac_ = m;
    link_local_ = ipv6_link_local_from_mac(m);
    rebuild_gids();
}

bool local_addr_table::add(const gid &g, uint8_t plen) {
    if (g.is_ipv4_mapped()) {
        uint32_t a = g.ipv4();
        if (!ipv4_is_host_unicast(a) || plen > 32 || n_ipv4_ == max_ipv4 || is_local_ipv4(a))
            return false;
        ipv4_[n_ipv4_++] = {a, plen};
    } else {
        const uint8_t *a = g.raw.data();
        if (ipv6_is_unspecified(a) || ipv6_is_multicast(a) || ipv6_is_loopback(a) ||
            ipv6_is_link_local(a) || plen > 128 || n_ipv6_ == max_ipv6 || is_local_ipv6(a))
            return false;
        ipv6_[n_ipv6_++] = {g, plen};
    }
    rebuild_gids();
    return true;
}

bool local_addr_table::add(std::string_view text) {
    size_t slash = text.find('/');
    std::string_view addr = text.substr(0, slash);
    auto g = gid::parse(addr);
    if (!g) return false;
    /* Dotted IPv4 text parses to a mapped gid; "::ffff:a.b.c.d/n" would too,
     * and then n counts IPv6 bits: take the IPv4 view only for dotted text. */
    bool dotted_v4 = g->is_ipv4_mapped() && addr.find(':') == std::string_view::npos;
    unsigned plen = dotted_v4 ? 32 : 128;
    if (slash != std::string_view::npos) {
        std::string_view p = text.substr(slash + 1);
        if (p.empty() || p.size() > 3) return false;
        plen = 0;
        for (char c : p) {
            if (c < '0' || c > '9') return false;
            plen = plen * 10 + unsigned(c - '0');
        }
        if (plen > (dotted_v4 ? 32u : 128u)) return false;
    }
    if (g->is_ipv4_mapped() && !dotted_v4) plen = plen >= 96 ? plen - 96 : 0;
    return add(*g, uint8_t(plen));
}

bool local_addr_table::remove(const gid &g) {
    if (g.is_ipv4_mapped()) {
        for (size_t i = 0; i < n_ipv4_; i++)
            if (ipv4_[i].addr == g.ipv4()) {
                std::copy(ipv4_.begin() + i + 1, ipv4_.begin() + n_ipv4_, ipv4_.begin() + i);
                n_ipv4_--;
                rebuild_gids();
                return true;
            }
    } else {
        for (size_t i = 0; i < n_ipv6_; i++)
            if (ipv6_[i].addr == g) {
                std::copy(ipv6_.begin() + i + 1, ipv6_.begin() + n_ipv6_, ipv6_.begin() + i);
                n_ipv6_--;
                rebuild_gids();
                return true;
            }
    }
    return false;
}

bool local_addr_table::is_local_ipv4(uint32_t a) const {
    for (size_t i = 0; i < n_ipv4_; i++)
        if (ipv4_[i].addr == a) return true;
    return false;
}

bool local_addr_table::is_local_ipv6(const uint8_t *a) const {
    if (std::memcmp(a, link_local_.raw.data(), 16) == 0) return true;
    for (size_t i = 0; i < n_ipv6_; i++)
        if (std::memcmp(a, ipv6_[i].addr.raw.data(), 16) == 0) return true;
    return false;
}

bool local_addr_table::is_our_solicited_node(const uint8_t *a) const {
    if (!ipv6_is_solicited_node(a)) return false;
    auto low24_eq = [a](const gid &g) { return std::memcmp(a + 13, g.raw.data() + 13, 3) == 0; };
    if (low24_eq(link_local_)) return true;
    for (size_t i = 0; i < n_ipv6_; i++)
        if (low24_eq(ipv6_[i].addr)) return true;
    return false;
}

std::optional<uint32_t> local_addr_table::ipv4_source_for(uint32_t dst) const {
    if (n_ipv4_ == 0) return std::nullopt;
    for (size_t i = 0; i < n_ipv4_; i++) {
        uint32_t m = ipv4_mask(ipv4_[i].prefix_len);
        if ((ipv4_[i].addr & m) == (dst & m)) return ipv4_[i].addr;
    }
    return ipv4_[0].addr;
}

gid local_addr_table::ipv6_source_for(const uint8_t *dst) const {
    if (ipv6_is_link_local(dst) || n_ipv6_ == 0) return link_local_;
    for (size_t i = 0; i < n_ipv6_; i++)
        if (ipv6_prefix_match(ipv6_[i].addr.raw.data(), dst, ipv6_[i].prefix_len))
            return ipv6_[i].addr;
    return ipv6_[0].addr;
}

int local_addr_table::gid_index(const gid &g) const {
    for (size_t i = 0; i < n_gids_; i++)
        if (gids_[i] == g) return int(i);
    return -1;
}

void local_addr_table::rebuild_gids() {
    n_gids_ = 0;
    gids_[n_gids_++] = link_local_;
    for (size_t i = 0; i < n_ipv4_; i++)
        gids_[n_gids_++] = gid::from_ipv4(ipv4_[i].addr);
    for (size_t i = 0; i < n_ipv6_; i++)
        gids_[n_gids_++] = ipv6_[i].addr;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * The port's own link-layer and IP addresses, and the RoCE GID table derived
 * from them: a device concept (the transport's GID table is filled from it),
 * independent of the neighbour cache and of the neighbour protocols.
 *
 * Implements: RFC 4291 appendix A / RFC 4862 5.3 (link-local address from the
 * MAC, modified EUI-64), RFC 1122 3.2.1.3 and RFC 4291 2.5 (which addresses a
 * host may own), RFC 1122 3.3.4.3 and RFC 4861 7.2.2 (source address
 * selection), RFC 4861 7.2.1 (the solicited-node groups a node is in).
 * Part of the public API (included by <uroce/neigh.h>); the MAC address type
 * is <uroce/mac.h>.
 */
#ifndef UROCE_LOCAL_ADDR_H
#define UROCE_LOCAL_ADDR_H

#include <uroce/export.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <uroce/gid.h>
#include <uroce/mac.h>

namespace uroce {

/* ---------------------------------------------------------------- local addresses */

struct local_ipv4 {
    uint32_t addr = 0; /* host order */
    uint8_t prefix_len = 32;
};
struct local_ipv6 {
    gid addr;
    uint8_t prefix_len = 128;
};

/* The interface's own addresses and the RoCE GID table derived from them.
 *
 * GID table, laid out like rxe/mlx5 for a RoCEv2-only port (one entry per
 * address instead of a v1/v2 pair):
 *   index 0      fe80::/64 link-local, modified EUI-64 of the MAC (RFC 4862 5.3)
 *   index 1..    ::ffff:a.b.c.d for each IPv4 address, in the order added
 *   then         each further IPv6 address, in the order added
 */
class local_addr_table {
  public:
    static constexpr size_t max_ipv4 = 16;
    static constexpr size_t max_ipv6 = 16;
    static constexpr size_t max_gids = 1 + max_ipv4 + max_ipv6;

    /* Also (re)derives the link-local address and the GID table. */
    UROCE_API void set_mac(const mac_addr &m);
    const mac_addr &mac() const { return mac_; }

    /* Add an address; an IPv4-mapped gid adds an IPv4 address. prefix_len
     * is the on-link prefix in the family's own bits (0..32 for IPv4,
     * 0..128 for IPv6), used for source selection. Returns false when the
     * table is full, the address is not a host unicast address (zero,
     * multicast, broadcast, loopback; IPv6 link-local: it is derived from
     * the MAC) or a duplicate. */
    UROCE_API bool add(const gid &addr, uint8_t prefix_len);
    bool add_ipv4(uint32_t addr_host, uint8_t prefix_len = 32) {
        return add(gid::from_ipv4(addr_host), prefix_len);
    }
    /* Command-line form: "10.99.0.2/24", "10.99.0.2", "fd00:99::2/64".
     * IPv4 prefixes count IPv4 bits (/24), as users write them. */
    UROCE_API bool add(std::string_view text);
    UROCE_API bool remove(const gid &addr);

    UROCE_API bool is_local_ipv4(uint32_t addr_host) const;
    /* Unicast addresses incl. the link-local one. */
    UROCE_API bool is_local_ipv6(const uint8_t *addr16) const;
    /* ff02::1:ffXX:XXXX of one of our IPv6 addresses (RFC 4861 7.2.1: the
     * groups a node joins so that NS reaches it). */
    UROCE_API bool is_our_solicited_node(const uint8_t *addr16) const;
    bool is_local(const gid &g) const {
        return g.is_ipv4_mapped() ? is_local_ipv4(g.ipv4()) : is_local_ipv6(g.raw.data());
    }

    /* Source address selection (RFC 1122 3.3.4.3 for IPv4, RFC 4861 7.2.2 /
     * RFC 6724 rule 2 in spirit for IPv6): an address on the destination's
     * prefix, else the first one; link-local destinations use link-local. */
    UROCE_API std::optional<uint32_t> ipv4_source_for(uint32_t dst_host) const;
    UROCE_API gid ipv6_source_for(const uint8_t *dst16) const;

    size_t num_ipv4() const { return n_ipv4_; }
    size_t num_ipv6() const { return n_ipv6_; }
    const local_ipv4 &ipv4_at(size_t i) const { return ipv4_[i]; }
    const local_ipv6 &ipv6_at(size_t i) const { return ipv6_[i]; }
    const gid &link_local() const { return link_local_; }

    size_t gid_count() const { return n_gids_; }
    std::optional<gid> gid_at(size_t index) const {
        if (index >= n_gids_) return std::nullopt;
        return gids_[index];
    }
    /* Index of g in the GID table, or -1. */
    UROCE_API int gid_index(const gid &g) const;

  private:
    void rebuild_gids();

    mac_addr mac_;
    gid link_local_;
    std::array<local_ipv4, max_ipv4> ipv4_{};
    std::array<local_ipv6, max_ipv6> ipv6_{};
    size_t n_ipv4_ = 0, n_ipv6_ = 0;
    std::array<gid, max_gids> gids_{};
    size_t n_gids_ = 0;
};

} // namespace uroce

#endif

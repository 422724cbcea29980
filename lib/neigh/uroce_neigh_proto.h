/* SPDX-License-Identifier: BSD-3-Clause
 * The neighbour protocols (internal to lib/neigh): receive, validate and
 * answer ARP, ICMP / ICMPv6 echo, Neighbor Solicitation / Advertisement and
 * MLD, learn from them into the cache, and originate announcements and MLD
 * reports. It is the implementation behind class neigh (uroce_neigh.h),
 * layered on the cache (uroce_neigh_cache.h) and building frames through
 * uroce_neigh_frame.h. One source file per protocol:
 *
 *   uroce_neigh_proto.cpp  burst loop, Ethernet / 802.1Q checks, IPv6 and
 *                          ICMPv6 demux, address conflicts, announcements
 *                          (RFC 5227 2.3, RFC 4861 7.2.6), poll()
 *   uroce_neigh_arp.cpp    ARP (RFC 826, RFC 5227)
 *   uroce_neigh_icmp.cpp   ICMP echo (RFC 792, RFC 1122 3.2.2.6), ICMPv6
 *                          echo (RFC 4443 4.1, 4.2)
 *   uroce_neigh_nd.cpp     NS / NA (RFC 4861 7.1, 7.2.3-7.2.5, RFC 4862 5.4)
 *   uroce_neigh_mld.cpp    MLD reports and queries (RFC 3810, RFC 2710)
 *
 * Every dropped frame is counted under exactly one neigh_drop reason.
 */
#ifndef UROCE_NEIGH_PROTO_H
#define UROCE_NEIGH_PROTO_H

#include <array>
#include <cstddef>
#include <cstdint>

#include <uroce/neigh.h>
#include "uroce_neigh_cache.h"

struct rte_mbuf;

namespace uroce {

class neigh_proto : public neigh_cache {
  public:
    neigh_proto(const neigh_config &cfg, const local_addr_table &addrs);

    void process_burst(rte_mbuf **in, uint16_t n, rte_mbuf **tx_out, uint16_t &n_tx);
    static bool is_neigh_frame(const rte_mbuf *m);
    void poll(uint64_t now_ns, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    void announce();

    uint64_t drops(neigh_drop d) const { return drops_[size_t(d)]; }
    uint64_t drops_total() const;

  private:
    enum class verdict : uint8_t { reply, consumed, drop };
    verdict drop(neigh_drop d) {
        drops_[size_t(d)]++;
        drop_reason_ = d;
        return verdict::drop;
    }
    /* Another station claims one of our addresses (RFC 5227 2.4, RFC 4862
     * 5.4.4): counted, dropped, reported at most once a second. */
    verdict conflict(const gid &ours, const mac_addr &theirs);

    /* uroce_neigh_proto.cpp */
    verdict handle_ipv6(rte_mbuf *m, size_t l2);
    void emit_announcements(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    /* uroce_neigh_arp.cpp */
    verdict handle_arp(rte_mbuf *m, uint8_t *l2, size_t l2_len);
    /* uroce_neigh_icmp.cpp */
    verdict handle_ipv4(rte_mbuf *m, size_t l2_len);
    verdict handle_icmpv6_echo(rte_mbuf *m, size_t l2_len, uint32_t icmp_len);
    /* uroce_neigh_nd.cpp */
    verdict handle_ns(rte_mbuf *m, size_t l2_len, uint32_t icmp_len);
    verdict handle_na(rte_mbuf *m, size_t l2_len, uint32_t icmp_len);
    /* uroce_neigh_mld.cpp */
    size_t mld_groups(gid *out) const;
    bool emit_mld(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap, uint8_t record_type);
    verdict handle_mld(rte_mbuf *m, size_t l2, uint32_t icmp_off, uint32_t icmp_len);

    uint16_t ip_id_ = 0;
    uint8_t announce_left_ = 0;
    uint64_t announce_next_ = 0;
    uint8_t mld_left_ = 0;           /* state-change reports still to send */
    uint64_t mld_next_ = UINT64_MAX; /* next unsolicited report */
    bool mld_respond_ = false;       /* a query asked for a current-state report */
    uint64_t mldv1_until_ = 0;       /* MLDv1 querier present (RFC 3810 8.2.1) */
    bool conflict_reported_ = false;
    uint64_t last_conflict_event_ = 0;
    neigh_drop drop_reason_ = neigh_drop::count;
    std::array<uint64_t, size_t(neigh_drop::count)> drops_{};
};

} // namespace uroce

#endif

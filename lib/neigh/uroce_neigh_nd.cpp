/* SPDX-License-Identifier: BSD-3-Clause
 * IPv6 Neighbor Discovery, NS and NA: validate (RFC 4861 7.1.1, 7.1.2: hop
 * limit 255, code, options, target), learn (7.2.3 from an NS's SLLA, 7.2.5
 * the NA override rules), answer NS for our addresses (7.2.4, incl. DAD
 * probes, RFC 4862 5.4.3) and detect conflicts (RFC 4862 5.4.4). NS
 * themselves leave from the cache. Design: doc/neigh.md, "Neighbor
 * Solicitation" and "Neighbor Advertisement".
 */
#include "uroce_neigh_proto.h"

#include <algorithm>
#include <cstring>

#include <rte_mbuf.h>

#include "uroce_ip_addr.h"
#include "uroce_neigh_frame.h"
#include "uroce_neigh_hdr.h"

namespace uroce {

using namespace neigh_frame;

namespace {

struct nd_options {
    const uint8_t *lladdr = nullptr; /* SLLA (NS) or TLLA (NA) */
    bool valid = true;
};

/* RFC 4861 7.1.1 / 7.1.2: every option must have a non-zero length and fit;
 * unknown options are skipped (4.6). The link-layer address option for
 * Ethernet is exactly 8 octets (RFC 2464 8). */
nd_options parse_nd_options(const uint8_t *opt, size_t len, uint8_t want_type) {
    nd_options r;
    size_t off = 0;
    while (off < len) {
        if (len - off < 2) return {nullptr, false};
        auto *h = reinterpret_cast<const nd_opt_hdr *>(opt + off);
        size_t olen = h->length_bytes();
        if (olen == 0 || olen > len - off) return {nullptr, false};
        if (h->type == want_type) {
            if (olen != sizeof(nd_opt_lladdr)) return {nullptr, false};
            r.lladdr = reinterpret_cast<const nd_opt_lladdr *>(h)->addr;
        }
        off += olen;
    }
    return r;
}

} // namespace

neigh_proto::verdict neigh_proto::handle_ns(rte_mbuf *m, size_t l2, uint32_t icmp_len) {
    ctr_.nd_rx_ns++;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    /* RFC 4861 7.1.1 validity checks. */
    if (ip6->hop_limit != nd_hop_limit) return drop(neigh_drop::bad_hop_limit);
    if (icmp_len < sizeof(nd_ns)) return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + icmp_len) return drop(neigh_drop::headers_split);
    auto *ns = reinterpret_cast<nd_ns *>(p + icmp_off);
    if (ns->h.code != 0 || ipv6_is_multicast(ns->target)) return drop(neigh_drop::bad_nd);
    nd_options o = parse_nd_options(p + icmp_off + sizeof(nd_ns), icmp_len - sizeof(nd_ns),
                                    nd_opt_source_lladdr);
    if (!o.valid) return drop(neigh_drop::bad_nd);
    bool dad = ipv6_is_unspecified(ip6->src);
    if (dad && (!ipv6_is_solicited_node(ip6->dst) || o.lladdr)) return drop(neigh_drop::bad_nd);
    if (o.lladdr && !mac_addr::from_bytes(o.lladdr).is_valid_unicast())
        return drop(neigh_drop::bad_nd);

    /* 7.2.3: answer only for a target assigned to this interface. */
    if (!addrs_.is_local_ipv6(ns->target)) return drop(neigh_drop::not_for_us);
    if (!dad && addrs_.is_local_ipv6(ip6->src))
        return conflict(gid::from_bytes(ip6->src),
                        o.lladdr ? mac_addr::from_bytes(o.lladdr)
                                 : mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src));

    mac_addr reply_mac;
    gid reply_dst;
    if (dad) {
        /* RFC 4862 5.4.3: our (non-tentative) address is being probed: the
         * NS is processed per RFC 4861 7.2.4, which for a :: source means
         * S=0 and multicast to all-nodes, so the prober sees the duplicate. */
        ctr_.nd_rx_ns_dad++;
        reply_dst = ipv6_all_nodes();
        reply_mac = ipv6_multicast_mac(reply_dst.raw.data());
    } else {
        reply_dst = gid::from_bytes(ip6->src);
        /* 7.2.3: learn the sender from its SLLA: new entry STALE; a changed
         * address replaces the cached one and goes STALE. */
        if (o.lladdr) {
            mac_addr slla = mac_addr::from_bytes(o.lladdr);
            entry *e = find(reply_dst);
            if (!e) {
                learn_new(reply_dst, slla, neigh_state::stale);
            } else if (e->state != neigh_state::permanent) {
                bool fresh = e->state == neigh_state::incomplete || e->state == neigh_state::failed;
                if (fresh || e->mac != slla) set_mac(e, slla, neigh_state::stale);
            }
            reply_mac = slla;
        } else {
            /* No SLLA on a unicast NS (a reachability probe, 7.2.2): answer
             * the Ethernet source rather than soliciting the solicitor. */
            reply_mac = mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src);
        }
    }

    /* 7.2.4: NA with target = the solicited target, source = that address,
     * O=1 (not anycast), S=1 unless DAD, R=0 (not a router), TLLA = our MAC. */
    gid target = gid::from_bytes(ns->target);
    if (!na_reply_in_place(m, l2, reply_mac, reply_dst, target, !dad, addrs_.mac()))
        return drop(neigh_drop::no_room);
    ctr_.nd_tx_na++;
    return verdict::reply;
}

neigh_proto::verdict neigh_proto::handle_na(rte_mbuf *m, size_t l2, uint32_t icmp_len) {
    ctr_.nd_rx_na++;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    /* RFC 4861 7.1.2 validity checks. */
    if (ip6->hop_limit != nd_hop_limit) return drop(neigh_drop::bad_hop_limit);
    if (icmp_len < sizeof(nd_na)) return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + icmp_len) return drop(neigh_drop::headers_split);
    auto *na = reinterpret_cast<nd_na *>(p + icmp_off);
    if (na->h.code != 0 || ipv6_is_multicast(na->target)) return drop(neigh_drop::bad_nd);
    if (ipv6_is_multicast(ip6->dst) && na->solicited()) return drop(neigh_drop::bad_nd);
    nd_options o = parse_nd_options(p + icmp_off + sizeof(nd_na), icmp_len - sizeof(nd_na),
                                    nd_opt_target_lladdr);
    if (!o.valid) return drop(neigh_drop::bad_nd);
    if (o.lladdr && !mac_addr::from_bytes(o.lladdr).is_valid_unicast())
        return drop(neigh_drop::bad_nd);

    gid target = gid::from_bytes(na->target);
    if (addrs_.is_local_ipv6(na->target)) {
        /* RFC 4862 5.4.4: another node advertises one of our addresses. */
        return conflict(target, o.lladdr
                                    ? mac_addr::from_bytes(o.lladdr)
                                    : mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src));
    }
    /* 7.2.5: no entry -> silently discard (no entry is created by an NA). */
    entry *e = find(target);
    if (!e) {
        ctr_.nd_rx_na_ignored++;
        return verdict::consumed;
    }
    if (e->state == neigh_state::permanent) return verdict::consumed;
    if (e->state == neigh_state::incomplete || e->state == neigh_state::failed) {
        if (!o.lladdr) return verdict::consumed; /* nothing to learn */
        set_mac(e, mac_addr::from_bytes(o.lladdr),
                na->solicited() ? neigh_state::reachable : neigh_state::stale);
        return verdict::consumed;
    }
    mac_addr tlla = o.lladdr ? mac_addr::from_bytes(o.lladdr) : e->mac;
    bool differs = tlla != e->mac;
    if (!na->override_flag() && differs) {
        /* O=0 and a different address: keep the cached one, but a REACHABLE
         * entry becomes STALE (it may be out of date). */
        if (e->state == neigh_state::reachable) set_state(e, neigh_state::stale);
        return verdict::consumed;
    }
    neigh_state s = na->solicited() ? neigh_state::reachable
                    : differs       ? neigh_state::stale
                                    : e->state;
    set_mac(e, tlla, s);
    return verdict::consumed;
}

} // namespace uroce

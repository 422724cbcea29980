/* SPDX-License-Identifier: BSD-3-Clause
 * The protocol layer's skeleton: the receive loop (Ethernet and 802.1Q checks
 * common to every protocol, then the demux to ARP, IPv4 and IPv6 / ICMPv6),
 * address conflicts, announcements (RFC 5227 2.3 ARP Announcement, RFC 4861
 * 7.2.6 unsolicited NA) and poll(), which runs the cache's timers around
 * the announcements and MLD reports. The protocols themselves are in
 * uroce_neigh_{arp,icmp,nd,mld}.cpp. RFC 1122 3.3.6 (source MAC), RFC 4291
 * 2.7 (multicast source), RFC 4443 2.3 / RFC 8200 8.1 (ICMPv6 checksum),
 * RFC 8200 4 (extension headers, not walked). Design: doc/neigh.md.
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

neigh_proto::neigh_proto(const neigh_config &cfg, const local_addr_table &addrs)
    : neigh_cache(cfg, addrs) {
    if (cfg_.announce_on_start) announce_left_ = cfg_.announce_count; /* first poll() sends */
    if (cfg_.mld && cfg_.mld_robustness) {
        mld_left_ = cfg_.mld_robustness; /* join reports from the first poll() */
        mld_next_ = 0;
    }
}

/* ================================================================ rx */

bool neigh_proto::is_neigh_frame(const rte_mbuf *m) {
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = m->data_len;
    if (len < sizeof(eth_hdr)) return false;
    size_t l2 = sizeof(eth_hdr);
    uint16_t et = reinterpret_cast<const eth_hdr *>(p)->ether_type();
    if (et == ether_type_vlan) {
        if (len < l2 + sizeof(vlan_hdr)) return false;
        et = reinterpret_cast<const vlan_hdr *>(p + l2)->ether_type();
        l2 += sizeof(vlan_hdr);
    }
    switch (et) {
    case ether_type_arp:
        return true;
    case ether_type_ipv4:
        return len >= l2 + sizeof(ipv4_hdr) &&
               reinterpret_cast<const ipv4_hdr *>(p + l2)->protocol == ip_proto_icmp;
    case ether_type_ipv6: {
        if (len < l2 + sizeof(ipv6_hdr)) return false;
        uint8_t nh = reinterpret_cast<const ipv6_hdr *>(p + l2)->next_header;
        /* MLD queries arrive behind a Hop-by-Hop header (RFC 3810 5). */
        if (nh == ipv6_nh_hop_by_hop && len >= l2 + sizeof(ipv6_hdr) + sizeof(ipv6_hbh_hdr))
            nh = reinterpret_cast<const ipv6_hbh_hdr *>(p + l2 + sizeof(ipv6_hdr))->next_header;
        return nh == ip_proto_icmpv6;
    }
    default:
        return false;
    }
}

void neigh_proto::process_burst(rte_mbuf **in, uint16_t n, rte_mbuf **tx_out, uint16_t &n_tx) {
    constexpr uint16_t free_cap = 64;
    rte_mbuf *to_free[free_cap];
    uint16_t n_free = 0;
    const mac_addr &me = addrs_.mac();

    for (uint16_t i = 0; i < n; i++) {
        rte_mbuf *m = in[i];
        ctr_.rx_frames++;
        verdict v = verdict::drop;
        do {
            if (data_shared(m)) {
                /* Rare (capture clones): work on a private copy. */
                rte_mbuf *c = cfg_.pool ? rte_pktmbuf_copy(m, cfg_.pool, 0, UINT32_MAX) : nullptr;
                if (!c) {
                    v = drop(neigh_drop::no_room);
                    break;
                }
                ctr_.rx_shared_copied++;
                rte_pktmbuf_free(m);
                m = c;
            }
            uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
            uint32_t dlen = m->data_len;
            if (dlen < sizeof(eth_hdr)) {
                v = drop(m->pkt_len < sizeof(eth_hdr) ? neigh_drop::truncated
                                                      : neigh_drop::headers_split);
                break;
            }
            auto *eth = reinterpret_cast<eth_hdr *>(p);
            uint16_t et = eth->ether_type();
            size_t l2 = sizeof(eth_hdr);
            if (et == ether_type_vlan) {
                if (dlen < l2 + sizeof(vlan_hdr)) {
                    v = drop(neigh_drop::truncated);
                    break;
                }
                et = reinterpret_cast<vlan_hdr *>(p + l2)->ether_type();
                l2 += sizeof(vlan_hdr);
            }
            mac_addr dst = mac_addr::from_bytes(eth->dst), src = mac_addr::from_bytes(eth->src);
            /* Unicast frames for another station reach us on promiscuous
             * ports and af_packet; group frames are filtered by L3 below. */
            if (!dst.is_multicast() && dst != me) {
                v = drop(neigh_drop::not_for_us);
                break;
            }
            /* RFC 1122 3.3.6 / IEEE 802: a group address is never a source;
             * our own MAC as source is a reflected frame or a MAC clash. */
            if (!src.is_valid_unicast() || src == me) {
                v = drop(neigh_drop::bad_source);
                break;
            }
            switch (et) {
            case ether_type_arp:
                v = handle_arp(m, p, l2);
                break;
            case ether_type_ipv4:
                v = handle_ipv4(m, l2);
                break;
            case ether_type_ipv6:
                v = handle_ipv6(m, l2);
                break;
            default:
                v = drop(neigh_drop::unsupported_ethertype);
                break;
            }
        } while (false);

        if (v == verdict::reply) {
            prepare_tx(m);
            tx_out[n_tx++] = m;
        } else {
            if (n_free == free_cap) {
                rte_pktmbuf_free_bulk(to_free, n_free);
                n_free = 0;
            }
            to_free[n_free++] = m;
        }
    }
    if (n_free) rte_pktmbuf_free_bulk(to_free, n_free);
}

/* Another station claims one of our addresses: count, drop, and tell the
 * engine (at most once per second, so a misconfigured peer cannot flood
 * its log). RFC 5227 2.4 / RFC 4862 5.4.4 leave the reaction to the host;
 * we keep the address and keep defending it. */
neigh_proto::verdict neigh_proto::conflict(const gid &ours, const mac_addr &theirs) {
    ctr_.address_conflicts++;
    if (cfg_.event_cb && (!conflict_reported_ || now_ >= last_conflict_event_ + 1'000'000'000ull)) {
        conflict_reported_ = true;
        last_conflict_event_ = now_;
        cfg_.event_cb(cfg_.event_ctx, neigh_event::address_conflict, ours, &theirs);
    }
    return drop(neigh_drop::address_conflict);
}

neigh_proto::verdict neigh_proto::handle_ipv6(rte_mbuf *m, size_t l2) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    uint32_t dlen = m->data_len;
    if (dlen < l2 + sizeof(ipv6_hdr))
        return drop(m->pkt_len < l2 + sizeof(ipv6_hdr) ? neigh_drop::truncated
                                                       : neigh_drop::headers_split);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    if (ip6->version() != 6) return drop(neigh_drop::bad_ip_header);
    uint32_t plen = ip6->payload_length();
    if (l2 + sizeof(ipv6_hdr) + plen > m->pkt_len) return drop(neigh_drop::truncated);
    if (ip6->next_header == ipv6_nh_hop_by_hop) {
        /* MLD messages carry a Hop-by-Hop Router Alert (RFC 3810 5); other
         * ICMPv6 behind extension headers is not served. */
        uint32_t hbh_off = uint32_t(l2 + sizeof(ipv6_hdr));
        if (plen < sizeof(ipv6_hbh_hdr) || dlen < hbh_off + sizeof(ipv6_hbh_hdr))
            return drop(plen < sizeof(ipv6_hbh_hdr) ? neigh_drop::truncated
                                                    : neigh_drop::headers_split);
        auto *hbh = reinterpret_cast<const ipv6_hbh_hdr *>(p + hbh_off);
        uint32_t hl = uint32_t(hbh->length_bytes());
        if (hbh->next_header != ip_proto_icmpv6) return drop(neigh_drop::unsupported_ext_hdr);
        if (plen < hl + sizeof(icmpv6_hdr)) return drop(neigh_drop::truncated);
        uint32_t icmp_off = hbh_off + hl, icmp_len = plen - hl;
        if (dlen < icmp_off + sizeof(icmpv6_hdr)) return drop(neigh_drop::headers_split);
        uint8_t type = p[icmp_off];
        if (type != icmpv6_type_mld_query && type != icmpv6_type_mldv1_report &&
            type != icmpv6_type_mld_done && type != icmpv6_type_mldv2_report)
            return drop(neigh_drop::unsupported_ext_hdr);
        ctr_.rx_icmpv6++;
        if (ipv6_is_multicast(ip6->src)) return drop(neigh_drop::bad_source);
        uint32_t s = ipv6_pseudo_sum(ip6->src, ip6->dst, icmp_len, ip_proto_icmpv6) +
                     mbuf_sum(m, icmp_off, icmp_len);
        if (fold(s) != 0xffff) return drop(neigh_drop::bad_icmp_checksum);
        return handle_mld(m, l2, icmp_off, icmp_len);
    }
    if (ip6->next_header != ip_proto_icmpv6) {
        switch (ip6->next_header) {
        case 43:
        case 44:
        case 50:
        case 51:
        case 60:
        case 135:
        case 139:
        case 140:
            /* Hop-by-hop (MLD reports carry Router Alert), routing, fragment,
             * ESP/AH, destination options: RFC 8200 4 chain not walked. */
            return drop(neigh_drop::unsupported_ext_hdr);
        default:
            return drop(neigh_drop::unsupported_type);
        }
    }
    ctr_.rx_icmpv6++;
    if (ipv6_is_multicast(ip6->src)) return drop(neigh_drop::bad_source); /* RFC 4291 2.7 */
    if (plen < sizeof(icmpv6_hdr)) return drop(neigh_drop::truncated);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    if (dlen < icmp_off + sizeof(icmpv6_hdr)) return drop(neigh_drop::headers_split);
    /* RFC 4443 2.3: checksum over the pseudo-header (RFC 8200 8.1) and the message. */
    uint32_t s =
        ipv6_pseudo_sum(ip6->src, ip6->dst, plen, ip_proto_icmpv6) + mbuf_sum(m, icmp_off, plen);
    if (fold(s) != 0xffff) return drop(neigh_drop::bad_icmp_checksum);

    auto *ih = reinterpret_cast<icmpv6_hdr *>(p + icmp_off);
    switch (ih->type) {
    case icmpv6_type_neighbor_solicit:
        return handle_ns(m, l2, plen);
    case icmpv6_type_neighbor_advert:
        return handle_na(m, l2, plen);
    case icmpv6_type_echo_request:
        return handle_icmpv6_echo(m, l2, plen);
    default:
        return drop(neigh_drop::unsupported_type);
    }
}

/* ================================================================ tx and timers */

void neigh_proto::announce() {
    announce_left_ = cfg_.announce_count;
    announce_next_ = now_;
    if (cfg_.mld && cfg_.mld_robustness) {
        mld_left_ = cfg_.mld_robustness;
        mld_next_ = now_;
    }
}

/* RFC 5227 2.3 ARP Announcement for every IPv4 address (an ARP request
 * with sender IP = target IP = ours, broadcast) and RFC 4861 7.2.6
 * unsolicited NA for every IPv6 address incl. link-local (to ff02::1,
 * S=0, O=1). Neighbours that cached us (e.g. with an older MAC, before a
 * restart) update at once instead of after their entries time out. */
void neigh_proto::emit_announcements(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    size_t need = addrs_.num_ipv4() + 1 + addrs_.num_ipv6();
    if (size_t(tx_cap - n_tx) < need) {
        ctr_.tx_deferred++;
        return; /* all of one round or nothing; next poll */
    }
    for (size_t i = 0; i < addrs_.num_ipv4(); i++) {
        uint32_t a = addrs_.ipv4_at(i).addr;
        if (rte_mbuf *m =
                count_alloc(build_arp_request(tx_origin(), mac_addr::broadcast(), a, a))) {
            tx_out[n_tx++] = m;
            ctr_.arp_tx_announce++;
        }
    }
    gid all = ipv6_all_nodes();
    mac_addr all_mac = ipv6_multicast_mac(all.raw.data());
    for (size_t i = 0; i <= addrs_.num_ipv6(); i++) {
        const gid &t = i == 0 ? addrs_.link_local() : addrs_.ipv6_at(i - 1).addr;
        if (rte_mbuf *m = count_alloc(build_nd(tx_origin(), icmpv6_type_neighbor_advert, all_mac, t,
                                               all, t, nd_na::flag_override))) {
            tx_out[n_tx++] = m;
            ctr_.nd_tx_unsolicited_na++;
        }
    }
    announce_left_--;
    announce_next_ = now_ + cfg_.announce_interval_ns;
}

void neigh_proto::poll(uint64_t now_ns, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    advance(now_ns);
    tx_new_requests(tx_out, n_tx, tx_cap);
    tx_released(tx_out, n_tx, tx_cap);

    if (mld_respond_ && emit_mld(tx_out, n_tx, tx_cap, mld_rec_mode_is_exclude))
        mld_respond_ = false;
    if (now_ >= mld_next_) {
        bool change = mld_left_ > 0;
        if (emit_mld(tx_out, n_tx, tx_cap,
                     change ? mld_rec_change_to_exclude : mld_rec_mode_is_exclude)) {
            if (change) mld_left_--;
            mld_next_ = mld_left_             ? now_ + cfg_.mld_unsolicited_interval_ns
                        : cfg_.mld_refresh_ns ? now_ + cfg_.mld_refresh_ns
                                              : UINT64_MAX;
        }
    }
    if (announce_left_ && now_ >= announce_next_) emit_announcements(tx_out, n_tx, tx_cap);

    run_timers(tx_out, n_tx, tx_cap);
}

uint64_t neigh_proto::drops_total() const {
    uint64_t t = 0;
    for (uint64_t d : drops_)
        t += d;
    return t;
}

} // namespace uroce

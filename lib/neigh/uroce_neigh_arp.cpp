/* SPDX-License-Identifier: BSD-3-Clause
 * ARP: receive, validate, learn (the RFC 826 merge), answer requests for our
 * addresses, defend them (RFC 5227 2.1.1 probes, 2.4 conflicts). The reply
 * is written by uroce_neigh_frame.cpp; requests and announcements leave
 * from the cache and uroce_neigh_proto.cpp. Design: doc/neigh.md, "ARP".
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

neigh_proto::verdict neigh_proto::handle_arp(rte_mbuf *m, uint8_t *p, size_t l2) {
    ctr_.rx_arp++;
    if (m->data_len < l2 + sizeof(arp_hdr))
        return drop(m->pkt_len < l2 + sizeof(arp_hdr) ? neigh_drop::truncated
                                                      : neigh_drop::headers_split);
    auto *a = reinterpret_cast<arp_hdr *>(p + l2);
    /* RFC 826 "Packet Reception": only (ar$hrd, ar$pro) we speak. */
    if (!a->is_ether_ipv4()) return drop(neigh_drop::bad_arp);
    uint16_t op = a->op();
    if (op != arp_op_request && op != arp_op_reply) return drop(neigh_drop::bad_arp);
    (op == arp_op_request ? ctr_.arp_rx_request : ctr_.arp_rx_reply)++;

    const mac_addr &me = addrs_.mac();
    mac_addr sha = mac_addr::from_bytes(a->sha);
    if (!sha.is_valid_unicast() || sha == me) return drop(neigh_drop::bad_source);
    uint32_t spa = a->sender_ip(), tpa = a->target_ip();
    bool tpa_ours = addrs_.is_local_ipv4(tpa);
    bool learned = false;

    if (spa == 0) {
        /* RFC 5227 2.1.1 probe: the sender has no address yet; never learn
         * from it. A probe for our address is answered (defence, 2.4) the
         * way Linux does: unicast to the prober, target IP 0.0.0.0. */
        ctr_.arp_rx_probe++;
    } else {
        if (addrs_.is_local_ipv4(spa)) {
            /* Someone else uses our address (RFC 5227 2.4): never learn it. */
            return conflict(gid::from_ipv4(spa), sha);
        }
        if (!ipv4_is_host_unicast(spa)) return drop(neigh_drop::bad_source);
        bool gratuitous = spa == tpa;
        if (gratuitous) ctr_.arp_rx_gratuitous++;
        /* RFC 826 merge: update the sender if known; add it only when the
         * frame is for us (or arp_accept and gratuitous). */
        gid ip = gid::from_ipv4(spa);
        entry *e = find(ip);
        /* A reply unicast to us is a confirmation (REACHABLE); anything
         * else is unconfirmed hearsay (STALE), as in Linux's arp_process. */
        bool confirmed = op == arp_op_reply && tpa_ours &&
                         std::memcmp(reinterpret_cast<eth_hdr *>(p)->dst, me.b.data(), 6) == 0;
        if (e) {
            if (e->state != neigh_state::permanent) {
                neigh_state s = confirmed ? neigh_state::reachable
                                : (e->state == neigh_state::incomplete ||
                                   e->state == neigh_state::failed || e->mac != sha)
                                    ? neigh_state::stale
                                    : e->state;
                set_mac(e, sha, s);
            }
            learned = true;
        } else if (tpa_ours || (gratuitous && cfg_.arp_accept)) {
            learn_new(ip, sha, confirmed ? neigh_state::reachable : neigh_state::stale);
            learned = true;
        }
    }

    if (!tpa_ours) return learned ? verdict::consumed : drop(neigh_drop::not_for_us);
    if (op == arp_op_reply) return verdict::consumed;

    /* RFC 826: swap sender/target, put our addresses in the sender fields,
     * opcode reply, send to the requester's hardware address. */
    if (!arp_reply_in_place(m, l2, me)) return drop(neigh_drop::no_room);
    ctr_.arp_tx_reply++;
    return verdict::reply;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * ICMP and ICMPv6 echo: validate (IPv4 header and checksum, fragments,
 * ICMP checksum over the whole chain, destinations we answer for) and answer
 * echo requests. RFC 792, RFC 1122 3.2.1.2 / 3.2.1.3 / 3.2.2.6, RFC 1349
 * 5.1 (TOS), RFC 4443 4.1 / 4.2 (ICMPv6 echo, multicast requests). The
 * ICMPv6 header and checksum are checked in uroce_neigh_proto.cpp.
 * Design: doc/neigh.md, "ICMP echo" and "ICMPv6".
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

neigh_proto::verdict neigh_proto::handle_ipv4(rte_mbuf *m, size_t l2) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    uint32_t dlen = m->data_len;
    if (dlen < l2 + sizeof(ipv4_hdr))
        return drop(m->pkt_len < l2 + sizeof(ipv4_hdr) ? neigh_drop::truncated
                                                       : neigh_drop::headers_split);
    auto *ip = reinterpret_cast<ipv4_hdr *>(p + l2);
    size_t hl = ip->header_length();
    if (ip->version() != 4 || hl < sizeof(ipv4_hdr)) return drop(neigh_drop::bad_ip_header);
    if (dlen < l2 + hl)
        return drop(m->pkt_len < l2 + hl ? neigh_drop::truncated : neigh_drop::headers_split);
    uint32_t tl = ip->total_length();
    if (tl < hl) return drop(neigh_drop::bad_ip_header);
    if (l2 + tl > m->pkt_len) return drop(neigh_drop::truncated);
    /* RFC 1122 3.2.1.2: silently discard a datagram with a bad header checksum. */
    if (!ip->checksum_ok()) return drop(neigh_drop::bad_ip_checksum);
    if (ip->protocol != ip_proto_icmp) return drop(neigh_drop::unsupported_type);
    ctr_.rx_icmp++;
    /* No reassembly here: RoCE never fragments and a fragmented ping is the
     * only user (ping -s beyond the MTU); counted, not answered. */
    if (ip->is_fragment()) return drop(neigh_drop::ip_fragment);
    uint32_t dst = ip->dst_addr(), src = ip->src_addr();
    /* RFC 1122 3.2.2.6: echo to a broadcast/multicast address MAY be
     * ignored; we do (only our unicast addresses are answered). */
    if (!addrs_.is_local_ipv4(dst)) return drop(neigh_drop::not_for_us);
    /* RFC 1122 3.2.1.3: a source that is not a host address is discarded. */
    if (!ipv4_is_host_unicast(src)) return drop(neigh_drop::bad_source);
    uint32_t icmp_len = tl - uint32_t(hl);
    if (icmp_len < sizeof(icmp_hdr)) return drop(neigh_drop::truncated);
    if (dlen < l2 + hl + sizeof(icmp_hdr)) return drop(neigh_drop::headers_split);
    /* RFC 792: checksum over the whole ICMP message (payload may be chained). */
    if (mbuf_sum(m, uint32_t(l2 + hl), icmp_len) != 0xffff)
        return drop(neigh_drop::bad_icmp_checksum);
    auto *icmp = reinterpret_cast<icmp_hdr *>(p + l2 + hl);
    if (icmp->type != icmp_type_echo_request) return drop(neigh_drop::unsupported_type);
    ctr_.icmp_rx_echo_request++;

    /* RFC 792 echo reply, written in place. */
    if (!icmp_echo_reply_in_place(m, l2, cfg_.ttl, ip_id_, addrs_.mac()))
        return drop(neigh_drop::no_room);
    ip_id_++;
    ctr_.icmp_tx_echo_reply++;
    return verdict::reply;
}

neigh_proto::verdict neigh_proto::handle_icmpv6_echo(rte_mbuf *m, size_t l2, uint32_t plen) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t dlen = m->data_len;
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    bool mcast = ipv6_is_multicast(ip6->dst);
    if (mcast) {
        /* RFC 4443 4.2: echo to a multicast group we are in SHOULD be answered. */
        if (!cfg_.icmpv6_multicast_echo ||
            !(std::memcmp(ip6->dst, ipv6_all_nodes().raw.data(), 16) == 0 ||
              addrs_.is_our_solicited_node(ip6->dst)))
            return drop(neigh_drop::not_for_us);
    } else if (!addrs_.is_local_ipv6(ip6->dst)) {
        return drop(neigh_drop::not_for_us);
    }
    if (ipv6_is_unspecified(ip6->src)) return drop(neigh_drop::bad_source);
    if (plen < sizeof(icmpv6_echo)) return drop(neigh_drop::truncated);
    if (dlen < icmp_off + sizeof(icmpv6_echo)) return drop(neigh_drop::headers_split);
    ctr_.icmpv6_rx_echo_request++;

    /* RFC 4443 4.2: reply to the requester; identifier, sequence and data
     * unchanged. For a multicast request, the source MUST be a unicast
     * address of the receiving interface. */
    gid new_src = mcast ? addrs_.ipv6_source_for(ip6->src) : gid::from_bytes(ip6->dst);
    if (!icmpv6_echo_reply_in_place(m, l2, new_src, cfg_.ttl, addrs_.mac()))
        return drop(neigh_drop::no_room);
    ctr_.icmpv6_tx_echo_reply++;
    return verdict::reply;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Frame building: the frames lib/neigh originates (ARP requests and
 * announcements, NS / unsolicited NA, MLD reports), the replies it writes in
 * place over requests (ARP reply, ICMP / ICMPv6 echo reply, NA), and the
 * mbuf-chain checksum. RFC 826, RFC 5227 2.3, RFC 792, RFC 4443 4.2,
 * RFC 4861 4.3 / 4.4 / 7.2.4, RFC 3810 5.2, RFC 2710 3, RFC 2711, RFC 1071.
 * Design: doc/neigh.md ("Checksums").
 */
#include "uroce_neigh_frame.h"

#include <algorithm>

#include <rte_mempool.h>

#include "uroce_ip_addr.h"

namespace uroce::neigh_frame {

namespace {

/* Make m a single segment of exactly len bytes whose bytes past content
 * are zero, for replies rebuilt in place (ARP, NA): the request's trailer
 * (Ethernet padding, options) must not leak into the reply. */
bool reshape(rte_mbuf *m, uint32_t content, uint32_t len) {
    if (m->nb_segs > 1) {
        rte_pktmbuf_free(m->next);
        m->next = nullptr;
        m->nb_segs = 1;
        m->pkt_len = m->data_len;
    }
    if (uint32_t(m->buf_len) - m->data_off < len) return false;
    if (len > content)
        std::memset(rte_pktmbuf_mtod_offset(m, uint8_t *, content), 0, len - content);
    m->data_len = uint16_t(len);
    m->pkt_len = len;
    return true;
}

/* Cut Ethernet padding / trailing garbage so the reply is exactly the
 * request's IP datagram (the trailer is beyond the IP length). */
bool trim_to(rte_mbuf *m, uint32_t len) {
    if (m->pkt_len <= len) return true;
    return rte_pktmbuf_trim(m, uint16_t(m->pkt_len - len)) == 0;
}

size_t write_l2(uint8_t *p, const mac_addr &dst, const mac_addr &src, uint16_t et,
                const std::optional<uint16_t> &vlan) {
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    dst.copy_to(eth->dst);
    src.copy_to(eth->src);
    if (vlan) {
        eth->set_ether_type(ether_type_vlan);
        auto *v = reinterpret_cast<vlan_hdr *>(p + sizeof(eth_hdr));
        v->set_tci(*vlan);
        v->set_ether_type(et);
        return sizeof(eth_hdr) + sizeof(vlan_hdr);
    }
    eth->set_ether_type(et);
    return sizeof(eth_hdr);
}

/* A zeroed frame of len bytes (plus the configured 802.1Q tag) from the
 * pool, with its Ethernet header written; p/l2 point at it. */
rte_mbuf *alloc_frame(const origin &o, uint32_t l3_len, const mac_addr &dst, uint16_t et,
                      uint8_t *&p, size_t &l2) {
    if (!o.pool) return nullptr;
    rte_mbuf *m = rte_pktmbuf_alloc(o.pool);
    if (!m) return nullptr;
    l2 = sizeof(eth_hdr) + (o.vlan_tci ? sizeof(vlan_hdr) : 0);
    uint32_t len = uint32_t(std::max(l2 + l3_len, eth_min_frame_len));
    p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, uint16_t(len)));
    if (!p) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    std::memset(p, 0, len);
    write_l2(p, dst, o.mac, et, o.vlan_tci);
    return m;
}

} // namespace

/* ================================================================ frames we originate */

rte_mbuf *build_arp_request(const origin &o, const mac_addr &dst, uint32_t spa, uint32_t tpa) {
    uint8_t *p;
    size_t l2;
    rte_mbuf *m = alloc_frame(o, sizeof(arp_hdr), dst, ether_type_arp, p, l2);
    if (!m) return nullptr;
    auto *a = reinterpret_cast<arp_hdr *>(p + l2);
    a->set_hrd(arp_hrd_ethernet);
    a->set_pro(ether_type_ipv4);
    a->hln = 6;
    a->pln = 4;
    a->set_op(arp_op_request);
    o.mac.copy_to(a->sha);
    a->set_sender_ip(spa);
    a->set_target_ip(tpa);
    return m;
}

rte_mbuf *build_nd(const origin &o, uint8_t type, const mac_addr &dst_mac, const gid &src,
                   const gid &dst, const gid &target, uint32_t na_flags) {
    constexpr uint32_t icmp_len = sizeof(nd_ns) + sizeof(nd_opt_lladdr);
    uint8_t *p;
    size_t l2;
    rte_mbuf *m =
        alloc_frame(o, uint32_t(sizeof(ipv6_hdr) + icmp_len), dst_mac, ether_type_ipv6, p, l2);
    if (!m) return nullptr;
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(icmp_len));
    ip6->next_header = ip_proto_icmpv6;
    ip6->hop_limit = nd_hop_limit;
    std::memcpy(ip6->src, src.raw.data(), 16);
    std::memcpy(ip6->dst, dst.raw.data(), 16);
    auto *na = reinterpret_cast<nd_na *>(ip6 + 1); /* NS: flags word is "reserved", zero */
    na->h.type = type;
    store_be32(na->flags_be, na_flags);
    std::memcpy(na->target, target.raw.data(), 16);
    auto *opt = reinterpret_cast<nd_opt_lladdr *>(na + 1);
    opt->type = type == icmpv6_type_neighbor_solicit ? nd_opt_source_lladdr : nd_opt_target_lladdr;
    opt->len = 1;
    o.mac.copy_to(opt->addr);
    uint32_t s = ipv6_pseudo_sum(ip6->src, ip6->dst, icmp_len, ip_proto_icmpv6) +
                 rte_raw_cksum(na, icmp_len);
    store_csum(na->h.checksum_be, fold(s));
    return m;
}

rte_mbuf *build_mld(const origin &o, const gid &src_ll, const gid &dst, uint32_t icmp_len,
                    uint8_t *&icmp) {
    uint8_t *p;
    size_t l2;
    rte_mbuf *m = alloc_frame(o, uint32_t(sizeof(ipv6_hdr) + sizeof(ipv6_hbh_hdr) + icmp_len),
                              ipv6_multicast_mac(dst.raw.data()), ether_type_ipv6, p, l2);
    if (!m) return nullptr;
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(sizeof(ipv6_hbh_hdr) + icmp_len));
    ip6->next_header = ipv6_nh_hop_by_hop;
    ip6->hop_limit = 1;
    std::memcpy(ip6->src, src_ll.raw.data(), 16);
    std::memcpy(ip6->dst, dst.raw.data(), 16);
    auto *hbh = reinterpret_cast<ipv6_hbh_hdr *>(ip6 + 1);
    hbh->next_header = ip_proto_icmpv6;
    hbh->hdr_ext_len = 0;
    /* Router Alert (type 5, length 2, value 0 = MLD), then PadN of 2. */
    const uint8_t opts[6] = {ipv6_opt_router_alert, 2, 0, uint8_t(router_alert_mld), 1, 0};
    std::memcpy(hbh->options, opts, sizeof(opts));
    icmp = reinterpret_cast<uint8_t *>(hbh + 1);
    return m;
}

/* ================================================================ replies written in place */

bool arp_reply_in_place(rte_mbuf *m, size_t l2, const mac_addr &me) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *a = reinterpret_cast<arp_hdr *>(p + l2);
    uint32_t tpa = a->target_ip();
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, a->sha, 6);
    me.copy_to(eth->src);
    a->set_op(arp_op_reply);
    std::memcpy(a->tha, a->sha, 6);
    std::memcpy(a->tpa, a->spa, 4);
    me.copy_to(a->sha);
    a->set_sender_ip(tpa);
    return reshape(m, uint32_t(l2 + sizeof(arp_hdr)),
                   uint32_t(std::max(l2 + sizeof(arp_hdr), eth_min_frame_len)));
}

bool icmp_echo_reply_in_place(rte_mbuf *m, size_t l2, uint8_t ttl, uint16_t ip_id,
                              const mac_addr &me) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip = reinterpret_cast<ipv4_hdr *>(p + l2);
    size_t hl = ip->header_length();
    uint32_t tl = ip->total_length();
    uint32_t icmp_len = tl - uint32_t(hl);
    uint32_t dst = ip->dst_addr(), src = ip->src_addr();
    auto *icmp = reinterpret_cast<icmp_hdr *>(p + l2 + hl);

    if (!trim_to(m, uint32_t(l2 + tl))) return false;
    if (hl > sizeof(ipv4_hdr)) {
        /* Options are not echoed (RFC 1122 3.2.2.6 only SHOULDs record-route
         * and timestamp; a reversed source route we would not honour):
         * slide L2 + the fixed header over them. */
        size_t optlen = hl - sizeof(ipv4_hdr);
        std::memmove(p + optlen, p, l2 + sizeof(ipv4_hdr));
        rte_pktmbuf_adj(m, uint16_t(optlen));
        p = rte_pktmbuf_mtod(m, uint8_t *);
        ip = reinterpret_cast<ipv4_hdr *>(p + l2);
        ip->version_ihl = 0x45;
        tl -= uint32_t(optlen);
        ip->set_total_length(uint16_t(tl));
        hl = sizeof(ipv4_hdr);
        icmp = reinterpret_cast<icmp_hdr *>(p + l2 + hl);
    }
    /* RFC 792 echo reply: addresses reversed, type 0, data (id, seq and
     * payload) returned unchanged. TOS kept (RFC 1349 5.1). */
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, eth->src, 6);
    me.copy_to(eth->src);
    ip->set_src_addr(dst);
    ip->set_dst_addr(src);
    ip->ttl = ttl;
    ip->set_id(ip_id);
    ip->set_frag(0);
    ip->set_checksum(0);
    store_csum(ip->checksum_be, rte_raw_cksum(ip, hl));
    icmp->type = icmp_type_echo_reply;
    icmp->code = 0;
    icmp->set_checksum(0);
    store_csum(icmp->checksum_be, mbuf_sum(m, uint32_t(l2 + hl), icmp_len));
    return true;
}

bool icmpv6_echo_reply_in_place(rte_mbuf *m, size_t l2, const gid &src, uint8_t hop_limit,
                                const mac_addr &me) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t plen = ip6->payload_length();
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    if (!trim_to(m, icmp_off + plen)) return false;

    /* RFC 4443 4.2: reply to the requester; identifier, sequence and data
     * unchanged. */
    std::memcpy(ip6->dst, ip6->src, 16);
    std::memcpy(ip6->src, src.raw.data(), 16);
    ip6->hop_limit = hop_limit;
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, eth->src, 6);
    me.copy_to(eth->src);
    auto *ih = reinterpret_cast<icmpv6_hdr *>(p + icmp_off);
    ih->type = icmpv6_type_echo_reply;
    ih->code = 0;
    ih->set_checksum(0);
    uint32_t s =
        ipv6_pseudo_sum(ip6->src, ip6->dst, plen, ip_proto_icmpv6) + mbuf_sum(m, icmp_off, plen);
    store_csum(ih->checksum_be, fold(s));
    return true;
}

bool na_reply_in_place(rte_mbuf *m, size_t l2, const mac_addr &dst_mac, const gid &dst,
                       const gid &target, bool solicited, const mac_addr &me) {
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    uint32_t na_len = sizeof(nd_na) + sizeof(nd_opt_lladdr);
    if (!reshape(m, icmp_off + na_len, icmp_off + na_len)) return false;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    dst_mac.copy_to(eth->dst);
    me.copy_to(eth->src);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(na_len));
    ip6->next_header = ip_proto_icmpv6;
    ip6->hop_limit = nd_hop_limit;
    std::memcpy(ip6->src, target.raw.data(), 16);
    std::memcpy(ip6->dst, dst.raw.data(), 16);
    auto *na = reinterpret_cast<nd_na *>(p + icmp_off);
    na->h.type = icmpv6_type_neighbor_advert;
    na->h.code = 0;
    na->set_flags(false, solicited, true);
    std::memcpy(na->target, target.raw.data(), 16);
    auto *opt = reinterpret_cast<nd_opt_lladdr *>(na + 1);
    opt->type = nd_opt_target_lladdr;
    opt->len = 1;
    me.copy_to(opt->addr);
    na->h.set_checksum(0);
    uint32_t s =
        ipv6_pseudo_sum(ip6->src, ip6->dst, na_len, ip_proto_icmpv6) + rte_raw_cksum(na, na_len);
    store_csum(na->h.checksum_be, fold(s));
    return true;
}

} // namespace uroce::neigh_frame

/* SPDX-License-Identifier: BSD-3-Clause
 * Frame building for lib/neigh (internal): the frames we originate (ARP
 * requests and announcements, NS and unsolicited NA, MLD reports) into fresh
 * mbufs from the configured mempool, the replies written in place over the
 * request (ARP reply, ICMP and ICMPv6 echo reply, NA), the checksums, and
 * the rx-to-tx mbuf helpers. Knows the wire formats, not the cache or the
 * protocol rules: callers validate, decide and count.
 *
 * RFC 826 (ARP packet layout), RFC 5227 2.3 (announcement layout), RFC 792
 * and RFC 4443 4.2 (echo replies), RFC 4861 4.3 / 4.4 / 4.6.1 (NS, NA, the
 * link-layer address option), RFC 3810 5.2 / RFC 2710 3 (MLD reports),
 * RFC 2711 (Router Alert), RFC 1071 and RFC 8200 8.1 (checksums and the
 * pseudo-header), IEEE 802.3 minimum frame size.
 */
#ifndef UROCE_NEIGH_FRAME_H
#define UROCE_NEIGH_FRAME_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include <uroce/gid.h>
#include <uroce/local_addr.h>
#include "uroce_neigh_hdr.h"

struct rte_mempool;

namespace uroce::neigh_frame {

/* ---------------------------------------------------------------- checksums */

inline uint16_t fold(uint64_t s) {
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}

/* rte_raw_cksum() sums native (little-endian) words, so its result is in
 * memory order: store it as is, not through store_be16 (RFC 1071 2(B)). */
inline void store_csum(uint8_t *field, uint16_t sum) {
    uint16_t c = uint16_t(~sum);
    std::memcpy(field, &c, 2);
}

/* Sum (not complemented, folded to 16 bits) of len bytes from offset off of
 * an mbuf chain; odd-length segments handled (RFC 1071 2(B)).
 * rte_raw_cksum_mbuf() in DPDK 22.11 truncates each segment's unfolded sum to
 * 16 bits before the odd-offset byte swap, losing carries on chains; this
 * folds first (RFC 1071 2(B): byte-swapped sums stay valid when folded).
 * Inline: every ICMP/ICMPv6 frame is summed on receive and on reply. */
inline uint16_t mbuf_sum(const rte_mbuf *m, uint32_t off, uint32_t len) {
    uint64_t sum = 0;
    uint32_t done = 0;
    for (const rte_mbuf *seg = m; seg && len; seg = seg->next) {
        uint32_t sl = seg->data_len;
        if (off >= sl) {
            off -= sl;
            continue;
        }
        uint32_t n = std::min(sl - off, len);
        uint16_t s =
            fold(__rte_raw_cksum(rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n, 0));
        if (done & 1) s = bswap16(s);
        sum += s;
        done += n;
        len -= n;
        off = 0;
    }
    return fold(sum);
}

/* ICMPv6 pseudo-header sum (RFC 8200 8.1 / RFC 4443 2.3), unfolded. */
inline uint32_t ipv6_pseudo_sum(const uint8_t *src, const uint8_t *dst, uint32_t len, uint8_t nh) {
    const uint8_t tail[8] = {
        uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len), 0, 0, 0, nh};
    uint32_t s = __rte_raw_cksum(src, 16, 0);
    s = __rte_raw_cksum(dst, 16, s);
    return __rte_raw_cksum(tail, sizeof(tail), s);
}

/* ---------------------------------------------------------------- rx mbuf -> tx mbuf */

/* Pad to the 60-byte Ethernet minimum; many PMDs pad in hardware, not all
 * virtual ones do. */
inline void pad_min(rte_mbuf *m) {
    if (m->pkt_len >= eth_min_frame_len) return;
    uint16_t add = uint16_t(eth_min_frame_len - m->pkt_len);
    char *p = rte_pktmbuf_append(m, add);
    if (p) std::memset(p, 0, add);
}

/* Turn an rx mbuf into a tx one: offload flags from rx are meaningless on
 * tx, except a hardware-stripped VLAN tag, which must go back on. */
inline void prepare_tx(rte_mbuf *m) {
    bool vlan = m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED;
    /* EXTERNAL/INDIRECT describe the buffer, not an offload: clearing them
     * would make rte_pktmbuf_free() skip the external free callback or the
     * direct mbuf's reference (zero-copy PMDs, clones). */
    m->ol_flags = (m->ol_flags & (RTE_MBUF_F_EXTERNAL | RTE_MBUF_F_INDIRECT)) |
                  (vlan ? RTE_MBUF_F_TX_VLAN : 0);
    pad_min(m);
}

/* Replies are written in place; a first segment whose data someone else
 * also references (a clone kept for capture, refcnt > 1) must not be. */
inline bool data_shared(const rte_mbuf *m) {
    if (rte_mbuf_refcnt_read(m) > 1) return true;
    if (m->ol_flags & RTE_MBUF_F_INDIRECT)
        return rte_mbuf_refcnt_read(rte_mbuf_from_indirect(const_cast<rte_mbuf *>(m))) > 1;
    if (m->ol_flags & RTE_MBUF_F_EXTERNAL) return rte_mbuf_ext_refcnt_read(m->shinfo) > 1;
    return false;
}

/* ---------------------------------------------------------------- frames we originate */

/* What every frame we originate carries: the mempool it comes from, the
 * 802.1Q tag (replies keep the request's instead) and our MAC. The builders
 * return nullptr when the pool is missing or empty; callers count that. */
struct origin {
    rte_mempool *pool = nullptr;
    std::optional<uint16_t> vlan_tci;
    mac_addr mac;
};

/* An ARP request (tha left zero: unknown, and ignored by receivers); with
 * spa == tpa, the RFC 5227 2.3 announcement. */
rte_mbuf *build_arp_request(const origin &o, const mac_addr &dst, uint32_t spa, uint32_t tpa);

/* An NS or NA (same 24-byte body) with our MAC in a source/target
 * link-layer option, hop limit 255 (RFC 4861 4.3, 4.4). */
rte_mbuf *build_nd(const origin &o, uint8_t type, const mac_addr &dst_mac, const gid &src,
                   const gid &dst, const gid &target, uint32_t na_flags);

/* An MLD frame: IPv6 from src_ll (our link-local address, RFC 3810
 * 5.2.13), hop limit 1, Hop-by-Hop header with Router Alert (RFC 2711),
 * then icmp_len bytes of ICMPv6 for the caller to fill (and checksum). */
rte_mbuf *build_mld(const origin &o, const gid &src_ll, const gid &dst, uint32_t icmp_len,
                    uint8_t *&icmp);

/* ---------------------------------------------------------------- replies written in place */

/* The request's headers are validated and in the first segment (l2 = its
 * Ethernet + 802.1Q length); me is our MAC. false: the reply does not fit
 * (the caller counts no_room). */

/* RFC 826: sender/target swapped, our addresses as sender, opcode reply,
 * unicast to the requester; padded to the Ethernet minimum. */
bool arp_reply_in_place(rte_mbuf *m, size_t l2, const mac_addr &me);

/* RFC 792 echo reply: addresses reversed, type 0, data returned unchanged,
 * IP options dropped, TTL ttl, IP id ip_id, both checksums recomputed. */
bool icmp_echo_reply_in_place(rte_mbuf *m, size_t l2, uint8_t ttl, uint16_t ip_id,
                              const mac_addr &me);

/* RFC 4443 4.2 echo reply from src, hop limit hop_limit, identifier,
 * sequence and data unchanged. */
bool icmpv6_echo_reply_in_place(rte_mbuf *m, size_t l2, const gid &src, uint8_t hop_limit,
                                const mac_addr &me);

/* RFC 4861 7.2.4: the NS becomes an NA for target (also its source) to
 * dst / dst_mac, O=1, S=solicited, R=0, TLLA = me. */
bool na_reply_in_place(rte_mbuf *m, size_t l2, const mac_addr &dst_mac, const gid &dst,
                       const gid &target, bool solicited, const mac_addr &me);

} // namespace uroce::neigh_frame

#endif

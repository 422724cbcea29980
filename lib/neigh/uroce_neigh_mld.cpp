/* SPDX-License-Identifier: BSD-3-Clause
 * MLD for the solicited-node groups a node must join (RFC 4861 7.2.1):
 * MLDv2 reports (RFC 3810 5.2, 6), MLDv1 reports while an MLDv1 querier is
 * present (RFC 3810 8.2.1, RFC 2710 3), and query validation (RFC 3810
 * 5.1.14). When they are sent is poll()'s business (uroce_neigh_proto.cpp).
 * Design: doc/neigh.md, "MLD".
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

/* The groups we are in besides ff02::1 (never reported, RFC 3810 6): the
 * solicited-node group of every IPv6 address, link-local included, once. */
size_t neigh_proto::mld_groups(gid *out) const {
    size_t n = 0;
    for (size_t i = 0; i <= addrs_.num_ipv6(); i++) {
        const gid &a = i == 0 ? addrs_.link_local() : addrs_.ipv6_at(i - 1).addr;
        gid g = ipv6_solicited_node(a.raw.data());
        if (std::find(out, out + n, g) == out + n) out[n++] = g;
    }
    return n;
}

/* One report of all our groups: MLDv2 (one frame, RFC 3810 5.2) or, while
 * an MLDv1 querier is present, one MLDv1 report per group sent to the group
 * (RFC 2710 3, RFC 3810 8.2.1). All or nothing: false if tx_out is short. */
bool neigh_proto::emit_mld(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap,
                           uint8_t record_type) {
    std::array<gid, local_addr_table::max_ipv6 + 1> groups;
    size_t n = mld_groups(groups.data());
    bool v1 = now_ < mldv1_until_;
    size_t need = v1 ? n : 1;
    if (size_t(tx_cap - n_tx) < need) {
        ctr_.tx_deferred++;
        return false;
    }
    gid src = addrs_.link_local();
    if (v1) {
        for (size_t i = 0; i < n; i++) {
            uint8_t *icmp;
            rte_mbuf *m =
                count_alloc(build_mld(tx_origin(), src, groups[i], sizeof(mld_hdr), icmp));
            if (!m) continue;
            auto *r = reinterpret_cast<mld_hdr *>(icmp);
            r->h.type = icmpv6_type_mldv1_report;
            std::memcpy(r->mcast_addr, groups[i].raw.data(), 16);
            uint32_t s = ipv6_pseudo_sum(src.raw.data(), groups[i].raw.data(), sizeof(mld_hdr),
                                         ip_proto_icmpv6) +
                         rte_raw_cksum(r, sizeof(mld_hdr));
            store_csum(r->h.checksum_be, fold(s));
            tx_out[n_tx++] = m;
            ctr_.mld_tx_report++;
        }
        return true;
    }
    uint32_t icmp_len = uint32_t(sizeof(mldv2_report_hdr) + n * sizeof(mldv2_record));
    gid dst = ipv6_all_mldv2_routers();
    uint8_t *icmp;
    rte_mbuf *m = count_alloc(build_mld(tx_origin(), src, dst, icmp_len, icmp));
    if (!m) return true; /* counted as tx_alloc_fail; retried on the next schedule */
    auto *r = reinterpret_cast<mldv2_report_hdr *>(icmp);
    r->h.type = icmpv6_type_mldv2_report;
    r->set_num_records(uint16_t(n));
    auto *rec = reinterpret_cast<mldv2_record *>(r + 1);
    for (size_t i = 0; i < n; i++) {
        rec[i].type = record_type; /* EXCLUDE with no sources = listening to all */
        std::memcpy(rec[i].mcast_addr, groups[i].raw.data(), 16);
    }
    uint32_t s = ipv6_pseudo_sum(src.raw.data(), dst.raw.data(), icmp_len, ip_proto_icmpv6) +
                 rte_raw_cksum(r, icmp_len);
    store_csum(r->h.checksum_be, fold(s));
    tx_out[n_tx++] = m;
    ctr_.mld_tx_report++;
    return true;
}

neigh_proto::verdict neigh_proto::handle_mld(rte_mbuf *m, size_t l2, uint32_t icmp_off,
                                             uint32_t icmp_len) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    if (p[icmp_off] != icmpv6_type_mld_query) {
        ctr_.mld_rx_other++; /* other listeners' reports: hosts ignore them (RFC 3810 6) */
        return verdict::consumed;
    }
    /* RFC 3810 5.1.14 / RFC 2710 3: queries come from a link-local source
     * with hop limit 1; anything else is discarded. */
    if (ip6->hop_limit != 1 || !ipv6_is_link_local(ip6->src)) return drop(neigh_drop::bad_mld);
    if (icmp_len < sizeof(mld_hdr) || (icmp_len > sizeof(mld_hdr) && icmp_len < 28))
        return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + sizeof(mld_hdr)) return drop(neigh_drop::headers_split);
    auto *q = reinterpret_cast<const mld_hdr *>(p + icmp_off);
    ctr_.mld_rx_query++;
    if (icmp_len == sizeof(mld_hdr)) {
        /* RFC 3810 8.2.1: an MLDv1 querier is present; answer in MLDv1 for
         * the Older Version Querier Present Timeout (9.12: robustness x
         * query interval + query response interval = 260 s by default). */
        ctr_.mld_rx_query_v1++;
        mldv1_until_ =
            now_ + uint64_t(cfg_.mld_robustness ? cfg_.mld_robustness : 2) * 125'000'000'000ull +
            10'000'000'000ull;
    }
    /* General query (::) or a group-specific one for one of our groups:
     * answer with the current state on the next poll(). (RFC 3810 6.2 asks
     * for a random delay up to Maximum Response Delay; one host answering
     * at once is harmless.) */
    if (!ipv6_is_unspecified(q->mcast_addr)) {
        std::array<gid, local_addr_table::max_ipv6 + 1> groups;
        size_t n = mld_groups(groups.data());
        gid g = gid::from_bytes(q->mcast_addr);
        if (std::find(groups.begin(), groups.begin() + n, g) == groups.begin() + n)
            return verdict::consumed;
    }
    if (cfg_.mld) mld_respond_ = true;
    return verdict::consumed;
}

} // namespace uroce

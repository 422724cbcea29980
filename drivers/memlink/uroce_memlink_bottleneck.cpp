/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_memlink_bottleneck.h"

#include <algorithm>
#include <cmath>

#include <rte_mbuf.h>

#include <uroce/byteorder.h>
#include <uroce/hdr.h>

namespace uroce {

bottleneck::bottleneck(const bottleneck_config &cfg) : cfg_(cfg) {
    if (cfg_.rate_mbps)
        ns_per_byte_fp16_ = uint64_t(std::llround(8000.0 * 65536.0 / double(cfg_.rate_mbps)));
    hist_.assign(cfg_.queue_bytes / 1024 + 2, 0);
}

void bottleneck::reset_stats() {
    st_ = bottleneck_stats{};
    std::fill(hist_.begin(), hist_.end(), 0);
}

uint64_t bottleneck::backlog(uint64_t now_ns) const {
    if (!cfg_.rate_mbps || busy_until_ns_ <= now_ns) return 0;
    return (busy_until_ns_ - now_ns) * cfg_.rate_mbps / 8000;
}

uint64_t bottleneck::queue_quantile(double q) const {
    uint64_t total = 0;
    for (uint64_t h : hist_)
        total += h;
    if (!total) return 0;
    uint64_t want = uint64_t(std::ceil(q * double(total)));
    if (want == 0) want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < hist_.size(); ++i) {
        seen += hist_[i];
        if (seen >= want) return uint64_t(i) * 1024;
    }
    return uint64_t(hist_.size() - 1) * 1024;
}

bool bottleneck::admit(rte_mbuf *m, uint64_t now_ns, double u, uint64_t *at_ns) {
    const uint32_t len = m->pkt_len;
    ++st_.frames;
    st_.bytes += len;
    uint64_t q = backlog(now_ns);
    size_t b = std::min<size_t>(q / 1024, hist_.size() - 1);
    ++hist_[b];
    if (cfg_.rate_mbps && q + len > cfg_.queue_bytes) {
        ++st_.dropped;
        return false;
    }
    if (cfg_.ecn && q > cfg_.kmin_bytes) {
        double p = q >= cfg_.kmax_bytes ? 1.0
                                        : cfg_.pmax * double(q - cfg_.kmin_bytes) /
                                              double(cfg_.kmax_bytes - cfg_.kmin_bytes);
        if (u < p) {
            if (frame_mark_ce(m))
                ++st_.marked;
            else
                ++st_.not_ect;
        }
    }
    uint64_t depart = now_ns;
    if (cfg_.rate_mbps) {
        if (busy_until_ns_ < now_ns) {
            busy_until_ns_ = now_ns;
            busy_frac_ = 0;
        }
        uint64_t c = uint64_t(len) * ns_per_byte_fp16_ + busy_frac_;
        busy_until_ns_ += c >> 16;
        busy_frac_ = c & 0xffff;
        depart = busy_until_ns_;
    }
    ++st_.sent;
    st_.sent_bytes += len;
    *at_ns = depart + cfg_.delay_ns;
    return true;
}

bool frame_mark_ce(rte_mbuf *m) {
    if (m->data_len < sizeof(eth_hdr)) return false;
    uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
    size_t off = sizeof(eth_hdr);
    uint16_t et = reinterpret_cast<const eth_hdr *>(f)->ether_type();
    if (et == ether_type_vlan) {
        if (m->data_len < off + sizeof(vlan_hdr)) return false;
        et = reinterpret_cast<const vlan_hdr *>(f + off)->ether_type();
        off += sizeof(vlan_hdr);
    }
    if (et == ether_type_ipv4) {
        if (m->data_len < off + sizeof(ipv4_hdr)) return false;
        auto *ip = reinterpret_cast<ipv4_hdr *>(f + off);
        if ((ip->tos & 3) == 0) return false;
        /* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over the 16-bit word
         * holding the TOS (version/IHL in its high byte) */
        uint16_t old_word = uint16_t(ip->version_ihl << 8 | ip->tos);
        ip->tos |= 3;
        uint16_t new_word = uint16_t(ip->version_ihl << 8 | ip->tos);
        uint32_t s = uint32_t(uint16_t(~ip->checksum())) + uint16_t(~old_word) + new_word;
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        ip->set_checksum(uint16_t(~s));
        return true;
    }
    if (et == ether_type_ipv6) {
        if (m->data_len < off + sizeof(ipv6_hdr)) return false;
        auto *ip = reinterpret_cast<ipv6_hdr *>(f + off);
        uint8_t tc = ip->traffic_class();
        if ((tc & 3) == 0) return false;
        ip->set_vtc_flow(uint8_t(tc | 3), ip->flow_label());
        return true;
    }
    return false;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_memlink.h"

#include <cstring>

#include <rte_mbuf.h>

namespace uroce {

memlink_port::memlink_port(memlink *link, const uint8_t mac[6], uint32_t depth)
    : link_(link), q_(std::make_unique<entry[]>(depth)), depth_(depth) {
    std::memcpy(mac_, mac, 6);
}

memlink_port::~memlink_port() {
    for (uint32_t i = 0; i < count_; ++i)
        rte_pktmbuf_free(q_[i].m);
    if (held_) rte_pktmbuf_free(held_);
}

netdev_caps memlink_port::caps() const {
    netdev_caps c;
    c.max_frame_len = link_->cfg_.max_frame_len;
    c.ipv4_csum_offload = link_->cfg_.ipv4_csum_offload;
    return c;
}

uint16_t memlink_port::tx_burst(rte_mbuf **pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i)
        link_->send(this, pkts[i]);
    return n;
}

bool memlink_port::enqueue(rte_mbuf *m, uint64_t at) {
    if (count_ == depth_) {
        ++link_->stats_.queue_full;
        rte_pktmbuf_free(m);
        return false;
    }
    q_[count_++] = entry{m, at};
    return true;
}

uint16_t memlink_port::rx_burst(rte_mbuf **pkts, uint16_t n) {
    if (held_ && count_ == 0) { /* nothing followed: let it through */
        enqueue(held_, 0);
        held_ = nullptr;
    }
    uint64_t now = link_->now_ns();
    uint16_t got = 0;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < count_; ++i) {
        if (got < n && q_[i].at <= now)
            pkts[got++] = q_[i].m;
        else
            q_[keep++] = q_[i];
    }
    count_ = keep;
    link_->stats_.delivered += got;
    return got;
}

memlink::memlink(const memlink_config &cfg, clock_source *clock)
    : cfg_(cfg), clock_(clock ? clock : default_clock()), rng_(cfg.seed ? cfg.seed : 1) {}

memlink::~memlink() = default;

memlink_port *memlink::add_port(const uint8_t mac[6]) {
    ports_.push_back(std::make_unique<memlink_port>(this, mac, cfg_.queue_depth));
    return ports_.back().get();
}

void memlink::set_faults(double drop, double duplicate, double reorder, double corrupt,
                         double delay, uint64_t delay_ns) {
    cfg_.drop = drop;
    cfg_.duplicate = duplicate;
    cfg_.reorder = reorder;
    cfg_.corrupt = corrupt;
    cfg_.delay = delay;
    cfg_.delay_ns = delay_ns;
}

uint32_t memlink::in_flight() const {
    uint32_t n = 0;
    for (const auto &p : ports_)
        n += p->queued();
    return n;
}

uint64_t memlink::next() {
    /* xorshift64* */
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545f4914f6cdd1dull;
}

double memlink::uniform() {
    return double(next() >> 11) * (1.0 / 9007199254740992.0);
}

void memlink::send(memlink_port *from, rte_mbuf *m) {
    ++stats_.tx;
    const uint8_t *dst = rte_pktmbuf_mtod(m, const uint8_t *);
    memlink_port *to = nullptr;
    if (dst[0] & 1) {
        /* A group address (broadcast ARP, multicast ND): every other port
         * gets it, as a switch floods it. */
        for (auto &p : ports_) {
            if (p.get() == from) continue;
            if (to) {
                if (rte_mbuf *c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX)) send_to(from, to, c);
            }
            to = p.get();
        }
    } else {
        for (auto &p : ports_)
            if (p.get() != from && std::memcmp(p->mac_, dst, 6) == 0) to = p.get();
    }
    if (!to) {
        ++stats_.no_route;
        rte_pktmbuf_free(m);
        return;
    }
    send_to(from, to, m);
}

void memlink::send_to(memlink_port *from, memlink_port *to, rte_mbuf *m) {
    if (m->pkt_len > cfg_.max_frame_len) {
        ++stats_.too_big;
        rte_pktmbuf_free(m);
        return;
    }
    if (filter_ && !filter_(m, from)) {
        ++stats_.dropped;
        rte_pktmbuf_free(m);
        return;
    }
    /* the bottleneck first: its queue, ECN marks and drops, then its delay */
    uint64_t at = 0;
    if (to->bn_ && !to->bn_->admit(m, now_ns(), uniform(), &at)) {
        ++stats_.dropped;
        rte_pktmbuf_free(m);
        return;
    }
    /* fixed draw order: drop, corrupt, duplicate, delay, reorder */
    bool fault_draws = cfg_.drop > 0 || cfg_.corrupt > 0 || cfg_.duplicate > 0 || cfg_.delay > 0 ||
                       cfg_.reorder > 0;
    if (!fault_draws) {
        to->enqueue(m, at);
        return;
    }
    if (uniform() < cfg_.drop) {
        ++stats_.dropped;
        rte_pktmbuf_free(m);
        return;
    }
    if (uniform() < cfg_.corrupt && m->pkt_len > 14) {
        uint32_t off = 14 + uint32_t(next() % (m->pkt_len - 14));
        rte_mbuf *seg = m;
        while (off >= seg->data_len) {
            off -= seg->data_len;
            seg = seg->next;
        }
        rte_pktmbuf_mtod(seg, uint8_t *)[off] ^= uint8_t(1u << (next() & 7));
        ++stats_.corrupted;
    }
    rte_mbuf *dup = nullptr;
    if (uniform() < cfg_.duplicate) {
        dup = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
        if (dup) ++stats_.duplicated;
    }
    if (uniform() < cfg_.delay) {
        at = (at ? at : now_ns()) + cfg_.delay_ns;
        ++stats_.delayed;
    }
    bool hold = uniform() < cfg_.reorder;
    if (hold && !to->held_) {
        ++stats_.reordered;
        to->held_ = m;
    } else {
        to->enqueue(m, at);
        if (to->held_ && to->held_ != m) { /* the held frame goes after this one */
            rte_mbuf *h = to->held_;
            to->held_ = nullptr;
            to->enqueue(h, 0);
        }
    }
    if (dup) to->enqueue(dup, at);
}

} // namespace uroce

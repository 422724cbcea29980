/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/engine.h>

#include <uroce/clock.h>
#include "uroce_device.h"
#include <uroce/neigh.h>
#include <uroce/capture.h>

namespace uroce {

const char *frame_class_name(frame_class c) {
    switch (c) {
    case frame_class::roce:
        return "roce";
    case frame_class::neighbour:
        return "neighbour";
    case frame_class::runt:
        return "runt";
    case frame_class::not_ip:
        return "not-ip";
    case frame_class::not_udp:
        return "not-udp";
    case frame_class::other_udp:
        return "other-udp";
    case frame_class::count:
        break;
    }
    return "?";
}

engine::engine(netdev &out, pcap_writer *capture) : out_(out), capture_(capture) {}

uint64_t engine::now_ns() const {
    return dev_ ? dev_->now_ns() : default_clock()->now_ns();
}

void engine::rx_burst(rte_mbuf **pkts, uint16_t n) {
    if (n == 0) return;
    cnt_.rx_frames += n;
    rx_since_poll_ += n;
    if (capture_) capture_->write_burst(pkts, n);
    rte_mbuf *roce[burst], *nb[burst], *drop[burst];
    while (n > 0) {
        uint16_t chunk = n < burst ? n : burst;
        uint16_t n_roce = 0, n_nb = 0, n_drop = 0;
        for (uint16_t i = 0; i < chunk; i++) {
            frame_class c = classify_frame(pkts[i]);
            cnt_.rx_by_class[size_t(c)]++;
            if (c == frame_class::roce && dev_)
                roce[n_roce++] = pkts[i];
            else if (c == frame_class::neighbour && neigh_)
                nb[n_nb++] = pkts[i];
            else
                drop[n_drop++] = pkts[i];
        }
        if (n_roce) dev_->rx_burst(roce, n_roce);
        if (n_nb) {
            rte_mbuf *replies[burst];
            uint16_t n_replies = 0;
            neigh_->process_burst(nb, n_nb, replies, n_replies);
            uint16_t sent = tx_burst(replies, n_replies);
            if (sent < n_replies) {
                cnt_.tx_port_full += n_replies - sent;
                rte_pktmbuf_free_bulk(replies + sent, n_replies - sent);
            }
        }
        if (n_drop) rte_pktmbuf_free_bulk(drop, n_drop);
        pkts += chunk;
        n = uint16_t(n - chunk);
    }
}

unsigned engine::poll() {
    cnt_.polls++;
    /* One clock read per poll for the neighbours, the pollers and the
     * device: a read costs 30 ns in a KVM guest on AMD EPYC
     * (doc/performance.md), and a latency loop that spends its time
     * reading the clock notices a frame later. */
    const uint64_t now = now_ns();
    if (neigh_) {
        rte_mbuf *out[burst];
        uint16_t n_out = 0;
        neigh_->poll(now, out, n_out, burst);
        uint16_t sent = tx_burst(out, n_out);
        if (sent < n_out) {
            cnt_.tx_port_full += n_out - sent;
            rte_pktmbuf_free_bulk(out + sent, n_out - sent);
        }
    }
    for (unsigned i = 0; i < n_pollers_; i++)
        pollers_[i]->poll(now);
    if (dev_) dev_->poll(now);
    const unsigned sent = sent_since_poll_;
    if (sent == 0 && rx_since_poll_ == 0) cnt_.idle_polls++;
    sent_since_poll_ = rx_since_poll_ = 0;
    return sent;
}

/* Hold one more reference on every segment of a frame: the PMD may free the
 * chain segment by segment once it has sent it. */
static inline void hold_frame(rte_mbuf *m) {
    for (; m; m = m->next)
        rte_mbuf_refcnt_update(m, 1);
}

uint16_t engine::tx_burst(rte_mbuf **pkts, uint16_t n) {
    if (n == 0) return 0;
    /* Bytes are summed before the call: the frames the PMD takes are its own
     * after it (af_packet frees them at once); the refused ones stay ours. */
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < n; i++)
        bytes += pkts[i]->pkt_len;
    uint16_t sent;
    if (capture_) [[unlikely]] {
        /* The capture shows what the port took, once: frames it refuses go
         * back to the caller, which may offer them again or drop and count
         * them. The PMD owns (and may free or reuse) what it took, so keep a
         * reference across the call and write those frames after it. */
        for (uint16_t i = 0; i < n; i++)
            hold_frame(pkts[i]);
        sent = out_.tx_burst(pkts, n);
        capture_->write_burst(pkts, sent);
        for (uint16_t i = 0; i < n; i++)
            rte_pktmbuf_free(pkts[i]); /* our reference; refused frames stay the caller's */
    } else {
        sent = out_.tx_burst(pkts, n);
    }
    for (uint16_t i = sent; i < n; i++)
        bytes -= pkts[i]->pkt_len;
    cnt_.tx_frames += sent;
    cnt_.tx_bytes += bytes;
    sent_since_poll_ += sent;
    return sent;
}

} // namespace uroce

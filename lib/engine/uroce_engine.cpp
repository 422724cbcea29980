/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_engine.h"

#include "uroce_clock.h"
#include "uroce_device.h"
#include "uroce_neigh.h"
#include "uroce_pcap_writer.h"

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
    if (neigh_) {
        rte_mbuf *out[burst];
        uint16_t n_out = 0;
        neigh_->poll(now_ns(), out, n_out, burst);
        uint16_t sent = tx_burst(out, n_out);
        if (sent < n_out) {
            cnt_.tx_port_full += n_out - sent;
            rte_pktmbuf_free_bulk(out + sent, n_out - sent);
        }
    }
    if (dev_) dev_->poll();
    unsigned sent = unsigned(sent_since_poll_);
    sent_since_poll_ = 0;
    return sent;
}

uint16_t engine::tx_burst(rte_mbuf **pkts, uint16_t n) {
    if (n == 0) return 0;
    /* Capture before the PMD owns (and may free) the mbufs; frames the port
     * refuses are still captured once, as they were sent by the stack. */
    if (capture_) capture_->write_burst(pkts, n);
    uint16_t sent = out_.tx_burst(pkts, n);
    cnt_.tx_frames += sent;
    for (uint16_t i = 0; i < sent; i++)
        cnt_.tx_bytes += pkts[i]->pkt_len;
    sent_since_poll_ += sent;
    return sent;
}

} // namespace uroce

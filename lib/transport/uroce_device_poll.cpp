/* SPDX-License-Identifier: BSD-3-Clause
 * The device's hot path: TX batching and flush, the QP scheduler, and
 * poll(). Every packet the transport sends goes through here, on every
 * poll, so it is kept apart from the control path (uroce_device.cpp:
 * construction, object create/destroy, path resolution), which allocates,
 * searches tables and runs once per object. The receive side (rx_burst,
 * rx_one) is in uroce_recv.cpp, as rxe keeps it in rxe_recv.c.
 */
#include <cstring>

#include <rte_mbuf.h>

#include "uroce_device.h"

namespace uroce {

/* Hand the queued frames to the driver, oldest first. What it refuses
 * stays queued, in order, for the next flush (back-pressure: the scheduler
 * stops producing while the queue lacks room), and is counted as a stall. */
unsigned device::tx_flush() {
    /* A port that refused frames in this poll is not asked again before
     * the next (poll() clears tx_port_full_): with thousands of QPs behind
     * a full ring, the retries from the scheduler and the receive path,
     * each offering a batch and moving the queue, took a tenth of the
     * core. */
    if (!tx_n_ || tx_port_full_) return 0;
    for (unsigned i = tx_icrc_done_; i < tx_n_; ++i)
        if (tx_icrc_due_[i]) pkt_icrc_fill(tx_q_[i]);
    unsigned sent = 0;
    while (sent < tx_n_) {
        unsigned n = tx_n_ - sent < tx_batch ? tx_n_ - sent : tx_batch;
        unsigned k = cfg_.dev->tx_burst(tx_q_ + sent, uint16_t(n));
        sent += k;
        if (k == n) continue;
        /* a frame the port can never take (longer than its max frame
         * length, ethdev refuses it): dropped, not kept forever */
        if (tx_q_[sent]->pkt_len > max_frame_len_) {
            tx_drop(tx_q_[sent++]);
            continue;
        }
        break;
    }
    if (sent < tx_n_) {
        ++cnt_.tx_stalls;
        tx_port_full_ = true;
        std::memmove(tx_q_, tx_q_ + sent, (tx_n_ - sent) * sizeof(tx_q_[0]));
    }
    tx_n_ -= sent;
    tx_icrc_done_ = tx_n_;
    tx_next_flush_ = tx_n_ + tx_batch;
    return sent;
}

void device::tx_drop(rte_mbuf *m) {
    ++cnt_.tx_drops;
    rte_pktmbuf_free(m);
}

/* Give each scheduled QP one turn: responder output first (READ responses,
 * atomic ACKs, then the coalesced ACK), then requester packets, each up to
 * its burst; a QP with work left goes back on the list for the next round,
 * so one busy QP cannot starve the others. */
unsigned device::run_scheduled() {
    unsigned total = 0;
    if (round_left_ == 0) {
        if (sched_.empty()) return 0; /* an idle poll: a latency loop's most */
        /* a new round: the QPs scheduled since the last one began; those
         * scheduled from now on wait for the next */
        round_.swap(sched_);
        sched_.clear();
        round_left_ = round_.size();
    }
    while (round_left_) {
        if (tx_room() < tx_turn_max) {
            tx_flush(); /* nothing if the port refused in this poll */
            if (tx_room() < tx_turn_max) {
                /* the port is full: the rest wait for the next poll, in order */
                ++cnt_.tx_deferred_turns;
                break;
            }
        }
        qp *q = round_[--round_left_];
        /* With thousands of QPs each one's state is cold by its turn: the
         * QP three turns ahead starts loading now (qp_prefetch), the one
         * after, whose lines were asked for a turn ago, its first send WQEs,
         * and the next one the bytes its first WQE sends. */
        if (round_left_ >= 3) qp_prefetch(round_[round_left_ - 3]);
        if (round_left_ >= 2) qp_prefetch_turn_wqes(round_[round_left_ - 2]);
        if (round_left_ >= 1) qp_prefetch_turn_payload(round_[round_left_ - 1]);
        q->scheduled = false;
        const uint64_t waits = cnt_.tx_mbuf_waits;
        total += resp_process(q, resp_burst);
        total += req_process(q, req_burst);
        if (resp_has_work(q) || req_has_work(q)) schedule(q);
        if (cnt_.tx_mbuf_waits != waits) [[unlikely]] {
            /* the pool is empty: the QPs after this one would each fail to
             * allocate too (thousands of them with thousands of QPs). They
             * wait for the next poll, in order, ahead of this one. */
            break;
        }
    }
    if (round_left_ == 0) round_.clear();
    return total;
}

/* Timers first (a retransmit or RNR timer schedules its QP), then what the
 * port refused last time, then the QPs, then whatever is left queued. */
unsigned device::poll(uint64_t now) {
    tx_port_full_ = false; /* the port may have room again */
    timers_.advance(now);
    unsigned n = tx_n_ ? tx_flush() : 0; /* what the port refused last time goes first */
    n += run_scheduled();
    return n + tx_flush();
}

} // namespace uroce

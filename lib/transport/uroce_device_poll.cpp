/* SPDX-License-Identifier: BSD-3-Clause
 * The device's hot path: TX batching and flush, the QP scheduler, and
 * poll(). Every packet the transport sends goes through here, on every
 * poll, so it is kept apart from the control path (uroce_device.cpp:
 * construction, object create/destroy, path resolution), which allocates,
 * searches tables and runs once per object. The receive side (rx_burst,
 * rx_one) is in uroce_recv.cpp, as rxe keeps it in rxe_recv.c.
 */
#include <rte_mbuf.h>

#include "uroce_device.h"

namespace uroce {

/* Hand the batched frames to the driver; what it still refuses after one
 * retry is freed and counted (tx_drops), and the transport recovers by
 * retransmission like after any loss. */
void device::tx_flush() {
    if (!tx_n_) return;
    unsigned sent = 0;
    /* one retry for a driver that takes part of the burst */
    for (int tries = 0; tries < 2 && sent < tx_n_; ++tries)
        sent += cfg_.dev->tx_burst(tx_buf_ + sent, uint16_t(tx_n_ - sent));
    if (sent < tx_n_) {
        cnt_.tx_drops += tx_n_ - sent;
        rte_pktmbuf_free_bulk(tx_buf_ + sent, tx_n_ - sent);
    }
    tx_n_ = 0;
}

/* Give each scheduled QP one turn: responder output first (READ responses,
 * atomic ACKs, then the coalesced ACK), then requester packets, each up to
 * its burst; a QP with work left goes back on the list for the next round,
 * so one busy QP cannot starve the others. */
unsigned device::run_scheduled() {
    unsigned total = 0;
    qp *list = sched_head_;
    sched_head_ = nullptr;
    while (list) {
        qp *q = list;
        list = q->sched_next;
        q->scheduled = false;
        q->sched_next = nullptr;
        total += resp_process(q, resp_burst);
        total += req_process(q, req_burst);
        if (resp_has_work(q) || req_has_work(q)) schedule(q);
    }
    return total;
}

/* Timers first (a retransmit or RNR timer schedules its QP), then the QPs,
 * then whatever is left in the TX batch. */
unsigned device::poll() {
    timers_.advance(clock_->now_ns());
    unsigned n = run_scheduled();
    tx_flush();
    return n;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Asynchronous events (ibv_get_async_event's; verbs.h get_async_event): the
 * device's bounded queue, and the transport's few reasons to fill it. Every
 * caller is on an error or control path (an SRQ falling below its limit, a
 * CQ overflowing, a QP going to ERR), never on a packet's ordinary way.
 */
#include "uroce_device.h"

namespace uroce {

void device::raise_event(const async_event &e) {
    if (ev_count_ == async_event_queue_cap) {
        ++cnt_.async_event_overflows;
        return;
    }
    events_[(ev_head_ + ev_count_) % async_event_queue_cap] = e;
    ++ev_count_;
}

bool device::next_event(async_event *out) {
    if (!ev_count_) return false;
    *out = events_[ev_head_];
    ev_head_ = (ev_head_ + 1) % async_event_queue_cap;
    --ev_count_;
    return true;
}

/* Compact the queue in place, the survivors kept in order (as the kernel
 * drops a destroyed object's unread events, ib_uverbs_release_uevent). */
void device::drop_events_of(const void *obj) {
    unsigned kept = 0;
    for (unsigned i = 0; i < ev_count_; ++i) {
        const async_event &e = events_[(ev_head_ + i) % async_event_queue_cap];
        if (e.qp == obj || e.srq == obj || e.cq == obj) continue;
        events_[(ev_head_ + kept++) % async_event_queue_cap] = e;
    }
    ev_count_ = kept;
}

/* rxe_resp.c get_srq_wqe: the count after the WQE was taken is below the
 * limit; the event fires once and the limit goes back to 0 (IBTA 10.2.9.5:
 * the SRQ is disarmed until modify_srq arms it again). */
void srq_limit_reached(srq *s) {
    s->rq.set_limit(0);
    async_event e;
    e.type = event_type::srq_limit_reached;
    e.srq = s;
    s->dev->raise_event(e);
}

void cq_overflowed(cq *c) {
    async_event e;
    e.type = event_type::cq_err;
    e.cq = c;
    c->dev->raise_event(e);
}

void qp_raise_event(qp *q, event_type t) {
    async_event e;
    e.type = t;
    e.qp = q;
    q->dev->raise_event(e);
}

} // namespace uroce

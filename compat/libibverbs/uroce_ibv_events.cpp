/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: completion channels and async events, with real file
 * descriptors an application can poll(2): an eventfd in semaphore mode
 * per channel (and per context for async events), one count per event,
 * and the events themselves in a queue next to it. The stack's loop
 * (runtime::drive_locked) signals an armed CQ once it holds a completion,
 * and queues the device's asynchronous events (SRQ limit, QP errors) next
 * to the port's.
 */
#include <cerrno>
#include <cstring>
#include <new>
#include <sys/eventfd.h>
#include <unistd.h>

#include "uroce_ibv_ops.h"
#include "uroce_ibv_runtime.h"

using namespace uroce;
using namespace uroce::compat;

namespace uroce::compat {

int op_req_notify_cq(ibv_cq *cq, int solicited_only) {
    (void)solicited_only; /* any completion signals: a superset of solicited ones */
    compat_cq *c = to_cq(cq);
    if (!c->chan) return 0; /* no channel: nowhere to signal, as with a provider */
    if (!c->armed.exchange(true)) to_ctx(cq->context)->rt->note_armed();
    return 0;
}

} // namespace uroce::compat

extern "C" {

ibv_comp_channel *ibv_create_comp_channel(ibv_context *context) {
    auto *ch = new (std::nothrow) compat_comp_channel();
    if (!ch) {
        errno = ENOMEM;
        return nullptr;
    }
    ch->ch.context = context;
    ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    ch->ch.refcnt = 0;
    if (ch->ch.fd < 0) {
        const int e = errno;
        delete ch;
        errno = e;
        return nullptr;
    }
    return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel *channel) {
    auto *ch = reinterpret_cast<compat_comp_channel *>(channel);
    if (ch->refcnt.load()) {
        errno = EBUSY;
        return EBUSY;
    }
    close(ch->ch.fd);
    delete ch;
    return 0;
}

int ibv_get_cq_event(ibv_comp_channel *channel, ibv_cq **cq, void **cq_context) {
    auto *ch = reinterpret_cast<compat_comp_channel *>(channel);
    uint64_t one;
    /* Blocks unless the application made the fd non-blocking (then EAGAIN). */
    if (read(ch->ch.fd, &one, sizeof(one)) != sizeof(one)) return -1;
    std::lock_guard<std::mutex> lock(ch->mu);
    if (ch->events.empty()) { /* the CQ was destroyed meanwhile */
        errno = EAGAIN;
        return -1;
    }
    compat_cq *c = ch->events.front();
    ch->events.pop_front();
    /* counted before ch->mu goes: ibv_destroy_cq takes the CQ's events off
     * the channel under it, then waits for the acks of those counted */
    pthread_mutex_lock(&c->cq.mutex);
    ++c->comp_events_reported;
    pthread_mutex_unlock(&c->cq.mutex);
    *cq = &c->cq;
    *cq_context = c->cq.cq_context;
    return 0;
}

void ibv_ack_cq_events(ibv_cq *cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/* One more event about its object handed out (the kernel's events_reported). */
static void count_reported(const ibv_async_event &e) {
    pthread_mutex_t *mu = nullptr;
    uint32_t *reported = nullptr;
    switch (e.event_type) {
    case IBV_EVENT_CQ_ERR:
        mu = &e.element.cq->mutex;
        reported = &to_cq(e.element.cq)->async_events_reported;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        mu = &e.element.qp->mutex;
        reported = &to_qp(e.element.qp)->events_reported;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        mu = &e.element.srq->mutex;
        reported = &to_srq(e.element.srq)->events_reported;
        break;
    default: /* port and device events: nothing waits for them */
        return;
    }
    pthread_mutex_lock(mu);
    ++*reported;
    pthread_mutex_unlock(mu);
}

int ibv_get_async_event(ibv_context *context, ibv_async_event *event) {
    compat_context *c = to_ctx(context);
    uint64_t one;
    if (read(c->async_fd, &one, sizeof(one)) != sizeof(one)) return -1;
    std::lock_guard<std::mutex> lock(c->async_mu);
    if (c->async_events.empty()) {
        errno = EAGAIN;
        return -1;
    }
    *event = c->async_events.front();
    c->async_events.pop_front();
    /* counted before async_mu goes: a destroy drops the object's queued
     * events under it (forget_event_obj_locked), then waits for the acks
     * of those counted */
    count_reported(*event);
    return 0;
}

/* As rdma-core: one more of the object's events acknowledged (its
 * events_completed). Destroying the object drops its unread events
 * (runtime::forget_event_obj_locked) and waits for the acks of those
 * handed out (wait_events_acked). */
void ibv_ack_async_event(ibv_async_event *event) {
    pthread_mutex_t *mu = nullptr;
    pthread_cond_t *cond = nullptr;
    uint32_t *done = nullptr;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        mu = &event->element.cq->mutex;
        cond = &event->element.cq->cond;
        done = &event->element.cq->async_events_completed;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        mu = &event->element.qp->mutex;
        cond = &event->element.qp->cond;
        done = &event->element.qp->events_completed;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        mu = &event->element.srq->mutex;
        cond = &event->element.srq->cond;
        done = &event->element.srq->events_completed;
        break;
    default: /* port and device events: nothing waits for them */
        return;
    }
    pthread_mutex_lock(mu);
    ++*done;
    pthread_cond_signal(cond);
    pthread_mutex_unlock(mu);
}

} // extern "C"

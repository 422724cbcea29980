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

#include "uroce_compat_wait.h"
#include "uroce_ibv_ops.h"
#include "uroce_ibv_runtime.h"

using namespace uroce;
using namespace uroce::compat;

namespace uroce::compat {

int op_req_notify_cq(ibv_cq *cq, int solicited_only) {
    (void)solicited_only; /* any completion signals: a superset of solicited ones */
    compat_cq *c = to_cq(cq);
    if (!c->chan) return 0; /* no channel: nowhere to signal, as with a provider */
    runtime &rt = *to_ctx(cq->context)->rt;
    /* The next completion signals, not one already there (ibv_req_notify_cq(3),
     * rxe_req_notify_cq). armed_at is read by the loop after it sees armed
     * (release / acquire); in inline mode the count needs the lock. */
    if (c->armed.load(std::memory_order_relaxed)) return 0;
    {
        std::unique_lock<runtime> lock(rt, std::defer_lock);
        if (rt.mode() != progress_mode::thread) lock.lock();
        c->armed_at = rt.produced_locked(c);
    }
    if (!c->armed.exchange(true, std::memory_order_release)) rt.note_armed();
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
    /* inline mode: the application stops driving now; the fallback thread,
     * which looks seldom while the application drives, looks at once. */
    to_ctx(channel->context)->rt->kick_fallback();
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

/* What an event about an object counts on it: rdma-core's acknowledged
 * count and lock, and ours of those handed out (the kernel's
 * events_reported). Port and device events name no object: nothing waits
 * for them. */
struct event_counts {
    pthread_mutex_t *mu;
    pthread_cond_t *cond;
    uint32_t *completed;
    uint32_t *reported;
};

static bool counts_of(const ibv_async_event &e, event_counts &c) {
    switch (e.event_type) {
    case IBV_EVENT_CQ_ERR: {
        ibv_cq *cq = e.element.cq;
        c = {&cq->mutex, &cq->cond, &cq->async_events_completed, &to_cq(cq)->async_events_reported};
        return true;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        ibv_qp *qp = e.element.qp;
        c = {&qp->mutex, &qp->cond, &qp->events_completed, &to_qp(qp)->events_reported};
        return true;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        ibv_srq *srq = e.element.srq;
        c = {&srq->mutex, &srq->cond, &srq->events_completed, &to_srq(srq)->events_reported};
        return true;
    }
    default:
        return false;
    }
}

int ibv_get_async_event(ibv_context *context, ibv_async_event *event) {
    compat_context *c = to_ctx(context);
    /* The count is taken with the event, under async_mu (queue_async): an
     * event dropped with its object (forget_event_obj_locked) takes its
     * count along, so a blocked caller keeps waiting for a real one. */
    std::unique_lock<std::mutex> lock(c->async_mu);
    while (c->async_events.empty()) {
        lock.unlock();
        /* a signal ends the wait with EINTR, as it would end libibverbs'
         * read(2) of the kernel's fd */
        if (wait_readable(c->async_fd) < 0) return -1;
        lock.lock();
    }
    uint64_t one;
    [[maybe_unused]] const ssize_t r =
        read(c->async_fd, &one, sizeof(one)); /* >= 1: never blocks */
    *event = c->async_events.front();
    c->async_events.pop_front();
    /* counted before async_mu goes: a destroy drops the object's queued
     * events under it (forget_event_obj_locked), then waits for the acks
     * of those counted */
    event_counts n;
    if (counts_of(*event, n)) {
        pthread_mutex_lock(n.mu);
        ++*n.reported;
        pthread_mutex_unlock(n.mu);
    }
    return 0;
}

/* As rdma-core: one more of the object's events acknowledged (its
 * events_completed). Destroying the object drops its unread events
 * (runtime::forget_event_obj_locked) and waits for the acks of those
 * handed out (wait_events_acked). */
void ibv_ack_async_event(ibv_async_event *event) {
    event_counts n;
    if (!counts_of(*event, n)) return;
    pthread_mutex_lock(n.mu);
    ++*n.completed;
    pthread_cond_signal(n.cond);
    pthread_mutex_unlock(n.mu);
}

} // extern "C"

/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: completion channels and async events, with real file
 * descriptors an application can poll(2): an eventfd in semaphore mode
 * per channel (and per context for async events), one count per event,
 * and the events themselves in a queue next to it. The stack's loop
 * (runtime::drive_locked) signals an armed CQ once it holds a completion.
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
    return 0;
}

void ibv_ack_async_event(ibv_async_event *) {
    /* Port events only (no object waits for its events to be acked). */
}

} // extern "C"

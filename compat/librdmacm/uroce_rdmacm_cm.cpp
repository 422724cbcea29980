/* SPDX-License-Identifier: BSD-3-Clause
 * compat/librdmacm: event channels, ids, the connection calls, QPs and
 * events of librdmacm on <uroce/cm.h>.
 */
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "../libibverbs/uroce_compat_wait.h"
#include "../libibverbs/uroce_ibv_rdmacm.h"
#include "uroce_rdmacm.h"

using namespace uroce::compat::rdmacm;
using uroce::verbs_error;

namespace {

std::mutex open_mu;                /* the first open */
ibv_context *g_ctx = nullptr;      /* every id's verbs; kept until exit */
uroce::cm_service *g_cm = nullptr; /* closed by the stack's stop hook */
std::mutex ids_mu;                 /* the maps, from any thread */
std::condition_variable ids_acked; /* an id's events_out fell to 0 (ids_mu) */
std::unordered_map<const uroce::cm_id *, id *> ids;
/* The handles the application holds, so that a destroyed or never-made
 * one is refused (EINVAL) before it is dereferenced. Debian 12's perftest
 * (4.5-0.17) retries a rejected rdma_cm connection on the ids, channel and
 * node array it has just destroyed and freed (fixed upstream in perftest
 * 3d9d8d0); librdmacm would read freed memory there, we say no. */
std::unordered_set<const rdma_cm_id *> live_ids;
std::unordered_set<const rdma_event_channel *> live_channels;
/* The last channels destroyed, and by which thread: another thread's
 * rdma_get_cm_event that comes just after the destroy raced with it, and
 * waits as one a moment earlier would (below). A few suffice: the race is
 * a window of microseconds. */
struct destroyed_channel {
    const rdma_event_channel *handle;
    std::thread::id by;
};
std::deque<destroyed_channel> destroyed_channels;
constexpr size_t destroyed_channels_kept = 16;

void close_cm_at_stop(void *) {
    /* The stack stops (the last ibv_close_device, or exit), lock held. */
    if (g_cm && uroce::close_cm(g_cm) == verbs_error::ok) g_cm = nullptr;
    /* Channels still open (an application that exits without destroying
     * them): the CM goes with the engine; nothing calls it after this. */
    g_cm = nullptr;
}

void destroy_ids_at_leave(void *) {
    /* The stack stops (exit, or the last ibv_close_device), lock held,
     * before its linger. The kernel destroys a process's ids when its
     * rdma_cm file closes, so an established connection the application
     * never disconnected gets a DREQ (cm.c cm_destroy_id): perftest's
     * atomic_lat server -R exits so, and its client waits for that
     * DISCONNECTED. The wrappers stay allocated (the process is leaving)
     * but are no longer live handles. */
    std::lock_guard<std::mutex> lock(ids_mu);
    for (auto &[u, w] : ids) {
        uroce::destroy_id(const_cast<uroce::cm_id *>(u));
        live_ids.erase(&w->id);
    }
    ids.clear();
}

void release_qp(uroce::qp *q) {
    /* ibv_destroy_qp of an rdma_create_qp QP, lock held. */
    std::lock_guard<std::mutex> lock(ids_mu);
    for (auto &[u, w] : ids)
        if (u->qp == q) const_cast<uroce::cm_id *>(u)->qp = nullptr;
}

id *wrapper_of_locked(const uroce::cm_id *u) {
    auto it = ids.find(u);
    return it == ids.end() ? nullptr : it->second;
}

void copy_route(id *w) {
    /* The lock held: the CM updates the route on its thread. */
    const uroce::cm_route &r = w->uid->route;
    std::memcpy(&w->id.route.addr.src_storage, &r.src_addr, sizeof(sockaddr_storage));
    std::memcpy(&w->id.route.addr.dst_storage, &r.dst_addr, sizeof(sockaddr_storage));
    w->id.route.num_paths = r.num_paths;
    w->id.port_num = 1;
}

id *new_wrapper_locked(uroce::cm_id *u, channel *ch, void *context, rdma_port_space ps) {
    auto *w = new (std::nothrow) id();
    if (!w) return nullptr;
    std::memset(&w->id, 0, sizeof(w->id));
    w->uid = u;
    w->chan = ch;
    w->id.verbs = g_ctx;
    w->id.channel = &ch->ch;
    w->id.context = context;
    w->id.ps = ps;
    w->id.port_num = 1;
    w->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
    ids[u] = w;
    live_ids.insert(&w->id);
    return w;
}

id *new_wrapper(uroce::cm_id *u, channel *ch, void *context, rdma_port_space ps) {
    std::lock_guard<std::mutex> lock(ids_mu);
    return new_wrapper_locked(u, ch, context, ps);
}

struct event_wrappers {
    id *named = nullptr;    /* the event's id */
    id *counted = nullptr;  /* the id it holds until acknowledged (or none) */
    id *listener = nullptr; /* its listen_id, also held */
};

/* The wrappers an event names, found (a CONNECT_REQUEST's new id: made)
 * and counted as holding an event until rdma_ack_cm_event, in one step
 * under ids_mu, so that a concurrent rdma_destroy_id either comes first
 * (the event is dropped) or waits for the acknowledgement, as librdmacm's
 * does (events_completed). Stack lock held: routes are the CM thread's.
 * false: the event names an id the application has destroyed. lib/cm's
 * destroy_id takes such events off the queue; this one was taken by a
 * waiting thread just before. */
bool claim_wrappers(const uroce::cm_event *u, channel *ch, event_wrappers *out) {
    std::lock_guard<std::mutex> lock(ids_mu);
    id *l = u->listen_id ? wrapper_of_locked(u->listen_id) : nullptr;
    id *w = u->id ? wrapper_of_locked(u->id) : nullptr;
    if (u->listen_id && !l) return false;
    if (u->id && !w) {
        if (u->event != uroce::cm_event_type::connect_request) return false;
        /* The listener's channel and context, as librdmacm's new id. */
        w = new_wrapper_locked(u->id, l ? l->chan : ch, l ? l->id.context : nullptr,
                               l ? l->id.ps : RDMA_PS_TCP);
        if (!w) return false;
    }
    if (w) copy_route(w);
    /* librdmacm counts a CONNECT_REQUEST against its listener only: the
     * new id may be rejected and destroyed before the event is acked. */
    id *c = u->event == uroce::cm_event_type::connect_request ? nullptr : w;
    if (c) c->events_out++;
    if (l) l->events_out++;
    *out = {w, c, l};
    return true;
}

void unclaim(id *w) {
    if (w && --w->events_out == 0) ids_acked.notify_all();
}

/* An event that names a destroyed id, taken off the queue: acknowledged
 * unseen. A connection request whose listener is gone dies as the ones
 * lib/cm's destroy_id took off the queue: refused, its new id destroyed. */
void drop_event(uroce::cm_event *u) {
    if (u->event == uroce::cm_event_type::connect_request && u->id) {
        uroce::reject(u->id, nullptr, 0);
        uroce::destroy_id(u->id);
    }
    uroce::ack_event(u);
}

void stale(const char *call, const char *what) {
    std::fprintf(stderr, "uroce: librdmacm: %s: not a live %s (destroyed, or never created)\n",
                 call, what);
    errno = EINVAL;
}

uroce::cm_conn_param to_uroce(const rdma_conn_param *p) {
    uroce::cm_conn_param u;
    if (!p) return u;
    u.private_data = p->private_data;
    u.private_data_len = p->private_data_len;
    u.responder_resources = p->responder_resources;
    u.initiator_depth = p->initiator_depth;
    u.flow_control = p->flow_control;
    u.retry_count = p->retry_count;
    u.rnr_retry_count = p->rnr_retry_count;
    u.srq = p->srq;
    u.qp_num = p->qp_num;
    return u;
}

uroce::qp *make_cm_qp(uroce::pd *pd, uroce::qp_init_attr *attr, void *arg, verbs_error *err) {
    auto *u = static_cast<uroce::cm_id *>(arg);
    const verbs_error e = uroce::create_qp(u, pd, attr);
    if (e != verbs_error::ok) {
        *err = e;
        return nullptr;
    }
    return u->qp;
}

} // namespace

namespace uroce::compat::rdmacm {

ibv_context *context() {
    std::lock_guard<std::mutex> lock(open_mu);
    if (g_ctx) return g_ctx;
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list) return nullptr; /* reported by libibverbs, errno set */
    ibv_context *c = n > 0 ? ibv_open_device(list[0]) : nullptr;
    ibv_free_device_list(list);
    if (!c && n <= 0) errno = ENODEV;
    g_ctx = c;
    return g_ctx;
}

uroce::cm_service *cm() {
    ibv_context *c = context();
    if (!c) return nullptr;
    std::lock_guard<std::mutex> lock(open_mu);
    if (g_cm) return g_cm;
    rdmacm_lock(c);
    verbs_error e = verbs_error::ok;
    g_cm = uroce::open_cm(*rdmacm_engine(c), {}, &e);
    if (g_cm) {
        rdmacm_add_leave_hook(c, destroy_ids_at_leave, nullptr);
        rdmacm_set_qp_release_hook(c, release_qp);
        rdmacm_add_stop_hook(c, close_cm_at_stop, nullptr);
    }
    rdmacm_unlock(c);
    if (!g_cm) {
        std::fprintf(stderr, "uroce: librdmacm: cannot open the CM on uroce0: error %d\n", int(e));
        errno = int(e) ? int(e) : ENODEV;
    }
    return g_cm;
}

guard::guard() {
    rdmacm_lock(g_ctx);
}
guard::~guard() {
    rdmacm_unlock(g_ctx);
}

id *live_id(rdma_cm_id *i, const char *call) {
    {
        std::lock_guard<std::mutex> lock(ids_mu);
        if (i && live_ids.count(i)) return reinterpret_cast<id *>(i);
    }
    stale(call, "rdma_cm_id");
    return nullptr;
}

/* c was destroyed by another thread (ids_mu held). */
bool destroyed_by_another_thread(const rdma_event_channel *c) {
    for (const destroyed_channel &d : destroyed_channels)
        if (d.handle == c) return d.by != std::this_thread::get_id();
    return false;
}

channel *live_channel(rdma_event_channel *c, const char *call, bool *raced) {
    {
        std::lock_guard<std::mutex> lock(ids_mu);
        if (c && live_channels.count(c)) return reinterpret_cast<channel *>(c);
        if (raced && destroyed_by_another_thread(c)) {
            *raced = true;
            return nullptr;
        }
    }
    stale(call, "rdma_event_channel");
    return nullptr;
}

/* What a thread blocked on a channel the application destroyed does:
 * nothing, until the process ends (the kernel-backed library's read(2) of
 * the closed fd never returns either). */
[[noreturn]] int block_forever() {
    for (;;)
        pause();
}

int fail(verbs_error e) {
    if (e == verbs_error::ok) return 0;
    errno = int(e);
    return -1;
}

int unsupported(const char *what, int e) {
    std::fprintf(stderr, "uroce: librdmacm: %s is not supported\n", what);
    errno = e;
    return -1;
}

} // namespace uroce::compat::rdmacm

extern "C" {

rdma_event_channel *rdma_create_event_channel(void) {
    uroce::cm_service *s = cm();
    if (!s) return nullptr;
    auto *ch = new (std::nothrow) channel();
    if (!ch) {
        errno = ENOMEM;
        return nullptr;
    }
    verbs_error e = verbs_error::ok;
    {
        guard g;
        ch->uch = uroce::create_event_channel(s, &e);
    }
    if (!ch->uch) {
        delete ch;
        fail(e);
        return nullptr;
    }
    ch->ch.fd = uroce::event_channel_fd(ch->uch);
    /* librdmacm's fd blocks until the application sets O_NONBLOCK; the
     * CM's is non-blocking. Its own read happens only with an event
     * queued, so it never blocks either way. */
    const int fl = fcntl(ch->ch.fd, F_GETFL);
    if (fl >= 0) fcntl(ch->ch.fd, F_SETFL, fl & ~O_NONBLOCK);
    std::lock_guard<std::mutex> lock(ids_mu);
    live_channels.insert(&ch->ch);
    /* the address may be a destroyed channel's: this one is live */
    std::erase_if(destroyed_channels,
                  [&](const destroyed_channel &d) { return d.handle == &ch->ch; });
    return &ch->ch;
}

void rdma_destroy_event_channel(rdma_event_channel *channel_) {
    channel *ch = live_channel(channel_, __func__);
    if (!ch) return;
    {
        /* The CM's channel is freed and leaves the live set in one step
         * under ids_mu: a thread in rdma_get_cm_event reads it only while
         * it finds it live, with ids_mu held. Freed first and unlisted
         * after, the waiter could read it in between (ASan, compat_verbs
         * id_destroyed_under_its_event, one run in thirty on 2 cores).
         * Lock order as everywhere: the stack's lock, then ids_mu. */
        guard g;
        std::lock_guard<std::mutex> lock(ids_mu);
        /* busy: ids or unacked events left (librdmacm's precondition
         * broken); the channel stays, as the kernel's would until they go. */
        if (uroce::destroy_event_channel(ch->uch) != verbs_error::ok) return;
        live_channels.erase(&ch->ch);
        destroyed_channels.push_back({&ch->ch, std::this_thread::get_id()});
        if (destroyed_channels.size() > destroyed_channels_kept) destroyed_channels.pop_front();
    }
    delete ch;
}

int rdma_create_id(rdma_event_channel *channel_, rdma_cm_id **out, void *context_,
                   rdma_port_space ps) {
    if (!channel_)
        return unsupported("rdma_create_id without an event channel (synchronous ids)", EINVAL);
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB) {
        errno = EINVAL;
        return -1;
    }
    channel *ch = live_channel(channel_, __func__);
    if (!ch) return -1;
    uroce::cm_id *u = nullptr;
    verbs_error e;
    {
        guard g;
        e = uroce::create_id(ch->uch, &u, nullptr, uroce::rdma_port_space(ps));
    }
    if (e != verbs_error::ok) return fail(e);
    id *w = new_wrapper(u, ch, context_, ps);
    if (!w) {
        guard g;
        uroce::destroy_id(u);
        errno = ENOMEM;
        return -1;
    }
    *out = &w->id;
    return 0;
}

int rdma_destroy_id(rdma_cm_id *i) {
    id *w = nullptr;
    {
        /* Out of the maps first: an event for it that a thread takes from
         * now on is dropped (claim_wrappers). */
        std::lock_guard<std::mutex> lock(ids_mu);
        if (i && live_ids.erase(i)) {
            w = reinterpret_cast<id *>(i);
            ids.erase(w->uid);
        }
    }
    if (!w) {
        stale(__func__, "rdma_cm_id");
        return -1;
    }
    verbs_error e;
    {
        guard g;
        e = uroce::destroy_id(w->uid);
    }
    /* librdmacm's rdma_destroy_id waits until every event reported about
     * the id has been acknowledged (ucma_destroy_kern_id's events_reported):
     * the thread that holds one may still read the id and its context. */
    std::unique_lock<std::mutex> lock(ids_mu);
    ids_acked.wait(lock, [w] { return w->events_out == 0; });
    lock.unlock();
    delete w;
    return fail(e);
}

int rdma_bind_addr(rdma_cm_id *i, sockaddr *addr) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    const verbs_error e = uroce::bind_addr(w->uid, addr);
    copy_route(w);
    return fail(e);
}

int rdma_resolve_addr(rdma_cm_id *i, sockaddr *src, sockaddr *dst, int timeout_ms) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    const verbs_error e = uroce::resolve_addr(w->uid, src, dst, timeout_ms);
    copy_route(w);
    return fail(e);
}

int rdma_resolve_route(rdma_cm_id *i, int timeout_ms) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    const verbs_error e = uroce::resolve_route(w->uid, timeout_ms);
    copy_route(w);
    return fail(e);
}

/* The CQs and completion channels rdma_create_qp made for the id, which
 * are the only ones it records there (librdmacm's ucma_destroy_cqs): an
 * application's own CQs stay its own. */
static void destroy_own_cqs(rdma_cm_id *i) {
    if (i->send_cq) ibv_destroy_cq(i->send_cq);
    if (i->recv_cq && i->recv_cq != i->send_cq) ibv_destroy_cq(i->recv_cq);
    if (i->send_cq_channel) ibv_destroy_comp_channel(i->send_cq_channel);
    if (i->recv_cq_channel && i->recv_cq_channel != i->send_cq_channel)
        ibv_destroy_comp_channel(i->recv_cq_channel);
    i->send_cq = i->recv_cq = nullptr;
    i->send_cq_channel = i->recv_cq_channel = nullptr;
}

int rdma_create_qp(rdma_cm_id *i, ibv_pd *pd, ibv_qp_init_attr *attr) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    if (!attr || i->qp) {
        errno = EINVAL;
        return -1;
    }
    if (!pd) {
        /* librdmacm: the id's PD, or one of its own for the device. */
        if (!i->pd) {
            i->pd = ibv_alloc_pd(i->verbs);
            if (!i->pd) return -1;
            w->own_pd = true;
        }
        pd = i->pd;
    }
    /* librdmacm makes the missing CQs, each with a completion channel, and
     * records those (and only those) in the id; a failure below undoes
     * them, as librdmacm's rdma_create_qp_ex does. */
    auto make_cq = [i](uint32_t depth, ibv_comp_channel *&channel, ibv_cq *&cq) {
        channel = ibv_create_comp_channel(i->verbs);
        cq = channel ? ibv_create_cq(i->verbs, int(std::max(depth, 1u)), i, channel, 0) : nullptr;
        return cq != nullptr;
    };
    ibv_qp_init_attr a = *attr;
    ibv_qp *qp = nullptr;
    if ((a.send_cq || i->send_cq || make_cq(a.cap.max_send_wr, i->send_cq_channel, i->send_cq)) &&
        (a.recv_cq || i->recv_cq || make_cq(a.cap.max_recv_wr, i->recv_cq_channel, i->recv_cq))) {
        if (!a.send_cq) a.send_cq = i->send_cq;
        if (!a.recv_cq) a.recv_cq = i->recv_cq;
        a.qp_type = i->qp_type;
        qp = uroce::compat::rdmacm_create_qp(pd, &a, make_cm_qp, w->uid);
    }
    if (!qp) {
        const int saved = errno;
        destroy_own_cqs(i);
        errno = saved;
        return -1;
    }
    attr->cap = a.cap;
    i->qp = qp;
    i->pd = pd;
    i->srq = a.srq;
    return 0;
}

int rdma_create_qp_ex(rdma_cm_id *i, ibv_qp_init_attr_ex *attr) {
    const uint32_t known = IBV_QP_INIT_ATTR_PD;
    if (attr->comp_mask & ~known) return unsupported("rdma_create_qp_ex beyond a PD", ENOSYS);
    ibv_qp_init_attr a{};
    a.qp_context = attr->qp_context;
    a.send_cq = attr->send_cq;
    a.recv_cq = attr->recv_cq;
    a.srq = attr->srq;
    a.cap = attr->cap;
    a.qp_type = attr->qp_type;
    a.sq_sig_all = attr->sq_sig_all;
    const int r =
        rdma_create_qp(i, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : nullptr, &a);
    if (r == 0) attr->cap = a.cap;
    return r;
}

void rdma_destroy_qp(rdma_cm_id *i) {
    id *w = live_id(i, __func__);
    if (!w) return;
    if (!i->qp) return;
    {
        guard g;
        w->uid->qp = nullptr; /* the CM moves it no more; destroyed below */
    }
    ibv_destroy_qp(i->qp);
    i->qp = nullptr;
    destroy_own_cqs(i);
    if (w->own_pd) {
        ibv_dealloc_pd(i->pd);
        i->pd = nullptr;
        w->own_pd = false;
    }
}

int rdma_connect(rdma_cm_id *i, rdma_conn_param *param) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    const uroce::cm_conn_param p = to_uroce(param);
    guard g;
    return fail(uroce::connect(w->uid, &p));
}

int rdma_listen(rdma_cm_id *i, int backlog) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    const verbs_error e = uroce::listen(w->uid, backlog);
    copy_route(w);
    return fail(e);
}

int rdma_accept(rdma_cm_id *i, rdma_conn_param *param) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    uroce::cm_conn_param p = to_uroce(param);
    if (!param) { /* librdmacm's defaults for a NULL param */
        p.responder_resources = 16;
        p.initiator_depth = 16;
    }
    guard g;
    return fail(uroce::accept(w->uid, &p));
}

int rdma_reject(rdma_cm_id *i, const void *private_data, uint8_t private_data_len) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    return fail(uroce::reject(w->uid, private_data, private_data_len));
}

int rdma_disconnect(rdma_cm_id *i) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    guard g;
    return fail(uroce::disconnect(w->uid));
}

int rdma_get_cm_event(rdma_event_channel *channel_, rdma_cm_event **out) {
    /* Another thread destroyed the channel a moment ago: this call raced
     * with the destroy, and waits as it would have, had it come first
     * (below). rping's CM thread acknowledges the DISCONNECTED that ends
     * the run and comes back here while its main thread tears down and
     * destroys the channel; an error made it exit(), and that exit ran the
     * library's teardown under the main thread (SIGSEGV, about one
     * compat_rping run in forty). The thread that destroyed it, or a
     * handle never made, still gets EINVAL. */
    bool raced = false;
    channel *ch = live_channel(channel_, __func__, &raced);
    if (raced) return block_forever();
    if (!ch) return -1;
    uroce::cm_event *u = nullptr;
    event_wrappers held;
    for (;;) {
        if (u) {
            bool claimed;
            {
                guard g;
                claimed = claim_wrappers(u, ch, &held);
                if (!claimed) drop_event(u);
            }
            if (claimed) break;
            u = nullptr;
        }
        verbs_error e = verbs_error::ok;
        int fd = -1;
        bool live;
        {
            /* The application may destroy the channel while this thread
             * waits on it: rping's main thread destroys its channel with
             * its CM thread still in here, then exits. The channel is
             * looked at only while it is live (ids_mu: destroy takes it
             * before freeing). */
            std::lock_guard<std::mutex> lock(ids_mu);
            live = live_channels.count(channel_) != 0;
            if (live) {
                e = uroce::get_event(ch->uch, &u);
                fd = ch->ch.fd;
            }
        }
        /* Once it is gone the thread stays blocked, as librdmacm's read(2)
         * of a closed fd does, instead of reading the freed channel; and
         * without ids_mu, which the exit hook (destroy_ids_at_leave) takes:
         * blocking with it held hung rping's exit one run in twenty. */
        if (!live) return block_forever();
        if (e == verbs_error::ok) continue; /* checked at the top */
        if (e != verbs_error::again) return fail(e);
        /* a signal only sends this thread round again (to the channel's
         * liveness check first) */
        if (uroce::compat::wait_readable(fd) < 0 && errno != EINTR) return -1;
    }
    auto *ev = new (std::nothrow) event();
    if (!ev) {
        std::lock_guard<std::mutex> lock(ids_mu);
        unclaim(held.counted);
        unclaim(held.listener);
        uroce::ack_event(u);
        errno = ENOMEM;
        return -1;
    }
    std::memset(&ev->ev, 0, sizeof(ev->ev));
    ev->uev = u;
    ev->named = held.counted;
    ev->listener = held.listener;
    id *w = held.named, *listener = held.listener;
    guard g; /* the event's data is the CM thread's */
    ev->ev.id = w ? &w->id : nullptr;
    ev->ev.listen_id = listener ? &listener->id : nullptr;
    ev->ev.event = rdma_cm_event_type(u->event);
    ev->ev.status = u->status;
    if (w && w->id.qp_type == IBV_QPT_UD) {
        rdma_ud_param &p = ev->ev.param.ud;
        p.private_data = u->ud.private_data;
        p.private_data_len = u->ud.private_data_len;
        const uroce::ah_attr &a = u->ud.ah_attr;
        std::memcpy(p.ah_attr.grh.dgid.raw, a.grh.dgid.raw.data(), 16);
        p.ah_attr.grh.flow_label = a.grh.flow_label;
        p.ah_attr.grh.sgid_index = a.grh.sgid_index;
        p.ah_attr.grh.hop_limit = a.grh.hop_limit;
        p.ah_attr.grh.traffic_class = a.grh.traffic_class;
        p.ah_attr.dlid = a.dlid;
        p.ah_attr.sl = a.sl;
        p.ah_attr.src_path_bits = a.src_path_bits;
        p.ah_attr.static_rate = a.static_rate;
        p.ah_attr.is_global = a.is_global;
        p.ah_attr.port_num = a.port_num;
        p.qp_num = u->ud.qp_num;
        p.qkey = u->ud.qkey;
    } else {
        rdma_conn_param &p = ev->ev.param.conn;
        p.private_data = u->conn.private_data;
        p.private_data_len = u->conn.private_data_len;
        p.responder_resources = u->conn.responder_resources;
        p.initiator_depth = u->conn.initiator_depth;
        p.flow_control = u->conn.flow_control;
        p.retry_count = u->conn.retry_count;
        p.rnr_retry_count = u->conn.rnr_retry_count;
        p.srq = u->conn.srq;
        p.qp_num = u->conn.qp_num;
    }
    if (w) w->id.event = &ev->ev;
    *out = &ev->ev;
    return 0;
}

int rdma_ack_cm_event(rdma_cm_event *e) {
    auto *ev = reinterpret_cast<event *>(e);
    const verbs_error r = uroce::ack_event(ev->uev);
    {
        std::lock_guard<std::mutex> lock(ids_mu);
        unclaim(ev->named);
        unclaim(ev->listener);
    }
    delete ev;
    return fail(r);
}

} // extern "C"

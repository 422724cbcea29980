/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the control verbs (PD, MR, CQ, SRQ, AH, QP), each run
 * under the stack lock on uroce's own verbs, with ibverbs' attribute masks
 * and errno conventions (ibv_* returning a pointer: NULL and errno; int:
 * the errno value itself, as rdma-core's providers return it).
 */
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "uroce_ibv_ops.h"
#include "uroce_ibv_rdmacm.h"
#include "uroce_ibv_runtime.h"

using namespace uroce;
using namespace uroce::compat;

namespace uroce::compat {

int to_errno(verbs_error e) {
    return int(e);
}

int unsupported(const char *what, int e) {
    static std::mutex mu;
    static std::vector<std::string> said;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (std::find(said.begin(), said.end(), what) == said.end()) {
            said.emplace_back(what);
            std::fprintf(stderr, "uroce: %s is not supported by uroce0 (%s)\n", what,
                         std::strerror(e));
        }
    }
    errno = e;
    return e;
}

static void to_uroce_ah(const ibv_ah_attr &a, uroce::ah_attr &u) {
    std::memcpy(u.grh.dgid.raw.data(), a.grh.dgid.raw, 16);
    u.grh.flow_label = a.grh.flow_label;
    u.grh.sgid_index = a.grh.sgid_index;
    /* rxe sends the route's hop limit, not the application's (for RoCE the
     * kernel replaces it: ib_resolve_unicast_gid_dmac); ibv_rc_pingpong
     * asks for 1. Do as rxe: 64. */
    u.grh.hop_limit = 64;
    u.grh.traffic_class = a.grh.traffic_class;
    u.dlid = a.dlid;
    u.sl = a.sl;
    u.src_path_bits = a.src_path_bits;
    u.static_rate = a.static_rate;
    u.is_global = 1;
    u.port_num = a.port_num ? a.port_num : 1;
}

static void from_uroce_ah(const uroce::ah_attr &u, ibv_ah_attr &a) {
    std::memset(&a, 0, sizeof(a));
    std::memcpy(a.grh.dgid.raw, u.grh.dgid.raw.data(), 16);
    a.grh.flow_label = u.grh.flow_label;
    a.grh.sgid_index = u.grh.sgid_index;
    a.grh.hop_limit = u.grh.hop_limit;
    a.grh.traffic_class = u.grh.traffic_class;
    a.dlid = u.dlid;
    a.sl = u.sl;
    a.src_path_bits = u.src_path_bits;
    a.static_rate = u.static_rate;
    a.is_global = 1;
    a.port_num = u.port_num;
}

uroce::qp_attr to_uroce(const ibv_qp_attr &a) {
    uroce::qp_attr u;
    u.qp_state = uroce::qp_state(a.qp_state);
    u.cur_qp_state = uroce::qp_state(a.cur_qp_state);
    u.path_mtu = uroce::mtu(a.path_mtu);
    u.qkey = a.qkey;
    u.rq_psn = a.rq_psn;
    u.sq_psn = a.sq_psn;
    u.dest_qp_num = a.dest_qp_num;
    u.qp_access_flags = unsigned(a.qp_access_flags);
    u.cap.max_send_wr = a.cap.max_send_wr;
    u.cap.max_recv_wr = a.cap.max_recv_wr;
    u.cap.max_send_sge = a.cap.max_send_sge;
    u.cap.max_recv_sge = a.cap.max_recv_sge;
    u.cap.max_inline_data = a.cap.max_inline_data;
    to_uroce_ah(a.ah_attr, u.ah_attr);
    u.pkey_index = a.pkey_index;
    u.en_sqd_async_notify = a.en_sqd_async_notify;
    u.sq_draining = a.sq_draining;
    u.max_rd_atomic = a.max_rd_atomic;
    u.max_dest_rd_atomic = a.max_dest_rd_atomic;
    u.min_rnr_timer = a.min_rnr_timer;
    u.port_num = a.port_num ? a.port_num : 1;
    u.timeout = a.timeout;
    u.retry_cnt = a.retry_cnt;
    u.rnr_retry = a.rnr_retry;
    return u;
}

void from_uroce(const uroce::qp_attr &u, ibv_qp_attr &a) {
    a.qp_state = ibv_qp_state(u.qp_state);
    a.cur_qp_state = ibv_qp_state(u.cur_qp_state);
    a.path_mtu = ibv_mtu(u.path_mtu);
    a.path_mig_state = IBV_MIG_MIGRATED;
    a.qkey = u.qkey;
    a.rq_psn = u.rq_psn;
    a.sq_psn = u.sq_psn;
    a.dest_qp_num = u.dest_qp_num;
    a.qp_access_flags = int(u.qp_access_flags);
    a.cap.max_send_wr = u.cap.max_send_wr;
    a.cap.max_recv_wr = u.cap.max_recv_wr;
    a.cap.max_send_sge = u.cap.max_send_sge;
    a.cap.max_recv_sge = u.cap.max_recv_sge;
    a.cap.max_inline_data = u.cap.max_inline_data;
    from_uroce_ah(u.ah_attr, a.ah_attr);
    a.pkey_index = u.pkey_index;
    a.en_sqd_async_notify = u.en_sqd_async_notify;
    a.sq_draining = u.sq_draining;
    a.max_rd_atomic = u.max_rd_atomic;
    a.max_dest_rd_atomic = u.max_dest_rd_atomic;
    a.min_rnr_timer = u.min_rnr_timer;
    a.port_num = u.port_num;
    a.timeout = u.timeout;
    a.retry_cnt = u.retry_cnt;
    a.rnr_retry = u.rnr_retry;
}

} // namespace uroce::compat

namespace {

runtime &rt_of(ibv_context *c) {
    return *to_ctx(c)->rt;
}

/* The destination MAC of an address vector: ARP/ND through the stack
 * (rxe asks the kernel's neighbour table, which may also block). */
int resolve_dmac(runtime &rt, const ibv_ah_attr &a, uroce::ah_attr &u) {
    if (!a.is_global) {
        std::fprintf(stderr, "uroce: an address vector without a GRH (is_global 0) has no "
                             "destination on RoCE: give the peer's GID (e.g. -g 1)\n");
        return EINVAL;
    }
    gid g;
    std::memcpy(g.raw.data(), a.grh.dgid.raw, 16);
    auto mac = rt.resolve_locked(g, std::chrono::seconds(5));
    if (!mac) {
        char text[64];
        std::snprintf(text, sizeof(text), "%s", g.to_string().c_str());
        std::fprintf(stderr, "uroce: no ARP/ND answer from %s within 5 s\n", text);
        return EHOSTUNREACH;
    }
    mac->copy_to(u.dmac);
    return 0;
}

uint32_t pow2_at_least(uint32_t n, uint32_t lo, uint32_t hi) {
    return std::clamp(std::bit_ceil(std::max(n, lo)), lo, hi);
}

} // namespace

extern "C" {

/* ---------------------------------------------------------------- PD */

ibv_pd *ibv_alloc_pd(ibv_context *context) {
    runtime &rt = rt_of(context);
    auto *p = new (std::nothrow) compat_pd();
    if (!p) {
        errno = ENOMEM;
        return nullptr;
    }
    verbs_error e;
    {
        runtime::guard g(rt);
        p->upd = uroce::alloc_pd(rt.dev(), &e);
    }
    if (!p->upd) {
        delete p;
        errno = to_errno(e);
        return nullptr;
    }
    p->pd.context = context;
    p->pd.handle = 0;
    return &p->pd;
}

int ibv_dealloc_pd(ibv_pd *pd) {
    compat_pd *p = to_pd(pd);
    runtime &rt = rt_of(pd->context);
    verbs_error e;
    {
        runtime::guard g(rt);
        e = uroce::dealloc_pd(p->upd);
    }
    if (e != verbs_error::ok) return to_errno(e);
    delete p;
    return 0;
}

/* ---------------------------------------------------------------- MR */

static ibv_mr *reg_mr_common(ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                             unsigned access) {
    if (access & IBV_ACCESS_ON_DEMAND) {
        unsupported("on-demand paging (IBV_ACCESS_ON_DEMAND)");
        return nullptr;
    }
    if (access & (IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)) {
        unsupported("memory windows / zero-based MRs");
        return nullptr;
    }
    if (iova != uint64_t(uintptr_t(addr))) {
        unsupported("an MR with an IOVA other than its address");
        return nullptr;
    }
    /* Keep the bits uroce knows; IBV_ACCESS_RELAXED_ORDERING and the
     * optional range are hints ibverbs lets a device ignore. */
    const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    compat_pd *p = to_pd(pd);
    runtime &rt = rt_of(pd->context);
    auto *m = new (std::nothrow) compat_mr();
    if (!m) {
        errno = ENOMEM;
        return nullptr;
    }
    verbs_error e;
    {
        runtime::guard g(rt);
        m->umr = uroce::reg_mr(p->upd, addr, length, access & known, &e);
    }
    if (!m->umr) {
        delete m;
        errno = to_errno(e);
        return nullptr;
    }
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.handle = 0;
    m->mr.lkey = uroce::mr_lkey(m->umr);
    m->mr.rkey = uroce::mr_rkey(m->umr);
    return &m->mr;
}

#undef ibv_reg_mr
ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, size_t length, int access) {
    return reg_mr_common(pd, addr, length, uintptr_t(addr), unsigned(access));
}

#undef ibv_reg_mr_iova
ibv_mr *ibv_reg_mr_iova(ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access) {
    return reg_mr_common(pd, addr, length, iova, unsigned(access));
}

ibv_mr *ibv_reg_mr_iova2(ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                         unsigned int access) {
    return reg_mr_common(pd, addr, length, iova, access);
}

ibv_mr *ibv_reg_dmabuf_mr(ibv_pd *, uint64_t, size_t, uint64_t, int, int) {
    unsupported("dma-buf MRs (ibv_reg_dmabuf_mr)");
    return nullptr;
}

int ibv_rereg_mr(ibv_mr *, int, ibv_pd *, void *, size_t, int) {
    unsupported("ibv_rereg_mr");
    return IBV_REREG_MR_ERR_INPUT;
}

int ibv_dereg_mr(ibv_mr *mr) {
    auto *m = reinterpret_cast<compat_mr *>(mr);
    runtime &rt = rt_of(mr->context);
    verbs_error e;
    {
        runtime::guard g(rt);
        e = uroce::dereg_mr(m->umr);
    }
    if (e != verbs_error::ok) return to_errno(e);
    delete m;
    return 0;
}

/* ---------------------------------------------------------------- CQ */

ibv_cq *ibv_create_cq(ibv_context *context, int cqe, void *cq_context, ibv_comp_channel *channel,
                      int comp_vector) {
    runtime &rt = rt_of(context);
    if (cqe < 1 || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
        errno = EINVAL;
        return nullptr;
    }
    auto *c = new (std::nothrow) compat_cq();
    if (!c) {
        errno = ENOMEM;
        return nullptr;
    }
    verbs_error e = verbs_error::ok;
    {
        runtime::guard g(rt);
        c->ucq = uroce::create_cq(rt.dev(), cqe, cq_context, &e);
        if (c->ucq && rt.mode() == progress_mode::thread) {
            work_channel_config cc;
            cc.dev = rt.dev();
            cc.depth = pow2_at_least(uint32_t(cqe), 64, 4096);
            cc.comp_depth = pow2_at_least(uint32_t(cqe), 64, 8192);
            cc.max_sge = 32;
            cc.max_inline = runtime::max_inline;
            c->ch = work_channel::create(cc, &e);
            if (c->ch) e = c->ch->add_cq(c->ucq);
            if (!c->ch || e != verbs_error::ok) {
                uroce::destroy_cq(c->ucq);
                c->ucq = nullptr;
                if (e == verbs_error::ok) e = verbs_error::nomem;
            }
        }
        if (c->ucq) {
            rt.add_cq_locked(c);
            rt.add_event_obj_locked(c->ucq, &c->cq);
        }
    }
    if (!c->ucq) {
        delete c;
        errno = to_errno(e);
        return nullptr;
    }
    c->depth = cqe;
    c->cq.context = context;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    pthread_mutex_init(&c->cq.mutex, nullptr);
    pthread_cond_init(&c->cq.cond, nullptr);
    if (channel) {
        c->chan = reinterpret_cast<compat_comp_channel *>(channel);
        c->chan->refcnt.fetch_add(1);
    }
    return &c->cq;
}

int ibv_destroy_cq(ibv_cq *cq) {
    compat_cq *c = to_cq(cq);
    runtime &rt = rt_of(cq->context);
    {
        runtime::guard g(rt);
        rt.remove_cq_locked(c);
        c->ch.reset();
        verbs_error e = uroce::destroy_cq(c->ucq);
        if (e != verbs_error::ok) {
            rt.add_cq_locked(c);
            return to_errno(e);
        }
        rt.forget_event_obj_locked(c->ucq, &c->cq);
    }
    if (c->chan) {
        /* Events of this CQ still queued on the channel are dropped (the
         * application acked them or never will). */
        std::lock_guard<std::mutex> lock(c->chan->mu);
        c->chan->events.erase(std::remove(c->chan->events.begin(), c->chan->events.end(), c),
                              c->chan->events.end());
        c->chan->refcnt.fetch_sub(1);
    }
    wait_events_acked(&cq->mutex, &cq->cond, &cq->comp_events_completed, &c->comp_events_reported);
    wait_events_acked(&cq->mutex, &cq->cond, &cq->async_events_completed,
                      &c->async_events_reported);
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    delete c;
    return 0;
}

} // extern "C"

namespace uroce::compat {

ibv_cq_ex *op_create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr) {
    /* The work completion's standard fields only: no timestamps, VLAN,
     * flow tag or tag matching (uroce's completions carry none). */
    if (attr->wc_flags & ~uint64_t(IBV_WC_STANDARD_FLAGS)) {
        unsupported("ibv_create_cq_ex wc_flags beyond the standard ones (timestamps, CVLAN, "
                    "flow tag, TM)");
        return nullptr;
    }
    if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS)) {
        unsupported("ibv_create_cq_ex with a parent domain");
        return nullptr;
    }
    /* SINGLE_THREADED is a promise that costs nothing to honour. */
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
        (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
        unsupported("ibv_create_cq_ex flags other than SINGLE_THREADED");
        return nullptr;
    }
    if (attr->cqe > uint32_t(INT32_MAX)) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_cq *cq =
        ibv_create_cq(ctx, int(attr->cqe), attr->cq_context, attr->channel, int(attr->comp_vector));
    if (!cq) return nullptr;
    ibv_cq_ex *cqx = &to_cq(cq)->cqx;
    init_cq_ex_ops(cqx);
    return cqx;
}

} // namespace uroce::compat

extern "C" {

/* As rxe_resize_cq: EINVAL for a size below 1, above max_cqe or below the
 * completions the CQ holds; those stay, in order. Here they may be in two
 * places: the uroce CQ, and (thread mode) the work channel's completion
 * ring, which ibv_poll_cq hands out first; both count.
 * The channel's ring keeps its size: it only buffers, what does not fit
 * waits in the uroce CQ. */
int ibv_resize_cq(ibv_cq *cq, int cqe) {
    compat_cq *c = to_cq(cq);
    runtime &rt = rt_of(cq->context);
    runtime::guard g(rt);
    uint64_t held = uroce::cq_count(c->ucq);
    if (c->ch) {
        /* moved into the ring (the lock holds the mover still) minus polled
         * (an application thread polling meanwhile only lowers it) */
        held += c->ch->serve_counters().completions.load(std::memory_order_acquire) -
                c->ch->app_counters().polled.load(std::memory_order_acquire);
    }
    if (cqe < 1 || uint64_t(cqe) < held) return EINVAL;
    const verbs_error e = uroce::resize_cq(c->ucq, cqe);
    if (e != verbs_error::ok) return to_errno(e);
    c->depth = cqe;
    cq->cqe = int(uroce::cq_size(c->ucq));
    return 0;
}

/* ---------------------------------------------------------------- SRQ */

ibv_srq *ibv_create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) {
    runtime &rt = rt_of(pd->context);
    auto *s = new (std::nothrow) compat_srq();
    if (!s) {
        errno = ENOMEM;
        return nullptr;
    }
    uroce::srq_init_attr ua;
    ua.srq_context = attr->srq_context;
    ua.attr.max_wr = attr->attr.max_wr;
    ua.attr.max_sge = attr->attr.max_sge;
    ua.attr.srq_limit = attr->attr.srq_limit;
    verbs_error e;
    {
        runtime::guard g(rt);
        s->usrq = uroce::create_srq(to_pd(pd)->upd, ua, &e);
    }
    if (!s->usrq) {
        delete s;
        errno = to_errno(e);
        return nullptr;
    }
    {
        runtime::guard g(rt);
        rt.add_event_obj_locked(s->usrq, &s->srq);
    }
    s->max_wr = attr->attr.max_wr;
    s->max_sge = attr->attr.max_sge;
    s->limit = attr->attr.srq_limit;
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    return &s->srq;
}

/* IBV_SRQ_LIMIT arms the limit (IBV_EVENT_SRQ_LIMIT_REACHED once, then
 * disarmed); IBV_SRQ_MAX_WR resizes, the posted WQEs kept. rxe's checks,
 * EINVAL (uroce::modify_srq). */
int ibv_modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int attr_mask) {
    static_assert(unsigned(IBV_SRQ_MAX_WR) == unsigned(srq_attr_max_wr) &&
                  unsigned(IBV_SRQ_LIMIT) == unsigned(srq_attr_limit));
    compat_srq *s = to_srq(srq);
    runtime &rt = rt_of(srq->context);
    uroce::srq_attr ua;
    ua.max_wr = attr->max_wr;
    ua.srq_limit = attr->srq_limit;
    runtime::guard g(rt);
    const verbs_error e = uroce::modify_srq(s->usrq, ua, unsigned(attr_mask));
    if (e != verbs_error::ok) return to_errno(e);
    s->max_wr = (attr_mask & IBV_SRQ_MAX_WR) ? attr->max_wr : s->max_wr;
    return 0;
}

int ibv_query_srq(ibv_srq *srq, ibv_srq_attr *attr) {
    compat_srq *s = to_srq(srq);
    runtime &rt = rt_of(srq->context);
    uroce::srq_attr ua;
    {
        /* the limit goes back to 0 when it fires: ask the device */
        runtime::guard g(rt);
        uroce::query_srq(s->usrq, &ua);
    }
    attr->max_wr = ua.max_wr;
    attr->max_sge = ua.max_sge;
    attr->srq_limit = ua.srq_limit;
    return 0;
}

int ibv_destroy_srq(ibv_srq *srq) {
    compat_srq *s = to_srq(srq);
    runtime &rt = rt_of(srq->context);
    verbs_error e;
    {
        runtime::guard g(rt);
        e = uroce::destroy_srq(s->usrq);
        if (e == verbs_error::ok) rt.forget_event_obj_locked(s->usrq, &s->srq);
    }
    if (e != verbs_error::ok) return to_errno(e);
    wait_events_acked(&srq->mutex, &srq->cond, &srq->events_completed, &s->events_reported);
    pthread_mutex_destroy(&srq->mutex);
    pthread_cond_destroy(&srq->cond);
    delete s;
    return 0;
}

/* ---------------------------------------------------------------- AH */

ibv_ah *ibv_create_ah(ibv_pd *pd, ibv_ah_attr *attr) {
    runtime &rt = rt_of(pd->context);
    auto *a = new (std::nothrow) compat_ah();
    if (!a) {
        errno = ENOMEM;
        return nullptr;
    }
    uroce::ah_attr ua;
    to_uroce_ah(*attr, ua);
    verbs_error e = verbs_error::ok;
    int err = 0;
    {
        runtime::guard g(rt);
        err = resolve_dmac(rt, *attr, ua);
        if (!err) a->uah = uroce::create_ah(to_pd(pd)->upd, ua, &e);
    }
    if (!a->uah) {
        delete a;
        errno = err ? err : to_errno(e);
        return nullptr;
    }
    a->ah.context = pd->context;
    a->ah.pd = pd;
    return &a->ah;
}

int ibv_destroy_ah(ibv_ah *ah) {
    compat_ah *a = to_ah(ah);
    runtime &rt = rt_of(ah->context);
    verbs_error e;
    {
        runtime::guard g(rt);
        e = uroce::destroy_ah(a->uah);
    }
    if (e != verbs_error::ok) return to_errno(e);
    delete a;
    return 0;
}

/* The address vector that answers a received UD completion: the GRH
 * uroce hands in front of the payload (IBTA 11.4.1.2, as rxe: for RoCE v2
 * the 40 bytes hold the IP header; an IPv4 packet's header sits in its
 * last 20 bytes). */
int ibv_init_ah_from_wc(ibv_context *context, uint8_t port_num, ibv_wc *wc, ibv_grh *grh,
                        ibv_ah_attr *ah_attr) {
    (void)context;
    if (!(wc->wc_flags & IBV_WC_GRH) || !grh) {
        errno = EINVAL;
        return EINVAL;
    }
    std::memset(ah_attr, 0, sizeof(*ah_attr));
    const auto *raw = reinterpret_cast<const uint8_t *>(grh);
    gid src;
    if ((raw[20] >> 4) == 4) { /* IPv4 header in bytes 20..39 */
        uint32_t saddr;
        std::memcpy(&saddr, raw + 20 + 12, 4);
        src = gid::from_ipv4(rte_be_to_cpu_32(saddr));
    } else {
        std::memcpy(src.raw.data(), grh->sgid.raw, 16);
        ah_attr->grh.flow_label = rte_be_to_cpu_32(grh->version_tclass_flow) & 0xfffff;
        ah_attr->grh.traffic_class = (rte_be_to_cpu_32(grh->version_tclass_flow) >> 20) & 0xff;
    }
    std::memcpy(ah_attr->grh.dgid.raw, src.raw.data(), 16);
    ah_attr->is_global = 1;
    ah_attr->grh.hop_limit = 0xff;
    ah_attr->port_num = port_num;
    ah_attr->sl = wc->sl;
    /* The local GID of the same family as the sender (rxe: the index the
     * packet arrived on; uroce0's table has one per family). */
    runtime &rt = rt_of(context);
    runtime::guard g(rt);
    const int idx = rt.st().gid_index_for(src);
    if (idx < 0) {
        errno = EINVAL;
        return EINVAL;
    }
    ah_attr->grh.sgid_index = uint8_t(idx);
    return 0;
}

ibv_ah *ibv_create_ah_from_wc(ibv_pd *pd, ibv_wc *wc, ibv_grh *grh, uint8_t port_num) {
    ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) return nullptr;
    return ibv_create_ah(pd, &attr);
}

/* ---------------------------------------------------------------- QP */

static uroce::qp *make_plain_qp(uroce::pd *pd, uroce::qp_init_attr *attr, void *,
                                verbs_error *err) {
    return uroce::create_qp(pd, *attr, err);
}

static ibv_qp *create_qp_common(ibv_context *context, ibv_pd *pd, const ibv_qp_init_attr &ia,
                                uint64_t send_ops_flags, qp_maker make = make_plain_qp,
                                void *make_arg = nullptr) {
    runtime &rt = rt_of(context);
    if (ia.qp_type != IBV_QPT_RC && ia.qp_type != IBV_QPT_UC && ia.qp_type != IBV_QPT_UD) {
        unsupported(ia.qp_type == IBV_QPT_XRC_SEND || ia.qp_type == IBV_QPT_XRC_RECV
                        ? "XRC QPs"
                        : "QP types other than RC, UC and UD");
        return nullptr;
    }
    if (!ia.send_cq || !ia.recv_cq) {
        errno = EINVAL;
        return nullptr;
    }
    auto *q = new (std::nothrow) compat_qp();
    if (!q) {
        errno = ENOMEM;
        return nullptr;
    }
    uroce::qp_init_attr ua;
    ua.qp_context = ia.qp_context;
    ua.send_cq = to_cq(ia.send_cq)->ucq;
    ua.recv_cq = to_cq(ia.recv_cq)->ucq;
    ua.srq = ia.srq ? to_srq(ia.srq)->usrq : nullptr;
    ua.cap.max_send_wr = std::max(ia.cap.max_send_wr, 1u);
    ua.cap.max_recv_wr = ia.srq ? 0 : std::max(ia.cap.max_recv_wr, 1u);
    ua.cap.max_send_sge = std::max(ia.cap.max_send_sge, 1u);
    ua.cap.max_recv_sge = std::max(ia.cap.max_recv_sge, 1u);
    ua.cap.max_inline_data = ia.cap.max_inline_data;
    ua.qp_type = uroce::qp_type(ia.qp_type);
    ua.sq_sig_all = ia.sq_sig_all;
    verbs_error e;
    {
        runtime::guard g(rt);
        q->uqp = make(to_pd(pd)->upd, &ua, make_arg, &e);
        if (q->uqp) {
            rt.add_event_obj_locked(q->uqp, &q->qpx.qp_base);
            qp_attr qa;
            qp_init_attr qi;
            if (uroce::query_qp(q->uqp, &qa, qp_attr_state, &qi) == verbs_error::ok)
                q->qpx.qp_base.state = ibv_qp_state(qa.qp_state);
        }
    }
    if (!q->uqp) {
        delete q;
        errno = to_errno(e);
        return nullptr;
    }
    q->type = ia.qp_type;
    q->send_cq = to_cq(ia.send_cq);
    q->recv_cq = to_cq(ia.recv_cq);
    q->max_inline = ia.cap.max_inline_data;
    q->max_send_sge = ua.cap.max_send_sge;
    q->max_recv_sge = ua.cap.max_recv_sge;
    ibv_qp &b = q->qpx.qp_base;
    b.context = context;
    b.qp_context = ia.qp_context;
    b.pd = pd;
    b.send_cq = ia.send_cq;
    b.recv_cq = ia.recv_cq;
    b.srq = ia.srq;
    b.handle = 0;
    b.qp_num = uroce::qp_num(q->uqp);
    b.qp_type = ia.qp_type;
    pthread_mutex_init(&b.mutex, nullptr);
    pthread_cond_init(&b.cond, nullptr);
    b.events_completed = 0;
    /* The new post send API (ibv_qp_to_qp_ex): a batch of at most
     * max_send_wr WRs between wr_start and wr_complete. */
    q->qpx.comp_mask = 0;
    (void)send_ops_flags;
    q->batch.reserve(ua.cap.max_send_wr);
    q->batch_sges.resize(size_t(ua.cap.max_send_wr) * ua.cap.max_send_sge);
    q->batch_inline.resize(size_t(ua.cap.max_send_wr) * ia.cap.max_inline_data);
    init_qp_ex_ops(&q->qpx);
    return &b;
}

ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) {
    ibv_qp *qp = create_qp_common(pd->context, pd, *attr, 0);
    if (qp) {
        /* ibverbs reports the capabilities it granted back in attr. */
        attr->cap.max_inline_data = to_qp(qp)->max_inline;
    }
    return qp;
}

} // extern "C"

namespace uroce::compat {

void rdmacm_set_qp_release_hook(ibv_context *ctx, void (*fn)(uroce::qp *)) {
    rt_of(ctx).set_qp_release_hook_locked(fn);
}

ibv_qp *rdmacm_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr, qp_maker make, void *arg) {
    ibv_qp *qp = create_qp_common(pd->context, pd, *attr, 0, make, arg);
    if (!qp) return nullptr;
    attr->cap.max_inline_data = to_qp(qp)->max_inline;
    to_qp(qp)->made_by_cm = true;
    return qp;
}

ibv_qp *op_create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr) {
    const uint32_t known =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if (attr->comp_mask & ~known) {
        unsupported("ibv_create_qp_ex attributes other than PD and send_ops_flags");
        return nullptr;
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        errno = EINVAL;
        return nullptr;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) {
        unsupported("QP create flags");
        return nullptr;
    }
    const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                         IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (attr->send_ops_flags & ~ops)) {
        unsupported(
            "send_ops_flags other than SEND, WRITE, READ, atomics and SEND with Invalidate");
        return nullptr;
    }
    ibv_qp_init_attr ia{};
    ia.qp_context = attr->qp_context;
    ia.send_cq = attr->send_cq;
    ia.recv_cq = attr->recv_cq;
    ia.srq = attr->srq;
    ia.cap = attr->cap;
    ia.qp_type = attr->qp_type;
    ia.sq_sig_all = attr->sq_sig_all;
    ibv_qp *qp = create_qp_common(ctx, attr->pd, ia, attr->send_ops_flags);
    if (qp && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) to_qp(qp)->qpx.comp_mask = 0;
    return qp;
}

ibv_mw *op_alloc_mw(ibv_pd *, ibv_mw_type) {
    unsupported("memory windows (ibv_alloc_mw)");
    return nullptr;
}
int op_bind_mw(ibv_qp *, ibv_mw *, ibv_mw_bind *) {
    return unsupported("memory windows (ibv_bind_mw)");
}
int op_dealloc_mw(ibv_mw *) {
    return unsupported("memory windows (ibv_dealloc_mw)");
}

} // namespace uroce::compat

extern "C" {

int ibv_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask) {
    compat_qp *q = to_qp(qp);
    runtime &rt = rt_of(qp->context);
    uroce::qp_attr ua = to_uroce(*attr);
    unsigned mask = unsigned(attr_mask);
    if (mask & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)) {
        if ((mask & IBV_QP_PATH_MIG_STATE) && attr->path_mig_state == IBV_MIG_MIGRATED)
            mask &= ~unsigned(IBV_QP_PATH_MIG_STATE); /* the only state there is */
        if (mask & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE))
            return unsupported("alternate paths (automatic path migration)");
    }
    if (mask & ~((1u << 21) - 1)) return unsupported("QP attributes beyond IBV_QP_DEST_QPN");
    runtime::guard g(rt);
    if (mask & IBV_QP_AV) {
        const int err = resolve_dmac(rt, attr->ah_attr, ua.ah_attr);
        if (err) return err;
    }
    const verbs_error e = uroce::modify_qp(q->uqp, ua, mask);
    if (e != verbs_error::ok) return to_errno(e);
    if (mask & IBV_QP_STATE) qp->state = attr->qp_state;
    return 0;
}

int ibv_query_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask, ibv_qp_init_attr *init_attr) {
    compat_qp *q = to_qp(qp);
    runtime &rt = rt_of(qp->context);
    uroce::qp_attr ua;
    uroce::qp_init_attr ui;
    {
        runtime::guard g(rt);
        const verbs_error e = uroce::query_qp(q->uqp, &ua, unsigned(attr_mask), &ui);
        if (e != verbs_error::ok) return to_errno(e);
    }
    std::memset(attr, 0, sizeof(*attr));
    from_uroce(ua, *attr);
    attr->cap.max_inline_data = q->max_inline;
    if (init_attr) {
        std::memset(init_attr, 0, sizeof(*init_attr));
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->srq = qp->srq;
        init_attr->cap = attr->cap;
        init_attr->qp_type = qp->qp_type;
        init_attr->sq_sig_all = ui.sq_sig_all;
    }
    return 0;
}

int ibv_query_qp_data_in_order(ibv_qp *, ibv_wr_opcode, uint32_t) {
    /* 0: no promise that data lands in order (ibverbs' safe answer). */
    return 0;
}

int ibv_destroy_qp(ibv_qp *qp) {
    compat_qp *q = to_qp(qp);
    runtime &rt = rt_of(qp->context);
    {
        runtime::guard g(rt);
        /* In thread mode, posts of this QP may still wait in its CQs'
         * channels: hand them to the device first (it refuses them for a
         * destroyed QP otherwise, as ENOENT error completions). */
        if (q->send_cq->ch) q->send_cq->ch->serve();
        if (q->recv_cq->ch && q->recv_cq != q->send_cq) q->recv_cq->ch->serve();
        /* An rdma_create_qp QP destroyed with ibv_destroy_qp, not
         * rdma_destroy_qp (perftest -R does so with its exchange QP): the
         * CM must not move it to ERROR on a later DREQ. */
        if (q->made_by_cm) rt.release_cm_qp_locked(q->uqp);
        const verbs_error e = uroce::destroy_qp(q->uqp);
        if (e != verbs_error::ok) return to_errno(e);
        rt.forget_event_obj_locked(q->uqp, &q->qpx.qp_base);
    }
    wait_events_acked(&qp->mutex, &qp->cond, &qp->events_completed, &q->events_reported);
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    delete q;
    return 0;
}

} // extern "C"

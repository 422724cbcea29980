/* SPDX-License-Identifier: BSD-3-Clause
 * The device's control path: construction and teardown, object create and
 * destroy (PD, MR, CQ, SRQ, AH, QP) and path resolution. The per-poll work
 * (TX batching, the QP scheduler, poll()) is in uroce_device_poll.cpp and
 * the receive path in uroce_recv.cpp.
 */
#include "uroce_device.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>

#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <uroce/flow.h>
#include "uroce_env.h"
#include "uroce_psn.h"

namespace uroce {

/* The slot of the first QP (device_config::random_first_qpn): from the
 * seed when there is one (a different stream from the key bytes'), else
 * from the OS's random source (getrandom), not the TSC, which an observer
 * of the process start could narrow down. */
static uint64_t first_qpn_draw(uint64_t seed) {
    uint64_t x;
    if (seed) {
        x = seed + 0x9e3779b97f4a7c15ull; /* splitmix64 */
    } else {
        std::random_device rd;
        x = (uint64_t(rd()) << 32) | rd();
    }
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

device::device(const device_config &cfg)
    : cfg_(cfg), qpn_base_(cfg.first_qpn), tx_stash_(cfg.pool) {
    clock_ = cfg.clock ? cfg.clock : default_clock();
    timers_.start(clock_->now_ns());
    mrs_.init(cfg.max_mr, cfg.seed); /* seed 0: a random secret */
    qps_.assign(cfg.max_qp, nullptr);
    sched_.reserve(size_t(cfg.max_qp) + 1); /* + QP1 */
    round_.reserve(size_t(cfg.max_qp) + 1);
    max_frame_len_ = cfg.dev->caps().max_frame_len;
    if (cfg.random_first_qpn) next_qpn_ = uint32_t(first_qpn_draw(cfg.seed) % cfg.max_qp);
}

device::~device() {
    for (auto &q : qps_owned_)
        if (q) {
            timers_.cancel(q->retrans_timer);
            timers_.cancel(q->rnr_timer);
            timers_.cancel(q->probe_timer);
        }
    tx_port_full_ = false; /* one last offer */
    tx_flush();
    if (tx_n_) rte_pktmbuf_free_bulk(tx_q_, tx_n_); /* the port took no more */
}

qp_counters device::qp_totals() const {
    qp_counters t = dead_qp_cnt_;
    for (const auto &q : qps_owned_)
        if (q) qp_counters_add(t, q->cnt);
    return t;
}

pd *device::alloc_pd() {
    auto p = std::make_unique<pd>();
    p->dev = this;
    p->handle = next_pd_++;
    pds_.push_back(std::move(p));
    return pds_.back().get();
}

template <class T> static bool erase_owned(std::vector<std::unique_ptr<T>> &v, T *obj) {
    auto it = std::find_if(v.begin(), v.end(),
                           [obj](const std::unique_ptr<T> &u) { return u.get() == obj; });
    if (it == v.end()) return false;
    v.erase(it);
    return true;
}

verbs_error device::dealloc_pd(pd *p) {
    if (p->usecnt) return verbs_error::busy;
    return erase_owned(pds_, p) ? verbs_error::ok : verbs_error::inval;
}

mr *device::reg_mr(pd *p, void *addr, size_t len, unsigned access, verbs_error *err) {
    auto fail = [err](verbs_error e) -> mr * {
        if (err) *err = e;
        return nullptr;
    };
    const unsigned known = access_local_write | access_remote_write | access_remote_read |
                           access_remote_atomic | access_remote_invalidate;
    if (access & ~known) return fail(verbs_error::inval);
    /* IBTA 10.6.3.1 / ibv_reg_mr(3): remote write or atomic needs local write. */
    if ((access & (access_remote_write | access_remote_atomic)) && !(access & access_local_write))
        return fail(verbs_error::inval);
    if (!addr && len) return fail(verbs_error::inval);
    auto m = std::make_unique<mr>();
    m->dev = this;
    m->pd = p;
    m->addr = static_cast<uint8_t *>(addr);
    m->length = len;
    m->access = access;
    if (!mrs_.insert(m.get())) return fail(verbs_error::nomem);
    ++p->usecnt;
    mrs_owned_.push_back(std::move(m));
    if (err) *err = verbs_error::ok;
    return mrs_owned_.back().get();
}

verbs_error device::dereg_mr(mr *m) {
    mrs_.remove(m);
    --m->pd->usecnt;
    return erase_owned(mrs_owned_, m) ? verbs_error::ok : verbs_error::inval;
}

cq *device::create_cq(int cqe, void *ctx, verbs_error *err) {
    if (cqe < 1 || cqe > int(max_cqe_limit)) {
        if (err) *err = verbs_error::inval;
        return nullptr;
    }
    auto c = std::make_unique<cq>();
    c->dev = this;
    c->cq_context = ctx;
    uint32_t n = std::bit_ceil(uint32_t(cqe));
    c->ring = make_hugemem_array<wc>(n);
    c->mask = n - 1;
    c->cqe = uint32_t(cqe);
    cqs_.push_back(std::move(c));
    if (err) *err = verbs_error::ok;
    return cqs_.back().get();
}

verbs_error device::destroy_cq(cq *c) {
    if (c->usecnt) return verbs_error::busy;
    drop_events_of(c);
    return erase_owned(cqs_, c) ? verbs_error::ok : verbs_error::inval;
}

/* rxe_cq_chk_attr's checks, then rxe_cq_resize_queue's copy. */
verbs_error device::resize_cq(cq *c, int cqe) {
    if (cqe < 1 || cqe > int(max_cqe_limit) || uint32_t(cqe) < c->count())
        return verbs_error::inval;
    cq_resize(c, uint32_t(cqe));
    return verbs_error::ok;
}

srq *device::create_srq(pd *p, const srq_init_attr &a, verbs_error *err) {
    if (a.attr.max_wr < 1 || a.attr.max_wr > max_qp_wr_limit || a.attr.max_sge < 1 ||
        a.attr.max_sge > max_sge_limit) {
        if (err) *err = verbs_error::inval;
        return nullptr;
    }
    auto s = std::make_unique<srq>();
    s->dev = this;
    s->pd = p;
    s->srq_context = a.srq_context;
    s->rq.init(a.attr.max_wr, a.attr.max_sge);
    /* armed from the start if asked (rxe_srq_from_init takes it unchecked) */
    s->rq.set_limit(a.attr.srq_limit);
    ++p->usecnt;
    srqs_.push_back(std::move(s));
    if (err) *err = verbs_error::ok;
    return srqs_.back().get();
}

/* rxe_srq_chk_attr's checks, all EINVAL, before anything changes. The
 * limit is checked against max_wr as IBTA and ibv_modify_srq(3) say (rxe
 * checks it against its ring's index mask, which is at least max_wr). A
 * resize keeps the posted WQEs (rxe_queue_resize copies them and refuses a
 * ring too small for them). */
verbs_error device::modify_srq(srq *s, const srq_attr &a, unsigned mask) {
    if (mask & ~unsigned(srq_attr_max_wr | srq_attr_limit)) return verbs_error::inval;
    const uint32_t limit = (mask & srq_attr_limit) ? a.srq_limit : s->rq.limit();
    uint32_t max_wr = s->rq.max_wr();
    if (mask & srq_attr_max_wr) {
        if (a.max_wr < 1 || a.max_wr > max_qp_wr_limit) return verbs_error::inval;
        if (s->rq.limit() && a.max_wr < s->rq.limit()) return verbs_error::inval;
        if (a.max_wr < s->rq.count()) return verbs_error::inval;
        max_wr = a.max_wr;
    }
    if ((mask & srq_attr_limit) && limit > max_wr) return verbs_error::inval;
    if (max_wr != s->rq.max_wr()) s->rq.resize(max_wr);
    s->rq.set_limit(limit);
    return verbs_error::ok;
}

verbs_error device::destroy_srq(srq *s) {
    if (s->usecnt) return verbs_error::busy;
    drop_events_of(s);
    --s->pd->usecnt;
    return erase_owned(srqs_, s) ? verbs_error::ok : verbs_error::inval;
}

verbs_error device::resolve_path(const ah_attr &a, uint32_t src_qpn, uint32_t dst_qpn, qp_type t,
                                 roce_path &out) {
    if (a.port_num != 1 && a.port_num != 0) return verbs_error::inval;
    if (a.grh.sgid_index >= cfg_.num_gids) return verbs_error::inval;
    if (a.grh.dgid.is_zero()) return verbs_error::inval;
    const gid &sg = cfg_.gids[a.grh.sgid_index];
    if (sg.is_ipv4_mapped() != a.grh.dgid.is_ipv4_mapped()) return verbs_error::inval;
    roce_path p;
    std::memcpy(p.src_mac, cfg_.dev->mac(), 6);
    std::memcpy(p.dst_mac, a.dmac, 6);
    p.sgid = sg;
    p.dgid = a.grh.dgid;
    p.ip_version = sg.is_ipv4_mapped() ? 4 : 6;
    p.traffic_class = tclass_with_ecn(a.grh.traffic_class, cfg_.cc.ecn);
    p.hop_limit = a.grh.hop_limit ? a.grh.hop_limit : 64;
    if (t == qp_type::ud) {
        p.flow_label = a.grh.flow_label & flow_label_mask;
        p.udp_sport = ud_udp_sport(src_qpn);
    } else {
        p.flow_label = a.grh.flow_label ? (a.grh.flow_label & flow_label_mask)
                                        : calc_flow_label(src_qpn, dst_qpn);
        p.udp_sport = flow_label_to_udp_sport(p.flow_label);
    }
    out = p;
    return verbs_error::ok;
}

ah *device::create_ah(pd *p, const ah_attr &a, verbs_error *err) {
    auto h = std::make_unique<ah>();
    h->dev = this;
    h->pd = p;
    h->attr = a;
    verbs_error e = resolve_path(a, 0, 0, qp_type::ud, h->path);
    if (e != verbs_error::ok) {
        if (err) *err = e;
        return nullptr;
    }
    make_hdr_template(h->hdr, h->path, cfg_.dev->caps().ipv4_csum_offload);
    ++p->usecnt;
    ahs_.push_back(std::move(h));
    if (err) *err = verbs_error::ok;
    return ahs_.back().get();
}

verbs_error device::destroy_ah(ah *a) {
    --a->pd->usecnt;
    return erase_owned(ahs_, a) ? verbs_error::ok : verbs_error::inval;
}

qp *device::create_qp(pd *p, const qp_init_attr &a, verbs_error *err) {
    auto fail = [err](verbs_error e) -> qp * {
        if (err) *err = e;
        return nullptr;
    };
    if ((a.send_cq && a.send_cq->dev != this) || (a.recv_cq && a.recv_cq->dev != this) ||
        (a.srq && a.srq->dev != this))
        return fail(verbs_error::inval);
    uint32_t slot = 0;
    bool found = false;
    for (uint32_t i = 0; i < qps_.size(); ++i) {
        uint32_t s = (next_qpn_ + i) % uint32_t(qps_.size());
        if (!qps_[s]) {
            slot = s;
            found = true;
            break;
        }
    }
    if (!found) return fail(verbs_error::nomem);
    qp *q = add_qp(p, a, qpn_base_ + slot, err);
    if (!q) return nullptr;
    next_qpn_ = (slot + 1) % uint32_t(qps_.size());
    qps_[slot] = q;
    return q;
}

qp *device::create_gsi_qp(pd *p, const qp_init_attr &a, verbs_error *err) {
    if (gsi_) {
        if (err) *err = verbs_error::busy;
        return nullptr;
    }
    if (a.qp_type != qp_type::ud || a.srq) {
        if (err) *err = verbs_error::inval;
        return nullptr;
    }
    qp *q = add_qp(p, a, gsi_qp_num, err);
    if (!q) return nullptr;
    /* IBTA 13.4.6.1: QP1's Q_Key is the GSI's, never another (qp_modify
     * refuses a change); the UD receive path then drops any datagram to QP1
     * with another Q_Key and counts it (ud_qkey_drops), as rxe_recv.c
     * check_keys does for QP1. */
    q->attr.qkey = gsi_qp_qkey;
    gsi_ = q;
    return q;
}

/* The part of QP creation common to the table's QPs and QP1. */
qp *device::add_qp(pd *p, const qp_init_attr &a, uint32_t qpn, verbs_error *err) {
    auto fail = [err](verbs_error e) -> qp * {
        if (err) *err = e;
        return nullptr;
    };
    auto q = std::make_unique<qp>();
    q->dev = this;
    q->pd = p;
    q->qpn = qpn;
    verbs_error e = qp_init(q.get(), a);
    if (e != verbs_error::ok) return fail(e);
    if (q->type != qp_type::ud) dcqcn_init(q->cc, cfg_.cc, now_ns());
    if (q->type == qp_type::ud) {
        /* the UD source port is per QP, QP1's too (rxe_qp.c: 0xC000 +
         * hash_32(qpn, 14)); sends from an AH use it (uroce_req.cpp) */
        q->path.udp_sport = ud_udp_sport(q->qpn);
    }
    ++p->usecnt;
    ++q->scq->usecnt;
    ++q->rcq->usecnt;
    if (q->srq) ++q->srq->usecnt;
    sq_bytes_ += sq_slot_bytes(q.get());
    sq_stream_update();
    qps_owned_.push_back(std::move(q));
    if (err) *err = verbs_error::ok;
    return qps_owned_.back().get();
}

uint64_t device::sq_stream_default_min_bytes() {
    static const uint64_t min_bytes = [] {
        if (const std::optional<bool> on = env_switch("UROCE_SQ_STREAM"))
            return *on ? uint64_t(0) : UINT64_MAX;
        const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); /* 0 or -1 where unknown */
        return uint64_t(4) * (l2 > 0 ? uint64_t(l2) : uint64_t(1) << 20);
    }();
    return min_bytes;
}

verbs_error device::destroy_qp(qp *q) {
    timers_.cancel(q->retrans_timer);
    timers_.cancel(q->rnr_timer);
    timers_.cancel(q->probe_timer);
    /* off the scheduler's lists (round_ keeps its order: its unserved
     * part is [0, round_left_)) */
    if (q->scheduled) {
        if (auto it = std::find(sched_.begin(), sched_.end(), q); it != sched_.end())
            sched_.erase(it);
        auto left = round_.begin() + ptrdiff_t(round_left_);
        if (auto it = std::find(round_.begin(), left, q); it != left) {
            round_.erase(it);
            --round_left_;
        }
        q->scheduled = false;
    }
    if (q == gsi_)
        gsi_ = nullptr;
    else
        qps_[q->qpn - qpn_base_] = nullptr;
    qp_counters_add(dead_qp_cnt_, q->cnt);
    sq_bytes_ -= sq_slot_bytes(q);
    sq_stream_update();
    drop_events_of(q);
    --q->pd->usecnt;
    --q->scq->usecnt;
    --q->rcq->usecnt;
    if (q->srq) --q->srq->usecnt;
    return erase_owned(qps_owned_, q) ? verbs_error::ok : verbs_error::inval;
}

} // namespace uroce

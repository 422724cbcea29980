/* SPDX-License-Identifier: BSD-3-Clause
 * The verbs API: argument checks and forwarding to the transport objects.
 */
#include <uroce/verbs.h>

#include <cstring>

#include "uroce_device.h"
#include "uroce_psn.h"

namespace uroce {

const char *verbs_error_str(verbs_error e) {
    switch (e) {
    case verbs_error::ok:
        return "ok";
    case verbs_error::perm:
        return "EPERM";
    case verbs_error::noent:
        return "ENOENT";
    case verbs_error::again:
        return "EAGAIN";
    case verbs_error::nomem:
        return "ENOMEM";
    case verbs_error::busy:
        return "EBUSY";
    case verbs_error::inval:
        return "EINVAL";
    case verbs_error::notsup:
        return "EOPNOTSUPP";
    }
    return "unknown";
}

const char *wc_status_str(wc_status s) {
    static const char *const names[] = {"success",
                                        "local length error",
                                        "local QP operation error",
                                        "local EE context operation error",
                                        "local protection error",
                                        "Work Request Flushed Error",
                                        "memory management operation error",
                                        "bad response error",
                                        "local access error",
                                        "remote invalid request error",
                                        "remote access error",
                                        "remote operation error",
                                        "transport retry counter exceeded",
                                        "RNR retry counter exceeded",
                                        "local RDD violation error",
                                        "remote invalid RD request",
                                        "aborted error",
                                        "invalid EE context number",
                                        "invalid EE context state",
                                        "fatal error",
                                        "response timeout error",
                                        "general error"};
    unsigned i = unsigned(s);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

const char *qp_state_str(qp_state s) {
    static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    unsigned i = unsigned(s);
    return i < 7 ? names[i] : "UNKNOWN";
}

template <class T> static T *set_err(verbs_error *err, verbs_error e) {
    if (err) *err = e;
    return nullptr;
}

device *open_device(const device_config &cfg, verbs_error *err) {
    if (!cfg.dev || !cfg.pool || cfg.num_gids == 0 || cfg.num_gids > 4 || cfg.max_qp == 0 ||
        cfg.max_qp > (1u << 20) || cfg.max_mr == 0 || cfg.max_mr >= (1u << 16) ||
        !mtu_valid(cfg.max_mtu))
        return set_err<device>(err, verbs_error::inval);
    /* The QPN range: not QP0/QP1, and every QPN fits the BTH's 24 bits. */
    if (cfg.first_qpn < 2 || uint64_t(cfg.first_qpn) + cfg.max_qp > (1u << 24))
        return set_err<device>(err, verbs_error::inval);
    if (err) *err = verbs_error::ok;
    return new device(cfg);
}

verbs_error close_device(device *ctx) {
    if (!ctx) return verbs_error::inval;
    delete ctx;
    return verbs_error::ok;
}

verbs_error query_device(device *ctx, device_attr *a) {
    if (!ctx || !a) return verbs_error::inval;
    *a = device_attr{};
    a->max_mr_size = max_msg_size;
    a->max_qp = ctx->config().max_qp;
    a->max_qp_wr = max_qp_wr_limit;
    a->max_sge = max_sge_limit;
    a->max_cq = 1u << 16;
    a->max_cqe = max_cqe_limit;
    a->max_mr = ctx->config().max_mr;
    a->max_pd = 1u << 16;
    a->max_qp_rd_atom = max_rd_atomic_limit;
    a->max_qp_init_rd_atom = max_rd_atomic_limit;
    a->max_srq_wr = max_qp_wr_limit;
    a->max_inline_data = max_inline_limit;
    a->max_msg_sz = max_msg_size;
    a->max_mtu = ctx->config().max_mtu;
    return verbs_error::ok;
}

verbs_error query_gid(device *ctx, uint8_t port_num, int index, gid *out) {
    if (!ctx || !out || port_num != 1 || index < 0 || unsigned(index) >= ctx->config().num_gids)
        return verbs_error::inval;
    *out = ctx->config().gids[index];
    return verbs_error::ok;
}

pd *alloc_pd(device *ctx, verbs_error *err) {
    if (!ctx) return set_err<pd>(err, verbs_error::inval);
    if (err) *err = verbs_error::ok;
    return ctx->alloc_pd();
}
verbs_error dealloc_pd(pd *p) {
    return p ? p->dev->dealloc_pd(p) : verbs_error::inval;
}

mr *reg_mr(pd *p, void *addr, size_t length, unsigned access, verbs_error *err) {
    if (!p || length > max_msg_size) return set_err<mr>(err, verbs_error::inval);
    return p->dev->reg_mr(p, addr, length, access, err);
}
verbs_error dereg_mr(mr *m) {
    return m ? m->dev->dereg_mr(m) : verbs_error::inval;
}
uint32_t mr_lkey(const mr *m) {
    return m->lkey;
}
uint32_t mr_rkey(const mr *m) {
    return m->rkey;
}

cq *create_cq(device *ctx, int cqe, void *cq_context, verbs_error *err) {
    if (!ctx) return set_err<cq>(err, verbs_error::inval);
    return ctx->create_cq(cqe, cq_context, err);
}
verbs_error destroy_cq(cq *c) {
    return c ? c->dev->destroy_cq(c) : verbs_error::inval;
}
int poll_cq(cq *c, int num, wc *out) {
    if (!c || num < 0 || (num && !out)) return -int(EINVAL);
    return cq_poll(c, num, out);
}
verbs_error resize_cq(cq *c, int cqe) {
    return c ? c->dev->resize_cq(c, cqe) : verbs_error::inval;
}
uint32_t cq_size(const cq *c) {
    return c->cqe;
}
uint32_t cq_count(const cq *c) {
    return c->count();
}

srq *create_srq(pd *p, const srq_init_attr &attr, verbs_error *err) {
    if (!p) return set_err<srq>(err, verbs_error::inval);
    return p->dev->create_srq(p, attr, err);
}
verbs_error destroy_srq(srq *s) {
    return s ? s->dev->destroy_srq(s) : verbs_error::inval;
}
verbs_error post_srq_recv(srq *s, recv_wr *wr, recv_wr **bad_wr) {
    if (!s) return verbs_error::inval;
    return recv_ring_post(s->rq, wr, bad_wr);
}
verbs_error modify_srq(srq *s, const srq_attr &attr, unsigned attr_mask) {
    return s ? s->dev->modify_srq(s, attr, attr_mask) : verbs_error::inval;
}
verbs_error query_srq(srq *s, srq_attr *attr) {
    if (!s || !attr) return verbs_error::inval;
    attr->max_wr = s->rq.max_wr();
    attr->max_sge = s->rq.max_sge();
    attr->srq_limit = s->rq.limit();
    return verbs_error::ok;
}

bool get_async_event(device *d, async_event *ev) {
    return d && ev && d->next_event(ev);
}

ah *create_ah(pd *p, const ah_attr &attr, verbs_error *err) {
    if (!p) return set_err<ah>(err, verbs_error::inval);
    return p->dev->create_ah(p, attr, err);
}
verbs_error destroy_ah(ah *a) {
    return a ? a->dev->destroy_ah(a) : verbs_error::inval;
}

qp *create_qp(pd *p, const qp_init_attr &attr, verbs_error *err) {
    if (!p) return set_err<qp>(err, verbs_error::inval);
    return p->dev->create_qp(p, attr, err);
}
verbs_error modify_qp(qp *q, const qp_attr &attr, unsigned attr_mask) {
    if (!q) return verbs_error::inval;
    return qp_modify(q, attr, attr_mask);
}
verbs_error query_qp(qp *q, qp_attr *attr, unsigned /*attr_mask*/, qp_init_attr *init_attr) {
    if (!q || !attr) return verbs_error::inval;
    *attr = q->attr;
    attr->qp_state = q->state;
    attr->cur_qp_state = q->state;
    attr->cap = q->cap;
    if (init_attr) {
        init_attr->qp_context = q->qp_context;
        init_attr->send_cq = q->scq;
        init_attr->recv_cq = q->rcq;
        init_attr->srq = q->srq;
        init_attr->cap = q->cap;
        init_attr->qp_type = q->type;
        init_attr->sq_sig_all = q->sq_sig_all;
    }
    return verbs_error::ok;
}
qp *create_gsi_qp(pd *p, const qp_init_attr &attr, verbs_error *err) {
    if (!p) return set_err<qp>(err, verbs_error::inval);
    return p->dev->create_gsi_qp(p, attr, err);
}

verbs_error destroy_qp(qp *q) {
    return q ? q->dev->destroy_qp(q) : verbs_error::inval;
}
uint32_t qp_num(const qp *q) {
    return q->qpn;
}

verbs_error post_send(qp *q, send_wr *wr, send_wr **bad_wr) {
    if (!q || !wr) return verbs_error::inval;
    return req_post_send(q, wr, bad_wr);
}

verbs_error post_recv(qp *q, recv_wr *wr, recv_wr **bad_wr) {
    if (!q || !wr) return verbs_error::inval;
    if (q->srq || q->state == qp_state::reset) {
        if (bad_wr) *bad_wr = wr;
        return verbs_error::inval;
    }
    verbs_error e = recv_ring_post(q->rq, wr, bad_wr);
    if (e == verbs_error::ok && q->state == qp_state::err) qp_flush(q);
    return e;
}

/* ---------------------------------------------------------------- counters */

const dev_counters &device_counters(const device *d) {
    return d->counters();
}

qp_counters device_qp_counters(const device *d) {
    return d->qp_totals();
}

const qp_counters &qp_counters_of(const qp *q) {
    return q->cnt;
}

qp_cc_info qp_cc_query(const qp *q) {
    qp_cc_info i;
    i.paced = q->cc.paced;
    i.dcqcn = q->cc.dcqcn;
    if (q->cc.paced) {
        i.rate_mbps = uint64_t(q->cc.rc + 0.5);
        i.target_mbps = uint64_t(q->cc.rt + 0.5);
        i.lowest_mbps = uint64_t(q->cc.rc_lowest + 0.5);
    }
    i.alpha = q->cc.alpha;
    return i;
}

void for_each_qp(const device *d, const std::function<void(const qp *)> &fn) {
    d->for_each_qp(fn);
}

} // namespace uroce

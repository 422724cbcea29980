/* SPDX-License-Identifier: BSD-3-Clause
 * QP state machine and attribute validation (IBTA 10.3.1, table 91 "QP state
 * transition properties"; the same table as Linux ib_modify_qp_is_ok()).
 */
#include "uroce_qp.h"

#include <array>
#include <bit>
#include <cstring>

#include "uroce_cq.h"
#include "uroce_device.h"
#include <uroce/flow.h>
#include "uroce_psn.h"

namespace uroce {

/* IBTA 9.7.6.1.3: Local ACK Timeout = 4.096 us * 2^timeout; 0 disables it. */
uint64_t local_ack_timeout_ns(uint8_t timeout) {
    if (timeout == 0) return 0;
    return 4096ull << timeout;
}

/* IBTA 9.7.5.2.8 table 45: RNR NAK timer codes, in units of 10 us (code 0 is 655.36 ms). */
uint64_t rnr_timer_ns(uint8_t code) {
    static constexpr uint32_t usec_x100[32] = {
        65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
        48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
        2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
    return uint64_t(usec_x100[code & 31]) * 10000ull;
}

/* ---- QP state transitions: constexpr data, as the kernel's qp_state_table
 * (drivers/infiniband/core/verbs.c, read by ib_modify_qp_is_ok()), from
 * IBTA 10.3.1 table 91 "QP state transition properties".
 *
 * qp_state_table[cur][next][type] says whether a QP of that type may go
 * from cur to next, which attributes it must then set, and which others it
 * may set; any attribute outside req | opt makes the modify invalid. */

namespace {

/* Which attributes one transition requires and allows, for one QP type. */
struct qp_transition {
    bool allowed = false;
    unsigned req = 0;
    unsigned opt = 0;
};

constexpr size_t num_qp_states = size_t(qp_state::err) + 1;
constexpr size_t num_qp_types = 3; /* RC, UC, UD */

constexpr size_t type_index(qp_type t) {
    return size_t(t) - size_t(qp_type::rc);
}
static_assert(type_index(qp_type::rc) == 0 && type_index(qp_type::uc) == 1 &&
              type_index(qp_type::ud) == 2);

using qp_state_rules =
    std::array<std::array<std::array<qp_transition, num_qp_types>, num_qp_states>, num_qp_states>;

constexpr qp_state_rules make_qp_state_table() {
    using S = qp_state;
    qp_state_rules t{};
    /* set(cur, next, {RC}, {UC}, {UD}) */
    auto set = [&t](S cur, S next, qp_transition rc, qp_transition uc, qp_transition ud) {
        t[size_t(cur)][size_t(next)] = {rc, uc, ud};
    };
    constexpr qp_transition none{true, 0, 0}; /* allowed, no attributes */
    constexpr qp_transition never{};          /* not allowed for this QP type */
    constexpr unsigned pkey_port = qp_attr_pkey_index | qp_attr_port;
    /* what RTS -> RTS and SQD -> RTS may change (the same for both) */
    constexpr unsigned rts_opt_rc = qp_attr_cur_state | qp_attr_access_flags | qp_attr_alt_path |
                                    qp_attr_path_mig_state | qp_attr_min_rnr_timer;
    constexpr unsigned rts_opt_uc =
        qp_attr_cur_state | qp_attr_access_flags | qp_attr_alt_path | qp_attr_path_mig_state;
    constexpr unsigned rts_opt_ud = qp_attr_cur_state | qp_attr_qkey;

    /* Any state may go to RESET or ERR, with no attributes. */
    for (size_t cur = 0; cur < num_qp_states; ++cur) {
        set(S(cur), S::reset, none, none, none);
        set(S(cur), S::err, none, none, none);
    }
    set(S::reset, S::init, {true, pkey_port | qp_attr_access_flags, 0},
        {true, pkey_port | qp_attr_access_flags, 0}, {true, pkey_port | qp_attr_qkey, 0});
    set(S::init, S::init, {true, 0, pkey_port | qp_attr_access_flags},
        {true, 0, pkey_port | qp_attr_access_flags}, {true, 0, pkey_port | qp_attr_qkey});
    set(S::init, S::rtr,
        {true,
         qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn |
             qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer,
         qp_attr_alt_path | qp_attr_access_flags | qp_attr_pkey_index | qp_attr_selective_repeat},
        {true, qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn,
         qp_attr_alt_path | qp_attr_access_flags | qp_attr_pkey_index},
        {true, 0, qp_attr_pkey_index | qp_attr_qkey});
    set(S::rtr, S::rts,
        {true,
         qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry |
             qp_attr_max_qp_rd_atomic,
         rts_opt_rc},
        {true, qp_attr_sq_psn, rts_opt_uc}, {true, qp_attr_sq_psn, rts_opt_ud});
    set(S::rts, S::rts, {true, 0, rts_opt_rc}, {true, 0, rts_opt_uc}, {true, 0, rts_opt_ud});
    set(S::rts, S::sqd, {true, 0, qp_attr_en_sqd_async_notify},
        {true, 0, qp_attr_en_sqd_async_notify}, {true, 0, qp_attr_en_sqd_async_notify});
    set(S::sqd, S::rts, {true, 0, rts_opt_rc}, {true, 0, rts_opt_uc}, {true, 0, rts_opt_ud});
    set(S::sqd, S::sqd,
        {true, 0,
         qp_attr_pkey_index | qp_attr_av | qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry |
             qp_attr_max_qp_rd_atomic | qp_attr_max_dest_rd_atomic | qp_attr_cur_state |
             qp_attr_alt_path | qp_attr_access_flags | qp_attr_min_rnr_timer |
             qp_attr_path_mig_state},
        {true, 0,
         qp_attr_pkey_index | qp_attr_av | qp_attr_cur_state | qp_attr_alt_path |
             qp_attr_access_flags | qp_attr_path_mig_state},
        {true, 0, qp_attr_pkey_index | qp_attr_qkey});
    /* RC never enters SQE (IBTA 10.3.1.7); UC and UD leave it this way. */
    set(S::sqe, S::rts, never, {true, 0, qp_attr_cur_state | qp_attr_access_flags},
        {true, 0, qp_attr_cur_state | qp_attr_qkey});
    return t;
}

constexpr qp_state_rules qp_state_table = make_qp_state_table();

static_assert(qp_state_table[size_t(qp_state::rts)][size_t(qp_state::sqd)][0].allowed);
static_assert(!qp_state_table[size_t(qp_state::sqe)][size_t(qp_state::rts)][0].allowed);
static_assert(!qp_state_table[size_t(qp_state::init)][size_t(qp_state::rts)][2].allowed);

} // namespace

bool qp_modify_is_ok(qp_state cur, qp_state next, qp_type type, unsigned mask) {
    if (size_t(cur) >= num_qp_states || size_t(next) >= num_qp_states ||
        type_index(type) >= num_qp_types)
        return false;
    const qp_transition &r = qp_state_table[size_t(cur)][size_t(next)][type_index(type)];
    if (!r.allowed) return false;
    unsigned attrs = mask & ~unsigned(qp_attr_state);
    if ((attrs & r.req) != r.req) return false;
    if (attrs & ~(r.req | r.opt)) return false;
    return true;
}

verbs_error qp_init(qp *q, const qp_init_attr &a) {
    if (a.qp_type != qp_type::rc && a.qp_type != qp_type::uc && a.qp_type != qp_type::ud)
        return verbs_error::inval;
    if (!a.send_cq || !a.recv_cq) return verbs_error::inval;
    if (a.cap.max_send_wr > max_qp_wr_limit || a.cap.max_recv_wr > max_qp_wr_limit ||
        a.cap.max_send_sge > max_sge_limit || a.cap.max_recv_sge > max_sge_limit ||
        a.cap.max_inline_data > max_inline_limit)
        return verbs_error::inval;
    q->type = a.qp_type;
    q->scq = a.send_cq;
    q->rcq = a.recv_cq;
    q->srq = a.srq;
    q->qp_context = a.qp_context;
    q->sq_sig_all = a.sq_sig_all != 0;
    q->cap = a.cap;
    if (q->cap.max_send_sge == 0) q->cap.max_send_sge = 1;
    if (q->cap.max_recv_sge == 0) q->cap.max_recv_sge = 1;
    uint32_t n = std::bit_ceil(q->cap.max_send_wr < 1 ? 1u : q->cap.max_send_wr);
    q->sq = make_hugemem_array<send_wqe>(n);
    q->sq_max_sge = q->cap.max_send_sge;
    if (q->sq_max_sge > 1) q->sq_sges = make_hugemem_array<sge>(size_t(n) * q->sq_max_sge);
    if (q->cap.max_inline_data)
        q->sq_inline = make_hugemem_array<uint8_t>(size_t(n) * q->cap.max_inline_data);
    q->sq_atomic = make_hugemem_array<wqe_atomic>(n);
    q->sq_mask = n - 1;
    if (!a.srq) q->rq.init(q->cap.max_recv_wr, q->cap.max_recv_sge);
    uint32_t rsge = a.srq ? a.srq->rq.max_sge() : q->cap.max_recv_sge;
    if (rsge > 1) {
        q->resp.wqe_sg_more = make_hugemem_array<sge>(rsge);
        q->resp.wqe_sg = q->resp.wqe_sg_more.get();
    } else {
        q->resp.wqe_sg = &q->resp.wqe_sg_one;
    }
    q->resp.res_slots = max_rd_atomic_limit;
    q->resp.res = make_hugemem_array<rd_resource>(q->resp.res_slots);
    q->resp.reply_fifo = make_hugemem_array<uint16_t>(q->resp.res_slots * 2);
    q->resp.reply_fifo_mask = q->resp.res_slots * 2 - 1;
    q->retrans_timer.fn = comp_retrans_timeout;
    q->retrans_timer.arg = q;
    q->rnr_timer.fn = comp_rnr_timeout;
    q->rnr_timer.arg = q;
    q->probe_timer.fn = loss_probe_timeout;
    q->probe_timer.arg = q;
    q->attr.cap = q->cap;
    q->attr.qp_state = qp_state::reset;
    q->state = qp_state::reset;
    q->mtu = 256;
    return verbs_error::ok;
}

/* Drop all transport state (to RESET). The posted work is discarded, as on
 * hardware: RESET empties the queues without completions. */
static void qp_reset(qp *q) {
    device *d = q->dev;
    d->timers().cancel(q->retrans_timer);
    d->timers().cancel(q->rnr_timer);
    q->sq_head = q->sq_comp = 0;
    if (!q->srq) q->rq.init(q->cap.max_recv_wr, q->cap.max_recv_sge);
    q->req = decltype(q->req){};
    q->comp = decltype(q->comp){};
    loss_reset(q);
    resp_reset(q);
    sr_reset(q);
}

void qp_flush(qp *q) {
    /* IBTA 10.3.1.11 (Error state): every outstanding WR completes with
     * "flushed in error", signaled or not. */
    for (; q->sq_comp != q->sq_head; ++q->sq_comp) {
        send_wqe &w = sq_at(q, q->sq_comp);
        post_send_cqe(q, w, wc_status::wr_flush_err);
    }
    q->req.wqe = q->sq_head;
    q->req.offset = 0;
    if (q->resp.have_wqe) {
        post_recv_cqe(q, q->resp.wqe_id, wc_status::wr_flush_err, wc_opcode::recv, 0, 0, 0, 0);
        q->resp.have_wqe = false;
    }
    if (!q->srq) {
        while (!q->rq.empty()) {
            post_recv_cqe(q, q->rq.front().wr_id, wc_status::wr_flush_err, wc_opcode::recv, 0, 0, 0,
                          0);
            q->rq.pop();
        }
    }
}

void qp_to_sqe(qp *q) {
    /* IBTA 10.3.1.7: a UC/UD send-side error stops the send queue only; what
     * is left on it is flushed, the receive side keeps working, and
     * modify_qp(SQE -> RTS) resumes. */
    if (q->state == qp_state::err) return;
    q->state = qp_state::sqe;
    q->attr.qp_state = qp_state::sqe;
    for (; q->sq_comp != q->sq_head; ++q->sq_comp)
        post_send_cqe(q, sq_at(q, q->sq_comp), wc_status::wr_flush_err);
    q->req.wqe = q->sq_head;
    q->req.offset = 0;
}

void qp_to_error(qp *q) {
    if (q->state == qp_state::err) return;
    q->state = qp_state::err;
    q->attr.qp_state = qp_state::err;
    q->dev->timers().cancel(q->retrans_timer);
    q->dev->timers().cancel(q->rnr_timer);
    q->dev->timers().cancel(q->probe_timer);
    q->req.need_retry = false;
    q->req.rnr_wait = false;
    q->resp.ack_pending = false;
    q->resp.reply_fifo_head = q->resp.reply_fifo_tail = 0;
    qp_flush(q);
    /* IBTA 11.6.3.1 (Last WQE Reached): a QP on an SRQ that enters ERR
     * takes no more WQEs from it; the application learns that it may now
     * destroy the QP. rxe raises it when the ERR QP's receive side is
     * flushed (rxe_resp.c flush_recv_queue), whoever moved it to ERR. */
    if (q->srq) qp_raise_event(q, event_type::qp_last_wqe_reached);
}

static verbs_error validate_values(qp *q, const qp_attr &a, unsigned mask) {
    device *d = q->dev;
    if ((mask & qp_attr_cur_state) && a.cur_qp_state != q->state) return verbs_error::inval;
    if ((mask & qp_attr_port) && a.port_num != 1) return verbs_error::inval;
    if ((mask & qp_attr_pkey_index) && a.pkey_index != 0) return verbs_error::inval;
    if ((mask & qp_attr_path_mtu) &&
        (!mtu_valid(a.path_mtu) || unsigned(a.path_mtu) > unsigned(d->config().max_mtu)))
        return verbs_error::inval;
    if ((mask & qp_attr_dest_qpn) && a.dest_qp_num > psn_mask) return verbs_error::inval;
    if ((mask & qp_attr_rq_psn) && a.rq_psn > psn_mask) return verbs_error::inval;
    if ((mask & qp_attr_sq_psn) && a.sq_psn > psn_mask) return verbs_error::inval;
    if ((mask & qp_attr_timeout) && a.timeout > 31) return verbs_error::inval;
    if ((mask & qp_attr_retry_cnt) && a.retry_cnt > 7) return verbs_error::inval;
    if ((mask & qp_attr_rnr_retry) && a.rnr_retry > 7) return verbs_error::inval;
    if ((mask & qp_attr_min_rnr_timer) && a.min_rnr_timer > 31) return verbs_error::inval;
    if ((mask & qp_attr_max_qp_rd_atomic) && a.max_rd_atomic > max_rd_atomic_limit)
        return verbs_error::inval;
    if ((mask & qp_attr_max_dest_rd_atomic) && a.max_dest_rd_atomic > max_rd_atomic_limit)
        return verbs_error::inval;
    if ((mask & qp_attr_access_flags) &&
        (a.qp_access_flags & ~unsigned(access_local_write | access_remote_write |
                                       access_remote_read | access_remote_atomic)))
        return verbs_error::inval;
    if ((mask & qp_attr_selective_repeat) && a.selective_repeat > 1) return verbs_error::inval;
    if ((mask & qp_attr_en_sqd_async_notify) && a.en_sqd_async_notify > 1)
        return verbs_error::inval;
    if (mask & (qp_attr_alt_path | qp_attr_path_mig_state)) return verbs_error::notsup;
    if (mask & qp_attr_cap) return verbs_error::inval;
    return verbs_error::ok;
}

verbs_error qp_modify(qp *q, const qp_attr &a, unsigned mask) {
    device *d = q->dev;
    qp_state cur = q->state;
    qp_state next = (mask & qp_attr_state) ? a.qp_state : cur;
    if (unsigned(next) > unsigned(qp_state::err)) return verbs_error::inval;
    if (!qp_modify_is_ok(cur, next, q->type, mask)) return verbs_error::inval;
    verbs_error e = validate_values(q, a, mask);
    if (e != verbs_error::ok) return e;
    /* QP1's Q_Key is the GSI's (IBTA 13.4.6.1). */
    if (q->qpn == gsi_qp_num && (mask & qp_attr_qkey) && a.qkey != gsi_qp_qkey)
        return verbs_error::inval;

    roce_path path = q->path;
    if (mask & qp_attr_av) {
        uint32_t dqpn = (mask & qp_attr_dest_qpn) ? a.dest_qp_num : q->attr.dest_qp_num;
        e = d->resolve_path(a.ah_attr, q->qpn, dqpn, q->type, path);
        if (e != verbs_error::ok) return e;
    }

    /* All checks passed: apply. */
    qp_attr &s = q->attr;
    if (mask & qp_attr_access_flags) s.qp_access_flags = a.qp_access_flags;
    if (mask & qp_attr_pkey_index) s.pkey_index = a.pkey_index;
    if (mask & qp_attr_port) s.port_num = a.port_num;
    if (mask & qp_attr_qkey) s.qkey = a.qkey;
    if (mask & qp_attr_av) {
        s.ah_attr = a.ah_attr;
        q->path = path;
        make_hdr_template(q->hdr, q->path, d->dev()->caps().ipv4_csum_offload);
    }
    if (mask & qp_attr_path_mtu) {
        s.path_mtu = a.path_mtu;
        q->mtu = mtu_to_bytes(a.path_mtu);
    }
    if (mask & qp_attr_timeout) s.timeout = a.timeout;
    if (mask & qp_attr_retry_cnt) {
        s.retry_cnt = a.retry_cnt;
        q->comp.retry_left = a.retry_cnt;
    }
    if (mask & qp_attr_rnr_retry) {
        s.rnr_retry = a.rnr_retry;
        q->comp.rnr_left = a.rnr_retry;
    }
    if (mask & qp_attr_rq_psn) {
        s.rq_psn = a.rq_psn;
        q->resp.psn = a.rq_psn;
    }
    if (mask & qp_attr_sq_psn) {
        s.sq_psn = a.sq_psn;
        q->req.psn = a.sq_psn;
        q->req.max_psn_sent = a.sq_psn;
        q->comp.psn = a.sq_psn;
    }
    if (mask & qp_attr_min_rnr_timer) s.min_rnr_timer = a.min_rnr_timer;
    if (mask & qp_attr_max_qp_rd_atomic) s.max_rd_atomic = a.max_rd_atomic;
    if (mask & qp_attr_max_dest_rd_atomic) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
    if (mask & qp_attr_dest_qpn) s.dest_qp_num = a.dest_qp_num;
    if (mask & qp_attr_en_sqd_async_notify) s.en_sqd_async_notify = a.en_sqd_async_notify;
    if (mask & qp_attr_selective_repeat) s.selective_repeat = a.selective_repeat;
    if ((mask & qp_attr_dest_qpn) && !(mask & qp_attr_av) && q->type != qp_type::ud) {
        /* the UDP source port depends on both QPNs */
        q->path.flow_label = calc_flow_label(q->qpn, s.dest_qp_num);
        q->path.udp_sport = flow_label_to_udp_sport(q->path.flow_label);
        make_hdr_template(q->hdr, q->path, d->dev()->caps().ipv4_csum_offload);
    }

    if (next != cur) {
        switch (next) {
        case qp_state::reset:
            qp_reset(q);
            q->state = next;
            break;
        case qp_state::err:
            qp_to_error(q);
            break;
        default:
            q->state = next;
            break;
        }
        s.qp_state = q->state;
        s.sq_draining = next == qp_state::sqd;
        if (next == qp_state::rtr) q->comm_est_raised = false;
        if (next == qp_state::sqd) qp_sq_drain_check(q); /* nothing in flight: at once */
        if (next == qp_state::rts || next == qp_state::err) d->schedule(q);
    }
    return verbs_error::ok;
}

/* IBTA 10.3.1.6: SQD finishes the message in progress and starts no new
 * one; the drain is over when the requester stands at a WQE boundary and
 * every WQE it issued has completed (go-back-N may have moved it back onto
 * an issued one: not drained). IBTA 11.6.3.1 raises SQ Drained when the
 * move to SQD asked for it (en_sqd_async_notify, ibv_modify_qp(3)); rxe
 * raises it whatever that says (rxe_req.c, rxe_comp.c). */
void qp_sq_drain_check(qp *q) {
    if (q->state != qp_state::sqd || !q->attr.sq_draining) return;
    if (q->req.offset != 0 || q->req.wqe != q->sq_comp) return;
    if (q->sq_comp != q->sq_head && sq_at(q, q->sq_comp).state != wqe_state::posted) return;
    q->attr.sq_draining = 0;
    if (q->attr.en_sqd_async_notify) qp_raise_event(q, event_type::sq_drained);
}

} // namespace uroce

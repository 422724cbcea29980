/* SPDX-License-Identifier: BSD-3-Clause
 * Responder (rxe_resp.c's job): PSN and opcode-sequence checks, receive WQE
 * consumption, SEND/WRITE placement, READ and atomic execution through
 * responder resources, duplicate handling (IBTA 9.9.2, C9-105..C9-115),
 * RNR and error NAKs, and coalesced ACKs.
 *
 * Response order: READ responses and atomic ACKs are queued per QP (reply_fifo)
 * and streamed from poll(); a coalesced ACK/NAK is sent only after the
 * queue drains, so the requester always sees responses in PSN order.
 */
#include <cstring>

#include <rte_mbuf.h>

#include "uroce_cq.h"
#include "uroce_device.h"
#include "uroce_psn.h"
#include "uroce_qp.h"

namespace uroce {

void resp_reset(qp *q) {
    auto &r = q->resp;
    r.psn = 0;
    r.msn = 0;
    r.nak_sent = false;
    r.in_msg = r.none;
    r.uc_drop = false;
    r.have_wqe = false;
    r.recv_off = 0;
    r.write_va = r.write_len = r.write_off = 0;
    r.ack_pending = false;
    r.res_next = 0;
    r.reply_fifo_head = r.reply_fifo_tail = 0;
    for (uint32_t i = 0; i < r.res_slots; ++i)
        r.res[i] = rd_resource{};
}

bool resp_has_work(const qp *q) {
    return q->resp.ack_pending || q->resp.reply_fifo_head != q->resp.reply_fifo_tail;
}

static void set_ack(qp *q, uint8_t syndrome, uint32_t psn) {
    /* One ACK/NAK per burst covers everything before it. A pending NAK is
     * replaced only by a response for its PSN or later (the lost packet has
     * arrived since); a re-ACK for a duplicate must not hide it. */
    if (q->resp.ack_pending &&
        aeth_syndrome::type(q->resp.ack_syndrome) != aeth_syndrome::type_ack &&
        psn_diff(psn, q->resp.ack_psn) < 0)
        return;
    q->resp.ack_pending = true;
    q->resp.ack_syndrome = syndrome;
    q->resp.ack_psn = psn;
    q->dev->schedule(q);
}

void resp_queue_ack(qp *q, uint8_t syndrome, uint32_t psn) {
    set_ack(q, syndrome, psn);
}

static bool send_ack_pkt(qp *q, uint8_t syndrome, uint32_t psn, uint32_t msn) {
    device *d = q->dev;
    bth_fields b;
    ext_fields x;
    b.opcode = to_u8(ib_opcode::rc_acknowledge);
    b.dest_qp = q->attr.dest_qp_num;
    b.psn = psn;
    x.syndrome = syndrome;
    x.msn = msn;
    bool icrc_due;
    rte_mbuf *m = d->build(q->hdr, b, x, nullptr, 0, &icrc_due);
    if (!m) {
        ++d->cnt().tx_alloc_fail;
        return false;
    }
    d->tx(m, icrc_due);
    ++q->cnt.tx_pkts;
    ++q->cnt.tx_acks;
    return true;
}

/* IBTA 11.6.3.1: the responder's work queue errors are affiliated
 * asynchronous events, as NICs raise them (rxe raises none): Invalid Request
 * / Local Access Violation / Local Work Queue Catastrophic Error. */
static event_type fatal_nak_event(uint8_t nak_code) {
    switch (nak_code) {
    case aeth_syndrome::nak_invalid_request:
        return event_type::qp_req_err;
    case aeth_syndrome::nak_remote_access_error:
        return event_type::qp_access_err;
    default:
        return event_type::qp_fatal;
    }
}

/* Class C / D errors the responder cannot recover from (IBTA 9.9.3.1): NAK
 * at once, then the QP goes to Error (and the application hears of it). */
static void nak_fatal(qp *q, uint8_t nak_code, uint32_t psn) {
    switch (nak_code) {
    case aeth_syndrome::nak_invalid_request:
        ++q->cnt.inv_req_naks_sent;
        break;
    case aeth_syndrome::nak_remote_access_error:
        ++q->cnt.access_naks_sent;
        break;
    default:
        ++q->cnt.op_naks_sent;
        break;
    }
    if (q->type == qp_type::rc) {
        send_ack_pkt(q, aeth_syndrome::make_nak(nak_code), psn, q->resp.msn);
        qp_raise_event(q, fatal_nak_event(nak_code));
    }
    qp_to_error(q);
}

static recv_ring *recv_queue(qp *q) {
    return q->srq ? &q->srq->rq : &q->rq;
}
static const pd *recv_pd(qp *q) {
    return q->srq ? q->srq->pd : q->pd;
}

static bool get_recv_wqe(qp *q) {
    auto &r = q->resp;
    if (r.have_wqe) return true;
    recv_ring *rq = recv_queue(q);
    if (rq->empty()) return false;
    recv_wqe &w = rq->front();
    r.wqe_id = w.wr_id;
    r.wqe_num_sge = w.num_sge;
    r.wqe_len = w.length;
    const sge *sg = w.sgl();
    for (uint32_t i = 0; i < w.num_sge; ++i)
        r.wqe_sg[i] = sg[i];
    rq->pop();
    /* an armed SRQ below its limit (never true for a QP's own ring) */
    if (rq->below_limit()) [[unlikely]]
        srq_limit_reached(q->srq);
    r.have_wqe = true;
    r.recv_off = 0;
    return true;
}

enum class recv_copy_status { ok, length, prot };

/* Write len bytes into the receive WQE at byte offset off, from flat or from
 * the packet's payload (starting at payload offset poff). */
static recv_copy_status copy_to_recv_wqe(qp *q, uint64_t off, const uint8_t *flat,
                                         const roce_packet *p, rte_mbuf *m, uint32_t poff,
                                         uint32_t len) {
    auto &r = q->resp;
    if (off + len > r.wqe_len) return recv_copy_status::length;
    uint32_t i = 0;
    while (i < r.wqe_num_sge && off >= r.wqe_sg[i].length)
        off -= r.wqe_sg[i++].length;
    uint32_t done = 0;
    while (done < len && i < r.wqe_num_sge) {
        const sge &s = r.wqe_sg[i];
        uint64_t avail = s.length - off;
        uint32_t c = avail < len - done ? uint32_t(avail) : len - done;
        mr *mm;
        if (mr_check(q->dev->mrs(), q->resp.lkeys, s.lkey, recv_pd(q), access_local_write,
                     s.addr + off, c, &mm) != mr_status::ok)
            return recv_copy_status::prot;
        uint8_t *dst = reinterpret_cast<uint8_t *>(s.addr + off);
        if (flat)
            std::memcpy(dst, flat + done, c);
        else
            q->dev->rx_place(*p, m, poff + done, dst, c);
        done += c;
        off = 0;
        ++i;
    }
    return recv_copy_status::ok;
}

/* The resource for a new READ/atomic (rxe check_resource), or nullptr when
 * the request is beyond max_dest_rd_atomic. Resources are used round-robin,
 * so the next one is the oldest. A requester keeps at most that many READs
 * and atomics outstanding (IBTA 9.7.5.1.4: its max_rd_atomic is at most the
 * peer's max_dest_rd_atomic), so it sends a new one only after it has the
 * oldest's whole response: if that response has not even left yet, the
 * requester is over the limit and gets an Invalid Request NAK (as rxe does
 * for max_dest_rd_atomic 0). A replay still queued for a duplicate is no
 * longer awaited: it is dropped from the queue, and counted. */
static rd_resource *alloc_res(qp *q) {
    auto &r = q->resp;
    uint32_t n = q->attr.max_dest_rd_atomic;
    if (n > r.res_slots) n = r.res_slots;
    if (n == 0) {
        ++q->cnt.rd_atomic_refused;
        return nullptr;
    }
    rd_resource *res = &r.res[r.res_next % n];
    if (res->queued) {
        if (!res->replay) {
            ++q->cnt.rd_atomic_refused;
            return nullptr;
        }
        uint32_t keep = r.reply_fifo_tail;
        uint16_t idx = uint16_t(res - r.res.get());
        for (uint32_t i = r.reply_fifo_tail; i != r.reply_fifo_head; ++i)
            if (r.reply_fifo[i & r.reply_fifo_mask] != idx)
                r.reply_fifo[(keep++) & r.reply_fifo_mask] = r.reply_fifo[i & r.reply_fifo_mask];
        r.reply_fifo_head = keep;
        res->queued = false;
        ++q->cnt.rd_atomic_evicted;
    }
    res->replay = false;
    r.res_next = (r.res_next + 1) % n;
    return res;
}

static void reply_fifo_push(qp *q, rd_resource *res) {
    auto &r = q->resp;
    if (res->queued) return;
    res->queued = true;
    r.reply_fifo[r.reply_fifo_head & r.reply_fifo_mask] = uint16_t(res - r.res.get());
    ++r.reply_fifo_head;
    q->dev->schedule(q);
}

/* Drop queued output for requests after psn: the requester is going back
 * to psn and will ask for them again (go-back-N). */
static void reply_fifo_drop_after(qp *q, uint32_t psn) {
    auto &r = q->resp;
    uint32_t keep = r.reply_fifo_tail;
    for (uint32_t i = r.reply_fifo_tail; i != r.reply_fifo_head; ++i) {
        rd_resource &res = r.res[r.reply_fifo[i & r.reply_fifo_mask]];
        if (psn_diff(res.first_psn, psn) > 0) {
            res.queued = false;
        } else {
            r.reply_fifo[keep & r.reply_fifo_mask] = r.reply_fifo[i & r.reply_fifo_mask];
            ++keep;
        }
    }
    r.reply_fifo_head = keep;
}

/* A request behind the expected PSN (IBTA 9.9.2, C9-105..C9-115; rxe
 * duplicate_request). */
static void duplicate_request(qp *q, const roce_packet &p) {
    auto &r = q->resp;
    const opcode_info &info = *p.info;
    uint32_t psn = p.psn();
    ++q->cnt.dup_requests;
    if (info.has_any(op_flag::send | op_flag::write)) {
        /* C9-105: a duplicate SEND/WRITE is acknowledged, never executed again. */
        set_ack(q, aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits),
                psn_sub(r.psn, 1));
        return;
    }
    if (info.has(op_flag::read)) {
        /* Re-read from the saved resource: the new range must lie inside the
         * original one (checked without overflow: rxe read out of bounds here). */
        const reth *h = p.reth();
        for (uint32_t i = 0; i < r.res_slots; ++i) {
            rd_resource &res = r.res[i];
            if (res.type != rd_resource::read) continue;
            if (psn_diff(psn, res.first_psn) < 0 || psn_diff(psn, res.last_psn) > 0) continue;
            uint64_t va = h->va(), len = h->dma_length();
            if (va < res.va || len > res.length || va - res.va > res.length - len) return;
            uint64_t off = va - res.va;
            if (off != uint64_t(psn_diff(psn, res.first_psn)) * q->mtu) return;
            if (off + len != res.length) return;
            ++q->cnt.dup_reads;
            reply_fifo_drop_after(q, psn);
            res.cur_psn = psn;
            res.cur_off = off;
            res.end_off = res.length;
            if (!res.queued) res.replay = true; /* else its first response is still going */
            reply_fifo_push(q, &res);
            return;
        }
        return; /* no resource: silently dropped (C9-111) */
    }
    if (info.has(op_flag::atomic)) {
        for (uint32_t i = 0; i < r.res_slots; ++i) {
            rd_resource &res = r.res[i];
            if (res.type != rd_resource::atomic || res.first_psn != psn) continue;
            /* C9-114: replay the saved result; never execute twice. */
            ++q->cnt.dup_atomics;
            reply_fifo_drop_after(q, psn);
            res.cur_psn = psn;
            if (!res.queued) res.replay = true;
            reply_fifo_push(q, &res);
            return;
        }
    }
}

static void ud_rcv(qp *q, const roce_packet &p, rte_mbuf *m) {
    const deth *dh = p.deth();
    if (!dh) return;
    if (dh->qkey() != q->attr.qkey) {
        ++q->cnt.ud_qkey_drops; /* IBTA 10.2.4: Q_Key violation, silently dropped */
        return;
    }
    if (!get_recv_wqe(q)) {
        ++q->cnt.ud_no_wqe_drops;
        return;
    }
    auto &r = q->resp;
    /* ibverbs UD: the first 40 bytes of the buffer receive the GRH; for
     * RoCEv2 over IPv4 that is 20 zero bytes and the IPv4 header. */
    uint8_t grh[40] = {};
    if (p.ip_version == 4)
        std::memcpy(grh + 20, p.hdr + p.l3_offset, sizeof(ipv4_hdr));
    else
        std::memcpy(grh, p.hdr + p.l3_offset, sizeof(ipv6_hdr));
    recv_copy_status st = copy_to_recv_wqe(q, 0, grh, nullptr, nullptr, 0, 40);
    if (st == recv_copy_status::ok) st = copy_to_recv_wqe(q, 40, nullptr, &p, m, 0, p.payload_len);
    r.have_wqe = false;
    if (st != recv_copy_status::ok) {
        post_recv_cqe(q, r.wqe_id,
                      st == recv_copy_status::length ? wc_status::loc_len_err
                                                     : wc_status::loc_prot_err,
                      wc_opcode::recv, 0, 0, 0, dh->src_qp());
        return;
    }
    unsigned flags = wc_grh;
    uint32_t imm = 0;
    if (const immdt *i = p.immdt()) {
        flags |= wc_with_imm;
        imm = i->imm_raw();
    }
    ++q->cnt.rx_pkts;
    q->cnt.rx_bytes += p.payload_len;
    post_recv_cqe(q, r.wqe_id, wc_status::success, wc_opcode::recv, 40 + p.payload_len, flags, imm,
                  dh->src_qp());
}

/* ---- The request path, one function per check or stage, in the order
 * rxe_resp.c's states run them. Each check returns true when the packet may
 * go on; on false it has been dealt with (rejected, dropped or NAKed). */

/* A request the responder will not carry out, given as the AETH syndrome an
 * RC requester gets for it. RC: an RNR NAK leaves the QP as it is and the
 * requester retries after the timer (IBTA 9.7.5.2.8); any other NAK is
 * fatal, sent at once before the QP goes to ERR (IBTA 9.9.3.1, class C/D).
 * UC has no NAKs (IBTA 9.8.3): the rest of the message is dropped, up to
 * the next FIRST/ONLY, and counted in uc_counter where one is given. */
static void reject_request(qp *q, uint32_t psn, uint8_t syndrome) {
    auto &r = q->resp;
    if (q->type == qp_type::rc) {
        if (aeth_syndrome::type(syndrome) == aeth_syndrome::type_rnr_nak) {
            ++q->cnt.rnr_naks_sent;
            r.nak_sent = true;
            set_ack(q, syndrome, psn);
        } else {
            nak_fatal(q, aeth_syndrome::value(syndrome), psn);
        }
        return;
    }
    ++q->cnt.uc_dropped; /* UC has no NAK: the counter is the only trace */
    r.uc_drop = true;
    r.in_msg = r.none;
    r.psn = psn_add(psn, 1);
}

static constexpr uint8_t invalid_request_nak =
    aeth_syndrome::make_nak(aeth_syndrome::nak_invalid_request);
static constexpr uint8_t remote_access_nak =
    aeth_syndrome::make_nak(aeth_syndrome::nak_remote_access_error);
static constexpr uint8_t remote_op_nak =
    aeth_syndrome::make_nak(aeth_syndrome::nak_remote_op_error);

/* Receiver not ready: RNR NAK with the QP's min_rnr_timer code (IBTA 9.7.5.2.8). */
static inline uint8_t rnr_nak(const qp *q) {
    return aeth_syndrome::make_rnr_nak(q->attr.min_rnr_timer);
}

/* The QP receives in RTR, RTS, SQD and SQE (IBTA 10.3.1). */
static inline bool check_qp_state(const qp *q) {
    return q->state == qp_state::rtr || q->state == qp_state::rts || q->state == qp_state::sqd ||
           q->state == qp_state::sqe;
}

enum class psn_verdict { in_order, duplicate, dropped };

/* RC (IBTA 9.7.4.1, rxe check_psn): ahead of the expected PSN is out of
 * sequence: one PSN sequence error NAK carrying the expected PSN, then
 * silence until that PSN arrives; behind it is a duplicate. */
static inline psn_verdict check_psn_rc(qp *q, uint32_t psn) {
    auto &r = q->resp;
    int32_t d = psn_diff(psn, r.psn);
    if (d > 0) {
        ++q->cnt.out_of_seq;
        if (!r.nak_sent) {
            r.nak_sent = true;
            ++q->cnt.seq_naks_sent;
            set_ack(q, aeth_syndrome::make_nak(aeth_syndrome::nak_psn_seq_error), r.psn);
        }
        return psn_verdict::dropped;
    }
    if (d < 0) return psn_verdict::duplicate;
    r.nak_sent = false;
    return psn_verdict::in_order;
}

/* UC (IBTA 9.8.3): no ACKs; after a gap drop up to the next FIRST/ONLY. */
static inline psn_verdict check_psn_uc(qp *q, uint32_t psn, const opcode_info &info) {
    auto &r = q->resp;
    if (psn != r.psn || r.uc_drop) {
        if (!info.has(op_flag::first)) {
            r.uc_drop = true;
            r.psn = psn_add(psn, 1);
            ++q->cnt.uc_dropped;
            return psn_verdict::dropped;
        }
        r.uc_drop = false;
        r.in_msg = r.none;
        r.recv_off = 0; /* a partly filled receive WQE is reused */
    }
    return psn_verdict::in_order;
}

static inline psn_verdict check_psn(qp *q, const roce_packet &p) {
    return q->type == qp_type::rc ? check_psn_rc(q, p.psn()) : check_psn_uc(q, p.psn(), *p.info);
}

/* Opcode sequence (IBTA 9.7.4.1, rxe check_op_seq): a MIDDLE/LAST must
 * continue the message in progress; a FIRST/ONLY must not interrupt one. */
static inline bool check_op_seq(const qp *q, const opcode_info &info) {
    const auto &r = q->resp;
    const bool first = info.has(op_flag::first);
    if (r.in_msg == r.none) return first;
    return !first && ((r.in_msg == r.send && info.has(op_flag::send)) ||
                      (r.in_msg == r.write && info.has(op_flag::write)));
}

/* Payload sizes (rxe check_length): FIRST and MIDDLE carry exactly one MTU,
 * LAST 1..MTU, ONLY 0..MTU. */
static inline bool check_length(const qp *q, const roce_packet &p) {
    const opcode_info &info = *p.info;
    if (!info.has_any(op_flag::send | op_flag::write)) return true;
    if (!info.has(op_flag::last)) return p.payload_len == q->mtu;
    if (!info.has(op_flag::first)) return p.payload_len >= 1 && p.payload_len <= q->mtu;
    return p.payload_len <= q->mtu;
}

/* The QP's access flags allow the operation (rxe check_op_valid); a WRITE
 * is checked at its FIRST/ONLY, which carries the RETH. READ and atomics
 * are RC only; FLUSH and ATOMIC_WRITE are not implemented, so invalid. */
static inline bool check_op_valid(const qp *q, const opcode_info &info) {
    const unsigned access = q->attr.qp_access_flags;
    if (info.has(op_flag::send)) return true;
    if (info.has(op_flag::write))
        return !info.has_any(op_flag::first | op_flag::vendor) || (access & access_remote_write);
    if (q->type != qp_type::rc) return false;
    if (info.has(op_flag::read)) return access & access_remote_read;
    if (info.has(op_flag::atomic)) return access & access_remote_atomic;
    return false;
}

/* The R_Key names an MR of the QP's PD that grants access over
 * [va, va+len) (rxe check_rkey). A zero-length request checks no R_Key
 * (IBTA 9.4.5; rxe does the same). A key that names no live MR (unknown,
 * stale, invalidated: what guessing produces) is counted in bad_rkey, a
 * live key used beyond its PD, rights or range in rkey_violations. */
static inline bool check_rkey(qp *q, uint32_t rkey, unsigned access, uint64_t va, uint64_t len) {
    if (len == 0) return true;
    mr *mm;
    switch (mr_check(q->dev->mrs(), q->resp.rkeys, rkey, q->pd, access, va, len, &mm)) {
    case mr_status::ok:
        return true;
    case mr_status::bad_key:
        ++q->cnt.bad_rkey;
        return false;
    default:
        ++q->cnt.rkey_violations;
        return false;
    }
}

/* The request is done: count it, expect the next PSN, and ACK it if the
 * requester asked (AckReq); the ACK is coalesced per burst (set_ack). */
static inline void acknowledge(qp *q, const roce_packet &p) {
    uint32_t psn = p.psn();
    ++q->cnt.rx_pkts;
    q->cnt.rx_bytes += p.payload_len;
    q->resp.psn = psn_add(psn, 1);
    if (q->type == qp_type::rc && p.bth()->ack_req())
        set_ack(q, aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits), psn);
}

/* ---- SEND */

/* Scatter the payload into the receive WQE (rxe send_data_in); a WQE too
 * short or an SGE no longer registered fails the receive. */
static bool execute_send(qp *q, const roce_packet &p, rte_mbuf *m) {
    auto &r = q->resp;
    recv_copy_status st = copy_to_recv_wqe(q, r.recv_off, nullptr, &p, m, 0, p.payload_len);
    /* fused receive: the ICRC's verdict before anything is committed */
    if (!q->dev->rx_trusted_placed()) return false;
    if (st != recv_copy_status::ok) {
        const bool too_long = st == recv_copy_status::length;
        post_recv_cqe(q, r.wqe_id, too_long ? wc_status::loc_len_err : wc_status::loc_prot_err,
                      wc_opcode::recv, 0, 0, 0, 0);
        r.have_wqe = false;
        reject_request(q, p.psn(), too_long ? invalid_request_nak : remote_op_nak);
        return false;
    }
    r.recv_off += p.payload_len;
    r.in_msg = p.info->has(op_flag::last) ? r.none : r.send;
    return true;
}

/* The message's last packet: complete the receive WQE, with the immediate
 * or the invalidated R_Key (rxe do_complete). */
static bool complete_send(qp *q, const roce_packet &p) {
    auto &r = q->resp;
    unsigned flags = 0;
    uint32_t imm = 0;
    if (const immdt *i = p.immdt()) {
        flags |= wc_with_imm;
        imm = i->imm_raw();
    }
    if (const ieth *ie = p.ieth()) {
        /* SEND with Invalidate (IBTA 9.4.4 / 10.6.6): the named R_Key of
         * this PD stops working, if its owner made it remotely
         * invalidatable (verbs.h access_remote_invalidate; in ibverbs: a
         * memory window or a fast-registration MR, as rxe's
         * invalidate_rkey requires). Any other key is an invalid request
         * (rxe: RESPST_ERR_INVALIDATE_RKEY, class J): the receive completes
         * in error, the QP goes to ERR, and the MR is left as it was. */
        mr *mm = q->dev->mrs().lookup(ie->rkey());
        if (!mm || mm->pd != q->pd || !(mm->access & access_remote_invalidate)) {
            ++q->cnt.inv_rkey_refused;
            post_recv_cqe(q, r.wqe_id, wc_status::rem_inv_req_err, wc_opcode::recv, 0, 0, 0, 0);
            r.have_wqe = false;
            reject_request(q, p.psn(), invalid_request_nak);
            return false;
        }
        q->dev->mrs().invalidate(mm);
        flags |= wc_with_inv;
        imm = ie->rkey();
    }
    post_recv_cqe(q, r.wqe_id, wc_status::success, wc_opcode::recv, uint32_t(r.recv_off), flags,
                  imm, 0);
    r.have_wqe = false;
    r.msn = psn_add(r.msn, 1);
    return true;
}

static void rcv_send(qp *q, const roce_packet &p, rte_mbuf *m) {
    /* check_resource: the receive WQE is taken at FIRST/ONLY */
    if (p.info->has(op_flag::first) && !get_recv_wqe(q)) {
        reject_request(q, p.psn(), rnr_nak(q));
        return;
    }
    if (!execute_send(q, p, m)) return;
    if (p.info->has(op_flag::last) && !complete_send(q, p)) return;
    acknowledge(q, p);
}

/* ---- RDMA WRITE */

/* FIRST/ONLY: the RETH's range against the MR, and the WRITE's target is
 * recorded. Later packets: the key was checked for the whole range at
 * FIRST; it is checked again so a dereg_mr in the middle of a message stops
 * the writes. */
static bool check_write_rkey(qp *q, const roce_packet &p) {
    auto &r = q->resp;
    if (p.info->has(op_flag::vendor)) { /* selective repeat: the packet's own range */
        const reth *h = p.reth();
        return check_rkey(q, h->rkey(), access_remote_write, h->va(), p.payload_len);
    }
    if (p.info->has(op_flag::first)) {
        const reth *h = p.reth();
        uint64_t va = h->va(), len = h->dma_length();
        if (!check_rkey(q, h->rkey(), access_remote_write, va, len)) return false;
        r.write_va = va;
        r.write_rkey = h->rkey();
        r.write_len = len;
        r.write_off = 0;
        return true;
    }
    return check_rkey(q, r.write_rkey, access_remote_write, r.write_va + r.write_off,
                      p.payload_len);
}

/* The packets of a WRITE add up to exactly its DMA length. */
static inline bool check_write_length(const qp *q, const roce_packet &p) {
    const auto &r = q->resp;
    if (p.info->has(op_flag::vendor)) return true; /* selective repeat: its own RETH's range */
    if (r.write_off + p.payload_len > r.write_len) return false;
    return !p.info->has(op_flag::last) || r.write_off + p.payload_len == r.write_len;
}

static inline bool execute_write(qp *q, const roce_packet &p, rte_mbuf *m) {
    auto &r = q->resp;
    const uint64_t va = p.info->has(op_flag::vendor) ? p.reth()->va() : r.write_va + r.write_off;
    if (p.payload_len) q->dev->rx_place(p, m, 0, reinterpret_cast<uint8_t *>(va), p.payload_len);
    /* fused receive: the ICRC's verdict before anything is committed */
    if (!q->dev->rx_trusted_placed()) return false;
    r.write_off += p.payload_len;
    r.in_msg = p.info->has(op_flag::last) ? r.none : r.write;
    return true;
}

/* WRITE_WITH_IMM completes a receive WQE, with the DMA length as byte_len. */
static inline void complete_write(qp *q, const roce_packet &p) {
    auto &r = q->resp;
    if (const immdt *i = p.immdt()) {
        post_recv_cqe(q, r.wqe_id, wc_status::success, wc_opcode::recv_rdma_with_imm,
                      uint32_t(r.write_len), wc_with_imm, i->imm_raw(), 0);
        r.have_wqe = false;
    }
    r.msn = psn_add(r.msn, 1);
}

static void rcv_write(qp *q, const roce_packet &p, rte_mbuf *m) {
    const uint32_t psn = p.psn();
    if (!check_write_rkey(q, p)) {
        reject_request(q, psn, remote_access_nak);
        return;
    }
    /* check_resource: the receive WQE of a WRITE_WITH_IMM */
    if (p.info->has(op_flag::immdt) && !get_recv_wqe(q)) {
        reject_request(q, psn, rnr_nak(q));
        return;
    }
    if (!check_write_length(q, p)) {
        reject_request(q, psn, invalid_request_nak);
        return;
    }
    if (!execute_write(q, p, m)) return;
    if (p.info->has(op_flag::last)) complete_write(q, p);
    acknowledge(q, p);
}

/* ---- RDMA READ and atomics: executed into a responder resource, answered
 * from resp_process() through the reply FIFO */

/* A READ takes ceil(len / MTU) PSNs (at least one, IBTA 9.7.4.1.3); its
 * response stream is generated when sent. */
static void execute_read(qp *q, const roce_packet &p, rd_resource *res) {
    auto &r = q->resp;
    const reth *h = p.reth();
    const uint32_t psn = p.psn();
    uint64_t va = h->va(), len = h->dma_length();
    uint32_t npsn = qp_psns_for(q, len);
    res->type = rd_resource::read;
    res->first_psn = psn;
    res->last_psn = psn_add(psn, npsn - 1);
    res->va = va;
    res->length = len;
    res->rkey = h->rkey();
    res->cur_psn = psn;
    res->cur_off = 0;
    res->end_off = len;
    r.msn = psn_add(r.msn, 1);
    res->msn = r.msn;
    r.psn = psn_add(psn, npsn);
    reply_fifo_push(q, res);
    ++q->cnt.rx_pkts;
}

/* What an RDMA READ or atomic passes before it takes a responder resource
 * (rxe_resp.c check_rkey, then check_resource): the key and its rights over
 * [va, va + len), then a free resource within max_dest_rd_atomic. nullptr
 * when refused (the NAK or UC drop is done). */
static rd_resource *admit_rd_atomic(qp *q, uint32_t psn, uint32_t rkey, unsigned access,
                                    uint64_t va, uint64_t len) {
    if (!check_rkey(q, rkey, access, va, len)) {
        reject_request(q, psn, remote_access_nak);
        return nullptr;
    }
    rd_resource *res = alloc_res(q);
    if (!res) reject_request(q, psn, invalid_request_nak);
    return res;
}

static void rcv_read(qp *q, const roce_packet &p) {
    const reth *h = p.reth();
    if (rd_resource *res =
            admit_rd_atomic(q, p.psn(), h->rkey(), access_remote_read, h->va(), h->dma_length()))
        execute_read(q, p, res);
}

/* Atomic with respect to every QP of the process: host atomics. The
 * original value is kept in the resource to answer a duplicate (C9-114). */
static void execute_atomic(qp *q, const roce_packet &p, rd_resource *res) {
    auto &r = q->resp;
    const atomic_eth *h = p.atomic_eth();
    const uint32_t psn = p.psn();
    uint64_t *target = reinterpret_cast<uint64_t *>(h->va());
    uint64_t orig;
    if (p.opcode == to_u8(ib_opcode::rc_compare_swap)) {
        orig = h->compare();
        __atomic_compare_exchange_n(target, &orig, h->swap_add(), false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    } else {
        orig = __atomic_fetch_add(target, h->swap_add(), __ATOMIC_SEQ_CST);
    }
    res->type = rd_resource::atomic;
    res->first_psn = res->last_psn = psn;
    res->orig = orig;
    res->cur_psn = psn;
    r.msn = psn_add(r.msn, 1);
    res->msn = r.msn;
    r.psn = psn_add(psn, 1);
    reply_fifo_push(q, res);
    ++q->cnt.rx_pkts;
}

static void rcv_atomic(qp *q, const roce_packet &p) {
    const atomic_eth *h = p.atomic_eth();
    /* Atomics need an 8-byte aligned VA, else invalid request (IBTA 9.4.6;
     * rxe RESPST_ERR_MISALIGNED_ATOMIC), refused before memory is touched. */
    if (h->va() & 7) {
        reject_request(q, p.psn(), invalid_request_nak);
        return;
    }
    if (rd_resource *res = admit_rd_atomic(q, p.psn(), h->rkey(), access_remote_atomic, h->va(), 8))
        execute_atomic(q, p, res);
}

/* Fused receive (doc/security.md): may this request's ICRC be checked while
 * its payload is placed, with the verdict taken before anything is
 * committed? Only if every check on the way to the placement passes with no
 * effect, which is what this repeats (no counter, no NAK, no state), and the
 * payload's place is fixed by trusted state, not by the frame: the receive
 * WQE at recv_off for a SEND; write_va + write_off, set by the message's
 * verified FIRST, for a WRITE MIDDLE/LAST. Then a bad frame can only have
 * written bytes that the retransmission of this PSN rewrites before the
 * message completes. Not a WRITE FIRST/ONLY or a selective-repeat WRITE
 * (their own RETH names the place), nor UD, READ requests or atomics: their
 * ICRC is checked first. */
static bool resp_can_fuse(qp *q, const roce_packet &p) {
    const auto &r = q->resp;
    const opcode_info &info = *p.info;
    /* selective repeat keeps and places packets out of order: not fused yet
     * (its property test found a receive buffer holding a bad frame's bytes) */
    if (q->type == qp_type::ud || q->attr.selective_repeat || !check_qp_state(q) ||
        p.psn() != r.psn || r.nak_sent || r.uc_drop)
        return false;
    if (!check_op_seq(q, info) || !check_length(q, p) || !check_op_valid(q, info)) return false;
    const bool takes_wqe =
        info.has(op_flag::send) ? info.has(op_flag::first) : info.has(op_flag::immdt);
    if (takes_wqe && !r.have_wqe && recv_queue(q)->empty()) return false; /* an RNR NAK */
    if (info.has(op_flag::send)) return true;
    /* WRITE FIRST/ONLY and selective repeat's WRITEs (op_flag::vendor, a RETH
     * in every packet) name their place themselves */
    if (!info.has(op_flag::write) || info.has(op_flag::first) || info.has(op_flag::vendor))
        return false;
    mr *mm;
    return check_write_length(q, p) &&
           mr_check(q->dev->mrs(), q->resp.rkeys, r.write_rkey, q->pd, access_remote_write,
                    r.write_va + r.write_off, p.payload_len, &mm) == mr_status::ok;
}

void resp_rcv(qp *q, const roce_packet &p, rte_mbuf *m) {
    /* a deferred ICRC is settled here unless the payload copy may do it */
    if (q->dev->rx_icrc().pending && !resp_can_fuse(q, p) && !q->dev->rx_trusted()) return;
    if (!check_qp_state(q)) {
        ++q->cnt.state_drops;
        return;
    }
    if (q->state == qp_state::rtr && q->type != qp_type::ud) [[unlikely]] {
        /* IBTA 11.6.3.1, Communication Established: a connected QP took a
         * packet in RTR (its peer is sending before the CM's RTU came, which
         * may be lost: the user answers with rdma_establish). Once per move
         * to RTR, and never for a frame whose ICRC fails (settled first).
         * NICs raise it; rxe does not. */
        if (!q->dev->rx_trusted()) return;
        if (!q->comm_est_raised) {
            q->comm_est_raised = true;
            qp_raise_event(q, event_type::comm_est);
        }
    }
    if (q->type == qp_type::ud) {
        ud_rcv(q, p, m);
        return;
    }
    if (p.info->has(op_flag::vendor) && !q->attr.selective_repeat) {
        ++q->cnt.sr_refused; /* an opcode this QP never agreed to: as unknown */
        return;
    }
    if (q->attr.selective_repeat && psn_diff(p.psn(), q->resp.psn) > 0) {
        sr_rcv_ahead(q, p, m); /* kept or not, never a PSN sequence NAK */
        return;
    }
    const uint32_t epsn = q->resp.psn;
    switch (check_psn(q, p)) {
    case psn_verdict::in_order:
        break;
    case psn_verdict::duplicate:
        duplicate_request(q, p);
        return;
    case psn_verdict::dropped:
        return;
    }
    const opcode_info &info = *p.info;
    if (!check_op_seq(q, info) || !check_length(q, p)) {
        ++q->cnt.opcode_seq_errors;
        reject_request(q, p.psn(), invalid_request_nak);
        return;
    }
    if (!check_op_valid(q, info)) {
        reject_request(q, p.psn(), invalid_request_nak);
        return;
    }
    if (info.has(op_flag::send))
        rcv_send(q, p, m);
    else if (info.has(op_flag::write))
        rcv_write(q, p, m);
    else if (info.has(op_flag::read))
        rcv_read(q, p);
    else
        rcv_atomic(q, p);
    if (q->attr.selective_repeat) sr_advance(q, epsn);
}

/* Stream queued READ responses and atomic ACKs, then the coalesced ACK. */
unsigned resp_process(qp *q, unsigned budget) {
    auto &r = q->resp;
    device *d = q->dev;
    if (q->state == qp_state::err || q->state == qp_state::reset) {
        r.reply_fifo_head = r.reply_fifo_tail = 0;
        r.ack_pending = false;
        return 0;
    }
    unsigned sent = 0;
    while (sent < budget && r.reply_fifo_tail != r.reply_fifo_head) {
        rd_resource &res = r.res[r.reply_fifo[r.reply_fifo_tail & r.reply_fifo_mask]];
        bth_fields b;
        ext_fields x;
        b.dest_qp = q->attr.dest_qp_num;
        b.psn = res.cur_psn;
        x.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
        x.msn = res.msn;
        rte_mbuf *m;
        bool done, icrc_due;
        if (res.type == rd_resource::atomic) {
            b.opcode = to_u8(ib_opcode::rc_atomic_acknowledge);
            x.orig = res.orig;
            m = d->build(q->hdr, b, x, nullptr, 0, &icrc_due);
            done = true;
        } else {
            uint64_t left = res.end_off - res.cur_off;
            uint32_t len = left < q->mtu ? uint32_t(left) : q->mtu;
            bool first = res.cur_psn == res.first_psn;
            bool last = res.cur_psn == res.last_psn;
            using O = ib_opcode;
            b.opcode = to_u8(
                first ? (last ? O::rc_rdma_read_response_only : O::rc_rdma_read_response_first)
                      : (last ? O::rc_rdma_read_response_last : O::rc_rdma_read_response_middle));
            payload_src src;
            if (len) {
                /* the MR may have gone since the request: check again */
                mr *mm;
                if (mr_check(d->mrs(), q->resp.rkeys, res.rkey, q->pd, access_remote_read,
                             res.va + res.cur_off, len, &mm) != mr_status::ok) {
                    nak_fatal(q, aeth_syndrome::nak_remote_access_error, res.cur_psn);
                    return sent;
                }
                src.flat = reinterpret_cast<const uint8_t *>(res.va + res.cur_off);
            }
            m = d->build(q->hdr, b, x, &src, len, &icrc_due);
            done = last;
            if (m) {
                res.cur_off += len;
                q->cnt.tx_bytes += len;
            }
        }
        if (!m) {
            ++d->cnt().tx_alloc_fail;
            ++d->cnt().tx_mbuf_waits; /* the reply stays queued: the QP resumes later */
            return sent;
        }
        d->tx(m, icrc_due);
        ++q->cnt.tx_pkts;
        ++sent;
        if (done) {
            res.queued = false;
            ++r.reply_fifo_tail;
        } else {
            res.cur_psn = psn_add(res.cur_psn, 1);
        }
    }
    if (r.reply_fifo_tail == r.reply_fifo_head && r.ack_pending && sent < budget) {
        const bool sr_ack = q->attr.selective_repeat &&
                            aeth_syndrome::type(r.ack_syndrome) == aeth_syndrome::type_ack;
        if (sr_ack ? sr_send_ack(q) : send_ack_pkt(q, r.ack_syndrome, r.ack_psn, r.msn)) {
            r.ack_pending = false;
            ++sent;
        } else {
            ++q->dev->cnt().tx_mbuf_waits; /* no mbuf: the ACK stays pending */
        }
    }
    return sent;
}

} // namespace uroce

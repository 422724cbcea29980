/* SPDX-License-Identifier: BSD-3-Clause
 * Completer (rxe_comp.c's job): consumes ACKs, NAKs, READ responses and
 * atomic ACKs; completes send WQEs in order; runs the retransmit and RNR
 * timers; counts retries down to RETRY_EXC_ERR / RNR_RETRY_EXC_ERR; on a
 * fatal NAK completes the WQE in error, moves the QP to ERR and flushes the
 * rest.
 */
#include <cstring>

#include "uroce_cq.h"
#include "uroce_device.h"
#include "uroce_psn.h"
#include "uroce_qp.h"
#include "uroce_wr_opcode.h"

namespace uroce {

/* A READ or atomic WQE completes only on its own response: an ACK beyond
 * it does not acknowledge it implicitly (IBTA 9.7.5.1.1). */
static inline bool needs_own_response(const send_wqe &w) {
    return wr_opcode_lookup(w.opcode).has_any(wr_flag::read_or_atomic);
}
static inline bool is_atomic(const send_wqe &w) {
    return wr_opcode_lookup(w.opcode).has(wr_flag::atomic);
}

static void cq_write(qp *q, cq *c, const wc &e) {
    if (!cq_post(c, e)) [[unlikely]] {
        ++q->dev->cnt().cq_overflows;
        cq_overflowed(c);
        return;
    }
    ++q->cnt.completions;
    if (e.status != wc_status::success) ++q->cnt.error_completions;
}

void post_send_cqe(qp *q, const send_wqe &w, wc_status st) {
    wc e;
    e.wr_id = w.wr_id;
    e.status = st;
    e.opcode = wc_opcode_for(w.opcode);
    e.byte_len = uint32_t(w.length);
    e.qp_num = q->qpn;
    cq_write(q, q->scq, e);
}

void post_recv_cqe(qp *q, uint64_t wr_id, wc_status st, wc_opcode op, uint32_t byte_len,
                   unsigned flags, uint32_t imm, uint32_t src_qp) {
    wc e;
    e.wr_id = wr_id;
    e.status = st;
    e.opcode = op;
    e.byte_len = byte_len;
    e.imm_data = imm;
    e.wc_flags = flags;
    e.qp_num = q->qpn;
    e.src_qp = src_qp;
    cq_write(q, q->rcq, e);
}

/* The WQE at sq_comp finished successfully. */
void comp_complete_wqe(qp *q, send_wqe &w) {
    if (w.signaled()) post_send_cqe(q, w, wc_status::success);
    if (w.rd_counted) {
        w.rd_counted = false;
        --q->req.rd_atomic_outstanding;
    }
    w.state = wqe_state::done;
    ++q->sq_comp;
    /* a fence or the rd_atomic limit may have been waiting on this one */
    if (q->req.wqe != q->sq_head) q->dev->schedule(q);
    if (q->state == qp_state::sqd) [[unlikely]]
        qp_sq_drain_check(q);
}

/* A WQE the requester refused (local protection error) reached the head. */
static void check_error_head(qp *q) {
    if (q->sq_comp == q->sq_head) return;
    send_wqe &w = sq_at(q, q->sq_comp);
    if (w.state == wqe_state::error) {
        post_send_cqe(q, w, w.status);
        ++q->sq_comp;
        qp_to_error(q);
    }
}

/* Complete the head WQE with an error status, then ERR and flush. */
static void complete_error(qp *q, wc_status st) {
    if (q->sq_comp != q->sq_head) {
        send_wqe &w = sq_at(q, q->sq_comp);
        if (w.rd_counted) {
            w.rd_counted = false;
            --q->req.rd_atomic_outstanding;
        }
        post_send_cqe(q, w, st);
        ++q->sq_comp;
    }
    qp_to_error(q);
}

bool comp_outstanding(const qp *q) {
    return q->sq_comp != q->req.wqe || q->req.offset != 0 || psn_diff(q->req.psn, q->comp.psn) > 0;
}

void comp_arm_retrans(qp *q, uint64_t now) {
    uint64_t t = local_ack_timeout_ns(q->attr.timeout);
    if (!t) return; /* timeout 0: the local ACK timer is disabled (IBTA 9.7.6.1.3) */
    q->dev->timers().arm(q->retrans_timer, now, t);
}
void comp_arm_retrans(qp *q) {
    comp_arm_retrans(q, q->dev->now_ns());
}

/* Keep the requester at or after the completer: after a go-back-N restart,
 * late responses can acknowledge WQEs the requester is about to resend. */
static void requester_catch_up(qp *q) {
    if (int32_t(q->sq_comp - q->req.wqe) > 0 ||
        (q->sq_comp == q->req.wqe && psn_diff(q->comp.psn, q->req.psn) > 0))
        req_reposition(q);
}

/* The completer's PSN moved (forward progress): the requester must not lag
 * behind it, both retry counters start over, and the retransmit timer
 * restarts while anything is still outstanding (IBTA 9.7.6.1.3). */
static void record_forward_progress(qp *q) {
    const uint64_t now = q->dev->now_ns(); /* one clock read for both timers and the RTT */
    requester_catch_up(q);
    q->comp.retry_left = q->attr.retry_cnt;
    q->comp.rnr_left = q->attr.rnr_retry;
    q->comp.retry_guard = false;
    q->comp.pokes = 0;
    if (q->comp.rerequest_pending && psn_diff(q->comp.psn, q->comp.rerequest_end) >= 0)
        q->comp.rerequest_pending = false;
    if (comp_outstanding(q))
        comp_arm_retrans(q, now);
    else
        q->dev->timers().cancel(q->retrans_timer);
    loss_on_progress(q, now);
}

/* What started a retry: the local ACK timer, a PSN sequence error NAK, a
 * gap in the responses (one past comp.psn while a READ or atomic still
 * waits for its own), or a gap inside a READ's response stream (a READ
 * response past comp.psn, within the oldest WQE's READ). */
enum class retry_cause { timeout, nak, gap, read_gap };

/* A gap that the last retry's re-request covers. That retry was started by
 * a gap too, seen when the response at rerequest_seen arrived while the
 * completer waited for rerequest_psn, and its answer sends again every
 * response from rerequest_psn on. The typical case is a reordering: a
 * response overtaken by the next one is that gap, the late one then arrives
 * (forward progress), and the one after it is a gap again, at a PSN up to
 * rerequest_seen, whose response was discarded before the re-request was
 * even sent: the answer repairs it. Asking again would only queue one more
 * copy of the same responses behind it: a responder that finishes what it
 * is sending before it takes the next request (rxe) then gets a whole READ
 * more per reordering (seen against rxe under netem's reordering: 110 READ
 * requests for one 8 MiB READ in 14 s, each answered with the rest of the
 * READ), and the copies come back as duplicates long after the data is in.
 *
 * A gap past rerequest_seen is not covered: that response may have been
 * sent after the re-request, as part of its answer (uroce's responder
 * starts the answer at once), and lost. Counting every response discarded
 * since (up to the end of the old stream) was tried: under the property
 * test's loss it took losses in such answers for covered and waited for
 * the timeout. Nor is any gap covered once the responses to what was asked
 * before the re-request have run out (rerequest_end - 1 seen): its answer
 * is what comes next. */
static inline bool rerequest_covers(const qp *q) {
    return q->comp.rerequest_pending && psn_diff(q->comp.psn, q->comp.rerequest_psn) >= 0 &&
           psn_diff(q->comp.psn, q->comp.rerequest_seen) <= 0;
}

/* Retry after a timeout, a sequence error or a gap. retry_cnt counts
 * retries: 7 means seven, not infinity (IBTA 9.7.6.1.3; only rnr_retry 7 is
 * infinite; rxe's completer treats retry_cnt 7 as infinite too, we do not).
 * One retry per loss round: once a retry has started (after a timeout as
 * after a NAK), NAKs and gaps start no other until forward progress; they
 * were caused by the loss being recovered (a NAK sent before the resent
 * packets arrived, responses still in flight behind the gap). Only a new
 * timeout does, as in rxe (its completer's started_retry). A gap that an
 * earlier re-request covers starts none and costs nothing of retry_cnt. */
static void retry(qp *q, retry_cause why, uint32_t gap_psn = 0) {
    if (why != retry_cause::timeout && q->comp.retry_guard) return;
    if (why == retry_cause::read_gap && rerequest_covers(q)) {
        /* that retry is the one under way for this gap */
        ++q->cnt.rerequests_saved;
        q->comp.retry_guard = true;
        return;
    }
    q->comp.retry_guard = true;
    if (q->comp.retry_left == 0) {
        ++q->cnt.retry_exceeded;
        complete_error(q, wc_status::retry_exc_err);
        return;
    }
    --q->comp.retry_left;
    req_start_retry(q);
    /* a gap inside a READ's stream is seen while the responder is still
     * sending it. After a timeout it has fallen silent, after a NAK it has
     * seen the gap; a response past a READ (another request's) may be far
     * past the gap, and would make rerequest_seen cover too much. */
    q->comp.resp_since_retry = false;
    q->comp.tx_pkts_at_retry = q->cnt.tx_pkts;
    q->comp.unsent_waits = 0;
    q->comp.rerequest_pending = why == retry_cause::read_gap;
    q->comp.rerequest_psn = q->comp.psn;
    q->comp.rerequest_seen = gap_psn;
    q->comp.rerequest_end = q->req.max_psn_sent;
    comp_arm_retrans(q);
}

/* Re-requests sent on a timeout without spending retry_cnt, between two
 * forward progresses: each needs responses since the one before, so only a
 * responder that keeps answering without ever filling the gap reaches it. */
static constexpr uint8_t max_pokes = 32;
/* Timeouts waited out while the retry under way has sent nothing: 255 x 67
 * ms at timeout 14 is 17 s, longer than any round of turns seen (4096 QPs
 * on one core: over a second). */
static constexpr uint8_t max_unsent_waits = 255;

void comp_retrans_timeout(void *arg) {
    qp *q = static_cast<qp *>(arg);
    ++q->dev->cnt().timer_fires;
    if (q->type != qp_type::rc || (q->state != qp_state::rts && q->state != qp_state::sqd)) return;
    if (q->req.rnr_wait || !comp_outstanding(q)) return;
    ++q->cnt.timeouts;
    /* The retry under way has not sent one packet yet: its resends wait for
     * a TX mbuf (thousands of QPs share one pool: with 4096 QPs a QP's turn
     * can come seconds apart, doc/performance.md). The local ACK timer times
     * requests on the wire (IBTA 9.7.6.1.3); nothing has gone out since the
     * last retry began, so the peer's silence tells nothing new, and
     * spending retry_cnt on it ended QPs whose peer was fine. Bounded, so
     * that a QP that can never send still ends. */
    if (q->comp.retry_guard && q->cnt.tx_pkts == q->comp.tx_pkts_at_retry &&
        q->comp.unsent_waits < max_unsent_waits) {
        ++q->comp.unsent_waits;
        ++q->cnt.retry_unsent_waits;
        comp_arm_retrans(q);
        return;
    }
    /* A retry is under way without forward progress, and since it started
     * the responder has sent responses: it is alive, and it has fallen
     * silent in the middle of what it was sending. rxe does that whenever a
     * response cannot be sent: its responder continues a half-sent READ
     * only while a request packet is queued, drops the one it was working
     * from on the failed send, and then waits for the next one to arrive
     * (rxe_resp.c get_req; doc/interop.md, "Long READs under loss"). Under
     * TCG at 1% loss that happened hundreds of times per 8 MiB READ. Ask
     * again at once, without spending a retry: the re-request wakes such a
     * responder, and one that was only slow answers it as the duplicate it
     * is. Only the oldest request is asked again (one packet at comp.psn:
     * for a READ, the rest of it): a go-back-N resend of every outstanding
     * READ queued whole READs of duplicates at rxe per stop, ahead of the
     * answer to the gap (8 MiB READs: 554,125 responses past the gap, and
     * RETRY_EXC_ERR after 46 s). Waiting instead (three timeouts, until
     * 2026-12-04) cost four timeouts per stop and ran out of retries when
     * eight stops came between a loss and its repair. A silent peer still
     * ends the QP: without responses since the last re-request the next
     * timeout is a counted retry, so retry_cnt + 1 timeouts after the last
     * response, and at most max_pokes uncounted re-requests come between
     * two forward progresses. */
    if (q->comp.retry_guard && q->comp.resp_since_retry && q->comp.pokes < max_pokes) {
        ++q->comp.pokes;
        q->comp.resp_since_retry = false;
        if (req_resend_psn(q, q->comp.psn)) ++q->cnt.retry_pokes;
        comp_arm_retrans(q);
        return;
    }
    q->loss.probes = 0; /* the go-back-N resend starts a new period */
    retry(q, retry_cause::timeout);
}

void comp_rnr_timeout(void *arg) {
    qp *q = static_cast<qp *>(arg);
    ++q->dev->cnt().timer_fires;
    if (!q->req.rnr_wait) return;
    q->req.rnr_wait = false;
    if (q->state != qp_state::rts && q->state != qp_state::sqd) return;
    req_start_retry(q);
    comp_arm_retrans(q);
}

/* Write len bytes at byte offset off of the WQE's scatter list; false (and
 * nothing written) when a piece is no longer registered for local write. */
static bool scatter(qp *q, send_wqe &w, uint64_t off, const roce_packet &p, rte_mbuf *m,
                    uint32_t len) {
    const sge *sg = sq_sgl(q, w);
    uint32_t i0 = 0;
    uint64_t off0 = off;
    while (i0 < w.num_sge && off0 >= sg[i0].length)
        off0 -= sg[i0++].length;
    /* check first, then copy: a failure writes nothing */
    for (int pass = 0; pass < 2; ++pass) {
        uint32_t i = i0, done = 0;
        uint64_t o = off0;
        while (done < len && i < w.num_sge) {
            uint64_t avail = sg[i].length - o;
            uint32_t c = avail < len - done ? uint32_t(avail) : len - done;
            if (pass == 0) {
                mr *mm;
                if (mr_check(q->dev->mrs(), q->req.lkeys, sg[i].lkey, q->pd, access_local_write,
                             sg[i].addr + o, c, &mm) != mr_status::ok)
                    return false;
            } else {
                q->dev->rx_place(p, m, done, reinterpret_cast<uint8_t *>(sg[i].addr) + o, c);
            }
            done += c;
            o = 0;
            ++i;
        }
    }
    return true;
}

/* ---- The response path, one function per stage (rxe_comp.c's states).
 * `advanced` says the completer's PSN has moved during this packet; each
 * handler that ends the packet records that forward progress once. */

/* Responses are taken while the send side runs: RTS and SQD (RC only; UC
 * and UD get none). */
static inline bool check_qp_state(const qp *q) {
    return q->type == qp_type::rc && (q->state == qp_state::rts || q->state == qp_state::sqd);
}

/* rxe check_psn: a response below the completer's PSN was acknowledged
 * already (a duplicate or a late packet); one at or past the highest PSN
 * ever sent answers nothing we sent.
 *
 * A duplicate still restarts the retransmit timer (not the retry counters):
 * it answers a request we sent again, so the responder is alive and working
 * through our requests in order, and what we still wait for is queued
 * behind it. The timer is there to detect lost requests and responses
 * (IBTA 9.7.6.1.3), not a responder busy replaying: after two retries of
 * a long READ, the second one's answer repeats what the first one's
 * delivered, at the responder's pace (rxe under TCG sends about 23 MB/s:
 * 8 x 67 ms is 12 MB of duplicates, less than two 8 MiB READs). rxe's
 * completer does the same: every response it takes, used or not, ends in
 * its re-arming the timer. */
static inline bool check_psn(qp *q, uint32_t psn) {
    if (psn_diff(psn, q->comp.psn) < 0) {
        ++q->cnt.dup_responses;
        loss_on_dup_response(q, psn);
        if (comp_outstanding(q) && !q->dev->rx_icrc().pending) {
            comp_arm_retrans(q);
            q->comp.resp_since_retry = true;
        }
        return false;
    }
    if (psn_diff(psn, q->req.max_psn_sent) >= 0) {
        ++q->cnt.bad_responses;
        return false;
    }
    return true;
}

/* Every WQE that ends before this PSN is implicitly acknowledged
 * (IBTA 9.7.5.1.1: responses are in order; an ACK or NAK for PSN n
 * acknowledges everything before n, and a positive ACK n itself too). A
 * READ or atomic cannot be: its responses were lost, so go back to it
 * (returns false: a retry has started and the packet is done with). */
static bool complete_implied(qp *q, uint32_t psn, bool positive_ack, bool &advanced) {
    while (q->sq_comp != q->sq_head) {
        send_wqe &w = sq_at(q, q->sq_comp);
        if (w.state != wqe_state::issued) break;
        int32_t d = psn_diff(psn, w.last_psn);
        if (d < 0 || (d == 0 && !positive_ack)) break;
        if (needs_own_response(w)) {
            if (advanced) record_forward_progress(q);
            retry(q, retry_cause::gap);
            return false;
        }
        q->comp.psn = psn_add(w.last_psn, 1);
        comp_complete_wqe(q, w);
        advanced = true;
        if (d == 0) break;
    }
    return true;
}

/* The packet is done and moved the completer: record it, and complete a
 * WQE the requester refused if it has reached the head (rxe complete_ack). */
static inline void complete_ack(qp *q) {
    record_forward_progress(q);
    check_error_head(q);
}

/* A positive ACK for the head WQE's PSNs (rxe check_ack). */
static void do_ack(qp *q, send_wqe &w, uint32_t psn, bool advanced) {
    if (needs_own_response(w)) {
        /* An ACK inside a READ/atomic: its responses were lost. */
        if (advanced) record_forward_progress(q);
        if (psn_diff(psn, q->comp.psn) >= 0) retry(q, retry_cause::gap);
        return;
    }
    /* partial ACK of a multi-packet message (AckReq every N packets) */
    if (psn_diff(psn, q->comp.psn) >= 0) {
        q->comp.psn = psn_add(psn, 1);
        advanced = true;
    }
    if (advanced) record_forward_progress(q);
}

/* RNR NAK: wait the NAK's timer, then resend from its PSN; rnr_retry 7
 * means retry forever (IBTA 9.7.5.2.8). */
static void do_rnr_nak(qp *q, uint32_t psn, uint8_t syndrome) {
    ++q->cnt.rnr_naks_rcvd;
    if (q->attr.rnr_retry != 7) {
        if (q->comp.rnr_left == 0) {
            ++q->cnt.rnr_exceeded;
            complete_error(q, wc_status::rnr_retry_exc_err);
            return;
        }
        --q->comp.rnr_left;
    }
    q->comp.psn = psn;
    q->req.rnr_wait = true;
    q->dev->timers().cancel(q->retrans_timer);
    q->dev->timers().arm(q->rnr_timer, q->dev->now_ns(),
                         rnr_timer_ns(aeth_syndrome::value(syndrome)));
}

/* The completion status of a fatal NAK code (IBTA 9.7.5.2.4). */
static constexpr wc_status fatal_nak_status(uint8_t nak_code) {
    switch (nak_code) {
    case aeth_syndrome::nak_invalid_request:
        return wc_status::rem_inv_req_err;
    case aeth_syndrome::nak_remote_access_error:
        return wc_status::rem_access_err;
    case aeth_syndrome::nak_remote_op_error:
        return wc_status::rem_op_err;
    default:
        return wc_status::bad_resp_err;
    }
}

/* A NAK for PSN n acknowledges everything before n (IBTA 9.7.5.2). A PSN
 * sequence error starts a go-back-N retry; the others are fatal: the head
 * WQE completes in error and the QP goes to ERR. */
static void do_nak(qp *q, send_wqe &w, uint32_t psn, uint8_t syndrome, bool advanced) {
    if (psn_diff(psn, q->comp.psn) > 0 && !needs_own_response(w)) {
        q->comp.psn = psn;
        advanced = true;
    }
    if (advanced) record_forward_progress(q);
    if (aeth_syndrome::type(syndrome) == aeth_syndrome::type_rnr_nak) {
        do_rnr_nak(q, psn, syndrome);
        return;
    }
    const uint8_t code = aeth_syndrome::value(syndrome);
    if (code == aeth_syndrome::nak_psn_seq_error) {
        ++q->cnt.seq_naks_rcvd;
        retry(q, retry_cause::nak);
        return;
    }
    ++q->cnt.fatal_naks_rcvd;
    complete_error(q, fatal_nak_status(code));
}

/* The READ response at PSN psn has the opcode its place in the response
 * stream calls for (FIRST/MIDDLE/LAST/ONLY) and exactly the length there. */
static inline bool read_response_fits(const qp *q, const send_wqe &w, const roce_packet &p,
                                      uint64_t off) {
    const opcode_info &info = *p.info;
    const uint32_t psn = p.psn();
    const bool first = psn == w.first_psn;
    const bool last = psn == w.last_psn;
    const uint64_t expect = last ? w.length - off : q->mtu;
    bool op_ok = first ? (last ? info.has(op_flag::only)
                               : info.has(op_flag::first) && !info.has(op_flag::last))
                       : (last ? info.has(op_flag::last) && !info.has(op_flag::first)
                               : info.has(op_flag::middle));
    return op_ok && p.payload_len == expect;
}

/* A READ response: scattered into the WQE's SGEs at (PSN - first) x MTU
 * (rxe do_read). */
static void do_read(qp *q, send_wqe &w, const roce_packet &p, rte_mbuf *m, bool advanced) {
    const uint32_t psn = p.psn();
    if (!wr_opcode_lookup(w.opcode).has(wr_flag::read)) {
        ++q->cnt.bad_responses;
        return;
    }
    if (psn != q->comp.psn) {
        /* a response is missing: go back to the first one we lack (one
         * retry per gap: the frames after it are dropped, counted) */
        ++q->cnt.out_of_seq_responses;
        if (advanced) record_forward_progress(q);
        retry(q, retry_cause::read_gap, psn);
        return;
    }
    const uint64_t off = uint64_t(psn_diff(psn, w.first_psn)) * q->mtu;
    if (!read_response_fits(q, w, p, off)) {
        ++q->cnt.opcode_seq_errors;
        if (advanced) record_forward_progress(q);
        return;
    }
    const bool placed = !p.payload_len || scatter(q, w, off, p, m, p.payload_len);
    /* fused receive: the ICRC's verdict before anything is committed */
    if (!q->dev->rx_trusted_placed()) return;
    if (!placed) {
        complete_error(q, wc_status::loc_prot_err);
        return;
    }
    q->cnt.rx_bytes += p.payload_len;
    q->comp.psn = psn_add(psn, 1);
    if (psn == w.last_psn) comp_complete_wqe(q, w);
    complete_ack(q);
}

/* An atomic ACK: the original value goes to the WQE's 8-byte SGE, in host
 * order as ibverbs has it (rxe do_atomic). */
static void do_atomic(qp *q, send_wqe &w, const roce_packet &p, bool advanced) {
    const uint32_t psn = p.psn();
    if (!is_atomic(w) || psn != w.first_psn) {
        ++q->cnt.bad_responses;
        if (advanced) record_forward_progress(q);
        return;
    }
    uint64_t orig = p.atomic_ack_eth()->orig();
    mr *mm;
    const sge &result = sq_sgl(q, w)[0];
    if (mr_check(q->dev->mrs(), q->req.lkeys, result.lkey, q->pd, access_local_write, result.addr,
                 8, &mm) != mr_status::ok) {
        complete_error(q, wc_status::loc_prot_err);
        return;
    }
    std::memcpy(reinterpret_cast<void *>(result.addr), &orig, 8);
    q->comp.psn = psn_add(psn, 1);
    comp_complete_wqe(q, w);
    complete_ack(q);
}

/* Fused receive (doc/security.md): may this READ response's ICRC be checked
 * while its payload is scattered, with the verdict taken before anything is
 * committed? Only for the response the completer expects next (comp.psn),
 * inside the head READ WQE and of exactly the opcode and length its place in
 * the stream calls for: then every check on the way passes with no effect,
 * the place (the WQE's SGEs at (PSN - first) x MTU) is fixed by trusted
 * state, and the response to the retried READ rewrites exactly those bytes
 * before the WQE completes. */
static bool comp_can_fuse(qp *q, const roce_packet &p) {
    const uint32_t psn = p.psn();
    if (q->attr.selective_repeat || !check_qp_state(q) || !p.info->has(op_flag::read) ||
        psn != q->comp.psn || psn_diff(psn, q->req.max_psn_sent) >= 0 || q->sq_comp == q->sq_head)
        return false;
    const send_wqe &w = sq_at(q, q->sq_comp);
    if (w.state != wqe_state::issued || !wr_opcode_lookup(w.opcode).has(wr_flag::read) ||
        psn_diff(psn, w.first_psn) < 0 || psn_diff(psn, w.last_psn) > 0)
        return false;
    return read_response_fits(q, w, p, uint64_t(psn_diff(psn, w.first_psn)) * q->mtu);
}

void comp_rcv(qp *q, const roce_packet &p, rte_mbuf *m) {
    /* a deferred ICRC is settled here unless the scatter may do it */
    const bool fused = q->dev->rx_icrc().pending && comp_can_fuse(q, p);
    if (q->dev->rx_icrc().pending && !fused && !q->dev->rx_trusted()) return;
    if (!check_qp_state(q)) {
        ++q->cnt.state_drops;
        return;
    }
    if (p.opcode == to_u8(ib_opcode::sr_sack))
        sack_rcv(q, p, m); /* selective repeat (uroce_sack.cpp) */
    else
        comp_rcv_response(q, p, m);
    /* the response may have opened a full window (req_has_work) */
    if (req_has_work(q)) q->dev->schedule(q);
}

void comp_rcv_response(qp *q, const roce_packet &p, rte_mbuf *m) {
    const uint32_t psn = p.psn();
    if (!check_psn(q, psn)) return;
    /* what was asked before the last re-request has all been answered: its
     * answer is next (rerequest_covers) */
    if (q->comp.rerequest_pending && !q->dev->rx_icrc().pending &&
        psn_diff(psn, psn_sub(q->comp.rerequest_end, 1)) >= 0)
        q->comp.rerequest_pending = false;
    /* A response for an outstanding PSN shows the responder alive and
     * working through our requests, even one we cannot use yet (behind a
     * gap, while a slow responder finishes long READ streams queued before
     * our retry): restart the retransmit timer (IBTA 9.7.6.1.3; rxe's
     * completer re-arms it whenever it has drained its responses). Only
     * forward progress resets the retry counters. */
    /* still pending: a fused READ response (comp_rcv), whose re-arms come
     * from do_read's forward progress once it is known good */
    if (comp_outstanding(q) && !q->dev->rx_icrc().pending) {
        comp_arm_retrans(q);
        loss_on_response(q);
        q->comp.resp_since_retry = true;
    }
    const uint8_t syndrome = p.aeth() ? p.aeth()->syndrome : 0;
    const bool is_ack = p.info->has(op_flag::ack); /* ACKNOWLEDGE, or a SACK's ACK part */
    const bool positive_ack = is_ack && aeth_syndrome::type(syndrome) == aeth_syndrome::type_ack;
    if (positive_ack) ++q->cnt.rx_acks;

    bool advanced = false;
    if (!complete_implied(q, psn, positive_ack, advanced)) return;
    if (q->sq_comp == q->sq_head || sq_at(q, q->sq_comp).state != wqe_state::issued) {
        if (advanced) record_forward_progress(q);
        check_error_head(q);
        return;
    }
    send_wqe &w = sq_at(q, q->sq_comp);
    if (positive_ack)
        do_ack(q, w, psn, advanced);
    else if (is_ack)
        do_nak(q, w, psn, syndrome, advanced);
    else if (p.info->has(op_flag::read))
        do_read(q, w, p, m, advanced);
    else if (p.opcode == to_u8(ib_opcode::rc_atomic_acknowledge))
        do_atomic(q, w, p, advanced);
    else
        ++q->cnt.bad_responses;
}

} // namespace uroce

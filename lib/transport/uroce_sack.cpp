/* SPDX-License-Identifier: BSD-3-Clause
 * Selective repeat between uroce peers (IRN: Mittal et al., "Revisiting
 * Network Support for RDMA", SIGCOMM 2018), for QPs whose applications both
 * set qp_attr::selective_repeat. Go-back-N resends every packet behind a
 * loss; here the responder keeps what arrives after a gap and the requester
 * resends only what is missing.
 *
 * Responder: a WRITE packet ahead of the expected PSN (ePSN), within the
 * 128-PSN window, is placed at once at the address it carries (every WRITE
 * packet of such a QP carries a RETH; its R_Key is checked over the
 * packet's range exactly as for an in-order WRITE) and marked in the
 * window. Anything else ahead of ePSN (SEND, READ, atomic, an immediate) is
 * not kept: those go in order (receive completions, READ responses and
 * atomics keep IBTA's order), and the SACK shows them missing. When ePSN
 * arrives, ePSN moves over the marked run, ending the messages it ends.
 * The coalesced ACK carries the window (a SACK) while it has holes.
 *
 * Requester: a SACK acknowledges everything before its ePSN like an ACK;
 * each missing PSN below the highest one received is resent from its WQE
 * (req_resend_psn), once per RTT. New data stays within the BDP window
 * (uroce_loss.cpp); the local ACK timeout and retry_cnt stay the hard limit
 * (a timeout goes back N as before; a SACK that moves nothing restarts no
 * timer).
 */
#include <cstring>

#include <rte_mbuf.h>

#include "uroce_device.h"
#include "uroce_psn.h"
#include "uroce_qp.h"
#include "uroce_wr_opcode.h"

namespace uroce {

void sr_reset(qp *q) {
    q->sr = sr_state{};
}

/* ---- responder */

/* The checks an in-order WRITE packet passes (uroce_resp.cpp check_op_valid,
 * check_length, check_rkey), for one placed out of order. A refusal is not
 * NAKed here (a NAK names ePSN, not this PSN): the packet is not kept, and
 * if it is sent again in order the in-order path refuses it with its NAK. */
static bool sr_packet_ok(qp *q, const roce_packet &p, const reth &h) {
    const opcode_info &info = *p.info;
    if (!(q->attr.qp_access_flags & access_remote_write)) return false;
    if (!info.has(op_flag::last)) {
        if (p.payload_len != q->mtu) return false;
    } else if (!info.has(op_flag::first)) {
        if (p.payload_len < 1 || p.payload_len > q->mtu) return false;
    } else if (p.payload_len > q->mtu) {
        return false;
    }
    if (info.has(op_flag::first) && (h.dma_length() & sr_place::index_mask) != 0) return false;
    if (p.payload_len == 0) return true; /* no R_Key check for zero bytes (IBTA 9.4.5) */
    mr *mm;
    switch (mr_check(q->dev->mrs(), q->resp.rkeys, h.rkey(), q->pd, access_remote_write, h.va(),
                     p.payload_len, &mm)) {
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

static inline void want_sack(qp *q) {
    resp_queue_ack(q, aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits),
                   psn_sub(q->resp.psn, 1));
}

void sr_rcv_ahead(qp *q, const roce_packet &p, rte_mbuf *m) {
    auto &s = q->sr;
    const uint32_t ahead = uint32_t(psn_diff(p.psn(), q->resp.psn)); /* > 0 */
    want_sack(q);
    if (ahead > sr_window_psns) {
        ++q->cnt.sr_refused; /* beyond what any requester of ours has in flight */
        return;
    }
    const uint32_t bit = ahead - 1;
    if (s.received.test(bit)) {
        ++q->cnt.dup_requests; /* C9-105: a duplicate is never executed again */
        return;
    }
    const reth *h = p.reth();
    /* Only a selective-repeat WRITE, and only if nothing before it can
     * touch the same memory: it belongs to the message ePSN is in (the
     * missing packets before it are that message's, other bytes), or the
     * requester marked its message independent. Otherwise a resent older
     * WRITE could land over it, or an older READ read it. */
    if (!sr_placeable(*p.info) ||
        (!(h->dma_length() & sr_place::independent) &&
         psn_diff(psn_sub(p.psn(), h->dma_length() & sr_place::index_mask), q->resp.psn) > 0)) {
        ++q->cnt.sr_held_back;
        return;
    }
    if (!sr_packet_ok(q, p, *h)) {
        ++q->cnt.sr_refused;
        return;
    }
    if (p.payload_len)
        pkt_copy_payload(p, m, 0, reinterpret_cast<uint8_t *>(h->va()), p.payload_len);
    s.received.set(bit);
    if (p.info->has(op_flag::last)) s.ends_msg.set(bit);
    ++q->cnt.sr_placed;
    ++q->cnt.rx_pkts;
    q->cnt.rx_bytes += p.payload_len;
}

void sr_advance(qp *q, uint32_t old_epsn) {
    auto &s = q->sr;
    auto &r = q->resp;
    const int32_t moved = psn_diff(r.psn, old_epsn);
    if (moved <= 0) return;
    /* bit 0 now stands for the new ePSN itself */
    s.received.shift(uint32_t(moved) - 1);
    s.ends_msg.shift(uint32_t(moved) - 1);
    bool took = false;
    while (s.received.test(0)) {
        /* placed earlier: only the message bookkeeping is left to do */
        if (s.ends_msg.test(0)) {
            r.in_msg = r.none;
            r.msn = psn_add(r.msn, 1);
        } else {
            r.in_msg = r.write;
        }
        r.psn = psn_add(r.psn, 1);
        s.received.shift(1);
        s.ends_msg.shift(1);
        took = true;
    }
    s.received.shift(1);
    s.ends_msg.shift(1);
    if (took || s.received.any()) want_sack(q);
}

bool sr_send_ack(qp *q) {
    device *d = q->dev;
    auto &s = q->sr;
    bth_fields b;
    ext_fields x;
    const bool sack = s.received.any();
    b.opcode = to_u8(sack ? ib_opcode::sr_sack : ib_opcode::rc_acknowledge);
    b.dest_qp = q->attr.dest_qp_num;
    b.psn = psn_sub(q->resp.psn, 1); /* everything up to here arrived, in order */
    x.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
    x.msn = q->resp.msn;
    sack_eth bitmap{};
    if (sack) {
        for (uint32_t i = 0; i < sr_window_psns; ++i)
            if (s.received.test(i)) bitmap.set_received(i);
        x.sack_bitmap = bitmap.bitmap;
    }
    bool icrc_due;
    rte_mbuf *m = d->build(q->hdr, b, x, nullptr, 0, &icrc_due);
    if (!m) {
        ++d->cnt().tx_alloc_fail;
        return false;
    }
    d->tx(m, icrc_due);
    ++q->cnt.tx_pkts;
    ++q->cnt.tx_acks;
    if (sack) ++q->cnt.sacks_sent;
    return true;
}

/* ---- requester */

/* The remote bytes a WQE may touch, or false when it names none. */
static bool remote_range(const send_wqe &w, uint64_t *va, uint64_t *len) {
    const wr_opcode_info &op = wr_opcode_lookup(w.opcode);
    if (!op.has(wr_flag::needs_rkey)) return false;
    *va = w.remote_addr;
    *len = op.has(wr_flag::atomic) ? 8 : w.length;
    return true;
}

/* How many earlier WQEs sr_independent looks at; with more outstanding the
 * message is taken in order (a cost bound, not a limit of the scheme). */
inline constexpr uint32_t sr_independent_scan = 128;

bool sr_independent(const qp *q, uint32_t idx) {
    const send_wqe &w = sq_at(q, idx);
    uint64_t va, len;
    if (!remote_range(w, &va, &len)) return false;
    if (idx - q->sq_comp > sr_independent_scan) return false;
    for (uint32_t i = q->sq_comp; i != idx; ++i) {
        const send_wqe &e = sq_at(q, i);
        /* an invalidation may end the key this WRITE uses */
        if (e.opcode == wr_opcode::send_with_inv) return false;
        uint64_t eva, elen;
        if (!remote_range(e, &eva, &elen) || elen == 0 || len == 0) continue;
        if (eva < va + len && va < eva + elen) return false;
    }
    return true;
}

/* A SACK shows a PSN missing again only after about an RTT: the resend
 * may still be on its way. */
static uint64_t resend_gap_ns(const qp *q) {
    uint64_t g = q->loss.srtt_ns;
    return g ? g : 1;
}

static void maybe_resend(qp *q, uint32_t psn, uint64_t now) {
    auto &s = q->sr;
    const uint32_t slot = psn % sr_window_psns;
    if (s.resent_psn[slot] == psn && s.resent_ns[slot] &&
        now - s.resent_ns[slot] < resend_gap_ns(q))
        return;
    if (!req_resend_psn(q, psn)) return;
    s.resent_psn[slot] = psn;
    s.resent_ns[slot] = now ? now : 1;
    ++q->cnt.sack_resends;
    ++q->cnt.retrans_pkts;
}

/* Resend what the bitmap shows missing below its highest received PSN:
 * every packet PSN of a SEND/WRITE, the first PSN of a READ or atomic (the
 * rest of a READ's PSNs are its responses' and never show as received). */
static void resend_missing(qp *q, uint32_t epsn, const sr_bits &got) {
    const int hi = got.highest();
    if (hi < 0) return;
    const uint32_t end = psn_add(epsn, uint32_t(hi) + 1); /* the highest PSN received */
    const uint64_t now = q->dev->now_ns();
    for (uint32_t i = q->sq_comp; i != q->sq_head; ++i) {
        send_wqe &w = sq_at(q, i);
        if (w.state != wqe_state::issued) break;
        if (psn_diff(w.first_psn, end) >= 0) break;
        if (psn_diff(w.last_psn, epsn) < 0) continue;
        const bool one_request = wr_opcode_lookup(w.opcode).has_any(wr_flag::read_or_atomic);
        uint32_t from = psn_diff(w.first_psn, epsn) > 0 ? w.first_psn : epsn;
        uint32_t to = one_request ? w.first_psn : w.last_psn;
        if (one_request && from != w.first_psn) continue;
        for (uint32_t psn = from; psn_diff(psn, to) <= 0 && psn_diff(psn, end) < 0;
             psn = psn_add(psn, 1)) {
            const int32_t off = psn_diff(psn, epsn); /* 0 is ePSN, missing; bit off - 1 */
            if (off > 0 && got.test(uint32_t(off) - 1)) continue;
            if (q->state != qp_state::rts && q->state != qp_state::sqd) return;
            maybe_resend(q, psn, now);
        }
    }
}

void sack_rcv(qp *q, const roce_packet &p, rte_mbuf *m) {
    if (!q->attr.selective_repeat) {
        ++q->cnt.sack_refused; /* we never asked for one */
        return;
    }
    const uint32_t epsn = psn_add(p.psn(), 1);
    const int32_t gain = psn_diff(epsn, q->comp.psn);
    if (gain < 0) {
        ++q->cnt.dup_responses; /* overtaken by a later ACK */
        return;
    }
    sr_bits got;
    const sack_eth *se = p.sack_eth();
    for (uint32_t i = 0; i < sr_window_psns; ++i)
        if (se->received(i)) got.set(i);
    /* every PSN it names must be one we sent */
    const int hi = got.highest();
    const uint32_t top = hi < 0 ? epsn : psn_add(epsn, uint32_t(hi) + 1);
    if (psn_diff(epsn, q->req.max_psn_sent) > 0 || psn_diff(top, q->req.max_psn_sent) >= 0) {
        ++q->cnt.sack_refused;
        return;
    }
    ++q->cnt.sacks_rcvd;
    /* the cumulative part is an ACK of p.psn() (completes WQEs, restarts
     * the timer); a SACK that moves nothing restarts no timer, so the ACK
     * timeout still bounds a hole that never fills */
    if (gain > 0) {
        comp_rcv_response(q, p, m);
        if (q->state != qp_state::rts && q->state != qp_state::sqd) return;
    }
    resend_missing(q, epsn, got);
}

} // namespace uroce

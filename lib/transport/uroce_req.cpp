/* SPDX-License-Identifier: BSD-3-Clause
 * Requester (rxe_req.c's job): validates and queues send work requests,
 * segments each WQE into path-MTU packets with FIRST/MIDDLE/LAST/ONLY
 * opcodes, assigns PSNs, enforces the send window, max_rd_atomic and
 * fences, and restarts from the completer's PSN on retry (go-back-N).
 * Packets are rebuilt from the WQE on retransmission; nothing is kept per
 * packet.
 */
#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <rte_mbuf.h>

#include "uroce_cq.h"
#include "uroce_device.h"
#include "uroce_psn.h"
#include "uroce_qp.h"
#include "uroce_wr_opcode.h"

namespace uroce {

static verbs_error check_wr(const qp *q, const send_wr *wr, uint64_t *len_out) {
    const wr_opcode_info &op = wr_opcode_lookup(wr->opcode);
    if (!op.allowed_on(q->type)) return verbs_error::inval;
    if (wr->num_sge < 0 || uint32_t(wr->num_sge) > q->cap.max_send_sge) return verbs_error::inval;
    if (wr->num_sge > 0 && !wr->sg_list) return verbs_error::inval;
    uint64_t len = 0;
    for (int i = 0; i < wr->num_sge; ++i)
        len += load_own_width(wr->sg_list[i].length); /* not as whole SGEs (uroce_srq.h) */
    if (len > max_msg_size) return verbs_error::inval;
    if (wr->send_flags & send_inline) {
        if (op.has_any(wr_flag::read_or_atomic) || len > q->cap.max_inline_data)
            return verbs_error::inval;
    }
    if (op.has(wr_flag::atomic) && (wr->num_sge != 1 || len != 8)) return verbs_error::inval;
    if (q->type == qp_type::ud) {
        if (!wr->wr.ud.ah || wr->wr.ud.ah->dev != q->dev) return verbs_error::inval;
        if (len > q->dev->max_mtu_bytes() || wr->wr.ud.remote_qpn > psn_mask)
            return verbs_error::inval;
    }
    *len_out = len;
    return verbs_error::ok;
}

/* Writes WQE w, built on the stack, to its slot with streaming stores: a
 * whole line leaves in one write that does not read the line first, nor
 * keep it in the caches (device::sq_stream says when that pays). No fence
 * follows. Only the device's thread reads the slots (<uroce/verbs.h>: one
 * thread per device; a work_channel posts on the device's own thread), and
 * a device that changes threads does so under a lock (compat's stack
 * lock), whose locked instruction orders the streaming stores before it:
 * "reads or writes cannot be reordered with I/O instructions, locked
 * instructions, or serializing instructions" (Intel SDM vol. 3A, "Memory
 * Ordering in P6 and More Recent Processor Families"). An sfence after
 * each post halved the 4096-QP rate. */
static inline void sq_store_stream(send_wqe &slot, const send_wqe &w) {
#if defined(__SSE2__)
    static_assert(sizeof(send_wqe) == 4 * sizeof(__m128i) && alignof(send_wqe) >= 16);
    const __m128i *from = reinterpret_cast<const __m128i *>(&w);
    __m128i *to = reinterpret_cast<__m128i *>(&slot);
    _mm_stream_si128(to, _mm_load_si128(from));
    _mm_stream_si128(to + 1, _mm_load_si128(from + 1));
    _mm_stream_si128(to + 2, _mm_load_si128(from + 2));
    _mm_stream_si128(to + 3, _mm_load_si128(from + 3));
#else
    slot = w;
#endif
}

/* Fills slot with wr (checked: len is its length). Streamed, the WQE is
 * built whole on the stack first, its fields not set here as a fresh one
 * has them (the requester sets them before it reads them), and then
 * written to the slot in one go. */
template <bool Stream>
static inline void write_wqe(qp *q, const send_wr *wr, uint64_t len, send_wqe &slot) {
    alignas(send_wqe) unsigned char built[sizeof(send_wqe)];
    send_wqe &w = Stream ? *new (built) send_wqe : slot;
    const wr_opcode_info &op = wr_opcode_lookup(wr->opcode);
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    const bool carries_inline = (wr->send_flags & send_inline) && len > 0;
    w.flags = uint8_t((wr->send_flags & (send_fence | send_signaled | send_solicited)) |
                      (q->sq_sig_all ? send_signaled : 0u) | (carries_inline ? send_inline : 0u));
    if (op.has(wr_flag::has_inv))
        w.invalidate_rkey = wr->invalidate_rkey;
    else
        w.imm_data = wr->imm_data;
    w.length = uint32_t(len); /* check_wr: at most max_msg_size */
    w.state = wqe_state::posted;
    w.status = wc_status::success;
    w.rd_counted = false;
    if (op.has(wr_flag::atomic)) {
        w.remote_addr = wr->wr.atomic.remote_addr;
        w.rkey = wr->wr.atomic.rkey;
        sq_atomic_at(q, slot) = {load_own_width(wr->wr.atomic.compare_add),
                                 load_own_width(wr->wr.atomic.swap)};
    } else if (q->type == qp_type::ud) {
        w.ah = wr->wr.ud.ah;
        w.remote_qpn = wr->wr.ud.remote_qpn;
        w.remote_qkey = wr->wr.ud.remote_qkey;
    } else {
        w.remote_addr = wr->wr.rdma.remote_addr;
        w.rkey = wr->wr.rdma.rkey;
    }
    if (carries_inline) {
        uint8_t *p = sq_inline_at(q, slot);
        for (int i = 0; i < wr->num_sge; ++i) {
            std::memcpy(p, reinterpret_cast<const void *>(wr->sg_list[i].addr),
                        wr->sg_list[i].length);
            p += wr->sg_list[i].length;
        }
        w.num_sge = 0;
    } else {
        w.num_sge = uint8_t(wr->num_sge);
        sge *sg = Stream && q->sq_max_sge == 1 ? &w.sg0 : sq_sgl(q, slot);
        for (int i = 0; i < wr->num_sge; ++i)
            copy_sge(sg[i], wr->sg_list[i]);
    }
    if (Stream) sq_store_stream(slot, w);
}

verbs_error req_post_send(qp *q, send_wr *wr, send_wr **bad_wr) {
    if (q->state == qp_state::reset || q->state == qp_state::init || q->state == qp_state::rtr) {
        if (bad_wr) *bad_wr = wr;
        return verbs_error::inval;
    }
    const bool stream = q->dev->sq_stream();
    for (; wr; wr = wr->next) {
        uint64_t len = 0;
        verbs_error e = check_wr(q, wr, &len);
        if (e == verbs_error::ok && q->sq_head - q->sq_comp > q->sq_mask) e = verbs_error::nomem;
        if (e == verbs_error::ok && q->sq_head - q->sq_comp >= q->cap.max_send_wr)
            e = verbs_error::nomem;
        if (e != verbs_error::ok) {
            if (bad_wr) *bad_wr = wr;
            return e;
        }
        if (stream)
            write_wqe<true>(q, wr, len, sq_at(q, q->sq_head));
        else
            write_wqe<false>(q, wr, len, sq_at(q, q->sq_head));
        ++q->sq_head;
    }
    if (q->state == qp_state::err)
        qp_flush(q); /* IBTA 10.3.1.11: WRs posted in Error complete as flushed */
    else if (q->state == qp_state::sqe)
        qp_to_sqe(q); /* and so do send WRs posted in SQE */
    else
        q->dev->schedule(q);
    return verbs_error::ok;
}

/* Local memory of a WQE: every SGE must name a registered MR of the QP's PD
 * covering it; READ and atomic results are written, so they need local write. */
static bool check_local(qp *q, send_wqe &w) {
    if (w.is_inline()) return true;
    unsigned need =
        wr_opcode_lookup(w.opcode).has(wr_flag::writes_local) ? unsigned(access_local_write) : 0u;
    const sge *sg = sq_sgl(q, w);
    for (uint32_t i = 0; i < w.num_sge; ++i) {
        if (sg[i].length == 0) continue;
        mr *m;
        if (mr_check(q->dev->mrs(), q->req.lkeys, sg[i].lkey, q->pd, need, sg[i].addr, sg[i].length,
                     &m) != mr_status::ok)
            return false;
    }
    return true;
}

/* The SGE pieces covering [off, off+len) of the WQE's data are still
 * registered: packets are rebuilt from user memory on every (re)send, so a
 * dereg_mr with the WR in flight must stop us before we read. The WQE being
 * issued had its whole memory checked (check_local) at an MR epoch; while
 * no key has gone since, its packets need no second look-up (two MR lines
 * and the key index per packet: 2% of a 64 B SEND). */
static bool local_range_ok(qp *q, const send_wqe &w, uint64_t off, uint64_t len) {
    if (w.is_inline() || len == 0) return true;
    if (&w == q->req.local_ok_wqe && q->dev->mrs().epoch() == q->req.local_ok_epoch) return true;
    const sge *sg = sq_sgl(q, w);
    uint32_t i = 0;
    while (i < w.num_sge && off >= sg[i].length)
        off -= sg[i++].length;
    while (len && i < w.num_sge) {
        uint64_t c = sg[i].length - off;
        if (c > len) c = len;
        mr *m;
        if (mr_check(q->dev->mrs(), q->req.lkeys, sg[i].lkey, q->pd, 0, sg[i].addr + off, c, &m) !=
            mr_status::ok)
            return false;
        len -= c;
        off = 0;
        ++i;
    }
    return true;
}

/* An RC QP's in-flight window (uroce_loss.cpp) is full once next_psn is
 * that many PSNs past the oldest unacknowledged one. */
static inline bool window_full_at(const qp *q, uint32_t next_psn) {
    return q->type == qp_type::rc && psn_diff(next_psn, q->comp.psn) >= int32_t(q->loss.window);
}

bool req_has_work(const qp *q) {
    if (q->state != qp_state::rts && q->state != qp_state::sqd) return false;
    if (q->req.need_retry) return true;
    /* a full window waits for an ACK, which schedules the QP (comp_rcv):
     * not rescheduled every round meanwhile (thousands of QPs, -q 4096) */
    if (window_full_at(q, q->req.psn)) return false;
    return q->req.wqe != q->sq_head && !q->req.rnr_wait;
}

/* Go-back-N (IBTA 9.7.5.2: after a timeout or a NAK the requester resends
 * from the first unacknowledged PSN, as rxe_req.c's req_retry). Packets are
 * rebuilt from the WQEs. */
void req_reposition(qp *q) {
    q->req.wqe = q->sq_comp;
    q->req.psn = q->comp.psn;
    q->req.offset = 0;
    q->req.pkts_since_ack_req = 0;
    if (q->sq_comp == q->sq_head) return;
    send_wqe &w = sq_at(q, q->sq_comp);
    if (w.state == wqe_state::posted || w.state == wqe_state::error) return;
    /* resume inside the WQE: the packets before comp.psn were acknowledged
     * (or, for a READ, their responses arrived) */
    int32_t done_psns = psn_diff(q->comp.psn, w.first_psn);
    if (done_psns > 0 && !wr_opcode_lookup(w.opcode).has(wr_flag::atomic)) {
        q->req.offset = uint64_t(done_psns) * q->mtu;
        if (q->req.offset > w.length) q->req.offset = w.length;
    }
}

static void do_retry(qp *q) {
    q->req.need_retry = false;
    req_reposition(q);
    if (q->sq_comp != q->sq_head) ++q->cnt.retransmits;
}

void req_start_retry(qp *q) {
    q->req.need_retry = true;
    q->dev->schedule(q);
}

static uint8_t pick_opcode(qp_type t, wr_opcode op, bool first, bool last) {
    uint8_t base = t == qp_type::uc ? 0x20 : 0x00;
    using O = ib_opcode;
    switch (op) {
    case wr_opcode::send:
        return base + to_u8(first ? (last ? O::rc_send_only : O::rc_send_first)
                                  : (last ? O::rc_send_last : O::rc_send_middle));
    case wr_opcode::send_with_imm:
        return base + to_u8(first ? (last ? O::rc_send_only_imm : O::rc_send_first)
                                  : (last ? O::rc_send_last_imm : O::rc_send_middle));
    case wr_opcode::send_with_inv:
        return to_u8(first ? (last ? O::rc_send_only_inv : O::rc_send_first)
                           : (last ? O::rc_send_last_inv : O::rc_send_middle));
    case wr_opcode::rdma_write:
        return base + to_u8(first ? (last ? O::rc_rdma_write_only : O::rc_rdma_write_first)
                                  : (last ? O::rc_rdma_write_last : O::rc_rdma_write_middle));
    case wr_opcode::rdma_write_with_imm:
        return base + to_u8(first ? (last ? O::rc_rdma_write_only_imm : O::rc_rdma_write_first)
                                  : (last ? O::rc_rdma_write_last_imm : O::rc_rdma_write_middle));
    default:
        return 0xff;
    }
}

/* A WQE whose local memory is not (or no longer) registered for it: it
 * fails with a local protection error, completed in order (now if it is the
 * oldest, else when the completer reaches it); then RC goes to ERR and
 * UC/UD to SQE (IBTA 10.3.1.7). */
static void fail_wqe_local_access(qp *q, send_wqe &w) {
    w.state = wqe_state::error;
    w.status = wc_status::loc_prot_err;
    if (w.rd_counted) {
        w.rd_counted = false;
        --q->req.rd_atomic_outstanding;
    }
    if (q->sq_comp == q->req.wqe) {
        post_send_cqe(q, w, w.status);
        ++q->sq_comp;
        if (q->type == qp_type::rc)
            qp_to_error(q);
        else
            qp_to_sqe(q);
    }
}

enum class build_status { ok, no_mbuf, local_access };

/* A request packet built by build_req_pkt, for device::tx. */
struct req_pkt {
    rte_mbuf *m = nullptr;
    uint32_t payload = 0;  /* payload bytes */
    uint32_t npsn = 1;     /* PSNs it consumes */
    bool last = true;      /* the message's last packet */
    bool icrc_due = false; /* its ICRC is left to tx_flush */
};

/* A UD datagram's frame: the AH's headers with the QP's own UDP source
 * port. rxe sends a UD QP's datagrams (QP1's MADs too) from 0xC000 +
 * hash_32(qpn, 14), whatever the AH (rxe_qp.c src_port; ud_udp_sport()).
 * Out of line, so that the template's copy (80 bytes, zeroed first) is not
 * in the frame of every RC packet's build_req_pkt. */
[[gnu::noinline]] static rte_mbuf *build_ud_frame(qp *q, const send_wqe &w, const bth_fields &b,
                                                  const ext_fields &x, const payload_src &src,
                                                  uint32_t payload, bool *icrc_due) {
    hdr_template t = w.ah->hdr;
    reinterpret_cast<udp_hdr *>(t.bytes + t.l2_len + t.l3_len)->set_src_port(q->path.udp_sport);
    return q->dev->build(t, b, x, &src, payload, icrc_due);
}

/* One request packet of WQE w: the one at byte offset off, with PSN psn.
 * Everything a packet carries comes from the WQE, so a first send, a
 * go-back-N resend and a probe build it the same way. ack_req is the
 * packet's AckReq bit unless it is the message's last packet (always set). */
static build_status build_req_pkt(qp *q, const send_wqe &w, uint32_t psn, uint64_t off,
                                  bool ack_req, req_pkt &out) {
    device *d = q->dev;
    bth_fields b;
    ext_fields x;
    payload_src src;
    src.sg = sq_sgl(q, w);
    src.num_sge = w.num_sge;
    src.flat = w.is_inline() ? sq_inline_at(q, w) : nullptr;
    uint32_t payload = 0;
    uint32_t npsn = 1;
    bool last_pkt = true;
    const wr_opcode_info &op = wr_opcode_lookup(w.opcode);

    if (q->type == qp_type::ud) {
        b.opcode =
            to_u8(op.has(wr_flag::has_imm) ? ib_opcode::ud_send_only_imm : ib_opcode::ud_send_only);
        b.dest_qp = w.remote_qpn;
        /* IBTA 10.2.4: a WR Q_Key with the high bit set means "use the QP's". */
        x.qkey = (w.remote_qkey & 0x80000000u) ? q->attr.qkey : w.remote_qkey;
        x.src_qp = q->qpn;
        x.imm_raw = w.imm_data;
        payload = uint32_t(w.length);
        if (!local_range_ok(q, w, 0, payload)) return build_status::local_access;
    } else if (op.has(wr_flag::read)) {
        uint64_t rem = w.length - off;
        b.opcode = to_u8(ib_opcode::rc_rdma_read_request);
        x.va = w.remote_addr + off;
        x.rkey = w.rkey;
        x.dma_length = uint32_t(rem);
        /* IBTA 9.7.4.1.3: a READ of n bytes consumes ceil(n / MTU) PSNs (at least one). */
        npsn = qp_psns_for(q, rem);
    } else if (op.has(wr_flag::atomic)) {
        b.opcode = to_u8(w.opcode == wr_opcode::atomic_cmp_and_swp ? ib_opcode::rc_compare_swap
                                                                   : ib_opcode::rc_fetch_add);
        x.va = w.remote_addr;
        x.rkey = w.rkey;
        const wqe_atomic &a = sq_atomic_at(q, w);
        x.swap_add = w.opcode == wr_opcode::atomic_cmp_and_swp ? a.swap : a.compare_add;
        x.compare = a.compare_add;
    } else {
        uint64_t rem = w.length - off;
        bool first = off == 0;
        last_pkt = rem <= q->mtu;
        payload = last_pkt ? uint32_t(rem) : q->mtu;
        if (!local_range_ok(q, w, off, payload)) return build_status::local_access;
        b.opcode = pick_opcode(q->type, w.opcode, first, last_pkt);
        if (q->attr.selective_repeat && w.opcode == wr_opcode::rdma_write) {
            /* selective repeat: every WRITE packet says where it goes, so
             * the responder can place it out of order (uroce_sack.cpp) */
            b.opcode = sr_write_opcode(first, last_pkt);
            x.va = w.remote_addr + off;
            x.rkey = w.rkey;
            x.dma_length = sr_place::make(uint32_t(off / q->mtu), w.sr_independent);
        } else if (first) {
            x.va = w.remote_addr;
            x.rkey = w.rkey;
            x.dma_length = uint32_t(w.length);
        }
        if (op.has(wr_flag::has_inv))
            x.rkey = w.invalidate_rkey; /* IETH; no ImmDt on these opcodes */
        else
            x.imm_raw = w.imm_data;
        src.offset = off;
    }
    if (q->type != qp_type::ud) b.dest_qp = q->attr.dest_qp_num;
    b.psn = psn;
    b.solicited = last_pkt && (w.flags & send_solicited);
    b.ack_req = q->type == qp_type::rc && (ack_req || last_pkt);
    out.m = q->type == qp_type::ud ? build_ud_frame(q, w, b, x, src, payload, &out.icrc_due)
                                   : d->build(q->hdr, b, x, &src, payload, &out.icrc_due);
    if (!out.m) {
        ++d->cnt().tx_alloc_fail;
        return build_status::no_mbuf;
    }
    out.payload = payload;
    out.npsn = npsn;
    out.last = last_pkt;
    return build_status::ok;
}

/* Send one packet of the current WQE; false when out of mbufs or when its
 * local memory is no longer registered. */
static bool send_one(qp *q, send_wqe &w) {
    device *d = q->dev;
    const uint32_t psn = q->req.psn;
    const wr_opcode_info &op = wr_opcode_lookup(w.opcode);
    /* AckReq on the last packet of a message, at least every
     * ack_req_interval packets, and on the packet that fills the in-flight
     * window (IBTA 9.7.6.1.2 leaves the choice to the requester): the window
     * (16 PSNs and up, uroce_loss.cpp) may be smaller than the interval, and
     * a requester stopped on a packet that asks for nothing waits for a
     * probe or the ACK timeout. */
    const bool ack_req_due =
        q->req.pkts_since_ack_req + 1 >= ack_req_interval || window_full_at(q, psn_add(psn, 1));
    req_pkt pkt;
    switch (build_req_pkt(q, w, psn, q->req.offset, ack_req_due, pkt)) {
    case build_status::ok:
        break;
    case build_status::local_access:
        fail_wqe_local_access(q, w);
        return false;
    case build_status::no_mbuf:
        ++d->cnt().tx_mbuf_waits; /* the QP stays scheduled: it waits, nothing fails */
        return false;
    }
    const uint32_t payload = pkt.payload;
    const bool last_pkt = pkt.last;
    if (q->type == qp_type::rc) {
        if (ack_req_due || last_pkt)
            q->req.pkts_since_ack_req = 0;
        else
            ++q->req.pkts_since_ack_req;
    }
    const uint32_t frame_len = pkt.m->pkt_len;
    d->tx(pkt.m, pkt.icrc_due);
    if (q->cc.paced) cc_on_sent(q->cc, frame_len);
    ++q->cnt.tx_pkts;
    q->cnt.tx_bytes += payload;
    const bool resend = q->type == qp_type::rc && psn_diff(psn, q->req.max_psn_sent) < 0;
    if (resend) ++q->cnt.retrans_pkts;
    q->req.psn = psn_add(psn, pkt.npsn);
    if (psn_diff(q->req.psn, q->req.max_psn_sent) > 0) q->req.max_psn_sent = q->req.psn;

    if (q->type == qp_type::rc) {
        if (op.has_any(wr_flag::read_or_atomic)) {
            q->req.offset = w.length;
        } else {
            q->req.offset += payload;
        }
        bool wqe_done = last_pkt || op.has_any(wr_flag::read_or_atomic);
        if (wqe_done) {
            q->req.offset = 0;
            ++q->req.wqe;
        }
        if (!q->retrans_timer.armed()) comp_arm_retrans(q);
        loss_on_send(q, psn, ack_req_due || last_pkt, resend);
    } else {
        /* UC and UD: no responses; the WQE completes once its last packet is out. */
        q->req.offset += payload;
        if (last_pkt) {
            q->req.offset = 0;
            ++q->req.wqe;
            w.state = wqe_state::done;
            comp_complete_wqe(q, w);
        }
    }
    return true;
}

/* The issued WQE whose PSN range holds psn, or nullptr. */
static send_wqe *wqe_for_psn(qp *q, uint32_t psn) {
    for (uint32_t i = q->sq_comp; i != q->sq_head; ++i) {
        send_wqe &w = sq_at(q, i);
        if (w.state != wqe_state::issued) return nullptr;
        if (psn_diff(psn, w.first_psn) >= 0 && psn_diff(psn, w.last_psn) <= 0) return &w;
    }
    return nullptr;
}

bool req_resend_psn(qp *q, uint32_t psn) {
    if (q->type != qp_type::rc) return false;
    /* Probes and SACK resends come from timers and the receive path, not
     * from a scheduler turn that kept room in the TX queue for them: with
     * the queue full (the port refusing, back-pressure) the frame would be
     * dropped. A port that busy is no silent tail: send nothing (the
     * caller counts only what went out; the ACK timeout still guards). */
    if (q->dev->tx_room() == 0) return false;
    send_wqe *w = wqe_for_psn(q, psn);
    if (!w) return false;
    /* A READ is asked again from this PSN on (a duplicate READ for the
     * rest of the range, IBTA 9.7.5.1.4, as a go-back-N resend asks it);
     * an atomic is one PSN. */
    uint64_t off = 0;
    if (!wr_opcode_lookup(w->opcode).has(wr_flag::atomic)) {
        off = uint64_t(psn_diff(psn, w->first_psn)) * q->mtu;
        if (off > w->length) return false;
    }
    req_pkt pkt;
    if (build_req_pkt(q, *w, psn, off, true, pkt) != build_status::ok) return false;
    q->dev->tx(pkt.m, pkt.icrc_due);
    ++q->cnt.tx_pkts;
    q->cnt.tx_bytes += pkt.payload;
    loss_on_send(q, psn, true, true);
    return true;
}

unsigned req_process(qp *q, unsigned budget) {
    if (q->state != qp_state::rts && q->state != qp_state::sqd) return 0;
    if (q->req.need_retry) do_retry(q);
    if (q->req.rnr_wait) return 0;
    unsigned sent = 0;
    /* DCQCN / line-rate pacing (uroce_dcqcn.h): one clock read per turn */
    const uint64_t now = q->cc.paced ? q->dev->now_ns() : 0;
    uint32_t max_rd = q->attr.max_rd_atomic ? q->attr.max_rd_atomic : 1;
    /* the turn's first WQEs were asked for a turn ago (run_scheduled,
     * qp_prefetch_turn_wqes); the loop asks for the rest ahead of itself */
    while (sent < budget && q->req.wqe != q->sq_head) {
        /* SQD: finish the WQE in progress, start no new one (IBTA 10.3.1.6). */
        if (q->state == qp_state::sqd && q->req.offset == 0 &&
            sq_at(q, q->req.wqe).state == wqe_state::posted)
            break;
        if (window_full_at(q, q->req.psn)) break;
        if (q->cc.paced && !cc_may_send(q->cc, now)) break;
        send_wqe &w = sq_at(q, q->req.wqe);
        /* A turn walks its WQEs in order, each written at posting and cold
         * by now with thousands of QPs; the hardware's stream prefetcher
         * has not learned a run of a few dozen lines by its end. (A slot
         * past the posted ones is in the ring too: only a wasted hint.) */
        qp_prefetch_send_wqe(q, q->req.wqe + req_wqe_prefetch_ahead);
        if (w.state == wqe_state::error) break;
        const wr_opcode_info &op = wr_opcode_lookup(w.opcode);
        if (w.state == wqe_state::posted) {
            if (q->type == qp_type::rc) {
                /* Fence: wait for every earlier READ and atomic to complete (IBTA 10.8.3.3). */
                if ((w.flags & send_fence) && q->req.rd_atomic_outstanding) break;
                if (op.has_any(wr_flag::read_or_atomic) && q->req.rd_atomic_outstanding >= max_rd)
                    break;
            }
            if (!check_local(q, w)) {
                fail_wqe_local_access(q, w);
                break;
            }
            q->req.local_ok_wqe = &w;
            q->req.local_ok_epoch = q->dev->mrs().epoch();
            w.state = wqe_state::issued;
            w.first_psn = q->req.psn;
            uint64_t npsn = 1;
            if (!op.has(wr_flag::atomic) && q->type != qp_type::ud) npsn = qp_psns_for(q, w.length);
            w.last_psn = psn_add(w.first_psn, uint32_t(npsn - 1));
            w.sr_independent = q->attr.selective_repeat && sr_independent(q, q->req.wqe);
            if (op.has_any(wr_flag::read_or_atomic) && !w.rd_counted) {
                w.rd_counted = true;
                ++q->req.rd_atomic_outstanding;
            }
        }
        if (!send_one(q, w)) break;
        ++sent;
    }
    return sent;
}

} // namespace uroce

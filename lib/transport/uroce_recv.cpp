/* SPDX-License-Identifier: BSD-3-Clause
 * Receive dispatch (rxe_recv.c's job): parse, IPv4 header checksum, ICRC,
 * destination GID, QPN lookup, transport, source address (connected QPs)
 * and P_Key checks, then requests to the responder and responses to the
 * completer. Every drop is counted by reason (doc/security.md lists them).
 */
#include <cassert>

#include <rte_mbuf.h>

#include "uroce_device.h"
#include "uroce_pkt.h"
#include "uroce_qp.h"

namespace uroce {

static inline bool transport_matches(ib_transport t, qp_type q) {
    return (t == ib_transport::rc && q == qp_type::rc) ||
           (t == ib_transport::uc && q == qp_type::uc) ||
           (t == ib_transport::ud && q == qp_type::ud);
}

/* The IPv4 header checksum (RFC 791). The ICRC masks the checksum, TTL
 * and TOS out (Annex A17.3.3), so it cannot vouch for the header; the
 * checksum must. The PMD's verdict is used when it gives one (GOOD, or
 * NONE: header verified, checksum field not); otherwise the header is
 * summed here, 20 bytes in the common case. */
static inline bool ipv4_csum_ok(const roce_packet &p, const rte_mbuf *m) {
    switch (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) {
    case RTE_MBUF_F_RX_IP_CKSUM_GOOD:
    case RTE_MBUF_F_RX_IP_CKSUM_NONE:
        return true;
    case RTE_MBUF_F_RX_IP_CKSUM_BAD:
        return false;
    default:
        break;
    }
    return p.ipv4()->checksum_ok();
}

/* A connected (RC/UC) QP takes packets from its path only (rxe_recv.c
 * check_addr): the source GID is the QP's destination GID and the
 * destination GID its source GID. Before RTR a QP has no path; the
 * responder's and completer's state checks drop those packets. */
static inline bool addr_matches(const qp *q, const roce_packet &p, const gid &dst) {
    if (q->type == qp_type::ud || q->state == qp_state::reset || q->state == qp_state::init)
        return true;
    gid src =
        p.ip_version == 4 ? gid::from_ipv4(p.ipv4()->src_addr()) : gid::from_bytes(p.ipv6()->src);
    return src == q->path.dgid && dst == q->path.sgid;
}

/* If the ICRC check of frame m (parsed in f) is deferred, begins it in
 * rx_ahead_, where the placement of the frame before it folds its payload
 * (rx_place). Nothing is decided here: rx_one counts and checks it all. */
void device::rx_prepare(const rte_mbuf *m, const rx_frame &f) {
    rx_ahead_.pending = false;
    if (f.err == parse_error::ok && pkt_icrc_defers(f.p, m)) pkt_icrc_begin(f.p, rx_ahead_);
}

void device::rx_place(const roce_packet &p, const rte_mbuf *m, uint32_t off, uint8_t *dst,
                      uint32_t len) {
    if (rx_icrc_.pending && off >= rx_icrc_.done) {
        icrc_check_copy(rx_icrc_, off, dst, len); /* pending: one segment, payload in p.hdr */
        return;
    }
    if (m->nb_segs == 1) {
        /* A frame is counted once, at its first fold: a placement over
         * several SGEs folds the same next frame several times. */
        const bool first_fold = rx_ahead_.pending && rx_ahead_.done == 0;
        icrc_check_place(rx_ahead_, dst, p.hdr + p.payload_offset + off, len);
        if (first_fold && rx_ahead_.done) ++cnt_.rx_icrc_ahead;
        return;
    }
    pkt_copy_payload(p, m, off, dst, len);
}

/* f: m parsed by rx_prepare, whose deferred check (if any) rx_icrc_ now
 * holds. */
void device::rx_one(rte_mbuf *m, const rx_frame &f) {
    ++cnt_.rx_pkts;
    if (f.err != parse_error::ok) {
        ++cnt_.rx_parse_errors;
        return;
    }
    const roce_packet &p = f.p;
    if (p.ip_version == 4 && !ipv4_csum_ok(p, m)) {
        ++cnt_.rx_ip_csum_errors;
        return;
    }
    /* The ICRC covers everything from the IP header on; nothing in a frame
     * that fails it is trusted (Annex A17.3.3). A frame with a payload to
     * place may have it checked while the payload is copied (pkt_icrc_defers;
     * doc/security.md, "Fused receive"): then every drop below counts as an
     * ICRC error if the frame fails it (drop), and the responder and the
     * completer settle it before they act on the frame. */
    if (!rx_icrc_.pending) {
        rx_icrc_.ok = pkt_icrc_ok(p, m);
        if (!rx_icrc_.ok) {
            ++cnt_.rx_icrc_errors;
            return;
        }
    }
    auto drop = [this](uint64_t &reason) {
        if (rx_trusted()) ++reason;
    };
    gid dst =
        p.ip_version == 4 ? gid::from_ipv4(p.ipv4()->dst_addr()) : gid::from_bytes(p.ipv6()->dst);
    if (!has_gid(dst)) {
        drop(cnt_.rx_not_ours);
        return;
    }
    qp *q = lookup_qp(p.dest_qp());
    if (!q) {
        drop(cnt_.rx_no_qp);
        return;
    }
    const bool is_cnp = p.info->transport == ib_transport::cnp;
    if (!is_cnp && !transport_matches(p.info->transport, q->type)) {
        drop(cnt_.rx_wrong_transport);
        return;
    }
    if (!addr_matches(q, p, dst)) {
        drop(cnt_.rx_bad_src);
        return;
    }
    /* One P_Key table entry: the default full-member key (IBTA 10.9.3). */
    if ((p.bth()->pkey() & 0x7fff) != 0x7fff) {
        drop(cnt_.rx_bad_pkey);
        return;
    }
    if (is_cnp) [[unlikely]] { /* DCQCN's reaction point (uroce_cnp.cpp) */
        cnp_rcv(this, q);
        return;
    }
    if (frame_ecn(p) == ecn_ce) [[unlikely]] { /* DCQCN's notification point */
        if (!rx_trusted()) return;             /* a deferred ICRC: no CNP for a bad frame */
        cnp_on_ce(this, q);
    }
    if (p.info->has(op_flag::request))
        resp_rcv(q, p, m);
    else
        comp_rcv(q, p, m);
    /* A deferred ICRC is settled before anything acts on the frame */
    assert(!rx_icrc_.pending);
}

/* How many frames ahead rx_burst parses a frame and starts loading its QP
 * (stage 1), then, once those lines are in, the queue entry the frame will
 * read (stage 2), and one frame ahead a SEND's receive buffer (stage 3):
 * far enough for the lines to arrive before rx_one needs them, near enough
 * that they are still in L1 then. */
inline constexpr uint16_t rx_qp_prefetch_ahead = 4;
inline constexpr uint16_t rx_wqe_prefetch_ahead = 2;

/* A frame's lines, up to the ICRC's short-frame limit: the parse reads the
 * first, the ICRC check every one. With thousands of QPs a frame waits in
 * the ring behind a ring's worth of others and arrives cold; its first
 * line alone left the ICRC of a 64 B SEND (three lines) to miss twice. */
static inline void prefetch_frame(const rte_mbuf *m) {
    const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
    const uint32_t len = m->data_len < icrc_fuse_min ? m->data_len : uint32_t(icrc_fuse_min);
    for (uint32_t off = 0; off < len; off += RTE_CACHE_LINE_SIZE)
        rte_prefetch0(f + off);
    if (len) rte_prefetch0(f + len - 1); /* the last line, where f is not line-aligned */
}

void device::rx_burst(rte_mbuf **pkts, uint16_t n) {
    /* With thousands of QPs every frame's QP is cold (a cache miss per line
     * it reads, which dominated rx_one at 4096 QPs), and so is the WQE it
     * completes or fills: frame i + 4 is parsed and its QP loads, and frame
     * i + 2's WQE, while frame i is processed. The frames' own headers are
     * prefetched one step further ahead, so the parse finds them loaded.
     * Each frame is parsed once, there: a peek at its BTH for the QP, then
     * the parse one step before rx_one, read its headers twice (14 of
     * rx_burst's own 212 instructions a 64 B SEND, doc/performance.md
     * "Sixteenth pass"). */
    struct lookahead {
        const qp *q;           /* null: not a frame for one of our QPs, it seems */
        bool takes_recv_wqe;   /* SEND FIRST/ONLY: the next receive WQE */
        bool run_start;        /* the first frame of a run for q in this burst */
        uint32_t run;          /* which run of frames for one QP it is in */
        uint32_t sends_before; /* frames of its run before it that take a receive WQE */
    };
    constexpr uint16_t window = rx_window;
    static_assert(window > rx_qp_prefetch_ahead && (window & (window - 1)) == 0);
    lookahead ahead[window];
    rx_frame *const frames = rx_frames_;
    const qp *run_qp = nullptr;
    uint32_t run = 0, run_sends = 0;
    auto stage1 = [&](uint16_t j) {
        lookahead &a = ahead[j & (window - 1)];
        a = {nullptr, false, false, run, run_sends};
        rx_frame &f = frames[j & (window - 1)];
        f.err = parse_mbuf(pkts[j], f.p);
        if (f.err != parse_error::ok) return;
        const qp *q = lookup_qp(f.p.dest_qp());
        if (!q) return;
        const opcode_info &info = *f.p.info;
        if (q != run_qp) { /* a run of frames for one QP loads it once */
            qp_prefetch(q);
            run_qp = q;
            run_sends = 0;
            a.run = ++run;
            a.run_start = true;
        }
        a.q = q;
        a.takes_recv_wqe =
            info.has(op_flag::send | op_flag::request) && info.has_any(op_flag::first);
        a.sends_before = run_sends;
        run_sends += a.takes_recv_wqe;
    };
    /* Which receive WQE frame j will take, counted from its QP's front as
     * it is before frame i is processed: the frames of j's run from i on
     * have not taken theirs yet. */
    auto recv_wqe_ahead = [&](const lookahead &a, uint16_t i) {
        const lookahead &now = ahead[i & (window - 1)];
        return a.sends_before - (now.run == a.run ? now.sends_before : 0);
    };
    auto stage2 = [&](uint16_t j, uint16_t i) {
        const lookahead &a = ahead[j & (window - 1)];
        if (!a.q) return;
        if (a.takes_recv_wqe)
            qp_prefetch_recv_wqe(a.q, recv_wqe_ahead(a, i));
        else if (a.run_start && a.q->sq_comp != a.q->sq_head)
            qp_prefetch_send_wqe(a.q, a.q->sq_comp); /* a response: the oldest WQE */
    };
    auto stage3 = [&](uint16_t j, uint16_t i) {
        const lookahead &a = ahead[j & (window - 1)];
        if (a.q && a.takes_recv_wqe) qp_prefetch_recv_buffer(a.q, recv_wqe_ahead(a, i));
    };
    for (uint16_t i = 0; i < n && i <= rx_qp_prefetch_ahead; ++i)
        prefetch_frame(pkts[i]);
    for (uint16_t i = 0; i < n && i < rx_qp_prefetch_ahead; ++i)
        stage1(i);
    for (uint16_t i = 0; i < n && i < rx_wqe_prefetch_ahead; ++i)
        stage2(i, 0);
    if (n) stage3(0, 0);
    /* Each frame's deferred ICRC check is begun one step before rx_one
     * takes it: the frame before it then folds its payload into that check
     * while it places its own (rx_place), one pass where the CRC's
     * multiplies leave the loads and stores idle. */
    if (n) rx_prepare(pkts[0], frames[0]);
    for (uint16_t i = 0; i < n; ++i) {
        if (i + rx_qp_prefetch_ahead + 1 < n) prefetch_frame(pkts[i + rx_qp_prefetch_ahead + 1]);
        if (i + rx_qp_prefetch_ahead < n) stage1(uint16_t(i + rx_qp_prefetch_ahead));
        if (i + rx_wqe_prefetch_ahead < n) stage2(uint16_t(i + rx_wqe_prefetch_ahead), i);
        if (i + 1 < n) stage3(uint16_t(i + 1), i);
        rx_icrc_ = rx_ahead_;
        if (i + 1 < n)
            rx_prepare(pkts[i + 1], frames[(i + 1) & (window - 1)]);
        else
            rx_ahead_.pending = false;
        rx_one(pkts[i], frames[i & (window - 1)]);
    }
    rte_pktmbuf_free_bulk(pkts, n);
    /* The responder's output (one coalesced ACK or NAK per QP, READ and
     * atomic responses) leaves now, before the application can see what
     * these frames completed; with respond_on_poll, in the next poll()
     * (device_config in <uroce/verbs.h>). */
    if (!cfg_.respond_on_poll) {
        run_scheduled();
        tx_flush();
    }
}

} // namespace uroce

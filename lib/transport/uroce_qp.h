/* SPDX-License-Identifier: BSD-3-Clause
 * Queue pairs: the QP object, its send/receive work queues, and the state of
 * its three engines (requester, responder, completer), with the internal
 * functions of each role file (as rxe_loc.h lists rxe's).
 */
#ifndef UROCE_QP_H
#define UROCE_QP_H

#include <cstdint>
#include <memory>

#include <rte_prefetch.h>

#include <uroce/build.h>
#include <uroce/counters.h>
#include "uroce_cnp.h"
#include "uroce_dcqcn.h"
#include "uroce_hugemem.h"
#include "uroce_mr.h"
#include <uroce/parse.h>
#include "uroce_pkt.h"
#include "uroce_sack.h"
#include "uroce_srq.h"
#include "uroce_timer.h"
#include <uroce/verbs.h>

struct rte_mbuf;

namespace uroce {

struct cq;

/* Transport limits (rxe_param.h values where rxe has one). */
inline constexpr uint32_t max_unacked_psns = 128; /* requester window, at most */
inline constexpr uint32_t min_unacked_psns = 16;  /* the BDP cap's floor */
inline constexpr uint32_t ack_req_interval = 32;  /* AckReq at least every N packets */
inline constexpr uint32_t max_sge_limit = 32;
inline constexpr uint32_t max_inline_limit = 512;
inline constexpr uint32_t max_qp_wr_limit = 16384;
/* A CQ's most entries (query_device max_cqe): create_cq and resize_cq. */
inline constexpr uint32_t max_cqe_limit = max_qp_wr_limit * 4;
inline constexpr uint32_t max_rd_atomic_limit = 128;
inline constexpr uint32_t max_msg_size = 1u << 31;
inline constexpr uint32_t resp_burst = 64; /* read-response packets per QP per poll */
inline constexpr uint32_t req_burst = 64;  /* request packets per QP per poll */
/* The GSI QP (IBTA 3.5.3, 13.4.6.1): QPN 1, its well-known Q_Key fixed. */
inline constexpr uint32_t gsi_qp_num = 1;
inline constexpr uint32_t gsi_qp_qkey = 0x80010000u;

enum class wqe_state : uint8_t { posted, issued, done, error };

/* A send WQE is one cache line: what posting writes and the requester and
 * the completer read, per message. With thousands of QPs each of its lines
 * is a miss at posting and again at completion (it was two lines). On a QP
 * of one send SGE (perftest's, and most) the scatter list is in that line
 * too (sg0); with more, it sits in the side array sq_sges at the WQE's
 * index, as inline data and atomic operands do (sq_inline_at,
 * sq_atomic_at). Either is found from the index alone (sq_sgl), never
 * through a pointer in the WQE: that made posting wait for the cold line,
 * and a separate line of SGEs was a second miss per message. */
struct alignas(64) send_wqe {
    uint64_t wr_id = 0;
    uint32_t length = 0; /* at most max_msg_size (req_post_send checks) */
    /* as in send_wr: SEND/WRITE_WITH_IMM carry imm_data (network order),
     * SEND_WITH_INV the rkey the responder is to invalidate (IBTA 9.4.4) */
    union {
        uint32_t imm_data = 0;
        uint32_t invalidate_rkey;
    };
    union {
        uint64_t remote_addr = 0; /* RDMA and atomic: the remote VA */
        struct ah *ah;            /* UD: the address handle */
    };
    union {
        uint32_t rkey = 0;   /* RDMA and atomic */
        uint32_t remote_qpn; /* UD */
    };
    uint32_t remote_qkey = 0; /* UD */
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    /* send_flags as the WQE runs them: send_signaled also when the QP
     * signals all, send_inline only when there are bytes to carry */
    uint8_t flags = 0;
    uint8_t num_sge = 0; /* at most max_sge_limit */
    wr_opcode opcode = wr_opcode::send;
    wqe_state state = wqe_state::posted;
    wc_status status = wc_status::success;
    bool rd_counted = false; /* counted in req.rd_atomic_outstanding */
    /* selective repeat: may be placed before earlier requests (uroce_sack.cpp) */
    bool sr_independent = false;
    sge sg0; /* the scatter list of a QP with one send SGE */

    bool signaled() const { return flags & send_signaled; }
    bool is_inline() const { return flags & send_inline; }
};
static_assert(sizeof(send_wqe) == 64, "a send WQE is one cache line");
static_assert(max_sge_limit <= UINT8_MAX &&
                  (send_fence | send_signaled | send_solicited | send_inline) <= UINT8_MAX,
              "num_sge and flags fit their bytes");

/* An atomic WR's operands (send_wr::wr.atomic), beside its WQE. */
struct wqe_atomic {
    uint64_t compare_add = 0;
    uint64_t swap = 0;
};

/* A responder resource for a READ or an atomic (IBTA 9.7.5.1.4: the
 * responder keeps max_dest_rd_atomic of them to answer duplicates). */
struct rd_resource {
    enum : uint8_t { none, read, atomic } type = none;
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint64_t va = 0; /* READ: original range */
    uint64_t length = 0;
    uint32_t rkey = 0;
    uint64_t orig = 0; /* ATOMIC: the value returned (replayed for duplicates) */
    uint32_t msn = 0;
    /* output progress (READ stream or pending atomic ACK) */
    bool queued = false;
    bool replay = false; /* queued again for a duplicate (its first response went out) */
    uint32_t cur_psn = 0;
    uint64_t cur_off = 0; /* byte offset into [va, va+length) */
    uint64_t end_off = 0;
};

struct ah {
    device *dev = nullptr;
    struct pd *pd = nullptr;
    ah_attr attr;
    roce_path path;
    hdr_template hdr;
};

/* The QP's fields are laid out by how often the packet path reads them:
 * with thousands of QPs a QP's lines are cold by its next packet, so the
 * fields every packet reads come first, in as few cache lines as possible
 * (rx_burst and run_scheduled prefetch them, qp_prefetch below), and what
 * only setup, query_qp or selective repeat reads comes last
 * (doc/performance.md, "QP scaling"). */
struct qp {
    /* A QP stays where it was made (the device owns it by pointer):
     * resp.wqe_sg may point into the QP itself. */
    qp() = default;
    qp(const qp &) = delete;
    qp &operator=(const qp &) = delete;
    /* on huge pages, with its rings (uroce_hugemem.h) */
    UROCE_HUGEMEM_OPERATORS(qp)

    /* ---- read for every packet, both directions */
    device *dev = nullptr;
    cq *scq = nullptr;
    cq *rcq = nullptr;
    struct srq *srq = nullptr;
    qp_type type = qp_type::rc;
    qp_state state = qp_state::reset;
    bool sq_sig_all = false;
    bool scheduled = false; /* on one of the device's scheduler lists */
    uint32_t qpn = 0;
    uint32_t mtu = 1024; /* path MTU in bytes */
    /* send queue: [sq_comp, sq_head) posted and not yet completed */
    uint32_t sq_mask = 0;
    uint32_t sq_head = 0;
    uint32_t sq_comp = 0;
    hugemem_array<send_wqe> sq;
    /* the WQEs' scatter lists, sq_max_sge entries each at the WQE's index,
     * when that is more than one (else each in its WQE: sq_sgl);
     * sq_max_sge is cap.max_send_sge, kept among the lines a turn reads */
    hugemem_array<sge> sq_sges;
    uint32_t sq_max_sge = 1;
    qp_attr attr; /* current attributes (query_qp) */
    roce_path path;
    hdr_template hdr;

    struct {
        uint32_t psn = 0;    /* next PSN to send */
        uint32_t wqe = 0;    /* index of the WQE being sent */
        uint64_t offset = 0; /* bytes of it already sent */
        uint32_t pkts_since_ack_req = 0;
        uint32_t rd_atomic_outstanding = 0;
        uint32_t max_psn_sent = 0; /* highest PSN ever sent + 1, for counting re-sends */
        /* the WQE whose whole local memory check_local last passed, and
         * the MR table's epoch then (uroce_req.cpp, local_range_ok) */
        const send_wqe *local_ok_wqe = nullptr;
        uint64_t local_ok_epoch = 0;
        mr_key_memo lkeys; /* its WQEs' and the completer's local keys */
        bool need_retry = false;
        bool rnr_wait = false;
    } req;

    struct {
        uint32_t psn = 0; /* oldest PSN not yet acknowledged */
        uint8_t retry_left = 0;
        uint8_t rnr_left = 0;
        /* a retry is under way (timeout, NAK or gap): until forward
         * progress, NAKs and gaps start no other (one retry per loss) */
        bool retry_guard = false;
        /* the last retry, started by a gap, asked the responder again from
         * rerequest_psn up to rerequest_end (exclusive); the response that
         * showed the gap was at rerequest_seen. Until the responses to what
         * was asked before it have run out (rerequest_end - 1 seen), a later
         * gap up to rerequest_seen is repaired by its answer
         * (uroce_comp.cpp, rerequest_covers) */
        /* a response (in order, past a gap or a duplicate) has come since
         * the last retry started: a timeout then finds the responder alive
         * and stopped mid-stream (uroce_comp.cpp, comp_retrans_timeout) */
        bool resp_since_retry = false;
        /* re-requests sent on a timeout without spending retry_cnt since
         * the last forward progress (uroce_comp.cpp, comp_retrans_timeout) */
        uint8_t pokes = 0;
        /* tx_pkts when the last retry started, and the timeouts waited out
         * since with nothing sent (uroce_comp.cpp, comp_retrans_timeout) */
        uint64_t tx_pkts_at_retry = 0;
        uint8_t unsent_waits = 0;
        bool rerequest_pending = false;
        uint32_t rerequest_psn = 0;
        uint32_t rerequest_seen = 0;
        uint32_t rerequest_end = 0;
    } comp;

    struct {
        uint32_t psn = 0; /* expected PSN */
        uint32_t msn = 0;
        bool nak_sent = false;
        enum : uint8_t { none, send, write } in_msg = none;
        bool uc_drop = false; /* UC: dropping until the next FIRST/ONLY */
        /* the receive WQE of the SEND / WRITE_WITH_IMM in progress */
        bool have_wqe = false;
        uint64_t wqe_id = 0;
        uint32_t wqe_num_sge = 0;
        uint64_t wqe_len = 0;
        /* its scatter list, copied out of the ring (a slot may be posted
         * again while the message goes on): in wqe_sg_one, among the lines
         * every packet reads, where a WQE has one SGE at most, else in
         * wqe_sg_more. A separate line written as the WQE is taken and read
         * at once made each SEND wait for that line's miss. */
        sge *wqe_sg = nullptr;
        sge wqe_sg_one;
        hugemem_array<sge> wqe_sg_more;
        uint64_t recv_off = 0;
        /* the WRITE in progress */
        uint64_t write_va = 0;
        uint32_t write_rkey = 0;
        uint64_t write_len = 0;
        uint64_t write_off = 0;
        mr_key_memo lkeys; /* receive WQEs' keys */
        mr_key_memo rkeys; /* requests' R_Keys */
        /* coalesced ACK/NAK, sent after queued READ/atomic responses */
        bool ack_pending = false;
        uint8_t ack_syndrome = 0;
        uint32_t ack_psn = 0;
        /* READ/atomic resources: res_slots are allocated (the most
         * max_dest_rd_atomic can ask for), the first max_dest_rd_atomic used
         * round-robin from res_next */
        hugemem_array<rd_resource> res;
        uint32_t res_slots = 0;
        uint32_t res_next = 0;
        /* resources whose READ response stream or atomic ACK is still to be
         * sent, in PSN order, as indices into res[] */
        hugemem_array<uint16_t> reply_fifo;
        uint32_t reply_fifo_mask = 0;
        uint32_t reply_fifo_head = 0;
        uint32_t reply_fifo_tail = 0;
    } resp;

    recv_ring rq;

    /* Loss recovery beyond the spec's minimum (uroce_loss.cpp): the RTT
     * estimate, the tail-loss probe and selective repeat. */
    struct {
        /* RTT, RFC 6298's estimator on one timed PSN at a time (Karn: a
         * sample ends unused when that PSN is sent again) */
        uint64_t srtt_ns = 0;
        uint64_t rttvar_ns = 0;
        uint64_t min_rtt_ns = 0;
        uint64_t rtt_start_ns = 0;
        uint32_t rtt_psn = 0;
        bool rtt_timing = false;
        uint32_t rtt_comp_psn = 0; /* comp.psn when the timed PSN left */
        bool rtt_seeded = false;   /* srtt/rttvar from loss_seed_rtt, no sample yet */
        /* delivery rate (PSNs per second, a decaying maximum) and the
         * in-flight cap it gives: about two bandwidth-delay products */
        uint64_t delivery_pps = 0;
        uint32_t window = max_unacked_psns;
        /* tail-loss probes sent since the last forward progress */
        uint8_t probes = 0;
        /* Spurious probes (uroce_loss.cpp). ackreq_psn: the newest packet
         * sent with AckReq (only those draw a response); probe_ref_psn: its
         * value when the probe timer was last armed, so a firing timer knows
         * whether a response is due yet. probe_psn/probe_ns: the last probe
         * (its answer cannot come sooner than min_rtt_ns after it). The
         * PTO is doubled per backoff step, taken after a spurious probe and
         * given back after calm_samples RTT samples without one. */
        uint32_t ackreq_psn = 0;
        uint32_t probe_ref_psn = 0;
        uint32_t probe_ref_max = 0; /* req.max_psn_sent then */
        uint32_t probe_psn = 0;
        uint64_t probe_ns = 0;
        bool probe_pending = false; /* the last probe's PSN not yet acknowledged */
        bool probe_watch = false;   /* acknowledged: a duplicate ACK for it now shows it spurious */
        bool in_probe = false;      /* the resends being sent are the probe's */
        bool gap_waited = false;    /* this silence's probe timer waited out a polling gap */
        uint8_t probe_pkts = 0;     /* probe packets sent since the last progress */
        bool other_resends = false; /* go-back-N / SACK resends not yet passed by comp.psn */
        uint32_t other_resend_hi = 0;
        uint8_t backoff = 0;
        uint8_t calm = 0;
    } loss;

    timer_node retrans_timer;
    timer_node rnr_timer;
    timer_node probe_timer;
    qp_counters cnt;
    /* congestion control: the reaction point (pacing the requester) and
     * the notification point (CNPs to the peer) */
    dcqcn_rp cc;
    cnp_np_state np;

    /* ---- setup, query and the slow paths */
    struct pd *pd = nullptr;
    void *qp_context = nullptr;
    qp_cap cap;
    hugemem_array<uint8_t> sq_inline;    /* cap.max_inline_data per WQE */
    hugemem_array<wqe_atomic> sq_atomic; /* one per WQE */
    bool comm_est_raised = false;        /* since the last move to RTR */
    /* selective repeat with a uroce peer (attr.selective_repeat; uroce_sack.cpp) */
    sr_state sr;
};

/* Start loading the lines of q that the packet path reads first, for a
 * frame or a scheduling turn a few steps ahead (rte_prefetch0: a hint, it
 * never faults). */
static inline void qp_prefetch(const qp *q) {
    const char *line = reinterpret_cast<const char *>(q);
    const char *hot_end = reinterpret_cast<const char *>(&q->retrans_timer);
    for (; line < hot_end; line += RTE_CACHE_LINE_SIZE)
        rte_prefetch0(line);
    rte_prefetch0(&q->cnt);      /* its first line: packets, bytes, ACKs */
    rte_prefetch0(&q->cc.paced); /* every requester turn asks */
}

/* The second stage, once q's own lines are in: the queue entries the next
 * frame or turn for q reads first. A send WQE is one line. */
static inline void qp_prefetch_send_wqe(const qp *q, uint32_t idx) {
    rte_prefetch0(&q->sq[idx & q->sq_mask]);
}
/* How many WQEs ahead of the one being sent a requester turn loads: a few
 * sends' time covers a miss to memory. */
inline constexpr uint32_t req_wqe_prefetch_ahead = 4;
/* The first WQEs of q's next requester turn (the scheduler, a turn ahead;
 * the turn then keeps req_wqe_prefetch_ahead ahead of itself). */
static inline void qp_prefetch_turn_wqes(const qp *q) {
    const uint32_t posted = q->sq_head - q->req.wqe;
    for (uint32_t k = 0; k < req_wqe_prefetch_ahead && k < posted; ++k)
        qp_prefetch_send_wqe(q, q->req.wqe + k);
}
/* The receive WQE that the k-th SEND of a run for q will take (the QP's
 * own ring; an SRQ's front moves under other QPs' frames). */
static inline void qp_prefetch_recv_wqe(const qp *q, uint32_t k) {
    if (q->srq || q->rq.count() <= k) return;
    rte_prefetch0(q->rq.slot_after_front(k));
    rte_prefetch0(q->rq.slot_end_after_front(k));
}
/* The third stage, once that WQE's scatter list is in: the first line of
 * the buffer the SEND's payload goes to, for writing. */
static inline void qp_prefetch_recv_buffer(const qp *q, uint32_t k) {
    if (q->srq || q->rq.count() <= k) return;
    const sge *sg = q->rq.slot_after_front(k)->sgl();
    /* the compiler's write prefetch (DPDK 22.11's rte_prefetch0_write is
     * still experimental API) */
    if (sg->length) __builtin_prefetch(reinterpret_cast<const void *>(sg->addr), 1, 3);
}

/* ---- uroce_qp.cpp: state machine */
verbs_error qp_init(qp *q, const qp_init_attr &a);
verbs_error qp_modify(qp *q, const qp_attr &a, unsigned mask);
void qp_to_error(qp *q);
/* Queue an asynchronous event about q (uroce_event.cpp). */
void qp_raise_event(qp *q, event_type t);
/* uroce_qp.cpp: a QP in SQD with its drain under way has drained once
 * nothing it issued is outstanding (IBTA 10.3.1.6): attr.sq_draining reads
 * 0 and SQ_DRAINED is raised if the move to SQD asked for it. Called where
 * that can change (the move itself, each completed send WQE). */
void qp_sq_drain_check(qp *q);
void qp_to_sqe(qp *q); /* UC/UD send-side error */
void qp_flush(qp *q);
bool qp_modify_is_ok(qp_state cur, qp_state next, qp_type type, unsigned mask);
uint64_t local_ack_timeout_ns(uint8_t timeout);
uint64_t rnr_timer_ns(uint8_t code);

/* ---- uroce_req.cpp: requester */
verbs_error req_post_send(qp *q, send_wr *wr, send_wr **bad_wr);
unsigned req_process(qp *q, unsigned budget);
void req_start_retry(qp *q);
/* Point the requester at the completer's position (first unacknowledged PSN). */
void req_reposition(qp *q);
bool req_has_work(const qp *q);

/* ---- uroce_comp.cpp: completer */
void comp_rcv(qp *q, const roce_packet &p, rte_mbuf *m);
/* A response past the QP-state check (a SACK's cumulative ACK comes here too). */
void comp_rcv_response(qp *q, const roce_packet &p, rte_mbuf *m);
void comp_complete_wqe(qp *q, send_wqe &w);
void comp_retrans_timeout(void *arg);
void comp_rnr_timeout(void *arg);
void comp_arm_retrans(qp *q);
void comp_arm_retrans(qp *q, uint64_t now); /* now: the device clock, read by the caller */
bool comp_outstanding(const qp *q);

/* ---- uroce_loss.cpp: RTT estimate and tail-loss probe (every peer) */
void loss_on_send(qp *q, uint32_t psn, bool ack_req, bool resend);
void loss_on_progress(qp *q, uint64_t now); /* now: the device clock */
void loss_on_response(qp *q);
void loss_on_dup_response(qp *q, uint32_t psn);
void loss_reset(qp *q);
/* A round trip measured outside the transport before the QP's first one
 * (the CM handshake that connected it) as its first RTT sample: SRTT and
 * RTTVAR only, and only while the QP has no sample of its own. */
void loss_seed_rtt(qp *q, uint64_t rtt_ns);
void loss_probe_timeout(void *arg);
uint64_t loss_probe_delay_ns(const qp *q);
/* Resend the packet at psn (a PSN sent and not yet acknowledged), rebuilt
 * from its WQE, with AckReq; the requester's position is not touched
 * (uroce_req.cpp). false when it could not be built. */
bool req_resend_psn(qp *q, uint32_t psn);

/* ---- uroce_resp.cpp: responder */
void resp_rcv(qp *q, const roce_packet &p, rte_mbuf *m);
unsigned resp_process(qp *q, unsigned budget);
bool resp_has_work(const qp *q);
void resp_reset(qp *q);
/* Queue the coalesced ACK/NAK (sent from resp_process). */
void resp_queue_ack(qp *q, uint8_t syndrome, uint32_t psn);

/* ---- uroce_sack.cpp: selective repeat between uroce peers */
void sr_reset(qp *q);
/* responder: a request ahead of the expected PSN; ePSN moved from old_epsn */
void sr_rcv_ahead(qp *q, const roce_packet &p, rte_mbuf *m);
void sr_advance(qp *q, uint32_t old_epsn);
/* responder: the coalesced positive ACK, as an ACK or (holes) a SACK */
bool sr_send_ack(qp *q);
/* completer: a SACK */
void sack_rcv(qp *q, const roce_packet &p, rte_mbuf *m);
/* requester: the WQE at index idx touches nothing an earlier outstanding one does */
bool sr_independent(const qp *q, uint32_t idx);

/* ---- completions (uroce_comp.cpp) */
void post_send_cqe(qp *q, const send_wqe &w, wc_status st);
void post_recv_cqe(qp *q, uint64_t wr_id, wc_status st, wc_opcode op, uint32_t byte_len,
                   unsigned flags, uint32_t imm, uint32_t src_qp);

/* The PSNs a message of len bytes takes at the QP's path MTU, at least one
 * (IBTA 9.7.4.1.3 for a READ; a zero-length message is one packet). The
 * MTU is a power of two (mtu_to_bytes), so this shifts instead of
 * dividing: req_process does it for every WQE, and the divide was a tenth
 * of that function's samples in a 64 B SEND run. */
static inline uint32_t qp_psns_for(const qp *q, uint64_t len) {
    return len == 0 ? 1 : uint32_t((len + q->mtu - 1) >> __builtin_ctz(q->mtu));
}

/* What q's send WQE slots take (device::sq_stream sums them). */
static inline uint64_t sq_slot_bytes(const qp *q) {
    return uint64_t(q->sq_mask + 1) * sizeof(send_wqe);
}
static inline send_wqe &sq_at(qp *q, uint32_t idx) {
    return q->sq[idx & q->sq_mask];
}
static inline const send_wqe &sq_at(const qp *q, uint32_t idx) {
    return q->sq[idx & q->sq_mask];
}
/* A WQE's side-array entries (its place in q->sq). */
static inline size_t sq_index(const qp *q, const send_wqe &w) {
    return size_t(&w - q->sq.get());
}
static inline sge *sq_sgl(const qp *q, size_t index) {
    return q->sq_max_sge == 1 ? &q->sq[index].sg0 : &q->sq_sges[index * q->sq_max_sge];
}
static inline sge *sq_sgl(const qp *q, const send_wqe &w) {
    return sq_sgl(q, sq_index(q, w));
}
/* The third stage of a requester turn's prefetch, once its first WQE is in:
 * the first bytes that WQE sends, on a QP of one send SGE (the SGE is in
 * the WQE's line). The copy into the frame waited for that line: the
 * application's buffer, untouched since the QP's previous turn. */
static inline void qp_prefetch_turn_payload(const qp *q) {
    if (q->req.wqe == q->sq_head || q->sq_max_sge != 1) return;
    const send_wqe &w = sq_at(q, q->req.wqe);
    /* w.length, not sg0's: a WQE posted with no SGE leaves sg0 as the
     * slot's last one had it (with one SGE the two lengths are equal) */
    if (w.is_inline() || w.length <= q->req.offset) return;
    const char *from = reinterpret_cast<const char *>(w.sg0.addr) + q->req.offset;
    const uint64_t left = w.length - q->req.offset;
    rte_prefetch0(from);
    rte_prefetch0(from + (left < 2 * RTE_CACHE_LINE_SIZE ? left : 2 * RTE_CACHE_LINE_SIZE) - 1);
}
static inline uint8_t *sq_inline_at(const qp *q, const send_wqe &w) {
    return &q->sq_inline[sq_index(q, w) * q->cap.max_inline_data];
}
static inline wqe_atomic &sq_atomic_at(const qp *q, const send_wqe &w) {
    return q->sq_atomic[sq_index(q, w)];
}

} // namespace uroce

#endif

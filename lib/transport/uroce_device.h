/* SPDX-License-Identifier: BSD-3-Clause
 * The device (ibv_context): QP table by QPN, MR/key table, GID table,
 * counters, the driver it sends through, the timer wheel, and the two
 * entry points that drive everything:
 *
 *   rx_burst(pkts, n)  received frames: parse, ICRC, QPN lookup, then the
 *                      responder (requests) or the completer (responses);
 *                      the device frees every mbuf handed to it.
 *   poll()             progress: timers, requesters (send queues), responder
 *                      output (READ responses, coalesced ACKs), TX flush.
 *
 * TX back-pressure: frames the driver refuses stay queued in the device
 * (tx_q_) and go first on the next flush, as a NIC's send queue keeps a
 * doorbell it cannot serve yet; while the queue lacks room for a QP's turn
 * the scheduler stops producing (the QPs keep their place in their WQEs and
 * their READ streams). Nothing is dropped locally, so loss recovery only
 * ever sees loss on the wire.
 *
 * One thread per device; post_send/post_recv/poll_cq on that same thread.
 */
#ifndef UROCE_DEVICE_H
#define UROCE_DEVICE_H

#include <cstdint>
#include <memory>
#include <vector>

#include <uroce/clock.h>
#include <uroce/counters.h>
#include <uroce/icrc.h>
#include "uroce_cq.h"
#include "uroce_mr.h"
#include "uroce_pkt.h"
#include <uroce/netdev.h>
#include "uroce_qp.h"
#include "uroce_srq.h"
#include "uroce_timer.h"
#include <uroce/verbs.h>

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

class device {
  public:
    static constexpr unsigned tx_batch = 64; /* frames per driver call */
    /* Most frames one QP turn can queue: a responder burst, its coalesced
     * ACK, a requester burst. */
    static constexpr unsigned tx_turn_max = resp_burst + 1 + req_burst;
    /* The TX queue: a full turn fits behind a batch the driver refused. */
    static constexpr unsigned tx_queue_cap = tx_batch + 2 * tx_turn_max;

    explicit device(const device_config &cfg);
    ~device();
    device(const device &) = delete;
    device &operator=(const device &) = delete;

    /* ---- data path entry points (uroce_recv.cpp, uroce_device_poll.cpp) */
    void rx_burst(rte_mbuf **pkts, uint16_t n);
    /* Returns the number of packets built plus frames handed to the driver
     * (0 when idle). */
    unsigned poll() { return poll(clock_->now_ns()); }
    /* The same, at `now` read from this device's clock by the caller (the
     * engine reads it once per poll for its neighbours and the device). */
    unsigned poll(uint64_t now);

    /* ---- introspection */
    const dev_counters &counters() const { return cnt_; }
    /* Device counters plus the sum of every live QP's counters. */
    qp_counters qp_totals() const;
    uint64_t now_ns() { return clock_->now_ns(); }
    uint32_t max_mtu_bytes() const { return mtu_to_bytes(cfg_.max_mtu); }
    const device_config &config() const { return cfg_; }
    /* The QPN of QP table slot 0 (device_config::first_qpn). */
    uint32_t qpn_base() const { return qpn_base_; }
    netdev *dev() const { return cfg_.dev; }
    rte_mempool *pool() const { return cfg_.pool; }
    timer_wheel &timers() { return timers_; }
    mr_table &mrs() { return mrs_; }
    dev_counters &cnt() { return cnt_; }

    /* ---- used by the transport (tx_flush and the scheduler: uroce_device_poll.cpp) */
    /* Queue a frame for the driver. The scheduler keeps room for a QP's turn
     * (tx_room()): the queue is full only if a fatal NAK is sent from the
     * receive path behind a refused batch; that frame is dropped, counted. */
    void tx(rte_mbuf *m, bool icrc_due = false) {
        if (tx_n_ == tx_queue_cap) [[unlikely]] {
            tx_drop(m);
            return;
        }
        tx_icrc_due_[tx_n_] = icrc_due;
        tx_q_[tx_n_++] = m;
        ++cnt_.tx_pkts;
        if (tx_n_ >= tx_next_flush_) tx_flush();
    }
    /* Build a frame for tx() (pkt_build), its ICRC left to tx_flush where
     * the frame's own CRC is not fused into the payload copy. */
    rte_mbuf *build(const hdr_template &t, const bth_fields &b, const ext_fields &x,
                    const payload_src *src, uint32_t payload_len, bool *icrc_due) {
        return pkt_build(tx_stash_, t, b, x, src, payload_len, ip_id_++, icrc_due);
    }
    /* Hand the queue to the driver; what it refuses stays queued, in order.
     * Returns how many frames it took. The ICRCs left to it (tx(m, true))
     * are computed first, back to back: independent CRC chains overlap in
     * the core where one at a time each waits out its own latency. */
    unsigned tx_flush();
    unsigned tx_room() const { return tx_queue_cap - tx_n_; }
    unsigned tx_queued() const { return tx_n_; }
    /* Give q a turn in the next scheduler round (each QP is on the list at
     * most once: sched_ never outgrows the capacity reserved for every QP). */
    void schedule(qp *q) {
        if (q->scheduled) return;
        q->scheduled = true;
        sched_.push_back(q);
    }
    uint16_t next_ip_id() { return ip_id_++; }
    /* Whether posting writes each send WQE with streaming stores, a whole
     * line at a time without first reading it (req_post_send): while the
     * device's send queues together are larger than sq_stream_min_bytes.
     * An application that posts into slots it last used a round of all
     * its QPs ago (perftest posts 100 WRs at each signaled completion)
     * would otherwise wait for each cold line to be read before it writes
     * it. 64 B SENDs on an Intel Xeon (L2 2 MiB), streamed against not:
     * +6 to +9% at 4096 QPs (32 MiB of slots), +4.5% at 2048, even at
     * 1024, 3% fewer at 256 and 9% fewer at 1 QP, whose slots the caches
     * hold (doc/performance.md, "Fifteenth pass"). */
    bool sq_stream() const { return sq_stream_; }
    /* The threshold: 4 times the core's L2 by default (the break-even
     * above), or what UROCE_SQ_STREAM says (0: never, 1: always); tests
     * set it here. */
    static uint64_t sq_stream_default_min_bytes();
    void set_sq_stream_min_bytes(uint64_t b) {
        sq_stream_min_ = b;
        sq_stream_update();
    }
    qp *lookup_qp(uint32_t qpn) const {
        uint32_t i = qpn - qpn_base_;
        if (i < qps_.size()) [[likely]]
            return qps_[i];
        /* QP1 lies below the table (first_qpn >= 2): only a miss pays for it. */
        return qpn == gsi_qp_num ? gsi_ : nullptr;
    }
    /* inline: every received frame asks (rx_one), and as a call its GID
     * went through memory */
    bool has_gid(const gid &g) const {
        for (unsigned i = 0; i < cfg_.num_gids; ++i)
            if (cfg_.gids[i] == g) return true;
        return false;
    }
    /* The ICRC check of the frame being received (uroce_recv.cpp); deferred
     * into the payload copy for some frames (doc/security.md, "Fused
     * receive"). */
    icrc_check &rx_icrc() { return rx_icrc_; }
    /* The frame's ICRC verdict, settled now if it was deferred; a bad one is
     * counted (once). Nothing may act on a frame before this says true. */
    bool rx_trusted() {
        if (!rx_icrc_.pending) return rx_icrc_.ok;
        if (icrc_check_settle(rx_icrc_)) return true;
        ++cnt_.rx_icrc_errors;
        return false;
    }
    /* rx_trusted at a copy site, after the placement: also counts the frames
     * checked there (rx_icrc_fused, rx_icrc_fused_errors). */
    bool rx_trusted_placed() {
        if (!rx_icrc_.pending) return rx_icrc_.ok;
        ++cnt_.rx_icrc_fused;
        if (rx_trusted()) return true;
        ++cnt_.rx_icrc_fused_errors;
        return false;
    }
    /* Places payload bytes [off, off + len) of the frame being received at
     * dst. While the frame's own check is pending and has not passed off,
     * in the same pass as its ICRC (fused receive); otherwise, for a
     * one-segment frame, in the same pass as the next frame's ICRC
     * (rx_ahead_: doc/icrc.md, "Place while checking"). The copy sites of
     * the responder and the completer. */
    void rx_place(const roce_packet &p, const rte_mbuf *m, uint32_t off, uint8_t *dst,
                  uint32_t len);
    /* Each live QP, in QPN order (the QP table is indexed by qpn - qpn_base). */
    template <class F> void for_each_qp(F &&fn) const {
        if (gsi_) fn(static_cast<const qp *>(gsi_));
        for (const qp *q : qps_)
            if (q) fn(q);
    }

    /* ---- object management (control path, uroce_device.cpp) */
    pd *alloc_pd();
    verbs_error dealloc_pd(pd *p);
    mr *reg_mr(pd *p, void *addr, size_t len, unsigned access, verbs_error *err);
    verbs_error dereg_mr(mr *m);
    cq *create_cq(int cqe, void *ctx, verbs_error *err);
    verbs_error destroy_cq(cq *c);
    srq *create_srq(pd *p, const srq_init_attr &a, verbs_error *err);
    verbs_error modify_srq(srq *s, const srq_attr &a, unsigned mask);
    verbs_error destroy_srq(srq *s);
    verbs_error resize_cq(cq *c, int cqe);
    ah *create_ah(pd *p, const ah_attr &a, verbs_error *err);
    verbs_error destroy_ah(ah *a);
    qp *create_qp(pd *p, const qp_init_attr &a, verbs_error *err);
    /* QP1 (verbs.h create_gsi_qp): a UD QP outside the QP table. */
    qp *create_gsi_qp(pd *p, const qp_init_attr &a, verbs_error *err);
    verbs_error destroy_qp(qp *q);
    /* Resolve an address vector against the GID table into a path. */
    verbs_error resolve_path(const ah_attr &a, uint32_t src_qpn, uint32_t dst_qpn, qp_type t,
                             roce_path &out);

    /* ---- asynchronous events (uroce_event.cpp): raised on error and
     * control paths only, never per packet. A fixed ring: nothing is
     * allocated per event; one raised while it is full is counted
     * (async_event_overflows) and dropped. */
    void raise_event(const async_event &e);
    bool next_event(async_event *out);
    /* Drop the queued events of an object being destroyed. */
    void drop_events_of(const void *obj);

  private:
    /* A frame parsed a few steps before rx_one takes it (rx_burst): its
     * QP's state is loaded from the parse, and one step before, its ICRC
     * check begins while the frame before it is placed (rx_prepare). */
    struct rx_frame {
        roce_packet p;
        parse_error err = parse_error::ok;
    };
    /* rx_burst's frames parsed ahead, a power of 2 above its lookahead: a
     * member, not a local, since every roce_packet starts zeroed (a
     * rep stos per burst, 6% of rx_burst's samples at 1 QP) and the parse
     * writes each one whole anyway. rx_burst is never re-entered: nothing
     * it calls receives (ports are polled, completions and events queued). */
    static constexpr uint16_t rx_window = 8;
    void rx_prepare(const rte_mbuf *m, const rx_frame &f);
    void rx_one(rte_mbuf *m, const rx_frame &f);
    qp *add_qp(pd *p, const qp_init_attr &a, uint32_t qpn, verbs_error *err);
    unsigned run_scheduled();

    device_config cfg_;
    clock_source *clock_;
    timer_wheel timers_;
    mr_table mrs_;
    dev_counters cnt_;
    qp_counters dead_qp_cnt_; /* counters of destroyed QPs */
    uint32_t qpn_base_;       /* device_config::first_qpn */
    std::vector<qp *> qps_;   /* index qpn - qpn_base_ */
    qp *gsi_ = nullptr;       /* QP1, when created */
    uint32_t next_qpn_ = 0;
    std::vector<std::unique_ptr<pd>> pds_;
    std::vector<std::unique_ptr<mr>> mrs_owned_;
    std::vector<std::unique_ptr<cq>> cqs_;
    std::vector<std::unique_ptr<srq>> srqs_;
    std::vector<std::unique_ptr<ah>> ahs_;
    std::vector<std::unique_ptr<qp>> qps_owned_;
    /* The scheduler's lists, arrays rather than a chain through the QPs,
     * so that a turn can prefetch the QPs two and one turns ahead without
     * reading a cold QP for its link. sched_: the QPs scheduled since the
     * running round began. round_[0, round_left_): those of the running
     * round still to be served, the most recently scheduled (the warmest)
     * at the end and served first; a round cut short (port or pool full)
     * leaves them there, first in the next. Both hold every QP at once. */
    std::vector<qp *> sched_;
    std::vector<qp *> round_;
    size_t round_left_ = 0;
    void tx_drop(rte_mbuf *m);
    tx_mbuf_stash tx_stash_; /* the mbufs build() fills */
    rte_mbuf *tx_q_[tx_queue_cap];
    unsigned tx_n_ = 0;
    /* tx_q_[i] still needs its ICRC (pkt_icrc_fill), for i in
     * [tx_icrc_done_, tx_n_); the frames before tx_icrc_done_ have theirs. */
    bool tx_icrc_due_[tx_queue_cap];
    unsigned tx_icrc_done_ = 0;
    /* The port refused frames since this poll began: tx_flush waits for the
     * next poll instead of offering them again at once. */
    bool tx_port_full_ = false;
    /* tx() flushes once this many frames are queued: a batch more than the
     * driver last refused */
    unsigned tx_next_flush_ = tx_batch;
    uint32_t max_frame_len_ = 0;
    uint16_t ip_id_ = 1;
    uint64_t sq_bytes_ = 0; /* every QP's send WQE slots (sq_stream) */
    uint64_t sq_stream_min_ = sq_stream_default_min_bytes();
    bool sq_stream_ = false; /* sq_bytes_ > sq_stream_min_, kept for posting's one load */
    void sq_stream_update() { sq_stream_ = sq_bytes_ > sq_stream_min_; }
    uint32_t next_pd_ = 1;
    rx_frame rx_frames_[rx_window];
    icrc_check rx_icrc_;  /* the frame rx_one is on */
    icrc_check rx_ahead_; /* the next frame's, when it is deferred (rx_prepare) */
    async_event events_[async_event_queue_cap];
    unsigned ev_head_ = 0, ev_count_ = 0;
};

} // namespace uroce

#endif

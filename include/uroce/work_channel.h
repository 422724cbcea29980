/* SPDX-License-Identifier: BSD-3-Clause
 * Work channel: the application's own thread posts work requests and polls
 * work completions of a device that another thread (the lcore running the
 * engine) owns.
 *
 *   app thread                               lcore (owns the device)
 *   ch.post_send(qp, wr) --request ring-->   ch.serve(): uroce::post_send /
 *   ch.post_recv(qp, wr)                                 uroce::post_recv
 *   ch.poll(n, wc)       <--completion ring-- ch.serve(): poll_cq of every CQ
 *                                                        added with add_cq()
 *
 * Two single-producer/single-consumer rings of fixed-size slots, allocated
 * once: nothing locks and nothing allocates per work request. A send slot
 * holds a copy of the WR with up to max_sge SGEs and, for send_inline, a copy
 * of the inline payload, so the caller may reuse its send_wr, its sge array
 * and its inline buffer as soon as post_send() returns (ibv semantics); the
 * memory an SGE points at is read when the packet is built, as with ibv.
 *
 * Errors, as ibv splits them:
 *  - immediate (the return value, *bad_wr = first WR not queued; the WRs
 *    before it are queued): nomem when the request ring is full (back
 *    pressure: nothing is ever dropped, post again later); inval for a null
 *    or foreign QP, num_sge < 0 or > max_sge, a missing sg_list, an inline
 *    payload longer than max_inline.
 *  - deferred (an error completion from poll(), always, signaled or not):
 *    whatever the real post_send/post_recv refuses on the lcore (bad opcode,
 *    QP not in RTS, more SGEs than the QP takes, ...) or a QP destroyed since
 *    the post. status = loc_qp_op_err, vendor_err = the errno post_* returned
 *    (EINVAL, ENOENT for a destroyed QP), wr_id and qp_num of the WR, opcode
 *    of the work request. Such a completion can overtake completions of
 *    earlier WRs still in flight on the same QP. (A destroyed QP is told by
 *    its QPN and address both; a new QP could fool that only with the same
 *    QPN, which the device hands out again after cycling through max_qp
 *    others, at the same address. To be sure, destroy a QP once
 *    requests_pending() is 0.)
 *  - a full send or receive queue on the QP is not an error here: serve()
 *    leaves the request at the head of the ring and retries on its next call
 *    (counted in qp_full_stalls). The ring is FIFO, so WRs for other QPs
 *    behind it wait too: keep each QP's outstanding WRs within its
 *    max_send_wr / max_recv_wr (which ibv requires anyway) and it never stalls.
 *
 * Completions of every added CQ are merged into one stream, in CQ order per
 * CQ (so per QP and queue). A CQ added here belongs to the channel: nobody
 * else polls it. serve() stops moving completions when the completion ring is
 * full; they wait in their CQ, so size CQs and comp_depth for the signaled
 * WRs you keep in flight (an overflowing CQ loses completions, as in ibv).
 * It also takes no request while the completion ring has no room for the
 * error completion that request could turn into: poll, and posting resumes.
 *
 * Threads: one application thread per channel (post_*, poll, app_counters);
 * the device's thread calls add_cq() and serve(). A device may serve several
 * channels (one per application thread). Control verbs (create_qp,
 * modify_qp, ...) and SRQ receives are not channel operations: run them on
 * the device's thread.
 *
 * post_*() and poll() are out of line, unlike the engine's per-packet
 * helpers: one call per WR chain is small next to the slot copy, and this
 * header stays free of the transport's QP layout.
 */
#ifndef UROCE_WORK_CHANNEL_H
#define UROCE_WORK_CHANNEL_H

#include <uroce/export.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include <uroce/verbs.h>

namespace uroce {

struct work_channel_config {
    device *dev = nullptr;      /* the device whose QPs and CQs the channel serves */
    uint32_t depth = 1024;      /* request slots; a power of two */
    uint32_t comp_depth = 4096; /* completion slots; a power of two */
    uint32_t max_sge = 4;       /* SGEs one request carries (<= the QPs' max_*_sge to be useful) */
    uint32_t max_inline = 64;   /* inline bytes one send request carries */
    uint32_t serve_budget = 64; /* requests serve() hands to the device per call */
};

/* Each side's counters are written by one thread only; relaxed atomics let
 * the other thread (or telemetry) read a snapshot without a data race. */
struct work_channel_app_counters {
    std::atomic<uint64_t> posted_send{0};   /* send WRs queued */
    std::atomic<uint64_t> posted_recv{0};   /* receive WRs queued */
    std::atomic<uint64_t> refused_full{0};  /* WRs refused: request ring full (nomem) */
    std::atomic<uint64_t> refused_inval{0}; /* WRs refused: immediate inval */
    std::atomic<uint64_t> polled{0};        /* completions handed to the app by poll() */
};

struct work_channel_serve_counters {
    std::atomic<uint64_t> served{0};         /* WRs the device accepted */
    std::atomic<uint64_t> post_errors{0};    /* WRs the device refused: error completions */
    std::atomic<uint64_t> qp_full_stalls{0}; /* serve() calls that waited on a full SQ/RQ */
    std::atomic<uint64_t> comp_full_stalls{
        0};                               /* serve() calls that waited on the completion ring */
    std::atomic<uint64_t> completions{0}; /* completions moved into the completion ring */
    std::atomic<uint64_t> serves{0};      /* serve() calls */
};

class work_channel {
  public:
    static constexpr unsigned max_cqs = 16;

    /* nullptr with *err = inval for a bad config (no device, depths not
     * powers of two, max_sge > 32, ...). Allocates both rings here, once. */
    UROCE_API static std::unique_ptr<work_channel> create(const work_channel_config &cfg,
                                                          verbs_error *err = nullptr);
    UROCE_API ~work_channel();
    work_channel(const work_channel &) = delete;
    work_channel &operator=(const work_channel &) = delete;

    /* ---- the device's thread */

    /* Completions of c go to this channel from now on (c must be of the
     * channel's device; nomem beyond max_cqs; adding twice is a no-op). */
    UROCE_API verbs_error add_cq(cq *c);
    /* Hand queued WRs (up to serve_budget) to the device, then move
     * completions from the CQs into the completion ring. Call it every loop
     * iteration before engine::poll(), which sends what it posted. Returns
     * the WRs plus completions it moved (0: idle). */
    UROCE_API unsigned serve();
    const work_channel_serve_counters &serve_counters() const { return srv_cnt_; }

    /* ---- the application's thread */

    /* As uroce::post_send / post_recv, asynchronously (see the top of the
     * file for which errors are immediate). Each WR of a chain is copied. */
    UROCE_API verbs_error post_send(qp *q, send_wr *wr, send_wr **bad_wr);
    UROCE_API verbs_error post_recv(qp *q, recv_wr *wr, recv_wr **bad_wr);
    /* Up to num completions of the channel's CQs into out; returns how many. */
    UROCE_API int poll(int num, wc *out);
    const work_channel_app_counters &app_counters() const { return app_cnt_; }

    /* Requests queued and not yet taken by serve() (a snapshot, any thread). */
    UROCE_API uint32_t requests_pending() const;
    const work_channel_config &config() const { return cfg_; }

  private:
    struct slot;
    explicit work_channel(const work_channel_config &cfg);
    slot *slot_at(uint32_t i) const;
    /* Space for a request at head (the producer's unpublished head),
     * refreshing the consumer's index only when the ring looks full. */
    bool req_room(uint32_t head);
    template <class Wr, class Fill>
    verbs_error post_chain(qp *q, Wr *wr, Wr **bad_wr, std::atomic<uint64_t> &posted_counter,
                           Fill &&fill);
    bool comp_room(uint32_t n);
    void push_error(const slot &s, verbs_error e);
    unsigned serve_requests();
    unsigned serve_completions();

    work_channel_config cfg_;
    size_t stride_ = 0;
    uint32_t req_mask_ = 0, comp_mask_ = 0;
    struct aligned_delete {
        void operator()(std::byte *p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    std::unique_ptr<std::byte[], aligned_delete> req_mem_;
    std::unique_ptr<wc[]> comp_;
    cq *cqs_[max_cqs] = {};
    unsigned n_cqs_ = 0;
    unsigned next_cq_ = 0; /* round robin: no CQ starves the others */

    /* Each published index on its own cache line, and each thread's own
     * state on another: a line moves between the CPUs only when its
     * reader needs it. req_head_ (written per post, read when the lcore's
     * cached copy is used up) and comp_head_ (written per completion batch,
     * read when the application's cached copy is used up) travel on the
     * fast path; req_tail_ and comp_tail_ are read by the other side only
     * when a ring looks full, so the owner's store to them stays local.
     * One line shared by two indices made the lcore pay a cache miss on
     * every serve() while the application polled an empty ring. */
    alignas(64) std::atomic<uint32_t> req_head_{0};  /* application thread */
    alignas(64) std::atomic<uint32_t> comp_tail_{0}; /* application thread */
    alignas(64) std::atomic<uint32_t> req_tail_{0};  /* device thread */
    alignas(64) std::atomic<uint32_t> comp_head_{0}; /* device thread */
    /* The application thread's own. */
    alignas(64) uint32_t req_tail_seen_ = 0; /* cached req_tail_ */
    uint32_t comp_head_seen_ = 0;            /* cached comp_head_ */
    work_channel_app_counters app_cnt_;
    /* The device thread's own. */
    alignas(64) uint32_t req_head_seen_ = 0; /* cached req_head_ */
    uint32_t comp_tail_seen_ = 0;            /* cached comp_tail_ */
    work_channel_serve_counters srv_cnt_;
};

/* A counter bump by its only writer: a plain load and store, no locked
 * instruction, yet a race-free read for other threads. */
static inline void counter_add(std::atomic<uint64_t> &c, uint64_t n = 1) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

} // namespace uroce

#endif

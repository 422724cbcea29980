/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the objects behind the ibverbs handles. Each embeds
 * the rdma-core struct the application sees (struct ibv_cq, ...) as its
 * first member, so a handle converts back with a static cast of its
 * address, and holds the uroce object it stands for.
 */
#ifndef UROCE_IBV_OBJECTS_H
#define UROCE_IBV_OBJECTS_H

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <uroce/verbs.h>
#include <uroce/work_channel.h>

namespace uroce::compat {

class runtime;

/* A spin lock for the data path's rare sharing: ibverbs lets several
 * threads post to one QP or poll one CQ; uroce's channels are
 * single-producer/single-consumer. Uncontended (one thread per QP/CQ, the
 * usual case) it costs one atomic exchange. */
class spin_lock {
  public:
    void lock() {
        while (flag_.exchange(true, std::memory_order_acquire))
            while (flag_.load(std::memory_order_relaxed))
                __builtin_ia32_pause();
    }
    void unlock() { flag_.store(false, std::memory_order_release); }

  private:
    std::atomic<bool> flag_{false};
};

/* The device handle (ibv_open_device): an rdma-core verbs_context, whose
 * ibv_context is what the application holds. */
struct compat_context {
    verbs_context
        vctx; /* vctx.context is the application's handle; must stay last-in-verbs_context */
    runtime *rt = nullptr;
    int async_fd = -1; /* eventfd (semaphore): one count per queued async event */
    std::mutex async_mu;
    std::deque<ibv_async_event> async_events;
    bool port_active_reported = false;
};
static inline compat_context *to_ctx(ibv_context *c) {
    return reinterpret_cast<compat_context *>(reinterpret_cast<uint8_t *>(c) -
                                              offsetof(compat_context, vctx.context));
}

struct compat_pd {
    ibv_pd pd;
    uroce::pd *upd = nullptr;
};
static inline compat_pd *to_pd(ibv_pd *p) {
    return reinterpret_cast<compat_pd *>(p);
}

struct compat_mr {
    ibv_mr mr;
    uroce::mr *umr = nullptr;
};

struct compat_comp_channel {
    ibv_comp_channel ch; /* ch.fd: an eventfd (semaphore mode), one count per event */
    std::mutex mu;
    std::deque<struct compat_cq *> events; /* the CQ of each count of the eventfd */
    std::atomic<int> refcnt{0};            /* CQs attached */
};

struct compat_cq {
    /* ibv_cq_ex begins with ibv_cq's fields (ibv_cq_ex_to_cq is a cast):
     * every CQ can be either; ibv_create_cq_ex's fill the rest. */
    union {
        ibv_cq cq;
        ibv_cq_ex cqx;
    };
    uroce::cq *ucq = nullptr;
    int depth = 0;
    /* thread mode: the channel through which completions reach the
     * application (and its QPs' posts reach the stack). */
    std::unique_ptr<work_channel> ch;
    spin_lock post_lock;      /* producers of ch's request ring */
    spin_lock poll_lock;      /* consumer of ch's completion ring */
    unsigned empty_polls = 0; /* consecutive empty ibv_poll_cq calls (under poll_lock) */
    /* inline mode: completions ibv_poll_cq took from the uroce CQ (lock held) */
    uint64_t taken = 0;
    /* ibv_req_notify_cq: armed until the next completion signals the
     * channel; armed_at is how many completions the CQ had produced then
     * (runtime::produced_locked): only a later one signals, as ibv_req_notify_cq(3)
     * ("upon the addition of a new CQE") and rxe have it. */
    std::atomic<bool> armed{false};
    uint64_t armed_at = 0;
    compat_comp_channel *chan = nullptr;
    /* Events handed to the application (ibv_get_cq_event; ibv_get_async_event's
     * CQ_ERR), under cq.mutex: ibv_destroy_cq waits until the acks
     * (comp_events_completed, async_events_completed) reach them, as
     * rdma-core does with the kernel's counts. */
    uint32_t comp_events_reported = 0;
    uint32_t async_events_reported = 0;
    /* ibv_start_poll / ibv_next_poll's current completion (the read_*
     * functions return its fields). */
    ibv_wc cur{};
    compat_cq() : cqx{} {}
};
static_assert(offsetof(ibv_cq_ex, async_events_completed) ==
                  offsetof(ibv_cq, async_events_completed) &&
              offsetof(ibv_cq_ex, comp_mask) >= sizeof(ibv_cq));
static inline compat_cq *to_cq(ibv_cq *c) {
    return reinterpret_cast<compat_cq *>(c);
}

struct compat_srq {
    ibv_srq srq;
    uroce::srq *usrq = nullptr;
    uint32_t events_reported = 0; /* handed out, under srq.mutex (compat_cq's) */
    uint32_t max_wr = 0, max_sge = 0, limit = 0;
};
static inline compat_srq *to_srq(ibv_srq *s) {
    return reinterpret_cast<compat_srq *>(s);
}

struct compat_ah {
    ibv_ah ah;
    uroce::ah *uah = nullptr;
};
static inline compat_ah *to_ah(ibv_ah *a) {
    return reinterpret_cast<compat_ah *>(a);
}

/* A QP is always an ibv_qp_ex (its first member is the ibv_qp), so
 * ibv_qp_to_qp_ex works on every QP; the wr_* functions build uroce
 * send_wrs between wr_start and wr_complete. */
struct compat_qp {
    ibv_qp_ex qpx;
    uroce::qp *uqp = nullptr;
    compat_cq *send_cq = nullptr;
    compat_cq *recv_cq = nullptr;
    ibv_qp_type type = IBV_QPT_RC;
    uint32_t max_inline = 0;
    uint32_t max_send_sge = 1, max_recv_sge = 1;
    bool made_by_cm = false;      /* rdma_create_qp's: the CM must let go of it */
    uint32_t events_reported = 0; /* handed out, under qpx.qp_base.mutex (compat_cq's) */
    /* The wr_* (new post send) API's batch. */
    std::vector<uroce::send_wr> batch;
    std::vector<uroce::sge> batch_sges; /* max_send_sge per WR of batch */
    std::vector<uint8_t> batch_inline;  /* max_inline bytes per WR of batch */
    int batch_error = 0;
};
static inline compat_qp *to_qp(ibv_qp *q) {
    return reinterpret_cast<compat_qp *>(q);
}

/* rdma-core's destroy: once the object is gone from the device, wait until
 * the application has acknowledged every event it was handed about it (an
 * ack after the free would write freed memory). */
static inline void wait_events_acked(pthread_mutex_t *mu, pthread_cond_t *cond,
                                     const uint32_t *completed, const uint32_t *reported) {
    pthread_mutex_lock(mu);
    while (*completed != *reported)
        pthread_cond_wait(cond, mu);
    pthread_mutex_unlock(mu);
}

} // namespace uroce::compat

#endif

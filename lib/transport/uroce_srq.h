/* SPDX-License-Identifier: BSD-3-Clause
 * Receive work queues: the ring behind a QP's RQ and behind a shared receive
 * queue (IBTA 10.2.9.5; rxe_srq.c). A receive WQE is consumed when the first
 * packet of a message that needs one arrives (SEND, WRITE_WITH_IMM).
 */
#ifndef UROCE_SRQ_H
#define UROCE_SRQ_H

#include <cstdint>
#include <memory>

#include <uroce/verbs.h>

namespace uroce {

struct recv_wqe {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    uint64_t length = 0; /* sum of the SGE lengths */
    sge *sg = nullptr;   /* max_sge entries owned by the ring */
};

class recv_ring {
  public:
    void init(uint32_t max_wr, uint32_t max_sge);
    uint32_t max_wr() const { return max_wr_; }
    uint32_t max_sge() const { return max_sge_; }
    uint32_t count() const { return head_ - tail_; }
    bool empty() const { return head_ == tail_; }
    bool full() const { return count() >= max_wr_; }
    /* Copy r into the ring (the caller validated it). */
    void push(const recv_wr &r);
    recv_wqe &front() { return slots_[tail_ & mask_]; }
    /* Where the k-th WQE after the front is (there may be none: only for
     * prefetching, never read through unless count() > k). */
    const recv_wqe *slot_after_front(uint32_t k) const { return &slots_[(tail_ + k) & mask_]; }
    /* its scatter list, found without reading the WQE */
    const sge *sgl_after_front(uint32_t k) const {
        return &sges_[size_t((tail_ + k) & mask_) * max_sge_];
    }
    void pop() { ++tail_; }
    /* An SRQ's limit (modify_srq): armed while non-zero. A QP's own ring
     * keeps 0, so below_limit() is one compare that is never true for it:
     * the responder asks every ring after taking a WQE, without first
     * asking whether the ring is an SRQ's. */
    uint32_t limit() const { return limit_; }
    void set_limit(uint32_t l) { limit_ = l; }
    bool below_limit() const { return count() < limit_; }
    /* Room for max_wr WQEs from now on, the posted ones kept in order
     * (the caller checked count() <= max_wr). Control path: allocates. */
    void resize(uint32_t max_wr);

  private:
    std::unique_ptr<recv_wqe[]> slots_;
    std::unique_ptr<sge[]> sges_;
    uint32_t mask_ = 0, max_wr_ = 0, max_sge_ = 0;
    uint32_t head_ = 0, tail_ = 0;
    uint32_t limit_ = 0;
};

struct srq {
    device *dev = nullptr;
    struct pd *pd = nullptr;
    void *srq_context = nullptr;
    recv_ring rq; /* rq.limit(): the SRQ limit, 0 when disarmed */
    uint32_t usecnt = 0;
};

/* The SRQ fell below its armed limit: raise srq_limit_reached once and
 * disarm (uroce_event.cpp). Out of line: the responder's WQE fetch only
 * pays the below_limit() compare. */
void srq_limit_reached(srq *s);

/* Validate a chain of receive WRs against max_sge; stops at the first bad one. */
verbs_error recv_ring_post(recv_ring &rq, recv_wr *wr, recv_wr **bad_wr);

} // namespace uroce

#endif

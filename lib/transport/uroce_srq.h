/* SPDX-License-Identifier: BSD-3-Clause
 * Receive work queues: the ring behind a QP's RQ and behind a shared receive
 * queue (IBTA 10.2.9.5; rxe_srq.c). A receive WQE is consumed when the first
 * packet of a message that needs one arrives (SEND, WRITE_WITH_IMM).
 */
#ifndef UROCE_SRQ_H
#define UROCE_SRQ_H

#include <cstdint>
#include <memory>
#include <new>

#include <uroce/verbs.h>
#include "uroce_hugemem.h"

namespace uroce {

/* A field of an application's work request, loaded at its own width.
 * Applications fill their WRs and SGEs just before they post (on the
 * stack, field by field), and a load wider than those stores, such as one
 * 16-byte load of a whole SGE, cannot be forwarded from them: it waits
 * until they, and every older store, have reached the cache. Behind a
 * store to a line the other core holds (memif's ring index, written by its
 * RX just before) that was 3.5% of a memif poller's samples, on post_recv's
 * one SGE copy, which sits between the receive and the answer. The empty
 * asm keeps each load scalar: the compiler would otherwise merge adjacent
 * fields back into one vector load. */
template <class T> static inline T load_own_width(const T &field) {
    T v = field;
    asm("" : "+r"(v));
    return v;
}

/* One SGE from the application's work request into a WQE, field by field. */
static inline void copy_sge(sge &dst, const sge &src) {
    dst.addr = load_own_width(src.addr);
    dst.length = load_own_width(src.length);
    dst.lkey = load_own_width(src.lkey);
}

/* A receive WQE in its ring slot: this header, then its max_sge SGEs, so
 * that a WQE is one run of bytes (32 for one SGE, two to a cache line).
 * With thousands of QPs each slot is cold when its SEND arrives; header and
 * scatter list in separate arrays were two misses per message, the second
 * waiting for a pointer in the first. */
struct recv_wqe {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    /* sum of the SGE lengths, at most UINT32_MAX: more than any message
     * (max_msg_size) whatever the SGEs hold */
    uint32_t length = 0;
    sge *sgl() { return reinterpret_cast<sge *>(this + 1); }
    const sge *sgl() const { return reinterpret_cast<const sge *>(this + 1); }
};
static_assert(sizeof(recv_wqe) == sizeof(sge) && alignof(recv_wqe) == alignof(sge),
              "a slot is whole SGEs: the header and each SGE 16 bytes");

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
    recv_wqe &front() { return slot(tail_); }
    /* Where the k-th WQE after the front is (there may be none: only for
     * prefetching, never read through unless count() > k). */
    const recv_wqe *slot_after_front(uint32_t k) const { return &slot(tail_ + k); }
    /* the last byte of that slot (a slot of several SGEs may span lines) */
    const void *slot_end_after_front(uint32_t k) const {
        return reinterpret_cast<const uint8_t *>(slot_after_front(k)) + stride_ - 1;
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
    recv_wqe &slot(uint32_t pos) {
        return *reinterpret_cast<recv_wqe *>(slots_.get() + size_t(pos & mask_) * stride_);
    }
    const recv_wqe &slot(uint32_t pos) const {
        return *reinterpret_cast<const recv_wqe *>(slots_.get() + size_t(pos & mask_) * stride_);
    }
    hugemem_array<uint8_t> slots_; /* on huge pages, as the QP (uroce_hugemem.h) */
    uint32_t stride_ = 0;          /* bytes per slot: the header and max_sge SGEs */
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

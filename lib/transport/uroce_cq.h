/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: a power-of-two ring of work completions, written by the
 * transport, read by poll_cq. Single thread; the ring shape (head/tail) is
 * what a lock-free SPSC hand-off needs later.
 */
#ifndef UROCE_CQ_H
#define UROCE_CQ_H

#include <bit>
#include <cstdint>
#include <memory>

#include <uroce/verbs.h>
#include "uroce_hugemem.h"

namespace uroce {

struct cq {
    device *dev = nullptr;
    void *cq_context = nullptr;
    hugemem_array<wc> ring; /* on huge pages, as the QPs (uroce_hugemem.h) */
    uint32_t mask = 0;
    uint32_t cqe = 0;  /* capacity the user asked for */
    uint32_t head = 0; /* next to write */
    uint32_t tail = 0; /* next to read */
    uint32_t usecnt = 0;
    uint64_t overflows = 0;

    uint32_t count() const { return head - tail; }
};

/* Write a completion; false (and counted) when the CQ is full. */
static inline bool cq_post(cq *c, const wc &e) {
    if (c->count() > c->mask) {
        ++c->overflows;
        return false;
    }
    c->ring[c->head & c->mask] = e;
    ++c->head;
    return true;
}

/* uroce_event.cpp: c was full when a completion came (rxe_cq_post raises
 * IB_EVENT_CQ_ERR each time; IBTA 11.6.3.1, CQ Error). */
void cq_overflowed(cq *c);

/* Room for cqe completions from now on (the ring is a power of two at
 * least that long), those not yet polled kept in order. The caller checked
 * count() <= cqe. Control path: allocates. */
static inline void cq_resize(cq *c, uint32_t cqe) {
    const uint32_t n = std::bit_ceil(cqe);
    auto ring = make_hugemem_array<wc>(n);
    uint32_t k = 0;
    for (uint32_t i = c->tail; i != c->head; ++i)
        ring[k++] = c->ring[i & c->mask];
    c->ring = std::move(ring);
    c->mask = n - 1;
    c->cqe = cqe;
    c->tail = 0;
    c->head = k;
}

static inline int cq_poll(cq *c, int num, wc *out) {
    int n = 0;
    while (n < num && c->tail != c->head) {
        out[n++] = c->ring[c->tail & c->mask];
        ++c->tail;
    }
    /* Drained: the next completion takes the ring's first slot again, so
     * that an application that keeps up writes and reads the same few
     * lines. Otherwise every completion walks on through the whole ring,
     * which perftest sizes for every WR of every QP (3 MiB per CQ of 65536
     * at 4096 QPs), a cold line to read before each write. Both indices
     * may move: one thread (above). */
    if (n && c->tail == c->head) c->tail = c->head = 0;
    return n;
}

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/work_channel.h>

#include <cstring>
#include <new>

#include "uroce_cq.h"
#include "uroce_device.h"
#include "uroce_qp.h"

namespace uroce {

/* One request slot: the WR as posted (next and sg_list are rebuilt by
 * serve()), then either max_sge SGEs or, for an inline send, its payload
 * (up to max_inline bytes): the two never both hold data, so they share the
 * room, and a slot stays small (192 B with the defaults: three cache lines
 * to move from the application's CPU to the lcore's). */
struct work_channel::slot {
    qp *q;
    uint32_t qpn; /* with q: the QP still exists when serve() takes the slot */
    bool is_send;
    bool has_inline; /* the payload is in the slot, sge[0] describes it */
    send_wr wr;      /* wr_id, num_sge for a receive too */

    sge *sges() { return reinterpret_cast<sge *>(this + 1); }
    uint8_t *inline_data() { return reinterpret_cast<uint8_t *>(sges() + 1); }
};

static constexpr bool is_pow2(uint32_t v) {
    return v && (v & (v - 1)) == 0;
}

std::unique_ptr<work_channel> work_channel::create(const work_channel_config &cfg,
                                                   verbs_error *err) {
    if (err) *err = verbs_error::inval;
    if (!cfg.dev || !is_pow2(cfg.depth) || cfg.depth > (1u << 20) || !is_pow2(cfg.comp_depth) ||
        cfg.comp_depth > (1u << 22) || cfg.max_sge < 1 || cfg.max_sge > max_sge_limit ||
        cfg.max_inline > max_inline_limit || cfg.serve_budget == 0)
        return nullptr;
    if (err) *err = verbs_error::ok;
    return std::unique_ptr<work_channel>(new work_channel(cfg));
}

work_channel::work_channel(const work_channel_config &cfg) : cfg_(cfg) {
    static_assert(sizeof(slot) % alignof(sge) == 0, "SGEs follow the slot header");
    /* Whole cache lines per slot: the app thread writing slot i+1 never
     * shares a line with the lcore reading slot i. */
    const size_t sges = size_t(cfg.max_sge) * sizeof(sge), inl = sizeof(sge) + cfg.max_inline;
    stride_ = sizeof(slot) + (sges > inl ? sges : inl);
    stride_ = (stride_ + 63) & ~size_t(63);
    req_mask_ = cfg.depth - 1;
    comp_mask_ = cfg.comp_depth - 1;
    req_mem_.reset(
        static_cast<std::byte *>(::operator new[](stride_ *cfg.depth, std::align_val_t(64))));
    comp_ = std::make_unique<wc[]>(cfg.comp_depth);
    for (uint32_t i = 0; i < cfg.depth; i++)
        new (slot_at(i)) slot{};
}

work_channel::~work_channel() = default;

work_channel::slot *work_channel::slot_at(uint32_t i) const {
    return reinterpret_cast<slot *>(req_mem_.get() + size_t(i & req_mask_) * stride_);
}

uint32_t work_channel::requests_pending() const {
    return req_head_.load(std::memory_order_acquire) - req_tail_.load(std::memory_order_acquire);
}

verbs_error work_channel::add_cq(cq *c) {
    if (!c || c->dev != cfg_.dev) return verbs_error::inval;
    for (unsigned i = 0; i < n_cqs_; i++)
        if (cqs_[i] == c) return verbs_error::ok;
    if (n_cqs_ == max_cqs) return verbs_error::nomem;
    cqs_[n_cqs_++] = c;
    return verbs_error::ok;
}

/* ---------------------------------------------------------------- application thread */

bool work_channel::req_room(uint32_t head) {
    if (head - req_tail_seen_ <= req_mask_) return true;
    /* Only now read the line the lcore writes: a full ring is rare. */
    req_tail_seen_ = req_tail_.load(std::memory_order_acquire);
    return head - req_tail_seen_ <= req_mask_;
}

/* The part both post calls share: argument and SGE-count checks, ring
 * space, publication (every 32 WRs, so the lcore can start on a long chain
 * before it is all queued) and the counters. fill(slot, wr) copies one WR
 * into its slot, or refuses it (inval) before anything is published. */
template <class Wr, class Fill>
verbs_error work_channel::post_chain(qp *q, Wr *wr, Wr **bad_wr,
                                     std::atomic<uint64_t> &posted_counter, Fill &&fill) {
    /* q->dev is set at creation and never changes: safe to read here. */
    if (!q || q->dev != cfg_.dev || !wr) {
        if (bad_wr) *bad_wr = wr;
        counter_add(app_cnt_.refused_inval);
        return verbs_error::inval;
    }
    uint32_t head = req_head_.load(std::memory_order_relaxed);
    verbs_error e = verbs_error::ok;
    uint64_t n = 0;
    for (; wr; wr = wr->next) {
        if (wr->num_sge < 0 || uint32_t(wr->num_sge) > cfg_.max_sge ||
            (wr->num_sge > 0 && !wr->sg_list)) {
            e = verbs_error::inval;
            break;
        }
        if (!req_room(head)) {
            e = verbs_error::nomem;
            break;
        }
        slot *s = slot_at(head);
        if ((e = fill(*s, *wr)) != verbs_error::ok) break;
        s->q = q;
        s->qpn = q->qpn;
        ++head;
        ++n;
        if ((n & 31) == 0) req_head_.store(head, std::memory_order_release);
    }
    req_head_.store(head, std::memory_order_release);
    counter_add(posted_counter, n);
    if (e != verbs_error::ok) {
        if (bad_wr) *bad_wr = wr;
        counter_add(e == verbs_error::nomem ? app_cnt_.refused_full : app_cnt_.refused_inval);
    }
    return e;
}

verbs_error work_channel::post_send(qp *q, send_wr *wr, send_wr **bad_wr) {
    return post_chain(q, wr, bad_wr, app_cnt_.posted_send, [&](slot &s, const send_wr &w) {
        const bool inl = (w.send_flags & send_inline) != 0;
        uint64_t len = 0;
        if (inl) {
            for (int i = 0; i < w.num_sge; i++)
                len += w.sg_list[i].length;
            if (len > cfg_.max_inline) return verbs_error::inval;
        }
        s.is_send = true;
        s.wr = w;
        s.wr.next = nullptr;
        s.wr.sg_list = nullptr;
        s.has_inline = inl && len > 0;
        if (s.has_inline) {
            /* ibv lets the caller reuse an inline buffer on return: copy now. */
            uint8_t *p = s.inline_data();
            for (int i = 0; i < w.num_sge; i++) {
                std::memcpy(p, reinterpret_cast<const void *>(w.sg_list[i].addr),
                            w.sg_list[i].length);
                p += w.sg_list[i].length;
            }
            s.sges()[0] = sge{0, uint32_t(len), 0};
            s.wr.num_sge = 1;
        } else {
            std::memcpy(s.sges(), w.sg_list, size_t(w.num_sge) * sizeof(sge));
        }
        return verbs_error::ok;
    });
}

verbs_error work_channel::post_recv(qp *q, recv_wr *wr, recv_wr **bad_wr) {
    return post_chain(q, wr, bad_wr, app_cnt_.posted_recv, [](slot &s, const recv_wr &w) {
        s.is_send = false;
        s.has_inline = false;
        s.wr.wr_id = w.wr_id;
        s.wr.num_sge = w.num_sge;
        std::memcpy(s.sges(), w.sg_list, size_t(w.num_sge) * sizeof(sge));
        return verbs_error::ok;
    });
}

int work_channel::poll(int num, wc *out) {
    if (num <= 0 || !out) return 0;
    const uint32_t tail = comp_tail_.load(std::memory_order_relaxed);
    if (comp_head_seen_ == tail) comp_head_seen_ = comp_head_.load(std::memory_order_acquire);
    uint32_t n = comp_head_seen_ - tail;
    if (n > uint32_t(num)) n = uint32_t(num);
    for (uint32_t i = 0; i < n; i++)
        out[i] = comp_[(tail + i) & comp_mask_];
    if (n) {
        comp_tail_.store(tail + n, std::memory_order_release);
        counter_add(app_cnt_.polled, n);
    }
    return int(n);
}

/* ---------------------------------------------------------------- device thread */

bool work_channel::comp_room(uint32_t n) {
    const uint32_t head = comp_head_.load(std::memory_order_relaxed);
    if (head - comp_tail_seen_ + n <= cfg_.comp_depth) return true;
    comp_tail_seen_ = comp_tail_.load(std::memory_order_acquire);
    return head - comp_tail_seen_ + n <= cfg_.comp_depth;
}

/* The caller checked comp_room(1). */
void work_channel::push_error(const slot &s, verbs_error e) {
    const uint32_t head = comp_head_.load(std::memory_order_relaxed);
    wc &c = comp_[head & comp_mask_];
    c = wc{};
    c.wr_id = s.wr.wr_id;
    c.status = wc_status::loc_qp_op_err;
    c.vendor_err = uint32_t(e);
    c.opcode = s.is_send ? wc_opcode_for(s.wr.opcode) : wc_opcode::recv;
    c.qp_num = s.qpn;
    comp_head_.store(head + 1, std::memory_order_release);
    counter_add(srv_cnt_.post_errors);
    counter_add(srv_cnt_.completions);
}

unsigned work_channel::serve_requests() {
    uint32_t tail = req_tail_.load(std::memory_order_relaxed);
    if (req_head_seen_ == tail) {
        req_head_seen_ = req_head_.load(std::memory_order_acquire);
        if (req_head_seen_ == tail) return 0;
    }
    unsigned done = 0;
    uint64_t served = 0;
    while (tail != req_head_seen_ && done < cfg_.serve_budget) {
        /* Room for the error completion this WR may turn into. */
        if (!comp_room(1)) {
            counter_add(srv_cnt_.comp_full_stalls);
            break;
        }
        slot *s = slot_at(tail);
        verbs_error e;
        if (cfg_.dev->lookup_qp(s->qpn) != s->q) {
            e = verbs_error::noent; /* destroyed since the post */
        } else if (s->is_send) {
            if (s->has_inline) s->sges()[0].addr = reinterpret_cast<uint64_t>(s->inline_data());
            s->wr.sg_list = s->sges();
            send_wr *bad = nullptr;
            e = uroce::post_send(s->q, &s->wr, &bad);
        } else {
            recv_wr r;
            r.wr_id = s->wr.wr_id;
            r.num_sge = s->wr.num_sge;
            r.sg_list = s->sges();
            recv_wr *bad = nullptr;
            e = uroce::post_recv(s->q, &r, &bad);
        }
        if (e == verbs_error::nomem) {
            /* The QP's own queue is full: not the app's error, retry later. */
            counter_add(srv_cnt_.qp_full_stalls);
            break;
        }
        if (e == verbs_error::ok)
            ++served;
        else
            push_error(*s, e);
        ++tail;
        ++done;
    }
    req_tail_.store(tail, std::memory_order_release);
    counter_add(srv_cnt_.served, served);
    return done;
}

unsigned work_channel::serve_completions() {
    if (n_cqs_ == 0) return 0;
    uint32_t head = comp_head_.load(std::memory_order_relaxed);
    uint32_t free = cfg_.comp_depth - (head - comp_tail_seen_);
    if (free == 0) {
        comp_tail_seen_ = comp_tail_.load(std::memory_order_acquire);
        free = cfg_.comp_depth - (head - comp_tail_seen_);
    }
    const uint32_t start = head;
    for (unsigned k = 0; k < n_cqs_ && free > 0; k++) {
        cq *c = cqs_[(next_cq_ + k) % n_cqs_];
        while (free > 0 && c->count() > 0) {
            /* Straight from the CQ into the ring slots: one copy. */
            const uint32_t idx = head & comp_mask_;
            uint32_t room = cfg_.comp_depth - idx;
            if (room > free) room = free;
            const int got = cq_poll(c, int(room), &comp_[idx]);
            head += uint32_t(got);
            free -= uint32_t(got);
        }
    }
    next_cq_ = (next_cq_ + 1) % n_cqs_;
    const uint32_t moved = head - start;
    if (moved) {
        comp_head_.store(head, std::memory_order_release);
        counter_add(srv_cnt_.completions, moved);
    } else if (free == 0) {
        for (unsigned k = 0; k < n_cqs_; k++)
            if (cqs_[k]->count() > 0) {
                counter_add(srv_cnt_.comp_full_stalls);
                break;
            }
    }
    return moved;
}

unsigned work_channel::serve() {
    counter_add(srv_cnt_.serves);
    return serve_requests() + serve_completions();
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_srq.h"

#include <bit>

namespace uroce {

void recv_ring::init(uint32_t max_wr, uint32_t max_sge) {
    uint32_t n = std::bit_ceil(max_wr < 1 ? 1u : max_wr);
    slots_ = std::make_unique<recv_wqe[]>(n);
    sges_ = std::make_unique<sge[]>(size_t(n) * max_sge);
    for (uint32_t i = 0; i < n; ++i)
        slots_[i].sg = &sges_[size_t(i) * max_sge];
    mask_ = n - 1;
    max_wr_ = max_wr;
    max_sge_ = max_sge;
    head_ = tail_ = 0;
}

void recv_ring::resize(uint32_t max_wr) {
    recv_ring n;
    n.init(max_wr, max_sge_);
    for (uint32_t i = tail_; i != head_; ++i) {
        const recv_wqe &w = slots_[i & mask_];
        recv_wr r; /* the WQE as posted, pushed again */
        r.wr_id = w.wr_id;
        r.sg_list = w.sg;
        r.num_sge = int(w.num_sge);
        n.push(r);
    }
    n.limit_ = limit_;
    *this = std::move(n);
}

void recv_ring::push(const recv_wr &r) {
    recv_wqe &w = slots_[head_ & mask_];
    w.wr_id = r.wr_id;
    w.num_sge = uint32_t(r.num_sge);
    w.length = 0;
    for (int i = 0; i < r.num_sge; ++i) {
        w.sg[i] = r.sg_list[i];
        w.length += r.sg_list[i].length;
    }
    ++head_;
}

verbs_error recv_ring_post(recv_ring &rq, recv_wr *wr, recv_wr **bad_wr) {
    for (; wr; wr = wr->next) {
        verbs_error e = verbs_error::ok;
        if (wr->num_sge < 0 || uint32_t(wr->num_sge) > rq.max_sge() ||
            (wr->num_sge > 0 && !wr->sg_list))
            e = verbs_error::inval;
        else if (rq.full())
            e = verbs_error::nomem;
        if (e != verbs_error::ok) {
            if (bad_wr) *bad_wr = wr;
            return e;
        }
        rq.push(*wr);
    }
    return verbs_error::ok;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_srq.h"

#include <bit>
#include <cstdint>
#include <new>

namespace uroce {

void recv_ring::init(uint32_t max_wr, uint32_t max_sge) {
    const uint32_t n = std::bit_ceil(max_wr < 1 ? 1u : max_wr);
    stride_ = uint32_t(sizeof(recv_wqe) + size_t(max_sge) * sizeof(sge));
    const size_t bytes = size_t(n) * stride_;
    slots_ = make_hugemem_array<uint8_t>(bytes); /* 64-byte aligned */
    mask_ = n - 1;
    for (uint32_t i = 0; i < n; ++i) {
        recv_wqe *w = new (&slot(i)) recv_wqe;
        for (uint32_t j = 0; j < max_sge; ++j)
            new (w->sgl() + j) sge;
    }
    max_wr_ = max_wr;
    max_sge_ = max_sge;
    head_ = tail_ = 0;
}

void recv_ring::resize(uint32_t max_wr) {
    recv_ring n;
    n.init(max_wr, max_sge_);
    for (uint32_t i = tail_; i != head_; ++i) {
        recv_wqe &w = slot(i);
        recv_wr r; /* the WQE as posted, pushed again */
        r.wr_id = w.wr_id;
        r.sg_list = w.sgl();
        r.num_sge = int(w.num_sge);
        n.push(r);
    }
    n.limit_ = limit_;
    *this = std::move(n);
}

void recv_ring::push(const recv_wr &r) {
    recv_wqe &w = slot(head_);
    w.wr_id = r.wr_id;
    w.num_sge = uint32_t(r.num_sge);
    uint64_t length = 0;
    sge *sg = w.sgl();
    for (int i = 0; i < r.num_sge; ++i) {
        copy_sge(sg[i], r.sg_list[i]);
        length += sg[i].length; /* the copy: the application's SGE is read once */
    }
    w.length = length > UINT32_MAX ? UINT32_MAX : uint32_t(length);
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

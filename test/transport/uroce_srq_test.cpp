/* SPDX-License-Identifier: BSD-3-Clause
 * lib/transport/uroce_srq.cpp: the receive ring behind a QP's RQ and an SRQ.
 * A WQE is its header and its scatter list in one slot (32 bytes for one
 * SGE); posting validates, the front comes back as posted, in order, across
 * the ring's wrap and a resize.
 */
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "uroce_qp.h" /* max_msg_size */
#include "uroce_srq.h"

namespace uroce {
namespace {

/* A WR as the test posted it, to compare the front against. */
struct posted_wr {
    uint64_t wr_id;
    std::vector<sge> sgl;
};

void post(recv_ring &rq, const posted_wr &p) {
    recv_wr wr;
    wr.wr_id = p.wr_id;
    wr.sg_list = const_cast<sge *>(p.sgl.data());
    wr.num_sge = int(p.sgl.size());
    recv_wr *bad = nullptr;
    ASSERT_EQ(recv_ring_post(rq, &wr, &bad), verbs_error::ok);
}

void expect_front(recv_ring &rq, const posted_wr &p) {
    const recv_wqe &w = rq.front();
    EXPECT_EQ(w.wr_id, p.wr_id);
    ASSERT_EQ(w.num_sge, p.sgl.size());
    uint64_t length = 0;
    for (size_t i = 0; i < p.sgl.size(); ++i) {
        EXPECT_EQ(w.sgl()[i].addr, p.sgl[i].addr) << "SGE " << i;
        EXPECT_EQ(w.sgl()[i].length, p.sgl[i].length) << "SGE " << i;
        EXPECT_EQ(w.sgl()[i].lkey, p.sgl[i].lkey) << "SGE " << i;
        length += p.sgl[i].length;
    }
    EXPECT_EQ(w.length, length);
}

posted_wr random_wr(std::mt19937 &rng, uint64_t id, uint32_t max_sge) {
    posted_wr p{id, {}};
    const uint32_t n = rng() % (max_sge + 1);
    for (uint32_t i = 0; i < n; ++i)
        p.sgl.push_back(sge{uint64_t(rng()) << 12 | i, uint32_t(rng() % 65536), uint32_t(rng())});
    return p;
}

TEST(recv_ring, a_one_sge_wqe_is_32_bytes_its_scatter_list_after_its_header) {
    recv_ring rq;
    rq.init(8, 1);
    const auto *w0 = reinterpret_cast<const uint8_t *>(rq.slot_after_front(0));
    const auto *w1 = reinterpret_cast<const uint8_t *>(rq.slot_after_front(1));
    EXPECT_EQ(w1 - w0, 32);
    EXPECT_EQ(reinterpret_cast<const uint8_t *>(rq.slot_after_front(0)->sgl()), w0 + 16);
    EXPECT_EQ(reinterpret_cast<const uint8_t *>(rq.slot_end_after_front(0)), w0 + 31);
    EXPECT_EQ(uintptr_t(w0) % 64, 0u); /* two slots to a line, never across one */

    rq.init(8, 3);
    w0 = reinterpret_cast<const uint8_t *>(rq.slot_after_front(0));
    w1 = reinterpret_cast<const uint8_t *>(rq.slot_after_front(1));
    EXPECT_EQ(w1 - w0, 64);
}

TEST(recv_ring, the_front_is_each_wqe_as_posted_in_order_across_many_laps) {
    for (uint32_t max_sge : {1u, 2u, 5u}) {
        std::mt19937 rng(max_sge);
        recv_ring rq;
        rq.init(5, max_sge); /* 8 slots: the ring wraps every 8 WQEs */
        std::deque<posted_wr> model;
        uint64_t id = 0;
        for (int step = 0; step < 2000; ++step) {
            if (!rq.full() && (model.empty() || rng() % 2)) {
                model.push_back(random_wr(rng, ++id, max_sge));
                post(rq, model.back());
            } else {
                ASSERT_FALSE(rq.empty());
                expect_front(rq, model.front());
                rq.pop();
                model.pop_front();
            }
            ASSERT_EQ(rq.count(), model.size());
        }
    }
}

TEST(recv_ring, posting_checks_the_scatter_list_and_the_room) {
    recv_ring rq;
    rq.init(2, 2);
    std::vector<sge> three(3, sge{0x1000, 64, 1});
    recv_wr ok, too_many, no_list;
    ok.wr_id = 1;
    ok.sg_list = three.data();
    ok.num_sge = 2;
    too_many = ok;
    too_many.num_sge = 3;
    no_list = ok;
    no_list.sg_list = nullptr;
    recv_wr *bad = nullptr;
    EXPECT_EQ(recv_ring_post(rq, &too_many, &bad), verbs_error::inval);
    EXPECT_EQ(bad, &too_many);
    EXPECT_EQ(recv_ring_post(rq, &no_list, &bad), verbs_error::inval);
    EXPECT_EQ(bad, &no_list);
    EXPECT_TRUE(rq.empty());
    /* a chain stops at its first bad WR, the ones before it posted */
    recv_wr second = ok;
    ok.next = &second;
    second.next = &too_many;
    EXPECT_EQ(recv_ring_post(rq, &ok, &bad), verbs_error::inval);
    EXPECT_EQ(bad, &too_many);
    EXPECT_EQ(rq.count(), 2u);
    second.next = nullptr;
    ok.next = nullptr;
    EXPECT_EQ(recv_ring_post(rq, &ok, &bad), verbs_error::nomem); /* max_wr 2 */
    EXPECT_EQ(bad, &ok);
}

/* The sum is kept in 32 bits: clamped, it is still more than any message
 * (max_msg_size), so the responder's length check is unchanged. */
TEST(recv_ring, a_length_past_32_bits_is_clamped_above_any_message) {
    recv_ring rq;
    rq.init(1, 3);
    post(rq, posted_wr{7, std::vector<sge>(3, sge{0x1000, 0x80000000u, 1})});
    EXPECT_EQ(rq.front().length, UINT32_MAX);
    EXPECT_GT(uint64_t(rq.front().length), uint64_t(max_msg_size));
}

TEST(recv_ring, a_resize_keeps_the_posted_wqes_in_order) {
    std::mt19937 rng(3);
    recv_ring rq;
    rq.init(8, 2);
    std::deque<posted_wr> model;
    for (uint64_t id = 1; id <= 14; ++id) { /* wrap first: 6 popped, 8 posted */
        model.push_back(random_wr(rng, id, 2));
        post(rq, model.back());
        if (id <= 6) {
            rq.pop();
            model.pop_front();
        }
    }
    rq.set_limit(3);
    rq.resize(32);
    EXPECT_EQ(rq.max_wr(), 32u);
    EXPECT_EQ(rq.limit(), 3u);
    ASSERT_EQ(rq.count(), model.size());
    for (int id = 15; id <= 24; ++id) { /* 18 posted of 32 */
        model.push_back(random_wr(rng, uint64_t(id), 2));
        post(rq, model.back());
    }
    rq.resize(uint32_t(model.size())); /* down to exactly what is posted */
    EXPECT_TRUE(rq.full());
    while (!model.empty()) {
        expect_front(rq, model.front());
        rq.pop();
        model.pop_front();
    }
    EXPECT_TRUE(rq.empty());
}

TEST(recv_ring, only_an_armed_limit_is_ever_below) {
    recv_ring rq;
    rq.init(4, 1);
    EXPECT_FALSE(rq.below_limit()); /* a QP's own ring: limit 0 */
    rq.set_limit(2);
    EXPECT_TRUE(rq.below_limit());
    post(rq, posted_wr{1, {sge{0x1000, 8, 1}}});
    post(rq, posted_wr{2, {sge{0x1000, 8, 1}}});
    EXPECT_FALSE(rq.below_limit());
    rq.pop();
    EXPECT_TRUE(rq.below_limit());
}

} // namespace
} // namespace uroce

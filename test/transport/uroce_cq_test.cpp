/* SPDX-License-Identifier: BSD-3-Clause
 * The completion ring (uroce_cq.h): first in, first out whatever the
 * indices do; full at its size and counted beyond it; and, once an
 * application has polled it empty, the next completion in its first slot
 * again, so that a CQ sized for thousands of QPs but kept up with stays in
 * a few lines.
 */
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "uroce_cq.h"

using namespace uroce;

namespace {

/* A CQ of n slots (a power of two), as device::create_cq sets one up. */
struct ring_cq {
    cq c;
    explicit ring_cq(uint32_t n) {
        c.ring = make_hugemem_array<wc>(n);
        c.mask = n - 1;
        c.cqe = n;
    }
    bool post(uint64_t id) {
        wc e;
        e.wr_id = id;
        return cq_post(&c, e);
    }
    std::vector<uint64_t> poll(int num) {
        std::vector<wc> out(size_t(num > 0 ? num : 1));
        const int n = cq_poll(&c, num, out.data());
        std::vector<uint64_t> ids;
        for (int i = 0; i < n; ++i)
            ids.push_back(out[size_t(i)].wr_id);
        return ids;
    }
};

TEST(cq, polled_empty_the_next_completion_takes_the_first_slot) {
    ring_cq r(8);
    for (uint64_t id = 1; id <= 5; ++id)
        ASSERT_TRUE(r.post(id));
    EXPECT_EQ(r.poll(3), (std::vector<uint64_t>{1, 2, 3}));
    /* not empty yet: the ring goes on where it was */
    ASSERT_TRUE(r.post(6));
    EXPECT_EQ(r.c.ring[5].wr_id, 6u);
    EXPECT_EQ(r.poll(8), (std::vector<uint64_t>{4, 5, 6}));
    /* empty: the next completion is written to slot 0, and read first */
    ASSERT_TRUE(r.post(7));
    EXPECT_EQ(r.c.ring[0].wr_id, 7u);
    ASSERT_TRUE(r.post(8));
    EXPECT_EQ(r.c.ring[1].wr_id, 8u);
    EXPECT_EQ(r.poll(8), (std::vector<uint64_t>{7, 8}));
}

TEST(cq, an_empty_poll_changes_nothing) {
    ring_cq r(4);
    EXPECT_TRUE(r.poll(4).empty());
    EXPECT_TRUE(r.poll(0).empty());
    ASSERT_TRUE(r.post(1));
    EXPECT_TRUE(r.poll(0).empty()); /* asked for none: nothing taken */
    EXPECT_EQ(r.c.count(), 1u);
    EXPECT_EQ(r.poll(4), (std::vector<uint64_t>{1}));
}

/* Full at its size wherever the indices stand, the completion beyond it
 * refused and counted, and the ring whole again once polled empty. */
TEST(cq, full_at_its_size_before_and_after_it_starts_over) {
    ring_cq r(4);
    for (int round = 0; round < 3; ++round) {
        ASSERT_TRUE(r.post(100));
        EXPECT_EQ(r.poll(1), (std::vector<uint64_t>{100})); /* drained: starts over */
        for (uint64_t id = 0; id < 4; ++id)
            ASSERT_TRUE(r.post(id)) << round;
        EXPECT_FALSE(r.post(99));
        EXPECT_EQ(r.c.overflows, uint64_t(2 * round + 1));
        EXPECT_EQ(r.poll(2), (std::vector<uint64_t>{0, 1}));
        ASSERT_TRUE(r.post(4));
        ASSERT_TRUE(r.post(5));
        EXPECT_FALSE(r.post(98));
        EXPECT_EQ(r.c.overflows, uint64_t(2 * round + 2));
        EXPECT_EQ(r.poll(8), (std::vector<uint64_t>{2, 3, 4, 5}));
    }
}

/* A CQ that is never polled empty (one completion always left) wraps its
 * indices like any ring, in order. */
TEST(cq, never_empty_it_wraps_in_order) {
    ring_cq r(8);
    uint64_t next_post = 0, next_poll = 0;
    ASSERT_TRUE(r.post(next_post++));
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(r.post(next_post++));
        ASSERT_TRUE(r.post(next_post++));
        EXPECT_EQ(r.poll(2), (std::vector<uint64_t>{next_poll, next_poll + 1}));
        next_poll += 2;
    }
    EXPECT_EQ(r.c.head, 201u); /* it went round the 8 slots 25 times */
    EXPECT_EQ(r.poll(8), (std::vector<uint64_t>{next_poll}));
    EXPECT_EQ(next_poll + 1, next_post);
}

/* cq_resize after the ring started over keeps what is unpolled in order. */
TEST(cq, resize_after_starting_over_keeps_the_order) {
    ring_cq r(4);
    ASSERT_TRUE(r.post(1));
    EXPECT_EQ(r.poll(1), (std::vector<uint64_t>{1}));
    ASSERT_TRUE(r.post(2));
    ASSERT_TRUE(r.post(3));
    cq_resize(&r.c, 16);
    EXPECT_EQ(r.c.mask, 15u);
    for (uint64_t id = 4; id < 18; ++id)
        ASSERT_TRUE(r.post(id));
    EXPECT_FALSE(r.post(18));
    std::vector<uint64_t> want;
    for (uint64_t id = 2; id < 18; ++id)
        want.push_back(id);
    EXPECT_EQ(r.poll(32), want);
}

} // namespace

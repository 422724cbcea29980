/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_gsi.cpp: MADs between two stacks' QP1. A MAD to a peer
 * whose MAC is unknown waits for ARP and then leaves; one to a peer that
 * never answers is dropped and counted; the receiver learns the sender's
 * and its own GID from the GRH, and QP 1 as the source; the park queue is
 * bounded.
 */
#include <vector>

#include "cm_stacks.h"
#include "uroce_cm_gsi.h"

using namespace uroce;
using namespace uroce::test;

namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env("512"));

class cm_gsi_t : public cm_pair {
  protected:
    std::unique_ptr<cm_gsi> ga, gb;
    struct got {
        gid from, to;
        uint32_t src_qp;
        std::vector<uint8_t> mad;
    };
    std::vector<got> at_b;

    void SetUp() override {
        cm_pair::SetUp();
        with_cm = false;
        start();
        cm_gsi::config c;
        c.park_cap = 4;
        c.park_timeout_ns = 500'000'000;
        ga = std::make_unique<cm_gsi>(a.ctx, *a.nb, c);
        gb = std::make_unique<cm_gsi>(b.ctx, *b.nb, c);
        ASSERT_EQ(ga->error(), verbs_error::ok);
        ASSERT_EQ(gb->error(), verbs_error::ok);
    }
    void TearDown() override {
        ga.reset();
        gb.reset();
        cm_pair::TearDown();
    }
    bool step() {
        bool moved = pump();
        const uint64_t now = clk.now_ns();
        moved |=
            ga->poll(now, [](const gid &, const gid &, uint32_t, const uint8_t *, size_t) {}) > 0;
        moved |=
            gb->poll(now, [&](const gid &f, const gid &t, uint32_t q, const uint8_t *m, size_t n) {
                at_b.push_back({f, t, q, {m, m + n}});
            }) > 0;
        return moved;
    }
    bool run(const std::function<bool()> &pred, uint64_t max_ns = 5'000'000'000ull) {
        const uint64_t end = clk.now_ns() + max_ns;
        while (!pred()) {
            if (!step() && link->in_flight() == 0) {
                if (clk.now_ns() >= end) return false;
                clk.advance(1'000'000);
            }
        }
        return true;
    }
};

TEST_F(cm_gsi_t, a_mad_waits_for_arp_then_arrives_from_qp1) {
    std::vector<uint8_t> mad(mad_size);
    for (size_t i = 0; i < mad.size(); i++)
        mad[i] = uint8_t(i);
    ga->send(gid::from_ipv4(ip_b), 1, gid{}, mad.data(), clk.now_ns());
    EXPECT_EQ(ga->parked(), 1u) << "b's MAC is not known yet";
    ASSERT_TRUE(run([&] { return at_b.size() == 1; }));
    EXPECT_EQ(at_b[0].from, gid::from_ipv4(ip_a));
    EXPECT_EQ(at_b[0].to, gid::from_ipv4(ip_b));
    EXPECT_EQ(at_b[0].src_qp, 1u);
    EXPECT_EQ(at_b[0].mad, mad);
    EXPECT_EQ(ga->counters().parked, 1u);
    EXPECT_EQ(ga->counters().tx, 1u);
    /* now known: straight out */
    ga->send(gid::from_ipv4(ip_b), 1, gid{}, mad.data(), clk.now_ns());
    EXPECT_EQ(ga->parked(), 0u);
    ASSERT_TRUE(run([&] { return at_b.size() == 2; }));
    EXPECT_EQ(gb->counters().rx, 2u);
}

TEST_F(cm_gsi_t, a_peer_that_never_answers_costs_a_counted_drop_and_the_queue_is_bounded) {
    std::vector<uint8_t> mad(mad_size, 0);
    const gid nobody = gid::from_ipv4(0x0a4d0063);
    for (int i = 0; i < 6; i++)
        ga->send(nobody, 1, gid{}, mad.data(), clk.now_ns());
    EXPECT_EQ(ga->parked(), 4u);
    EXPECT_EQ(ga->counters().queue_full, 2u);
    ASSERT_TRUE(run([&] { return ga->parked() == 0; }));
    EXPECT_EQ(ga->counters().unresolved, 4u);
    EXPECT_EQ(ga->counters().tx, 0u);
}

TEST(cm_gsi_grh, addresses_of_both_families) {
    uint8_t grh[40] = {};
    grh[20] = 0x45;
    store_be32(grh + 20 + 12, 0x0a000001);
    store_be32(grh + 20 + 16, 0x0a000002);
    EXPECT_EQ(cm_gsi::grh_addr(grh, false), gid::from_ipv4(0x0a000001));
    EXPECT_EQ(cm_gsi::grh_addr(grh, true), gid::from_ipv4(0x0a000002));
    uint8_t v6[40] = {0x60};
    const gid s = *gid::parse("fd00::1"), d = *gid::parse("fd00::2");
    std::memcpy(v6 + 8, s.raw.data(), 16);
    std::memcpy(v6 + 24, d.raw.data(), 16);
    EXPECT_EQ(cm_gsi::grh_addr(v6, false), s);
    EXPECT_EQ(cm_gsi::grh_addr(v6, true), d);
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN reaction point (uroce_dcqcn.cpp) on a test clock: the pacer's rate,
 * the cut, alpha's EWMA and decay, fast recovery, additive and hyper
 * increase from the timer and the byte counter, the return to line rate.
 */
#include <gtest/gtest.h>

#include <cmath>

#include "uroce_dcqcn.h"

using namespace uroce;

namespace {

cc_config paper_config(uint64_t line_mbps) {
    cc_config c;
    c.dcqcn = true;
    c.rp.line_rate_mbps = line_mbps;
    return c;
}

/* Bytes the pacer lets out in [t0, t0 + dur) when offered frames of len
 * back to back, polling every step_ns. */
uint64_t paced_bytes(dcqcn_rp &s, uint64_t t0, uint64_t dur, uint32_t len, uint64_t step_ns) {
    uint64_t sent = 0;
    for (uint64_t t = t0; t < t0 + dur; t += step_ns)
        while (cc_may_send(s, t)) {
            cc_on_sent(s, len);
            sent += len;
        }
    return sent;
}

TEST(dcqcn, pacer_holds_the_rate) {
    for (uint64_t mbps : {1000ull, 25'000ull, 100'000ull, 400'000ull}) {
        cc_config c = paper_config(mbps);
        dcqcn_rp s;
        dcqcn_init(s, c, 1000);
        EXPECT_TRUE(s.paced);
        EXPECT_FALSE(s.active);
        const uint64_t dur = 10'000'000; /* 10 ms */
        /* the first burst is the bucket's depth, on top of the rate */
        uint64_t bytes = paced_bytes(s, 1000, dur, 4154, 100) - c.rp.burst_bytes;
        double got = double(bytes) * 8 / (double(dur) / 1e3); /* Mb/s */
        EXPECT_NEAR(got / double(mbps), 1.0, 0.01) << mbps;
    }
}

TEST(dcqcn, pacer_burst_is_bounded) {
    cc_config c = paper_config(10'000);
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    /* after an idle spell: the bucket's depth plus the frame that empties it */
    uint64_t burst = paced_bytes(s, 5'000'000, 1, 1000, 1);
    EXPECT_GE(burst, uint64_t(c.rp.burst_bytes));
    EXPECT_LE(burst, uint64_t(c.rp.burst_bytes) + 2000);
}

TEST(dcqcn, no_line_rate_means_no_pacing) {
    cc_config c;
    c.dcqcn = true; /* without a line rate DCQCN cannot run */
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    EXPECT_FALSE(s.paced);
    EXPECT_FALSE(s.dcqcn);
    EXPECT_FALSE(dcqcn_on_cnp(s, 10));
}

TEST(dcqcn, line_rate_without_dcqcn_paces_and_ignores_cnps) {
    cc_config c;
    c.rp.line_rate_mbps = 40'000;
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    EXPECT_TRUE(s.paced);
    EXPECT_FALSE(dcqcn_on_cnp(s, 10));
    EXPECT_DOUBLE_EQ(s.rc, 40'000);
}

TEST(dcqcn, cut_follows_alpha_and_the_monitor_period) {
    cc_config c = paper_config(40'000);
    c.rp.min_dec_factor_pct = 0;
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    /* alpha starts at 1: RT = RC, RC halves, alpha stays 1 */
    ASSERT_TRUE(dcqcn_on_cnp(s, 1000));
    EXPECT_DOUBLE_EQ(s.rt, 40'000);
    EXPECT_DOUBLE_EQ(s.rc, 20'000);
    EXPECT_DOUBLE_EQ(s.alpha, 1.0);
    EXPECT_TRUE(s.active);
    /* within rate_reduce_period (4 us): absorbed */
    EXPECT_FALSE(dcqcn_on_cnp(s, 1000 + 3999));
    EXPECT_DOUBLE_EQ(s.rc, 20'000);
    /* after it: cut with the alpha of the moment */
    ASSERT_TRUE(dcqcn_on_cnp(s, 1000 + 4000));
    EXPECT_DOUBLE_EQ(s.rt, 20'000);
    EXPECT_DOUBLE_EQ(s.rc, 10'000);
    EXPECT_EQ(s.cuts, 2u);
    /* with alpha at a: RC * (1 - a / 2), then alpha = (1 - g) a + g */
    s.alpha = 0.25;
    ASSERT_TRUE(dcqcn_on_cnp(s, 20'000));
    EXPECT_DOUBLE_EQ(s.rc, 10'000 * (1 - 0.125));
    EXPECT_DOUBLE_EQ(s.alpha, (1 - 1.0 / 256) * 0.25 + 1.0 / 256);
}

TEST(dcqcn, cut_floors) {
    cc_config c = paper_config(40'000);
    c.rp.min_dec_factor_pct = 80; /* a cut keeps at least 80% */
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 100));
    EXPECT_DOUBLE_EQ(s.rc, 32'000);
    c.rp.min_dec_factor_pct = 0;
    c.rp.min_rate_mbps = 15'000;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 100));
    ASSERT_TRUE(dcqcn_on_cnp(s, 10'000));
    EXPECT_DOUBLE_EQ(s.rc, 15'000); /* min rate, not 10'000 */
}

TEST(dcqcn, alpha_decays_on_its_timer) {
    cc_config c = paper_config(40'000);
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 0));
    const double g = c.rp.g;
    const uint64_t k = c.rp.alpha_update_ns;
    /* nothing before the first period */
    cc_may_send(s, k - 1);
    EXPECT_DOUBLE_EQ(s.alpha, 1.0);
    cc_may_send(s, k);
    EXPECT_DOUBLE_EQ(s.alpha, 1 - g);
    /* ten periods later in one step: caught up exactly */
    cc_may_send(s, 11 * k + 5);
    EXPECT_NEAR(s.alpha, std::pow(1 - g, 11), 1e-12);
    /* a CNP restarts the timer: the next decay is K after it */
    const uint64_t t = 11 * k + 100;
    double a0 = s.alpha;
    ASSERT_TRUE(dcqcn_on_cnp(s, t));
    double a1 = (1 - g) * a0 + g;
    EXPECT_NEAR(s.alpha, a1, 1e-12);
    cc_may_send(s, t + k - 1);
    EXPECT_NEAR(s.alpha, a1, 1e-12);
    cc_may_send(s, t + k);
    EXPECT_NEAR(s.alpha, a1 * (1 - g), 1e-12);
}

/* The paper's F = 5: five timer events of fast recovery halve the distance
 * to RT each, then additive increase, then (with the byte counter past F
 * too) hyper increase. */
TEST(dcqcn, fast_recovery_then_additive_then_hyper) {
    cc_config c = paper_config(40'000);
    c.rp.fast_recovery_steps = 5;
    c.rp.rate_increase_ns = 55'000;
    c.rp.alpha_update_ns = 1'000'000'000; /* keep alpha out of it */
    c.rp.ai_rate_mbps = 40;
    c.rp.hai_rate_mbps = 400;
    c.rp.byte_counter = 10'000'000;
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 0));
    ASSERT_DOUBLE_EQ(s.rc, 20'000);
    const uint64_t t = c.rp.rate_increase_ns;
    double rc = 20'000;
    for (unsigned i = 1; i <= 5; ++i) {
        cc_may_send(s, i * t);
        rc = (40'000 + rc) / 2;
        EXPECT_DOUBLE_EQ(s.rc, rc) << "fast recovery step " << i;
        EXPECT_DOUBLE_EQ(s.rt, 40'000);
        EXPECT_EQ(s.t_count, i);
    }
    /* 6th timer event, byte counter still 0: additive, RT += R_AI (but RT
     * is already at line rate: clamped) */
    cc_may_send(s, 6 * t);
    EXPECT_DOUBLE_EQ(s.rt, 40'000);
    /* from a lower RT the additive step shows */
    s.rt = 30'000;
    s.rc = 29'000;
    cc_may_send(s, 7 * t);
    EXPECT_DOUBLE_EQ(s.rt, 30'040);
    EXPECT_DOUBLE_EQ(s.rc, (30'040 + 29'000) / 2.0);
    /* byte counter past F as well: hyper, RT += (min(T, BC) - F) * R_HAI */
    s.bc_count = 6; /* the next byte event makes it 7 */
    s.rt = 30'000;
    s.rc = 29'000;
    dcqcn_on_bytes(s);
    EXPECT_EQ(s.t_count, 7u);
    EXPECT_EQ(s.bc_count, 7u);
    EXPECT_DOUBLE_EQ(s.rt, 30'000 + 2 * 400.0);
}

/* mlx5's defaults (F = 1, T = 300 us, B = 32767 bytes): the byte counter
 * drives recovery while the QP sends; the QP gets back to line rate and
 * DCQCN goes idle. */
TEST(dcqcn, mlx5_defaults_recover_to_line_rate) {
    cc_config c = paper_config(25'000);
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 0));
    EXPECT_DOUBLE_EQ(s.rc, 12'500);
    /* one byte-counter event: fast recovery (T = BC = 0 < F before it) */
    uint64_t sent = 0;
    uint64_t now = 1;
    while (s.bc_count == 0) {
        if (cc_may_send(s, now)) {
            cc_on_sent(s, 4154);
            sent += 4154;
        } else {
            now += 100;
        }
    }
    EXPECT_GE(sent, c.rp.byte_counter);
    EXPECT_DOUBLE_EQ(s.rc, (25'000 + 12'500) / 2.0);
    /* keep sending: back at line rate, inactive, within 100 ms */
    for (; now < 100'000'000 && s.active; now += 100)
        while (cc_may_send(s, now))
            cc_on_sent(s, 4154);
    EXPECT_FALSE(s.active);
    EXPECT_DOUBLE_EQ(s.rc, 25'000);
    EXPECT_EQ(s.inc_next_ns, ~0ull);
}

/* The lazy timers equal a timer that fires on time: one catch-up call and
 * one call per period end in the same state. */
TEST(dcqcn, lazy_timers_match_stepwise) {
    cc_config c = paper_config(100'000);
    c.rp.fast_recovery_steps = 5;
    c.rp.byte_counter = 1ull << 40;
    dcqcn_rp lazy, step;
    dcqcn_init(lazy, c, 0);
    dcqcn_init(step, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(lazy, 0));
    ASSERT_TRUE(dcqcn_on_cnp(step, 0));
    const uint64_t end = 50 * c.rp.rate_increase_ns + 17;
    for (uint64_t t = 0; t <= end; t += 1000)
        cc_may_send(step, t);
    cc_may_send(lazy, end);
    EXPECT_DOUBLE_EQ(lazy.rc, step.rc);
    EXPECT_DOUBLE_EQ(lazy.rt, step.rt);
    EXPECT_EQ(lazy.t_count, step.t_count);
    EXPECT_NEAR(lazy.alpha, step.alpha, 1e-12);
}

/* A cut slows the pacer at once: the bytes let out follow the new rate. */
TEST(dcqcn, pacer_follows_the_cut) {
    cc_config c = paper_config(10'000);
    c.rp.rate_increase_ns = 1'000'000'000;
    c.rp.byte_counter = 1ull << 40;
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    ASSERT_TRUE(dcqcn_on_cnp(s, 0));
    const uint64_t dur = 5'000'000;
    uint64_t bytes = paced_bytes(s, 10, dur, 1500, 200);
    double got = double(bytes) * 8 / (double(dur) / 1e3);
    EXPECT_NEAR(got, 5'000, 60);
}

/* What was sent ahead of the clock at a low rate is paid at the new rate
 * once it rises: a QP cut to the floor is not held for the time its last
 * frames would have taken at that rate. */
TEST(dcqcn, pacer_debt_follows_the_rate) {
    cc_config c = paper_config(10'000);
    c.rp.min_dec_factor_pct = 0;
    c.rp.fast_recovery_steps = 5;
    c.rp.byte_counter = 1ull << 40;
    dcqcn_rp s;
    dcqcn_init(s, c, 0);
    for (uint64_t t = 0; t < 200'000; t += 5'000)
        dcqcn_on_cnp(s, t); /* cut after cut, to the 1 Mb/s floor */
    ASSERT_DOUBLE_EQ(s.rc, 1.0);
    ASSERT_TRUE(cc_may_send(s, 200'000));
    cc_on_sent(s, 4000); /* 32 ms of credit at 1 Mb/s */
    const uint64_t debt = s.tat_ns - 200'000;
    EXPECT_NEAR(double(debt), 32e6, 1e3);
    /* five fast-recovery steps toward 10 Gb/s later the rate is ~9.7 Gb/s:
     * the debt shrank with it */
    s.rt = 10'000;
    cc_may_send(s, 200'000 + 5 * c.rp.rate_increase_ns);
    EXPECT_GT(s.rc, 9'000);
    EXPECT_TRUE(cc_may_send(s, 200'000 + 5 * c.rp.rate_increase_ns + 1));
}

} // namespace

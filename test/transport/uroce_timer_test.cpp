/* SPDX-License-Identifier: BSD-3-Clause
 * Timer wheel: never early, fires once, cancel, re-arm from a callback, a
 * later re-arm that leaves the timer filed,
 * timers beyond one revolution, long jumps of the clock; PSN arithmetic.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "uroce_psn.h"
#include "uroce_timer.h"

using namespace uroce;

namespace {

struct counter_t {
    int fired = 0;
    timer_wheel *w = nullptr;
    timer_node *self = nullptr;
    uint64_t *now = nullptr;
    int rearm = 0;
};

static void on_fire(void *arg) {
    auto *c = static_cast<counter_t *>(arg);
    ++c->fired;
    if (c->rearm > 0) {
        --c->rearm;
        c->w->arm(*c->self, *c->now, 0);
    }
}

TEST(timer_wheel_test, fires_once_never_early) {
    timer_wheel w;
    uint64_t now = 5'000'000;
    w.start(now);
    counter_t c;
    timer_node t;
    t.fn = on_fire;
    t.arg = &c;
    w.arm(t, now, 100'000);
    EXPECT_EQ(w.advance(now + 99'000), 0u);
    EXPECT_EQ(c.fired, 0);
    EXPECT_EQ(w.advance(now + 101'500), 1u);
    EXPECT_EQ(c.fired, 1);
    EXPECT_EQ(w.advance(now + 10'000'000), 0u);
    EXPECT_FALSE(t.armed());
}

TEST(timer_wheel_test, cancel_and_rearm) {
    timer_wheel w;
    uint64_t now = 0;
    w.start(now);
    counter_t c;
    timer_node t;
    t.fn = on_fire;
    t.arg = &c;
    w.arm(t, now, 50'000);
    w.cancel(t);
    EXPECT_EQ(w.armed_count(), 0u);
    EXPECT_EQ(w.advance(100'000), 0u);
    /* re-arming moves the deadline */
    w.arm(t, 100'000, 50'000);
    w.arm(t, 100'000, 500'000);
    EXPECT_EQ(w.advance(200'000), 0u);
    EXPECT_EQ(w.advance(601'100), 1u);
    /* a callback that re-arms itself with no delay fires again next tick, not forever */
    c = counter_t{};
    c.w = &w;
    c.self = &t;
    now = 700'000;
    c.now = &now;
    c.rearm = 3;
    w.arm(t, now, 0);
    now += 100'000;
    w.advance(now);
    EXPECT_GE(c.fired, 1);
    for (int i = 0; i < 10; ++i) {
        now += 2048;
        w.advance(now);
    }
    EXPECT_EQ(c.fired, 4);
}

/* Re-arming a timer to fire later leaves it where it is filed (its
 * neighbours in the slot's list are not touched: with thousands of QPs
 * they are other QPs' cold lines) and it fires at the later time, never at
 * the earlier one; re-arming it sooner moves it. Within a revolution and
 * beyond (an ACK timeout of 67 ms is 16 revolutions). */
TEST(timer_wheel_test, rearming_later_leaves_the_timer_filed_and_fires_then) {
    for (uint64_t delay : {50'000ull, 67'000'000ull}) {
        timer_wheel w;
        uint64_t now = 1'000'000;
        w.start(now);
        counter_t ca, cb, cc;
        timer_node a, b, c;
        a.fn = b.fn = c.fn = on_fire;
        a.arg = &ca;
        b.arg = &cb;
        c.arg = &cc;
        /* three timers filed under one tick, a between b and c */
        w.arm(b, now, delay);
        w.arm(a, now, delay);
        w.arm(c, now, delay);
        ASSERT_EQ(a.prev, &b);
        ASSERT_EQ(a.next, &c);
        for (int i = 1; i <= 20; ++i) { /* a response every delay / 10 */
            w.advance(now + uint64_t(i) * delay / 10);
            w.arm(a, now + uint64_t(i) * delay / 10, delay);
            if (i < 10) {
                EXPECT_EQ(a.prev, &b) << i; /* not unlinked, nor anyone else */
                EXPECT_EQ(a.next, &c) << i;
                EXPECT_EQ(b.next, &a) << i;
                EXPECT_EQ(c.prev, &a) << i;
            }
            EXPECT_EQ(ca.fired, 0) << "fired early, response " << i;
        }
        EXPECT_EQ(cb.fired, 1);
        EXPECT_EQ(cc.fired, 1);
        EXPECT_EQ(w.armed_count(), 1u);
        const uint64_t last = now + 20 * delay / 10;
        EXPECT_EQ(w.advance(last + delay - 2048), 0u);
        EXPECT_EQ(w.advance(last + delay + 1024), 1u);
        EXPECT_EQ(ca.fired, 1);
        /* re-armed sooner: moved, fires at the sooner time */
        w.arm(a, last + delay + 2048, delay);
        w.arm(a, last + delay + 2048, delay / 4);
        EXPECT_EQ(w.advance(last + delay + 2048 + delay / 4 + 1024), 1u);
        EXPECT_EQ(ca.fired, 2);
        EXPECT_EQ(w.armed_count(), 0u);
    }
}

TEST(timer_wheel_test, beyond_one_revolution_and_long_jumps) {
    timer_wheel w;
    uint64_t now = 0;
    w.start(now);
    std::vector<counter_t> cs(50);
    std::vector<timer_node> ts(50);
    for (int i = 0; i < 50; ++i) {
        ts[i].fn = on_fire;
        ts[i].arg = &cs[i];
        /* spread from 1 us to ~ 50 revolutions (4.2 ms each) */
        w.arm(ts[i], now, uint64_t(i + 1) * 4'300'000ull);
    }
    for (int i = 0; i < 50; ++i) {
        uint64_t due = uint64_t(i + 1) * 4'300'000ull;
        w.advance(due - 2000);
        EXPECT_EQ(cs[i].fired, 0) << i;
        w.advance(due + 1100);
        EXPECT_EQ(cs[i].fired, 1) << i;
    }
    /* a jump of many revolutions fires everything that is due exactly once */
    for (int i = 0; i < 50; ++i) {
        cs[i].fired = 0;
        w.arm(ts[i], 300'000'000, uint64_t(i) * 1'000'000);
    }
    w.advance(2'000'000'000);
    for (auto &c : cs)
        EXPECT_EQ(c.fired, 1);
}

/* Against a model: random arms (1 us .. 3 s: within a revolution, in the
 * far wheel, beyond its 1.07 s), cancels and clock steps (1 us .. 5 s, so
 * jumps over many revolutions and over the whole far wheel). Each timer
 * fires once, at the first advance whose tick reaches its due tick: never
 * early, never late. */
struct model_timer {
    timer_node node;
    uint64_t due_tick = 0; /* 0: not armed */
    int fired = 0;
    uint64_t fired_at = 0;
    uint64_t *now_tick = nullptr;
};

static void on_model_fire(void *arg) {
    auto *m = static_cast<model_timer *>(arg);
    ++m->fired;
    m->fired_at = *m->now_tick;
}

TEST(timer_wheel_test, far_wheel_matches_a_model) {
    timer_wheel w;
    uint64_t now = 123'456'789;
    uint64_t now_tick = now >> timer_wheel::tick_shift;
    w.start(now);
    std::vector<model_timer> ms(300);
    for (auto &m : ms) {
        m.node.fn = on_model_fire;
        m.node.arg = &m;
        m.now_tick = &now_tick;
    }
    uint64_t rng = 88172645463325252ull;
    auto next = [&rng] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    const uint64_t delays[] = {1'000,      900'000,       4'000'000,    5'000'000,
                               67'000'000, 1'100'000'000, 3'000'000'000};
    for (int step = 0; step < 4000; ++step) {
        for (int k = 0; k < 5; ++k) {
            model_timer &m = ms[next() % ms.size()];
            if (next() % 4 == 0) {
                w.cancel(m.node);
                m.due_tick = 0;
                continue;
            }
            const uint64_t d = delays[next() % std::size(delays)] + next() % 3'000'000;
            w.arm(m.node, now, d);
            m.due_tick = std::max(now_tick + 1, (now + d + 1023) >> timer_wheel::tick_shift);
            m.fired = 0;
        }
        const uint64_t r = next() % 100;
        now += r < 60 ? 1'000 + next() % 200'000
                      : (r < 95 ? next() % 30'000'000 : next() % 5'000'000'000);
        now_tick = now >> timer_wheel::tick_shift;
        w.advance(now);
        for (auto &m : ms) {
            if (!m.due_tick) continue;
            if (m.due_tick <= now_tick) {
                ASSERT_EQ(m.fired, 1)
                    << "step " << step << " due " << m.due_tick << " now " << now_tick;
                ASSERT_FALSE(m.node.armed());
                m.due_tick = 0;
            } else {
                ASSERT_EQ(m.fired, 0) << "early: step " << step;
                ASSERT_TRUE(m.node.armed());
            }
        }
    }
}

/* unpolled_ns: the gaps between advances longer than the bound, inside the
 * span asked about (the first one cut at its start); short ones count
 * nothing, and only the last gap_log long ones are kept. */
TEST(timer_wheel_test, unpolled_time_sums_the_long_gaps) {
    timer_wheel w;
    const uint64_t tk = 1024, t0 = tk * 1000;
    w.start(t0);
    uint64_t now = t0;
    auto step = [&](uint64_t ticks) {
        now += ticks * tk;
        w.advance(now);
    };
    step(1);
    step(1);
    step(50); /* a gap of 50 ticks, ending at t0 + 52 */
    step(2);
    step(5);  /* shorter than the log's minimum: not kept */
    step(30); /* ending at t0 + 89 */
    step(1);
    EXPECT_EQ(w.unpolled_ns(t0, 0), 80 * tk);
    EXPECT_EQ(w.unpolled_ns(t0, 40 * tk), 50 * tk);     /* only gaps over 40 ticks */
    EXPECT_EQ(w.unpolled_ns(t0 + 12 * tk, 0), 70 * tk); /* the first gap from t0 + 12 on */
    EXPECT_EQ(w.unpolled_ns(t0 + 89 * tk, 0), 0u);      /* nothing after */
    for (int i = 0; i < 40; ++i)
        step(10);
    /* 16 long gaps kept: 160 ticks, however far back the span goes */
    EXPECT_EQ(w.unpolled_ns(t0, 0), 160 * tk);
}

TEST(psn_test, arithmetic) {
    EXPECT_EQ(psn_add(0xfffffe, 3), 1u);
    EXPECT_EQ(psn_sub(1, 2), 0xffffffu);
    EXPECT_GT(psn_diff(1, 0xffffff), 0);
    EXPECT_LT(psn_diff(0xffffff, 1), 0);
    EXPECT_EQ(psn_diff(0x800000 - 1, 0), 0x7fffff);
    EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);
}

} // namespace

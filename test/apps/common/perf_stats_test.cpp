/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-perf's figures (apps/common/perf_stats.h) as perftest computes
 * them: the latency statistics without the two largest samples, and the
 * bandwidth peak as the best post-to-completion stretch.
 */
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "perf_stats.h"

namespace uroce::perf {
namespace {

TEST(PerfStats, LatencyLeavesTheTwoLargestOut) {
    /* 1..10 usec plus two outliers: the statistics are those of 1..10 and
     * t_max is the first sample left out. */
    std::vector<double> s = {5, 200000, 3, 1, 9, 7, 2, 4, 150000, 6, 10, 8, 11};
    lat_result r;
    compute_lat_stats(s, r);
    EXPECT_DOUBLE_EQ(r.t_min, 1);
    EXPECT_DOUBLE_EQ(r.t_max, 150000); /* 11 samples kept: index 11 is the first left out */
    EXPECT_DOUBLE_EQ(r.t_typical, 6);  /* 11 kept, odd: the middle one */
    EXPECT_DOUBLE_EQ(r.t_avg, 6);
    EXPECT_NEAR(r.t_stdev, 3.1623, 1e-3);
}

TEST(PerfStats, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
    lat_result r;
    compute_lat_stats({4, 1, 3, 2, 100, 100}, r);
    EXPECT_DOUBLE_EQ(r.t_typical, 2.5);
    EXPECT_DOUBLE_EQ(r.t_avg, 2.5);
    EXPECT_DOUBLE_EQ(r.t_max, 100);
}

TEST(PerfStats, OneWaitForThePeerDoesNotMakeTheMaximum) {
    /* The bug this replaces: a sample that ran from the loop's start through
     * the wait for the peer's first message (115-237 ms against rxe's
     * 0.2-1.6 ms). Now samples run from post to post; even if one such
     * sample sneaks in it is left out, and t_max stays within a sane bound
     * of t_typical. */
    std::vector<double> s(999, 75.0);
    s[0] = 180000;
    lat_result r;
    compute_lat_stats(s, r);
    EXPECT_DOUBLE_EQ(r.t_typical, 75);
    EXPECT_LT(r.t_max, 10 * r.t_typical);
    EXPECT_LT(r.t_avg, 76);
}

TEST(PerfStats, FewSamples) {
    lat_result r;
    compute_lat_stats({}, r);
    EXPECT_EQ(r.t_max, 0);
    compute_lat_stats({7}, r);
    EXPECT_DOUBLE_EQ(r.t_min, 7);
    EXPECT_DOUBLE_EQ(r.t_max, 7);
    EXPECT_DOUBLE_EQ(r.t_typical, 7);
    compute_lat_stats({7, 9}, r);
    EXPECT_DOUBLE_EQ(r.t_max, 9);
}

TEST(PerfStats, PeakIsTheBestPostToCompletionStretch) {
    /* 1 KiB messages, one every 1 us, signaled every 4; the third group
     * completes late (a stall), the others 1 us after their last post. */
    peak_meter m(true, 12);
    for (int i = 0; i < 12; i++)
        m.posted(i * 1e-6);
    m.completed(4e-6, 4);   /* msgs 0..3: 4 in 4 us */
    m.completed(8e-6, 4);   /* 4..7 */
    m.completed(100e-6, 4); /* 8..11 after a stall */
    /* Best: post 0 (or 4) to completion of 7: 8 messages in 8 us; a single
     * message (post 3 -> completion 3) took 1 us too. */
    EXPECT_NEAR(m.best_bytes_per_s(1024), 1024 / 1e-6, 1);
    /* The average over the run is far below. */
    EXPECT_GT(m.best_bytes_per_s(1024), 12 * 1024 / 100e-6);
}

TEST(PerfStats, PeakAfterAStallIsNotABurstOfOldMessages) {
    /* Under loss: everything is posted at once, then completions trickle in;
     * the last 8 complete together after a long stall. A meter over short
     * windows of completions saw 8 messages in no time; perftest's stretch
     * starts at a post, so it sees them take the whole wait. */
    peak_meter m(true, 16);
    for (int i = 0; i < 16; i++)
        m.posted(0);
    for (int i = 0; i < 8; i++)
        m.completed(0.1 * (i + 1), 1);
    m.completed(5.0, 8);
    /* 16 messages by 5 s, or 1 by 0.1 s: one message per 0.1 s at best. */
    EXPECT_NEAR(m.best_bytes_per_s(65536), 65536 / 0.1, 1);
}

TEST(PerfStats, ManyPostsStayCheap) {
    /* -q 64 -n 20000, signaled every 100: 1.28 M posts, 12800 events at
     * one message per 10 ns. Sampled at a stride, the result stays the
     * rate of the run's steady stretches. */
    const uint64_t n = 1280000;
    peak_meter m(true, n);
    for (uint64_t i = 0; i < n; i++)
        m.posted(double(i) * 10e-9);
    for (uint64_t j = 100; j <= n; j += 100)
        m.completed(double(j) * 10e-9, 100);
    const auto t0 = std::chrono::steady_clock::now();
    const double peak = m.best_bytes_per_s(64);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_NEAR(peak, 64 / 10e-9, 64 / 10e-9 * 0.02);
}

TEST(PerfStats, NoPeakWhenDisabled) {
    peak_meter m(false);
    m.posted(0);
    m.completed(1, 1);
    EXPECT_EQ(m.best_bytes_per_s(4096), 0);
    peak_meter empty(true);
    EXPECT_EQ(empty.best_bytes_per_s(4096), 0);
}

} // namespace
} // namespace uroce::perf

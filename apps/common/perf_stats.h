/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-perf's figures, computed as perftest computes them (written from
 * what perftest_parameters.c print_report_lat / print_report_bw do, not
 * copied), without DPDK so that they can be tested on their own.
 *
 * Latency: one sample per iteration, the time between this side's
 * consecutive posts (tposted[i + 1] - tposted[i]): a sample starts at a
 * post, never at the start of the loop, so the wait for the peer's first
 * message is in none. send_lat and write_lat print half of it (half a round
 * trip), read_lat and atomic_lat all of it (one request to its completion).
 * The samples are sorted and the lat_measure_tail largest are left out of
 * the median (t_typical), average, stdev and percentiles; t_max is the
 * first one left out.
 *
 * Bandwidth peak: the best time per message over any stretch from a post
 * (i) to a later completion (j >= i): min (tcompleted[j] - tposted[i]) /
 * (j - i + 1), then size over that. perftest measures no peak (prints 0)
 * on a send_bw server without -b, in -D runs and with more than 20000
 * iterations; peak_meter::enabled() says which. Where posts x completion
 * events would exceed peak_max_work steps (many QPs), every k-th post is
 * tried as a start, k keeping the work near that bound.
 */
#ifndef UROCE_APPS_PERF_STATS_H
#define UROCE_APPS_PERF_STATS_H

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <vector>

namespace uroce::perf {

/* CPU seconds of a clock_gettime CPU clock: CLOCK_PROCESS_CPUTIME_ID (every
 * lcore and thread of the process) or CLOCK_THREAD_CPUTIME_ID. */
inline double cpu_seconds(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct lat_result {
    uint64_t size = 0;
    uint64_t iters = 0;
    double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0,
           p999 = 0; /* usec */
};

/* perftest's LAT_MEASURE_TAIL. */
inline constexpr size_t lat_measure_tail = 2;

/* The statistics of out from samples (usec, in any order). Nothing changes
 * without samples. */
void compute_lat_stats(std::vector<double> samples, lat_result &out);

/* Above this many iterations perftest measures no peak (it would keep a
 * timestamp per message). */
inline constexpr uint64_t peak_max_iters = 20000;
/* At most about this many steps for the peak (see best_bytes_per_s). */
inline constexpr double peak_max_work = 1e8;

/* The timestamps of one bw run, in seconds from any origin: one per post,
 * one per completion event with the number of messages it completed. */
class peak_meter {
  public:
    explicit peak_meter(bool enabled, uint64_t expected = 0);
    bool enabled() const { return enabled_; }
    void posted(double t);
    /* count messages (the oldest outstanding) completed at t. */
    void completed(double t, uint64_t count);
    /* Bytes per second of the best stretch, 0 when disabled or empty. */
    double best_bytes_per_s(uint64_t size) const;

  private:
    bool enabled_;
    std::vector<double> tposted_;
    /* (index of the last message this event completed, time) */
    std::vector<std::pair<uint64_t, double>> tcompleted_;
    uint64_t done_ = 0;
};

} // namespace uroce::perf

#endif

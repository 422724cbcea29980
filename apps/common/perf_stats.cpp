/* SPDX-License-Identifier: BSD-3-Clause */
#include "perf_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace uroce::perf {

void compute_lat_stats(std::vector<double> s, lat_result &out) {
    if (s.empty()) return;
    std::sort(s.begin(), s.end());
    const size_t n = s.size() > lat_measure_tail ? s.size() - lat_measure_tail : s.size();
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        sum += s[i];
        sq += s[i] * s[i];
    }
    out.t_min = s.front();
    out.t_max = s[std::min(n, s.size() - 1)];
    /* perftest's get_median: the middle one, or the mean of the two middle ones. */
    out.t_typical = n % 2 == 0 ? (s[n / 2] + s[n / 2 - 1]) / 2 : s[n / 2];
    out.t_avg = sum / double(n);
    out.t_stdev = std::sqrt(std::max(0.0, sq / double(n) - out.t_avg * out.t_avg));
    auto pct = [&](double q) {
        return s[std::min(s.size() - 1, size_t(std::ceil(double(n) * q)))];
    };
    out.p99 = pct(0.99);
    out.p999 = pct(0.999);
}

peak_meter::peak_meter(bool enabled, uint64_t expected) : enabled_(enabled) {
    if (enabled_ && expected) tposted_.reserve(expected);
}

void peak_meter::posted(double t) {
    if (enabled_) tposted_.push_back(t);
}

void peak_meter::completed(double t, uint64_t count) {
    if (!enabled_ || count == 0) return;
    done_ += count;
    tcompleted_.emplace_back(done_ - 1, t);
}

double peak_meter::best_bytes_per_s(uint64_t size) const {
    if (!enabled_) return 0;
    double best = std::numeric_limits<double>::infinity();
    /* i: a post; j: a later completion event (a signaled WR completes all
     * before it, so only those instants are known). */
    /* perftest's double loop is posts x completion events; with many QPs
     * (-q 64 -n 20000: 1.3 M posts, 13 k events) that is 10^10 steps, so
     * the posts are then sampled at a stride that keeps it near 10^8. */
    const double work = double(tposted_.size()) * double(tcompleted_.size());
    const size_t stride = work > peak_max_work ? size_t(work / peak_max_work) + 1 : 1;
    size_t first_j = 0;
    for (size_t i = 0; i < tposted_.size(); i += stride) {
        while (first_j < tcompleted_.size() && tcompleted_[first_j].first < i)
            first_j++;
        for (size_t k = first_j; k < tcompleted_.size(); k++) {
            const auto [j, tc] = tcompleted_[k];
            const double per_msg = (tc - tposted_[i]) / double(j - i + 1);
            if (per_msg > 0 && per_msg < best) best = per_msg;
        }
    }
    return std::isinf(best) ? 0 : double(size) / best;
}

} // namespace uroce::perf

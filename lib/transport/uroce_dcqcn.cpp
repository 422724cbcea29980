/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN reaction point: the rate cut, alpha, and the three increase phases
 * (Zhu et al., SIGCOMM 2015, section 3.1 and its figure 7).
 */
#include "uroce_dcqcn.h"

#include <algorithm>
#include <cmath>

namespace uroce {

/* The pacer's cost per byte and its bucket depth follow the rate. */
static void set_rate(dcqcn_rp &s, double mbps) {
    s.rc = mbps;
    if (mbps < s.rc_lowest || s.rc_lowest == 0) s.rc_lowest = mbps;
    /* 8 bits per byte / (mbps bits per us) = 8000 / mbps ns per byte */
    uint64_t old = s.ns_per_byte_fp16;
    s.ns_per_byte_fp16 = uint64_t(std::llround(8000.0 * 65536.0 / mbps));
    if (s.ns_per_byte_fp16 == 0) s.ns_per_byte_fp16 = 1;
    /* What was sent ahead of now was paid for at the old rate: pay it at
     * the new one (a 4 KB frame sent at 1 Mb/s would otherwise hold the QP
     * 33 ms after the rate has recovered). */
    if (old && s.tat_ns > s.now_ns)
        s.tat_ns = s.now_ns +
                   uint64_t(double(s.tat_ns - s.now_ns) * double(s.ns_per_byte_fp16) / double(old));
    s.burst_ns = (uint64_t(s.p->burst_bytes) * s.ns_per_byte_fp16) >> 16;
}

static void update_next_event(dcqcn_rp &s) {
    s.next_event_ns = s.active ? std::min(s.alpha_next_ns, s.inc_next_ns) : s.alpha_next_ns;
}

void dcqcn_init(dcqcn_rp &s, const cc_config &cfg, uint64_t now_ns) {
    s = dcqcn_rp{};
    s.p = &cfg.rp;
    s.dcqcn = cfg.dcqcn && cfg.rp.line_rate_mbps > 0;
    s.paced = cfg.rp.line_rate_mbps > 0;
    s.now_ns = now_ns;
    s.tat_ns = now_ns;
    s.alpha = cfg.rp.initial_alpha;
    s.rt = double(cfg.rp.line_rate_mbps);
    if (s.paced) set_rate(s, s.rt);
}

/* Alpha's timer (paper: "alpha = (1 - g) alpha" every K without a CNP),
 * caught up in one step for however many periods have passed. */
static void run_alpha_timer(dcqcn_rp &s, uint64_t now_ns) {
    if (now_ns < s.alpha_next_ns) return;
    uint64_t k = s.p->alpha_update_ns ? s.p->alpha_update_ns : 1;
    uint64_t n = (now_ns - s.alpha_next_ns) / k + 1;
    s.alpha *= std::pow(1.0 - s.p->g, double(n));
    /* below 2^-20 alpha no longer changes a cut by a byte per second of
     * line rate: stop its timer until the next CNP */
    s.alpha_next_ns = s.alpha < 1.0 / (1 << 20) ? ~0ull : s.alpha_next_ns + n * k;
}

/* One increase event (timer or byte counter). Paper, figure 7: fast
 * recovery while both counters are below F (RC moves half way to RT),
 * additive increase once either exceeds it (RT += R_AI), hyper increase
 * once both do (RT += i * R_HAI, i = min(T, BC) - F). */
static void increase(dcqcn_rp &s) {
    const dcqcn_params &p = *s.p;
    uint32_t f = p.fast_recovery_steps;
    uint32_t hi = std::max(s.t_count, s.bc_count);
    uint32_t lo = std::min(s.t_count, s.bc_count);
    double line = double(p.line_rate_mbps);
    if (hi > f) {
        if (lo > f)
            s.rt += double(lo - f) * double(p.hai_rate_mbps);
        else
            s.rt += double(p.ai_rate_mbps);
        if (s.rt > line) s.rt = line;
    }
    double rc = (s.rt + s.rc) / 2;
    /* within a byte per second of the target: there */
    if (s.rt - rc < 1e-6) rc = s.rt;
    set_rate(s, rc);
    if (s.rc >= line) { /* back at line rate: DCQCN idles until the next CNP */
        s.active = false;
        s.inc_next_ns = ~0ull;
    }
}

void dcqcn_on_timers(dcqcn_rp &s, uint64_t now_ns) {
    run_alpha_timer(s, now_ns);
    if (s.active && now_ns >= s.inc_next_ns) {
        uint64_t t = s.p->rate_increase_ns ? s.p->rate_increase_ns : 1;
        /* each event depends on the last; a QP that was not polled for a
         * long time catches up at most this many, then restarts the timer */
        for (unsigned i = 0; i < 4096 && s.active && now_ns >= s.inc_next_ns; ++i) {
            s.inc_next_ns += t;
            ++s.t_count;
            increase(s);
        }
        if (s.active && now_ns >= s.inc_next_ns) s.inc_next_ns = now_ns + t;
    }
    update_next_event(s);
}

void dcqcn_on_bytes(dcqcn_rp &s) {
    s.bytes = 0;
    ++s.bc_count;
    increase(s);
    update_next_event(s);
}

bool dcqcn_on_cnp(dcqcn_rp &s, uint64_t now_ns) {
    if (!s.dcqcn) return false;
    const dcqcn_params &p = *s.p;
    if (now_ns > s.now_ns) s.now_ns = now_ns;
    run_alpha_timer(s, now_ns);
    /* mlx5's rate_reduce_monitor_period: CNPs within it of the last cut
     * are absorbed by it */
    if (s.cut_once && now_ns - s.last_cut_ns < p.rate_reduce_period_ns) {
        update_next_event(s);
        return false;
    }
    /* Paper 3.1: RT = RC, RC = RC (1 - alpha / 2), alpha = (1 - g) alpha + g */
    s.rt = s.rc;
    double cut = s.rc * (1 - s.alpha / 2);
    double floor_dec = s.rc * double(p.min_dec_factor_pct) / 100.0;
    if (cut < floor_dec) cut = floor_dec;
    if (cut < double(p.min_rate_mbps)) cut = double(p.min_rate_mbps);
    set_rate(s, cut);
    s.alpha = (1 - p.g) * s.alpha + p.g;
    s.alpha_next_ns = now_ns + p.alpha_update_ns;
    /* the increase timer and byte counter restart from the cut */
    s.t_count = 0;
    s.bc_count = 0;
    s.bytes = 0;
    s.inc_next_ns = now_ns + p.rate_increase_ns;
    s.active = true;
    s.last_cut_ns = now_ns;
    s.cut_once = true;
    ++s.cuts;
    update_next_event(s);
    return true;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.1 "RP
 * algorithm"), one per RC/UC requester, and the pacer that enforces its rate.
 *
 * The pacer is GCRA, a token bucket in time: tat is when everything sent so
 * far would have left at the current rate; a packet may go while tat is at
 * most burst_ns ahead of now. Per packet: one compare (cc_may_send) and one
 * multiply-add (cc_on_sent), no allocation, no lock, no division.
 *
 * The state machine runs on the CNP (rate cut), on the alpha timer (alpha
 * decays), on the rate-increase timer and on the byte counter (fast
 * recovery, additive increase, hyper increase). Its timers are evaluated
 * lazily against the clock the requester already reads (next_event_ns), so
 * an idle QP costs nothing and a test clock drives it exactly.
 */
#ifndef UROCE_DCQCN_H
#define UROCE_DCQCN_H

#include <cstdint>

#include <uroce/cc.h>

namespace uroce {

struct dcqcn_rp {
    /* ---- the pacer (hot: read on every packet) */
    bool paced = false;  /* a rate applies; false: no pacing, nothing else is used */
    bool active = false; /* DCQCN is below line rate: timers and byte counter run */
    uint64_t now_ns = 0; /* the clock as cc_may_send last read it */
    uint64_t tat_ns = 0;
    uint32_t tat_frac = 0;          /* 1/65536 ns */
    uint64_t ns_per_byte_fp16 = 0;  /* 8000 / rate_mbps, in 1/65536 ns */
    uint64_t burst_ns = 0;          /* the bucket's depth at the current rate */
    uint64_t next_event_ns = ~0ull; /* earliest timer (alpha or rate increase) */
    uint64_t bytes = 0;             /* byte counter, since its last event */

    /* ---- the state machine (slow path) */
    const dcqcn_params *p = nullptr;
    bool dcqcn = false;
    double rc = 0;        /* current rate, Mb/s */
    double rt = 0;        /* target rate, Mb/s */
    double rc_lowest = 0; /* the lowest rc so far (telemetry) */
    double alpha = 0;
    uint64_t alpha_next_ns = ~0ull;
    uint64_t inc_next_ns = ~0ull;
    uint64_t last_cut_ns = 0;
    bool cut_once = false;
    uint32_t t_count = 0;  /* rate-increase timer events since the last cut */
    uint32_t bc_count = 0; /* byte-counter events since the last cut */
    uint64_t cuts = 0;     /* rate cuts (also counted in qp_counters) */
};

/* Set up a QP's reaction point from the device's config (create_qp). */
void dcqcn_init(dcqcn_rp &s, const cc_config &cfg, uint64_t now_ns);
/* A CNP for this QP arrived: cut the rate (at most once per
 * rate_reduce_period_ns). Returns true when the rate was cut. */
bool dcqcn_on_cnp(dcqcn_rp &s, uint64_t now_ns);
/* Run the timers that are due at now_ns (cc_may_send calls it). */
void dcqcn_on_timers(dcqcn_rp &s, uint64_t now_ns);
/* The byte counter reached B. */
void dcqcn_on_bytes(dcqcn_rp &s);

/* May the requester send now? Reads the clock value the caller passes. */
static inline bool cc_may_send(dcqcn_rp &s, uint64_t now_ns) {
    s.now_ns = now_ns;
    if (now_ns >= s.next_event_ns) [[unlikely]]
        dcqcn_on_timers(s, now_ns);
    return s.tat_ns <= now_ns + s.burst_ns;
}

/* A frame of len bytes left (after cc_may_send said yes). */
static inline void cc_on_sent(dcqcn_rp &s, uint32_t len) {
    if (s.tat_ns < s.now_ns) { /* idle: the bucket refilled */
        s.tat_ns = s.now_ns;
        s.tat_frac = 0;
    }
    uint64_t c = uint64_t(len) * s.ns_per_byte_fp16 + s.tat_frac;
    s.tat_ns += c >> 16;
    s.tat_frac = uint32_t(c & 0xffff);
    if (s.active) {
        s.bytes += len;
        if (s.bytes >= s.p->byte_counter) [[unlikely]]
            dcqcn_on_bytes(s);
    }
}

} // namespace uroce

#endif

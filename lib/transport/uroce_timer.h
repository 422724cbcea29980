/* SPDX-License-Identifier: BSD-3-Clause
 * Hashed timer wheel (Varghese & Lauck scheme 6): O(1) arm and cancel, timers
 * are intrusive (embedded in the QP), no allocation. One wheel per device,
 * advanced from device::poll(). Resolution is one tick (1024 ns); timers
 * further out than one revolution stay in their slot for more rounds.
 */
#ifndef UROCE_TIMER_H
#define UROCE_TIMER_H

#include <cstdint>

namespace uroce {

struct timer_node {
    timer_node *prev = nullptr;
    timer_node *next = nullptr;
    uint64_t expire_tick = 0; /* the tick it is filed under */
    uint64_t due_tick = 0;    /* the tick it fires at: expire_tick or later */
    void (*fn)(void *arg) = nullptr;
    void *arg = nullptr;

    bool armed() const { return prev != nullptr; }
};

class timer_wheel {
  public:
    static constexpr unsigned tick_shift = 10;  /* 1 tick = 1024 ns */
    static constexpr unsigned num_slots = 4096; /* one revolution ~ 4.2 ms */

    timer_wheel();
    timer_wheel(const timer_wheel &) = delete;
    timer_wheel &operator=(const timer_wheel &) = delete;

    void start(uint64_t now_ns) { cur_tick_ = now_ns >> tick_shift; }
    /* (Re)arm t to fire no earlier than now + delay_ns. A timer armed to
     * fire sooner stays where it is filed and only takes the new due tick;
     * the wheel files it again when it gets there. A QP's ACK timer and
     * tail-loss probe restart on every response: moving them each time
     * unlinked and linked two other QPs' timers, cold lines with thousands
     * of QPs, for a timer that moves once per period this way. */
    void arm(timer_node &t, uint64_t now_ns, uint64_t delay_ns);
    void cancel(timer_node &t);
    /* Fire every timer due at now_ns; returns how many fired. */
    unsigned advance(uint64_t now_ns);
    unsigned armed_count() const { return armed_; }
    /* Gaps between advances this long or longer are logged (8.2 us). */
    static constexpr uint64_t gap_log_min_ticks = 8;
    /* How much of (since_ns, now] the device spent in gaps between polls
     * longer than min_gap_ns (at tick resolution; the last gap_log gaps of
     * gap_log_min_ticks or more are kept, older ones count nothing). */
    uint64_t unpolled_ns(uint64_t since_ns, uint64_t min_gap_ns) const;

  private:
    /* A timer due more than a revolution ahead (an ACK timeout of 67 ms
     * is 16 revolutions) waits in a second wheel of one slot per
     * revolution and moves down at the start of its revolution: each
     * advance visits due timers only, not every far timer on every pass
     * (8192 of them with 4096 QPs: 12% of the cycles). */
    static constexpr unsigned rev_shift = 12;      /* log2(num_slots) */
    static constexpr unsigned num_rev_slots = 256; /* ~1.07 s */
    static_assert(num_slots == 1u << rev_shift);
    void insert(timer_node &t);
    void cascade(uint64_t rev);
    timer_node slots_[num_slots];         /* list heads (circular, sentinel) */
    timer_node rev_slots_[num_rev_slots]; /* the far timers, by revolution */
    uint64_t cur_tick_ = 0;
    /* the long gaps between advances, newest at gap_n_ - 1 */
    static constexpr unsigned gap_log = 16;
    struct gap {
        uint64_t end_tick, ticks;
    };
    gap gaps_[gap_log] = {};
    unsigned gap_n_ = 0;
    unsigned armed_ = 0;
};

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_timer.h"

namespace uroce {

timer_wheel::timer_wheel() {
    for (auto &s : slots_) {
        s.prev = &s;
        s.next = &s;
    }
    for (auto &s : rev_slots_) {
        s.prev = &s;
        s.next = &s;
    }
}

static inline void link_tail(timer_node &head, timer_node &t) {
    t.next = &head;
    t.prev = head.prev;
    head.prev->next = &t;
    head.prev = &t;
}

/* Into its tick's slot when it is due within a revolution, else into its
 * revolution's slot. */
void timer_wheel::insert(timer_node &t) {
    if (t.expire_tick - cur_tick_ < num_slots)
        link_tail(slots_[t.expire_tick % num_slots], t);
    else
        link_tail(rev_slots_[(t.expire_tick >> rev_shift) % num_rev_slots], t);
}

/* At the start of revolution rev: its timers (and any overdue ones) move to
 * the tick slots; later revolutions' stay. */
void timer_wheel::cascade(uint64_t rev) {
    timer_node &head = rev_slots_[rev % num_rev_slots];
    timer_node *t = head.next;
    while (t != &head) {
        timer_node *next = t->next;
        if ((t->expire_tick >> rev_shift) <= rev) {
            t->prev->next = t->next;
            t->next->prev = t->prev;
            link_tail(slots_[t->expire_tick % num_slots], *t);
        }
        t = next;
    }
}

void timer_wheel::arm(timer_node &t, uint64_t now_ns, uint64_t delay_ns) {
    /* Round up so a timer never fires early. */
    uint64_t expire = (now_ns + delay_ns + (1u << tick_shift) - 1) >> tick_shift;
    if (expire <= cur_tick_) expire = cur_tick_ + 1;
    t.due_tick = expire;
    if (t.armed() && t.expire_tick <= expire) return; /* filed sooner: re-filed when reached */
    cancel(t);
    t.expire_tick = expire;
    insert(t);
    ++armed_;
}

void timer_wheel::cancel(timer_node &t) {
    if (!t.armed()) return;
    t.prev->next = t.next;
    t.next->prev = t.prev;
    t.prev = t.next = nullptr;
    --armed_;
}

uint64_t timer_wheel::unpolled_ns(uint64_t since_ns, uint64_t min_gap_ns) const {
    const uint64_t since = since_ns >> tick_shift;
    uint64_t sum = 0;
    for (unsigned i = 0; i < gap_log && i < gap_n_; ++i) {
        const gap &g = gaps_[(gap_n_ - 1 - i) % gap_log];
        if (g.end_tick <= since) break;
        if ((g.ticks << tick_shift) <= min_gap_ns) continue;
        sum += g.end_tick - g.ticks < since ? g.end_tick - since : g.ticks;
    }
    return sum << tick_shift;
}

unsigned timer_wheel::advance(uint64_t now_ns) {
    uint64_t now_tick = now_ns >> tick_shift;
    if (now_tick >= cur_tick_ + gap_log_min_ticks) [[unlikely]]
        gaps_[gap_n_++ % gap_log] = {now_tick, now_tick - cur_tick_};
    if (now_tick <= cur_tick_ || armed_ == 0) {
        if (now_tick > cur_tick_) cur_tick_ = now_tick;
        return 0;
    }
    unsigned fired = 0;
    /* Visit each slot at most once per call, even after a long jump. */
    uint64_t steps = now_tick - cur_tick_;
    if (steps > num_slots) steps = num_slots;
    uint64_t first = now_tick - steps + 1;
    /* the revolutions a long jump passes without visiting their start:
     * the last num_rev_slots of them visit every far slot once, each with
     * the latest revolution it stands for */
    uint64_t from = (cur_tick_ >> rev_shift) + 1;
    const uint64_t to = first >> rev_shift;
    if (to >= from && to - from >= num_rev_slots) from = to - num_rev_slots + 1;
    for (uint64_t rev = from; rev <= to; ++rev)
        cascade(rev);
    for (uint64_t tick = first; tick <= now_tick && armed_ != 0; ++tick) {
        cur_tick_ = tick; /* timers re-armed from a callback land after this tick */
        if (tick % num_slots == 0) cascade(tick >> rev_shift);
        timer_node &head = slots_[tick % num_slots];
        timer_node *t = head.next;
        while (t != &head) {
            timer_node *next = t->next;
            if (t->expire_tick <= now_tick && t->due_tick > now_tick) {
                /* re-armed later since it was filed: to its due tick, which
                 * is in another slot (within a revolution of this tick, or
                 * in the far wheel) */
                t->prev->next = t->next;
                t->next->prev = t->prev;
                t->expire_tick = t->due_tick;
                insert(*t);
            } else if (t->expire_tick <= now_tick) {
                cancel(*t);
                ++fired;
                t->fn(t->arg);    /* may re-arm t or others */
                next = head.next; /* the list may have changed: rescan this slot */
                /* skip entries not yet due */
                while (next != &head && next->expire_tick > now_tick)
                    next = next->next;
            }
            t = next;
        }
    }
    if (cur_tick_ < now_tick) cur_tick_ = now_tick;
    return fired;
}

} // namespace uroce

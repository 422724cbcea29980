/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_timer.h"

namespace uroce {

timer_wheel::timer_wheel() {
    for (auto &s : slots_) {
        s.prev = &s;
        s.next = &s;
    }
}

void timer_wheel::arm(timer_node &t, uint64_t now_ns, uint64_t delay_ns) {
    cancel(t);
    /* Round up so a timer never fires early. */
    uint64_t expire = (now_ns + delay_ns + (1u << tick_shift) - 1) >> tick_shift;
    if (expire <= cur_tick_) expire = cur_tick_ + 1;
    t.expire_tick = expire;
    timer_node &head = slots_[expire % num_slots];
    t.next = &head;
    t.prev = head.prev;
    head.prev->next = &t;
    head.prev = &t;
    ++armed_;
}

void timer_wheel::cancel(timer_node &t) {
    if (!t.armed()) return;
    t.prev->next = t.next;
    t.next->prev = t.prev;
    t.prev = t.next = nullptr;
    --armed_;
}

unsigned timer_wheel::advance(uint64_t now_ns) {
    uint64_t now_tick = now_ns >> tick_shift;
    if (now_tick <= cur_tick_ || armed_ == 0) {
        if (now_tick > cur_tick_) cur_tick_ = now_tick;
        return 0;
    }
    unsigned fired = 0;
    /* Visit each slot at most once per call, even after a long jump. */
    uint64_t steps = now_tick - cur_tick_;
    if (steps > num_slots) steps = num_slots;
    uint64_t first = now_tick - steps + 1;
    for (uint64_t tick = first; tick <= now_tick && armed_ != 0; ++tick) {
        cur_tick_ = tick; /* timers re-armed from a callback land after this tick */
        timer_node &head = slots_[tick % num_slots];
        timer_node *t = head.next;
        while (t != &head) {
            timer_node *next = t->next;
            if (t->expire_tick <= now_tick) {
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

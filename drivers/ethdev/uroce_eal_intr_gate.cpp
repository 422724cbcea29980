/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/eal_intr_gate.h>

#include <rte_alarm.h>

namespace uroce {

eal_intr_gate &eal_intr_gate::instance() {
    static eal_intr_gate *g = new eal_intr_gate();
    return *g;
}

void eal_intr_gate::alarm_cb(void *arg) {
    /* On EAL's interrupt thread: everything it had to handle before this
     * alarm is done; nothing else it handles runs until we return. */
    auto *g = static_cast<eal_intr_gate *>(arg);
    std::unique_lock<std::mutex> lock(g->mu_);
    if (g->state_ == state::requested && !g->release_requested_) {
        g->state_ = state::parked;
        g->cv_.notify_all();
        g->cv_.wait(lock, [g] { return g->release_requested_; });
    }
    g->release_requested_ = false;
    g->state_ = state::free;
    g->cv_.notify_all();
}

bool eal_intr_gate::park(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ == state::parked) return true;
    if (state_ == state::free) {
        /* The shortest alarm: the thread takes it after the events it is
         * handling now, in its next epoll round. */
        if (rte_eal_alarm_set(1, alarm_cb, this) < 0) {
            park_timeouts_++;
            return false;
        }
        state_ = state::requested;
    }
    release_requested_ = false; /* an alarm still pending from a timed-out park parks now */
    if (!cv_.wait_for(lock, timeout, [this] { return state_ == state::parked; })) {
        park_timeouts_++;
        return false;
    }
    return true;
}

void eal_intr_gate::release() {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ == state::free) return;
    release_requested_ = true;
    cv_.notify_all();
    /* requested: the pending alarm returns at once when it fires. */
    if (state_ == state::parked) cv_.wait(lock, [this] { return state_ != state::parked; });
}

bool eal_intr_gate::parked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ == state::parked;
}

uint64_t eal_intr_gate::park_timeouts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return park_timeouts_;
}

uint64_t eal_intr_gate::windows() const {
    std::lock_guard<std::mutex> lock(mu_);
    return windows_;
}

void eal_intr_gate::count_window() {
    std::lock_guard<std::mutex> lock(mu_);
    windows_++;
}

} // namespace uroce

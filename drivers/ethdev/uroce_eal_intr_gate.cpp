/* SPDX-License-Identifier: BSD-3-Clause */
/* rte_intr_instance_alloc and the handle accessors are still marked
 * experimental in DPDK 22.11 (the handle became opaque in 21.11), and an
 * interrupt source of our own cannot be made without them. */
#define ALLOW_EXPERIMENTAL_API
#include <uroce/eal_intr_gate.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_interrupts.h>

namespace uroce {

eal_intr_gate &eal_intr_gate::instance() {
    static eal_intr_gate *g = new eal_intr_gate();
    return *g;
}

void eal_intr_gate::intr_cb(void *arg) {
    /* On EAL's interrupt thread: everything it had to handle before this
     * wake-up is done; nothing else it handles runs until we return. */
    auto *g = static_cast<eal_intr_gate *>(arg);
    eventfd_t ignored;
    (void)eventfd_read(g->wake_fd_, &ignored); /* EXT sources are not read by EAL */
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

/* Our interrupt source, registered once: the thread adds it to its epoll
 * set when it next rebuilds it; a wake-up written before then is seen
 * then (the eventfd stays readable). */
bool eal_intr_gate::ensure_source() {
    if (source_) return true;
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return false;
    /* PRIVATE: malloc'd, not in DPDK's memory, which rte_eal_cleanup unmaps */
    ::rte_intr_handle *h = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
    if (!h || rte_intr_fd_set(h, fd) < 0 || rte_intr_type_set(h, RTE_INTR_HANDLE_EXT) < 0 ||
        rte_intr_callback_register(h, intr_cb, this) < 0) {
        if (h) rte_intr_instance_free(h);
        close(fd);
        return false;
    }
    wake_fd_ = fd;
    source_ = h;
    return true;
}

bool eal_intr_gate::park(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ == state::parked) return true;
    if (state_ == state::free) {
        /* The thread takes the wake-up after the events it is handling
         * now, in its next epoll round. */
        if (!ensure_source() || eventfd_write(wake_fd_, 1) < 0) {
            park_timeouts_++;
            return false;
        }
        state_ = state::requested;
    }
    release_requested_ = false; /* a wake-up still pending from a timed-out park parks now */
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
    /* requested: the pending wake-up returns at once when it comes. */
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

/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: keeps DPDK's interrupt thread out of net_memif while
 * the stack polls it.
 *
 * DPDK 22.11's memif PMD tears a connection down on EAL's interrupt thread
 * (the peer's DISCONNECT message, or its socket closing when the peer
 * process exits): memif_disconnect() clears the CONNECTED flag, then
 * unmaps the shared regions and frees the queues' state. Nothing
 * synchronises that with rte_eth_rx_burst / tx_burst on another thread;
 * the burst checks the flag once on entry, so a poller preempted after
 * that check reads unmapped rings and dies (SIGSEGV in librte_net_memif,
 * seen at the end of ibv_srq_pingpong runs: both processes close their
 * port about the same time, one still polling while the other's close
 * reaches it). Closing our own port while the interrupt thread disconnects
 * it frees the same regions twice.
 *
 * The gate parks the interrupt thread in an EAL alarm callback (alarms run
 * on that thread) while the port is polled or closed, and opens a window
 * now and then (runtime: every link check) in which nobody polls and the
 * interrupt thread handles what the memif control channel brought. The
 * link cannot go down under a poller, and our close never overlaps the
 * driver's own disconnect.
 *
 * One gate per process (one EAL); every call from threads that hold the
 * stack lock, so one caller at a time.
 */
#ifndef UROCE_IBV_INTR_GATE_H
#define UROCE_IBV_INTR_GATE_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace uroce::compat {

class intr_gate {
  public:
    /* The process's gate (never destroyed: an alarm may fire late). */
    static intr_gate &instance();

    /* Park the interrupt thread: returns once it waits in our alarm
     * callback, after it finished whatever it was handling. false: not
     * parked within timeout (counted; it parks when it gets there). */
    bool park(std::chrono::milliseconds timeout);
    /* Let it go, and return once it left the callback. */
    void release();
    bool parked() const;

    uint64_t park_timeouts() const { return park_timeouts_; }
    uint64_t windows() const { return windows_; }
    void count_window() { windows_++; }

  private:
    intr_gate() = default;
    static void alarm_cb(void *arg);

    enum class state { free, requested, parked };
    mutable std::mutex mu_;
    std::condition_variable cv_;
    state state_ = state::free;
    bool release_requested_ = false;
    uint64_t park_timeouts_ = 0;
    uint64_t windows_ = 0;
};

} // namespace uroce::compat

#endif

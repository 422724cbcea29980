/* SPDX-License-Identifier: BSD-3-Clause
 * Keeps DPDK's interrupt thread out of a port while the stack polls or
 * closes it.
 *
 * DPDK 22.11's net_memif tears a connection down on EAL's interrupt thread
 * (the peer's DISCONNECT message, or its socket closing when the peer
 * process exits): memif_disconnect() clears the CONNECTED flag, then
 * unmaps the shared regions and frees the queues' state. Nothing
 * synchronises that with rte_eth_rx_burst / tx_burst on another thread;
 * the burst checks the flag once on entry, so a poller preempted after
 * that check reads unmapped rings and dies (SIGSEGV in librte_net_memif:
 * seen at the end of ibv_srq_pingpong runs on compat/, and of a uroce-perf
 * client in perf_e2e, when both processes close their ports about the same
 * time, one still polling while the other's close reaches it). Closing our
 * own port while the interrupt thread disconnects it frees the same
 * regions twice.
 *
 * The gate parks the interrupt thread in the callback of an interrupt
 * source of its own (an eventfd, RTE_INTR_HANDLE_EXT) while the port is
 * polled or closed. Not in an EAL alarm: rte_eal_cleanup() waits for a
 * running alarm callback (rte_eal_alarm_fini), so a thread parked in one
 * would hang the cleanup, while one parked in our source's callback sleeps
 * through cleanup and exit. Whoever holds the gate opens a window now and
 * then (release, then park again) in which nobody polls and the thread
 * handles what the control channel brought: memif's connect handshake runs
 * there too. The link cannot go down under a poller, and a close never
 * overlaps the driver's own disconnect.
 *
 * One gate per process (one EAL), shared by everything in it: the apps'
 * stack parks it from its linger on, through the close to the process's
 * exit (released, the thread would handle the peer's disconnect against
 * the closed port, or run while exit() finalizes the libraries), compat/'s
 * runtime while it polls. Callers take turns (one thread drives the port at a time).
 */
#ifndef UROCE_EAL_INTR_GATE_H
#define UROCE_EAL_INTR_GATE_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>

#include <uroce/export.h>

struct rte_intr_handle;

namespace uroce {

class UROCE_API eal_intr_gate {
  public:
    /* The process's gate (never destroyed: an alarm may fire late). */
    static eal_intr_gate &instance();
    eal_intr_gate(const eal_intr_gate &) = delete;
    eal_intr_gate &operator=(const eal_intr_gate &) = delete;

    /* Park the interrupt thread: returns once it waits in our
     * callback, after it finished whatever it was handling. false: not
     * parked within timeout (counted; it parks when it gets there).
     * Parking a parked gate returns true at once. */
    bool park(std::chrono::milliseconds timeout);
    /* Let it go, and return once it left the callback. */
    void release();
    bool parked() const;

    uint64_t park_timeouts() const;
    uint64_t windows() const;
    void count_window();

  private:
    eal_intr_gate() = default;
    static void intr_cb(void *arg);
    bool ensure_source(); /* under mu_ */

    enum class state { free, requested, parked };
    mutable std::mutex mu_;
    std::condition_variable cv_;
    state state_ = state::free;
    bool release_requested_ = false;
    uint64_t park_timeouts_ = 0;
    uint64_t windows_ = 0;
    int wake_fd_ = -1;                         /* the eventfd that calls intr_cb */
    struct rte_intr_handle *source_ = nullptr; /* never freed: the thread may sit in it */
};

/* Whether a port of this PMD (ethdev_port::driver_name()) tears down on
 * the interrupt thread, so that its pollers need the gate. */
inline bool needs_eal_intr_gate(const std::string_view driver_name) {
    return driver_name == "net_memif";
}

} // namespace uroce

#endif

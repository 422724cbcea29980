/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the process's uroce stack behind uroce0, and who
 * drives it (doc/compat.md, "Threading and progress").
 *
 * One stack per process (EAL starts once per process), created by the
 * first ibv_open_device and taken down with the last ibv_close_device (or
 * at exit). Everything that touches it holds its lock, so the device stays
 * single-threaded as uroce wants:
 *  - thread mode (default): a progress thread loops {serve the CQs' work
 *    channels, poll the port and the engine, signal completion channels};
 *    ibv_post_send/recv and ibv_poll_cq go through the channels, lock-free;
 *    control verbs take the lock (the progress thread steps aside).
 *  - inline mode: every verb takes the lock and calls uroce directly, and
 *    ibv_poll_cq runs one iteration of the loop first; a fallback thread
 *    drives the stack when nobody has for drive_idle_ns, and goes on while
 *    there is work (the application blocked in a TCP exchange or
 *    ibv_get_cq_event, or the passive side of a WRITE or READ, still
 *    answers ARP, requests and retransmits, and gets its completion events).
 */
#ifndef UROCE_IBV_RUNTIME_H
#define UROCE_IBV_RUNTIME_H

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <uroce/mac.h>

#include "uroce_app_stack.h"
#include "uroce_ibv_env.h"
#include "uroce_ibv_objects.h"

namespace uroce::compat {

uint64_t monotonic_ns();

/* The one-line error, printed once per process, with errno set. */
void report_error(const std::string &msg, int err);

class runtime {
  public:
    /* inline mode: the fallback thread drives when nobody has for this
     * long; it looks that often, or, while the application drives, ever
     * less often up to fallback_max_sleep_ns. */
    static constexpr uint64_t drive_idle_ns = 50'000;
    static constexpr uint64_t fallback_max_sleep_ns = 800'000;
    /* Empty ibv_poll_cq calls (thread mode) before the polling thread
     * yields its CPU once: cheap on a dedicated core, and what lets a
     * progress thread that shares the CPU run (doc/compat.md, "Threading
     * and progress"). */
    static constexpr unsigned idle_spins_before_yield = 256;
    /* thread mode: empty loop iterations before the progress thread naps
     * (for nap_ns, or until a post kicks it), giving its CPU to the
     * application's threads when there is nothing to do. */
    static constexpr unsigned idle_spins_before_nap = 256;
    static constexpr uint64_t nap_ns = 50'000;
    /* thread mode: an application thread whose ibv_poll_cq finds nothing
     * drives the stack itself while the progress thread naps, or when it
     * has not run an iteration for this long (it waits for a CPU: with more
     * spinning threads than CPUs each hop would otherwise wait for one
     * particular thread to be scheduled). */
    static constexpr uint64_t app_drive_after_ns = 10'000;
    /* How long to wait for EAL's interrupt thread to park (memif). */
    static constexpr std::chrono::milliseconds gate_timeout{500};

    /* The configuration is usable (ibv_get_device_list); false: reported. */
    static bool config_ok();
    /* The stack, started on first use (ibv_open_device); nullptr: reported, errno set. */
    static runtime *acquire();
    /* One user fewer; the last one stops the stack. */
    static void release(runtime *rt);

    progress_mode mode() const { return cfg_.progress; }
    app::stack &st() { return *st_; }
    uroce::device *dev() { return st_->ctx(); }

    /* The stack lock, for control verbs (and every verb in inline mode). */
    class guard {
      public:
        explicit guard(runtime &rt) : rt_(rt) {
            rt_.waiters_.fetch_add(1, std::memory_order_relaxed);
            rt_.mu_.lock();
            rt_.waiters_.fetch_sub(1, std::memory_order_relaxed);
        }
        ~guard() { rt_.mu_.unlock(); }
        guard(const guard &) = delete;
        guard &operator=(const guard &) = delete;

      private:
        runtime &rt_;
    };

    /* One iteration of the loop; the caller holds the lock. Returns what
     * the port, the engine and the channels moved (0: idle). */
    unsigned drive_locked();
    /* thread mode, from an application thread with nothing to poll: one
     * iteration if the progress thread has not driven for
     * app_drive_after_ns and nobody holds the lock. */
    unsigned help_drive() {
        if (!napping_.load(std::memory_order_relaxed) &&
            monotonic_ns() - progress_ns_.load(std::memory_order_relaxed) < app_drive_after_ns)
            return 0;
        std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
        return lock.owns_lock() ? drive_locked() : 0;
    }
    /* thread mode, after a post: wake the progress thread if it naps. */
    void kick() {
        if (napping_.load(std::memory_order_relaxed) && napping_.exchange(0)) wake_progress();
    }
    /* inline mode, from an application thread about to block (in
     * ibv_get_cq_event): the fallback thread looks now, not after its
     * sleep. */
    void kick_fallback() {
        if (cfg_.progress == progress_mode::inline_poll &&
            fallback_kick_.exchange(1, std::memory_order_acq_rel) == 0)
            wake_fallback();
    }
    /* The lock as guard takes it, for compat's librdmacm (uroce_ibv_rdmacm.h). */
    void lock() {
        waiters_.fetch_add(1, std::memory_order_relaxed);
        mu_.lock();
        waiters_.fetch_sub(1, std::memory_order_relaxed);
    }
    void unlock() { mu_.unlock(); }
    /* fn(arg) when the stack stops, the lock held (lock held to add). */
    void add_stop_hook_locked(void (*fn)(void *), void *arg) { stop_hooks_.push_back({fn, arg}); }
    void add_leave_hook_locked(void (*fn)(void *), void *arg) { leave_hooks_.push_back({fn, arg}); }
    void set_qp_release_hook_locked(void (*fn)(uroce::qp *)) { qp_release_hook_ = fn; }
    void release_cm_qp_locked(uroce::qp *q) {
        if (qp_release_hook_) qp_release_hook_(q);
    }

    /* The peer's MAC through ARP/ND, driving the stack while waiting (lock held). */
    std::optional<mac_addr> resolve_locked(const gid &g, std::chrono::milliseconds timeout);

    /* CQs the loop serves and watches for completion events (lock held). */
    void add_cq_locked(compat_cq *cq);
    void remove_cq_locked(compat_cq *cq);
    /* Contexts that receive async events (lock held). */
    void add_context_locked(compat_context *c);
    void remove_context_locked(compat_context *c);
    /* The ibverbs object (ibv_qp, ibv_srq, ibv_cq) behind a uroce one, for
     * the device's asynchronous events (lock held). Forgetting an object
     * also drops its events not yet read (as the kernel does,
     * ib_uverbs_release_uevent). */
    void add_event_obj_locked(const void *uobj, void *ibv_obj) { event_objs_[uobj] = ibv_obj; }
    void forget_event_obj_locked(const void *uobj, const void *ibv_obj);
    /* An armed CQ was added: the loop starts checking (any thread). */
    void note_armed() { armed_.fetch_add(1, std::memory_order_release); }
    /* The completions cq has produced so far: moved into its work channel
     * (thread mode; any thread), or taken by ibv_poll_cq plus those still
     * in the uroce CQ (inline mode; the lock held). */
    uint64_t produced_locked(const compat_cq *c) const {
        if (c->ch) return c->ch->serve_counters().completions.load(std::memory_order_acquire);
        return c->taken + uroce::cq_count(c->ucq);
    }

    /* ibv_device_attr's max_inline_data, and the channels' inline room. */
    static constexpr uint32_t max_inline = 256;

  private:
    runtime() = default;
    bool start(std::string &err, int &errno_out);
    void stop();
    void progress_loop();
    /* inline mode: the fallback thread's turn, while the application does not drive. */
    void fallback_drive();
    void check_events_locked();
    void check_link_locked();
    void check_async_locked();
    void signal_cq(compat_cq *cq);
    /* Both modes: while a CQ is armed (an application waits for its
     * completion event: blocked in ibv_get_cq_event, or in poll(2) on the
     * channel), the stack is polled without a pause until
     * cfg_.event_busy_poll_ns (UROCE_BUSY_POLL_US, 1 ms by default) after
     * the last iteration that moved something. A kernel provider takes the
     * answer's interrupt; a nap or sleep made each hop of an event-driven
     * ping-pong wait up to 50 µs (ibv_rc_pingpong -e: 35-226 µs an
     * iteration, against 9-13 polling; doc/compat.md). */
    bool event_awaited(uint64_t now) const {
        return armed_.load(std::memory_order_relaxed) > 0 &&
               now - last_moved_ns_.load(std::memory_order_relaxed) < cfg_.event_busy_poll_ns;
    }
    /* The polling thread pauses (armed_pauses_). */
    void count_pause();
    void nap();
    void wake_progress();
    /* inline mode: the fallback thread's sleep of ns, cut short by
     * kick_fallback (true then). */
    bool fallback_wait(uint64_t ns);
    void wake_fallback();
    /* memif: park EAL's interrupt thread while the link is up and we poll,
     * with a window at each link check (<uroce/eal_intr_gate.h>). */
    void gate_window_locked();

    /* The port is a net_memif: its link goes down on EAL's interrupt thread. */
    bool gate_intr_ = false;
    bool intr_parked_ = false;

    env_config cfg_;
    std::unique_ptr<app::stack> st_;
    std::mutex mu_;
    std::atomic<int> waiters_{0};
    std::atomic<bool> stop_{false};
    std::thread progress_;
    std::vector<compat_cq *> cqs_;
    std::vector<compat_context *> contexts_;
    std::unordered_map<const void *, void *> event_objs_;
    std::vector<std::pair<void (*)(void *), void *>> stop_hooks_;
    std::vector<std::pair<void (*)(void *), void *>> leave_hooks_; /* before the linger */
    void (*qp_release_hook_)(uroce::qp *) = nullptr;
    std::atomic<unsigned> armed_{0}; /* arms since the last check: 0 = nothing to look at */
    std::atomic<uint64_t> last_drive_ns_{0};
    std::atomic<uint64_t> last_moved_ns_{0}; /* the last iteration that moved something */
    std::atomic<uint32_t> napping_{0};       /* futex word: 1 while the progress thread naps */
    std::atomic<uint64_t> progress_ns_{0};   /* the progress thread's last iteration */
    std::atomic<uint32_t> fallback_kick_{0}; /* futex word: 1 once kicked, until it looks */
    uint64_t next_link_check_ns_ = 0;
    /* inline mode, the fallback thread's (UROCE_COUNTERS): its turns, and
     * the iterations after a turn's first that moved something */
    uint64_t fallback_wakeups_ = 0;
    uint64_t fallback_busy_continued_ = 0;
    /* UROCE_COUNTERS: the progress thread's naps (thread mode); both
     * modes, the completion events signalled, and from the first of them
     * the pauses in polling (a nap, or the end of a fallback turn that
     * found nothing) while a CQ was armed, once per quiet spell (since the
     * last iteration that moved something): one per UROCE_BUSY_POLL_US of
     * quiet; with 0, one per hop of an event-driven ping-pong. */
    uint64_t naps_ = 0;
    std::atomic<uint64_t> events_signalled_{0};
    uint64_t armed_pauses_ = 0;
    uint64_t armed_pause_spell_ = 0; /* last_moved_ns_ when the last one was counted */
    bool link_up_ = false;
    int users_ = 0;
};

} // namespace uroce::compat

#endif

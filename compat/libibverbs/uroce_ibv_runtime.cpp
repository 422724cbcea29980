/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_ibv_runtime.h"

#include <uroce/eal_intr_gate.h>
#include "uroce_ibv_rdmacm.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_lcore.h>

#include <uroce/eal.h>

namespace uroce::compat {

uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

void report_error(const std::string &msg, int err) {
    static std::atomic<bool> printed{false};
    if (!printed.exchange(true)) std::fprintf(stderr, "uroce: %s\n", msg.c_str());
    errno = err;
}

namespace {
std::mutex global_mu;                  /* acquire/release */
runtime *global_rt = nullptr;          /* the process's stack, while someone uses it */
std::unique_ptr<eal_session> eal_sess; /* EAL: once per process */
bool atexit_registered = false;

/* Sleep on word while it holds `expected`, ns at most (returns at once
 * if it no longer does), and wake one such sleeper. */
void futex_wait(std::atomic<uint32_t> &word, uint32_t expected, uint64_t ns) {
    const timespec ts{long(ns / 1'000'000'000), long(ns % 1'000'000'000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
            nullptr, 0);
}
void futex_wake(std::atomic<uint32_t> &word) {
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
            0);
}

void stop_at_exit() {
    /* The application exits with contexts open (most tools do): stop the
     * threads and the port before static destructors run. */
    runtime::release(nullptr);
}
} // namespace

bool runtime::config_ok() {
    env_config cfg;
    std::string err;
    int e = 0;
    if (!read_env(cfg, err, e)) {
        report_error(err, e);
        return false;
    }
    return true;
}

runtime *runtime::acquire() {
    std::lock_guard<std::mutex> lock(global_mu);
    if (global_rt) {
        global_rt->users_++;
        return global_rt;
    }
    std::unique_ptr<runtime> rt(new runtime());
    std::string err;
    int e = 0;
    if (!rt->start(err, e)) {
        report_error(err, e);
        return nullptr;
    }
    rt->users_ = 1;
    global_rt = rt.release();
    if (!atexit_registered) {
        atexit_registered = true;
        std::atexit(stop_at_exit);
    }
    return global_rt;
}

void runtime::release(runtime *rt) {
    std::lock_guard<std::mutex> lock(global_mu);
    if (!rt) { /* exit: whoever still uses it */
        rt = global_rt;
        if (!rt) return;
        rt->users_ = 1;
    }
    if (--rt->users_ > 0) return;
    rt->stop();
    delete rt;
    global_rt = nullptr;
}

bool runtime::start(std::string &err, int &errno_out) {
    if (!read_env(cfg_, err, errno_out)) return false;
    if (cfg_.vdevs.size() > 1) {
        err =
            "UROCE_EAL: one --vdev (the port of uroce0), got " + std::to_string(cfg_.vdevs.size());
        errno_out = EINVAL;
        return false;
    }
    if (!eal_sess) {
        /* EAL pins the calling thread (the application's) to its main
         * lcore: give the application its CPUs back afterwards. */
        cpu_set_t saved;
        const bool have_saved = sched_getaffinity(0, sizeof(saved), &saved) == 0;
        eal_config ec;
        ec.args = cfg_.eal_args;
        eal_sess = eal_session::start(ec, err);
        if (have_saved) sched_setaffinity(0, sizeof(saved), &saved);
        if (!eal_sess) {
            err = "UROCE_EAL: " + err;
            errno_out = ENODEV;
            return false;
        }
    }
    app::stack_options so;
    so.name = "uroce0";
    if (cfg_.vdevs.empty())
        so.port_id = 0;
    else
        so.vdev = cfg_.vdevs[0];
    so.ips = cfg_.ips;
    so.mac = cfg_.mac;
    so.link_mtu = cfg_.link_mtu;
    so.pcap = cfg_.pcap;
    st_ = app::stack::create(so, err);
    if (!st_) {
        err = "UROCE_EAL/UROCE_IP: cannot bring up uroce0: " + err;
        errno_out = ENODEV;
        return false;
    }
    gate_intr_ = !cfg_.vdevs.empty() && cfg_.vdevs[0].rfind("net_memif", 0) == 0;
    next_link_check_ns_ = 0;
    progress_ = std::thread([this] { progress_loop(); });
    return true;
}

void runtime::stop() {
    stop_.store(true);
    if (progress_.joinable()) progress_.join();
    {
        std::lock_guard<std::mutex> lock(mu_);
        /* No memif disconnect on the interrupt thread while we linger and
         * close the port (after one it was handling finishes). */
        if (gate_intr_) intr_parked_ = eal_intr_gate::instance().park(gate_timeout);
        /* librdmacm ends what the process leaves behind (its DREQs go out
         * and are answered while we linger). */
        for (auto &[fn, arg] : leave_hooks_)
            fn(arg);
        leave_hooks_.clear();
        /* The peer may still be retransmitting its last request, waiting
         * for our ACK: answer until the link is quiet (app::stack::linger). */
        st_->linger(std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
        /* librdmacm's CM goes before the stack (its QP1 and its hook in
         * the engine), after the linger: the last MADs it queued (a DREP
         * answering the peer's DREQ) go out while we linger. */
        for (auto &[fn, arg] : stop_hooks_)
            fn(arg);
        stop_hooks_.clear();
        if (cfg_.print_counters) {
            st_->print_counters(stderr);
            if (cfg_.progress == progress_mode::inline_poll)
                std::fprintf(stderr, "compat.fallback wakeups %llu busy_continued %llu\n",
                             (unsigned long long)fallback_wakeups_,
                             (unsigned long long)fallback_busy_continued_);
            else
                std::fprintf(stderr, "compat.progress naps %llu\n", (unsigned long long)naps_);
            std::fprintf(stderr, "compat.events signalled %llu armed_pauses %llu\n",
                         (unsigned long long)events_signalled_.load(),
                         (unsigned long long)armed_pauses_);
            if (gate_intr_)
                std::fprintf(stderr, "compat.intr_gate windows %llu park_timeouts %llu\n",
                             (unsigned long long)eal_intr_gate::instance().windows(),
                             (unsigned long long)eal_intr_gate::instance().park_timeouts());
        }
        st_.reset();
        /* The interrupt thread stays parked to the process's exit (or the
         * next stack::create): let go, it would handle the peer's
         * disconnect against the closed port, or run while exit()
         * finalizes the libraries (<uroce/eal_intr_gate.h>). */
        intr_parked_ = false;
    }
}

void runtime::progress_loop() {
    /* An lcore id for this thread: the mbuf pools' per-lcore caches. */
    const bool registered = rte_thread_register() == 0;
    unsigned idle = 0;
    uint64_t fallback_sleep_ns = drive_idle_ns;
    while (!stop_.load(std::memory_order_relaxed)) {
        if (cfg_.progress == progress_mode::thread) {
            if (waiters_.load(std::memory_order_relaxed) > 0) {
                sched_yield();
                continue;
            }
            unsigned moved;
            {
                std::lock_guard<std::mutex> lock(mu_);
                moved = drive_locked();
            }
            const uint64_t now = monotonic_ns();
            progress_ns_.store(now, std::memory_order_relaxed);
            /* Idle for a while: nap, so the application's threads get the
             * CPU when threads outnumber CPUs (they drive the stack
             * themselves meanwhile, help_drive), as a kernel provider
             * sleeps until an interrupt. Not while an application waits
             * for a completion event: it has given up its CPU, and a nap
             * would hold the answer back (event_awaited). */
            idle = moved ? 0 : idle + 1;
            if (idle >= idle_spins_before_nap) {
                idle = 0;
                if (!event_awaited(now)) nap();
            }
        } else {
            /* While the application drives, look less and less often (up
             * to fallback_max_sleep_ns): 20,000 wake-ups a second took 7%
             * of a stock ib_send_bw's samples. ibv_get_cq_event wakes the
             * thread before it blocks (kick_fallback). */
            const bool kicked = fallback_wait(fallback_sleep_ns);
            if (!kicked &&
                monotonic_ns() - last_drive_ns_.load(std::memory_order_relaxed) < drive_idle_ns) {
                fallback_sleep_ns = std::min(fallback_sleep_ns * 2, fallback_max_sleep_ns);
                continue;
            }
            fallback_sleep_ns = drive_idle_ns;
            fallback_drive();
        }
    }
    if (registered) rte_thread_unregister();
}

void runtime::fallback_drive() {
    /* Nobody has driven for drive_idle_ns: the application waits somewhere
     * else (its TCP exchange, ibv_get_cq_event, or it is the passive side
     * of a WRITE or READ and calls no verb at all). Drive, and go on while
     * the stack has work, as thread mode's progress thread does until it
     * naps: one iteration per wake-up answered the passive side's traffic
     * once every 50 µs (ib_write_bw's server held its client to 0.12 M
     * WRITEs/s, ib_read_lat took 120 µs). Step aside as soon as the
     * application wants the lock: then it drives again. */
    fallback_wakeups_++;
    /* A first iteration that moves nothing ends the turn: an application
     * blocked with nothing in flight costs one iteration per wake-up. While
     * an armed CQ awaits its event the turn goes on (event_awaited). */
    unsigned idle = idle_spins_before_nap - 1;
    bool first = true;
    while (!stop_.load(std::memory_order_relaxed) &&
           waiters_.load(std::memory_order_relaxed) == 0) {
        if (idle >= idle_spins_before_nap && !event_awaited(monotonic_ns())) {
            count_pause();
            return;
        }
        std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
        if (!lock.owns_lock()) return;
        const bool moved = drive_locked() != 0;
        if (moved && !first) fallback_busy_continued_++;
        idle = moved ? 0 : idle + 1;
        first = false;
    }
}

void runtime::gate_window_locked() {
    eal_intr_gate &g = eal_intr_gate::instance();
    if (intr_parked_) {
        /* Nobody polls now: the interrupt thread handles what memif's
         * control channel brought (a disconnect, maybe). */
        g.release();
        g.count_window();
        intr_parked_ = false;
    }
}

void runtime::count_pause() {
    /* Before the first event the application may wait for something else
     * (its peer's TCP exchange) with a CQ armed; the frames of the peer's
     * start-up (ARP, ND) break that wait into spells. */
    if (!armed_.load(std::memory_order_relaxed) ||
        !events_signalled_.load(std::memory_order_relaxed))
        return;
    const uint64_t spell = last_moved_ns_.load(std::memory_order_relaxed);
    if (spell == armed_pause_spell_) return;
    armed_pause_spell_ = spell;
    armed_pauses_++;
}

void runtime::nap() {
    naps_++;
    count_pause();
    napping_.store(1, std::memory_order_seq_cst);
    /* Returns at once if a post already cleared the word (kick). */
    futex_wait(napping_, 1, nap_ns);
    napping_.store(0, std::memory_order_relaxed);
}

bool runtime::fallback_wait(uint64_t ns) {
    /* Returns at once if a kick came since the last look. */
    futex_wait(fallback_kick_, 0, ns);
    return fallback_kick_.exchange(0, std::memory_order_acq_rel) != 0;
}

void runtime::wake_fallback() {
    futex_wake(fallback_kick_);
}

void runtime::wake_progress() {
    futex_wake(napping_);
}

unsigned runtime::drive_locked() {
    const bool threaded = cfg_.progress == progress_mode::thread;
    unsigned n = 0;
    /* memif: while the link is down the interrupt thread may be midway
     * through a disconnect (it marks the link down first, unmaps the rings
     * after), so the port is not polled: nothing could go out anyway. Once
     * the link is up, the thread is parked while we poll (if it does not
     * park in time we poll regardless, as without the gate). */
    bool poll_port = true;
    if (gate_intr_ && !intr_parked_) {
        poll_port = st_->port().link_up();
        if (poll_port) intr_parked_ = eal_intr_gate::instance().park(gate_timeout);
    }
    if (threaded)
        for (compat_cq *c : cqs_)
            n += c->ch->serve();
    const unsigned port = poll_port ? st_->poll() : 0;
    if (threaded && port)
        for (compat_cq *c : cqs_)
            n += c->ch->serve();
    n += port;
    if (armed_.load(std::memory_order_acquire)) check_events_locked();
    check_async_locked();
    const uint64_t now = monotonic_ns();
    last_drive_ns_.store(now, std::memory_order_relaxed);
    if (n) last_moved_ns_.store(now, std::memory_order_relaxed);
    if (now >= next_link_check_ns_) {
        next_link_check_ns_ = now + 100'000'000ull;
        if (gate_intr_) gate_window_locked();
        check_link_locked();
    }
    return n;
}

void runtime::signal_cq(compat_cq *cq) {
    if (!cq->armed.exchange(false)) return;
    armed_.fetch_sub(1, std::memory_order_relaxed);
    events_signalled_.fetch_add(1, std::memory_order_relaxed);
    compat_comp_channel *ch = cq->chan;
    {
        std::lock_guard<std::mutex> lock(ch->mu);
        ch->events.push_back(cq);
    }
    const uint64_t one = 1;
    if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
        std::fprintf(stderr, "uroce: completion channel write: %s\n", std::strerror(errno));
}

void runtime::check_events_locked() {
    for (compat_cq *c : cqs_) {
        if (!c->armed.load(std::memory_order_acquire) || !c->chan) continue;
        /* A completion added since the arm: one the application has not
         * polled yet but that was there when it armed signals nothing
         * (perftest's -e arms, then polls once; an event for the
         * completion it was about to poll made its next wait return for
         * the wrong CQ). */
        if (produced_locked(c) > c->armed_at) signal_cq(c);
    }
}

/* The async fd's count is the queue's length whenever async_mu is free:
 * every push, pop and drop moves both under it, so poll(2) on the fd says
 * readable exactly when an event is there, as the kernel's queue does. */
static void queue_async(compat_context *c, const ibv_async_event &ev) {
    std::lock_guard<std::mutex> lock(c->async_mu);
    c->async_events.push_back(ev);
    const uint64_t one = 1;
    if (write(c->async_fd, &one, sizeof(one)) != sizeof(one))
        std::fprintf(stderr, "uroce: async event write: %s\n", std::strerror(errno));
}

/* The device's asynchronous events, each to the context its object belongs
 * to, as ibv_async_event names it (element.qp / srq / cq). */
void runtime::check_async_locked() {
    uroce::async_event ue;
    while (uroce::get_async_event(dev(), &ue)) {
        const void *uobj = ue.qp    ? static_cast<const void *>(ue.qp)
                           : ue.srq ? static_cast<const void *>(ue.srq)
                                    : static_cast<const void *>(ue.cq);
        auto it = event_objs_.find(uobj);
        if (it == event_objs_.end()) continue; /* not made through ibverbs (librdmacm's CM QP1) */
        ibv_async_event ev{};
        ev.event_type = ibv_event_type(ue.type);
        ibv_context *ctx;
        if (ue.qp) {
            ev.element.qp = static_cast<ibv_qp *>(it->second);
            ctx = ev.element.qp->context;
        } else if (ue.srq) {
            ev.element.srq = static_cast<ibv_srq *>(it->second);
            ctx = ev.element.srq->context;
        } else {
            ev.element.cq = static_cast<ibv_cq *>(it->second);
            ctx = ev.element.cq->context;
        }
        queue_async(to_ctx(ctx), ev);
    }
}

void runtime::forget_event_obj_locked(const void *uobj, const void *ibv_obj) {
    event_objs_.erase(uobj);
    for (compat_context *c : contexts_) {
        std::lock_guard<std::mutex> lock(c->async_mu);
        const size_t dropped = std::erase_if(c->async_events, [ibv_obj](const ibv_async_event &e) {
            switch (e.event_type) {
            case IBV_EVENT_PORT_ACTIVE:
            case IBV_EVENT_PORT_ERR:
            case IBV_EVENT_LID_CHANGE:
            case IBV_EVENT_PKEY_CHANGE:
            case IBV_EVENT_SM_CHANGE:
            case IBV_EVENT_CLIENT_REREGISTER:
            case IBV_EVENT_GID_CHANGE:
            case IBV_EVENT_DEVICE_FATAL:
                return false;
            default:
                /* element is a union of pointers: compare its QP arm */
                return static_cast<const void *>(e.element.qp) == ibv_obj;
            }
        });
        /* Their counts go too (semaphore eventfd: one per read; the count
         * is the queue's length, so these reads never block). */
        for (size_t i = 0; i < dropped; i++) {
            uint64_t one;
            [[maybe_unused]] const ssize_t r = read(c->async_fd, &one, sizeof(one));
        }
    }
}

void runtime::check_link_locked() {
    /* Port events (IBV_EVENT_PORT_ACTIVE / PORT_ERR) follow the link: for
     * memif, whether the peer process is connected. */
    const bool up = st_->port().link_up();
    if (up == link_up_) return;
    link_up_ = up;
    /* memif maps new regions at each connection: fault them in before the
     * first frame goes through them (ethdev_port::prefault_shared_memory). */
    if (up) st_->port().prefault_shared_memory();
    ibv_async_event ev{};
    ev.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
    ev.element.port_num = 1;
    for (compat_context *c : contexts_)
        queue_async(c, ev);
}

std::optional<mac_addr> runtime::resolve_locked(const gid &g, std::chrono::milliseconds timeout) {
    const uint64_t deadline = monotonic_ns() + uint64_t(timeout.count()) * 1'000'000ull;
    for (;;) {
        if (st_->port().link_up()) {
            /* the transition now, not at the next 100 ms check: the
             * connection's first frames follow this resolution */
            check_link_locked();
            if (auto mac = st_->neighbours().resolve(g)) return mac;
        }
        if (monotonic_ns() > deadline) return std::nullopt;
        drive_locked();
    }
}

void runtime::add_cq_locked(compat_cq *cq) {
    cqs_.push_back(cq);
}

void runtime::remove_cq_locked(compat_cq *cq) {
    if (cq->armed.exchange(false)) armed_.fetch_sub(1, std::memory_order_relaxed);
    cqs_.erase(std::remove(cqs_.begin(), cqs_.end(), cq), cqs_.end());
}

void runtime::add_context_locked(compat_context *c) {
    contexts_.push_back(c);
    if (link_up_) {
        ibv_async_event ev{};
        ev.event_type = IBV_EVENT_PORT_ACTIVE;
        ev.element.port_num = 1;
        queue_async(c, ev);
    }
}

void runtime::remove_context_locked(compat_context *c) {
    contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), c), contexts_.end());
}

/* ---------------------------------------------------------------- for librdmacm */

runtime *rdmacm_runtime(ibv_context *ctx) {
    return to_ctx(ctx)->rt;
}
void rdmacm_lock(ibv_context *ctx) {
    to_ctx(ctx)->rt->lock();
}
void rdmacm_unlock(ibv_context *ctx) {
    to_ctx(ctx)->rt->unlock();
}
uroce::engine *rdmacm_engine(ibv_context *ctx) {
    return &to_ctx(ctx)->rt->st().eng();
}
void rdmacm_add_stop_hook(ibv_context *ctx, void (*fn)(void *), void *arg) {
    to_ctx(ctx)->rt->add_stop_hook_locked(fn, arg);
}

void rdmacm_add_leave_hook(ibv_context *ctx, void (*fn)(void *), void *arg) {
    to_ctx(ctx)->rt->add_leave_hook_locked(fn, arg);
}

} // namespace uroce::compat

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_ibv_runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <sys/eventfd.h>
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
    st_ = app::stack::create(so, err);
    if (!st_) {
        err = "UROCE_EAL/UROCE_IP: cannot bring up uroce0: " + err;
        errno_out = ENODEV;
        return false;
    }
    next_link_check_ns_ = 0;
    progress_ = std::thread([this] { progress_loop(); });
    return true;
}

void runtime::stop() {
    stop_.store(true);
    if (progress_.joinable()) progress_.join();
    {
        std::lock_guard<std::mutex> lock(mu_);
        /* The peer may still be retransmitting its last request, waiting
         * for our ACK: answer until the link is quiet (app::stack::linger). */
        st_->linger(std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
        if (cfg_.print_counters) st_->print_counters(stderr);
    }
    st_.reset();
}

void runtime::progress_loop() {
    /* An lcore id for this thread: the mbuf pools' per-lcore caches. */
    const bool registered = rte_thread_register() == 0;
    unsigned idle = 0;
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
            /* Idle for a while: let the other threads of this CPU run (the
             * application's, when threads outnumber CPUs), as a kernel
             * provider's interrupt would. */
            idle = moved ? 0 : idle + 1;
            if (idle >= idle_spins_before_yield) {
                idle = 0;
                sched_yield();
            }
        } else {
            timespec ts{0, long(drive_idle_ns)};
            nanosleep(&ts, nullptr);
            if (monotonic_ns() - last_drive_ns_.load(std::memory_order_relaxed) < drive_idle_ns)
                continue;
            std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
            if (lock.owns_lock()) drive_locked();
        }
    }
    if (registered) rte_thread_unregister();
}

unsigned runtime::drive_locked() {
    const bool threaded = cfg_.progress == progress_mode::thread;
    unsigned n = 0;
    if (threaded)
        for (compat_cq *c : cqs_)
            n += c->ch->serve();
    const unsigned port = st_->poll();
    if (threaded && port)
        for (compat_cq *c : cqs_)
            n += c->ch->serve();
    n += port;
    if (armed_.load(std::memory_order_acquire)) check_events_locked();
    const uint64_t now = monotonic_ns();
    last_drive_ns_.store(now, std::memory_order_relaxed);
    if (now >= next_link_check_ns_) {
        next_link_check_ns_ = now + 100'000'000ull;
        check_link_locked();
    }
    return n;
}

void runtime::signal_cq(compat_cq *cq) {
    if (!cq->armed.exchange(false)) return;
    armed_.fetch_sub(1, std::memory_order_relaxed);
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
        bool pending;
        if (c->ch) {
            const uint64_t moved =
                c->ch->serve_counters().completions.load(std::memory_order_acquire);
            const uint64_t polled = c->ch->app_counters().polled.load(std::memory_order_acquire);
            pending = moved != polled;
        } else {
            if (c->stash_head == c->stash.size()) {
                c->stash.resize(size_t(c->depth));
                const int got = uroce::poll_cq(c->ucq, c->depth, c->stash.data());
                c->stash.resize(size_t(std::max(got, 0)));
                c->stash_head = 0;
            }
            pending = c->stash_head < c->stash.size();
        }
        if (pending) signal_cq(c);
    }
}

static void queue_async(compat_context *c, const ibv_async_event &ev) {
    {
        std::lock_guard<std::mutex> lock(c->async_mu);
        c->async_events.push_back(ev);
    }
    const uint64_t one = 1;
    if (write(c->async_fd, &one, sizeof(one)) != sizeof(one))
        std::fprintf(stderr, "uroce: async event write: %s\n", std::strerror(errno));
}

void runtime::check_link_locked() {
    /* Port events (IBV_EVENT_PORT_ACTIVE / PORT_ERR) follow the link: for
     * memif, whether the peer process is connected. */
    const bool up = st_->port().link_up();
    if (up == link_up_) return;
    link_up_ = up;
    ibv_async_event ev{};
    ev.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
    ev.element.port_num = 1;
    for (compat_context *c : contexts_)
        queue_async(c, ev);
}

std::optional<mac_addr> runtime::resolve_locked(const gid &g, std::chrono::milliseconds timeout) {
    const uint64_t deadline = monotonic_ns() + uint64_t(timeout.count()) * 1'000'000ull;
    for (;;) {
        if (st_->port().link_up())
            if (auto mac = st_->neighbours().resolve(g)) return mac;
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

} // namespace uroce::compat

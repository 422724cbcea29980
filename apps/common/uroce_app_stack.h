/* SPDX-License-Identifier: BSD-3-Clause
 * What every uroce app sets up the same way: EAL, a DPDK port, the local
 * addresses, neighbours, the engine, the transport device, --pcap, counters
 * (printed on exit and on SIGUSR1, exposed through DPDK telemetry).
 *
 * The apps' command line (EAL options, stack options such as --vdev, --ip,
 * --link-mtu, --shards) is parsed by uroce_app_options.h; EAL is started
 * by start_eal() there (uroce_eal.h).
 */
#ifndef UROCE_APP_STACK_H
#define UROCE_APP_STACK_H

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <uroce/capture.h>
#include <uroce/eal.h>
#include <uroce/eal_intr_gate.h>
#include <uroce/engine.h>
#include <uroce/ethdev.h>
#include <uroce/neigh.h>
#include <uroce/shard.h>
#include <uroce/verbs.h>

namespace uroce::app {

/* Set by SIGINT/SIGTERM; loops check it and end cleanly. */
extern std::atomic<bool> stop_requested;

/* SIGINT/SIGTERM set stop_requested, SIGUSR1 asks for a counter dump. */
void install_signal_handlers();

struct stack_options {
    std::string vdev;
    int port_id = -1;
    std::vector<std::string> ips;
    std::optional<rte_ether_addr> mac;
    uint32_t link_mtu = 0; /* 0: the PMD's */
    std::string pcap;
    cc_config cc;               /* ECN, CNPs, DCQCN (--dcqcn, --no-ecn, --cnp-interval) */
    std::string name = "uroce"; /* telemetry and pool names */
    unsigned shards = 1;
    /* With shards: the stack runs shards 1.. on the worker lcores (each a
     * poll_shard(i) loop) until it is destroyed; the app's thread is shard 0.
     * false: the app launches its own loops (uroce-perf's loopback does). */
    bool run_shard_lcores = true;
    /* QPs per device (0: device_config's default, 1024): uroce-perf -q 4096. */
    uint32_t max_qp = 0;
    /* device_config::respond_on_poll: ACKs leave with the app's next
     * post, in its next poll (uroce-perf; linger() keeps it safe). */
    bool respond_on_poll = false;
};

class stack {
  public:
    static std::unique_ptr<stack> create(const stack_options &o, std::string &err);
    ~stack();

    /* One iteration of the run-to-completion loop (of shard 0, which owns
     * the neighbours, when there are several).
     * Send first, then receive: what the app posted since the last
     * iteration (send_lat's answer to the request it just took from the
     * CQ) leaves at once, not after an RX burst and its processing. The
     * ACKs for what an RX burst brings still leave at its end
     * (device::rx_burst). Measured: doc/performance.md, "2 B send_lat
     * over memif". */
    unsigned poll() {
        if (!prefaulted_) [[unlikely]]
            watch_link();
        if (group_) return ethdev_shard_poll(*shards_[0].sh, *port_);
        const unsigned sent = eng_->poll();
        rte_mbuf *pkts[engine::burst];
        uint16_t n = port_->rx_burst(0, pkts, engine::burst);
        eng_->rx_burst(pkts, n);
        return n + sent;
    }
    /* One iteration of shard i's loop; only from the lcore that runs shard i
     * (shard 0: the thread that calls poll()). */
    unsigned poll_shard(unsigned i) {
        return i == 0 ? poll() : ethdev_shard_poll(*shards_[i].sh, *port_);
    }
    /* Poll until the port's link is up (memif: until its peer connects). */
    bool wait_link_up(std::chrono::milliseconds timeout);
    /* After a run, before the QPs go: keep answering until no RoCE frame has
     * arrived for `idle` (at most `limit`). A peer whose last ACK was lost
     * retransmits its last request; our live QP re-ACKs the duplicate (IBTA
     * 9.9.2). Torn down at once, we would leave it retrying until it fails:
     * the stock tools finish independently and cannot tell us. */
    /* On a memif port the EAL interrupt thread is parked from here on,
     * through the port's close to the process's exit (or the next
     * stack::create; <uroce/eal_intr_gate.h>): the peer, done too, closes
     * its end meanwhile, and memif's disconnect must not unmap the rings
     * under our polls, nor run against our closed port. */
    void linger(std::chrono::milliseconds idle = std::chrono::milliseconds(300),
                std::chrono::milliseconds limit = std::chrono::milliseconds(3000));
    /* The peer's MAC, resolving it over the link (ARP / ND) while polling. */
    std::optional<mac_addr> resolve(const gid &peer, std::chrono::milliseconds timeout);
    /* GID table index of our address in the peer's family (IPv4 or IPv6). */
    int gid_index_for(const gid &peer) const;

    device *ctx() const { return ctx_; }
    ethdev_port &port() const { return *port_; }
    engine &eng() const { return *eng_; }
    /* Shards: 1 unless --shards; shard i's device (QPs created on it belong
     * to shard i's lcore), its engine, its fan-out counters (none with one). */
    unsigned shard_count() const { return unsigned(shards_.size()); }
    device *ctx(unsigned shard) const { return shards_[shard].ctx; }
    engine &eng(unsigned shard) const { return *shards_[shard].eng; }
    const shard_counters *fanout_counters(unsigned shard) const {
        return group_ ? &shards_[shard].sh->counters() : nullptr;
    }
    neigh &neighbours() const { return *nb_; }
    const local_addr_table &addrs() const { return nb_->addrs(); }
    const std::string &name() const { return name_; }
    /* The largest IB MTU the port carries (4096 on jumbo links). */
    mtu max_mtu() const;

    /* Every counter that is not zero: port, engine, device, each QP, neighbours. */
    void print_counters(FILE *f) const;

  private:
    stack() = default;
    std::string name_;
    std::unique_ptr<ethdev_port> port_;
    bool gate_intr_ = false; /* the port's PMD needs eal_intr_gate (memif) */
    /* Park the interrupt thread for the rest of the stack's life and beyond. */
    void hold_intr_gate();
    /* The link was seen up: fault in what the port shares with its peer
     * (memif's rings and buffers) once, before the first frame needs it. */
    void link_ready() {
        if (prefaulted_) return;
        prefaulted_ = true;
        port_->prefault_shared_memory();
    }
    bool prefaulted_ = false;
    /* Until then, poll() looks at the link every link_watch_polls polls:
     * a run whose link came up where nothing waited for it (an rdma_cm
     * server accepts without wait_link_up or resolve) is prefaulted too. */
    void watch_link() {
        if ((++link_watch_ & (link_watch_polls - 1)) == 0 && port_->link_up()) link_ready();
    }
    static constexpr unsigned link_watch_polls = 1024;
    unsigned link_watch_ = 0;
    rte_mempool *tx_pool_ = nullptr;
    std::unique_ptr<neigh> nb_;
    std::unique_ptr<pcap_writer> capture_;
    std::unique_ptr<engine> eng_;
    device *ctx_ = nullptr;
    /* Shard 0 is eng_/ctx_ above (with the port itself as its TX queue 0);
     * shards 1.. send on their own TX queue. */
    struct shard_slot {
        std::unique_ptr<ethdev_tx_queue> txq;
        std::unique_ptr<engine> own_eng;
        engine *eng = nullptr;
        device *ctx = nullptr;
        std::unique_ptr<shard> sh;
    };
    std::vector<shard_slot> shards_;
    std::unique_ptr<shard_group> group_; /* with more than one shard */
    bool start_shard_lcores(std::string &err);
    std::atomic<bool> shard_lcores_stop_{false};
    std::vector<unsigned> shard_lcores_; /* lcore of shard i + 1, when the stack runs them */
};

/* Poll st until pred() is true or timeout; false on timeout or stop request. */
template <class Pred> bool poll_until(stack &st, std::chrono::milliseconds timeout, Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (stop_requested.load(std::memory_order_relaxed)) return false;
        if (st.poll() == 0 && std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
}

inline bool stack::wait_link_up(std::chrono::milliseconds timeout) {
    if (!poll_until(*this, timeout, [&] { return port_->link_up(); })) return false;
    link_ready();
    return true;
}

inline void stack::linger(std::chrono::milliseconds idle, std::chrono::milliseconds limit) {
    using clock = std::chrono::steady_clock;
    hold_intr_gate();
    const auto roce = [&] { return eng().counters().rx_by_class[size_t(frame_class::roce)]; };
    const auto end = clock::now() + limit;
    auto quiet_since = clock::now();
    uint64_t seen = roce();
    while (clock::now() < end && clock::now() - quiet_since < idle) {
        poll();
        if (roce() != seen) {
            seen = roce();
            quiet_since = clock::now();
        }
    }
}

/* SIGUSR1 asks for a counter dump; apps call this from their loops. */
void maybe_print_counters(const stack &st);

/* Blocking control work (the TCP exchanges, which may wait seconds) runs on
 * a control thread while the stack's thread keeps polling, so ARP, ND and
 * ping are answered meanwhile, as the kernel would. Anything the control
 * thread needs done on the stack (modify a QP, resolve a MAC) it hands back
 * with call_on_stack(), which the polling loop runs: the stack stays
 * single-threaded. */
class control_runner {
  public:
    explicit control_runner(stack &st) : st_(st) {}

    template <class R> R run(std::function<R()> fn) {
        std::packaged_task<R()> task(std::move(fn));
        std::future<R> done = task.get_future();
        std::thread worker(std::move(task));
        while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            st_.poll();
            serve();
            maybe_print_counters(st_);
        }
        worker.join();
        return done.get();
    }

    /* From the control thread: run fn on the stack's thread and wait for it. */
    template <class R> R call_on_stack(std::function<R()> fn) {
        /* Shared with the job: the stack's thread may still be inside
         * task() (packaged_task makes the result ready, then returns)
         * when done.get() returns here, so the task must not live on this
         * thread's stack (a candidate for one unexplained SIGSEGV of a
         * perf_e2e server, not reproduced since). */
        auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
        std::future<R> done = task->get_future();
        {
            std::lock_guard<std::mutex> lock(mu_);
            pending_ = [task] { (*task)(); };
        }
        return done.get();
    }

  private:
    void serve() {
        std::function<void()> job;
        {
            std::lock_guard<std::mutex> lock(mu_);
            job.swap(pending_);
        }
        if (job) job();
    }
    stack &st_;
    std::mutex mu_;
    std::function<void()> pending_;
};

} // namespace uroce::app

#endif

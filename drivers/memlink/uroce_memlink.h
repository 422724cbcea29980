/* SPDX-License-Identifier: BSD-3-Clause
 * memlink: an in-memory Ethernet segment joining two or more uroce devices
 * in one process, with seeded faults (drop, duplicate, reorder, delay,
 * corruption), so tests and benchmarks run both ends on one core.
 *
 *     memlink link(cfg, &clock);
 *     memlink_port *a = link.add_port(mac_a), *b = link.add_port(mac_b);
 *     // device A sends through a (a is its netdev), device B through b
 *     n = a->rx_burst(pkts, 32); dev_a->rx_burst(pkts, n); dev_a->poll();
 *
 * Frames are routed by destination MAC; group addresses (broadcast,
 * multicast) reach every other port. Faults are drawn from one seeded
 * generator in a fixed order per frame, so a run is reproducible.
 * Corruption flips one bit after the Ethernet header (the Ethernet FCS would
 * catch a flip in the header itself; the ICRC must catch the rest).
 */
#ifndef UROCE_MEMLINK_H
#define UROCE_MEMLINK_H

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <uroce/clock.h>
#include <uroce/netdev.h>

#include "uroce_memlink_bottleneck.h"

struct rte_mbuf;

namespace uroce {

struct memlink_config {
    uint64_t seed = 1;
    double drop = 0;      /* probability a frame is lost */
    double duplicate = 0; /* probability a frame is delivered twice */
    double reorder = 0;   /* probability a frame is swapped with the next one */
    double corrupt = 0;   /* probability one bit of the frame is flipped */
    double delay = 0;     /* probability a frame is held back delay_ns */
    uint64_t delay_ns = 0;
    uint32_t queue_depth = 16384; /* frames queued per port; more are dropped */
    uint32_t max_frame_len = 9216;
    bool ipv4_csum_offload = false;
};

struct memlink_stats {
    uint64_t tx = 0;
    uint64_t delivered = 0;
    uint64_t dropped = 0;
    uint64_t duplicated = 0;
    uint64_t reordered = 0;
    uint64_t corrupted = 0;
    uint64_t delayed = 0;
    uint64_t no_route = 0;
    uint64_t queue_full = 0;
    uint64_t too_big = 0;
};

class memlink;

class memlink_port final : public netdev {
  public:
    memlink_port(memlink *link, const uint8_t mac[6], uint32_t depth);
    ~memlink_port() override;

    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override;
    const uint8_t *mac() const override { return mac_; }
    netdev_caps caps() const override;

    /* Frames whose delivery time has come, up to n. The caller owns them. */
    uint16_t rx_burst(rte_mbuf **pkts, uint16_t n);
    uint32_t queued() const { return count_ + (held_ ? 1 : 0); }
    /* Put a model bottleneck (uroce_memlink_bottleneck.h) in front of this
     * port: every frame to it queues there first. */
    void set_bottleneck(const bottleneck_config &cfg) { bn_ = std::make_unique<bottleneck>(cfg); }
    bottleneck *bottleneck_model() const { return bn_.get(); }

  private:
    friend class memlink;
    struct entry {
        rte_mbuf *m;
        uint64_t at;
    };
    bool enqueue(rte_mbuf *m, uint64_t at);
    memlink *link_;
    uint8_t mac_[6];
    std::unique_ptr<entry[]> q_;
    uint32_t depth_;
    uint32_t count_ = 0;       /* entries q_[0..count_) in arrival order */
    rte_mbuf *held_ = nullptr; /* a frame being reordered behind the next one */
    std::unique_ptr<bottleneck> bn_;
};

class memlink {
  public:
    explicit memlink(const memlink_config &cfg, clock_source *clock = nullptr);
    ~memlink();
    memlink(const memlink &) = delete;
    memlink &operator=(const memlink &) = delete;

    memlink_port *add_port(const uint8_t mac[6]);
    /* Change fault rates mid-run (e.g. cut the link to force timeouts). */
    void set_faults(double drop, double duplicate, double reorder, double corrupt, double delay,
                    uint64_t delay_ns);
    const memlink_config &config() const { return cfg_; }
    const memlink_stats &stats() const { return stats_; }
    uint64_t now_ns() { return clock_->now_ns(); }
    /* Called for every frame before the faults are drawn; returning false
     * drops it (counted as dropped). Tests use it to watch the wire and to
     * drop chosen packets deterministically. */
    using filter_fn = std::function<bool(rte_mbuf *m, const memlink_port *from)>;
    void set_filter(filter_fn f) { filter_ = std::move(f); }
    /* Frames still in flight on every port. */
    uint32_t in_flight() const;

  private:
    friend class memlink_port;
    void send(memlink_port *from, rte_mbuf *m);
    void send_to(memlink_port *from, memlink_port *to, rte_mbuf *m);
    double uniform();
    uint64_t next();

    memlink_config cfg_;
    clock_source *clock_;
    memlink_stats stats_;
    std::vector<std::unique_ptr<memlink_port>> ports_;
    filter_fn filter_;
    uint64_t rng_;
};

} // namespace uroce

#endif

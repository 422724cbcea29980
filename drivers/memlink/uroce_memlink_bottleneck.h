/* SPDX-License-Identifier: BSD-3-Clause
 * A model bottleneck for memlink: the egress queue of a switch port in
 * front of a memlink port. Frames to that port queue behind each other and
 * leave at rate_mbps (a FIFO with a constant-rate server, computed in closed
 * form: the backlog is what is left of busy_until at the rate, nothing is
 * walked per frame); a frame that does not fit in queue_bytes is dropped;
 * an ECN-capable frame is marked CE with the RED-like probability DCQCN's
 * switches use (Zhu et al. 2015, section 3.1 "CP algorithm": 0 below Kmin,
 * rising linearly to Pmax at Kmax, 1 above Kmax); then it takes delay_ns to
 * arrive (the propagation half of an RTT).
 *
 * The queue a frame finds on arrival is recorded in a histogram (1 KB
 * buckets), from which median and 99th percentile are read.
 */
#ifndef UROCE_MEMLINK_BOTTLENECK_H
#define UROCE_MEMLINK_BOTTLENECK_H

#include <cstdint>
#include <vector>

struct rte_mbuf;

namespace uroce {

struct bottleneck_config {
    uint64_t rate_mbps = 0;          /* 0: no rate limit (no queue ever builds) */
    uint32_t queue_bytes = 1u << 20; /* the buffer; a frame that does not fit is dropped */
    /* The paper's switch settings at 40 Gb/s: Kmin 5 KB, Kmax 200 KB, Pmax 1%. */
    uint32_t kmin_bytes = 5 * 1024;
    uint32_t kmax_bytes = 200 * 1024;
    double pmax = 0.01;
    bool ecn = true;       /* mark ECT frames; false: tail drop only */
    uint64_t delay_ns = 0; /* after the queue */
};

struct bottleneck_stats {
    uint64_t frames = 0; /* offered */
    uint64_t bytes = 0;  /* offered */
    uint64_t sent = 0;   /* frames through */
    uint64_t sent_bytes = 0;
    uint64_t marked = 0;  /* CE marks set */
    uint64_t dropped = 0; /* queue full */
    uint64_t not_ect = 0; /* over Kmin but not ECN-capable: left unmarked */
};

class bottleneck {
  public:
    explicit bottleneck(const bottleneck_config &cfg);

    /* A frame arrives at now_ns; u is a uniform draw in [0, 1) for the
     * marking decision. Returns false when it is dropped (the caller frees
     * it), else the time it arrives at the far end in *at_ns. */
    bool admit(rte_mbuf *m, uint64_t now_ns, double u, uint64_t *at_ns);

    /* Bytes queued at now_ns (not yet on the wire). */
    uint64_t backlog(uint64_t now_ns) const;
    const bottleneck_stats &stats() const { return st_; }
    const bottleneck_config &config() const { return cfg_; }
    /* Queue depth in bytes seen by arriving frames at quantile q (0..1). */
    uint64_t queue_quantile(double q) const;
    void reset_stats();

  private:
    bottleneck_config cfg_;
    bottleneck_stats st_;
    uint64_t busy_until_ns_ = 0;
    uint64_t busy_frac_ = 0; /* 1/65536 ns */
    uint64_t ns_per_byte_fp16_ = 0;
    std::vector<uint64_t> hist_; /* arrivals by backlog, 1 KB buckets */
};

/* Set the IP ECN field of an Ethernet frame (IPv4 or IPv6, optional 802.1Q)
 * to CE (RFC 3168), fixing the IPv4 header checksum. Returns false, and
 * leaves the frame as it was, unless the frame is IP and ECN-capable. */
bool frame_mark_ce(rte_mbuf *m);

} // namespace uroce

#endif

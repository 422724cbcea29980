/* SPDX-License-Identifier: BSD-3-Clause
 * The DPDK ethdev driver: attaches the stack to any DPDK port, given as a
 * port id or a vdev string ("net_ring0", "net_af_packet0,iface=veth0", ...).
 *
 * It sets up the port's queues, an mbuf pool sized for jumbo frames, the
 * PMD's offloads where it has them (IPv4 checksum, multi-segment TX, RX
 * scatter, RSS on UDP) and reports what it could not get, so the transport
 * does the rest in software. It knows the traps measured on this class of
 * machine (doc/dpdk-ports.md): af_packet silently truncates frames above
 * 1982 bytes unless given larger ring frames, tap caps at 1518 bytes.
 */
#ifndef UROCE_ETHDEV_H
#define UROCE_ETHDEV_H

#include <uroce/export.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <rte_ethdev.h>

#include <uroce/engine.h>
#include <uroce/netdev.h>
#include <uroce/shard.h>

struct rte_mempool;

namespace uroce {

struct ethdev_config {
    /* Either a vdev string, created with rte_vdev_init, or an existing port id. */
    std::string vdev;
    uint16_t port_id = RTE_MAX_ETHPORTS;
    uint16_t rx_queues = 1;
    uint16_t tx_queues = 1;
    /* Shards (lib/engine/uroce_shard.h) that will serve the port, one per
     * lcore; 0 = rx_queues/tx_queues as given. N: one TX queue per shard,
     * and one RX queue per shard with RSS on UDP where the PMD has it, else
     * a single RX queue that shard 0 reads and fans out (doc/dpdk-ports.md). */
    uint16_t shards = 0;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    /* mbufs in the pool; 0 = enough for every descriptor plus in-flight work. */
    uint32_t pool_mbufs = 0;
    /* Data room of each mbuf; 0 = chosen from the port (a whole 9000-byte
     * jumbo frame where the PMD cannot scatter, 2 KB segments where it can). */
    uint16_t mbuf_data_room = 0;
    /* Link MTU to ask the PMD for; 0 = leave it. IB MTU 4096 needs >= 4096 + 80. */
    uint32_t mtu = 0;
    bool promiscuous = true;
    /* The MAC to use instead of the port's own (--mac). Set in the PMD where
     * it can; where it cannot (net_ring has no MAC filter) the stack still
     * sends from it, and the port runs promiscuous. A port whose MAC reads
     * all-zero gets a locally administered one derived from its port id. */
    std::optional<rte_ether_addr> mac;
    /* Let the NIC fill IPv4 header checksums when it can. */
    bool use_ipv4_csum_offload = true;
};

struct ethdev_counters {
    uint64_t rx_pkts = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_pkts = 0;
    uint64_t tx_bytes = 0;
    uint64_t tx_full = 0;     /* frames the PMD did not take (ring full); the caller frees them */
    uint64_t tx_too_long = 0; /* frames above max_frame_len, dropped before the PMD */
};
UROCE_API void ethdev_counters_add(ethdev_counters &to, const ethdev_counters &c);

/* Exported whole: it is polymorphic (a netdev), and user code that checks
 * dynamic types (UBSan's vptr check, dynamic_cast) needs its type_info. */
class UROCE_API ethdev_port final : public netdev {
  public:
    /* Opens and starts the port; nullptr with err set (one line naming the problem). */
    static std::unique_ptr<ethdev_port> open(const ethdev_config &cfg, std::string &err);
    ~ethdev_port() override;
    ethdev_port(const ethdev_port &) = delete;
    ethdev_port &operator=(const ethdev_port &) = delete;

    /* Each queue is used by one thread (its shard's lcore); so are its counters. */
    uint16_t rx_burst(uint16_t queue, rte_mbuf **pkts, uint16_t n) {
        uint16_t got = rte_eth_rx_burst(port_id_, queue, pkts, n);
        ethdev_counters &c = qcnt_[queue].c;
        c.rx_pkts += got;
        for (uint16_t i = 0; i < got; i++)
            c.rx_bytes += pkts[i]->pkt_len;
        return got;
    }
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override { return tx_burst(0, pkts, n); }
    uint16_t tx_burst(uint16_t queue, rte_mbuf **pkts, uint16_t n);

    const uint8_t *mac() const override { return mac_.addr_bytes; }
    netdev_caps caps() const override { return caps_; }

    uint16_t port_id() const { return port_id_; }
    rte_mempool *pool() const { return pool_; }
    const std::string &driver_name() const { return driver_name_; }
    /* The sum over the queues (a snapshot when other lcores run them). */
    ethdev_counters counters() const;
    const ethdev_counters &queue_counters(uint16_t queue) const { return qcnt_[queue].c; }
    uint16_t rx_queues() const { return rx_queues_; }
    uint16_t tx_queues() const { return tx_queues_; }
    bool rx_scatter() const { return rx_scatter_; }
    bool tx_multi_seg() const { return tx_multi_seg_; }
    bool rss() const { return rss_; }
    bool link_up() const {
        rte_eth_link link{};
        return rte_eth_link_get_nowait(port_id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
    }
    /* Fault in, in this process, the memory the PMD shares with its peer:
     * net_memif's rings and packet buffers, which exist from link-up (the
     * peers map them when they connect). Otherwise the first frame through
     * each page pays for the fault on the data path: on a shadow-paged VM
     * the first 512 send_lat iterations took 35 us instead of 1.6
     * (doc/performance.md). Control path; call it once the link is up (the
     * apps' stack and compat's runtime do). Returns the bytes touched: 0
     * for a port that shares no memory. */
    size_t prefault_shared_memory() const;
    /* The largest IB path MTU (256..4096) this port's frame size carries. */
    uint32_t max_ib_mtu() const;
    /* One-line summary: driver, MAC, MTU, offloads. */
    std::string describe() const;

  private:
    ethdev_port() = default;
    UROCE_LOCAL bool setup(const ethdev_config &cfg, std::string &err);

    uint16_t port_id_ = RTE_MAX_ETHPORTS;
    bool created_vdev_ = false;
    bool started_ = false;
    std::string vdev_name_;
    std::string driver_name_;
    rte_ether_addr mac_{};
    rte_mempool *pool_ = nullptr;
    netdev_caps caps_{};
    bool rx_scatter_ = false;
    bool tx_multi_seg_ = false;
    bool rss_ = false;
    uint16_t rx_queues_ = 1;
    uint16_t tx_queues_ = 1;
    /* One cache line per queue: lcores counting side by side share none. */
    struct alignas(RTE_CACHE_LINE_SIZE) queue_cnt {
        ethdev_counters c;
    };
    std::vector<queue_cnt> qcnt_{1};
};

/* One TX queue of a port as a netdev: the output of shard i's engine. */
class UROCE_API ethdev_tx_queue final : public netdev {
  public:
    ethdev_tx_queue(ethdev_port &port, uint16_t queue) : port_(port), queue_(queue) {}
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        return port_.tx_burst(queue_, pkts, n);
    }
    const uint8_t *mac() const override { return port_.mac(); }
    netdev_caps caps() const override { return port_.caps(); }

  private:
    ethdev_port &port_;
    uint16_t queue_;
};

/* PMD traps measured here, fixed in the vdev arguments unless the caller
 * set them: af_packet's default 2048-byte ring frames truncate jumbo frames
 * silently (adds framesz=10240,blocksz=20480,framecnt=512); memif duplicates
 * frames that span several of its 2048-byte buffers (adds bsize=10240). */
UROCE_API std::string ethdev_fixup_vdev_args(const std::string &vdev);

/* ---------------------------------------------------------------- the loop over a port
 *
 *     while (!stop) ethdev_engine_poll(eng, port);
 *
 * A custom dataplane that owns the port calls eng.rx_burst() with the frames
 * it wants the stack to see and eng.poll() instead. With several shards,
 * lcore i runs  while (!stop) ethdev_shard_poll(shard_i, port);
 */

/* Receive a burst, dispatch it, run the stack's timers and send queues.
 * Returns the frames received plus sent: 0 means the loop was idle. */
static inline unsigned ethdev_engine_poll(engine &eng, ethdev_port &port, uint16_t queue = 0) {
    rte_mbuf *pkts[engine::burst];
    uint16_t n = port.rx_burst(queue, pkts, engine::burst);
    eng.rx_burst(pkts, n);
    return n + eng.poll();
}

/* One iteration of shard sh's loop on its lcore: its RX queue when it has
 * one (without RSS only shard 0 reads the port), the fan-out, its inbox,
 * its engine's progress. Returns 0 when the iteration was idle. */
static inline unsigned ethdev_shard_poll(shard &sh, ethdev_port &port) {
    uint16_t n = 0;
    if (sh.index() < port.rx_queues()) {
        rte_mbuf *pkts[engine::burst];
        n = port.rx_burst(uint16_t(sh.index()), pkts, engine::burst);
        sh.rx_burst(pkts, n);
    }
    return n + sh.poll();
}

} // namespace uroce

#endif

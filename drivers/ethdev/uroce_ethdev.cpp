/* SPDX-License-Identifier: BSD-3-Clause
 * DPDK ethdev driver: port setup, offload discovery, burst TX accounting.
 */
#include <uroce/ethdev.h>

#include <cstdio>
#include <fstream>

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <uroce/eal.h>
#include <uroce/shard.h>

#include "uroce_packed_pool.h"

namespace uroce {

namespace {

/* Ethernet header plus one 802.1Q tag; the FCS is not in the mbuf. */
constexpr uint32_t l2_overhead = RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN;
/* Frames net_ring/net_memif/net_pcap carry when the PMD states no limit. */
constexpr uint32_t default_jumbo_frame = 9000 + l2_overhead;
/* af_packet ring frames large enough for a 9000-byte MTU (doc/dpdk-ports.md). */
constexpr uint32_t af_packet_jumbo_framesz = 10240;

std::string devarg(const std::string &vdev, const std::string &key) {
    size_t pos = 0;
    while ((pos = vdev.find(key + "=", pos)) != std::string::npos) {
        if (pos == 0 || vdev[pos - 1] == ',') {
            size_t start = pos + key.size() + 1;
            size_t end = vdev.find(',', start);
            return vdev.substr(start, end == std::string::npos ? std::string::npos : end - start);
        }
        pos++;
    }
    return {};
}

/* The kernel interface's MTU, for PMDs that sit on a kernel netdev. */
uint32_t kernel_iface_mtu(const std::string &iface) {
    std::ifstream f("/sys/class/net/" + iface + "/mtu");
    uint32_t mtu = 0;
    f >> mtu;
    return mtu;
}

bool is_af_packet(const std::string &name) {
    return name.rfind("net_af_packet", 0) == 0;
}

/* Shared-memory and file PMDs report a 1518-byte max_rx_pktlen but carry
 * 9000-byte frames unchanged (measured: doc/dpdk-ports.md). */
bool carries_jumbo_unasked(const std::string &driver) {
    return driver == "net_memif" || driver == "net_ring" || driver == "net_pcap";
}

} // namespace

std::string ethdev_fixup_vdev_args(const std::string &vdev) {
    std::string name = vdev.substr(0, vdev.find(','));
    /* memif in DPDK 22.11 delivers frames that span several of its 2048-byte
     * buffers more than once under load (measured: 1079 frames sent, 902432
     * received); one buffer per jumbo frame avoids the chained path. */
    if (name.rfind("net_memif", 0) == 0 && devarg(vdev, "bsize").empty())
        return vdev + ",bsize=10240";
    if (!is_af_packet(name) || !devarg(vdev, "framesz").empty()) return vdev;
    std::string out = vdev;
    for (const char *kv : {"framesz=10240", "blocksz=20480", "framecnt=512"}) {
        std::string key = std::string(kv).substr(0, std::string(kv).find('='));
        if (devarg(out, key).empty()) out += std::string(",") + kv;
    }
    return out;
}

std::unique_ptr<ethdev_port> ethdev_port::open(const ethdev_config &cfg, std::string &err) {
    std::unique_ptr<ethdev_port> p(new ethdev_port());
    if (!p->setup(cfg, err)) return nullptr;
    return p;
}

bool ethdev_port::setup(const ethdev_config &cfg, std::string &err) {
    char msg[512];
    std::string vdev_args;
    if (!cfg.vdev.empty()) {
        std::string full = ethdev_fixup_vdev_args(cfg.vdev);
        vdev_name_ = full.substr(0, full.find(','));
        vdev_args = full.find(',') == std::string::npos ? "" : full.substr(full.find(',') + 1);
        if (rte_eth_dev_get_port_by_name(vdev_name_.c_str(), &port_id_) != 0) {
            if (int rc = rte_vdev_init(vdev_name_.c_str(), vdev_args.c_str()); rc != 0) {
                /* No driver of that name: DPDK says only ENOTSUP. */
                if (std::string missing = missing_vdev_driver(vdev_name_); !missing.empty()) {
                    err = "cannot create vdev '" + full + "': " + missing;
                    return false;
                }
                std::snprintf(msg, sizeof(msg),
                              "cannot create vdev '%s': %s (the driver's log says why)",
                              full.c_str(), rte_strerror(rc < 0 ? -rc : rte_errno));
                err = msg;
                return false;
            }
            created_vdev_ = true;
            if (rte_eth_dev_get_port_by_name(vdev_name_.c_str(), &port_id_) != 0) {
                err = "vdev '" + vdev_name_ + "' created no ethdev port";
                return false;
            }
        }
    } else {
        port_id_ = cfg.port_id;
    }
    if (!rte_eth_dev_is_valid_port(port_id_)) {
        std::snprintf(msg, sizeof(msg), "no DPDK port %u (%u ports available)", port_id_,
                      rte_eth_dev_count_avail());
        err = msg;
        return false;
    }

    rte_eth_dev_info info;
    if (int rc = rte_eth_dev_info_get(port_id_, &info); rc != 0) {
        std::snprintf(msg, sizeof(msg), "port %u: cannot read device info: %s", port_id_,
                      rte_strerror(-rc));
        err = msg;
        return false;
    }
    driver_name_ = info.driver_name ? info.driver_name : "?";
    /* RSS on UDP ports spreads flows (QPs: their source ports differ) over queues. */
    const uint64_t udp_rss = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
    uint16_t n_rx = cfg.rx_queues, n_tx = cfg.tx_queues;
    if (cfg.shards > 0) {
        /* Every shard sends on its own queue; they receive on their own
         * queues only where RSS spreads the flows, else shard 0 reads the
         * one queue and fans out in software (net_ring, memif, af_packet
         * without qpairs, tap). */
        n_tx = cfg.shards;
        n_rx = cfg.shards > 1 && (info.flow_type_rss_offloads & udp_rss) &&
                       info.max_rx_queues >= cfg.shards
                   ? cfg.shards
                   : 1;
    }
    if (n_rx > info.max_rx_queues || n_tx > info.max_tx_queues) {
        std::snprintf(msg, sizeof(msg),
                      "port %u (%s): %u rx / %u tx queues asked, the PMD has %u / %u%s", port_id_,
                      driver_name_.c_str(), n_rx, n_tx, info.max_rx_queues, info.max_tx_queues,
                      cfg.shards > 1 ? " (one TX queue per shard)" : "");
        err = msg;
        return false;
    }
    rx_queues_ = n_rx;
    tx_queues_ = n_tx;
    qcnt_.assign(std::max(n_rx, n_tx), queue_cnt{});

    /* The largest frame this port carries. PMDs that report no limit (ring,
     * memif, pcap: UINT32_MAX or 0) get a 9000-byte jumbo MTU; af_packet is
     * bounded by its kernel interface's MTU and its ring frame size; the
     * others by max_rx_pktlen (tap: 1522). */
    uint32_t max_frame = info.max_rx_pktlen;
    if (max_frame == 0 || max_frame > 65535 || carries_jumbo_unasked(driver_name_))
        max_frame = default_jumbo_frame;
    if (is_af_packet(driver_name_) || is_af_packet(vdev_name_)) {
        std::string iface = devarg(cfg.vdev, "iface");
        uint32_t kmtu = iface.empty() ? 0 : kernel_iface_mtu(iface);
        std::string fs = devarg(ethdev_fixup_vdev_args(cfg.vdev), "framesz");
        uint32_t framesz = fs.empty() ? af_packet_jumbo_framesz : uint32_t(std::stoul(fs));
        /* af_packet's TPACKET_V2 frame holds a header before the packet. */
        uint32_t ring_limit = framesz > 66 ? framesz - 66 : 0;
        max_frame = std::min(kmtu ? kmtu + l2_overhead : default_jumbo_frame, ring_limit);
        if (cfg.mtu && kmtu && cfg.mtu > kmtu) {
            std::snprintf(
                msg, sizeof(msg),
                "af_packet on %s: kernel MTU is %u, %u asked; set it with 'ip link set %s mtu %u' "
                "(ethdev cannot raise it)",
                iface.c_str(), kmtu, cfg.mtu, iface.c_str(), cfg.mtu);
            err = msg;
            return false;
        }
    }

    rx_scatter_ = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER;
    tx_multi_seg_ = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;

    rte_eth_conf conf{};
    if (rx_scatter_) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
    if (tx_multi_seg_) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    caps_.ipv4_csum_offload =
        cfg.use_ipv4_csum_offload && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);
    if (caps_.ipv4_csum_offload) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    if (n_rx > 1 && (info.flow_type_rss_offloads & udp_rss)) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & udp_rss;
        rss_ = true;
    }

    if (int rc = rte_eth_dev_configure(port_id_, n_rx, n_tx, &conf); rc != 0) {
        std::snprintf(msg, sizeof(msg), "port %u (%s): configure failed: %s", port_id_,
                      driver_name_.c_str(), rte_strerror(-rc));
        err = msg;
        return false;
    }
    if (cfg.mtu && !is_af_packet(driver_name_)) {
        int rc = rte_eth_dev_set_mtu(port_id_, uint16_t(cfg.mtu));
        /* PMDs without MTU control (net_ring) carry any frame: the limit is then ours. */
        if (rc != 0 && rc != -ENOTSUP) {
            std::snprintf(msg, sizeof(msg), "port %u (%s): cannot set MTU %u (max %u): %s",
                          port_id_, driver_name_.c_str(), cfg.mtu, info.max_mtu, rte_strerror(-rc));
            err = msg;
            return false;
        }
        max_frame = std::min(max_frame, cfg.mtu + l2_overhead);
    }
    caps_.max_frame_len = max_frame;

    /* RX mbufs: 2 KB segments where the PMD scatters, else one mbuf per whole
     * frame (af_packet needs room for its whole ring frame). */
    uint32_t room = cfg.mbuf_data_room;
    if (room == 0) {
        uint32_t need = rx_scatter_ ? 2048 : max_frame;
        if (is_af_packet(driver_name_)) need = std::max<uint32_t>(need, af_packet_jumbo_framesz);
        room = std::max<uint32_t>(need, info.min_rx_bufsize) + RTE_PKTMBUF_HEADROOM;
    }
    if (room > UINT16_MAX) room = UINT16_MAX;
    uint32_t n_mbufs = cfg.pool_mbufs
                           ? cfg.pool_mbufs
                           : uint32_t(n_rx) * cfg.rx_desc + uint32_t(n_tx) * cfg.tx_desc + 4096;
    /* With shards, received frames also wait in the shards' inboxes. */
    if (!cfg.pool_mbufs && cfg.shards > 1)
        n_mbufs += uint32_t(cfg.shards) * shard_group::default_ring_size;
    char pool_name[RTE_MEMPOOL_NAMESIZE];
    std::snprintf(pool_name, sizeof(pool_name), "uroce_port%u", port_id_);
    pool_ = pktmbuf_pool_create(pool_name, n_mbufs, 256, uint16_t(room),
                                int(rte_eth_dev_socket_id(port_id_)));
    if (!pool_) {
        std::snprintf(
            msg, sizeof(msg),
            "port %u: cannot create a pool of %u mbufs of %u bytes: %s (give EAL more memory, -m)",
            port_id_, n_mbufs, room, rte_strerror(rte_errno));
        err = msg;
        return false;
    }

    int socket = rte_eth_dev_socket_id(port_id_);
    for (uint16_t q = 0; q < n_rx; q++) {
        rte_eth_rxconf rxc = info.default_rxconf;
        rxc.offloads = conf.rxmode.offloads;
        if (int rc = rte_eth_rx_queue_setup(port_id_, q, cfg.rx_desc, socket, &rxc, pool_);
            rc != 0) {
            std::snprintf(msg, sizeof(msg), "port %u: rx queue %u setup failed: %s", port_id_, q,
                          rte_strerror(-rc));
            err = msg;
            return false;
        }
    }
    for (uint16_t q = 0; q < n_tx; q++) {
        rte_eth_txconf txc = info.default_txconf;
        txc.offloads = conf.txmode.offloads;
        if (int rc = rte_eth_tx_queue_setup(port_id_, q, cfg.tx_desc, socket, &txc); rc != 0) {
            std::snprintf(msg, sizeof(msg), "port %u: tx queue %u setup failed: %s", port_id_, q,
                          rte_strerror(-rc));
            err = msg;
            return false;
        }
    }
    if (int rc = rte_eth_dev_start(port_id_); rc != 0) {
        std::snprintf(msg, sizeof(msg), "port %u (%s): start failed: %s", port_id_,
                      driver_name_.c_str(), rte_strerror(-rc));
        err = msg;
        return false;
    }
    started_ = true;
    rte_eth_macaddr_get(port_id_, &mac_);
    bool promiscuous = cfg.promiscuous;
    if (cfg.mac) {
        rte_ether_addr want = *cfg.mac;
        if (rte_eth_dev_default_mac_addr_set(port_id_, &want) != 0) promiscuous = true;
        mac_ = want;
    } else if (rte_is_zero_ether_addr(&mac_)) {
        /* 02:00:00:75:72:<port>: locally administered ("ur" for uroce). */
        mac_ = rte_ether_addr{{0x02, 0x00, 0x00, 0x75, 0x72, uint8_t(port_id_)}};
        promiscuous = true;
    }
    if (promiscuous) rte_eth_promiscuous_enable(port_id_); /* not every PMD has it; harmless */
    return true;
}

ethdev_port::~ethdev_port() {
    if (started_) rte_eth_dev_stop(port_id_);
    if (rte_eth_dev_is_valid_port(port_id_)) rte_eth_dev_close(port_id_);
    if (created_vdev_) rte_vdev_uninit(vdev_name_.c_str());
    if (pool_) rte_mempool_free(pool_);
}

uint16_t ethdev_port::tx_burst(uint16_t queue, rte_mbuf **pkts, uint16_t n) {
    /* A frame above the port's limit would be truncated or dropped by the
     * PMD without a trace (af_packet, tap): refuse it here, counted. Frames
     * refused are returned to the caller like a full ring. */
    uint16_t ok = 0;
    uint64_t bytes = 0;
    while (ok < n && pkts[ok]->pkt_len <= caps_.max_frame_len)
        bytes += pkts[ok++]->pkt_len;
    queue = uint16_t(queue % tx_queues_);
    uint16_t sent = rte_eth_tx_burst(port_id_, queue, pkts, ok);
    /* What the PMD took is its own now (af_packet frees it at once): count
     * the bytes from the frames it refused, which are still ours. */
    for (uint16_t i = sent; i < ok; i++)
        bytes -= pkts[i]->pkt_len;
    ethdev_counters &c = qcnt_[queue].c;
    c.tx_bytes += bytes;
    c.tx_pkts += sent;
    c.tx_full += ok - sent;
    if (ok < n && sent == ok) c.tx_too_long++;
    return sent;
}

void ethdev_counters_add(ethdev_counters &to, const ethdev_counters &c) {
    to.rx_pkts += c.rx_pkts;
    to.rx_bytes += c.rx_bytes;
    to.tx_pkts += c.tx_pkts;
    to.tx_bytes += c.tx_bytes;
    to.tx_full += c.tx_full;
    to.tx_too_long += c.tx_too_long;
}

ethdev_counters ethdev_port::counters() const {
    ethdev_counters sum;
    for (const queue_cnt &q : qcnt_)
        ethdev_counters_add(sum, q.c);
    return sum;
}

uint32_t ethdev_port::max_ib_mtu() const {
    /* RoCEv2 overhead above the IB payload: Eth 14 + (VLAN 4) + IPv6 40 + UDP 8 +
     * BTH 12 + the largest extension header 28 + ICRC 4; rxe budgets 80 bytes
     * above the IP MTU the same way (rxe.c, eth_mtu_int_to_enum). */
    const uint32_t overhead = l2_overhead + 40 + 8 + 12 + 28 + 4;
    for (uint32_t mtu = 4096; mtu >= 256; mtu /= 2)
        if (mtu + overhead <= caps_.max_frame_len) return mtu;
    return 0;
}

std::string ethdev_port::describe() const {
    char buf[320], queues[48] = "";
    if (rx_queues_ > 1 || tx_queues_ > 1)
        std::snprintf(queues, sizeof(queues), " queues rx %u tx %u", rx_queues_, tx_queues_);
    std::snprintf(buf, sizeof(buf),
                  "port %u %s mac %02x:%02x:%02x:%02x:%02x:%02x max-frame %u ib-mtu %u%s%s%s%s%s",
                  port_id_, driver_name_.c_str(), mac_.addr_bytes[0], mac_.addr_bytes[1],
                  mac_.addr_bytes[2], mac_.addr_bytes[3], mac_.addr_bytes[4], mac_.addr_bytes[5],
                  caps_.max_frame_len, max_ib_mtu(),
                  caps_.ipv4_csum_offload ? " ipv4-csum-offload" : "",
                  tx_multi_seg_ ? " tx-multi-seg" : "", rx_scatter_ ? " rx-scatter" : "",
                  rss_ ? " rss-udp" : "", queues);
    return buf;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * ethdev driver tests on vdevs that need no NIC: net_ring loopback, net_null.
 */
#include <gtest/gtest.h>

#include <cstring>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "eal_env.h"
#include <uroce/ethdev.h>

namespace uroce {
namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new test::eal_env("512"));

/* A frame of len bytes (byte i = i * 7), chained when one mbuf cannot hold it. */
rte_mbuf *make_frame(rte_mempool *pool, uint32_t len) {
    rte_mbuf *head = rte_pktmbuf_alloc(pool);
    if (!head) return nullptr;
    for (uint32_t off = 0; off < len;) {
        rte_mbuf *last = rte_pktmbuf_lastseg(head);
        uint32_t room = rte_pktmbuf_tailroom(last);
        if (room == 0) {
            rte_mbuf *seg = rte_pktmbuf_alloc(pool);
            if (!seg || rte_pktmbuf_chain(head, seg) != 0) return nullptr;
            continue;
        }
        uint32_t chunk = std::min(room, len - off);
        auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(head, uint16_t(chunk)));
        for (uint32_t i = 0; i < chunk; i++)
            d[i] = uint8_t((off + i) * 7);
        off += chunk;
    }
    return head;
}

TEST(ethdev, af_packet_gets_jumbo_ring_frames) {
    EXPECT_EQ(ethdev_fixup_vdev_args("net_af_packet0,iface=veth0"),
              "net_af_packet0,iface=veth0,framesz=10240,blocksz=20480,framecnt=512");
    /* The user's own ring geometry is kept. */
    EXPECT_EQ(ethdev_fixup_vdev_args("net_af_packet0,iface=veth0,framesz=4096"),
              "net_af_packet0,iface=veth0,framesz=4096");
    EXPECT_EQ(ethdev_fixup_vdev_args("net_ring0"), "net_ring0");
    EXPECT_EQ(ethdev_fixup_vdev_args("net_memif0,role=client"),
              "net_memif0,role=client,bsize=10240");
    EXPECT_EQ(ethdev_fixup_vdev_args("net_memif0,bsize=4096"), "net_memif0,bsize=4096");
}

TEST(ethdev, ring_loopback_carries_jumbo_frames) {
    ethdev_config cfg;
    cfg.vdev = "net_ring_ut0";
    std::string err;
    auto port = ethdev_port::open(cfg, err);
    ASSERT_NE(port, nullptr) << err;
    EXPECT_EQ(port->driver_name(), "net_ring");
    EXPECT_EQ(port->max_ib_mtu(), 4096u) << port->describe();
    EXPECT_NE(port->describe().find("net_ring"), std::string::npos);

    /* net_ring's single port is a loopback: what goes out comes back. */
    for (uint32_t len : {60u, 1500u, 4096u + 78u, 9000u}) {
        rte_mbuf *m = make_frame(port->pool(), len);
        ASSERT_NE(m, nullptr);
        ASSERT_EQ(port->tx_burst(&m, 1), 1);
        rte_mbuf *rx[4];
        uint16_t n = port->rx_burst(0, rx, 4);
        ASSERT_EQ(n, 1);
        EXPECT_EQ(rx[0]->pkt_len, len);
        uint8_t byte;
        EXPECT_EQ(*static_cast<const uint8_t *>(rte_pktmbuf_read(rx[0], len - 1, 1, &byte)),
                  uint8_t((len - 1) * 7));
        rte_pktmbuf_free(rx[0]);
    }
    EXPECT_EQ(port->counters().tx_pkts, 4u);
    EXPECT_EQ(port->counters().rx_pkts, 4u);
}

TEST(ethdev, too_long_frames_are_refused_and_counted) {
    ethdev_config cfg;
    cfg.vdev = "net_ring_ut1";
    cfg.mtu = 1500;
    std::string err;
    auto port = ethdev_port::open(cfg, err);
    ASSERT_NE(port, nullptr) << err;
    EXPECT_EQ(port->caps().max_frame_len, 1518u);
    EXPECT_EQ(port->max_ib_mtu(), 1024u); /* as rxe: netdev MTU 1500 gives IB MTU 1024 */
    rte_mbuf *m = make_frame(port->pool(), 2000);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(port->tx_burst(&m, 1), 0);
    EXPECT_EQ(port->counters().tx_too_long, 1u);
    rte_pktmbuf_free(m);
}

/* Shards on a PMD without RSS (net_ring): one TX queue per shard, one RX
 * queue (shard 0 fans out), counters per queue and summed. */
TEST(ethdev, shards_without_rss_get_tx_queues_and_one_rx_queue) {
    /* Both TX queues feed the same multi-producer ring, read back by RX queue 0. */
    rte_ring *r = rte_ring_create("ethdev_ut_sh", 256, SOCKET_ID_ANY, RING_F_SC_DEQ);
    ASSERT_NE(r, nullptr);
    rte_ring *tx[2] = {r, r};
    int pid = rte_eth_from_rings("net_ring_ut_sh", &r, 1, tx, 2, SOCKET_ID_ANY);
    ASSERT_GE(pid, 0);
    ethdev_config cfg;
    cfg.port_id = uint16_t(pid);
    cfg.shards = 2;
    std::string err;
    auto port = ethdev_port::open(cfg, err);
    ASSERT_NE(port, nullptr) << err;
    EXPECT_EQ(port->rx_queues(), 1);
    EXPECT_EQ(port->tx_queues(), 2);
    EXPECT_FALSE(port->rss());
    EXPECT_NE(port->describe().find("queues rx 1 tx 2"), std::string::npos) << port->describe();

    ethdev_tx_queue q1(*port, 1);
    EXPECT_EQ(std::memcmp(q1.mac(), port->mac(), 6), 0);
    EXPECT_EQ(q1.caps().max_frame_len, port->caps().max_frame_len);
    rte_mbuf *m[3] = {make_frame(port->pool(), 100), make_frame(port->pool(), 200),
                      make_frame(port->pool(), 300)};
    ASSERT_EQ(port->tx_burst(m, 1), 1); /* queue 0 */
    ASSERT_EQ(q1.tx_burst(m + 1, 2), 2);
    rte_mbuf *rx[4];
    ASSERT_EQ(port->rx_burst(0, rx, 4), 3);
    rte_pktmbuf_free_bulk(rx, 3);
    EXPECT_EQ(port->queue_counters(0).tx_pkts, 1u);
    EXPECT_EQ(port->queue_counters(1).tx_pkts, 2u);
    EXPECT_EQ(port->queue_counters(1).tx_bytes, 500u);
    EXPECT_EQ(port->queue_counters(0).rx_pkts, 3u);
    EXPECT_EQ(port->counters().tx_pkts, 3u);
    EXPECT_EQ(port->counters().tx_bytes, 600u);
    EXPECT_EQ(port->counters().rx_bytes, 600u);
    port.reset();
    rte_ring_free(r);
}

/* A PMD that reports RSS on UDP (net_null does): one RX queue per shard. */
TEST(ethdev, shards_with_rss_get_an_rx_queue_each) {
    ethdev_config cfg;
    cfg.vdev = "net_null_ut_sh";
    cfg.shards = 2;
    std::string err;
    auto port = ethdev_port::open(cfg, err);
    ASSERT_NE(port, nullptr) << err;
    EXPECT_EQ(port->rx_queues(), 2);
    EXPECT_EQ(port->tx_queues(), 2);
    EXPECT_TRUE(port->rss());
    EXPECT_NE(port->describe().find("rss-udp queues rx 2 tx 2"), std::string::npos)
        << port->describe();
}

TEST(ethdev, shards_need_a_tx_queue_each) {
    rte_ring *r = rte_ring_create("ethdev_ut_sh1", 256, SOCKET_ID_ANY, 0);
    ASSERT_NE(r, nullptr);
    int pid = rte_eth_from_rings("net_ring_ut_sh1", &r, 1, &r, 1, SOCKET_ID_ANY);
    ASSERT_GE(pid, 0);
    ethdev_config cfg;
    cfg.port_id = uint16_t(pid);
    cfg.shards = 2;
    std::string err;
    EXPECT_EQ(ethdev_port::open(cfg, err), nullptr);
    EXPECT_NE(err.find("one TX queue per shard"), std::string::npos) << err;
    rte_eth_dev_close(uint16_t(pid));
    rte_ring_free(r);
}

TEST(ethdev, errors_name_the_problem) {
    std::string err;
    ethdev_config bad_port;
    bad_port.port_id = 77;
    EXPECT_EQ(ethdev_port::open(bad_port, err), nullptr);
    EXPECT_NE(err.find("no DPDK port 77"), std::string::npos) << err;

    ethdev_config bad_vdev;
    bad_vdev.vdev = "net_nosuchpmd0";
    EXPECT_EQ(ethdev_port::open(bad_vdev, err), nullptr);
    EXPECT_NE(err.find("cannot create vdev 'net_nosuchpmd0'"), std::string::npos) << err;

    ethdev_config too_many;
    too_many.vdev = "net_null_ut0";
    too_many.rx_queues = 4000; /* above RTE_MAX_QUEUES_PER_PORT */
    EXPECT_EQ(ethdev_port::open(too_many, err), nullptr);
    EXPECT_NE(err.find("queues asked"), std::string::npos) << err;
}

} // namespace
} // namespace uroce

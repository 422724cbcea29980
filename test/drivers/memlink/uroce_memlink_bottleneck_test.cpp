/* SPDX-License-Identifier: BSD-3-Clause
 * The model bottleneck (uroce_memlink_bottleneck.cpp): frames leave at the
 * configured rate, the queue is limited (drops counted), ECN-capable frames
 * are marked by the RED-like curve and Not-ECT frames never are, the delay
 * is added, and the queue-depth quantiles follow what arrivals saw.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <uroce/hdr.h>

#include "uroce_memlink.h"

using namespace uroce;

namespace {

class eal_env : public ::testing::Environment {
  public:
    void SetUp() override {
        static const char *argv[] = {
            "bottleneck_test", "--no-huge",      "-m", "128", "--no-pci",
            "--no-shconf",     "--no-telemetry", "-l", "0",   "--log-level=*:warning"};
        ASSERT_GE(rte_eal_init(10, const_cast<char **>(argv)), 0);
    }
};

rte_mempool *pool() {
    static rte_mempool *mp =
        rte_pktmbuf_pool_create("bottleneck_t", 8191, 256, 0, 2048 + 128, SOCKET_ID_ANY);
    return mp;
}

const uint8_t mac1[6] = {2, 0, 0, 0, 0, 1}, mac2[6] = {2, 0, 0, 0, 0, 2};

/* An Ethernet + IPv4 frame of len bytes to mac2 with the given TOS and a
 * valid header checksum. */
rte_mbuf *ip_frame(uint16_t len, uint8_t tos) {
    rte_mbuf *m = rte_pktmbuf_alloc(pool());
    uint8_t *p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, len));
    std::memset(p, 0, len);
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, mac2, 6);
    std::memcpy(eth->src, mac1, 6);
    eth->set_ether_type(ether_type_ipv4);
    auto *ip = reinterpret_cast<ipv4_hdr *>(p + sizeof(eth_hdr));
    ip->version_ihl = 0x45;
    ip->tos = tos;
    ip->set_total_length(uint16_t(len - sizeof(eth_hdr)));
    ip->ttl = 64;
    ip->protocol = ip_proto_udp;
    /* rte_raw_cksum sums native-order words: its complement goes in as is */
    const uint16_t ck = uint16_t(~rte_raw_cksum(ip, 20));
    std::memcpy(ip->checksum_be, &ck, 2);
    return m;
}

uint8_t tos_of(rte_mbuf *m) {
    return rte_pktmbuf_mtod_offset(m, const ipv4_hdr *, sizeof(eth_hdr))->tos;
}

TEST(bottleneck, serves_at_the_rate_and_adds_the_delay) {
    manual_clock clk(1000);
    memlink link(memlink_config{}, &clk);
    memlink_port *a = link.add_port(mac1), *b = link.add_port(mac2);
    bottleneck_config bc;
    bc.rate_mbps = 8000; /* 1 byte per ns */
    bc.delay_ns = 500;
    bc.ecn = false;
    b->set_bottleneck(bc);
    for (int i = 0; i < 4; ++i) {
        rte_mbuf *m = ip_frame(1000, 0);
        ASSERT_EQ(a->tx_burst(&m, 1), 1);
    }
    EXPECT_EQ(b->bottleneck_model()->backlog(clk.now_ns()), 4000u);
    rte_mbuf *got[8];
    /* the first frame leaves after 1000 ns on the wire, arrives 500 ns later */
    clk.set(1000 + 1000 + 499);
    EXPECT_EQ(b->rx_burst(got, 8), 0);
    clk.set(1000 + 1000 + 500);
    ASSERT_EQ(b->rx_burst(got, 8), 1);
    rte_pktmbuf_free(got[0]);
    clk.set(1000 + 4000 + 500);
    EXPECT_EQ(b->rx_burst(got, 8), 3);
    rte_pktmbuf_free_bulk(got, 3);
    EXPECT_EQ(b->bottleneck_model()->backlog(clk.now_ns()), 0u);
    EXPECT_EQ(b->bottleneck_model()->stats().sent_bytes, 4000u);
}

TEST(bottleneck, drops_when_full) {
    manual_clock clk(0);
    memlink link(memlink_config{}, &clk);
    memlink_port *a = link.add_port(mac1), *b = link.add_port(mac2);
    bottleneck_config bc;
    bc.rate_mbps = 8000;
    bc.queue_bytes = 5000;
    b->set_bottleneck(bc);
    for (int i = 0; i < 8; ++i) {
        rte_mbuf *m = ip_frame(1000, 0);
        a->tx_burst(&m, 1);
    }
    const bottleneck_stats &s = b->bottleneck_model()->stats();
    EXPECT_EQ(s.sent, 5u);
    EXPECT_EQ(s.dropped, 3u);
    EXPECT_EQ(link.stats().dropped, 3u);
    /* room again once the queue drains */
    clk.set(2000);
    rte_mbuf *m = ip_frame(1000, 0);
    a->tx_burst(&m, 1);
    EXPECT_EQ(s.sent, 6u);
    rte_mbuf *got[16];
    clk.set(100000);
    EXPECT_EQ(b->rx_burst(got, 16), 6);
    rte_pktmbuf_free_bulk(got, 6);
}

/* Below Kmin nothing is marked, above Kmax everything ECN-capable is, in
 * between about Pmax * (q - Kmin) / (Kmax - Kmin); Not-ECT never is. */
TEST(bottleneck, red_like_marking) {
    manual_clock clk(0);
    memlink_config lc;
    lc.seed = 7;
    memlink link(lc, &clk);
    memlink_port *a = link.add_port(mac1), *b = link.add_port(mac2);
    bottleneck_config bc;
    bc.rate_mbps = 8000;
    bc.queue_bytes = 1u << 20;
    bc.kmin_bytes = 10000;
    bc.kmax_bytes = 50000;
    bc.pmax = 0.5;
    b->set_bottleneck(bc);
    std::vector<uint8_t> tos;
    for (int i = 0; i < 80; ++i) { /* backlog seen: 0, 1000, ..., 79000 */
        rte_mbuf *m = ip_frame(1000, i % 2 ? 0x02 : 0x00);
        a->tx_burst(&m, 1);
    }
    rte_mbuf *got[128];
    clk.set(1'000'000);
    ASSERT_EQ(b->rx_burst(got, 128), 80);
    unsigned mid_marked = 0, mid_ect = 0;
    for (int i = 0; i < 80; ++i) {
        uint8_t t = tos_of(got[i]);
        const auto *ip = rte_pktmbuf_mtod_offset(got[i], const ipv4_hdr *, sizeof(eth_hdr));
        EXPECT_EQ(rte_raw_cksum(ip, 20), 0xffff) << i;
        unsigned q = unsigned(i) * 1000;
        if (i % 2 == 0) {
            EXPECT_EQ(t, 0x00) << "Not-ECT frame " << i << " marked";
        } else if (q <= bc.kmin_bytes) {
            EXPECT_EQ(t, 0x02) << i;
        } else if (q >= bc.kmax_bytes) {
            EXPECT_EQ(t, 0x03) << i;
        } else {
            ++mid_ect;
            if (t == 0x03) ++mid_marked;
        }
    }
    /* 20 ECT frames between Kmin and Kmax, mean probability ~0.25 */
    EXPECT_GT(mid_marked, 0u);
    EXPECT_LT(mid_marked, mid_ect);
    rte_pktmbuf_free_bulk(got, 80);
    const bottleneck_stats &s = b->bottleneck_model()->stats();
    EXPECT_GT(s.not_ect, 0u);
    /* the arrivals saw 0..79 KB: median ~39 KB, p99 ~79 KB */
    EXPECT_NEAR(double(b->bottleneck_model()->queue_quantile(0.5)), 39.0 * 1024, 2048);
    EXPECT_NEAR(double(b->bottleneck_model()->queue_quantile(0.99)), 77.0 * 1024, 2048);
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new eal_env);
    return RUN_ALL_TESTS();
}

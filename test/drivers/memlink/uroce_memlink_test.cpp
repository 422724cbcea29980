/* SPDX-License-Identifier: BSD-3-Clause
 * memlink: routing by MAC, seeded and reproducible faults at the configured
 * rates, delay against the clock, reorder, corruption after the L2 header.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "uroce_memlink.h"

using namespace uroce;

namespace {

class eal_env : public ::testing::Environment {
  public:
    void SetUp() override {
        static const char *argv[] = {
            "memlink_test", "--no-huge",      "-m", "128", "--no-pci",
            "--no-shconf",  "--no-telemetry", "-l", "0",   "--log-level=*:warning"};
        ASSERT_GE(rte_eal_init(10, const_cast<char **>(argv)), 0);
    }
};

rte_mempool *pool() {
    static rte_mempool *mp =
        rte_pktmbuf_pool_create("memlink_t", 8191, 256, 0, 2048 + 128, SOCKET_ID_ANY);
    return mp;
}

const uint8_t mac1[6] = {2, 0, 0, 0, 0, 1}, mac2[6] = {2, 0, 0, 0, 0, 2},
              mac3[6] = {2, 0, 0, 0, 0, 3};

rte_mbuf *frame(const uint8_t *dst, uint32_t seq, uint16_t len = 128) {
    rte_mbuf *m = rte_pktmbuf_alloc(pool());
    uint8_t *p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, len));
    std::memset(p, 0, len);
    std::memcpy(p, dst, 6);
    std::memcpy(p + 20, &seq, 4);
    return m;
}

uint32_t seq_of(rte_mbuf *m) {
    uint32_t s;
    std::memcpy(&s, rte_pktmbuf_mtod(m, uint8_t *) + 20, 4);
    return s;
}

std::vector<uint32_t> drain(memlink_port *p) {
    std::vector<uint32_t> v;
    rte_mbuf *pk[64];
    uint16_t n;
    while ((n = p->rx_burst(pk, 64)) > 0) {
        for (uint16_t i = 0; i < n; ++i)
            v.push_back(seq_of(pk[i]));
        rte_pktmbuf_free_bulk(pk, n);
    }
    return v;
}

TEST(memlink_test, routes_by_mac) {
    manual_clock clk;
    memlink l({}, &clk);
    memlink_port *p1 = l.add_port(mac1), *p2 = l.add_port(mac2), *p3 = l.add_port(mac3);
    rte_mbuf *m[3] = {frame(mac2, 1), frame(mac3, 2), frame(mac1, 3)};
    EXPECT_EQ(p1->tx_burst(m, 2), 2);
    EXPECT_EQ(p2->tx_burst(m + 2, 1), 1);
    EXPECT_EQ(drain(p2), std::vector<uint32_t>{1});
    EXPECT_EQ(drain(p3), std::vector<uint32_t>{2});
    EXPECT_EQ(drain(p1), std::vector<uint32_t>{3});
    const uint8_t nobody[6] = {2, 9, 9, 9, 9, 9};
    rte_mbuf *x = frame(nobody, 4);
    p1->tx_burst(&x, 1);
    EXPECT_EQ(l.stats().no_route, 1u);
    EXPECT_EQ(memcmp(p1->mac(), mac1, 6), 0);
}

struct run_result {
    std::vector<uint32_t> got;
    memlink_stats st;
};

run_result run(uint64_t seed, double drop, double dup, double reorder, double corrupt) {
    manual_clock clk;
    memlink_config c;
    c.seed = seed;
    c.drop = drop;
    c.duplicate = dup;
    c.reorder = reorder;
    c.corrupt = corrupt;
    memlink l(c, &clk);
    memlink_port *p1 = l.add_port(mac1), *p2 = l.add_port(mac2);
    run_result r;
    for (uint32_t i = 0; i < 20000; ++i) {
        rte_mbuf *m = frame(mac2, i);
        p1->tx_burst(&m, 1);
        if (i % 16 == 15) {
            auto v = drain(p2);
            r.got.insert(r.got.end(), v.begin(), v.end());
        }
    }
    auto v = drain(p2);
    r.got.insert(r.got.end(), v.begin(), v.end());
    r.st = l.stats();
    return r;
}

TEST(memlink_test, fault_rates_and_reproducibility) {
    run_result a = run(7, 0.05, 0.01, 0.05, 0.01);
    run_result b = run(7, 0.05, 0.01, 0.05, 0.01);
    run_result c = run(8, 0.05, 0.01, 0.05, 0.01);
    EXPECT_EQ(a.got, b.got); /* same seed, same faults */
    EXPECT_NE(a.got, c.got);
    auto near = [](uint64_t n, double p) { return n > 20000 * p * 0.7 && n < 20000 * p * 1.3; };
    EXPECT_TRUE(near(a.st.dropped, 0.05)) << a.st.dropped;
    EXPECT_TRUE(near(a.st.duplicated, 0.01 * 0.95)) << a.st.duplicated;
    EXPECT_TRUE(near(a.st.reordered, 0.05 * 0.95)) << a.st.reordered;
    EXPECT_TRUE(near(a.st.corrupted, 0.01 * 0.95)) << a.st.corrupted;
    EXPECT_EQ(a.got.size(), 20000 - a.st.dropped + a.st.duplicated);
    size_t inversions = 0;
    for (size_t i = 1; i < a.got.size(); ++i)
        if (a.got[i] < a.got[i - 1]) ++inversions;
    EXPECT_GT(inversions, 500u);
}

TEST(memlink_test, corruption_spares_the_ethernet_header) {
    manual_clock clk;
    memlink_config c;
    c.corrupt = 1.0;
    memlink l(c, &clk);
    memlink_port *p1 = l.add_port(mac1), *p2 = l.add_port(mac2);
    for (int i = 0; i < 200; ++i) {
        rte_mbuf *m = frame(mac2, 0, 64);
        p1->tx_burst(&m, 1);
        rte_mbuf *r;
        ASSERT_EQ(p2->rx_burst(&r, 1), 1);
        const uint8_t *d = rte_pktmbuf_mtod(r, const uint8_t *);
        EXPECT_EQ(memcmp(d, mac2, 6), 0);
        int flipped = 0;
        for (int k = 14; k < 64; ++k)
            flipped += __builtin_popcount(d[k]);
        EXPECT_EQ(flipped, 1); /* exactly one bit, after byte 14 (seq was 0) */
        rte_pktmbuf_free(r);
    }
}

TEST(memlink_test, delay_follows_the_clock) {
    manual_clock clk(1000);
    memlink_config c;
    c.delay = 1.0;
    c.delay_ns = 50'000;
    memlink l(c, &clk);
    memlink_port *p1 = l.add_port(mac1), *p2 = l.add_port(mac2);
    rte_mbuf *m = frame(mac2, 9);
    p1->tx_burst(&m, 1);
    rte_mbuf *r;
    EXPECT_EQ(p2->rx_burst(&r, 1), 0);
    EXPECT_EQ(l.in_flight(), 1u);
    clk.advance(49'999);
    EXPECT_EQ(p2->rx_burst(&r, 1), 0);
    clk.advance(1);
    ASSERT_EQ(p2->rx_burst(&r, 1), 1);
    EXPECT_EQ(seq_of(r), 9u);
    rte_pktmbuf_free(r);
    EXPECT_EQ(l.stats().delayed, 1u);
}

TEST(memlink_test, filter_sees_and_drops) {
    manual_clock clk;
    memlink l({}, &clk);
    memlink_port *p1 = l.add_port(mac1), *p2 = l.add_port(mac2);
    int seen = 0;
    l.set_filter([&](rte_mbuf *m, const memlink_port *from) {
        EXPECT_EQ(from, p1);
        ++seen;
        return seq_of(m) != 2;
    });
    for (uint32_t i = 1; i <= 3; ++i) {
        rte_mbuf *m = frame(mac2, i);
        p1->tx_burst(&m, 1);
    }
    EXPECT_EQ(seen, 3);
    EXPECT_EQ(drain(p2), (std::vector<uint32_t>{1, 3}));
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new eal_env);
    return RUN_ALL_TESTS();
}

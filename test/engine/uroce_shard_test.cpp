/* SPDX-License-Identifier: BSD-3-Clause
 * Shard tests: which shard a frame belongs to (BTH destination QPN,
 * neighbour traffic on shard 0, the rest where it arrived), the fan-out of
 * received bursts into the owners' inboxes, and a full inbox counted.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "eal_env.h"
#include <uroce/build.h>
#include <uroce/engine.h>
#include <uroce/shard.h>

namespace uroce {
namespace {

class eal_env : public test::eal_env {
  public:
    void SetUp() override {
        test::eal_env::SetUp();
        pool = rte_pktmbuf_pool_create("shard_ut", 1023, 0, 0, RTE_PKTMBUF_HEADROOM + 2048,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
    }
    static inline rte_mempool *pool = nullptr;
};
const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env);

/* A port that takes and frees everything (the engines here send nothing). */
class sink_netdev final : public netdev {
  public:
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        rte_pktmbuf_free_bulk(pkts, n);
        return n;
    }
    const uint8_t *mac() const override { return mac_; }
    netdev_caps caps() const override { return {}; }

  private:
    uint8_t mac_[6] = {2, 0, 0, 0, 0, 1};
};

std::vector<uint8_t> roce_frame(uint32_t dest_qp, bool ipv6 = false, bool vlan = false) {
    roce_path path;
    path.has_vlan = vlan;
    path.sgid = ipv6 ? *gid::parse("fd00::1") : gid::from_ipv4(0x0a000001);
    path.dgid = ipv6 ? *gid::parse("fd00::2") : gid::from_ipv4(0x0a000002);
    path_set_ip_version(path);
    bth_fields b;
    b.opcode = to_u8(ib_opcode::rc_send_only);
    b.dest_qp = dest_qp;
    ext_fields x;
    std::vector<uint8_t> f(frame_length(path, b.opcode, 8));
    const uint8_t payload[8] = {};
    build_frame(f.data(), path, b, x, payload, 8, 1);
    return f;
}

std::vector<uint8_t> arp_frame() {
    auto f = roce_frame(0x11);
    f[12] = 0x08, f[13] = 0x06;
    return f;
}

std::vector<uint8_t> lldp_frame() {
    auto f = roce_frame(0x11);
    f[12] = 0x88, f[13] = 0xcc;
    return f;
}

rte_mbuf *mbuf_of(const std::vector<uint8_t> &bytes) {
    rte_mbuf *m = rte_pktmbuf_alloc(eal_env::pool);
    EXPECT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(bytes.size())), bytes.data(), bytes.size());
    return m;
}

unsigned owner_of(const std::vector<uint8_t> &bytes, unsigned count, unsigned self) {
    rte_mbuf *m = mbuf_of(bytes);
    unsigned o = frame_shard(m, count, self);
    rte_pktmbuf_free(m);
    return o;
}

TEST(qpn_shard, the_top_8_bits_name_the_shard) {
    EXPECT_EQ(qpn_shard(0x11, 1), 0u); /* one shard keeps rxe's QPNs */
    EXPECT_EQ(qpn_shard(0x20011, 4), 2u);
    /* QPNs of shards that do not exist, and QP0/QP1, belong to shard 0 */
    EXPECT_EQ(qpn_shard(0x1, 4), 0u);
    EXPECT_EQ(qpn_shard(0x50011, 4), 0u);
    EXPECT_EQ(qpn_shard(0xff0011, 256), 255u);
}

TEST(qpn_shard, shard_qpn_range_gives_each_shard_its_slice) {
    device_config dc;
    ASSERT_TRUE(shard_qpn_range(dc, 0));
    EXPECT_EQ(dc.first_qpn, 0x11u);
    ASSERT_TRUE(shard_qpn_range(dc, 2));
    EXPECT_EQ(dc.first_qpn, 0x20011u);
    EXPECT_EQ(qpn_shard(dc.first_qpn, 4), 2u);
    EXPECT_EQ(qpn_shard(dc.first_qpn + dc.max_qp - 1, 4), 2u); /* the last QPN stays in the slice */
    dc.max_qp = 1u << 20;
    ASSERT_TRUE(shard_qpn_range(dc, 255));
    EXPECT_EQ(dc.max_qp, qpn_shard_span - default_first_qpn); /* lowered to what a slice holds */
    EXPECT_EQ(qpn_shard(dc.first_qpn + dc.max_qp - 1, 256), 255u);
    EXPECT_LT(dc.first_qpn + dc.max_qp - 1, 1u << 24);
    EXPECT_FALSE(shard_qpn_range(dc, max_shards));
}

TEST(frame_shard, roce_by_destination_qpn) {
    EXPECT_EQ(owner_of(roce_frame(0x11), 2, 1), 0u);
    EXPECT_EQ(owner_of(roce_frame(0x10011), 2, 0), 1u);
    EXPECT_EQ(owner_of(roce_frame(0x10011, true), 2, 0), 1u);        /* IPv6 */
    EXPECT_EQ(owner_of(roce_frame(0x3ffff, false, true), 4, 0), 3u); /* VLAN */
    EXPECT_EQ(owner_of(roce_frame(0x10011), 1, 0), 0u); /* one shard: everything is its own */
    EXPECT_EQ(owner_of(roce_frame(0x50011), 4, 2), 0u); /* no shard 5: shard 0 counts it */
    EXPECT_EQ(owner_of(roce_frame(0x1), 4, 3), 0u);     /* QP1 (GSI) */
}

TEST(frame_shard, neighbours_on_shard_0_the_rest_stays) {
    EXPECT_EQ(owner_of(arp_frame(), 4, 3), 0u);
    auto icmp = roce_frame(0x10011);
    icmp[14 + 9] = 1;
    EXPECT_EQ(owner_of(icmp, 4, 3), 0u);
    auto icmp6 = roce_frame(0x10011, true);
    icmp6[14 + 6] = 58;
    EXPECT_EQ(owner_of(icmp6, 4, 2), 0u);
    EXPECT_EQ(owner_of(lldp_frame(), 4, 3), 3u);
    auto other_udp = roce_frame(0x10011);
    other_udp[14 + 20 + 3] = 0x35;
    EXPECT_EQ(owner_of(other_udp, 4, 2), 2u);
    /* a RoCEv2 frame cut before its BTH: the receiving shard's parser counts it */
    auto cut = roce_frame(0x10011);
    cut.resize(14 + 20 + 8 + 4);
    EXPECT_EQ(owner_of(cut, 2, 0), 0u);
}

class shard_t : public ::testing::Test {
  protected:
    void make(unsigned count, unsigned ring_size = shard_group::default_ring_size) {
        static int n = 0;
        std::string err;
        group = shard_group::create("sut" + std::to_string(n++), count, err, ring_size);
        ASSERT_NE(group, nullptr) << err;
        for (unsigned i = 0; i < count; i++) {
            engines.push_back(std::make_unique<engine>(sink));
            shards.push_back(std::make_unique<shard>(*group, i, *engines.back()));
        }
    }
    void rx(unsigned s, const std::vector<std::vector<uint8_t>> &frames) {
        std::vector<rte_mbuf *> v;
        for (const auto &f : frames)
            v.push_back(mbuf_of(f));
        shards[s]->rx_burst(v.data(), uint16_t(v.size()));
    }
    uint64_t roce_seen(unsigned s) const {
        return engines[s]->counters().rx_by_class[size_t(frame_class::roce)];
    }
    uint64_t nb_seen(unsigned s) const {
        return engines[s]->counters().rx_by_class[size_t(frame_class::neighbour)];
    }

    sink_netdev sink;
    std::unique_ptr<shard_group> group;
    std::vector<std::unique_ptr<engine>> engines;
    std::vector<std::unique_ptr<shard>> shards;
};

TEST_F(shard_t, roce_frames_go_to_their_owner_inbox) {
    make(3);
    /* shard 0 reads the port (a PMD without RSS): a mix for all three */
    rx(0, {roce_frame(0x11), roce_frame(0x10011), roce_frame(0x20012), roce_frame(0x10012),
           roce_frame(0x12)});
    EXPECT_EQ(roce_seen(0), 2u);
    EXPECT_EQ(shards[0]->counters().fanout_out, 3u);
    EXPECT_EQ(rte_ring_count(group->inbox(1)), 2u);
    EXPECT_EQ(rte_ring_count(group->inbox(2)), 1u);
    EXPECT_EQ(rte_ring_count(group->inbox(0)), 0u);
    /* in arrival order: 0x10011 before 0x10012 */
    void *q[2];
    ASSERT_EQ(rte_ring_dequeue_bulk(group->inbox(1), q, 2, nullptr), 2u);
    EXPECT_EQ(rte_pktmbuf_mtod(static_cast<rte_mbuf *>(q[0]), uint8_t *)[14 + 20 + 8 + 7], 0x11);
    EXPECT_EQ(rte_pktmbuf_mtod(static_cast<rte_mbuf *>(q[1]), uint8_t *)[14 + 20 + 8 + 7], 0x12);
    ASSERT_EQ(rte_ring_enqueue_bulk(group->inbox(1), q, 2, nullptr), 2u);

    EXPECT_EQ(shards[1]->poll(), 2u);
    EXPECT_EQ(shards[1]->counters().fanout_in, 2u);
    EXPECT_EQ(roce_seen(1), 2u);
    EXPECT_EQ(shards[2]->poll(), 1u);
    EXPECT_EQ(roce_seen(2), 1u);
    EXPECT_EQ(shards[0]->poll(), 0u); /* idle */
    EXPECT_EQ(shards[0]->counters().fanout_in, 0u);
}

TEST_F(shard_t, neighbour_frames_go_to_shard_0_the_rest_is_counted_where_it_arrived) {
    make(2);
    /* shard 1 reads its own queue (RSS): ARP for shard 0, LLDP stays */
    rx(1, {arp_frame(), lldp_frame(), roce_frame(0x10011), roce_frame(0x11)});
    EXPECT_EQ(shards[1]->counters().fanout_out, 2u);
    EXPECT_EQ(roce_seen(1), 1u);
    EXPECT_EQ(engines[1]->counters().rx_by_class[size_t(frame_class::not_ip)], 1u);
    EXPECT_EQ(nb_seen(1), 0u);
    EXPECT_EQ(shards[0]->poll(), 2u);
    EXPECT_EQ(nb_seen(0), 1u);
    EXPECT_EQ(roce_seen(0), 1u);
    EXPECT_EQ(shards[0]->counters().fanout_in, 2u);
}

TEST_F(shard_t, full_inbox_is_counted_and_freed) {
    make(2, 8); /* an rte_ring of 8 holds 7 */
    const unsigned avail0 = rte_mempool_avail_count(eal_env::pool);
    std::vector<std::vector<uint8_t>> burst(20, roce_frame(0x10011));
    rx(0, burst);
    EXPECT_EQ(shards[0]->counters().fanout_out, 7u);
    EXPECT_EQ(shards[0]->counters().fanout_ring_full, 13u);
    EXPECT_EQ(rte_ring_count(group->inbox(1)), 7u);
    /* the 13 dropped are back in the pool; the 7 queued are not yet */
    EXPECT_EQ(rte_mempool_avail_count(eal_env::pool), avail0 - 7);
    EXPECT_EQ(shards[1]->poll(), 7u);
    EXPECT_EQ(rte_mempool_avail_count(eal_env::pool), avail0);
}

TEST_F(shard_t, bursts_longer_than_the_engine_burst) {
    make(2);
    std::vector<std::vector<uint8_t>> frames;
    for (int i = 0; i < 100; i++)
        frames.push_back(roce_frame(i % 2 ? 0x10011 : 0x11));
    rx(0, frames);
    EXPECT_EQ(roce_seen(0), 50u);
    EXPECT_EQ(shards[0]->counters().fanout_out, 50u);
    unsigned got = 0;
    while (unsigned n = shards[1]->poll())
        got += n;
    EXPECT_EQ(got, 50u);
    EXPECT_EQ(roce_seen(1), 50u);
}

TEST_F(shard_t, frames_still_queued_are_freed_with_the_group) {
    const unsigned avail0 = rte_mempool_avail_count(eal_env::pool);
    make(2);
    rx(0, {roce_frame(0x10011), roce_frame(0x10012)});
    EXPECT_EQ(rte_mempool_avail_count(eal_env::pool), avail0 - 2);
    shards.clear();
    group.reset();
    EXPECT_EQ(rte_mempool_avail_count(eal_env::pool), avail0);
}

TEST(shard_group, counts_are_checked) {
    std::string err;
    EXPECT_EQ(shard_group::create("bad0", 0, err), nullptr);
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(shard_group::create("bad1", max_shards + 1, err), nullptr);
}

} // namespace
} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * The device's hot path (uroce_device_poll.cpp): the driver contract on TX
 * (a driver that takes only part of a burst: its refusals are freed and
 * counted, and the transport recovers by retransmission), and poll()
 * reporting idle once nothing is left to send.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

/* Wraps a memlink port; takes a burst on one call in three only (the
 * device retries once, so some bursts are refused twice and dropped). */
class stingy_netdev final : public netdev {
  public:
    explicit stingy_netdev(memlink_port *p) : port_(p) {}
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        if (n == 0) return 0;
        ++calls;
        if (calls % 3 != 0) return 0;
        return port_->tx_burst(pkts, n);
    }
    const uint8_t *mac() const override { return port_->mac(); }
    netdev_caps caps() const override { return port_->caps(); }
    uint64_t calls = 0;

  private:
    memlink_port *port_;
};

class device_poll : public pair_fixture {};

TEST_F(device_poll, partial_tx_is_counted_and_recovered) {
    opt.timeout = 8;
    make_link();
    stingy_netdev stingy(a.port);
    open(a, a.port, gid::from_ipv4(0x0a000001), mac_a, 1);
    /* swap A's driver for the stingy one: reopen with it */
    close_device(a.ctx);
    device_config cfg;
    cfg.dev = &stingy;
    cfg.pool = test_pool();
    cfg.gids[0] = gid::from_ipv4(0x0a000001);
    cfg.num_gids = 1;
    cfg.clock = &clk;
    a.ctx = open_device(cfg);
    a.pd = alloc_pd(a.ctx);
    a.scq = create_cq(a.ctx, 256);
    a.rcq = create_cq(a.ctx, 256);
    a.g = cfg.gids[0];
    a.mac = mac_a;
    open(b, b.port, gid::from_ipv4(0x0a000002), mac_b, 2);
    a.qp = make_qp(a);
    b.qp = make_qp(b);
    connect(a, b, 10, 20);
    connect(b, a, 20, 10);
    std::vector<uint8_t> src(64 * 1024), dst(64 * 1024);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 4);
    for (int i = 0; i < 8; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data() + i * 8192, 8192, ms, i,
                           reinterpret_cast<uint64_t>(dst.data() + i * 8192), mr_rkey(md)),
                  verbs_error::ok);
    auto sw = poll_n(a.scq, 8);
    ASSERT_EQ(sw.size(), 8u);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_GT(a.ctx->counters().tx_drops, 0u);
    EXPECT_GT(a.qp->cnt.retransmits, 0u);
}

TEST_F(device_poll, poll_is_idle_once_the_work_is_sent) {
    setup_pair();
    std::vector<uint8_t> src(4096), dst(4096);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 7);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 4096, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    EXPECT_GT(a.ctx->poll(), 0u); /* the WRITE's packets */
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(a.ctx->poll(), 0u);
    EXPECT_EQ(b.ctx->poll(), 0u);
}

} // namespace

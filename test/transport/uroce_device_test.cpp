/* SPDX-License-Identifier: BSD-3-Clause
 * The device's control path (uroce_device.cpp): QP table lookups;
 * close_device with work outstanding; the QPN range a device hands out (its
 * QPNs, their lookup, and traffic between devices with different ranges, as
 * shards have). The driver contract on TX is in uroce_device_poll_test.cpp.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class device_t : public pair_fixture {};

TEST_F(device_t, qp_lookup_and_close_with_work_outstanding) {
    setup_pair();
    EXPECT_EQ(a.ctx->lookup_qp(qp_num(a.qp)), a.qp);
    EXPECT_EQ(a.ctx->lookup_qp(0x10), nullptr);
    EXPECT_EQ(a.ctx->lookup_qp(0xffffff), nullptr);
    std::vector<uint8_t> src(4096), dst(4096);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    link->set_faults(1.0, 0, 0, 0, 0, 0);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 4096, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    for (int i = 0; i < 10; ++i)
        pump();
    /* closing with a retransmit timer armed and frames queued must be clean (ASan) */
    close_device(a.ctx);
    a.ctx = nullptr;
    EXPECT_EQ(b.ctx->lookup_qp(qp_num(b.qp)), b.qp);
}

/* Reopen e's device with QPNs from first_qpn (the fixture opens the default
 * range), handed out from first_qpn on unless `random`. */
void reopen_with_qpns(endpoint &e, uint32_t first_qpn, manual_clock &clk, bool random = false,
                      uint32_t max_qp = 64) {
    device_config cfg = e.ctx->config();
    close_device(e.ctx);
    cfg.first_qpn = first_qpn;
    cfg.max_qp = max_qp;
    cfg.random_first_qpn = random;
    cfg.clock = &clk;
    verbs_error err;
    e.ctx = open_device(cfg, &err);
    ASSERT_NE(e.ctx, nullptr) << verbs_error_str(err);
    e.pd = alloc_pd(e.ctx);
    e.scq = create_cq(e.ctx, 256);
    e.rcq = create_cq(e.ctx, 256);
}

/* With random_first_qpn off, one shard hands out rxe's QPNs from 0x11. */
TEST_F(device_t, single_shard_keeps_rxe_qpns) {
    make_link();
    open(a, a.port, gid_for(0), mac_a, 11);
    reopen_with_qpns(a, default_first_qpn, clk, false, device_config{}.max_qp);
    EXPECT_EQ(a.ctx->qpn_base(), default_first_qpn);
    EXPECT_EQ(qp_num(make_qp(a)), 0x11u); /* golden captures and interop tests depend on it */
}

/* By default each device starts its QPNs at an unpredictable point of its
 * range, so a new process does not hand out the QPNs its predecessor had
 * (a stale peer's retransmissions to them would be taken as duplicates):
 * devices opened without a seed (as processes are) start apart; with a seed
 * the start is reproducible. The range wraps: every QPN of it is handed out
 * once, and each is found by lookup. */
TEST_F(device_t, qpns_start_at_a_random_point_of_the_range) {
    make_link();
    std::vector<uint32_t> firsts;
    for (int i = 0; i < 4; ++i) {
        device_config cfg;
        cfg.dev = a.port;
        cfg.pool = test_pool();
        cfg.gids[0] = gid_for(0);
        cfg.num_gids = 1;
        cfg.clock = &clk;
        cfg.seed = 0; /* as a process opens it */
        device *d = open_device(cfg);
        ASSERT_NE(d, nullptr);
        endpoint e;
        e.ctx = d;
        e.pd = alloc_pd(d);
        e.scq = e.rcq = create_cq(d, 16);
        qp *q = make_qp(e);
        ASSERT_NE(q, nullptr);
        EXPECT_GE(qp_num(q), default_first_qpn);
        EXPECT_LT(qp_num(q), default_first_qpn + cfg.max_qp);
        firsts.push_back(qp_num(q));
        close_device(d);
    }
    bool all_same = true;
    for (uint32_t f : firsts)
        all_same = all_same && f == firsts[0];
    EXPECT_FALSE(all_same) << "four devices all started at QPN " << firsts[0];

    /* seeded: the same start every time */
    open(a, a.port, gid_for(0), mac_a, 11);
    reopen_with_qpns(a, 0x30011, clk, true, 64);
    const uint32_t first = qp_num(make_qp(a));
    reopen_with_qpns(a, 0x30011, clk, true, 64);
    EXPECT_EQ(qp_num(make_qp(a)), first);
    /* the whole range, wrapping past its end, each QPN once */
    std::vector<bool> seen(64);
    seen[first - 0x30011] = true;
    for (int i = 1; i < 64; ++i) {
        qp *q = make_qp(a);
        ASSERT_NE(q, nullptr);
        const uint32_t n = qp_num(q);
        ASSERT_GE(n, 0x30011u);
        ASSERT_LT(n, 0x30011u + 64);
        EXPECT_FALSE(seen[n - 0x30011]) << n;
        seen[n - 0x30011] = true;
        EXPECT_EQ(a.ctx->lookup_qp(n), q);
        if (i == 1) {
            EXPECT_EQ(n, 0x30011 + (first - 0x30011 + 1) % 64);
        }
    }
}

TEST_F(device_t, qpns_come_from_the_configured_range) {
    make_link();
    open(a, a.port, gid_for(0), mac_a, 11);
    reopen_with_qpns(a, 0x20011, clk);
    EXPECT_EQ(a.ctx->qpn_base(), 0x20011u);
    qp *q1 = make_qp(a), *q2 = make_qp(a);
    ASSERT_NE(q1, nullptr);
    ASSERT_NE(q2, nullptr);
    EXPECT_EQ(qp_num(q1), 0x20011u);
    EXPECT_EQ(qp_num(q2), 0x20012u);
    EXPECT_EQ(a.ctx->lookup_qp(0x20011), q1);
    EXPECT_EQ(a.ctx->lookup_qp(0x20012), q2);
    EXPECT_EQ(a.ctx->lookup_qp(0x11), nullptr); /* the default range's first QPN */
    EXPECT_EQ(a.ctx->lookup_qp(0x20011 + 64), nullptr);
    EXPECT_EQ(a.ctx->lookup_qp(0x20010), nullptr);
    ASSERT_EQ(destroy_qp(q1), verbs_error::ok);
    EXPECT_EQ(a.ctx->lookup_qp(0x20011), nullptr);
    EXPECT_EQ(qp_num(make_qp(a)), 0x20013u); /* QPNs are not reused at once, as rxe */
}

TEST_F(device_t, qpn_range_is_checked) {
    make_link();
    device_config cfg;
    cfg.dev = a.port;
    cfg.pool = test_pool();
    cfg.gids[0] = gid::from_ipv4(0x0a000001);
    cfg.num_gids = 1;
    cfg.clock = &clk;
    cfg.max_qp = 64;
    verbs_error err;
    auto rejected = [&](uint32_t first_qpn, uint32_t max_qp) {
        cfg.first_qpn = first_qpn;
        cfg.max_qp = max_qp;
        device *c = open_device(cfg, &err);
        if (c) close_device(c);
        return c == nullptr && err == verbs_error::inval;
    };
    EXPECT_TRUE(rejected(0, 64)); /* QP0 and QP1 are the special QPs (IBTA 3.5.3) */
    EXPECT_TRUE(rejected(1, 64));
    EXPECT_TRUE(rejected((1u << 24) - 63, 64)); /* the last QPN would not fit the BTH */
    EXPECT_FALSE(rejected((1u << 24) - 64, 64));
    EXPECT_FALSE(rejected(2, 64));
    EXPECT_FALSE(rejected(default_first_qpn, 1u << 20));
}

TEST_F(device_t, rdma_write_between_two_qpn_ranges) {
    make_link();
    open(a, a.port, gid_for(0), mac_a, 11);
    open(b, b.port, gid_for(1), mac_b, 22);
    reopen_with_qpns(a, 0x10011, clk);
    reopen_with_qpns(b, 0x11, clk);
    a.qp = make_qp(a);
    b.qp = make_qp(b);
    ASSERT_EQ(qp_num(a.qp), 0x10011u);
    ASSERT_EQ(qp_num(b.qp), 0x11u);
    connect(a, b, 10, 20);
    connect(b, a, 20, 10);
    std::vector<uint8_t> src(16 * 1024), dst(16 * 1024);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 7);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), uint32_t(src.size()), ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto w = poll_n(a.scq, 1);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(a.ctx->counters().rx_no_qp, 0u);
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * The device's hot path (uroce_device_poll.cpp): the driver contract on TX
 * (a driver that takes only part of a burst: back-pressure, what it refuses
 * is kept and sent later, nothing lost, nothing retransmitted), and poll()
 * reporting idle once nothing is left to send, a refusing port offered
 * frames once per poll, and a TX pool that runs dry
 * with many QPs scheduled (one wait per poll, then everything completes) or
 * under a retry (its timeouts spend no retries while nothing can be sent).
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

/* Wraps a memlink port, as a NIC whose send ring is nearly always full:
 * refuses every other call, and takes at most 3 frames of any burst. */
class stingy_netdev final : public netdev {
  public:
    explicit stingy_netdev(memlink_port *p) : port_(p) {}
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        if (n == 0) return 0;
        if (++calls % 2 != 0) return 0;
        return port_->tx_burst(pkts, n < 3 ? n : 3);
    }
    const uint8_t *mac() const override { return port_->mac(); }
    netdev_caps caps() const override { return port_->caps(); }
    uint64_t calls = 0;

  private:
    memlink_port *port_;
};

/* Wraps a memlink port, as a NIC whose send ring stays full while
 * blocked: it refuses every frame until unblocked. */
class blocked_netdev final : public netdev {
  public:
    explicit blocked_netdev(memlink_port *p) : port_(p) {}
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        ++calls;
        return blocked ? 0 : port_->tx_burst(pkts, n);
    }
    const uint8_t *mac() const override { return port_->mac(); }
    netdev_caps caps() const override { return port_->caps(); }
    bool blocked = true;
    uint64_t calls = 0;

  private:
    memlink_port *port_;
};

class device_poll : public pair_fixture {
  protected:
    /* One signaled len-byte RDMA WRITE per QP of qa (a's side of the
     * pairs), from a pattern in src_ into dst_ on b. */
    void post_write_per_qp(const std::vector<qp *> &qa, size_t len, uint8_t seed) {
        src_.assign(qa.size() * len, 0);
        dst_.assign(qa.size() * len, 0);
        mr *ms = reg(a, src_.data(), src_.size());
        mr *md = reg(b, dst_.data(), dst_.size());
        fill_pattern(src_.data(), src_.size(), seed);
        for (size_t i = 0; i < qa.size(); ++i)
            ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src_.data() + i * len, len, ms, i,
                               reinterpret_cast<uint64_t>(dst_.data() + i * len), mr_rkey(md),
                               send_signaled, qa[i]),
                      verbs_error::ok);
    }
    /* Every WRITE of post_write_per_qp completed well and landed. */
    void expect_writes_done(size_t n_qps) {
        auto sw = poll_n(a.scq, n_qps);
        ASSERT_EQ(sw.size(), n_qps);
        for (auto &e : sw)
            EXPECT_EQ(e.status, wc_status::success) << e.wr_id << ": " << wc_status_str(e.status);
        EXPECT_EQ(src_, dst_);
    }
    std::vector<uint8_t> src_, dst_;

    /* pool: the device's TX pool (a test's own small one, to empty it) */
    void open_on(endpoint &e, netdev *dev, const gid &g, const uint8_t *mac,
                 rte_mempool *pool = test_pool(), bool tail_loss_probe = true) {
        device_config cfg;
        cfg.dev = dev;
        cfg.pool = pool;
        cfg.tail_loss_probe = tail_loss_probe;
        cfg.gids[0] = g;
        cfg.num_gids = 1;
        cfg.clock = &clk;
        cfg.seed = 1;
        e.ctx = open_device(cfg);
        ASSERT_NE(e.ctx, nullptr);
        e.pd = alloc_pd(e.ctx);
        e.scq = create_cq(e.ctx, 256);
        e.rcq = create_cq(e.ctx, 256);
        e.g = g;
        e.mac = mac;
    }
    /* n QPs on each side, a's i-th connected to b's i-th; the pair's PSNs
     * start at first_psn + i * psn_step (a's) and half a step above (b's) */
    void make_pairs(size_t n, std::vector<qp *> &qa, std::vector<qp *> &qb, uint32_t first_psn = 0,
                    uint32_t psn_step = 100) {
        for (size_t i = 0; i < n; ++i) {
            qa.push_back(make_qp(a));
            qb.push_back(make_qp(b));
            const uint32_t pa = first_psn + uint32_t(i) * psn_step, pb = pa + psn_step / 2;
            connect(a, b, pa, pb, qa.back(), qb.back());
            connect(b, a, pb, pa, qb.back(), qa.back());
        }
    }
    void destroy_pairs(const std::vector<qp *> &qa, const std::vector<qp *> &qb) {
        for (qp *q : qa)
            destroy_qp(q);
        for (qp *q : qb)
            destroy_qp(q);
        a.qp = b.qp = nullptr;
    }
};

/* Both ports refuse most of what they are offered. Frames are kept and
 * sent later in order: WRITEs, SENDs and READs (responses and ACKs
 * deferred as well) complete with nothing lost and nothing retransmitted. */
TEST_F(device_poll, partial_tx_is_kept_and_sent_later) {
    opt.timeout = 8;
    make_link();
    stingy_netdev sa(a.port), sb(b.port);
    open_on(a, &sa, gid::from_ipv4(0x0a000001), mac_a);
    open_on(b, &sb, gid::from_ipv4(0x0a000002), mac_b);
    a.qp = make_qp(a);
    b.qp = make_qp(b);
    connect(a, b, 10, 20);
    connect(b, a, 20, 10);
    constexpr size_t n = 16, len = 8192;
    std::vector<uint8_t> src(n * len), dst(n * len), rd(n * len), rsrc(n * len);
    mr *ms = reg(a, src.data(), src.size());
    mr *mrd = reg(a, rd.data(), rd.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mrs = reg(b, rsrc.data(), rsrc.size());
    fill_pattern(src.data(), src.size(), 4);
    fill_pattern(rsrc.data(), rsrc.size(), 5);
    for (size_t i = 0; i < n; ++i) {
        if (i % 4 == 3) {
            ASSERT_EQ(post_recv_buf(b, dst.data() + i * len, len, md, i), verbs_error::ok);
            ASSERT_EQ(post_one(a, wr_opcode::send, src.data() + i * len, len, ms, i),
                      verbs_error::ok);
        } else {
            ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data() + i * len, len, ms, i,
                               reinterpret_cast<uint64_t>(dst.data() + i * len), mr_rkey(md)),
                      verbs_error::ok);
        }
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, rd.data() + i * len, len, mrd, 100 + i,
                           reinterpret_cast<uint64_t>(rsrc.data() + i * len), mr_rkey(mrs)),
                  verbs_error::ok);
    }
    auto sw = poll_n(a.scq, 2 * n);
    ASSERT_EQ(sw.size(), 2 * n);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success) << e.wr_id << ": " << wc_status_str(e.status);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(rsrc, rd);
    for (const endpoint *e : {&a, &b}) {
        EXPECT_EQ(e->ctx->counters().tx_drops, 0u);
        EXPECT_GT(e->ctx->counters().tx_stalls, 0u);
        EXPECT_EQ(e->qp->cnt.retransmits, 0u);
        EXPECT_EQ(e->qp->cnt.retrans_pkts, 0u);
        EXPECT_EQ(e->qp->cnt.timeouts, 0u);
    }
    EXPECT_EQ(link->stats().tx, link->stats().delivered); /* lost nothing on the way */
}

/* The TX pool runs dry with many QPs scheduled: the first QP whose turn
 * finds no mbuf ends the round (one allocation failure and one wait counted
 * per poll, not one per QP), the QPs keep their work, and once mbufs are
 * back every message completes, in full, with nothing dropped or resent. */
TEST_F(device_poll, an_empty_pool_ends_the_round_and_the_qps_wait) {
    make_link();
    /* a's own small pool, which the test empties */
    rte_mempool *small = rte_pktmbuf_pool_create("uroce_tp_small", 64, 0, 0,
                                                 RTE_PKTMBUF_HEADROOM + 4096 + 256, SOCKET_ID_ANY);
    ASSERT_NE(small, nullptr);
    open_on(a, a.port, gid::from_ipv4(0x0a000001), mac_a, small);
    open_on(b, b.port, gid::from_ipv4(0x0a000002), mac_b);
    constexpr size_t n_qps = 32, len = 4096;
    std::vector<qp *> qa, qb;
    make_pairs(n_qps, qa, qb);
    std::vector<uint8_t> src(n_qps * len), dst(n_qps * len);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 9);
    /* every mbuf of a's pool held here */
    std::vector<void *> held(64);
    ASSERT_EQ(rte_mempool_get_bulk(small, held.data(), unsigned(held.size())), 0);
    for (size_t i = 0; i < n_qps; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data() + i * len, len, ms, i,
                           reinterpret_cast<uint64_t>(dst.data() + i * len), mr_rkey(md),
                           send_signaled, qa[i]),
                  verbs_error::ok);
    const dev_counters before = a.ctx->counters();
    a.ctx->poll();
    EXPECT_EQ(a.ctx->counters().tx_mbuf_waits - before.tx_mbuf_waits, 1u);
    EXPECT_EQ(a.ctx->counters().tx_alloc_fail - before.tx_alloc_fail, 1u);
    a.ctx->poll();
    EXPECT_EQ(a.ctx->counters().tx_mbuf_waits - before.tx_mbuf_waits, 2u);
    rte_mempool_put_bulk(small, held.data(), unsigned(held.size()));
    auto sw = poll_n(a.scq, n_qps);
    ASSERT_EQ(sw.size(), n_qps);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success) << e.wr_id << ": " << wc_status_str(e.status);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(a.ctx->counters().tx_drops, 0u);
    for (qp *q : qa) {
        EXPECT_EQ(q->cnt.retransmits, 0u);
        EXPECT_EQ(q->cnt.timeouts, 0u);
    }
    destroy_pairs(qa, qb);
    close_device(a.ctx);
    a.ctx = nullptr;
    rte_mempool_free(small);
}

/* A WRITE is lost, and its QP times out while the TX pool is empty and
 * the QPs ahead of it on the scheduling list take the polls' turns to find
 * no mbuf (with 4096 QPs a QP's turn can come seconds apart). The
 * retry's resend cannot leave, and the timeouts that follow, with nothing
 * of that retry on the wire, do not spend retry_cnt (counted apart). Once
 * mbufs are back both WRITEs complete. Spending them ended the QP with
 * retry_exc_err after retry_cnt + 1 timeouts (64 KiB WRITE at 4096 QPs
 * with the default timeout 14, doc/performance.md). */
TEST_F(device_poll, timeouts_while_the_retry_waits_for_mbufs_spend_no_retries) {
    opt.timeout = 8; /* 1 ms */
    opt.retry_cnt = 2;
    make_link();
    rte_mempool *small = rte_pktmbuf_pool_create("uroce_tp_small2", 64, 0, 0,
                                                 RTE_PKTMBUF_HEADROOM + 4096 + 256, SOCKET_ID_ANY);
    ASSERT_NE(small, nullptr);
    /* the timeout's retry alone */
    open_on(a, a.port, gid::from_ipv4(0x0a000001), mac_a, small, false);
    open_on(b, b.port, gid::from_ipv4(0x0a000002), mac_b);
    qp *qa = make_qp(a), *qb = make_qp(b);
    connect(a, b, 100, 200, qa, qb);
    connect(b, a, 200, 100, qb, qa);
    /* the QPs whose turns come first */
    constexpr size_t n_ahead = 16, len = 2048;
    std::vector<qp *> ahead_a, ahead_b;
    make_pairs(n_ahead, ahead_a, ahead_b, 1000, 1000);
    std::vector<uint8_t> src((n_ahead + 1) * len), dst((n_ahead + 1) * len);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 5);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), len, ms, 0,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md), send_signaled, qa),
              verbs_error::ok);
    a.ctx->poll();
    /* lost on the way: b never sees it */
    rte_mbuf *lost[8];
    const uint16_t n_lost = b.port->rx_burst(lost, 8);
    ASSERT_GE(n_lost, 1u);
    rte_pktmbuf_free_bulk(lost, n_lost);
    /* every mbuf of a's pool held here; the other QPs' WRITEs then wait for
     * one, ahead of qa on the scheduling list */
    std::vector<void *> held(64);
    ASSERT_EQ(rte_mempool_get_bulk(small, held.data(), unsigned(held.size())), 0);
    for (size_t i = 0; i < n_ahead; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data() + (i + 1) * len, len, ms, i + 1,
                           reinterpret_cast<uint64_t>(dst.data() + (i + 1) * len), mr_rkey(md),
                           send_signaled, ahead_a[i]),
                  verbs_error::ok);
    /* Their first round ends at the first of them to find no mbuf; the
     * rest go first in the next polls, one per poll, before anything
     * scheduled since (qa, by its timeouts): 15 polls away. One poll per
     * timeout, 10 timeouts. */
    a.ctx->poll();
    for (int i = 0; i < 10; ++i) {
        clk.advance(1'100'000);
        a.ctx->poll();
    }
    wc early[4];
    EXPECT_EQ(poll_cq(a.scq, 4, early), 0) << "a QP ended: " << wc_status_str(early[0].status);
    EXPECT_GE(qa->cnt.timeouts, 8u);
    EXPECT_GE(qa->cnt.retry_unsent_waits, 7u);
    EXPECT_EQ(qa->cnt.retry_exceeded, 0u);
    EXPECT_EQ(qa->cnt.retrans_pkts, 0u); /* its turn has not come */
    rte_mempool_put_bulk(small, held.data(), unsigned(held.size()));
    auto sw = poll_n(a.scq, n_ahead + 1);
    ASSERT_EQ(sw.size(), n_ahead + 1);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success) << e.wr_id << ": " << wc_status_str(e.status);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(qa->cnt.retransmits, 1u);
    destroy_qp(qa);
    destroy_qp(qb);
    destroy_pairs(ahead_a, ahead_b);
    close_device(a.ctx);
    a.ctx = nullptr;
    rte_mempool_free(small);
}

/* Tail-loss probes leave from their timers, outside a scheduler turn that
 * keeps room in the TX queue: with the port refusing everything and the
 * queue holding a frame of each of 194 QPs (more than it has room left),
 * the probes of those QPs fire at once. They must not overflow the queue
 * (each one it could not hold was dropped, counted in tx_drops: 66 here
 * before), and once the port takes frames again every WRITE completes. */
TEST_F(device_poll, probes_never_overflow_a_full_tx_queue) {
    make_link();
    blocked_netdev port_a(a.port);
    open_on(a, &port_a, gid::from_ipv4(0x0a000001), mac_a);
    open_on(b, b.port, gid::from_ipv4(0x0a000002), mac_b);
    constexpr size_t n_qps = 256, len = 512;
    std::vector<qp *> qa, qb;
    make_pairs(n_qps, qa, qb);
    post_write_per_qp(qa, len, 11);
    a.ctx->poll(); /* every QP's WRITE queued, none taken by the port */
    ASSERT_GT(a.ctx->counters().tx_stalls, 0u);
    ASSERT_LT(a.ctx->tx_room(), a.ctx->counters().tx_pkts); /* fewer than the QPs that sent */
    clk.advance(2 * loss_probe_delay_ns(qa[0]));
    a.ctx->poll(); /* the probes' timers fire, the queue still full */
    EXPECT_GT(a.ctx->counters().timer_fires, 0u);
    EXPECT_EQ(a.ctx->counters().tx_drops, 0u);
    port_a.blocked = false;
    expect_writes_done(n_qps);
    EXPECT_EQ(a.ctx->counters().tx_drops, 0u);
    destroy_pairs(qa, qb);
}

/* A port that refused frames is not offered them again before the next
 * poll: not by the scheduler when the queue lacks room for a turn, not by
 * the receive path's flush. With thousands of QPs behind a full ring those
 * retries (a batch offered, the queue moved) took a tenth of the core. Once
 * the port has room, everything goes, in order. */
TEST_F(device_poll, a_refusing_port_is_offered_frames_once_per_poll) {
    make_link();
    blocked_netdev port_b(b.port);
    open_on(a, a.port, gid::from_ipv4(0x0a000001), mac_a);
    open_on(b, &port_b, gid::from_ipv4(0x0a000002), mac_b);
    constexpr size_t n_qps = 256, len = 64;
    std::vector<qp *> qa, qb;
    make_pairs(n_qps, qa, qb);
    /* b answers each WRITE with an ACK: 256 QPs' ACKs do not fit b's queue */
    post_write_per_qp(qa, len, 5);
    a.ctx->poll();
    for (int round = 0; round < 4; ++round) {
        const uint64_t calls = port_b.calls;
        /* the receive path's flush, then a poll: one offer between them */
        rte_mbuf *in[32];
        uint16_t k;
        while ((k = b.port->rx_burst(in, 32)) != 0)
            b.ctx->rx_burst(in, k);
        b.ctx->poll();
        EXPECT_LE(port_b.calls - calls, round == 0 ? 2u : 1u) << "round " << round;
    }
    EXPECT_GT(b.ctx->counters().tx_stalls, 0u);
    EXPECT_GT(b.ctx->counters().tx_deferred_turns, 0u);
    port_b.blocked = false;
    expect_writes_done(n_qps);
    EXPECT_EQ(b.ctx->counters().tx_drops, 0u);
    destroy_pairs(qa, qb);
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

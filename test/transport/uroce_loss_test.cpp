/* SPDX-License-Identifier: BSD-3-Clause
 * Loss recovery (uroce_loss.cpp): the RTT estimate, and tail losses
 * recovered by a probe long before the local ACK timeout (timeout 14,
 * 67 ms) without spending retry_cnt on the probe itself; the timeout stays
 * the hard limit when the link is cut.
 */
#include <cstring>
#include <vector>

#include "uroce_psn.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class loss : public pair_fixture {
  protected:
    std::vector<uint8_t> src, dst;
    mr *ms = nullptr, *md = nullptr;

    void setup(size_t n) {
        setup_pair();
        src.assign(n, 0);
        dst.assign(n, 0);
        fill_pattern(src.data(), n, 7);
        ms = reg(a, src.data(), n);
        md = reg(b, dst.data(), n);
    }
    /* one message without loss first, so the QP has an RTT sample (as any
     * QP has after its first response) */
    void warm_up() {
        write(100, 64);
        auto sw = poll_n(a.scq, 1);
        ASSERT_EQ(sw.size(), 1u);
        ASSERT_NE(a.qp->loss.srtt_ns, 0u);
        opt.psn_a = a.qp->req.psn; /* drop_requests counts from here */
    }
    void write(uint64_t id, uint32_t len, uint64_t off = 0) {
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data() + off, len, ms, id,
                           reinterpret_cast<uint64_t>(dst.data() + off), mr_rkey(md)),
                  verbs_error::ok);
    }
    /* drop a's request packets whose PSN offset from the first is in [lo, hi], once each */
    void drop_requests(uint32_t lo, uint32_t hi) {
        auto seen = std::make_shared<std::vector<uint32_t>>();
        link->set_filter([this, lo, hi, seen](rte_mbuf *m, const memlink_port *from) {
            if (from != a.port) return true;
            roce_packet p = peek(m);
            uint32_t k = uint32_t(psn_diff(p.psn(), opt.psn_a));
            if (k < lo || k > hi) return true;
            for (uint32_t s : *seen)
                if (s == k) return true;
            seen->push_back(k);
            return false;
        });
    }
};

/* The last packet of a message is lost: the probe resends it, the responder
 * takes it in order and ACKs; no timeout, no retry. */
TEST_F(loss, tail_packet_recovered_by_probe) {
    opt.path_mtu = mtu::mtu_1024;
    setup(8192);
    warm_up();
    drop_requests(7, 7);
    uint64_t t0 = clk.now_ns();
    write(1, 8192);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_LT(clk.now_ns() - t0, local_ack_timeout_ns(14) / 10);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.retransmits, 0u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(a.qp->cnt.tlp_recoveries, 1u);
    EXPECT_EQ(a.qp->comp.retry_left, opt.retry_cnt);
}

/* The last three packets are lost: the probe (the last one) is out of
 * sequence and draws the PSN sequence NAK; one go-back-N retry. */
TEST_F(loss, tail_burst_recovered_by_probe_and_nak) {
    opt.path_mtu = mtu::mtu_1024;
    setup(8192);
    warm_up();
    drop_requests(5, 7);
    uint64_t t0 = clk.now_ns();
    write(1, 8192);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_LT(clk.now_ns() - t0, local_ack_timeout_ns(14) / 10);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(a.qp->cnt.seq_naks_rcvd, 1u);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
    EXPECT_EQ(b.qp->cnt.seq_naks_sent, 1u);
}

/* Only the ACK is lost: the probe is a duplicate, re-ACKed, not executed. */
TEST_F(loss, lost_ack_recovered_by_probe) {
    setup(100);
    warm_up();
    bool dropped = false;
    link->set_filter([&](rte_mbuf *, const memlink_port *from) {
        if (from == b.port && !dropped) {
            dropped = true;
            return false;
        }
        return true;
    });
    uint64_t t0 = clk.now_ns();
    write(1, 100);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_LT(clk.now_ns() - t0, local_ack_timeout_ns(14) / 10);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(b.qp->cnt.dup_requests, 1u);
    EXPECT_EQ(src, dst);
}

/* The NAK for a gap is lost too: the first probe (the last packet) meets a
 * responder that NAKs once per gap and stays silent; the second resends the
 * oldest unacknowledged packet as well, which fills the gap. */
TEST_F(loss, lost_nak_recovered_by_second_probe) {
    opt.path_mtu = mtu::mtu_1024;
    setup(4096);
    warm_up();
    bool lost_data = false, lost_nak = false;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        roce_packet p = peek(m);
        if (from == a.port && !lost_data && p.psn() == psn_add(opt.psn_a, 1)) {
            lost_data = true;
            return false;
        }
        if (from == b.port && !lost_nak && p.aeth() &&
            aeth_syndrome::type(p.aeth()->syndrome) == aeth_syndrome::type_nak) {
            lost_nak = true;
            return false;
        }
        return true;
    });
    uint64_t t0 = clk.now_ns();
    write(1, 4096);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_TRUE(lost_nak);
    EXPECT_EQ(src, dst);
    EXPECT_LT(clk.now_ns() - t0, local_ack_timeout_ns(14) / 10);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_GE(a.qp->cnt.tlp_probes, 2u);
}

/* A cut link: a few probes, then the timeout decides as before (retry_cnt
 * timeouts, then RETRY_EXC_ERR); probes spend no retries. */
TEST_F(loss, cut_link_timeout_stays_the_limit) {
    opt.timeout = 8;
    opt.retry_cnt = 3;
    setup(4096);
    link->set_faults(1.0, 0, 0, 0, 0, 0);
    uint64_t t0 = clk.now_ns();
    write(1, 4096);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::retry_exc_err);
    EXPECT_EQ(a.qp->cnt.timeouts, 4u);
    EXPECT_EQ(a.qp->cnt.retransmits, 3u);
    EXPECT_EQ(a.qp->cnt.tlp_recoveries, 0u);
    /* at most 3 probes per silent period, 4 periods (the first send and 3 resends) */
    EXPECT_GT(a.qp->cnt.tlp_probes, 0u);
    EXPECT_LE(a.qp->cnt.tlp_probes, 4u * 3u * 2u);
    uint64_t elapsed = clk.now_ns() - t0;
    EXPECT_GE(elapsed, 4 * local_ack_timeout_ns(8));
    EXPECT_LT(elapsed, 5 * local_ack_timeout_ns(8));
}

/* The probe can be turned off: then only the timeout recovers, as in rxe. */
/* A streaming QP on a path with an RTT: the cap follows two BDPs. 64
 * WRITEs of 4 KiB at MTU 1024, 50 us each way, one packet per microsecond
 * at most from the pump loop: the window grows above the floor and stays
 * within the maximum. */
TEST_F(loss, window_follows_the_bdp) {
    memlink_config lc;
    lc.delay = 1.0;
    lc.delay_ns = 50'000;
    setup_pair(lc);
    src.assign(64 * 4096, 1);
    dst.assign(64 * 4096, 0);
    ms = reg(a, src.data(), src.size());
    md = reg(b, dst.data(), dst.size());
    for (uint64_t i = 0; i < 64; ++i)
        write(i, 4096, i * 4096);
    wc e[64];
    int got = 0;
    for (int r = 0; r < 1000000 && got < 64; ++r) {
        pump();
        clk.advance(1'000);
        got += poll_cq(a.scq, 64, e);
    }
    ASSERT_EQ(got, 64);
    EXPECT_GT(a.qp->loss.window, min_unacked_psns);
    EXPECT_LE(a.qp->loss.window, max_unacked_psns);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 64 * 4096), 0);
}

TEST_F(loss, probe_off_leaves_the_timeout) {
    std::vector<uint8_t> s(100), d(100);
    make_link();
    device_config cfg;
    for (endpoint *e : {&a, &b}) {
        cfg.dev = e->port;
        cfg.pool = test_pool();
        cfg.gids[0] = gid_for(e == &a ? 0 : 1);
        cfg.num_gids = 1;
        cfg.clock = &clk;
        cfg.seed = e == &a ? 11 : 22;
        cfg.tail_loss_probe = false;
        e->ctx = open_device(cfg);
        ASSERT_NE(e->ctx, nullptr);
        e->pd = alloc_pd(e->ctx);
        e->scq = create_cq(e->ctx, opt.cqe);
        e->rcq = create_cq(e->ctx, opt.cqe);
        e->g = cfg.gids[0];
        e->mac = e == &a ? mac_a : mac_b;
        e->qp = make_qp(*e);
    }
    connect(a, b, opt.psn_a, opt.psn_b);
    connect(b, a, opt.psn_b, opt.psn_a);
    ms = reg(a, s.data(), 100);
    md = reg(b, d.data(), 100);
    bool dropped = false;
    link->set_filter([&](rte_mbuf *, const memlink_port *from) {
        if (from == b.port && !dropped) {
            dropped = true;
            return false;
        }
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, s.data(), 100, ms, 1,
                       reinterpret_cast<uint64_t>(d.data()), mr_rkey(md)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(a.qp->cnt.timeouts, 1u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 0u);
}

/* A peer that answers late once (a jittery software responder: rxe under
 * emulation answers in microseconds or in milliseconds): the probe goes,
 * the original's ACK comes, then the ACK of the probe's duplicate, which
 * shows the probe spurious. The PTO doubles, and comes back after 16 calm
 * RTT samples; nothing but the probe is resent and the data is right. */
TEST_F(loss, late_answer_makes_the_probe_spurious_and_backs_off) {
    memlink_config lc;
    lc.delay = 1.0;
    lc.delay_ns = 100'000; /* each way */
    setup_pair(lc);
    src.assign(4096, 1);
    dst.assign(4096, 0);
    fill_pattern(src.data(), src.size(), 3);
    ms = reg(a, src.data(), 4096);
    md = reg(b, dst.data(), 4096);
    uint64_t id = 0;
    auto one = [&] {
        write(id++, 1024);
        wc e;
        int got = 0;
        for (int r = 0; r < 100000 && got == 0; ++r) {
            if (!pump()) clk.advance(1'000);
            got = poll_cq(a.scq, 1, &e);
        }
        ASSERT_EQ(got, 1);
        ASSERT_EQ(e.status, wc_status::success);
    };
    for (int i = 0; i < 10; ++i)
        one();
    ASSERT_EQ(a.qp->cnt.tlp_probes, 0u);
    const uint64_t pto = loss_probe_delay_ns(a.qp);
    ASSERT_LT(pto, 1'000'000u);
    /* one message whose frames take 300 us each way: the probe fires after a
     * PTO (~400 us), before the original's ACK (600 us) */
    ASSERT_LT(pto, 600'000u);
    link->set_faults(0, 0, 0, 0, 1.0, 300'000);
    one();
    link->set_faults(0, 0, 0, 0, 1.0, 100'000);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    /* the duplicate's ACK is still on its way */
    for (int r = 0; r < 5000; ++r)
        if (!pump()) clk.advance(1'000);
    EXPECT_EQ(a.qp->cnt.tlp_spurious, 1u);
    EXPECT_GE(a.qp->cnt.dup_responses, 1u);
    EXPECT_EQ(a.qp->loss.backoff, 1u);
    EXPECT_EQ(a.qp->cnt.retransmits, 0u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    /* Karn: the late sample was not taken, so the PTO is exactly doubled */
    EXPECT_EQ(loss_probe_delay_ns(a.qp), 2 * pto);
    for (int i = 0; i < 16; ++i)
        one();
    EXPECT_EQ(a.qp->loss.backoff, 0u);
    EXPECT_EQ(loss_probe_delay_ns(a.qp), pto);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 1024), 0);
}

/* A lost ACK: the probe is needed (the duplicate's ACK is the only one), so
 * it is not counted spurious and the PTO does not back off. */
TEST_F(loss, needed_probe_is_not_spurious) {
    setup(100);
    warm_up();
    bool dropped = false;
    link->set_filter([&](rte_mbuf *, const memlink_port *from) {
        if (from == b.port && !dropped) {
            dropped = true;
            return false;
        }
        return true;
    });
    write(1, 100);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    settle();
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(a.qp->cnt.tlp_spurious, 0u);
    EXPECT_EQ(a.qp->loss.backoff, 0u);
}

/* The device goes unpolled for longer than the PTO right after sending (the
 * thread descheduled; on one core the peer's stack with it, as in
 * uroce-perf --loopback): nothing is lost, the request waits unread in the
 * peer's queue. The timer that fires at the first poll after the gap waits
 * an SRTT more instead of probing, and the ACK comes in that time. Before the
 * change the gap drew a probe, a duplicate the responder dropped. */
TEST_F(loss, unpolled_gap_draws_no_probe) {
    setup(100);
    warm_up();
    const uint64_t pto = loss_probe_delay_ns(a.qp);
    write(1, 100);
    a.ctx->poll();        /* the request leaves; neither side polls again ... */
    clk.advance(3 * pto); /* ... for three PTOs */
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 0u);
    EXPECT_EQ(a.qp->cnt.tlp_deferred, 1u);
    EXPECT_EQ(b.qp->cnt.dup_requests, 0u);
    EXPECT_EQ(a.qp->cnt.retrans_pkts, 0u);
}

/* The gap comes early in the silence, not over the deadline: over a link
 * of 100 us each way (PTO ~400 us) the device goes unpolled for 0.8 PTO
 * right after sending, then polls every microsecond. The answer comes
 * 0.8 PTO + an RTT after the send, past the deadline; the silence the
 * device saw while polling was less than a PTO, so no probe. */
TEST_F(loss, early_unpolled_gap_draws_no_probe) {
    memlink_config lc;
    lc.delay = 1.0;
    lc.delay_ns = 100'000; /* each way */
    setup_pair(lc);
    src.assign(4096, 1);
    dst.assign(4096, 0);
    fill_pattern(src.data(), src.size(), 5);
    ms = reg(a, src.data(), 4096);
    md = reg(b, dst.data(), 4096);
    uint64_t id = 0;
    auto wait_one = [&] {
        wc e;
        int got = 0;
        for (int r = 0; r < 100000 && got == 0; ++r) {
            if (!pump()) clk.advance(1'000);
            got = poll_cq(a.scq, 1, &e);
        }
        ASSERT_EQ(got, 1);
        ASSERT_EQ(e.status, wc_status::success);
    };
    for (int i = 0; i < 10; ++i) {
        write(id++, 1024);
        wait_one();
    }
    const uint64_t pto = loss_probe_delay_ns(a.qp);
    ASSERT_GE(pto, 400'000u);
    ASSERT_LT(pto, 500'000u);
    write(id++, 1024);
    a.ctx->poll();             /* the request leaves; nothing polls ... */
    clk.advance(pto * 8 / 10); /* ... for 0.8 PTO (longer than half of it) */
    wait_one();
    EXPECT_EQ(a.qp->cnt.tlp_probes, 0u);
    EXPECT_EQ(a.qp->cnt.tlp_deferred, 1u);
    EXPECT_EQ(b.qp->cnt.dup_requests, 0u);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 1024), 0);
}

/* A real tail loss behind the same gap: the timer waits an SRTT once,
 * then probes as before; recovered long before the ACK timeout, no retry. */
TEST_F(loss, tail_loss_behind_unpolled_gap_still_probed) {
    setup(100);
    warm_up();
    const uint64_t pto = loss_probe_delay_ns(a.qp);
    drop_requests(0, 0);
    uint64_t t0 = clk.now_ns();
    write(1, 100);
    a.ctx->poll();
    clk.advance(3 * pto);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_LT(clk.now_ns() - t0, local_ack_timeout_ns(14) / 10);
    EXPECT_EQ(a.qp->cnt.tlp_deferred, 1u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(a.qp->cnt.tlp_recoveries, 1u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->comp.retry_left, opt.retry_cnt);
}

/* Polled without gaps (a poll per microsecond), a lost tail packet is
 * probed one PTO after the silence began: nothing is put off. */
TEST_F(loss, tail_loss_on_a_polled_device_probed_after_one_pto) {
    idle_step_ns = 1'000;
    setup(100);
    warm_up();
    const uint64_t pto = loss_probe_delay_ns(a.qp);
    drop_requests(0, 0);
    write(1, 100);
    const uint64_t t0 = clk.now_ns();
    ASSERT_TRUE(run_until([&] { return a.qp->cnt.tlp_probes > 0; }));
    EXPECT_EQ(a.qp->cnt.tlp_deferred, 0u);
    EXPECT_LE(clk.now_ns() - t0, pto + 2 * idle_step_ns);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 1u);
    EXPECT_EQ(src, dst);
}

/* A round trip measured before the QP's first (the CM handshake,
 * loss_seed_rtt) stands in for its first RTT sample: a first message over
 * a link of 2 ms each way goes without a probe, where the 1 ms first guess
 * probed; the QP's own first sample then replaces it, and min_rtt_ns
 * (which judges probes spurious) comes from real samples only. A QP that
 * has a sample of its own ignores a later seed. */
TEST_F(loss, seeded_rtt_is_the_first_sample) {
    memlink_config lc;
    lc.delay = 1.0;
    lc.delay_ns = 2'000'000; /* each way */
    setup_pair(lc);
    src.assign(4096, 1);
    dst.assign(4096, 0);
    ms = reg(a, src.data(), 4096);
    md = reg(b, dst.data(), 4096);
    auto one = [&](uint64_t id) {
        write(id, 1024);
        wc e;
        int got = 0;
        for (int r = 0; r < 1000000 && got == 0; ++r) {
            if (!pump()) clk.advance(10'000);
            got = poll_cq(a.scq, 1, &e);
        }
        ASSERT_EQ(got, 1);
        ASSERT_EQ(e.status, wc_status::success);
    };
    /* unseeded, the first message is probed at the 1 ms guess */
    ASSERT_EQ(a.qp->loss.srtt_ns, 0u);
    EXPECT_EQ(loss_probe_delay_ns(a.qp), 1'000'000u);
    one(1);
    EXPECT_GE(a.qp->cnt.tlp_probes, 1u);

    /* a new pair of QPs, a's RTT seeded with the link's */
    qp *qa = make_qp(a), *qb = make_qp(b);
    ASSERT_TRUE(qa && qb);
    connect(a, b, opt.psn_a, opt.psn_b, qa, qb);
    connect(b, a, opt.psn_b, opt.psn_a, qb, qa);
    a.qp = qa;
    b.qp = qb;
    const uint64_t probes = a.qp->cnt.tlp_probes;
    ASSERT_EQ(probes, 0u);
    ASSERT_EQ(a.qp->loss.srtt_ns, 0u);
    loss_seed_rtt(a.qp, 4'000'000);
    EXPECT_EQ(a.qp->loss.srtt_ns, 4'000'000u);
    EXPECT_EQ(a.qp->loss.rttvar_ns, 2'000'000u);
    EXPECT_EQ(a.qp->loss.min_rtt_ns, 0u);
    EXPECT_EQ(loss_probe_delay_ns(a.qp), 12'000'000u); /* SRTT + 4 x RTTVAR */
    one(2);
    EXPECT_EQ(a.qp->cnt.tlp_probes, probes);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    /* the real sample (4 ms and a little) replaces the seed, and is the
     * minimum too */
    EXPECT_GE(a.qp->loss.min_rtt_ns, 4'000'000u);
    EXPECT_LT(a.qp->loss.min_rtt_ns, 4'100'000u);
    EXPECT_EQ(a.qp->loss.srtt_ns, a.qp->loss.min_rtt_ns);
    EXPECT_EQ(a.qp->loss.rttvar_ns, a.qp->loss.min_rtt_ns / 2);
    /* a sample of its own: a seed changes nothing */
    const uint64_t srtt = a.qp->loss.srtt_ns;
    loss_seed_rtt(a.qp, 500'000'000);
    EXPECT_EQ(a.qp->loss.srtt_ns, srtt);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 1024), 0);
}

/* The RTT estimate follows a link delay (RFC 6298's estimator). */
TEST_F(loss, srtt_follows_the_link_delay) {
    memlink_config lc;
    lc.delay = 1.0;
    lc.delay_ns = 100'000; /* each way */
    setup_pair(lc);
    src.assign(4096, 1);
    dst.assign(4096, 0);
    ms = reg(a, src.data(), 4096);
    md = reg(b, dst.data(), 4096);
    for (uint64_t i = 0; i < 20; ++i) {
        write(i, 1024);
        /* run_until waits for an empty link before time passes: here frames
         * are in flight until time passes */
        wc e;
        int got = 0;
        for (int r = 0; r < 100000 && got == 0; ++r) {
            if (!pump()) clk.advance(1'000);
            got = poll_cq(a.scq, 1, &e);
        }
        ASSERT_EQ(got, 1);
        ASSERT_EQ(e.status, wc_status::success);
    }
    EXPECT_GE(a.qp->loss.srtt_ns, 200'000u);
    EXPECT_LT(a.qp->loss.srtt_ns, 210'000u);
    EXPECT_GE(a.qp->loss.min_rtt_ns, 200'000u);
    EXPECT_EQ(a.qp->cnt.tlp_probes, 0u); /* 2 x SRTT never passed without an ACK */
    /* one message in flight at a time: the BDP cap sits at its floor */
    EXPECT_EQ(a.qp->loss.window, min_unacked_psns);
    EXPECT_GT(a.qp->loss.delivery_pps, 0u);
    /* the probe waits 2 x SRTT at least, and no more than half the ACK timeout */
    EXPECT_GE(loss_probe_delay_ns(a.qp), 2 * a.qp->loss.srtt_ns);
    EXPECT_LE(loss_probe_delay_ns(a.qp), local_ack_timeout_ns(14) / 2);
}

} // namespace

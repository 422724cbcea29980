/* SPDX-License-Identifier: BSD-3-Clause
 * The device's control path (uroce_device.cpp): QP table lookups;
 * close_device with work outstanding; the QPN range a device hands out (its
 * QPNs, their lookup, and traffic between devices with different ranges, as
 * shards have). The GSI QP1: created on request outside the QP table,
 * found by the receive path, its Q_Key fixed and enforced, its MADs sent as
 * rxe sends them. modify_srq and resize_cq: rxe's checks, and the posted
 * WQEs / unpolled completions kept in order across a resize. The driver
 * contract on TX is in uroce_device_poll_test.cpp.
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

/* ---------------------------------------------------------------- the GSI QP1 */

/* modify_srq with rxe_srq_chk_attr's checks; a resize keeps the posted
 * WQEs, in order, and the armed limit. */
TEST_F(device_t, modify_srq_checks_and_resizes_keeping_posted_wqes) {
    setup_pair();
    device_attr da;
    ASSERT_EQ(query_device(b.ctx, &da), verbs_error::ok);
    auto device_attr_max_srq_wr = [&] { return da.max_srq_wr; };
    srq_init_attr sa;
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    srq *s = create_srq(b.pd, sa);
    ASSERT_NE(s, nullptr);
    srq_attr at;
    at.srq_limit = 9; /* above max_wr */
    EXPECT_EQ(modify_srq(s, at, srq_attr_limit), verbs_error::inval);
    at.max_wr = 0;
    EXPECT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::inval);
    at.max_wr = device_attr_max_srq_wr() + 1;
    EXPECT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::inval);
    EXPECT_EQ(modify_srq(s, at, 1u << 2), verbs_error::inval); /* no such attribute */
    at.srq_limit = 4;
    ASSERT_EQ(modify_srq(s, at, srq_attr_limit), verbs_error::ok);
    at.max_wr = 3; /* below the armed limit */
    EXPECT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::inval);
    /* 6 WQEs posted: a ring of 5 cannot hold them */
    std::vector<uint8_t> src(64), dst(64 * 6);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (int i = 0; i < 6; ++i) {
        sge g{reinterpret_cast<uint64_t>(dst.data() + 64 * i), 64, mr_lkey(md)};
        recv_wr r;
        r.wr_id = 10 + uint64_t(i);
        r.sg_list = &g;
        r.num_sge = 1;
        recv_wr *bad;
        ASSERT_EQ(post_srq_recv(s, &r, &bad), verbs_error::ok);
    }
    at.max_wr = 5;
    EXPECT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::inval);
    srq_attr q;
    ASSERT_EQ(query_srq(s, &q), verbs_error::ok);
    EXPECT_EQ(q.max_wr, 8u); /* nothing changed by the refusals */
    EXPECT_EQ(q.srq_limit, 4u);
    /* grow to 64 with the 6 WQEs in it, then shrink to exactly 6 */
    at.max_wr = 64;
    ASSERT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::ok);
    at.max_wr = 6;
    ASSERT_EQ(modify_srq(s, at, srq_attr_max_wr), verbs_error::ok);
    ASSERT_EQ(query_srq(s, &q), verbs_error::ok);
    EXPECT_EQ(q.max_wr, 6u);
    EXPECT_EQ(q.max_sge, 1u);
    EXPECT_EQ(q.srq_limit, 4u);
    recv_wr extra;
    recv_wr *bad;
    EXPECT_EQ(post_srq_recv(s, &extra, &bad), verbs_error::nomem); /* full at 6 */
    /* the WQEs are taken in the order posted, each with its own buffer */
    qp *b1 = make_qp(b, s), *a1 = make_qp(a);
    connect(a, b, 100, 200, a1, b1);
    connect(b, a, 200, 100, b1, a1);
    for (int i = 0; i < 6; ++i) {
        std::memset(src.data(), 'a' + i, src.size());
        ASSERT_EQ(
            post_one(a, wr_opcode::send, src.data(), 64, ms, uint64_t(i), 0, 0, send_signaled, a1),
            verbs_error::ok);
        ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    }
    auto rw = poll_n(b.rcq, 6);
    ASSERT_EQ(rw.size(), 6u);
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(rw[i].status, wc_status::success);
        EXPECT_EQ(rw[i].wr_id, 10u + uint64_t(i));
        EXPECT_EQ(dst[64 * i], uint8_t('a' + i)) << i;
    }
}

/* resize_cq with rxe_cq_chk_attr's checks; the unpolled completions stay,
 * in order, whatever the new size. */
TEST_F(device_t, resize_cq_keeps_unpolled_completions_in_order) {
    opt.cqe = 16;
    setup_pair();
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, i,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return cq_count(a.scq) == 10; }));
    EXPECT_EQ(cq_size(a.scq), 16u);
    EXPECT_EQ(resize_cq(a.scq, 9), verbs_error::inval); /* below the 10 held */
    EXPECT_EQ(resize_cq(a.scq, 0), verbs_error::inval);
    device_attr da;
    ASSERT_EQ(query_device(a.ctx, &da), verbs_error::ok);
    EXPECT_EQ(resize_cq(a.scq, int(da.max_cqe) + 1), verbs_error::inval);
    EXPECT_EQ(cq_size(a.scq), 16u);
    ASSERT_EQ(resize_cq(a.scq, 10), verbs_error::ok);
    EXPECT_EQ(cq_size(a.scq), 10u);
    EXPECT_EQ(cq_count(a.scq), 10u);
    wc w[4];
    ASSERT_EQ(poll_cq(a.scq, 4, w), 4);
    for (uint64_t i = 0; i < 4; ++i)
        EXPECT_EQ(w[i].wr_id, i);
    /* grow with 6 still held (the ring's start is no longer slot 0) */
    ASSERT_EQ(resize_cq(a.scq, 1000), verbs_error::ok);
    EXPECT_EQ(cq_size(a.scq), 1000u);
    for (uint64_t i = 10; i < 100; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, i,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
    auto rest = poll_n(a.scq, 96);
    ASSERT_EQ(rest.size(), 96u);
    for (size_t i = 0; i < rest.size(); ++i) {
        EXPECT_EQ(rest[i].wr_id, 4 + i);
        EXPECT_EQ(rest[i].status, wc_status::success);
    }
    EXPECT_EQ(device_counters(a.ctx).cq_overflows, 0u); /* 96 > the old 16 */
}

class gsi_t : public pair_fixture {
  protected:
    qp *gsi_a = nullptr, *gsi_b = nullptr;

    qp *make_gsi(endpoint &e) {
        qp_init_attr ia;
        ia.send_cq = e.scq;
        ia.recv_cq = e.rcq;
        ia.qp_type = qp_type::ud;
        ia.cap.max_send_wr = 16;
        ia.cap.max_recv_wr = 16;
        verbs_error err;
        qp *q = create_gsi_qp(e.pd, ia, &err);
        EXPECT_NE(q, nullptr) << verbs_error_str(err);
        if (!q) return nullptr;
        qp_connect_attr ca;
        ca.qkey = 0x80010000u;
        ca.sq_psn = 0;
        EXPECT_EQ(connect_qp(q, ca), verbs_error::ok);
        return q;
    }
    void SetUp() override {
        pair_fixture::SetUp();
        opt.type = qp_type::ud;
        setup_pair();
        gsi_a = make_gsi(a);
        gsi_b = make_gsi(b);
        ASSERT_TRUE(gsi_a && gsi_b);
    }
    /* A 256-byte datagram from a's QP1 to b's QPN dst with Q_Key qkey. */
    void send_mad(uint32_t dst, uint32_t qkey, mr *m, uint8_t *buf) {
        ah *h = create_ah(a.pd, ah_to(b));
        ASSERT_NE(h, nullptr);
        sge s{reinterpret_cast<uint64_t>(buf), 256, mr_lkey(m)};
        send_wr w;
        w.wr_id = 7;
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = wr_opcode::send;
        w.send_flags = send_signaled;
        w.wr.ud.ah = h;
        w.wr.ud.remote_qpn = dst;
        w.wr.ud.remote_qkey = qkey;
        send_wr *bad = nullptr;
        ASSERT_EQ(post_send(gsi_a, &w, &bad), verbs_error::ok);
    }
};

TEST_F(gsi_t, qp1_is_one_per_device_outside_the_table) {
    EXPECT_EQ(qp_num(gsi_a), 1u);
    EXPECT_EQ(a.ctx->lookup_qp(1), gsi_a);
    EXPECT_EQ(a.ctx->lookup_qp(0), nullptr);
    EXPECT_EQ(a.ctx->lookup_qp(qp_num(a.qp)), a.qp); /* the table is untouched */
    qp_init_attr ia;
    ia.send_cq = a.scq;
    ia.recv_cq = a.rcq;
    ia.qp_type = qp_type::ud;
    verbs_error err = verbs_error::ok;
    EXPECT_EQ(create_gsi_qp(a.pd, ia, &err), nullptr);
    EXPECT_EQ(err, verbs_error::busy);
    /* its Q_Key is the GSI's for good */
    qp_attr at;
    at.qkey = 0x11111111;
    EXPECT_EQ(modify_qp(gsi_a, at, qp_attr_qkey), verbs_error::inval);
    at.qkey = 0x80010000u;
    EXPECT_EQ(modify_qp(gsi_a, at, qp_attr_qkey), verbs_error::ok);
    std::vector<uint32_t> qpns;
    for_each_qp(a.ctx, [&](const qp *q) { qpns.push_back(qp_num(q)); });
    ASSERT_EQ(qpns.size(), 2u);
    EXPECT_EQ(qpns[0], 1u); /* QPN order */
    ASSERT_EQ(destroy_qp(gsi_a), verbs_error::ok);
    gsi_a = nullptr;
    EXPECT_EQ(a.ctx->lookup_qp(1), nullptr);
    ia.qp_type = qp_type::rc;
    EXPECT_EQ(create_gsi_qp(a.pd, ia, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    ia.qp_type = qp_type::ud;
    EXPECT_NE(create_gsi_qp(a.pd, ia, &err), nullptr) << "QP1 again after it was destroyed";
}

TEST_F(gsi_t, mads_travel_as_rxe_sends_them) {
    std::vector<uint8_t> out(256), in(40 + 256);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = uint8_t(i * 7);
    mr *mo = reg(a, out.data(), out.size());
    mr *mi = reg(b, in.data(), in.size());
    ASSERT_EQ(post_recv_buf(b, in.data(), uint32_t(in.size()), mi, 9, gsi_b), verbs_error::ok);
    int frames = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        if (from != a.port) return true;
        roce_packet p = peek(m);
        frames++;
        EXPECT_EQ(p.bth()->opcode, to_u8(ib_opcode::ud_send_only));
        EXPECT_EQ(p.dest_qp(), 1u);
        EXPECT_EQ(p.bth()->pkey(), 0xffff);
        EXPECT_EQ(p.deth()->qkey(), 0x80010000u);
        EXPECT_EQ(p.deth()->src_qp(), 1u);
        EXPECT_EQ(p.udp()->src_port(), 55410) << "rxe's QP1 source port (ud_udp_sport(1))";
        EXPECT_EQ(p.payload_len, 256u);
        return true;
    });
    send_mad(1, 0x80010000u, mo, out.data());
    std::vector<wc> got = poll_n(b.rcq, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, wc_status::success);
    EXPECT_EQ(got[0].src_qp, 1u);
    EXPECT_EQ(got[0].qp_num, 1u);
    EXPECT_EQ(got[0].byte_len, 40u + 256);
    EXPECT_EQ(std::memcmp(in.data() + 40, out.data(), 256), 0);
    EXPECT_EQ(load_be32(in.data() + 20 + 12), 0x0a000001u) << "GRH: the sender's IPv4 address";
    EXPECT_EQ(frames, 1);
}

TEST_F(gsi_t, another_qkey_is_dropped_and_counted) {
    std::vector<uint8_t> out(256), in(40 + 256);
    mr *mo = reg(a, out.data(), out.size());
    mr *mi = reg(b, in.data(), in.size());
    ASSERT_EQ(post_recv_buf(b, in.data(), uint32_t(in.size()), mi, 9, gsi_b), verbs_error::ok);
    send_mad(1, 0x00010000u, mo, out.data()); /* high bit clear: sent as given */
    settle();
    wc w;
    EXPECT_EQ(poll_cq(b.rcq, 1, &w), 0);
    EXPECT_EQ(qp_counters_of(gsi_b).ud_qkey_drops, 1u);
    /* the right one still arrives */
    send_mad(1, 0x80010000u, mo, out.data());
    EXPECT_EQ(poll_n(b.rcq, 1).size(), 1u);
}

} // namespace

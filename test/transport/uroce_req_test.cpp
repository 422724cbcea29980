/* SPDX-License-Identifier: BSD-3-Clause
 * Requester, watched on the wire: FIRST/MIDDLE/LAST/ONLY segmentation at
 * every MTU, PSNs (a READ consumes ceil(len/MTU)), AckReq placement, the
 * unacked-PSN window, max_rd_atomic, fences, PSN wrap.
 */
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "uroce_psn.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

struct seen_pkt {
    uint8_t opcode;
    uint32_t psn;
    bool ack_req;
    uint32_t payload;
    bool from_a;
};

class req : public pair_fixture {
  protected:
    std::vector<seen_pkt> wire;
    void watch() {
        link->set_filter([this](rte_mbuf *m, const memlink_port *from) {
            roce_packet p = peek(m);
            wire.push_back({p.opcode, p.psn(), p.bth()->ack_req(), p.payload_len, from == a.port});
            return true;
        });
    }
    std::vector<seen_pkt> from_a() const {
        std::vector<seen_pkt> v;
        for (auto &s : wire)
            if (s.from_a) v.push_back(s);
        return v;
    }
};

TEST_F(req, segmentation_at_every_mtu) {
    for (mtu m : {mtu::mtu_256, mtu::mtu_512, mtu::mtu_1024, mtu::mtu_2048, mtu::mtu_4096}) {
        opt.path_mtu = m;
        setup_pair();
        watch();
        uint32_t bytes = mtu_to_bytes(m);
        std::vector<uint8_t> src(bytes * 3 + 5), dst(bytes * 3 + 5);
        mr *ms = reg(a, src.data(), src.size());
        mr *md = reg(b, dst.data(), dst.size());
        uint32_t psn0 = a.qp->req.psn;
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), bytes * 3 + 5, ms, 1,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), bytes, ms, 2,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, src.data(), bytes * 2 + 1, ms, 3,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 0, ms, 4,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        ASSERT_EQ(poll_n(a.scq, 4).size(), 4u);
        auto v = from_a();
        using O = ib_opcode;
        std::vector<uint8_t> expect = {
            to_u8(O::rc_rdma_write_first),  to_u8(O::rc_rdma_write_middle),
            to_u8(O::rc_rdma_write_middle), to_u8(O::rc_rdma_write_last),
            to_u8(O::rc_rdma_write_only),   to_u8(O::rc_rdma_read_request),
            to_u8(O::rc_rdma_write_only)};
        ASSERT_EQ(v.size(), expect.size()) << bytes;
        for (size_t i = 0; i < v.size(); ++i)
            EXPECT_EQ(v[i].opcode, expect[i]) << bytes << " " << i;
        EXPECT_EQ(v[3].payload, 5u);
        EXPECT_EQ(v[4].payload, bytes);
        EXPECT_EQ(v[6].payload, 0u);
        /* PSNs: 4 + 1 for the writes, the READ takes ceil((2*mtu+1)/mtu) = 3 */
        for (size_t i = 0; i < 6; ++i)
            EXPECT_EQ(v[i].psn, psn_add(psn0, uint32_t(i)));
        EXPECT_EQ(v[6].psn, psn_add(psn0, 5 + 3));
        /* AckReq on the last packet of each message only (short messages) */
        EXPECT_FALSE(v[0].ack_req);
        EXPECT_TRUE(v[3].ack_req);
        EXPECT_TRUE(v[4].ack_req);
        /* three READ responses: FIRST, MIDDLE, LAST */
        std::vector<uint8_t> resp_ops;
        for (auto &s : wire)
            if (!s.from_a && s.opcode != to_u8(O::rc_acknowledge)) resp_ops.push_back(s.opcode);
        ASSERT_EQ(resp_ops.size(), 3u);
        EXPECT_EQ(resp_ops[0], to_u8(O::rc_rdma_read_response_first));
        EXPECT_EQ(resp_ops[1], to_u8(O::rc_rdma_read_response_middle));
        EXPECT_EQ(resp_ops[2], to_u8(O::rc_rdma_read_response_last));
        TearDown();
        wire.clear();
    }
}

TEST_F(req, send_opcodes_with_imm_and_inv) {
    setup_pair();
    watch();
    std::vector<uint8_t> src(2500), dst(2500);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size(), access_local_write | access_remote_invalidate);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(post_recv_buf(b, dst.data(), 2500, md, i), verbs_error::ok);
    sge s{reinterpret_cast<uint64_t>(src.data()), 2500, mr_lkey(ms)};
    send_wr w;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send_with_imm;
    w.imm_data = 1;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    w.opcode = wr_opcode::send_with_inv;
    w.invalidate_rkey = mr_rkey(md);
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    s.length = 10;
    w.opcode = wr_opcode::send_with_imm;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 3).size(), 3u);
    auto v = from_a();
    using O = ib_opcode;
    std::vector<uint8_t> expect = {to_u8(O::rc_send_first),    to_u8(O::rc_send_middle),
                                   to_u8(O::rc_send_last_imm), to_u8(O::rc_send_first),
                                   to_u8(O::rc_send_middle),   to_u8(O::rc_send_last_inv),
                                   to_u8(O::rc_send_only_imm)};
    ASSERT_EQ(v.size(), expect.size());
    for (size_t i = 0; i < v.size(); ++i)
        EXPECT_EQ(v[i].opcode, expect[i]) << i;
}

TEST_F(req, ack_req_every_n_and_window) {
    opt.path_mtu = mtu::mtu_256;
    setup_pair();
    std::vector<uint8_t> src(256 * 300), dst(256 * 300);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    size_t max_outstanding = 0;
    uint32_t last_acked = a.qp->req.psn;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        roce_packet p = peek(m);
        wire.push_back({p.opcode, p.psn(), p.bth()->ack_req(), p.payload_len, from == a.port});
        if (from == b.port) last_acked = psn_add(p.psn(), 1);
        if (from == a.port)
            max_outstanding =
                std::max<size_t>(max_outstanding, size_t(psn_diff(p.psn(), last_acked)) + 1);
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 256 * 300, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    auto v = from_a();
    ASSERT_EQ(v.size(), 300u);
    size_t since = 0;
    for (auto &s : v) {
        ++since;
        if (s.ack_req) since = 0;
        EXPECT_LE(since, ack_req_interval);
    }
    EXPECT_TRUE(v.back().ack_req);
    EXPECT_LE(max_outstanding, size_t(max_unacked_psns));
    EXPECT_GT(max_outstanding, size_t(ack_req_interval));
}

/* The in-flight window (uroce_loss.cpp: 16 PSNs and up) can be smaller
 * than the AckReq interval (32): the packet that fills it asks for an ACK,
 * or a message longer than the window stops on a packet that draws no
 * response and waits for a probe or the ACK timeout (here with the probe
 * off: one timeout and a go-back-N resend of the window per stop). */
TEST_F(req, ack_req_when_the_window_fills) {
    opt.path_mtu = mtu::mtu_256;
    opt.tail_loss_probe = false;
    setup_pair();
    a.qp->loss.window = min_unacked_psns;
    std::vector<uint8_t> src(256 * 100), dst(256 * 100);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 3);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 256 * 100, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto w = poll_n(a.scq, 1);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_LE(a.qp->loss.window, ack_req_interval); /* the case this test is about */
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.retrans_pkts, 0u);
}

TEST_F(req, max_rd_atomic_limits_outstanding_reads) {
    opt.max_rd_atomic = 2;
    setup_pair();
    std::vector<uint8_t> src(1000), dst(1000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    int in_flight = 0, max_in_flight = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *) {
        roce_packet p = peek(m);
        if (p.opcode == to_u8(ib_opcode::rc_rdma_read_request))
            max_in_flight = std::max(max_in_flight, ++in_flight);
        if (p.opcode == to_u8(ib_opcode::rc_rdma_read_response_only)) --in_flight;
        return true;
    });
    for (int i = 0; i < 10; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, src.data(), 100, ms, i,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 10).size(), 10u);
    EXPECT_EQ(max_in_flight, 2);
}

TEST_F(req, fence_waits_for_prior_reads) {
    setup_pair();
    std::vector<uint8_t> local(64), remote(64);
    mr *ml = reg(a, local.data(), 64);
    mr *mrem = reg(b, remote.data(), 64);
    std::vector<uint8_t> order;
    link->set_filter([&](rte_mbuf *m, const memlink_port *) {
        order.push_back(peek(m).opcode);
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 64, ml, 1,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, local.data(), 64, ml, 2,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem),
                       send_signaled | send_fence),
              verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 2).size(), 2u);
    using O = ib_opcode;
    /* the fenced WRITE leaves only after the READ response came back */
    auto r = std::find(order.begin(), order.end(), to_u8(O::rc_rdma_read_response_only));
    auto w = std::find(order.begin(), order.end(), to_u8(O::rc_rdma_write_only));
    ASSERT_NE(r, order.end());
    ASSERT_NE(w, order.end());
    EXPECT_LT(r - order.begin(), w - order.begin());
    /* without the fence it goes right away */
    order.clear();
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 64, ml, 3,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, local.data(), 64, ml, 4,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 2).size(), 2u);
    r = std::find(order.begin(), order.end(), to_u8(O::rc_rdma_read_response_only));
    w = std::find(order.begin(), order.end(), to_u8(O::rc_rdma_write_only));
    EXPECT_GT(r - order.begin(), w - order.begin());
}

TEST_F(req, psn_wraps) {
    opt.psn_a = 0xfffffe;
    opt.path_mtu = mtu::mtu_256;
    setup_pair();
    std::vector<uint8_t> src(256 * 10), dst(256 * 10);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 1);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 2560, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    std::vector<uint8_t> back(2560);
    mr *mb = reg(a, back.data(), back.size());
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, back.data(), 2560, mb, 2,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(sw[1].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(src, back);
    EXPECT_EQ(a.qp->req.psn, uint32_t((0xfffffe + 20) & 0xffffff));
}

TEST_F(req, bad_lkey_is_a_local_protection_error) {
    setup_pair();
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), 64);
    mr *md = reg(b, dst.data(), 64);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    sge s{reinterpret_cast<uint64_t>(src.data()), 128, mr_lkey(ms)}; /* past the MR */
    send_wr w;
    w.wr_id = 2;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto sw = poll_n(a.scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(sw[1].status, wc_status::loc_prot_err);
    EXPECT_EQ(a.qp->state, qp_state::err);
}

TEST_F(req, dereg_with_wrs_in_flight_is_a_local_protection_error) {
    opt.timeout = 8;
    setup_pair();
    std::vector<uint8_t> src(8192), dst(8192), back(8192, 0x5a);
    mr *ms = reg(a, src.data(), src.size());
    mr *mb = reg(a, back.data(), back.size());
    mr *md = reg(b, dst.data(), dst.size());
    /* B's answers never come back: everything stays in flight */
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from == a.port; });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 8192, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    for (int i = 0; i < 20; ++i)
        pump();
    /* the source goes away; the retransmission must not read it */
    ASSERT_EQ(dereg_mr(ms), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::loc_prot_err);
    EXPECT_EQ(a.qp->state, qp_state::err);
    /* and a READ whose target goes away while its response is in flight */
    TearDown();
    setup_pair();
    mb = reg(a, back.data(), back.size());
    md = reg(b, dst.data(), dst.size());
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from == a.port; });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, back.data(), 4096, mb, 2,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    for (int i = 0; i < 20; ++i)
        pump();
    ASSERT_EQ(dereg_mr(mb), verbs_error::ok);
    link->set_filter(nullptr); /* the responses flow now */
    sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::loc_prot_err);
    for (uint8_t v : back)
        ASSERT_EQ(v, 0x5a);
}

TEST_F(req, sqd_drains_then_resumes) {
    setup_pair();
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), 64);
    mr *md = reg(b, dst.data(), 64);
    qp_attr at;
    at.qp_state = qp_state::sqd;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    settle();
    wc e;
    EXPECT_EQ(poll_cq(a.scq, 1, &e), 0); /* SQD starts nothing new */
    at.qp_state = qp_state::rts;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state), verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
}

/* IBTA 10.3.1.6 / 11.6.3.1: SQD finishes what was issued; once every issued
 * WQE has completed, sq_draining reads 0 and, when the move to SQD asked
 * for it, SQ_DRAINED is raised, once. A WQE posted in SQD waits for RTS. */
TEST_F(req, sqd_raises_sq_drained_once_the_issued_work_completes) {
    opt.timeout = 8;
    setup_pair();
    std::vector<uint8_t> src(4096), dst(4096);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    const uint64_t to = reinterpret_cast<uint64_t>(dst.data());
    auto draining = [&] {
        qp_attr q;
        qp_init_attr qi;
        EXPECT_EQ(query_qp(a.qp, &q, qp_attr_state, &qi), verbs_error::ok);
        return q.sq_draining;
    };
    /* B's answers held: the WRITE stays unacknowledged */
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from == a.port; });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 4096, ms, 1, to, mr_rkey(md)),
              verbs_error::ok);
    for (int i = 0; i < 20; ++i)
        pump();
    qp_attr at;
    at.qp_state = qp_state::sqd;
    at.en_sqd_async_notify = 1;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state | qp_attr_en_sqd_async_notify), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 2, to, mr_rkey(md)),
              verbs_error::ok);
    async_event ev;
    EXPECT_EQ(draining(), 1);
    EXPECT_FALSE(get_async_event(a.ctx, &ev)) << "the WRITE is still unacknowledged";
    link->set_filter(nullptr);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].wr_id, 1u);
    settle();
    ASSERT_TRUE(get_async_event(a.ctx, &ev));
    EXPECT_EQ(ev.type, event_type::sq_drained);
    EXPECT_EQ(ev.qp, a.qp);
    EXPECT_FALSE(get_async_event(a.ctx, &ev)) << "once";
    EXPECT_EQ(draining(), 0);
    wc e;
    EXPECT_EQ(poll_cq(a.scq, 1, &e), 0) << "the WQE posted in SQD waits";
    at.qp_state = qp_state::rts;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state), verbs_error::ok);
    sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].wr_id, 2u);
    /* nothing in flight: drained at once; not asked for: no event */
    at.qp_state = qp_state::sqd;
    at.en_sqd_async_notify = 0;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state | qp_attr_en_sqd_async_notify), verbs_error::ok);
    EXPECT_EQ(draining(), 0);
    settle();
    EXPECT_FALSE(get_async_event(a.ctx, &ev));
}

/* A UD QP sends from its own UDP source port, whatever the AH: rxe's
 * 0xC000 + hash_32(qpn, 14) (ud_udp_sport), measured on rxe's frames. */
TEST_F(req, ud_sends_from_the_qps_own_source_port) {
    opt.type = qp_type::ud;
    setup_pair();
    std::vector<uint16_t> sports;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        if (from == a.port) sports.push_back(peek(m).udp()->src_port());
        return true;
    });
    std::vector<uint8_t> buf(64), in(40 + 64);
    mr *m = reg(a, buf.data(), buf.size());
    mr *mi = reg(b, in.data(), in.size());
    ASSERT_EQ(post_recv_buf(b, in.data(), uint32_t(in.size()), mi, 1), verbs_error::ok);
    ah *h = create_ah(a.pd, ah_to(b));
    ASSERT_NE(h, nullptr);
    sge s{reinterpret_cast<uint64_t>(buf.data()), 64, mr_lkey(m)};
    send_wr w;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send;
    w.wr.ud.ah = h;
    w.wr.ud.remote_qpn = qp_num(b.qp);
    w.wr.ud.remote_qkey = 0x11111111;
    send_wr *bad = nullptr;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 1).size(), 1u);
    ASSERT_EQ(sports.size(), 1u);
    EXPECT_EQ(sports[0], ud_udp_sport(qp_num(a.qp)));
    EXPECT_NE(sports[0], ud_udp_sport(0)) << "not the AH's";
}

} // namespace

/* device::sq_stream: while the device's send queues together are larger
 * than the threshold, posting builds each WQE on the stack and writes it
 * to its slot with streaming stores. Either way the slot holds what was
 * posted and the peer gets the same bytes: a WRITE, a SEND with
 * immediate, an inline SEND, a fetch-and-add and a READ, with the
 * scatter list in the WQE's line (one SGE) and in the side array (four). */
TEST_F(req, streamed_wqes_hold_what_was_posted) {
    for (uint32_t sges : {1u, 4u}) {
        for (bool stream : {false, true}) {
            SCOPED_TRACE(std::to_string(sges) + " SGEs, streamed " + std::to_string(stream));
            opt.max_sge = sges;
            setup_pair();
            a.ctx->set_sq_stream_min_bytes(stream ? 0 : UINT64_MAX);
            ASSERT_EQ(a.ctx->sq_stream(), stream);
            std::vector<uint8_t> src(300), dst(300), inl(40);
            alignas(8) uint64_t counter = 5, fetched = 0;
            for (size_t i = 0; i < src.size(); ++i)
                src[i] = uint8_t(i * 7 + sges);
            for (size_t i = 0; i < inl.size(); ++i)
                inl[i] = uint8_t(0xa0 + i);
            mr *ms = reg(a, src.data(), src.size());
            mr *mf = reg(a, &fetched, sizeof fetched);
            mr *md = reg(b, dst.data(), dst.size());
            mr *mc = reg(b, &counter, sizeof counter);
            ASSERT_EQ(post_recv_buf(b, dst.data() + 200, 100, md, 70), verbs_error::ok);
            ASSERT_EQ(post_recv_buf(b, dst.data() + 250, 50, md, 71), verbs_error::ok);
            const uint64_t raddr = reinterpret_cast<uint64_t>(dst.data());

            ASSERT_EQ(
                post_one(a, wr_opcode::rdma_write, src.data(), 100, ms, 1, raddr, mr_rkey(md)),
                verbs_error::ok);
            const send_wqe &wq = sq_at(a.qp, a.qp->sq_head - 1);
            EXPECT_EQ(wq.wr_id, 1u);
            EXPECT_EQ(wq.opcode, wr_opcode::rdma_write);
            EXPECT_EQ(wq.length, 100u);
            EXPECT_EQ(wq.remote_addr, raddr);
            EXPECT_EQ(wq.rkey, mr_rkey(md));
            EXPECT_EQ(wq.num_sge, 1u);
            EXPECT_TRUE(wq.signaled());
            EXPECT_EQ(wq.state, wqe_state::posted);
            const sge &sg = sq_sgl(a.qp, wq)[0];
            EXPECT_EQ(sg.addr, reinterpret_cast<uint64_t>(src.data()));
            EXPECT_EQ(sg.length, 100u);
            EXPECT_EQ(sg.lkey, mr_lkey(ms));

            sge s{reinterpret_cast<uint64_t>(src.data() + 100), 100, mr_lkey(ms)};
            send_wr w;
            w.wr_id = 2;
            w.sg_list = &s;
            w.num_sge = 1;
            w.opcode = wr_opcode::send_with_imm;
            w.send_flags = send_signaled;
            w.imm_data = 0x01020304;
            send_wr *bad = nullptr;
            ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
            EXPECT_EQ(sq_at(a.qp, a.qp->sq_head - 1).imm_data, 0x01020304u);

            sge si{reinterpret_cast<uint64_t>(inl.data()), uint32_t(inl.size()), 0};
            w.wr_id = 3;
            w.sg_list = &si;
            w.opcode = wr_opcode::send;
            w.send_flags = send_signaled | send_inline;
            ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
            EXPECT_TRUE(sq_at(a.qp, a.qp->sq_head - 1).is_inline());

            sge sa{reinterpret_cast<uint64_t>(&fetched), 8, mr_lkey(mf)};
            w.wr_id = 4;
            w.sg_list = &sa;
            w.opcode = wr_opcode::atomic_fetch_and_add;
            w.send_flags = send_signaled;
            w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&counter);
            w.wr.atomic.rkey = mr_rkey(mc);
            w.wr.atomic.compare_add = 3;
            ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
            EXPECT_EQ(sq_atomic_at(a.qp, sq_at(a.qp, a.qp->sq_head - 1)).compare_add, 3u);

            ASSERT_EQ(
                post_one(a, wr_opcode::rdma_read, src.data() + 200, 100, ms, 5, raddr, mr_rkey(md)),
                verbs_error::ok);

            auto sent = poll_n(a.scq, 5);
            ASSERT_EQ(sent.size(), 5u);
            for (size_t i = 0; i < sent.size(); ++i) {
                EXPECT_EQ(sent[i].status, wc_status::success) << i;
                EXPECT_EQ(sent[i].wr_id, i + 1);
            }
            auto got = poll_n(b.rcq, 2);
            ASSERT_EQ(got.size(), 2u);
            EXPECT_EQ(got[0].imm_data, 0x01020304u);
            EXPECT_EQ(got[1].byte_len, inl.size());
            EXPECT_EQ(std::memcmp(dst.data(), src.data(), 100), 0);
            EXPECT_EQ(std::memcmp(dst.data() + 200, src.data() + 100, 50), 0);
            EXPECT_EQ(std::memcmp(dst.data() + 250, inl.data(), inl.size()), 0);
            EXPECT_EQ(counter, 8u);
            EXPECT_EQ(fetched, 5u);
            /* the READ brought the WRITE's bytes back */
            EXPECT_EQ(std::memcmp(src.data() + 200, src.data(), 100), 0);
            TearDown();
        }
    }
}

/* The threshold is over every QP's send queue, on and off as QPs come and
 * go: more than it streams, not more does not. */
TEST_F(req, streaming_follows_the_send_queues_size) {
    setup_pair();
    const uint64_t one_sq = sq_slot_bytes(a.qp);
    a.ctx->set_sq_stream_min_bytes(one_sq);
    b.ctx->set_sq_stream_min_bytes(one_sq);
    EXPECT_FALSE(a.ctx->sq_stream());
    qp *second = make_qp(a);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(a.ctx->sq_stream());
    EXPECT_FALSE(b.ctx->sq_stream()); /* a device's own queues only */
    ASSERT_EQ(destroy_qp(second), verbs_error::ok);
    EXPECT_FALSE(a.ctx->sq_stream());
    a.ctx->set_sq_stream_min_bytes(one_sq - 1);
    EXPECT_TRUE(a.ctx->sq_stream());
}

/* The default threshold: UROCE_SQ_STREAM=1 streams always, =0 never (the
 * _sq_stream run of this test sets it), else four times the core's L2. */
TEST_F(req, streaming_threshold_follows_the_environment) {
    const char *e = std::getenv("UROCE_SQ_STREAM");
    const std::string env = e ? e : "";
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const uint64_t by_cache = 4 * (l2 > 0 ? uint64_t(l2) : uint64_t(1) << 20);
    EXPECT_EQ(device::sq_stream_default_min_bytes(), env == "1"   ? 0
                                                     : env == "0" ? UINT64_MAX
                                                                  : by_cache);
    setup_pair();
    EXPECT_EQ(a.ctx->sq_stream(), env == "1");
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Asynchronous events (uroce_event.cpp, verbs.h get_async_event): the SRQ
 * limit fires once when the responder takes the SRQ below it and disarms
 * (rxe_resp.c get_srq_wqe); Last WQE Reached for an SRQ QP entering ERR,
 * by modify_qp or by the transport (rxe_resp.c flush_recv_queue); the
 * responder's fatal NAKs as QP events (IBTA 11.6.3.1); a full CQ's lost
 * completions as cq_err (rxe_cq_post); the queue's bound
 * and its overflow counter; a destroyed object's events dropped.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class event_t : public pair_fixture {
  protected:
    std::vector<async_event> drain(endpoint &e) {
        std::vector<async_event> v;
        async_event ev;
        while (get_async_event(e.ctx, &ev))
            v.push_back(ev);
        return v;
    }
    srq *make_srq(endpoint &e, uint32_t max_wr, uint32_t limit = 0) {
        srq_init_attr sa;
        sa.attr.max_wr = max_wr;
        sa.attr.max_sge = 1;
        sa.attr.srq_limit = limit;
        srq *s = create_srq(e.pd, sa);
        EXPECT_NE(s, nullptr);
        return s;
    }
    void post_srq(srq *s, uint8_t *buf, uint32_t len, mr *m, uint64_t id) {
        sge g{reinterpret_cast<uint64_t>(buf), len, mr_lkey(m)};
        recv_wr r;
        r.wr_id = id;
        r.sg_list = &g;
        r.num_sge = 1;
        recv_wr *bad;
        ASSERT_EQ(post_srq_recv(s, &r, &bad), verbs_error::ok);
    }
    void to_err(qp *q) {
        qp_attr at;
        at.qp_state = qp_state::err;
        ASSERT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    }
};

TEST_F(event_t, srq_limit_fires_once_below_the_limit_and_disarms) {
    setup_pair();
    srq *s = make_srq(b, 16);
    qp *b1 = make_qp(b, s), *a1 = make_qp(a);
    connect(a, b, 100, 200, a1, b1);
    connect(b, a, 200, 100, b1, a1);
    std::vector<uint8_t> src(64), dst(64 * 8);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (int i = 0; i < 8; ++i)
        post_srq(s, dst.data() + 64 * i, 64, md, uint64_t(i));
    srq_attr at;
    at.srq_limit = 5;
    ASSERT_EQ(modify_srq(s, at, srq_attr_limit), verbs_error::ok);
    srq_attr q;
    ASSERT_EQ(query_srq(s, &q), verbs_error::ok);
    EXPECT_EQ(q.srq_limit, 5u);
    /* 8 -> 5 WQEs: not below the limit yet */
    for (uint64_t i = 0; i < 3; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 16, ms, i, 0, 0, send_signaled, a1),
                  verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 3).size(), 3u);
    EXPECT_TRUE(drain(b).empty());
    ASSERT_EQ(query_srq(s, &q), verbs_error::ok);
    EXPECT_EQ(q.srq_limit, 5u);
    /* 5 -> 4: below; the event names the SRQ and the limit is disarmed */
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 16, ms, 3, 0, 0, send_signaled, a1),
              verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 1).size(), 1u);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, event_type::srq_limit_reached);
    EXPECT_EQ(ev[0].srq, s);
    EXPECT_EQ(ev[0].qp, nullptr);
    ASSERT_EQ(query_srq(s, &q), verbs_error::ok);
    EXPECT_EQ(q.srq_limit, 0u);
    /* disarmed: taking more raises nothing */
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 16, ms, 4, 0, 0, send_signaled, a1),
              verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 1).size(), 1u);
    EXPECT_TRUE(drain(b).empty());
    /* armed again (3 left, limit 3): the next WQE taken fires it again */
    at.srq_limit = 3;
    ASSERT_EQ(modify_srq(s, at, srq_attr_limit), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 16, ms, 5, 0, 0, send_signaled, a1),
              verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 1).size(), 1u);
    ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, event_type::srq_limit_reached);
    EXPECT_EQ(device_counters(b.ctx).async_event_overflows, 0u);
}

TEST_F(event_t, srq_limit_set_at_creation_is_armed) {
    setup_pair();
    srq *s = make_srq(b, 4, 2);
    qp *b1 = make_qp(b, s), *a1 = make_qp(a);
    connect(a, b, 100, 200, a1, b1);
    connect(b, a, 200, 100, b1, a1);
    std::vector<uint8_t> src(64), dst(64 * 2);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    post_srq(s, dst.data(), 64, md, 1);
    post_srq(s, dst.data() + 64, 64, md, 2);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 8, ms, 1, 0, 0, send_signaled, a1),
              verbs_error::ok);
    ASSERT_EQ(poll_n(b.rcq, 1).size(), 1u);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, event_type::srq_limit_reached);
}

TEST_F(event_t, last_wqe_reached_for_an_srq_qp_entering_err) {
    setup_pair();
    srq *s = make_srq(b, 8);
    qp *b1 = make_qp(b, s);
    to_err(b1);
    to_err(b.qp); /* no SRQ: no event */
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, event_type::qp_last_wqe_reached);
    EXPECT_EQ(ev[0].qp, b1);
    EXPECT_EQ(ev[0].srq, nullptr);
    /* already in ERR: entering it again raises nothing */
    to_err(b1);
    EXPECT_TRUE(drain(b).empty());
}

TEST_F(event_t, responder_access_error_raises_qp_access_err_and_last_wqe) {
    setup_pair();
    srq *s = make_srq(b, 8);
    qp *b1 = make_qp(b, s), *a1 = make_qp(a);
    connect(a, b, 100, 200, a1, b1);
    connect(b, a, 200, 100, b1, a1);
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    /* a WRITE with a wrong R_Key: B NAKs it (remote access error) and goes to ERR */
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md) ^ 0x100, send_signaled,
                       a1),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_access_err);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].type, event_type::qp_access_err);
    EXPECT_EQ(ev[0].qp, b1);
    EXPECT_EQ(ev[1].type, event_type::qp_last_wqe_reached);
    EXPECT_EQ(ev[1].qp, b1);
    /* the requester learnt it from its completion: no event on A */
    EXPECT_TRUE(drain(a).empty());
}

TEST_F(event_t, responder_invalid_request_raises_qp_req_err) {
    setup_pair();
    std::vector<uint8_t> src(64);
    mr *ms = reg(a, src.data(), src.size());
    /* a SEND longer than the receive WQE: invalid request NAK (IBTA 9.9.3.1.2) */
    std::vector<uint8_t> dst(8);
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 8, md, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 64, ms, 1), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_inv_req_err);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, event_type::qp_req_err);
    EXPECT_EQ(ev[0].qp, b.qp);
}

TEST_F(event_t, full_cq_raises_cq_err_per_lost_completion) {
    opt.cqe = 2;
    setup_pair();
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (uint64_t i = 0; i < 5; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, i,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return device_counters(a.ctx).cq_overflows == 3; }));
    settle();
    auto ev = drain(a);
    ASSERT_EQ(ev.size(), 3u);
    for (const async_event &e : ev) {
        EXPECT_EQ(e.type, event_type::cq_err);
        EXPECT_EQ(e.cq, a.scq);
    }
    wc w[4];
    EXPECT_EQ(poll_cq(a.scq, 4, w), 2);
    EXPECT_TRUE(drain(b).empty());
}

TEST_F(event_t, queue_is_bounded_and_counts_overflows) {
    setup_pair();
    srq *s = make_srq(b, 8);
    std::vector<qp *> qs;
    for (unsigned i = 0; i < async_event_queue_cap + 3; ++i)
        qs.push_back(make_qp(b, s));
    for (qp *q : qs)
        to_err(q);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), size_t(async_event_queue_cap));
    for (unsigned i = 0; i < async_event_queue_cap; ++i)
        EXPECT_EQ(ev[i].qp, qs[i]) << i; /* oldest first */
    EXPECT_EQ(device_counters(b.ctx).async_event_overflows, 3u);
}

TEST_F(event_t, destroying_an_object_drops_its_queued_events) {
    setup_pair();
    srq *s = make_srq(b, 8);
    qp *b1 = make_qp(b, s), *b2 = make_qp(b, s);
    to_err(b1);
    to_err(b2);
    ASSERT_EQ(destroy_qp(b1), verbs_error::ok);
    auto ev = drain(b);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].qp, b2);
}

} // namespace

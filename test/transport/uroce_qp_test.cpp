/* SPDX-License-Identifier: BSD-3-Clause
 * QP state machine and attribute validation (IBTA 10.3.1 table 91, as
 * ib_modify_qp_is_ok): required and optional attributes per transition and
 * QP type, value ranges, RESET/ERR from anywhere, query_qp; and the
 * transition table itself, every (cur, next, type) cell against table 91.
 */
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class qp_sm : public pair_fixture {
  protected:
    void SetUp() override {
        pair_fixture::SetUp();
        make_link();
        open(a, a.port, gid::from_ipv4(0x0a000001), mac_a, 1);
        open(b, b.port, gid::from_ipv4(0x0a000002), mac_b, 2);
    }
    qp *fresh(qp_type t) {
        opt.type = t;
        return make_qp(a);
    }
    qp_attr init_attr() {
        qp_attr at;
        at.qp_state = qp_state::init;
        at.port_num = 1;
        return at;
    }
    static constexpr unsigned init_mask =
        qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags;
    qp_attr rtr_attr() {
        qp_attr at;
        at.qp_state = qp_state::rtr;
        at.path_mtu = mtu::mtu_1024;
        at.dest_qp_num = 0x42;
        at.rq_psn = 5;
        at.max_dest_rd_atomic = 4;
        at.min_rnr_timer = 12;
        at.ah_attr = ah_to(b);
        return at;
    }
    static constexpr unsigned rtr_mask = qp_attr_state | qp_attr_av | qp_attr_path_mtu |
                                         qp_attr_dest_qpn | qp_attr_rq_psn |
                                         qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer;
    qp_attr rts_attr() {
        qp_attr at;
        at.qp_state = qp_state::rts;
        at.sq_psn = 9;
        at.timeout = 14;
        at.retry_cnt = 7;
        at.rnr_retry = 7;
        at.max_rd_atomic = 4;
        return at;
    }
    static constexpr unsigned rts_mask = qp_attr_state | qp_attr_sq_psn | qp_attr_timeout |
                                         qp_attr_retry_cnt | qp_attr_rnr_retry |
                                         qp_attr_max_qp_rd_atomic;
};

/* qp_psns_for's shift against the division it replaces, for every path
 * MTU: ceil(len / MTU) PSNs, one for an empty message, up to the largest. */
TEST(qp_psns, shift_matches_ceiling_division) {
    qp q;
    for (unsigned m = 1; m <= 5; ++m) {
        q.mtu = mtu_to_bytes(mtu(m));
        const uint64_t mtu_len = q.mtu;
        for (uint64_t len : {uint64_t(0), uint64_t(1), mtu_len - 1, mtu_len, mtu_len + 1,
                             3 * mtu_len, 3 * mtu_len + 7, uint64_t(max_msg_size)}) {
            const uint64_t want = len == 0 ? 1 : (len + mtu_len - 1) / mtu_len;
            EXPECT_EQ(qp_psns_for(&q, len), want) << "MTU " << q.mtu << ", " << len << " bytes";
        }
    }
}

/* QPNs are handed out in sequence from a point of the device's range
 * (random by default: device_config::random_first_qpn; 0x11 with it off is
 * in uroce_device_test). */
TEST_F(qp_sm, qpns_follow_in_sequence) {
    qp *q1 = fresh(qp_type::rc), *q2 = fresh(qp_type::ud);
    const uint32_t max_qp = device_config{}.max_qp;
    const uint32_t n1 = qp_num(q1);
    ASSERT_GE(n1, 0x11u);
    ASSERT_LT(n1, 0x11u + max_qp);
    auto after = [&](uint32_t k) { return 0x11 + (n1 - 0x11 + k) % max_qp; };
    EXPECT_EQ(qp_num(q2), after(1));
    EXPECT_EQ(destroy_qp(q1), verbs_error::ok);
    EXPECT_EQ(qp_num(fresh(qp_type::rc)), after(2)); /* numbers are not reused at once */
}

TEST_F(qp_sm, rc_happy_path_and_query) {
    qp *q = fresh(qp_type::rc);
    EXPECT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
    EXPECT_EQ(modify_qp(q, rtr_attr(), rtr_mask), verbs_error::ok);
    EXPECT_EQ(modify_qp(q, rts_attr(), rts_mask), verbs_error::ok);
    qp_attr out;
    qp_init_attr iout;
    ASSERT_EQ(query_qp(q, &out, 0, &iout), verbs_error::ok);
    EXPECT_EQ(out.qp_state, qp_state::rts);
    EXPECT_EQ(out.path_mtu, mtu::mtu_1024);
    EXPECT_EQ(out.dest_qp_num, 0x42u);
    EXPECT_EQ(out.rq_psn, 5u);
    EXPECT_EQ(out.sq_psn, 9u);
    EXPECT_EQ(out.timeout, 14);
    EXPECT_EQ(out.max_dest_rd_atomic, 4);
    EXPECT_EQ(out.min_rnr_timer, 12);
    EXPECT_EQ(out.ah_attr.grh.dgid, b.g);
    EXPECT_EQ(iout.qp_type, qp_type::rc);
    /* RTS -> SQD -> RTS, RTS -> RTS with an optional attribute */
    qp_attr at;
    at.qp_state = qp_state::sqd;
    EXPECT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    at.qp_state = qp_state::rts;
    EXPECT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    at.min_rnr_timer = 3;
    EXPECT_EQ(modify_qp(q, at, qp_attr_state | qp_attr_min_rnr_timer), verbs_error::ok);
    /* to ERR and back to RESET from anywhere */
    at.qp_state = qp_state::err;
    EXPECT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    at.qp_state = qp_state::reset;
    EXPECT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    EXPECT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
}

TEST_F(qp_sm, missing_required_attributes) {
    qp *q = fresh(qp_type::rc);
    EXPECT_EQ(modify_qp(q, init_attr(), init_mask & ~qp_attr_access_flags), verbs_error::inval);
    ASSERT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
    for (unsigned bit : {unsigned(qp_attr_av), unsigned(qp_attr_path_mtu),
                         unsigned(qp_attr_dest_qpn), unsigned(qp_attr_rq_psn),
                         unsigned(qp_attr_max_dest_rd_atomic), unsigned(qp_attr_min_rnr_timer)})
        EXPECT_EQ(modify_qp(q, rtr_attr(), rtr_mask & ~bit), verbs_error::inval) << bit;
    ASSERT_EQ(modify_qp(q, rtr_attr(), rtr_mask), verbs_error::ok);
    for (unsigned bit :
         {unsigned(qp_attr_sq_psn), unsigned(qp_attr_timeout), unsigned(qp_attr_retry_cnt),
          unsigned(qp_attr_rnr_retry), unsigned(qp_attr_max_qp_rd_atomic)})
        EXPECT_EQ(modify_qp(q, rts_attr(), rts_mask & ~bit), verbs_error::inval) << bit;
    EXPECT_EQ(q->state, qp_state::rtr); /* a refused modify changes nothing */
}

TEST_F(qp_sm, unexpected_attributes_and_transitions) {
    qp *q = fresh(qp_type::rc);
    /* RESET -> RTR is not a transition */
    EXPECT_EQ(modify_qp(q, rtr_attr(), rtr_mask), verbs_error::inval);
    /* RESET -> INIT with an RTR attribute */
    EXPECT_EQ(modify_qp(q, init_attr(), init_mask | qp_attr_sq_psn), verbs_error::inval);
    /* UD needs a Q_Key, not access flags */
    qp *u = fresh(qp_type::ud);
    EXPECT_EQ(modify_qp(u, init_attr(), init_mask), verbs_error::inval);
    qp_attr at = init_attr();
    at.qkey = 0x1234;
    EXPECT_EQ(modify_qp(u, at, qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_qkey),
              verbs_error::ok);
    at = qp_attr{};
    at.qp_state = qp_state::rtr;
    EXPECT_EQ(modify_qp(u, at, qp_attr_state), verbs_error::ok);
    at.qp_state = qp_state::rts;
    EXPECT_EQ(modify_qp(u, at, qp_attr_state), verbs_error::inval); /* UD needs an SQ PSN */
    EXPECT_EQ(modify_qp(u, at, qp_attr_state | qp_attr_sq_psn), verbs_error::ok);
    /* UC: RTR needs no rd_atomic/rnr attributes and refuses them */
    qp *c = fresh(qp_type::uc);
    ASSERT_EQ(modify_qp(c, init_attr(), init_mask), verbs_error::ok);
    EXPECT_EQ(modify_qp(c, rtr_attr(), rtr_mask), verbs_error::inval);
    EXPECT_EQ(modify_qp(c, rtr_attr(),
                        qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                            qp_attr_rq_psn),
              verbs_error::ok);
    /* CUR_STATE must match */
    at = qp_attr{};
    at.qp_state = qp_state::rts;
    at.cur_qp_state = qp_state::init;
    EXPECT_EQ(modify_qp(c, at, qp_attr_state | qp_attr_sq_psn | qp_attr_cur_state),
              verbs_error::inval);
    at.cur_qp_state = qp_state::rtr;
    EXPECT_EQ(modify_qp(c, at, qp_attr_state | qp_attr_sq_psn | qp_attr_cur_state),
              verbs_error::ok);
}

TEST_F(qp_sm, value_ranges) {
    qp *q = fresh(qp_type::rc);
    ASSERT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
    auto bad_rtr = [&](auto mutate) {
        qp_attr at = rtr_attr();
        mutate(at);
        return modify_qp(q, at, rtr_mask);
    };
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.path_mtu = mtu(0); }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.path_mtu = mtu(6); }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.dest_qp_num = 1u << 24; }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.rq_psn = 1u << 24; }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.min_rnr_timer = 32; }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.max_dest_rd_atomic = 200; }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.ah_attr.grh.sgid_index = 3; }), verbs_error::inval);
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.ah_attr.grh.dgid = gid{}; }), verbs_error::inval);
    /* IPv4 source GID to an IPv6 destination GID */
    EXPECT_EQ(bad_rtr([](qp_attr &at) { at.ah_attr.grh.dgid = *gid::parse("fd00::1"); }),
              verbs_error::inval);
    ASSERT_EQ(modify_qp(q, rtr_attr(), rtr_mask), verbs_error::ok);
    auto bad_rts = [&](auto mutate) {
        qp_attr at = rts_attr();
        mutate(at);
        return modify_qp(q, at, rts_mask);
    };
    EXPECT_EQ(bad_rts([](qp_attr &at) { at.timeout = 32; }), verbs_error::inval);
    EXPECT_EQ(bad_rts([](qp_attr &at) { at.retry_cnt = 8; }), verbs_error::inval);
    EXPECT_EQ(bad_rts([](qp_attr &at) { at.rnr_retry = 8; }), verbs_error::inval);
    EXPECT_EQ(bad_rts([](qp_attr &at) { at.sq_psn = 0x1000000; }), verbs_error::inval);
    EXPECT_EQ(bad_rts([](qp_attr &at) { at.max_rd_atomic = 129; }), verbs_error::inval);
    EXPECT_EQ(bad_rts([](qp_attr &) {}), verbs_error::ok);
}

TEST_F(qp_sm, udp_source_port_from_flow_label) {
    qp *q = fresh(qp_type::rc);
    ASSERT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
    qp_attr at = rtr_attr();
    at.dest_qp_num = 0x11;
    ASSERT_EQ(modify_qp(q, at, rtr_mask), verbs_error::ok);
    /* the kernel's rdma_calc_flow_label / rdma_flow_label_to_udp_sport */
    EXPECT_EQ(q->path.udp_sport, flow_label_to_udp_sport(calc_flow_label(qp_num(q), 0x11)));
    EXPECT_GE(q->path.udp_sport, 0xc000);
}

TEST_F(qp_sm, reset_discards_and_err_flushes_rq) {
    opt.max_recv_wr = 4;
    qp *q = fresh(qp_type::rc);
    ASSERT_EQ(modify_qp(q, init_attr(), init_mask), verbs_error::ok);
    uint8_t buf[16];
    mr *m = reg(a, buf, 16);
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(post_recv_buf(a, buf, 16, m, i, q), verbs_error::ok);
    EXPECT_EQ(post_recv_buf(a, buf, 16, m, 5, q), verbs_error::nomem);
    qp_attr at;
    at.qp_state = qp_state::err;
    ASSERT_EQ(modify_qp(q, at, qp_attr_state), verbs_error::ok);
    wc w[8];
    int n = poll_cq(a.rcq, 8, w);
    ASSERT_EQ(n, 4);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(w[i].wr_id, uint64_t(i));
        EXPECT_EQ(w[i].status, wc_status::wr_flush_err);
    }
}

TEST_F(qp_sm, uc_send_error_goes_to_sqe_and_back) {
    opt.type = qp_type::uc;
    /* a connected UC pair from the fixture's own helpers */
    a.qp = make_qp(a);
    b.qp = make_qp(b);
    connect(a, b, 1, 2);
    connect(b, a, 2, 1);
    std::vector<uint8_t> buf(256), rbuf(256);
    mr *m = reg(a, buf.data(), buf.size());
    mr *mb = reg(b, rbuf.data(), rbuf.size());
    mr *ma = reg(a, rbuf.data(), rbuf.size());
    /* a bad lkey: LOC_PROT_ERR, then SQE */
    ASSERT_EQ(post_one(a, wr_opcode::send, buf.data(), 512, m, 1), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::loc_prot_err);
    EXPECT_EQ(a.qp->state, qp_state::sqe);
    /* sends posted in SQE are flushed */
    ASSERT_EQ(post_one(a, wr_opcode::send, buf.data(), 16, m, 2), verbs_error::ok);
    sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::wr_flush_err);
    /* the receive side still works in SQE */
    ASSERT_EQ(post_recv_buf(a, rbuf.data(), 256, ma, 9), verbs_error::ok);
    ASSERT_EQ(post_one(b, wr_opcode::send, rbuf.data(), 10, mb, 3), verbs_error::ok);
    auto rw = poll_n(a.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    /* SQE -> RTS resumes sending (RC may not use this transition) */
    qp_attr at;
    at.qp_state = qp_state::rts;
    ASSERT_EQ(modify_qp(a.qp, at, qp_attr_state), verbs_error::ok);
    ASSERT_EQ(post_recv_buf(b, rbuf.data(), 256, mb, 10), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, buf.data(), 16, m, 4), verbs_error::ok);
    rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    EXPECT_FALSE(qp_modify_is_ok(qp_state::sqe, qp_state::rts, qp_type::rc, qp_attr_state));
}

/* ---- the transition table (qp_state_table via qp_modify_is_ok), cell by
 * cell, against IBTA 10.3.1 table 91 written out here on its own: every
 * legal transition with exactly its required attributes is accepted, with
 * one required attribute missing refused, with each optional one added
 * accepted, with any other attribute refused; every other (cur, next, type)
 * is refused whatever the mask. */

constexpr unsigned all_attrs = (qp_attr_dest_qpn << 1) - 1 - qp_attr_state;
constexpr qp_type all_types[] = {qp_type::rc, qp_type::uc, qp_type::ud};
constexpr qp_state all_states[] = {qp_state::reset, qp_state::init, qp_state::rtr, qp_state::rts,
                                   qp_state::sqd,   qp_state::sqe,  qp_state::err};

struct legal_transition {
    qp_state cur, next;
    qp_type type;
    unsigned req, opt;
};

std::vector<legal_transition> table_91() {
    using S = qp_state;
    using T = qp_type;
    constexpr unsigned PK = qp_attr_pkey_index, PORT = qp_attr_port, ACC = qp_attr_access_flags,
                       QKEY = qp_attr_qkey, AV = qp_attr_av, MTU = qp_attr_path_mtu,
                       DQPN = qp_attr_dest_qpn, RQPSN = qp_attr_rq_psn,
                       DRD = qp_attr_max_dest_rd_atomic, RNRT = qp_attr_min_rnr_timer,
                       ALT = qp_attr_alt_path, SQPSN = qp_attr_sq_psn, TMO = qp_attr_timeout,
                       RETRY = qp_attr_retry_cnt, RNR = qp_attr_rnr_retry,
                       RD = qp_attr_max_qp_rd_atomic, CUR = qp_attr_cur_state,
                       MIG = qp_attr_path_mig_state, SQD = qp_attr_en_sqd_async_notify;
    std::vector<legal_transition> v;
    for (S cur : all_states)
        for (T t : all_types) {
            v.push_back({cur, S::reset, t, 0, 0});
            v.push_back({cur, S::err, t, 0, 0});
        }
    v.push_back({S::reset, S::init, T::rc, PK | PORT | ACC, 0});
    v.push_back({S::reset, S::init, T::uc, PK | PORT | ACC, 0});
    v.push_back({S::reset, S::init, T::ud, PK | PORT | QKEY, 0});
    v.push_back({S::init, S::init, T::rc, 0, PK | PORT | ACC});
    v.push_back({S::init, S::init, T::uc, 0, PK | PORT | ACC});
    v.push_back({S::init, S::init, T::ud, 0, PK | PORT | QKEY});
    v.push_back({S::init, S::rtr, T::rc, AV | MTU | DQPN | RQPSN | DRD | RNRT, ALT | ACC | PK});
    v.push_back({S::init, S::rtr, T::uc, AV | MTU | DQPN | RQPSN, ALT | ACC | PK});
    v.push_back({S::init, S::rtr, T::ud, 0, PK | QKEY});
    v.push_back(
        {S::rtr, S::rts, T::rc, SQPSN | TMO | RETRY | RNR | RD, CUR | ALT | ACC | RNRT | MIG});
    v.push_back({S::rtr, S::rts, T::uc, SQPSN, CUR | ALT | ACC | MIG});
    v.push_back({S::rtr, S::rts, T::ud, SQPSN, CUR | QKEY});
    for (S cur : {S::rts, S::sqd}) {
        v.push_back({cur, S::rts, T::rc, 0, CUR | ACC | ALT | MIG | RNRT});
        v.push_back({cur, S::rts, T::uc, 0, CUR | ACC | ALT | MIG});
        v.push_back({cur, S::rts, T::ud, 0, CUR | QKEY});
    }
    for (T t : all_types)
        v.push_back({S::rts, S::sqd, t, 0, SQD});
    v.push_back({S::sqd, S::sqd, T::rc, 0,
                 PK | AV | TMO | RETRY | RNR | RD | DRD | CUR | ALT | ACC | RNRT | MIG});
    v.push_back({S::sqd, S::sqd, T::uc, 0, PK | AV | CUR | ALT | ACC | MIG});
    v.push_back({S::sqd, S::sqd, T::ud, 0, PK | QKEY});
    /* SQE -> RTS: UC and UD only (RC never enters SQE, IBTA 10.3.1.7) */
    v.push_back({S::sqe, S::rts, T::uc, 0, CUR | ACC});
    v.push_back({S::sqe, S::rts, T::ud, 0, CUR | QKEY});
    return v;
}

TEST(qp_state_table, every_legal_transition_accepted_with_its_attributes) {
    for (const legal_transition &l : table_91()) {
        SCOPED_TRACE(::testing::Message() << qp_state_str(l.cur) << " -> " << qp_state_str(l.next)
                                          << " type " << unsigned(l.type));
        const unsigned base = qp_attr_state | l.req;
        EXPECT_TRUE(qp_modify_is_ok(l.cur, l.next, l.type, base));
        EXPECT_TRUE(qp_modify_is_ok(l.cur, l.next, l.type, base | l.opt));
        for (unsigned bit = 1; bit & (all_attrs | qp_attr_state); bit <<= 1) {
            if (bit == qp_attr_state) continue;
            if (l.req & bit)
                EXPECT_FALSE(qp_modify_is_ok(l.cur, l.next, l.type, base & ~bit))
                    << "required attribute " << bit << " missing";
            else if (l.opt & bit)
                EXPECT_TRUE(qp_modify_is_ok(l.cur, l.next, l.type, base | bit))
                    << "optional attribute " << bit;
            else
                EXPECT_FALSE(qp_modify_is_ok(l.cur, l.next, l.type, base | bit))
                    << "attribute " << bit << " not allowed";
        }
    }
}

TEST(qp_state_table, every_other_transition_refused) {
    const auto legal = table_91();
    unsigned refused = 0;
    for (qp_state cur : all_states)
        for (qp_state next : all_states)
            for (qp_type t : all_types) {
                bool is_legal = false;
                for (const legal_transition &l : legal)
                    is_legal |= l.cur == cur && l.next == next && l.type == t;
                if (is_legal) continue;
                ++refused;
                SCOPED_TRACE(::testing::Message() << qp_state_str(cur) << " -> "
                                                  << qp_state_str(next) << " type " << unsigned(t));
                EXPECT_FALSE(qp_modify_is_ok(cur, next, t, qp_attr_state));
                EXPECT_FALSE(qp_modify_is_ok(cur, next, t, qp_attr_state | all_attrs));
                for (unsigned bit = qp_attr_cur_state; bit & all_attrs; bit <<= 1)
                    EXPECT_FALSE(qp_modify_is_ok(cur, next, t, qp_attr_state | bit));
            }
    /* 7 x 7 x 3 cells, of which 42 + 3 + 3 + 3 + 3 + 6 + 3 + 3 + 2 = 68 legal */
    EXPECT_EQ(refused, 7u * 7u * 3u - 68u);
}

TEST(qp_state_table, states_and_types_outside_the_enums_refused) {
    EXPECT_FALSE(qp_modify_is_ok(qp_state(7), qp_state::reset, qp_type::rc, qp_attr_state));
    EXPECT_FALSE(qp_modify_is_ok(qp_state::reset, qp_state(7), qp_type::rc, qp_attr_state));
    EXPECT_FALSE(qp_modify_is_ok(qp_state::rts, qp_state::err, qp_type(0), qp_attr_state));
    EXPECT_FALSE(qp_modify_is_ok(qp_state::rts, qp_state::err, qp_type(5), qp_attr_state));
}

} // namespace

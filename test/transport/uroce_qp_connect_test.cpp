/* SPDX-License-Identifier: BSD-3-Clause
 * The QP bring-up helper (uroce_qp_connect.cpp): each transition sets the
 * attributes its QP type takes, connect_qp goes from RESET or INIT to RTS,
 * refuses anything else, and a pair it brings up carries data.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class qp_connect_t : public pair_fixture {
  protected:
    void open_both() {
        make_link();
        open(a, a.port, gid_for(0), mac_a, 11);
        open(b, b.port, gid_for(1), mac_b, 22);
        a.qp = make_qp(a);
        b.qp = make_qp(b);
    }
    qp_connect_attr attr_to(const endpoint &peer, uint32_t dqpn, uint32_t sq, uint32_t rq) {
        qp_connect_attr c;
        c.dest_qp_num = dqpn;
        c.sq_psn = sq;
        c.rq_psn = rq;
        c.path_mtu = mtu::mtu_2048;
        c.ah_attr = ah_to(peer);
        c.max_rd_atomic = 3;
        c.max_dest_rd_atomic = 5;
        c.min_rnr_timer = 9;
        c.timeout = 17;
        c.retry_cnt = 6;
        c.rnr_retry = 4;
        return c;
    }
};

TEST_F(qp_connect_t, rc_attributes_land_where_each_transition_puts_them) {
    open_both();
    qp_connect_attr ca = attr_to(b, qp_num(b.qp), 0x100, 0x200);
    ASSERT_EQ(modify_qp_to_init(a.qp, ca), verbs_error::ok);
    qp_attr at;
    ASSERT_EQ(query_qp(a.qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::init);
    EXPECT_EQ(at.qp_access_flags, ca.access);
    ASSERT_EQ(modify_qp_to_rtr(a.qp, ca), verbs_error::ok);
    ASSERT_EQ(query_qp(a.qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rtr);
    EXPECT_EQ(at.dest_qp_num, qp_num(b.qp));
    EXPECT_EQ(at.rq_psn, 0x200u);
    EXPECT_EQ(at.path_mtu, mtu::mtu_2048);
    EXPECT_EQ(at.max_dest_rd_atomic, 5);
    EXPECT_EQ(at.min_rnr_timer, 9);
    EXPECT_EQ(at.ah_attr.grh.dgid, b.g);
    ASSERT_EQ(modify_qp_to_rts(a.qp, ca), verbs_error::ok);
    ASSERT_EQ(query_qp(a.qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.sq_psn, 0x100u);
    EXPECT_EQ(at.max_rd_atomic, 3);
    EXPECT_EQ(at.timeout, 17);
    EXPECT_EQ(at.retry_cnt, 6);
    EXPECT_EQ(at.rnr_retry, 4);
    /* from RTS there is no way up */
    EXPECT_EQ(connect_qp(a.qp, ca), verbs_error::inval);
    EXPECT_EQ(connect_qp(nullptr, ca), verbs_error::inval);
}

TEST_F(qp_connect_t, a_pair_it_connects_carries_data) {
    open_both();
    ASSERT_EQ(connect_qp(a.qp, attr_to(b, qp_num(b.qp), 0xfffffe, 0x42)), verbs_error::ok);
    /* from INIT too */
    ASSERT_EQ(modify_qp_to_init(b.qp, attr_to(a, 0, 0, 0)), verbs_error::ok);
    ASSERT_EQ(connect_qp(b.qp, attr_to(a, qp_num(a.qp), 0x42, 0xfffffe)), verbs_error::ok);
    std::vector<uint8_t> src(8000), dst(8000);
    fill_pattern(src.data(), src.size(), 3);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), uint32_t(dst.size()), md, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), uint32_t(src.size()), ms, 2),
              verbs_error::ok);
    auto rc = poll_n(b.rcq, 1);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    auto sc = poll_n(a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, wc_status::success);
}

TEST_F(qp_connect_t, ud_takes_its_qkey_and_nothing_of_a_path) {
    opt.type = qp_type::ud;
    open_both();
    qp_connect_attr ca;
    ca.qkey = 0x01234567;
    ca.sq_psn = 7;
    ASSERT_EQ(connect_qp(a.qp, ca), verbs_error::ok);
    qp_attr at;
    ASSERT_EQ(query_qp(a.qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.qkey, 0x01234567u);
}

} // namespace

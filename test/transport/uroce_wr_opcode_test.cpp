/* SPDX-License-Identifier: BSD-3-Clause
 * The send work-request opcode table (uroce_wr_opcode.h): every wr_opcode x
 * qp_type cell against the transport rules written out here independently
 * (IBTA 9.4 RC, 9.8.3 UC, 9.8.4 UD), every opcode's flags, out-of-range
 * opcodes, and post_send refusing exactly the cells the table refuses.
 */
#include <cstring>

#include "uroce_qp.h"
#include "uroce_tp_fixture.h"
#include "uroce_wr_opcode.h"

using namespace uroce;
using namespace uroce::test;

namespace {

constexpr qp_type all_types[] = {qp_type::rc, qp_type::uc, qp_type::ud};

struct expected_op {
    wr_opcode op;
    const char *name;
    bool rc, uc, ud;
    uint32_t flags;
};

/* The spec's answer, cell by cell. */
constexpr uint32_t S = wr_flag::send, W = wr_flag::write, R = wr_flag::read, A = wr_flag::atomic,
                   IMM = wr_flag::has_imm, INV = wr_flag::has_inv, RK = wr_flag::needs_rkey,
                   WL = wr_flag::writes_local, L = wr_flag::local;
const expected_op expected[] = {
    {wr_opcode::rdma_write, "RDMA_WRITE", true, true, false, W | RK},
    {wr_opcode::rdma_write_with_imm, "RDMA_WRITE_WITH_IMM", true, true, false, W | RK | IMM},
    {wr_opcode::send, "SEND", true, true, true, S},
    {wr_opcode::send_with_imm, "SEND_WITH_IMM", true, true, true, S | IMM},
    {wr_opcode::rdma_read, "RDMA_READ", true, false, false, R | RK | WL},
    {wr_opcode::atomic_cmp_and_swp, "ATOMIC_CMP_AND_SWP", true, false, false, A | RK | WL},
    {wr_opcode::atomic_fetch_and_add, "ATOMIC_FETCH_AND_ADD", true, false, false, A | RK | WL},
    {wr_opcode::local_inv, "LOCAL_INV", false, false, false, L},
    {wr_opcode::bind_mw, "BIND_MW", false, false, false, L},
    {wr_opcode::send_with_inv, "SEND_WITH_INV", true, false, false, S | INV},
};

bool expected_allowed(const expected_op &e, qp_type t) {
    return t == qp_type::rc ? e.rc : t == qp_type::uc ? e.uc : e.ud;
}

TEST(wr_opcode_table, every_opcode_is_listed_once) {
    ASSERT_EQ(std::size(expected), wr_opcode_table.size());
    for (size_t i = 0; i < std::size(expected); ++i)
        EXPECT_EQ(size_t(expected[i].op), i) << "enum values are 0..9 without gaps";
}

TEST(wr_opcode_table, every_cell_of_opcode_by_qp_type) {
    for (const expected_op &e : expected) {
        const wr_opcode_info &info = wr_opcode_lookup(e.op);
        ASSERT_TRUE(info.is_valid()) << e.name;
        EXPECT_STREQ(info.name, e.name);
        for (qp_type t : all_types)
            EXPECT_EQ(info.allowed_on(t), expected_allowed(e, t))
                << e.name << " on qp_type " << unsigned(t);
    }
}

TEST(wr_opcode_table, every_opcode_flags) {
    for (const expected_op &e : expected) {
        const wr_opcode_info &info = wr_opcode_lookup(e.op);
        EXPECT_EQ(info.flags & ~wr_flag::valid, e.flags) << e.name;
        /* consistency a reader relies on */
        EXPECT_EQ(info.has_any(wr_flag::read_or_atomic), info.has(wr_flag::writes_local)) << e.name;
        EXPECT_EQ(info.has_any(wr_flag::write | wr_flag::read_or_atomic),
                  info.has(wr_flag::needs_rkey))
            << e.name;
        EXPECT_FALSE(info.has(wr_flag::has_imm) && info.has(wr_flag::has_inv)) << e.name;
    }
}

TEST(wr_opcode_table, out_of_range_opcodes_are_invalid_everywhere) {
    for (unsigned v : {10u, 11u, 0x7fu, 0xffu}) {
        const wr_opcode_info &info = wr_opcode_lookup(wr_opcode(v));
        EXPECT_FALSE(info.is_valid()) << v;
        EXPECT_EQ(info.flags, 0u) << v;
        for (qp_type t : all_types)
            EXPECT_FALSE(info.allowed_on(t)) << v;
    }
}

/* post_send accepts exactly the allowed cells (with a WR otherwise valid
 * for the opcode: one 8-byte SGE fits every opcode's rules) and refuses
 * the others with inval, posting nothing. */
class wr_opcode_post : public pair_fixture {};

TEST_F(wr_opcode_post, post_send_follows_the_table_on_every_qp_type) {
    for (qp_type t : all_types) {
        SCOPED_TRACE(unsigned(t));
        opt.type = t;
        opt.max_send_wr = 64;
        setup_pair();
        alignas(8) static uint64_t buf = 0;
        mr *m = reg(a, &buf, sizeof buf);
        ah *h = nullptr;
        if (t == qp_type::ud) {
            h = create_ah(a.pd, ah_to(b));
            ASSERT_NE(h, nullptr);
        }
        for (unsigned v = 0; v < 12; ++v) {
            wr_opcode op = wr_opcode(v);
            bool allowed = v < std::size(expected) && expected_allowed(expected[v], t);
            sge s{reinterpret_cast<uint64_t>(&buf), 8, mr_lkey(m)};
            send_wr w;
            w.wr_id = v;
            w.sg_list = &s;
            w.num_sge = 1;
            w.opcode = op;
            if (t == qp_type::ud) {
                w.wr.ud.ah = h;
                w.wr.ud.remote_qpn = qp_num(b.qp);
                w.wr.ud.remote_qkey = 0x11111111;
            } else if (wr_opcode_lookup(op).has(wr_flag::atomic)) {
                w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&buf);
                w.wr.atomic.rkey = mr_rkey(m);
            } else {
                w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(&buf);
                w.wr.rdma.rkey = mr_rkey(m);
            }
            uint32_t head = a.qp->sq_head;
            send_wr *bad = nullptr;
            verbs_error e = post_send(a.qp, &w, &bad);
            if (allowed) {
                EXPECT_EQ(e, verbs_error::ok) << "opcode " << v;
                EXPECT_EQ(a.qp->sq_head, head + 1) << "opcode " << v;
            } else {
                EXPECT_EQ(e, verbs_error::inval) << "opcode " << v;
                EXPECT_EQ(bad, &w) << "opcode " << v;
                EXPECT_EQ(a.qp->sq_head, head) << "opcode " << v;
            }
        }
        TearDown();
    }
}

} // namespace

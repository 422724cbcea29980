/* SPDX-License-Identifier: BSD-3-Clause
 * Selective repeat (uroce_sack.cpp, uroce_sack.h): the 128-bit window and
 * the SACK's wire bitmap, one loss in a 64 KiB WRITE repaired by resending
 * that one PSN, and hostile frames (the SR opcodes on a QP without it, an
 * out-of-order WRITE with a bad R_Key, beyond the window, a SACK for PSNs
 * never sent) refused and counted.
 */
#include <cstring>
#include <memory>
#include <vector>

#include "uroce_psn.h"
#include "uroce_sack.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

TEST(sr_bits, set_test_shift_highest) {
    sr_bits b;
    EXPECT_FALSE(b.any());
    EXPECT_EQ(b.highest(), -1);
    b.set(0);
    b.set(63);
    b.set(64);
    b.set(127);
    b.set(128); /* outside: ignored */
    EXPECT_TRUE(b.test(0) && b.test(63) && b.test(64) && b.test(127));
    EXPECT_FALSE(b.test(1) || b.test(128) || b.test(1000));
    EXPECT_EQ(b.highest(), 127);
    b.shift(1); /* 62, 63, 126 */
    EXPECT_TRUE(b.test(62) && b.test(63) && b.test(126));
    EXPECT_FALSE(b.test(0) || b.test(127));
    b.shift(63); /* 0, 63 */
    EXPECT_TRUE(b.test(0) && b.test(63));
    EXPECT_EQ(b.highest(), 63);
    b.shift(64);
    EXPECT_FALSE(b.any());
    b.set(5);
    b.shift(500);
    EXPECT_FALSE(b.any());
}

TEST(sack_eth, bit_order_on_the_wire) {
    sack_eth s{};
    s.set_received(0);
    s.set_received(9);
    s.set_received(127);
    s.set_received(128); /* outside */
    EXPECT_EQ(s.bitmap[0], 0x80);
    EXPECT_EQ(s.bitmap[1], 0x40);
    EXPECT_EQ(s.bitmap[15], 0x01);
    EXPECT_TRUE(s.received(0) && s.received(9) && s.received(127));
    EXPECT_FALSE(s.received(1) || s.received(128));
}

TEST(sr_opcodes, table_and_placement) {
    EXPECT_EQ(sr_write_opcode(true, true), to_u8(ib_opcode::sr_rdma_write_only));
    EXPECT_EQ(sr_write_opcode(true, false), to_u8(ib_opcode::sr_rdma_write_first));
    EXPECT_EQ(sr_write_opcode(false, false), to_u8(ib_opcode::sr_rdma_write_middle));
    EXPECT_EQ(sr_write_opcode(false, true), to_u8(ib_opcode::sr_rdma_write_last));
    for (uint8_t op : {0xc0, 0xc1, 0xc2, 0xc3}) {
        EXPECT_TRUE(sr_placeable(opcode_lookup(op))) << int(op);
        EXPECT_EQ(opcode_lookup(op).offset(ext_hdr::reth), 0);
    }
    for (ib_opcode op : {ib_opcode::rc_rdma_write_first, ib_opcode::rc_rdma_write_only,
                         ib_opcode::rc_send_middle, ib_opcode::rc_rdma_read_request})
        EXPECT_FALSE(sr_placeable(opcode_lookup(op)));
    EXPECT_TRUE(opcode_lookup(ib_opcode::sr_sack).has(op_flag::ack | op_flag::response));
    EXPECT_EQ(sr_place::make(5, true), 0x80000005u);
    EXPECT_EQ(sr_place::make(0x1234567, false), 0x234567u);
}

class sack : public pair_fixture {
  protected:
    std::vector<uint8_t> src, dst;
    mr *ms = nullptr, *md = nullptr;
    std::shared_ptr<std::vector<uint8_t>> opcodes = std::make_shared<std::vector<uint8_t>>();
    std::shared_ptr<std::vector<uint32_t>> req_psns = std::make_shared<std::vector<uint32_t>>();

    void setup(size_t n) {
        opt.path_mtu = mtu::mtu_4096;
        setup_pair();
        src.assign(n, 0);
        dst.assign(n, 0);
        fill_pattern(src.data(), n, 3);
        ms = reg(a, src.data(), n);
        md = reg(b, dst.data(), n);
    }
    /* record every frame; drop a's request at PSN offset k (from psn_a) once */
    void drop_once(uint32_t k) {
        auto dropped = std::make_shared<bool>(false);
        link->set_filter([this, k, dropped](rte_mbuf *m, const memlink_port *from) {
            roce_packet p = peek(m);
            opcodes->push_back(p.opcode);
            if (from != a.port) return true;
            uint32_t off = uint32_t(psn_diff(p.psn(), opt.psn_a));
            req_psns->push_back(off);
            if (off == k && !*dropped) {
                *dropped = true;
                return false;
            }
            return true;
        });
    }
    unsigned sent_count(uint32_t k) const {
        unsigned n = 0;
        for (uint32_t s : *req_psns)
            n += s == k;
        return n;
    }
    void write_all() {
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), uint32_t(src.size()), ms, 1,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        auto sw = poll_n(a.scq, 1);
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(sw[0].status, wc_status::success);
    }
};

/* The acceptance case: one loss in the middle of a 64 KiB WRITE (16
 * packets at MTU 4096) is repaired by resending that one PSN. */
TEST_F(sack, one_loss_in_64k_write_resends_one_psn) {
    opt.selective_repeat = true;
    setup(65536);
    drop_once(7);
    write_all();
    EXPECT_EQ(src, dst);
    EXPECT_EQ(req_psns->size(), 17u); /* 16 packets + the one resend */
    EXPECT_EQ(sent_count(7), 2u);
    for (uint32_t k = 0; k < 16; ++k)
        if (k != 7) {
            EXPECT_EQ(sent_count(k), 1u) << k;
        }
    EXPECT_EQ(a.qp->cnt.sack_resends, 1u);
    EXPECT_EQ(a.qp->cnt.retransmits, 0u); /* no go-back-N */
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_GE(a.qp->cnt.sacks_rcvd, 1u);
    EXPECT_EQ(b.qp->cnt.sr_placed, 8u); /* PSNs 8..15 placed ahead of the gap */
    EXPECT_EQ(b.qp->cnt.seq_naks_sent, 0u);
    EXPECT_EQ(a.qp->comp.retry_left, opt.retry_cnt);
    /* on the wire: SR WRITE opcodes, and at least one SACK */
    bool saw_sack = false;
    for (uint8_t op : *opcodes)
        saw_sack |= op == to_u8(ib_opcode::sr_sack);
    EXPECT_TRUE(saw_sack);
    EXPECT_EQ((*opcodes)[0], to_u8(ib_opcode::sr_rdma_write_first));
}

/* The same loss without selective repeat: go-back-N resends PSN 7 and every
 * packet after it, and the wire carries only standard opcodes. */
TEST_F(sack, off_by_default_go_back_n_and_standard_opcodes) {
    setup(65536);
    drop_once(7);
    write_all();
    EXPECT_EQ(src, dst);
    for (uint32_t k = 7; k < 16; ++k)
        EXPECT_GE(sent_count(k), 2u) << k;
    EXPECT_EQ(a.qp->cnt.sack_resends, 0u);
    EXPECT_GE(a.qp->cnt.retransmits, 1u);
    for (uint8_t op : *opcodes)
        EXPECT_FALSE(opcode_lookup(op).has(op_flag::vendor)) << int(op);
}

/* A SEND stream with selective repeat: SENDs are not placed ahead of the
 * gap (held back), the receives complete in order with the right data. */
TEST_F(sack, sends_complete_in_order) {
    opt.selective_repeat = true;
    setup(8 * 4096);
    for (uint32_t i = 0; i < 8; ++i)
        ASSERT_EQ(post_recv_buf(b, dst.data() + i * 4096, 4096, md, 100 + i), verbs_error::ok);
    drop_once(2);
    for (uint32_t i = 0; i < 8; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::send, src.data() + i * 4096, 4096, ms, i),
                  verbs_error::ok);
    auto sw = poll_n(a.scq, 8);
    ASSERT_EQ(sw.size(), 8u);
    auto rw = poll_n(b.rcq, 8);
    ASSERT_EQ(rw.size(), 8u);
    for (uint32_t i = 0; i < 8; ++i) {
        EXPECT_EQ(rw[i].wr_id, 100 + i);
        EXPECT_EQ(rw[i].status, wc_status::success);
    }
    EXPECT_EQ(src, dst);
    EXPECT_GT(b.qp->cnt.sr_held_back, 0u);
    EXPECT_EQ(b.qp->cnt.sr_placed, 0u);
}

/* Hostile frames. */
TEST_F(sack, sr_opcode_on_a_qp_without_it_is_refused) {
    setup(8192);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(dst.data());
    x.rkey = mr_rkey(md);
    std::vector<uint8_t> pay(4096, 0xee);
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_only), opt.psn_a, x, pay.data(), 4096);
    settle();
    EXPECT_EQ(b.qp->cnt.sr_refused, 1u);
    EXPECT_EQ(b.qp->state, qp_state::rts);
    EXPECT_EQ(dst[0], 0);
    /* and a SACK to a requester without it */
    ext_fields s;
    inject(a, b.qp, to_u8(ib_opcode::sr_sack), opt.psn_b, s);
    EXPECT_EQ(a.qp->cnt.sack_refused, 1u);
}

TEST_F(sack, out_of_order_write_is_checked_like_an_in_order_one) {
    opt.selective_repeat = true;
    setup(8192);
    std::vector<uint8_t> pay(4096, 0xee);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(dst.data());
    x.rkey = mr_rkey(md) ^ 0x100; /* a key nobody has */
    x.dma_length = sr_place::make(0, true);
    const uint32_t ahead = psn_add(opt.psn_a, 3);
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_only), ahead, x, pay.data(), 4096);
    EXPECT_EQ(b.qp->cnt.sr_refused, 1u);
    EXPECT_EQ(b.qp->cnt.bad_rkey, 1u);
    /* the right key, beyond the MR */
    x.rkey = mr_rkey(md);
    x.va = reinterpret_cast<uint64_t>(dst.data()) + 8192 - 100;
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_only), ahead, x, pay.data(), 4096);
    EXPECT_EQ(b.qp->cnt.rkey_violations, 1u);
    /* beyond the 128-PSN window */
    x.va = reinterpret_cast<uint64_t>(dst.data());
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_only), psn_add(opt.psn_a, 200), x, pay.data(),
           4096);
    EXPECT_EQ(b.qp->cnt.sr_refused, 3u);
    /* a MIDDLE of another message, not marked independent: held back */
    x.dma_length = sr_place::make(1, false);
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_middle), ahead, x, pay.data(), 4096);
    EXPECT_EQ(b.qp->cnt.sr_held_back, 1u);
    /* a FIRST claiming to be packet 5 of its message */
    x.dma_length = sr_place::make(5, true);
    inject(b, a.qp, to_u8(ib_opcode::sr_rdma_write_first), ahead, x, pay.data(), 4096);
    EXPECT_EQ(b.qp->cnt.sr_refused, 4u);
    settle();
    EXPECT_EQ(b.qp->cnt.sr_placed, 0u);
    EXPECT_EQ(b.qp->state, qp_state::rts);
    for (uint8_t v : dst)
        ASSERT_EQ(v, 0);
    /* the requester is still fine: a real WRITE goes through */
    write_all();
    EXPECT_EQ(src, dst);
}

TEST_F(sack, sack_for_psns_never_sent_is_refused) {
    opt.selective_repeat = true;
    setup(8192);
    ext_fields s;
    sack_eth bm{};
    bm.set_received(10);
    s.sack_bitmap = bm.bitmap;
    s.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
    inject(a, b.qp, to_u8(ib_opcode::sr_sack), psn_sub(opt.psn_a, 1), s);
    EXPECT_EQ(a.qp->cnt.sack_refused, 1u);
    EXPECT_EQ(a.qp->cnt.sack_resends, 0u);
    EXPECT_EQ(a.qp->state, qp_state::rts);
    write_all();
    EXPECT_EQ(src, dst);
}

TEST_F(sack, attribute_is_validated) {
    setup_pair();
    qp_attr at;
    at.selective_repeat = 2;
    EXPECT_EQ(modify_qp(a.qp, at, qp_attr_selective_repeat), verbs_error::inval);
    at.selective_repeat = 1; /* RTS: only INIT -> RTR may set it */
    EXPECT_EQ(modify_qp(a.qp, at, qp_attr_selective_repeat), verbs_error::inval);
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * Verbs API end to end over memlink: every opcode with data checked byte for
 * byte, RC/UC/UD, SRQ, inline, max SGEs, zero-length messages, and the
 * typed errors of misuse.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class verbs_e2e : public pair_fixture {};

TEST_F(verbs_e2e, rc_send_all_sizes) {
    setup_pair();
    std::vector<uint8_t> src(70000), dst(70000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (uint32_t len : {0u, 1u, 3u, 1023u, 1024u, 1025u, 4096u, 65537u}) {
        fill_pattern(src.data(), len, len);
        std::fill(dst.begin(), dst.end(), 0xee);
        ASSERT_EQ(post_recv_buf(b, dst.data(), uint32_t(dst.size()), md, 100 + len),
                  verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), len, ms, len), verbs_error::ok);
        auto rw = poll_n(b.rcq, 1);
        auto sw = poll_n(a.scq, 1);
        ASSERT_EQ(rw.size(), 1u);
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(rw[0].status, wc_status::success) << len;
        EXPECT_EQ(rw[0].opcode, wc_opcode::recv);
        EXPECT_EQ(rw[0].byte_len, len);
        EXPECT_EQ(rw[0].wr_id, 100u + len);
        EXPECT_EQ(rw[0].qp_num, qp_num(b.qp));
        EXPECT_EQ(sw[0].status, wc_status::success);
        EXPECT_EQ(sw[0].opcode, wc_opcode::send);
        EXPECT_EQ(sw[0].wr_id, len);
        EXPECT_EQ(std::memcmp(src.data(), dst.data(), len), 0) << len;
        EXPECT_EQ(dst[len], 0xee) << "wrote past the message";
    }
    EXPECT_EQ(a.qp->cnt.retransmits, 0u);
}

TEST_F(verbs_e2e, rc_send_with_imm_and_inv) {
    setup_pair();
    std::vector<uint8_t> src(5000), dst(5000), victim(64);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mv = reg(b, victim.data(), victim.size(),
                 access_local_write | access_remote_write | access_remote_invalidate);
    fill_pattern(src.data(), src.size(), 7);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 5000, md, 1), verbs_error::ok);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 5000, md, 2), verbs_error::ok);
    sge s{reinterpret_cast<uint64_t>(src.data()), 3000, mr_lkey(ms)};
    send_wr w;
    w.wr_id = 10;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send_with_imm;
    w.send_flags = send_signaled;
    w.imm_data = 0x01020304;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].wc_flags & wc_with_imm, unsigned(wc_with_imm));
    EXPECT_EQ(rw[0].imm_data, 0x01020304u);
    EXPECT_EQ(rw[0].byte_len, 3000u);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 3000), 0);

    w.wr_id = 11;
    w.opcode = wr_opcode::send_with_inv;
    w.invalidate_rkey = mr_rkey(mv);
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    EXPECT_EQ(rw[0].wc_flags & wc_with_inv, unsigned(wc_with_inv));
    EXPECT_EQ(rw[0].invalidated_rkey, mr_rkey(mv));
    auto sw = poll_n(a.scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    /* the invalidated rkey no longer works: a WRITE to it is a remote access error */
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 8, ms, 12,
                       reinterpret_cast<uint64_t>(victim.data()), mr_rkey(mv)),
              verbs_error::ok);
    sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_access_err);
    EXPECT_EQ(victim[0], 0);
}

TEST_F(verbs_e2e, rc_write_read_sizes) {
    for (mtu m : {mtu::mtu_256, mtu::mtu_4096}) {
        opt.path_mtu = m;
        setup_pair();
        std::vector<uint8_t> src(300000), dst(300000), back(300000);
        mr *ms = reg(a, src.data(), src.size());
        mr *mb = reg(a, back.data(), back.size());
        mr *md = reg(b, dst.data(), dst.size());
        for (uint32_t len : {0u, 1u, 255u, 256u, 257u, 4096u, 4097u, 200000u}) {
            fill_pattern(src.data(), len, len + 1);
            std::fill(dst.begin(), dst.end(), 0x5a);
            std::fill(back.begin(), back.end(), 0xa5);
            ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), len, ms, 1,
                               reinterpret_cast<uint64_t>(dst.data()) + 7, mr_rkey(md)),
                      verbs_error::ok);
            ASSERT_EQ(post_one(a, wr_opcode::rdma_read, back.data(), len, mb, 2,
                               reinterpret_cast<uint64_t>(dst.data()) + 7, mr_rkey(md)),
                      verbs_error::ok);
            auto sw = poll_n(a.scq, 2);
            ASSERT_EQ(sw.size(), 2u);
            EXPECT_EQ(sw[0].status, wc_status::success);
            EXPECT_EQ(sw[0].opcode, wc_opcode::rdma_write);
            EXPECT_EQ(sw[1].status, wc_status::success);
            EXPECT_EQ(sw[1].opcode, wc_opcode::rdma_read);
            EXPECT_EQ(sw[1].byte_len, len);
            EXPECT_EQ(std::memcmp(src.data(), dst.data() + 7, len), 0) << len;
            EXPECT_EQ(std::memcmp(src.data(), back.data(), len), 0) << len;
            EXPECT_EQ(dst[6], 0x5a);
            EXPECT_EQ(dst[7 + len], 0x5a);
            EXPECT_EQ(back[len], 0xa5);
        }
        EXPECT_EQ(a.qp->cnt.retransmits, 0u);
        TearDown();
    }
}

TEST_F(verbs_e2e, rc_write_with_imm) {
    setup_pair();
    std::vector<uint8_t> src(10000), dst(10000), rbuf(16);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mr_ = reg(b, rbuf.data(), rbuf.size());
    fill_pattern(src.data(), src.size(), 3);
    ASSERT_EQ(post_recv_buf(b, rbuf.data(), 16, mr_, 77), verbs_error::ok);
    sge s{reinterpret_cast<uint64_t>(src.data()), 9000, mr_lkey(ms)};
    send_wr w;
    w.wr_id = 5;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::rdma_write_with_imm;
    w.send_flags = send_signaled;
    w.imm_data = 0xdeadbeef;
    w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    w.wr.rdma.rkey = mr_rkey(md);
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].opcode, wc_opcode::recv_rdma_with_imm);
    EXPECT_EQ(rw[0].imm_data, 0xdeadbeefu);
    EXPECT_EQ(rw[0].byte_len, 9000u);
    EXPECT_EQ(rw[0].wr_id, 77u);
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 9000), 0);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].opcode, wc_opcode::rdma_write);
}

TEST_F(verbs_e2e, rc_atomics) {
    setup_pair();
    alignas(8) uint64_t target[4] = {100, 5, 0, 0};
    alignas(8) uint64_t result[4] = {};
    mr *mt = reg(b, target, sizeof(target));
    mr *mres = reg(a, result, sizeof(result));
    sge s{reinterpret_cast<uint64_t>(&result[0]), 8, mr_lkey(mres)};
    send_wr w;
    w.sg_list = &s;
    w.num_sge = 1;
    w.send_flags = send_signaled;
    w.opcode = wr_opcode::atomic_fetch_and_add;
    w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&target[0]);
    w.wr.atomic.rkey = mr_rkey(mt);
    w.wr.atomic.compare_add = 23;
    send_wr *bad;
    w.wr_id = 1;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    /* CAS that matches, then one that does not */
    sge s2{reinterpret_cast<uint64_t>(&result[1]), 8, mr_lkey(mres)};
    send_wr c;
    c.wr_id = 2;
    c.sg_list = &s2;
    c.num_sge = 1;
    c.send_flags = send_signaled;
    c.opcode = wr_opcode::atomic_cmp_and_swp;
    c.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&target[1]);
    c.wr.atomic.rkey = mr_rkey(mt);
    c.wr.atomic.compare_add = 5;
    c.wr.atomic.swap = 77;
    ASSERT_EQ(post_send(a.qp, &c, &bad), verbs_error::ok);
    sge s3{reinterpret_cast<uint64_t>(&result[2]), 8, mr_lkey(mres)};
    c.wr_id = 3;
    c.sg_list = &s3;
    c.wr.atomic.compare_add = 5; /* now 77: no swap */
    c.wr.atomic.swap = 99;
    ASSERT_EQ(post_send(a.qp, &c, &bad), verbs_error::ok);
    auto sw = poll_n(a.scq, 3);
    ASSERT_EQ(sw.size(), 3u);
    EXPECT_EQ(sw[0].opcode, wc_opcode::fetch_add);
    EXPECT_EQ(sw[1].opcode, wc_opcode::comp_swap);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success);
    EXPECT_EQ(result[0], 100u);
    EXPECT_EQ(target[0], 123u);
    EXPECT_EQ(result[1], 5u);
    EXPECT_EQ(result[2], 77u);
    EXPECT_EQ(target[1], 77u);
}

TEST_F(verbs_e2e, misaligned_atomic_refused) {
    setup_pair();
    alignas(8) uint8_t target[32] = {};
    alignas(8) uint64_t result = 0;
    mr *mt = reg(b, target, sizeof(target));
    mr *mres = reg(a, &result, 8);
    sge s{reinterpret_cast<uint64_t>(&result), 8, mr_lkey(mres)};
    send_wr w;
    w.sg_list = &s;
    w.num_sge = 1;
    w.send_flags = send_signaled;
    w.opcode = wr_opcode::atomic_fetch_and_add;
    w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(target + 4);
    w.wr.atomic.rkey = mr_rkey(mt);
    w.wr.atomic.compare_add = 1;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_inv_req_err);
    for (uint8_t x : target)
        EXPECT_EQ(x, 0);
    qp_attr at;
    ASSERT_EQ(query_qp(a.qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::err);
}

TEST_F(verbs_e2e, max_sges_and_inline) {
    opt.max_sge = 32;
    opt.max_inline = 256;
    setup_pair();
    std::vector<uint8_t> src(32 * 100), dst(32 * 100 + 64);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 9);
    /* 32 gather entries on the sender, 32 scatter entries on the receiver */
    std::vector<sge> gs(32), ss(32);
    uint64_t total = 0;
    for (int i = 0; i < 32; ++i) {
        gs[i] = {reinterpret_cast<uint64_t>(src.data() + i * 100), uint32_t(1 + i * 3),
                 mr_lkey(ms)};
        total += gs[i].length;
    }
    for (int i = 0; i < 32; ++i)
        ss[i] = {reinterpret_cast<uint64_t>(dst.data() + (31 - i) * 100), 100, mr_lkey(md)};
    recv_wr r;
    r.wr_id = 9;
    r.sg_list = ss.data();
    r.num_sge = 32;
    recv_wr *rbad;
    ASSERT_EQ(post_recv(b.qp, &r, &rbad), verbs_error::ok);
    send_wr w;
    w.wr_id = 1;
    w.sg_list = gs.data();
    w.num_sge = 32;
    w.opcode = wr_opcode::send;
    w.send_flags = send_signaled;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].byte_len, total);
    /* reassemble both sides and compare */
    std::vector<uint8_t> sent, got;
    for (auto &g : gs)
        sent.insert(sent.end(), (uint8_t *)g.addr, (uint8_t *)g.addr + g.length);
    for (auto &s : ss)
        got.insert(got.end(), (uint8_t *)s.addr, (uint8_t *)s.addr + s.length);
    got.resize(total);
    EXPECT_EQ(sent, got);

    /* inline: the buffer may change right after post_send */
    uint8_t inl[200];
    fill_pattern(inl, sizeof(inl), 4);
    std::vector<uint8_t> expect(inl, inl + sizeof(inl));
    ASSERT_EQ(post_recv_buf(b, dst.data(), 3200, md, 10), verbs_error::ok);
    sge is{reinterpret_cast<uint64_t>(inl), 200, 0};
    w.sg_list = &is;
    w.num_sge = 1;
    w.send_flags = send_signaled | send_inline;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    std::memset(inl, 0, sizeof(inl));
    rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(std::memcmp(dst.data(), expect.data(), 200), 0);
    /* too many SGEs, too much inline: typed errors */
    w.num_sge = 33;
    EXPECT_EQ(post_send(a.qp, &w, &bad), verbs_error::inval);
    EXPECT_EQ(bad, &w);
    uint8_t big[300];
    sge bs{reinterpret_cast<uint64_t>(big), 300, 0};
    w.sg_list = &bs;
    w.num_sge = 1;
    EXPECT_EQ(post_send(a.qp, &w, &bad), verbs_error::inval);
}

TEST_F(verbs_e2e, unsignaled_and_sq_full) {
    opt.max_send_wr = 8;
    setup_pair();
    std::vector<uint8_t> src(64), dst(64);
    mr *ms = reg(a, src.data(), 64);
    mr *md = reg(b, dst.data(), 64);
    for (int i = 0; i < 8; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, i,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md),
                           i == 7 ? unsigned(send_signaled) : 0u),
                  verbs_error::ok);
    EXPECT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 9,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::nomem);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].wr_id, 7u);
    settle();
    wc extra[4];
    EXPECT_EQ(poll_cq(a.scq, 4, extra), 0);
    /* the SQ has room again */
    EXPECT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, 10,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
}

TEST_F(verbs_e2e, srq_shared_by_two_qps) {
    setup_pair();
    srq_init_attr sa;
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    srq *s = create_srq(b.pd, sa);
    ASSERT_NE(s, nullptr);
    /* two extra QPs on B that use the SRQ, two on A talking to them */
    qp *b1 = make_qp(b, s), *b2 = make_qp(b, s);
    qp *a1 = make_qp(a), *a2 = make_qp(a);
    connect(a, b, 100, 200, a1, b1);
    connect(b, a, 200, 100, b1, a1);
    connect(a, b, 300, 400, a2, b2);
    connect(b, a, 400, 300, b2, a2);
    std::vector<uint8_t> src(1000), dst(4 * 1000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 1);
    for (int i = 0; i < 4; ++i) {
        sge g{reinterpret_cast<uint64_t>(dst.data() + i * 1000), 1000, mr_lkey(md)};
        recv_wr r;
        r.wr_id = 50 + i;
        r.sg_list = &g;
        r.num_sge = 1;
        recv_wr *bad;
        ASSERT_EQ(post_srq_recv(s, &r, &bad), verbs_error::ok);
    }
    recv_wr dummy;
    recv_wr *bad;
    EXPECT_EQ(post_recv(b1, &dummy, &bad), verbs_error::inval); /* QP with an SRQ */
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 1000, ms, 1, 0, 0, send_signaled, a1),
              verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 500, ms, 2, 0, 0, send_signaled, a2),
              verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 10, ms, 3, 0, 0, send_signaled, a1),
              verbs_error::ok);
    auto rw = poll_n(b.rcq, 3);
    ASSERT_EQ(rw.size(), 3u);
    std::vector<uint32_t> qpns;
    for (auto &e : rw) {
        EXPECT_EQ(e.status, wc_status::success);
        EXPECT_GE(e.wr_id, 50u);
        EXPECT_EQ(std::memcmp(dst.data() + (e.wr_id - 50) * 1000, src.data(), e.byte_len), 0);
        qpns.push_back(e.qp_num);
    }
    EXPECT_NE(std::count(qpns.begin(), qpns.end(), qp_num(b1)), 0);
    EXPECT_NE(std::count(qpns.begin(), qpns.end(), qp_num(b2)), 0);
    EXPECT_EQ(destroy_srq(s), verbs_error::busy);
}

TEST_F(verbs_e2e, uc_send_write) {
    opt.type = qp_type::uc;
    setup_pair();
    std::vector<uint8_t> src(10000), dst(10000), wdst(10000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mw = reg(b, wdst.data(), wdst.size());
    fill_pattern(src.data(), src.size(), 12);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 10000, md, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 5000, ms, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 7000, ms, 2,
                       reinterpret_cast<uint64_t>(wdst.data()), mr_rkey(mw)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].byte_len, 5000u);
    settle();
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 5000), 0);
    EXPECT_EQ(std::memcmp(src.data(), wdst.data(), 7000), 0);
    /* UC refuses READ and atomics */
    EXPECT_EQ(post_one(a, wr_opcode::rdma_read, src.data(), 8, ms, 3, 0, 0), verbs_error::inval);
    EXPECT_EQ(a.qp->cnt.tx_acks + b.qp->cnt.tx_acks, 0u);
}

TEST_F(verbs_e2e, ud_send_recv) {
    opt.type = qp_type::ud;
    setup_pair();
    ah *h = create_ah(a.pd, ah_to(b));
    ASSERT_NE(h, nullptr);
    std::vector<uint8_t> src(1024), dst(1024 + 40);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 5);
    ASSERT_EQ(post_recv_buf(b, dst.data(), uint32_t(dst.size()), md, 1), verbs_error::ok);
    sge s{reinterpret_cast<uint64_t>(src.data()), 1024, mr_lkey(ms)};
    send_wr w;
    w.wr_id = 3;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send_with_imm;
    w.imm_data = 0x11223344;
    w.send_flags = send_signaled;
    w.wr.ud.ah = h;
    w.wr.ud.remote_qpn = qp_num(b.qp);
    w.wr.ud.remote_qkey = 0x11111111;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    EXPECT_EQ(rw[0].byte_len, 1024u + 40);
    EXPECT_EQ(rw[0].src_qp, qp_num(a.qp));
    EXPECT_EQ(rw[0].wc_flags & (wc_grh | wc_with_imm), unsigned(wc_grh | wc_with_imm));
    EXPECT_EQ(rw[0].imm_data, 0x11223344u);
    EXPECT_EQ(std::memcmp(dst.data() + 40, src.data(), 1024), 0);
    /* the GRH area carries the sender's IPv4 header: source address 10.0.0.1 */
    EXPECT_EQ(load_be32(dst.data() + 20 + 12), 0x0a000001u);
    /* wrong Q_Key: silently dropped and counted */
    ASSERT_EQ(post_recv_buf(b, dst.data(), uint32_t(dst.size()), md, 2), verbs_error::ok);
    w.wr.ud.remote_qkey = 0x22222222;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    settle();
    wc e;
    EXPECT_EQ(poll_cq(b.rcq, 1, &e), 0);
    EXPECT_EQ(b.qp->cnt.ud_qkey_drops, 1u);
    /* too big for the MTU */
    std::vector<uint8_t> big(5000);
    mr *mbig = reg(a, big.data(), big.size());
    sge bs{reinterpret_cast<uint64_t>(big.data()), 5000, mr_lkey(mbig)};
    w.sg_list = &bs;
    EXPECT_EQ(post_send(a.qp, &w, &bad), verbs_error::inval);
}

TEST_F(verbs_e2e, ipv6_gids) {
    opt.ipv6 = true;
    setup_pair();
    std::vector<uint8_t> src(3000), dst(3000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 2);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 3000, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
}

TEST_F(verbs_e2e, misuse_is_typed) {
    setup_pair();
    verbs_error err;
    EXPECT_EQ(reg_mr(a.pd, nullptr, 10, access_local_write, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    uint8_t buf[64];
    /* remote write without local write: EINVAL, as ibv_reg_mr */
    EXPECT_EQ(reg_mr(a.pd, buf, 64, access_remote_write, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    EXPECT_EQ(create_cq(a.ctx, 0, nullptr, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    qp_init_attr ia;
    ia.send_cq = a.scq;
    ia.recv_cq = a.rcq;
    ia.cap.max_send_sge = 1000;
    EXPECT_EQ(create_qp(a.pd, ia, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    ia.cap.max_send_sge = 1;
    ia.send_cq = nullptr;
    EXPECT_EQ(create_qp(a.pd, ia, &err), nullptr);
    EXPECT_EQ(err, verbs_error::inval);
    EXPECT_EQ(dealloc_pd(a.pd), verbs_error::busy);
    EXPECT_EQ(destroy_cq(a.scq), verbs_error::busy);
    /* post on a QP in RESET */
    ia.send_cq = a.scq;
    ia.cap.max_send_wr = 4;
    qp *q = create_qp(a.pd, ia, &err);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(post_one(a, wr_opcode::send, buf, 1, nullptr, 1, 0, 0, 0, q), verbs_error::inval);
    /* atomics need one 8-byte SGE */
    mr *m = reg(a, buf, 64);
    EXPECT_EQ(post_one(a, wr_opcode::atomic_fetch_and_add, buf, 4, m, 1), verbs_error::inval);
    EXPECT_EQ(destroy_qp(q), verbs_error::ok);
    device_attr da;
    EXPECT_EQ(query_device(a.ctx, &da), verbs_error::ok);
    EXPECT_EQ(da.max_sge, 32u);
    gid g;
    EXPECT_EQ(query_gid(a.ctx, 1, 0, &g), verbs_error::ok);
    EXPECT_EQ(g, a.g);
    EXPECT_EQ(query_gid(a.ctx, 1, 1, &g), verbs_error::inval);
}

TEST_F(verbs_e2e, enum_values_match_ibverbs) {
    static_assert(unsigned(wc_status::retry_exc_err) == 12);
    static_assert(unsigned(wc_status::rnr_retry_exc_err) == 13);
    static_assert(unsigned(wc_status::wr_flush_err) == 5);
    static_assert(unsigned(wc_opcode::recv_rdma_with_imm) == 129);
    static_assert(unsigned(wr_opcode::send_with_inv) == 9);
    static_assert(unsigned(wr_opcode::atomic_fetch_and_add) == 6);
    static_assert(access_remote_atomic == 8);
    static_assert(qp_attr_dest_qpn == (1u << 20));
    static_assert(mtu_to_bytes(mtu::mtu_4096) == 4096 && mtu_to_bytes(mtu::mtu_256) == 256);
    EXPECT_STREQ(wc_status_str(wc_status::wr_flush_err), "Work Request Flushed Error");
}

} // namespace

/* ibv_wc_opcode of each ibv_wr_opcode, as rdma-core's providers report them. */
TEST(verbs_test, wc_opcode_for_each_wr_opcode) {
    static_assert(wc_opcode_for(wr_opcode::send) == wc_opcode::send);
    EXPECT_EQ(wc_opcode_for(wr_opcode::send_with_imm), wc_opcode::send);
    EXPECT_EQ(wc_opcode_for(wr_opcode::send_with_inv), wc_opcode::send);
    EXPECT_EQ(wc_opcode_for(wr_opcode::rdma_write), wc_opcode::rdma_write);
    EXPECT_EQ(wc_opcode_for(wr_opcode::rdma_write_with_imm), wc_opcode::rdma_write);
    EXPECT_EQ(wc_opcode_for(wr_opcode::rdma_read), wc_opcode::rdma_read);
    EXPECT_EQ(wc_opcode_for(wr_opcode::atomic_cmp_and_swp), wc_opcode::comp_swap);
    EXPECT_EQ(wc_opcode_for(wr_opcode::atomic_fetch_and_add), wc_opcode::fetch_add);
    EXPECT_EQ(wc_opcode_for(wr_opcode::local_inv), wc_opcode::local_inv);
    EXPECT_EQ(wc_opcode_for(wr_opcode::bind_mw), wc_opcode::bind_mw);
}

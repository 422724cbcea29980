/* SPDX-License-Identifier: BSD-3-Clause
 * Receive dispatch: every drop is counted by reason and touches nothing:
 * bad ICRC, not RoCEv2, unknown QPN, another node's GID, wrong transport,
 * P_Key, state; and the device/QP counters add up.
 */
#include <cstring>
#include <optional>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

/* Another address in a copy of a QP's header template; its partial IPv4
 * checksum follows (pkt_build finishes the checksum from it), so the frame
 * differs from the QP's only in the address. */
void set_ipv4_addrs(hdr_template &t, std::optional<uint32_t> src, std::optional<uint32_t> dst) {
    auto *ip = reinterpret_cast<ipv4_hdr *>(t.bytes + t.l2_len);
    if (src) ip->set_src_addr(*src);
    if (dst) ip->set_dst_addr(*dst);
    t.ip_csum_base = ipv4_csum_partial(ip);
}

class recv : public pair_fixture {};

TEST_F(recv, drops_are_counted_and_harmless) {
    setup_pair();
    std::vector<uint8_t> dst(4096, 0);
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 4096, md, 1), verbs_error::ok);
    std::vector<uint8_t> pl(100, 0x5c);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(dst.data());
    x.rkey = mr_rkey(md);
    x.dma_length = 100;
    auto craft = [&](uint8_t op, uint32_t dqpn) {
        bth_fields bf;
        bf.opcode = op;
        bf.psn = b.qp->resp.psn;
        bf.dest_qp = dqpn;
        bf.ack_req = true;
        payload_src src;
        src.flat = pl.data();
        return pkt_build(test_pool(), a.qp->hdr, bf, x, &src, 100, 1);
    };
    const auto &dc = b.ctx->counters();
    /* bad ICRC: one flipped payload bit */
    rte_mbuf *m = craft(to_u8(ib_opcode::rc_rdma_write_only), qp_num(b.qp));
    rte_pktmbuf_mtod(m, uint8_t *)[m->pkt_len - 10] ^= 0x10;
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_icrc_errors, 1u);
    /* unknown QPN */
    m = craft(to_u8(ib_opcode::rc_rdma_write_only), 0x999);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_no_qp, 1u);
    /* UC opcode to an RC QP */
    m = craft(to_u8(ib_opcode::uc_rdma_write_only), qp_num(b.qp));
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_wrong_transport, 1u);
    /* another node's destination IP (ICRC recomputed, so only the GID is wrong) */
    hdr_template t = a.qp->hdr;
    set_ipv4_addrs(t, std::nullopt, 0x0a0000ff);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_rdma_write_only);
    bf.psn = b.qp->resp.psn;
    bf.dest_qp = qp_num(b.qp);
    payload_src src;
    src.flat = pl.data();
    m = pkt_build(test_pool(), t, bf, x, &src, 100, 1);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_not_ours, 1u);
    /* a P_Key we do not hold */
    bf.pkey = 0x1234;
    m = pkt_build(test_pool(), a.qp->hdr, bf, x, &src, 100, 1);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_bad_pkey, 1u);
    /* not RoCEv2 at all: a truncated frame */
    m = rte_pktmbuf_alloc(test_pool());
    std::memset(rte_pktmbuf_append(m, 20), 0, 20);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_parse_errors, 1u);
    /* a CNP: no congestion control, so ignored, but counted */
    bf = bth_fields{};
    bf.opcode = to_u8(ib_opcode::cnp);
    bf.dest_qp = qp_num(b.qp);
    m = pkt_build(test_pool(), a.qp->hdr, bf, ext_fields{}, nullptr, 0, 1);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_cnp_ignored, 1u);
    EXPECT_EQ(dc.rx_pkts, 7u);
    for (uint8_t v : dst)
        ASSERT_EQ(v, 0);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 0u);
    /* the same packet, intact, is accepted */
    m = craft(to_u8(ib_opcode::rc_rdma_write_only), qp_num(b.qp));
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 1u);
    EXPECT_EQ(dst[0], 0x5c);
    EXPECT_EQ(dst[99], 0x5c);
    EXPECT_EQ(dst[100], 0);
}

/* A RoCE frame from a.qp's path to b.qp: a WRITE_ONLY of 100 x 0x5c into dst,
 * built from template t (a.qp->hdr unless changed) so the ICRC is right. */
static rte_mbuf *write_frame(const hdr_template &t, const qp *to, uint8_t *dst, mr *md) {
    static const std::vector<uint8_t> pl(100, 0x5c);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(dst);
    x.rkey = mr_rkey(md);
    x.dma_length = 100;
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_rdma_write_only);
    bf.psn = to->resp.psn;
    bf.dest_qp = qp_num(to);
    bf.ack_req = true;
    payload_src src;
    src.flat = pl.data();
    return pkt_build(test_pool(), t, bf, x, &src, 100, 1);
}

/* A WRITE_ONLY of len bytes of pattern (seed + i) to dst at PSN psn. */
static rte_mbuf *write_only(const qp *from, const qp *to, uint32_t psn, uint8_t *dst, mr *md,
                            uint32_t len, uint8_t seed) {
    std::vector<uint8_t> pl(len);
    for (uint32_t i = 0; i < len; i++)
        pl[i] = uint8_t(seed + i);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(dst);
    x.rkey = mr_rkey(md);
    x.dma_length = len;
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_rdma_write_only);
    bf.psn = psn;
    bf.dest_qp = qp_num(to);
    payload_src src;
    src.flat = pl.data();
    return pkt_build(test_pool(), from->hdr, bf, x, &src, len, 1);
}

/* Place while checking (doc/icrc.md): a WRITE_ONLY is placed only after its
 * whole-frame ICRC check, and that placement folds the next frame's payload
 * into the next frame's check in the same pass. In one burst of four
 * WRITEs the last three are folded so; every byte lands. When the second
 * frame is bad, its check (begun while the first was placed) still fails:
 * it is dropped as a bad ICRC, nothing of it is placed, the PSN stops at it
 * and the third is out of sequence. */
TEST_F(recv, place_while_checking_the_next_frame) {
    setup_pair();
    constexpr uint32_t len = 1024; /* one MTU: a WRITE_ONLY, deferred (> icrc_fuse_min) */
    std::vector<uint8_t> dst(4 * len, 0);
    mr *md = reg(b, dst.data(), dst.size());
    const auto &dc = b.ctx->counters();
    auto burst = [&](int bad) {
        rte_mbuf *m[4];
        const uint32_t psn0 = b.qp->resp.psn;
        for (int i = 0; i < 4; i++) {
            m[i] = write_only(a.qp, b.qp, psn_add(psn0, uint32_t(i)), dst.data() + i * len, md, len,
                              uint8_t(17 * (i + 1)));
            if (i == bad) rte_pktmbuf_mtod(m[i], uint8_t *)[m[i]->pkt_len - 300] ^= 0x04;
        }
        b.ctx->rx_burst(m, 4);
    };
    auto placed = [&](int i) {
        for (uint32_t k = 0; k < len; k++)
            if (dst[i * len + k] != uint8_t(17 * (i + 1) + k)) return false;
        return true;
    };
    auto untouched = [&](int i) {
        for (uint32_t k = 0; k < len; k++)
            if (dst[i * len + k] != 0) return false;
        return true;
    };

    const uint32_t psn0 = b.qp->resp.psn;
    burst(-1);
    EXPECT_EQ(b.qp->resp.psn, psn_add(psn0, 4));
    EXPECT_EQ(dc.rx_icrc_ahead, icrc_fused_copy() ? 3u : 0u);
    EXPECT_EQ(dc.rx_icrc_errors, 0u);
    for (int i = 0; i < 4; i++)
        EXPECT_TRUE(placed(i)) << i;

    std::fill(dst.begin(), dst.end(), 0);
    const uint64_t ahead = dc.rx_icrc_ahead;
    burst(1);
    EXPECT_EQ(dc.rx_icrc_errors, 1u);
    EXPECT_EQ(b.qp->resp.psn, psn_add(psn0, 5)); /* the first one only */
    EXPECT_EQ(b.qp->cnt.out_of_seq, 2u);         /* the third and the fourth */
    EXPECT_EQ(dc.rx_icrc_ahead - ahead, icrc_fused_copy() ? 1u : 0u);
    EXPECT_TRUE(placed(0));
    for (int i = 1; i < 4; i++)
        EXPECT_TRUE(untouched(i)) << i;
}

/* rx_burst parses each frame four frames ahead of its processing, into a
 * ring of eight: in one burst of fourteen, frames that fail the parse, name
 * no QP, carry a bad ICRC or a foreign P_Key sit among good WRITEs (short
 * and one MTU long, the long ones' ICRC deferred), across the ring's wrap.
 * Each is counted as it is alone, nothing of a bad frame lands, and every
 * good WRITE does, in PSN order. */
TEST_F(recv, a_long_burst_mixes_bad_frames_with_good_ones) {
    setup_pair();
    constexpr uint32_t slot = 1024;
    constexpr int good = 8;
    std::vector<uint8_t> dst((good + 1) * slot, 0); /* the last slot: the bad ICRC's */
    mr *md = reg(b, dst.data(), dst.size());
    const uint32_t psn0 = b.qp->resp.psn;
    auto len_of = [](int i) { return i % 2 ? slot : uint32_t(40 + 8 * i); };
    auto good_write = [&](int i) {
        return write_only(a.qp, b.qp, psn_add(psn0, uint32_t(i)), dst.data() + i * slot, md,
                          len_of(i), uint8_t(31 * (i + 1)));
    };
    auto truncated = [] {
        rte_mbuf *m = rte_pktmbuf_alloc(test_pool());
        std::memset(rte_pktmbuf_append(m, 30), 0, 30);
        return m;
    };
    std::vector<rte_mbuf *> burst;
    burst.push_back(good_write(0));
    burst.push_back(truncated());
    burst.push_back(good_write(1));
    rte_mbuf *no_qp = good_write(2); /* the same frame, to a QPN nobody has */
    {
        roce_packet p;
        ASSERT_EQ(parse_mbuf(no_qp, p), parse_error::ok);
        const_cast<bth *>(p.bth())->set_dest_qp(0x999);
        icrc_write_wire(rte_pktmbuf_mtod(no_qp, uint8_t *) + p.icrc_offset,
                        icrc_compute(p.hdr + p.l3_offset, p.icrc_offset - p.l3_offset));
    }
    burst.push_back(no_qp);
    burst.push_back(good_write(2));
    rte_mbuf *bad_icrc = write_only(a.qp, b.qp, psn_add(psn0, 3), dst.data() + good * slot, md,
                                    slot, 0x77); /* deferred check, fails */
    rte_pktmbuf_mtod(bad_icrc, uint8_t *)[bad_icrc->pkt_len - 100] ^= 0x01;
    burst.push_back(bad_icrc);
    burst.push_back(good_write(3));
    {
        bth_fields bf;
        bf.opcode = to_u8(ib_opcode::rc_rdma_write_only);
        bf.psn = psn_add(psn0, 4);
        bf.dest_qp = qp_num(b.qp);
        bf.pkey = 0x1234;
        ext_fields x;
        x.va = reinterpret_cast<uint64_t>(dst.data() + good * slot);
        x.rkey = mr_rkey(md);
        x.dma_length = 8;
        static const uint8_t eight[8] = {9, 9, 9, 9, 9, 9, 9, 9};
        payload_src src;
        src.flat = eight;
        burst.push_back(pkt_build(test_pool(), a.qp->hdr, bf, x, &src, 8, 1));
    }
    burst.push_back(good_write(4));
    burst.push_back(truncated());
    burst.push_back(good_write(5));
    burst.push_back(good_write(6));
    burst.push_back(truncated());
    burst.push_back(good_write(7));
    ASSERT_EQ(burst.size(), 14u);

    const auto &dc = b.ctx->counters();
    b.ctx->rx_burst(burst.data(), uint16_t(burst.size()));
    EXPECT_EQ(dc.rx_pkts, 14u);
    EXPECT_EQ(dc.rx_parse_errors, 3u);
    EXPECT_EQ(dc.rx_no_qp, 1u);
    EXPECT_EQ(dc.rx_icrc_errors, 1u);
    EXPECT_EQ(dc.rx_bad_pkey, 1u);
    EXPECT_EQ(b.qp->cnt.rx_pkts, uint64_t(good));
    EXPECT_EQ(b.qp->cnt.out_of_seq, 0u);
    EXPECT_EQ(b.qp->resp.psn, psn_add(psn0, good));
    for (int i = 0; i < good; i++)
        for (uint32_t k = 0; k < slot; k++)
            ASSERT_EQ(dst[i * slot + k], k < len_of(i) ? uint8_t(31 * (i + 1) + k) : 0)
                << "WRITE " << i << " byte " << k;
    for (uint32_t k = 0; k < slot; k++)
        ASSERT_EQ(dst[good * slot + k], 0) << "the bad frames' slot, byte " << k;
}

/* A frame placed in two pieces (a SEND into a receive WQE of two SGEs)
 * folds the next frame's check twice; that frame is counted once. In
 * [WRITE, SEND, WRITE] the SEND is folded while the first WRITE is placed,
 * so its own placement folds the second WRITE, in two pieces. */
TEST_F(recv, a_frame_folded_in_pieces_counts_once) {
    setup_pair();
    constexpr uint32_t len = 1024;
    std::vector<uint8_t> dst(4 * len, 0);
    mr *md = reg(b, dst.data(), dst.size());
    sge sg[2] = {{reinterpret_cast<uint64_t>(dst.data() + 2 * len), len / 2, mr_lkey(md)},
                 {reinterpret_cast<uint64_t>(dst.data() + 3 * len), len / 2, mr_lkey(md)}};
    recv_wr r;
    r.wr_id = 7;
    r.sg_list = sg;
    r.num_sge = 2;
    recv_wr *bad = nullptr;
    ASSERT_EQ(post_recv(b.qp, &r, &bad), verbs_error::ok);
    std::vector<uint8_t> pl(len);
    for (uint32_t i = 0; i < len; i++)
        pl[i] = uint8_t(3 * i);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_send_only);
    bf.dest_qp = qp_num(b.qp);
    bf.psn = psn_add(b.qp->resp.psn, 1);
    payload_src src;
    src.flat = pl.data();
    const uint32_t psn0 = b.qp->resp.psn;
    rte_mbuf *m[3] = {
        write_only(a.qp, b.qp, psn0, dst.data(), md, len, 1),
        pkt_build(test_pool(), a.qp->hdr, bf, ext_fields{}, &src, len, 1),
        write_only(a.qp, b.qp, psn_add(psn0, 2), dst.data() + len, md, len, 2),
    };
    b.ctx->rx_burst(m, 3);
    const auto &dc = b.ctx->counters();
    EXPECT_EQ(b.qp->resp.psn, psn_add(psn0, 3));
    EXPECT_EQ(dc.rx_icrc_errors, 0u);
    EXPECT_EQ(dc.rx_icrc_ahead, icrc_fused_copy() ? 2u : 0u);
    EXPECT_EQ(std::memcmp(dst.data() + 2 * len, pl.data(), len / 2), 0);
    EXPECT_EQ(std::memcmp(dst.data() + 3 * len, pl.data() + len / 2, len / 2), 0);
    EXPECT_EQ(dst[len], 2); /* the second WRITE landed */
}

static ipv4_hdr *ip_of(rte_mbuf *m) {
    roce_packet p;
    EXPECT_EQ(parse_mbuf(m, p), parse_error::ok);
    return const_cast<ipv4_hdr *>(p.ipv4());
}

/* The IPv4 header checksum is masked out of the ICRC (Annex A17.3.3), so
 * only the checksum itself protects the header: a frame whose checksum is
 * wrong is dropped and counted, whatever its ICRC says. The PMD's verdict
 * (RTE_MBUF_F_RX_IP_CKSUM_GOOD/BAD) is trusted when it gives one. */
TEST_F(recv, bad_ipv4_header_checksum_is_dropped) {
    setup_pair();
    std::vector<uint8_t> dst(4096, 0);
    mr *md = reg(b, dst.data(), dst.size());
    const auto &dc = b.ctx->counters();

    rte_mbuf *m = write_frame(a.qp->hdr, b.qp, dst.data(), md);
    ipv4_hdr *ip = ip_of(m);
    ip->set_checksum(uint16_t(ip->checksum() ^ 0x0100));
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_ip_csum_errors, 1u);
    EXPECT_EQ(dc.rx_icrc_errors, 0u);
    EXPECT_EQ(dst[0], 0);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 0u);

    /* the PMD says BAD: dropped although the checksum is right */
    m = write_frame(a.qp->hdr, b.qp, dst.data(), md);
    m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_BAD;
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_ip_csum_errors, 2u);
    EXPECT_EQ(dst[0], 0);

    /* the PMD says GOOD: not summed again */
    m = write_frame(a.qp->hdr, b.qp, dst.data(), md);
    ip = ip_of(m);
    ip->set_checksum(uint16_t(ip->checksum() ^ 0x0100));
    m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD;
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_ip_csum_errors, 2u);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 1u);
    EXPECT_EQ(dst[0], 0x5c);
}

/* A connected QP takes packets only from its path (rxe_recv.c check_addr):
 * the source GID must be the QP's destination GID and the destination GID
 * its source GID. A WRITE from another IP is dropped and counted. */
TEST_F(recv, request_from_a_foreign_address_is_dropped) {
    setup_pair();
    std::vector<uint8_t> dst(4096, 0);
    mr *md = reg(b, dst.data(), dst.size());
    const auto &dc = b.ctx->counters();

    hdr_template t = a.qp->hdr;
    set_ipv4_addrs(t, 0x0a000063, std::nullopt); /* 10.0.0.99 */
    rte_mbuf *m = write_frame(t, b.qp, dst.data(), md);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_bad_src, 1u);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 0u);
    EXPECT_EQ(dst[0], 0);
    EXPECT_EQ(b.qp->state, qp_state::rts);

    /* the right source, intact, is accepted */
    m = write_frame(a.qp->hdr, b.qp, dst.data(), md);
    b.ctx->rx_burst(&m, 1);
    EXPECT_EQ(dc.rx_bad_src, 1u);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 1u);
    EXPECT_EQ(dst[0], 0x5c);
}

/* The same for responses: a READ response from another IP does not complete
 * the READ; the genuine one (after a retry) does. */
TEST_F(recv, response_from_a_foreign_address_is_dropped) {
    opt.timeout = 8; /* ~1 ms: the retry comes quickly */
    setup_pair();
    std::vector<uint8_t> src(256), dst(256, 0);
    fill_pattern(src.data(), src.size(), 3);
    mr *ms = reg(b, src.data(), src.size());
    mr *md = reg(a, dst.data(), dst.size());
    /* B's responses are lost until the forged one has been tried */
    bool block = true;
    link->set_filter(
        [&](rte_mbuf *, const memlink_port *from) { return !(block && from == b.port); });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, dst.data(), 256, md, 7,
                       reinterpret_cast<uint64_t>(src.data()), mr_rkey(ms)),
              verbs_error::ok);
    settle();
    ASSERT_EQ(b.qp->cnt.rx_pkts, 1u); /* B served it; the response was lost */
    const uint32_t psn = sq_at(a.qp, a.qp->sq_comp).first_psn;

    std::vector<uint8_t> evil(256, 0xee);
    hdr_template t = b.qp->hdr;
    set_ipv4_addrs(t, 0x0a000063, std::nullopt);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_rdma_read_response_only);
    bf.psn = psn;
    bf.dest_qp = qp_num(a.qp);
    ext_fields x;
    x.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
    x.msn = 1;
    payload_src ps;
    ps.flat = evil.data();
    rte_mbuf *m = pkt_build(test_pool(), t, bf, x, &ps, 256, 1);
    ASSERT_NE(m, nullptr);
    a.ctx->rx_burst(&m, 1);
    EXPECT_EQ(a.ctx->counters().rx_bad_src, 1u);
    wc w;
    EXPECT_EQ(poll_cq(a.scq, 1, &w), 0);
    EXPECT_EQ(dst[0], 0);

    block = false;
    auto c = poll_n(a.scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(a.ctx->counters().rx_bad_src, 1u);
}

/* Where the ACK for a received SEND leaves: by default in the rx_burst
 * that received it, before the application can see the receive's
 * completion; with respond_on_poll in the next poll(), with what the
 * application posted in between (device_config, <uroce/verbs.h>). */
TEST_F(recv, the_ack_leaves_in_rx_burst_or_with_respond_on_poll_in_the_next_poll) {
    for (bool on_poll : {false, true}) {
        SCOPED_TRACE(on_poll ? "respond_on_poll" : "default");
        opt.respond_on_poll = on_poll;
        setup_pair();
        std::vector<uint8_t> src(64, 0x3c), dst(64, 0), answer(64, 0x7e), got(64, 0);
        mr *ms = reg(a, src.data(), src.size());
        mr *mg = reg(a, got.data(), got.size());
        mr *md = reg(b, dst.data(), dst.size());
        mr *ma = reg(b, answer.data(), answer.size());
        ASSERT_EQ(post_recv_buf(a, got.data(), 64, mg, 7), verbs_error::ok);
        ASSERT_EQ(post_recv_buf(b, dst.data(), 64, md, 8), verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 64, ms, 1), verbs_error::ok);
        a.ctx->poll();
        rte_mbuf *pkts[8];
        ASSERT_EQ(b.port->rx_burst(pkts, 8), 1u);
        b.ctx->rx_burst(pkts, 1);
        wc w[2];
        ASSERT_EQ(poll_cq(b.rcq, 2, w), 1); /* the receive completes at once */
        EXPECT_EQ(w[0].status, wc_status::success);
        EXPECT_EQ(a.port->queued(), on_poll ? 0u : 1u);
        /* B answers, then polls: the ACK (if still held) and the answer */
        ASSERT_EQ(post_one(b, wr_opcode::send, answer.data(), 64, ma, 2), verbs_error::ok);
        b.ctx->poll();
        ASSERT_EQ(a.port->rx_burst(pkts, 8), 2u);
        /* one turn of B's QP: its responder's output, then its send queue */
        EXPECT_EQ(peek(pkts[0]).opcode, to_u8(ib_opcode::rc_acknowledge));
        EXPECT_EQ(peek(pkts[1]).opcode, to_u8(ib_opcode::rc_send_only));
        a.ctx->rx_burst(pkts, 2);
        EXPECT_EQ(poll_n(a.scq, 1).size(), 1u);
        EXPECT_EQ(poll_n(a.rcq, 1).size(), 1u);
        EXPECT_EQ(got, answer);
        EXPECT_EQ(poll_n(b.scq, 1).size(), 1u); /* A's ACK, held or not, left */
        EXPECT_EQ(a.ctx->counters().rx_pkts + b.ctx->counters().rx_pkts, 4u);
        TearDown();
    }
}

TEST_F(recv, counters_have_names_and_sum) {
    setup_pair();
    std::vector<uint8_t> src(5000), dst(5000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 5000, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    qp_counters tot = a.ctx->qp_totals();
    EXPECT_EQ(tot.tx_pkts, 5u);
    EXPECT_EQ(tot.tx_bytes, 5000u);
    EXPECT_EQ(a.ctx->counters().tx_pkts, 5u);
    EXPECT_EQ(b.ctx->counters().rx_pkts, 5u);
    EXPECT_EQ(b.ctx->qp_totals().rx_bytes, 5000u);
    for (const auto &d : qp_counter_table) {
        EXPECT_NE(d.name, nullptr);
        EXPECT_NE(std::strlen(d.description), 0u);
    }
    EXPECT_EQ(counter_value(a.qp->cnt, qp_counter_table[0]), a.qp->cnt.tx_pkts);
    /* a destroyed QP's counters stay in the device totals */
    ASSERT_EQ(destroy_qp(a.qp), verbs_error::ok);
    a.qp = nullptr;
    EXPECT_EQ(a.ctx->qp_totals().tx_pkts, 5u);
}

} // namespace

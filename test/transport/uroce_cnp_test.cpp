/* SPDX-License-Identifier: BSD-3-Clause
 * The notification point (uroce_cnp.cpp): the CNP is the ConnectX-4 Lx's
 * byte for byte, ECN marks do not touch the ICRC, CE-marked frames make the
 * receiver send CNPs to the sender's QP (at most one per interval), and a
 * CNP reaches the sender's reaction point.
 */
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include <rte_ip.h>

#include <uroce/icrc.h>

#include "uroce_cnp.h"
#include "uroce_memlink_bottleneck.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

/* Record `index` (0-based) of a classic little-endian pcap file. */
std::vector<uint8_t> pcap_record(const std::string &path, unsigned index) {
    std::ifstream f(path, std::ios::binary);
    std::vector<uint8_t> all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t off = 24; /* global header */
    for (unsigned i = 0; off + 16 <= all.size(); ++i) {
        uint32_t incl = uint32_t(all[off + 8]) | uint32_t(all[off + 9]) << 8 |
                        uint32_t(all[off + 10]) << 16 | uint32_t(all[off + 11]) << 24;
        if (off + 16 + incl > all.size()) break;
        if (i == index) return {all.begin() + long(off + 16), all.begin() + long(off + 16 + incl)};
        off += 16 + incl;
    }
    return {};
}

std::vector<uint8_t> mbuf_bytes(const rte_mbuf *m) {
    const auto *p = rte_pktmbuf_mtod(m, const uint8_t *);
    return {p, p + m->data_len};
}

/* The path of the golden CNP: 7c:fe:90:64:3b:32 / 10.0.17.1 sends it to
 * e4:1d:2d:ab:2b:c2 / 10.0.18.1, TTL 64, DF. */
roce_path golden_cnp_path() {
    roce_path p;
    const uint8_t src[6] = {0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32};
    const uint8_t dst[6] = {0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2};
    std::memcpy(p.src_mac, src, 6);
    std::memcpy(p.dst_mac, dst, 6);
    p.sgid = gid::from_ipv4(0x0a001101);
    p.dgid = gid::from_ipv4(0x0a001201);
    p.hop_limit = 64;
    p.traffic_class = 0x02; /* a data QP's (ECT(0)); the CNP sets its own */
    p.udp_sport = 0xc123;   /* a data QP's; the CNP sends from 0 */
    return p;
}

TEST(cnp, matches_connectx4_capture_byte_for_byte) {
    const std::vector<uint8_t> golden =
        pcap_record(std::string(UROCE_TEST_GOLDEN_DIR) + "/published-vectors.pcap", 1);
    ASSERT_EQ(golden.size(), 74u);
    hdr_template t;
    make_hdr_template(t, golden_cnp_path(), false);
    /* DSCP 48 (mlx5 CNP_DSCP) with ECT(0): the capture's TOS 0xC2 */
    const uint8_t tclass = uint8_t(cc_config{}.cnp_dscp << 2 | ecn_ect0);
    EXPECT_EQ(tclass, 0xc2);
    rte_mbuf *m = cnp_build(test_pool(), t, 0x000118, tclass, 0x718c);
    ASSERT_NE(m, nullptr);
    const std::vector<uint8_t> ours = mbuf_bytes(m);

    /* field by field, so a difference says what it is */
    roce_packet p, g;
    ASSERT_EQ(parse_mbuf(m, p), parse_error::ok);
    ASSERT_EQ(ours.size(), golden.size());
    const auto *gip = reinterpret_cast<const ipv4_hdr *>(golden.data() + 14);
    EXPECT_EQ(p.ipv4()->tos, gip->tos);
    EXPECT_EQ(p.ipv4()->total_length(), gip->total_length());
    EXPECT_EQ(p.ipv4()->frag(), gip->frag()); /* DF */
    EXPECT_EQ(p.ipv4()->ttl, gip->ttl);
    EXPECT_EQ(p.ipv4()->checksum(), gip->checksum());
    const auto *gudp = reinterpret_cast<const udp_hdr *>(golden.data() + 34);
    EXPECT_EQ(p.udp()->src_port(), gudp->src_port()); /* 0 */
    EXPECT_EQ(p.udp()->dst_port(), 4791);
    EXPECT_EQ(p.udp()->length(), gudp->length());
    EXPECT_EQ(p.udp()->checksum(), 0);
    const auto *gb = reinterpret_cast<const bth *>(golden.data() + 42);
    EXPECT_EQ(p.bth()->opcode, 0x81);
    EXPECT_EQ(p.bth()->opcode, gb->opcode);
    EXPECT_EQ(p.bth()->pkey(), 0xffff);
    EXPECT_TRUE(p.bth()->becn());
    EXPECT_FALSE(p.bth()->fecn());
    EXPECT_EQ(p.bth()->dest_qp(), gb->dest_qp());
    EXPECT_EQ(p.bth()->psn(), 0u);
    EXPECT_FALSE(p.bth()->ack_req());
    for (size_t i = 54; i < 70; ++i)
        EXPECT_EQ(ours[i], 0) << "reserved byte " << i - 54;
    EXPECT_TRUE(pkt_icrc_ok(p, m));
    /* and then every byte, addresses, IP id, checksum and ICRC included */
    EXPECT_EQ(ours, golden);
    rte_pktmbuf_free(m);
}

TEST(cnp, ipv6_cnp_parses_and_checks) {
    roce_path path = golden_cnp_path();
    path.ip_version = 6;
    path.sgid = *gid::parse("fd00::a");
    path.dgid = *gid::parse("fd00::b");
    path.flow_label = 0x12345;
    hdr_template t;
    make_hdr_template(t, path, false);
    rte_mbuf *m = cnp_build(test_pool(), t, 0xabcdef, 0xc2, 0);
    ASSERT_NE(m, nullptr);
    roce_packet p;
    ASSERT_EQ(parse_mbuf(m, p), parse_error::ok);
    EXPECT_EQ(p.ipv6()->traffic_class(), 0xc2);
    EXPECT_EQ(p.ipv6()->flow_label(), 0x12345u);
    EXPECT_EQ(p.bth()->dest_qp(), 0xabcdefu);
    EXPECT_EQ(p.info->transport, ib_transport::cnp);
    EXPECT_TRUE(pkt_icrc_ok(p, m));
    rte_pktmbuf_free(m);
}

/* The ICRC masks the TOS / traffic class (Annex A17.3.3): a switch that
 * marks CE leaves the ICRC valid; the IPv4 checksum is fixed by the marker. */
TEST(cnp, ce_mark_keeps_icrc_valid) {
    for (bool v6 : {false, true}) {
        roce_path path = golden_cnp_path();
        if (v6) {
            path.ip_version = 6;
            path.sgid = *gid::parse("fd00::a");
            path.dgid = *gid::parse("fd00::b");
        }
        path.traffic_class = tclass_with_ecn(0xb8, true); /* DSCP 46, ECT(0) */
        hdr_template t;
        make_hdr_template(t, path, false);
        bth_fields b;
        b.opcode = to_u8(ib_opcode::rc_rdma_write_only);
        b.dest_qp = 0x42;
        ext_fields x;
        x.dma_length = 200;
        std::vector<uint8_t> pl(200, 0xa5);
        payload_src src;
        src.flat = pl.data();
        rte_mbuf *m = pkt_build(test_pool(), t, b, x, &src, 200, 7);
        ASSERT_NE(m, nullptr);
        roce_packet p;
        ASSERT_EQ(parse_mbuf(m, p), parse_error::ok);
        EXPECT_EQ(frame_ecn(p), ecn_ect0);
        const uint32_t icrc_before = icrc_read_wire(p.hdr + p.icrc_offset);
        ASSERT_TRUE(frame_mark_ce(m));
        ASSERT_EQ(parse_mbuf(m, p), parse_error::ok);
        EXPECT_EQ(frame_ecn(p), ecn_ce) << "v6 " << v6;
        if (!v6) {
            EXPECT_EQ(p.ipv4()->dscp(), 46);
            EXPECT_EQ(rte_raw_cksum(p.ipv4(), 20), 0xffff) << "IPv4 checksum after marking";
        } else {
            EXPECT_EQ(p.ipv6()->traffic_class() >> 2, 46);
        }
        EXPECT_EQ(icrc_read_wire(p.hdr + p.icrc_offset), icrc_before);
        EXPECT_TRUE(pkt_icrc_ok(p, m)) << "v6 " << v6;
        rte_pktmbuf_free(m);
    }
    /* a Not-ECT frame is not marked (RFC 3168 5: a router drops it instead) */
    roce_path path = golden_cnp_path();
    path.traffic_class = 0;
    hdr_template t;
    make_hdr_template(t, path, false);
    rte_mbuf *m = cnp_build(test_pool(), t, 1, 0x00, 0);
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(frame_mark_ce(m));
    rte_pktmbuf_free(m);
}

class cnp_pair : public pair_fixture {
  protected:
    /* frames each way on the wire, by kind */
    unsigned data_ab = 0, ce_ab = 0, cnp_ba = 0, cnp_ab = 0;
    std::vector<uint8_t> last_tclass_ab;
    bool mark = true;

    void watch() {
        link->set_filter([this](rte_mbuf *m, const memlink_port *from) {
            roce_packet p = peek(m);
            if (from == a.port) {
                if (p.info->transport == ib_transport::cnp) {
                    ++cnp_ab;
                    return true;
                }
                ++data_ab;
                last_tclass_ab.push_back(p.ip_version == 4 ? p.ipv4()->tos
                                                           : p.ipv6()->traffic_class());
                if (mark && frame_mark_ce(m)) ++ce_ab;
            } else if (p.info->transport == ib_transport::cnp) {
                ++cnp_ba;
                EXPECT_EQ(p.bth()->dest_qp(), qp_num(a.qp));
                EXPECT_TRUE(p.bth()->becn());
                EXPECT_EQ(p.bth()->pkey(), 0xffff);
                EXPECT_EQ(p.bth()->psn(), 0u);
                EXPECT_EQ(p.udp()->src_port(), 0);
            }
            return true;
        });
    }

    /* One WRITE of len bytes a -> b, completed. */
    void write(size_t len) {
        std::vector<uint8_t> src(len), dst(len, 0);
        fill_pattern(src.data(), len, 7);
        mr *ms = reg(a, src.data(), len), *md = reg(b, dst.data(), len);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), uint32_t(len), ms, 1,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        auto wcs = poll_n(a.scq, 1);
        ASSERT_EQ(wcs.size(), 1u);
        EXPECT_EQ(wcs[0].status, wc_status::success);
        EXPECT_EQ(src, dst);
        dereg_mr(ms);
        dereg_mr(md);
    }
};

TEST_F(cnp_pair, ecn_bits_follow_the_config_and_keep_the_dscp) {
    for (bool ecn : {true, false}) {
        cc_cfg.ecn = ecn;
        setup_pair();
        /* an address vector's DSCP is kept; the ECN bits asked for are replaced */
        ah_attr ah = ah_to(b);
        ah.grh.traffic_class = 0xb8 | 0x3;
        roce_path path;
        ASSERT_EQ(a.ctx->resolve_path(ah, qp_num(a.qp), qp_num(b.qp), qp_type::rc, path),
                  verbs_error::ok);
        EXPECT_EQ(path.traffic_class, ecn ? 0xba : 0xb8);
        /* on the wire: the fixture's QPs ask for traffic class 0 */
        mark = false;
        watch();
        write(3000);
        ASSERT_FALSE(last_tclass_ab.empty());
        for (uint8_t tc : last_tclass_ab)
            EXPECT_EQ(tc, ecn ? 0x02 : 0x00) << "ecn " << ecn;
        EXPECT_EQ(b.qp->cnt.ce_marks_rcvd, 0u);
        TearDown();
        last_tclass_ab.clear();
    }
}

TEST_F(cnp_pair, ce_marks_send_one_cnp_per_interval_and_cut_the_rate) {
    cc_cfg.dcqcn = true;
    cc_cfg.rp.line_rate_mbps = 100'000;
    cc_cfg.cnp_interval_ns = 50'000;
    cc_cfg.rp.byte_counter = 10'000'000; /* no byte-counter increase within the test */
    opt.path_mtu = mtu::mtu_4096;
    idle_step_ns = 100; /* the message crosses well within the CNP interval */
    setup_pair();
    watch();
    const qp_cc_info before = qp_cc_query(a.qp);
    EXPECT_TRUE(before.dcqcn);
    EXPECT_EQ(before.rate_mbps, 100'000u);
    /* one message of 16 packets: the clock stands still while it crosses,
     * so its CE marks are answered by one CNP */
    write(16 * 4096);
    EXPECT_EQ(ce_ab, data_ab);
    EXPECT_EQ(b.qp->cnt.ce_marks_rcvd, ce_ab);
    EXPECT_EQ(b.qp->cnt.cnps_sent, 1u);
    EXPECT_EQ(b.qp->cnt.ce_no_cnp, ce_ab - 1);
    EXPECT_EQ(cnp_ba, 1u);
    EXPECT_EQ(a.qp->cnt.cnps_rcvd, 1u);
    EXPECT_EQ(a.qp->cnt.rate_cuts, 1u);
    /* alpha starts at 1: the first cut halves the rate */
    const qp_cc_info after = qp_cc_query(a.qp);
    EXPECT_EQ(after.rate_mbps, 50'000u);
    EXPECT_EQ(after.target_mbps, 100'000u);
    EXPECT_EQ(after.lowest_mbps, 50'000u);
    EXPECT_EQ(a.ctx->counters().rx_icrc_errors, 0u);
    EXPECT_EQ(a.ctx->counters().rx_cnp_ignored, 0u);
    /* after the interval, the next marked frame sends the next CNP */
    clk.advance(60'000);
    write(4096);
    EXPECT_EQ(b.qp->cnt.cnps_sent, 2u);
    EXPECT_EQ(a.qp->cnt.rate_cuts, 2u);
    EXPECT_LT(qp_cc_query(a.qp).rate_mbps, 50'000u);
    /* the CNPs a receives are never marked or answered */
    EXPECT_EQ(a.qp->cnt.ce_marks_rcvd, 0u);
    EXPECT_EQ(cnp_ab, 0u);
}

TEST_F(cnp_pair, cnp_without_dcqcn_is_counted_and_ignored) {
    setup_pair();
    watch();
    write(8192);
    EXPECT_GE(b.qp->cnt.cnps_sent, 1u);
    EXPECT_EQ(a.qp->cnt.cnps_rcvd, b.qp->cnt.cnps_sent);
    EXPECT_EQ(a.ctx->counters().rx_cnp_ignored, b.qp->cnt.cnps_sent);
    EXPECT_EQ(a.qp->cnt.rate_cuts, 0u);
    EXPECT_FALSE(qp_cc_query(a.qp).paced);
}

TEST_F(cnp_pair, cnps_off_counts_the_marks_only) {
    cc_cfg.cnp = false;
    setup_pair();
    watch();
    write(8192);
    EXPECT_GT(b.qp->cnt.ce_marks_rcvd, 0u);
    EXPECT_EQ(b.qp->cnt.ce_no_cnp, b.qp->cnt.ce_marks_rcvd);
    EXPECT_EQ(b.qp->cnt.cnps_sent, 0u);
    EXPECT_EQ(cnp_ba, 0u);
}

/* A CE-marked frame for a QP that has no path yet (INIT) is counted and
 * dropped; no CNP is built from its empty header template. */
TEST_F(cnp_pair, ce_before_rtr_sends_nothing) {
    setup_pair();
    qp *fresh = make_qp(b);
    qp_attr at;
    at.qp_state = qp_state::init;
    at.qp_access_flags = access_remote_write;
    ASSERT_EQ(modify_qp(fresh, at,
                        qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags),
              verbs_error::ok);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_send_only);
    bf.dest_qp = qp_num(fresh);
    rte_mbuf *m = pkt_build(test_pool(), a.qp->hdr, bf, ext_fields{}, nullptr, 0, 1);
    ASSERT_NE(m, nullptr);
    ASSERT_TRUE(frame_mark_ce(m));
    const uint64_t tx_before = link->stats().tx;
    b.ctx->rx_burst(&m, 1);
    b.ctx->poll();
    EXPECT_EQ(fresh->cnt.ce_marks_rcvd, 1u);
    EXPECT_EQ(fresh->cnt.ce_no_cnp, 1u);
    EXPECT_EQ(fresh->cnt.cnps_sent, 0u);
    EXPECT_EQ(link->stats().tx, tx_before);
}

/* A CNP from an address that is not the QP's peer is refused like any
 * other frame (the connected QP's source check). */
TEST_F(cnp_pair, cnp_from_another_address_is_dropped) {
    cc_cfg.dcqcn = true;
    cc_cfg.rp.line_rate_mbps = 10'000;
    setup_pair();
    hdr_template t = b.qp->hdr;
    auto *ip = reinterpret_cast<ipv4_hdr *>(t.bytes + t.l2_len);
    ip->set_src_addr(0x0a0000fe);
    rte_mbuf *m = cnp_build(test_pool(), t, qp_num(a.qp), 0xc2, 1);
    ASSERT_NE(m, nullptr);
    a.ctx->rx_burst(&m, 1);
    EXPECT_EQ(a.ctx->counters().rx_bad_src, 1u);
    EXPECT_EQ(a.qp->cnt.cnps_rcvd, 0u);
    EXPECT_EQ(qp_cc_query(a.qp).rate_mbps, 10'000u);
}

} // namespace

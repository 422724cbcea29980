/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump internals: AETH words, line format on golden frames, flow
 * statistics on built sequences (gaps, retransmissions, NAKs), the analyzer's
 * verdicts on damaged frames, and the L2 consistency check.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dump_analyze.h"
#include "dump_check.h"
#include "dump_flows.h"
#include "dump_format.h"
#include "pcap_frames.h"
#include <uroce/build.h>

namespace uroce::dump {
namespace {

using test::captured_frame;

std::vector<captured_frame> load(const char *name) {
    std::string err;
    auto frames = test::read_pcap_frames(test::golden_path(name), err);
    EXPECT_FALSE(frames.empty()) << name << ": " << err;
    return frames;
}

/* ------------------------------------------------------------------ AETH words */

TEST(aeth_text, credit_table_matches_ibta_table_46) {
    const int32_t want[31] = {0,    1,    2,    3,    4,    6,     8,     12,    16,   24,   32,
                              48,   64,   96,   128,  192,  256,   384,   512,   768,  1024, 1536,
                              2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    for (uint8_t c = 0; c < 31; c++)
        EXPECT_EQ(aeth_credits(c), want[c]) << int(c);
    EXPECT_EQ(aeth_credits(31), -1);
}

TEST(aeth_text, rnr_timer_table_matches_ibta_table_48) {
    EXPECT_EQ(rnr_timer_ns(0), 655360000u); /* 655.36 ms: code 0 is the longest */
    EXPECT_EQ(rnr_timer_ns(1), 10000u);     /* 0.01 ms */
    EXPECT_EQ(rnr_timer_ns(14), 1280000u);  /* 1.28 ms */
    EXPECT_EQ(rnr_timer_ns(18), 5120000u);  /* 5.12 ms */
    EXPECT_EQ(rnr_timer_ns(31), 491520000u);
    for (uint8_t c = 2; c < 32; c++)
        EXPECT_GT(rnr_timer_ns(c), rnr_timer_ns(c - 1)) << int(c);
}

TEST(aeth_text, syndromes_in_words) {
    EXPECT_EQ(aeth_syndrome_text(0x1f), "ACK credits=unlimited");
    EXPECT_EQ(aeth_syndrome_text(0x08), "ACK credits=16");
    EXPECT_EQ(aeth_syndrome_text(0x00), "ACK credits=0");
    EXPECT_EQ(aeth_syndrome_text(0x60), "NAK PSN-seq-error");
    EXPECT_EQ(aeth_syndrome_text(0x61), "NAK invalid-request");
    EXPECT_EQ(aeth_syndrome_text(0x62), "NAK remote-access-error");
    EXPECT_EQ(aeth_syndrome_text(0x63), "NAK remote-op-error");
    EXPECT_EQ(aeth_syndrome_text(0x64), "NAK invalid-RD-request");
    EXPECT_EQ(aeth_syndrome_text(0x65), "NAK reserved-code-5");
    EXPECT_EQ(aeth_syndrome_text(0x20), "RNR-NAK timer=655.36ms");
    EXPECT_EQ(aeth_syndrome_text(0x21), "RNR-NAK timer=0.01ms");
    EXPECT_EQ(aeth_syndrome_text(0x2e), "RNR-NAK timer=1.28ms");
    EXPECT_EQ(aeth_syndrome_text(0x3f), "RNR-NAK timer=491.52ms");
    EXPECT_EQ(aeth_syndrome_text(0x45), "reserved-syndrome 0x45");
    EXPECT_EQ(aeth_syndrome_text(0x9f), "ACK credits=unlimited (reserved bit 7 set)");
}

/* ------------------------------------------------------------------ lines */

std::string line_of(const char *capture, size_t number) {
    auto frames = load(capture);
    analyzer an(link_kind::ethernet, {});
    const captured_frame &f = frames.at(number - 1);
    const frame_report &r =
        an.analyze(f.number, f.bytes.data(), uint32_t(f.bytes.size()), uint32_t(f.bytes.size()));
    return format_line(r, "0.000000", {});
}

TEST(format, golden_lines) {
    EXPECT_EQ(line_of("rc_pingpong.pcap", 12),
              "   12 0.000000 10.77.0.12 -> 10.77.0.11 sport 49441 RC SEND_FIRST QP=0x000011 "
              "PSN=9742649 SE=0 M=0 A=0 pad=0 len=1024 ICRC ok");
    EXPECT_EQ(line_of("rc_pingpong.pcap", 16),
              "   16 0.000000 10.77.0.11 -> 10.77.0.12 sport 49441 RC ACKNOWLEDGE QP=0x000011 "
              "PSN=9742652 AETH ACK credits=unlimited MSN=1 ICRC ok");
    EXPECT_EQ(line_of("rc_pingpong.pcap", 4),
              "    4 0.000000 non-RoCE: TCP 10.77.0.12:43066 -> 10.77.0.11:18515 len=52");
    EXPECT_EQ(line_of("ib_write_bw.pcap", 22),
              "   22 0.000000 10.77.0.12 -> 10.77.0.11 sport 49513 RC RDMA_WRITE_FIRST "
              "QP=0x000013 PSN=1120038 SE=0 M=0 A=0 pad=0 len=4096 RETH va=0x00007fa391ac2000 "
              "rkey=0x00000466 dlen=65536 ICRC ok");
    EXPECT_EQ(line_of("ib_atomic_bw.pcap", 21),
              "   21 0.000000 10.77.0.11 -> 10.77.0.12 sport 49636 RC ATOMIC_ACKNOWLEDGE "
              "QP=0x000016 PSN=1664542 AETH ACK credits=unlimited MSN=1 orig=3801269919815948869 "
              "ICRC ok");
    EXPECT_EQ(line_of("ud_pingpong.pcap", 12),
              "   12 0.000000 10.77.0.12 -> 10.77.0.11 sport 63494 UD SEND_ONLY QP=0x000012 "
              "PSN=5134228 SE=0 M=0 A=0 pad=0 len=1024 DETH qkey=0x11111111 srcQP=0x000012 "
              "ICRC ok");
    /* scapy's vector: MigReq and pad 2; the CNP: BECN, no payload. */
    EXPECT_EQ(line_of("published-vectors.pcap", 1),
              "    1 0.000000 192.168.0.7 -> 192.168.0.7 sport 49152 UC SEND_ONLY QP=0x0000d3 "
              "PSN=13571856 SE=0 M=1 A=0 pad=2 len=18 ICRC ok");
    EXPECT_EQ(line_of("published-vectors.pcap", 2),
              "    2 0.000000 10.0.17.1 -> 10.0.18.1 sport 0 CNP QP=0x000118 PSN=0 BECN ICRC ok");
}

TEST(format, fields_use_tshark_conventions) {
    auto frames = load("ib_atomic_bw.pcap");
    analyzer an(link_kind::ethernet, {});
    const captured_frame &f = frames.at(1);
    const frame_report &r =
        an.analyze(f.number, f.bytes.data(), uint32_t(f.bytes.size()), uint32_t(f.bytes.size()));
    /* tshark -T fields: frame 2 of ib_atomic_bw.pcap (ICRC as tshark shows it: wire bytes BE). */
    EXPECT_EQ(format_fields(r), "2\t20\t0\t0\t1\t0\t65535\t0x000016\t1664543\t0x000055cac5065040\t"
                                "0x000009fc\t\t\t\t\t\t1\t0\t\t0x1079ae63");
}

/* ------------------------------------------------------------------ built packets */

roce_path test_path(uint32_t src, uint32_t dst) {
    roce_path p;
    const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x01}, dmac[6] = {0x02, 0, 0, 0, 0, 0x02};
    std::memcpy(p.src_mac, smac, 6);
    std::memcpy(p.dst_mac, dmac, 6);
    p.sgid = gid::from_ipv4(src);
    p.dgid = gid::from_ipv4(dst);
    path_set_ip_version(p);
    return p;
}

std::vector<uint8_t> build(const roce_path &path, ib_opcode op, uint32_t psn, uint32_t payload = 0,
                           uint8_t syndrome = 0, uint32_t dlen = 0) {
    bth_fields b;
    b.opcode = to_u8(op);
    b.dest_qp = 0x11;
    b.psn = psn;
    ext_fields x;
    x.syndrome = syndrome;
    x.dma_length = dlen;
    std::vector<uint8_t> pl(payload, 0x5a);
    std::vector<uint8_t> out(frame_length(path, b.opcode, payload));
    size_t n = build_frame(out.data(), path, b, x, pl.data(), payload, 1);
    out.resize(n);
    return out;
}

struct replay {
    analyzer an{link_kind::ethernet, {}};
    flow_table flows;
    check_summary check{true};
    uint64_t number = 0;
    const frame_report &add(const std::vector<uint8_t> &f) {
        const frame_report &r =
            an.analyze(++number, f.data(), uint32_t(f.size()), uint32_t(f.size()));
        flows.add(r);
        check.add(r);
        return r;
    }
};

TEST(flows, gaps_retransmissions_naks) {
    roce_path req = test_path(0x0a000001, 0x0a000002), rsp = test_path(0x0a000002, 0x0a000001);
    replay rp;
    for (uint32_t psn : {100u, 101u, 102u, 105u, 106u, 103u, 104u, 105u, 106u, 107u})
        rp.add(build(req, ib_opcode::rc_send_only, psn, 8));
    rp.add(build(rsp, ib_opcode::rc_acknowledge, 102, 0, aeth_syndrome::make_ack(0x1f)));
    rp.add(build(rsp, ib_opcode::rc_acknowledge, 103, 0,
                 aeth_syndrome::make_nak(aeth_syndrome::nak_psn_seq_error)));
    rp.add(build(rsp, ib_opcode::rc_acknowledge, 103, 0, aeth_syndrome::make_rnr_nak(14)));
    auto v = rp.flows.flows();
    ASSERT_EQ(v.size(), 2u);
    const flow_stats &r = *v[0].second;
    EXPECT_EQ(v[0].first.role, flow_key::request);
    EXPECT_EQ(r.packets, 10u);
    EXPECT_EQ(r.payload_bytes, 80u);
    EXPECT_EQ(r.first_psn, 100u);
    EXPECT_EQ(r.last_psn, 107u);
    EXPECT_EQ(r.psn_gaps, 1u);    /* 102 -> 105 */
    EXPECT_EQ(r.psn_missing, 2u); /* 103, 104 */
    /* 103 and 104 arrive late (behind 106): counted as retransmissions, as are 105 and 106. */
    EXPECT_EQ(r.retransmissions, 4u);
    const flow_stats &a = *v[1].second;
    EXPECT_EQ(v[1].first.role, flow_key::response);
    EXPECT_EQ(a.acks, 1u);
    EXPECT_EQ(a.naks, 1u);
    EXPECT_EQ(a.rnr_naks, 1u);
    EXPECT_FALSE(rp.check.failed());
    std::string table = rp.flows.format();
    EXPECT_NE(table.find("10.0.0.1 -> 10.0.0.2 QP=0x000011  RC req"), std::string::npos) << table;
}

TEST(flows, read_requests_consume_several_psns) {
    roce_path req = test_path(0x0a000001, 0x0a000002), rsp = test_path(0x0a000002, 0x0a000001);
    replay rp;
    /* A 4096-byte READ at PSN 10 takes PSNs 10..13 with a 1024 MTU (16 PSNs at most with
     * 256), so a next request at 14 is in order; its responses 10..13 are one sequence. */
    rp.add(build(req, ib_opcode::rc_rdma_read_request, 10, 0, 0, 4096));
    rp.add(build(req, ib_opcode::rc_send_only, 14, 4));
    rp.add(build(rsp, ib_opcode::rc_rdma_read_response_first, 10, 1024));
    rp.add(build(rsp, ib_opcode::rc_rdma_read_response_middle, 11, 1024));
    rp.add(build(rsp, ib_opcode::rc_rdma_read_response_last, 13, 1024));  /* 12 lost */
    rp.add(build(rsp, ib_opcode::rc_rdma_read_response_first, 12, 1024)); /* retried READ */
    auto v = rp.flows.flows();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].second->psn_gaps, 0u);
    EXPECT_EQ(v[0].second->retransmissions, 0u);
    EXPECT_EQ(v[1].second->psn_gaps, 1u);
    EXPECT_EQ(v[1].second->psn_missing, 1u);
    EXPECT_EQ(v[1].second->retransmissions, 1u);
}

/* ------------------------------------------------------------------ analyzer verdicts */

TEST(analyzer, bad_icrc_names_both_values) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto f = build(p, ib_opcode::rc_send_only, 7, 16);
    f[f.size() - 10] ^= 0x01; /* a payload byte */
    replay rp;
    const frame_report &r = rp.add(f);
    EXPECT_EQ(r.error, "bad-icrc");
    EXPECT_FALSE(r.icrc_ok);
    std::string line = format_line(r, "0", {});
    EXPECT_NE(line.find("ICRC BAD (stored 0x"), std::string::npos) << line;
    EXPECT_NE(line.find(", expected 0x"), std::string::npos) << line;
    EXPECT_TRUE(rp.check.failed());
    EXPECT_EQ(rp.check.count("bad-icrc"), 1u);
}

TEST(analyzer, corrupt_udp_port_is_still_recognized_as_roce) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto f = build(p, ib_opcode::rc_send_only, 7, 16);
    f[14 + 20 + 2] ^= 0xff; /* UDP destination port 4791 -> 0xedb7 */
    replay rp;
    const frame_report &r = rp.add(f);
    EXPECT_EQ(r.cls, frame_class::roce);
    EXPECT_TRUE(r.repaired);
    EXPECT_EQ(r.error, "not-rocev2-port");
    EXPECT_NE(r.detail.find("UDP destination port"), std::string::npos) << r.detail;
    EXPECT_EQ(format_fields(r), ""); /* --fields shows packets as captured only */
}

TEST(analyzer, corrupt_ethertype_is_still_recognized_as_roce) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto f = build(p, ib_opcode::rc_acknowledge, 7, 0, 0x1f);
    f[12] = 0x81; /* 0x8100: now it looks VLAN-tagged */
    replay rp;
    const frame_report &r = rp.add(f);
    EXPECT_TRUE(r.repaired);
    EXPECT_FALSE(r.error.empty());
}

TEST(analyzer, masked_fields_are_checked_by_other_means) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto good = build(p, ib_opcode::rc_send_only, 7, 16);
    struct {
        size_t off;
        uint8_t mask;
        const char *error;
    } cases[] = {
        {14 + 1, 0x04, err_ipv4_checksum},         /* DSCP: masked in the ICRC */
        {14 + 8, 0x01, err_ipv4_checksum},         /* TTL */
        {14 + 10, 0x10, err_ipv4_checksum},        /* the checksum itself */
        {14 + 20 + 6, 0x01, err_udp_checksum},     /* a UDP checksum where RoCE sends 0 */
        {14 + 20 + 8 + 4, 0x01, err_bth_reserved}, /* BTH byte 4 reserved bit */
    };
    for (const auto &c : cases) {
        auto f = good;
        f[c.off] ^= c.mask;
        replay rp;
        const frame_report &r = rp.add(f);
        EXPECT_EQ(r.error, c.error) << "byte " << c.off;
        EXPECT_TRUE(r.icrc_ok) << "byte " << c.off << " is masked in the ICRC";
    }
    /* FECN/BECN are legitimately set by the network: not an error. */
    auto f = good;
    f[14 + 20 + 8 + 4] |= bth::becn_bit;
    replay rp;
    EXPECT_TRUE(rp.add(f).error.empty());
    /* --lenient: parser and ICRC only. */
    auto g = good;
    g[14 + 8] ^= 1;
    analyzer lenient(link_kind::ethernet, analyze_options{true});
    EXPECT_TRUE(lenient.analyze(1, g.data(), uint32_t(g.size()), uint32_t(g.size())).error.empty());
}

TEST(analyzer, snapped_frames_are_named_not_verified) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto f = build(p, ib_opcode::rc_rdma_write_only, 42, 1000);
    replay rp;
    const frame_report &r = rp.an.analyze(1, f.data(), 96, uint32_t(f.size()));
    EXPECT_TRUE(r.snapped);
    EXPECT_TRUE(r.error.empty());
    std::string line = format_line(r, "0", {});
    EXPECT_NE(line.find("RC RDMA_WRITE_ONLY QP=0x000011 PSN=42 [snapped: 96 of"), std::string::npos)
        << line;
    rp.flows.add(r);
    /* Flows still count snapped packets, from the BTH, the AETH and the IP length. */
    roce_path back = test_path(0x0a000002, 0x0a000001);
    auto nak = build(back, ib_opcode::rc_acknowledge, 42, 0,
                     aeth_syndrome::make_nak(aeth_syndrome::nak_remote_access_error));
    rp.flows.add(rp.an.analyze(2, nak.data(), 14 + 20 + 8 + 12 + 4, uint32_t(nak.size())));
    auto v = rp.flows.flows();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].second->payload_bytes, 1000u);
    EXPECT_EQ(v[0].second->wire_bytes, f.size());
    EXPECT_EQ(v[1].second->naks, 1u);
}

TEST(analyzer, malformed_packets_keep_their_bth_for_context) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto f = build(p, ib_opcode::rc_send_only, 42, 16);
    f[14 + 20 + 8 + 1] |= 0x03; /* TVer 3 */
    replay rp;
    const frame_report &r = rp.add(f);
    EXPECT_EQ(r.error, "bad-tver");
    std::string line = format_line(r, "0", {});
    EXPECT_NE(line.find("MALFORMED bad-tver (opcode 0x04 RC SEND_ONLY QP=0x000011 PSN=42)"),
              std::string::npos)
        << line;
}

TEST(analyzer, non_ethernet_links_get_the_same_decode) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    auto eth = build(p, ib_opcode::rc_send_only, 42, 16);
    std::vector<uint8_t> raw(eth.begin() + 14, eth.end());
    std::vector<uint8_t> sll(16, 0);
    sll[14] = 0x08;
    sll.insert(sll.end(), raw.begin(), raw.end());
    analyzer a_eth(link_kind::ethernet, {}), a_raw(link_kind::raw_ip, {}),
        a_sll(link_kind::linux_sll, {});
    std::string l_eth = format_line(
        a_eth.analyze(1, eth.data(), uint32_t(eth.size()), uint32_t(eth.size())), "0", {});
    std::string l_raw = format_line(
        a_raw.analyze(1, raw.data(), uint32_t(raw.size()), uint32_t(raw.size())), "0", {});
    std::string l_sll = format_line(
        a_sll.analyze(1, sll.data(), uint32_t(sll.size()), uint32_t(sll.size())), "0", {});
    EXPECT_EQ(l_eth, l_raw);
    EXPECT_EQ(l_eth, l_sll);
    EXPECT_NE(l_eth.find("ICRC ok"), std::string::npos);
}

TEST(analyzer, ipv6_and_vlan_paths) {
    roce_path p;
    p.sgid = *gid::parse("fe80::1");
    p.dgid = *gid::parse("fe80::2");
    path_set_ip_version(p);
    ASSERT_EQ(p.ip_version, 6);
    p.has_vlan = true;
    p.vlan_tci = 0x2000 | 42;
    p.traffic_class = 0x03; /* CE */
    auto f = build(p, ib_opcode::rc_rdma_write_only_imm, 9, 5);
    replay rp;
    const frame_report &r = rp.add(f);
    EXPECT_TRUE(r.error.empty()) << r.error << " " << r.detail;
    EXPECT_EQ(format_line(r, "0", {}),
              "    1 0 fe80::1 -> fe80::2 sport 49152 vlan=42 RC RDMA_WRITE_ONLY_WITH_IMMEDIATE "
              "QP=0x000011 PSN=9 SE=0 M=0 A=0 pad=3 len=5 ecn=CE RETH va=0x0000000000000000 "
              "rkey=0x00000000 dlen=0 ImmDt=0x00000000 ICRC ok");
    auto v = rp.flows.flows();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].first.ip_version, 6);
}

/* ------------------------------------------------------------------ L2 consistency */

TEST(check, a_lone_mac_for_a_busy_ip_is_flagged) {
    roce_path p = test_path(0x0a000001, 0x0a000002);
    replay rp;
    for (uint32_t i = 0; i < 20; i++)
        rp.add(build(p, ib_opcode::rc_send_only, i, 4));
    auto odd = build(p, ib_opcode::rc_send_only, 20, 4);
    odd[3] ^= 0xff; /* destination MAC: invisible to the ICRC */
    EXPECT_TRUE(rp.add(odd).error.empty());
    auto flagged = rp.check.finish();
    ASSERT_EQ(flagged.size(), 1u);
    EXPECT_EQ(flagged[0].number, 21u);
    EXPECT_EQ(flagged[0].error, err_l2_mismatch);
    EXPECT_TRUE(rp.check.failed());
    EXPECT_NE(rp.check.format().find("l2-addr-mismatch              1  frame 21"),
              std::string::npos)
        << rp.check.format();
}

TEST(check, golden_captures_pass) {
    for (const char *name : {"rc_pingpong.pcap", "ib_write_bw.pcap", "ud_pingpong.pcap",
                             "rping_rdmacm.pcap", "ib_atomic_bw.pcap", "published-vectors.pcap"}) {
        replay rp;
        for (const auto &f : load(name))
            rp.add(f.bytes);
        EXPECT_TRUE(rp.check.finish().empty()) << name;
        EXPECT_FALSE(rp.check.failed()) << name << "\n" << rp.check.format();
    }
}

} // namespace
} // namespace uroce::dump

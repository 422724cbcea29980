/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --plot internals (tools/uroce-dump/dump_plot.cpp): which flow an
 * ACK stream and a CNP belong to, retransmissions across the PSN wrap, and
 * that big captures give a bounded picture (marks merged per pixel, capped
 * per kind, flows capped with a note).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dump_analyze.h"
#include "dump_plot.h"
#include <uroce/build.h>
#include <uroce/hdr.h>

namespace uroce::dump {
namespace {

roce_path path_of(uint32_t src, uint32_t dst) {
    roce_path p;
    const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x01}, dmac[6] = {0x02, 0, 0, 0, 0, 0x02};
    std::memcpy(p.src_mac, smac, 6);
    std::memcpy(p.dst_mac, dmac, 6);
    p.sgid = gid::from_ipv4(src);
    p.dgid = gid::from_ipv4(dst);
    path_set_ip_version(p);
    return p;
}

constexpr uint32_t host_a = 0x0a000001, host_b = 0x0a000002;

struct capture {
    analyzer an{link_kind::ethernet, {}};
    plot_collector plot;
    uint64_t number = 0;
    int64_t t_ns = 0;

    void add(const roce_path &path, ib_opcode op, uint32_t qp, uint32_t psn, uint32_t payload = 0,
             uint8_t syndrome = 0) {
        bth_fields b;
        b.opcode = to_u8(op);
        b.dest_qp = qp;
        b.psn = psn & 0xffffff;
        ext_fields x;
        x.syndrome = syndrome;
        std::vector<uint8_t> pl(payload, 0x5a);
        std::vector<uint8_t> f(frame_length(path, b.opcode, payload));
        f.resize(build_frame(f.data(), path, b, x, pl.data(), payload, 1));
        t_ns += 1000;
        plot.add(an.analyze(++number, f.data(), uint32_t(f.size()), uint32_t(f.size())), t_ns);
    }
    const plot_flow_counts &flow(size_t i) {
        flows_ = plot.flows();
        return flows_.at(i).second;
    }
    std::vector<std::pair<flow_key, plot_flow_counts>> flows_;
};

uint64_t marks(const plot_flow_counts &c, mark_kind k) {
    return c.marks[size_t(k)];
}

size_t occurrences(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
        n++;
    return n;
}

TEST(plot, resends_across_the_psn_wrap) {
    capture c;
    roce_path ab = path_of(host_a, host_b), ba = path_of(host_b, host_a);
    /* 0xfffffe, 0xffffff, 0, 1, 2, then go-back-N from 0. */
    for (uint32_t i = 0; i < 5; i++)
        c.add(ab, ib_opcode::rc_send_only, 0x11, 0xfffffe + i, 64);
    c.add(ba, ib_opcode::rc_acknowledge, 0x12, 0, 0,
          aeth_syndrome::make_nak(aeth_syndrome::nak_psn_seq_error));
    for (uint32_t i = 2; i < 6; i++)
        c.add(ab, ib_opcode::rc_send_only, 0x11, 0xfffffe + i, 64);
    c.add(ba, ib_opcode::rc_acknowledge, 0x12, 3, 0, aeth_syndrome::make_ack(31));
    const plot_flow_counts &f = c.flow(0);
    EXPECT_EQ(f.packets, 9u);
    EXPECT_EQ(marks(f, mark_kind::data), 6u); /* 0xfffffe .. 3 */
    EXPECT_EQ(marks(f, mark_kind::retx), 3u); /* 0, 1, 2 again */
    EXPECT_EQ(marks(f, mark_kind::nak_seq), 1u);
    EXPECT_EQ(marks(f, mark_kind::ack), 1u);
}

TEST(plot, ack_streams_and_cnps_find_their_flows) {
    capture c;
    roce_path ab = path_of(host_a, host_b), ba = path_of(host_b, host_a);
    /* Two QPs from A to B (B's QPs 0x21 and 0x22; A's 0x31 and 0x32), PSN
     * spaces far apart; their ACKs interleaved. */
    for (uint32_t i = 0; i < 4; i++) {
        c.add(ab, ib_opcode::rc_send_only, 0x21, 1000 + i, 256);
        c.add(ab, ib_opcode::rc_send_only, 0x22, 900000 + i, 128);
    }
    c.add(ba, ib_opcode::rc_acknowledge, 0x32, 900001, 0, aeth_syndrome::make_ack(31));
    c.add(ba, ib_opcode::rc_acknowledge, 0x31, 1003, 0, aeth_syndrome::make_rnr_nak(14));
    c.add(ba, ib_opcode::rc_acknowledge, 0x31, 1003, 0, aeth_syndrome::make_ack(31));
    /* An ACK stream whose PSNs no flow sent: drawn nowhere. */
    c.add(ba, ib_opcode::rc_acknowledge, 0x99, 5000000, 0, aeth_syndrome::make_ack(31));
    /* CNPs go from B to A's QPNs; the one to 0x77 names no flow. */
    c.add(ba, ib_opcode::cnp, 0x32, 0);
    c.add(ba, ib_opcode::cnp, 0x32, 0);
    c.add(ba, ib_opcode::cnp, 0x31, 0);
    c.add(ba, ib_opcode::cnp, 0x77, 0);
    auto v = c.plot.flows();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].first.dest_qp, 0x21u);
    EXPECT_EQ(marks(v[0].second, mark_kind::ack), 1u);
    EXPECT_EQ(marks(v[0].second, mark_kind::nak_rnr), 1u);
    EXPECT_EQ(marks(v[0].second, mark_kind::cnp), 1u);
    EXPECT_EQ(marks(v[1].second, mark_kind::ack), 1u);
    EXPECT_EQ(marks(v[1].second, mark_kind::cnp), 2u);
    EXPECT_EQ(c.plot.unattributed_cnps(), 1u);
    std::string svg = c.plot.svg({});
    EXPECT_EQ(occurrences(svg, "<g class=\"flow\""), 2u);
    EXPECT_NE(svg.find("1 CNPs name no data flow"), std::string::npos);
}

TEST(plot, big_captures_give_a_bounded_picture) {
    capture c;
    roce_path ab = path_of(host_a, host_b), ba = path_of(host_b, host_a);
    constexpr uint32_t n = 60000;
    for (uint32_t i = 0; i < n; i++) {
        c.add(ab, ib_opcode::rc_send_only, 0x11, i, 16);
        if (i % 4 == 3) c.add(ba, ib_opcode::rc_acknowledge, 0x12, i, 0, 31);
    }
    plot_options o;
    std::string svg = c.plot.svg(o);
    /* At most one mark per pixel of a ~900 x 230 panel per kind, whatever n is. */
    EXPECT_LT(svg.size(), 400000u) << svg.size();
    EXPECT_LE(occurrences(svg, "class=\"data\" cx"), o.max_marks + 1); /* + the legend's */
    EXPECT_NE(svg.find("on a pixel already marked not drawn"), std::string::npos);
    EXPECT_NE(svg.find("data-data=\"60000\""), std::string::npos);

    o.max_marks = 50;
    svg = c.plot.svg(o);
    EXPECT_EQ(occurrences(svg, "class=\"data\" cx"), 50u + 1);
    EXPECT_EQ(occurrences(svg, "class=\"ack\" d"), 50u + 1); /* + the legend's */
    EXPECT_NE(svg.find("more left out (at most 50 of a kind)"), std::string::npos);
}

TEST(plot, flows_are_capped_with_a_note) {
    capture c;
    for (uint32_t q = 0; q < 11; q++)
        for (uint32_t i = 0; i <= q; i++) /* flow q carries q + 1 packets */
            c.add(path_of(host_a, host_b), ib_opcode::rc_send_only, 0x100 + q, i, 100);
    plot_options o;
    std::string svg = c.plot.svg(o);
    EXPECT_EQ(occurrences(svg, "<g class=\"flow\""), 8u);
    EXPECT_NE(svg.find("8 of 11 data flows drawn: the 8 busiest"), std::string::npos);
    /* The three smallest (QPs 0x100..0x102) are the ones left out. */
    EXPECT_EQ(svg.find("QP=0x000102"), std::string::npos);
    EXPECT_NE(svg.find("QP=0x000103"), std::string::npos);
}

TEST(plot, a_capture_without_data_flows_still_gives_a_picture) {
    plot_collector p;
    std::string svg = p.svg({});
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("No RC, UC or UD data flows"), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

} // namespace
} // namespace uroce::dump

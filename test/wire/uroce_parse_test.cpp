/* SPDX-License-Identifier: BSD-3-Clause
 * Parser tests: every golden rxe packet, and one test per parse_error.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "pcap_frames.h"
#include <uroce/parse.h>

namespace uroce {
namespace {

using test::captured_frame;

bool is_udp_4791(const std::vector<uint8_t> &f) {
    /* Independent of the parser under test: plain IPv4, no VLAN, in these captures. */
    return f.size() > 42 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 && f[36] == 0x12 &&
           f[37] == 0xb7;
}

std::vector<captured_frame> load(const char *name) {
    std::string err;
    auto frames = test::read_pcap_frames(test::golden_path(name), err);
    EXPECT_FALSE(frames.empty()) << name << ": " << err;
    return frames;
}

class golden_capture : public ::testing::TestWithParam<const char *> {};

TEST_P(golden_capture, every_roce_packet_parses_and_passes_icrc) {
    size_t roce = 0;
    for (const auto &f : load(GetParam())) {
        roce_packet p;
        parse_error e = parse_frame_verified(f.bytes.data(), f.bytes.size(), p);
        if (!is_udp_4791(f.bytes)) {
            EXPECT_NE(e, parse_error::ok) << "frame " << f.number << " is not RoCE";
            continue;
        }
        roce++;
        ASSERT_EQ(e, parse_error::ok)
            << GetParam() << " frame " << f.number << ": " << parse_error_name(e);
        EXPECT_EQ(p.frame_len, f.bytes.size());
        EXPECT_EQ(p.icrc_offset + icrc_len, f.bytes.size());
        EXPECT_EQ(p.payload_offset + p.payload_len + p.pad, p.icrc_offset);
        EXPECT_TRUE(p.info->is_valid());
    }
    EXPECT_GT(roce, 0u);
}

INSTANTIATE_TEST_SUITE_P(rxe, golden_capture,
                         ::testing::Values("rc_pingpong.pcap", "ib_write_bw.pcap",
                                           "ud_pingpong.pcap", "rping_rdmacm.pcap",
                                           "ib_atomic_bw.pcap", "published-vectors.pcap"));

TEST(parse, rc_pingpong_fields_match_the_oob_exchange) {
    /* ibv_rc_pingpong's client (10.77.0.12) announced QPN 0x11, PSN 0x94a939
     * (shared/golden/oob-ibv_rc_pingpong.txt); its first SEND uses that PSN
     * and targets the server's QPN 0x11. MTU 1024, 4096-byte messages. */
    auto frames = load("rc_pingpong.pcap");
    const auto &f = frames.at(11); /* tshark frame 12: RC Send First */
    roce_packet p;
    ASSERT_EQ(parse_frame_verified(f.bytes.data(), f.bytes.size(), p), parse_error::ok);
    EXPECT_EQ(p.opcode, to_u8(ib_opcode::rc_send_first));
    EXPECT_STREQ(p.info->name, "RC SEND_FIRST");
    EXPECT_EQ(p.dest_qp(), 0x11u);
    EXPECT_EQ(p.psn(), 0x94a939u);
    EXPECT_EQ(p.payload_len, 1024u);
    EXPECT_EQ(p.ip_version, 4);
    EXPECT_EQ(p.ipv4()->src_addr(), 0x0a4d000cu);
    EXPECT_EQ(p.bth()->pkey(), 0xffff);
    EXPECT_FALSE(p.bth()->ack_req());
    EXPECT_EQ(p.udp()->checksum(), 0); /* rxe sends UDP checksum 0 */

    const auto &ack = frames.at(15); /* frame 16: the ACK of the first message */
    ASSERT_EQ(parse_frame_verified(ack.bytes.data(), ack.bytes.size(), p), parse_error::ok);
    ASSERT_NE(p.aeth(), nullptr);
    EXPECT_EQ(p.opcode, to_u8(ib_opcode::rc_acknowledge));
    EXPECT_EQ(aeth_syndrome::type(p.aeth()->syndrome), aeth_syndrome::type_ack);
    EXPECT_EQ(p.psn(), (0x94a939u + 3) & 0xffffff); /* ACKs the LAST packet's PSN */
    EXPECT_EQ(p.aeth()->msn(), 1u);
}

TEST(parse, published_vectors) {
    auto frames = load("published-vectors.pcap");
    roce_packet p;
    /* scapy roce.uts: UC SEND_ONLY, MigReq=1, pad=2, DQPN 211, PSN 13571856 */
    ASSERT_EQ(parse_frame_verified(frames[0].bytes.data(), frames[0].bytes.size(), p),
              parse_error::ok);
    EXPECT_EQ(p.opcode, to_u8(ib_opcode::uc_send_only));
    EXPECT_TRUE(p.bth()->mig_req());
    EXPECT_EQ(p.pad, 2);
    EXPECT_EQ(p.dest_qp(), 211u);
    EXPECT_EQ(p.psn(), 13571856u);
    EXPECT_EQ(p.stored_icrc(), 0xf353f378u);
    /* ConnectX-4 Lx CNP: BECN set, UDP source port 0, TOS 0xC2 */
    ASSERT_EQ(parse_frame_verified(frames[1].bytes.data(), frames[1].bytes.size(), p),
              parse_error::ok);
    EXPECT_EQ(p.opcode, to_u8(ib_opcode::cnp));
    EXPECT_TRUE(p.bth()->becn());
    EXPECT_EQ(p.udp()->src_port(), 0);
    EXPECT_EQ(p.ipv4()->tos, 0xc2);
    EXPECT_EQ(p.payload_len, 0u);
    EXPECT_EQ(p.stored_icrc(), 0x2a00fd82u);
}

/* A good frame to mutate: the first RC SEND_FIRST of rc_pingpong. */
class parse_errors : public ::testing::Test {
  protected:
    void SetUp() override {
        auto frames = load("rc_pingpong.pcap");
        good = frames.at(11).bytes;
        roce_packet p;
        ASSERT_EQ(parse_frame_verified(good.data(), good.size(), p), parse_error::ok);
    }
    parse_error parse(const std::vector<uint8_t> &f) {
        roce_packet p;
        return parse_frame_verified(f.data(), f.size(), p);
    }
    std::vector<uint8_t> good;
    static constexpr size_t ip = 14, udp = 34, bth_at = 42;
};

TEST_F(parse_errors, each_failure_has_its_own_error) {
    auto f = good;
    EXPECT_EQ(parse({f.begin(), f.begin() + 10}), parse_error::truncated_eth);

    f = good;
    f[12] = 0x08, f[13] = 0x06; /* ARP */
    EXPECT_EQ(parse(f), parse_error::not_ip);

    EXPECT_EQ(parse({good.begin(), good.begin() + 20}), parse_error::truncated_ip);

    f = good;
    f[ip] = 0x65; /* version 6 behind type 0x0800 */
    EXPECT_EQ(parse(f), parse_error::bad_ip_version);

    f = good;
    f[ip] = 0x44;
    EXPECT_EQ(parse(f), parse_error::bad_ipv4_ihl);

    f = good;
    f[ip + 2] = 0xff, f[ip + 3] = 0xff; /* total length beyond the frame */
    EXPECT_EQ(parse(f), parse_error::bad_ip_length);

    f = good;
    f[ip + 6] |= 0x20; /* MF */
    EXPECT_EQ(parse(f), parse_error::ip_fragment);

    f = good;
    f[ip + 9] = 6; /* TCP */
    EXPECT_EQ(parse(f), parse_error::not_udp);

    f = good;
    f[udp + 5] ^= 0x04; /* UDP length off by 4 */
    EXPECT_EQ(parse(f), parse_error::bad_udp_length);

    f = good;
    f[udp + 3] = 0xb8; /* port 4792 */
    EXPECT_EQ(parse(f), parse_error::not_rocev2_port);

    f = good;
    f[bth_at + 1] |= 0x01; /* TVer 1 */
    EXPECT_EQ(parse(f), parse_error::bad_tver);

    f = good;
    f[bth_at] = 0x15; /* reserved RC opcode */
    EXPECT_EQ(parse(f), parse_error::unknown_opcode);

    f = good;
    f[bth_at] = 0x41; /* RD: not supported, as in rxe */
    EXPECT_EQ(parse(f), parse_error::unknown_opcode);

    f = good;
    f[bth_at] = to_u8(ib_opcode::rc_rdma_read_request); /* needs a RETH, and no payload */
    EXPECT_EQ(parse(f), parse_error::bad_payload_length);

    f = good;
    f[100] ^= 1; /* one payload bit */
    EXPECT_EQ(parse(f), parse_error::bad_icrc);
}

TEST_F(parse_errors, truncated_headers_after_ip) {
    /* Build small frames whose IP/UDP lengths are consistent but too short. */
    auto shrink = [&](size_t udp_len) {
        std::vector<uint8_t> f(good.begin(), good.begin() + udp + udp_len);
        store_be16(&f[ip + 2], uint16_t(20 + udp_len));
        if (udp_len >= 8) store_be16(&f[udp + 4], uint16_t(udp_len));
        return f;
    };
    EXPECT_EQ(parse(shrink(4)), parse_error::truncated_udp);
    EXPECT_EQ(parse(shrink(8 + 12)), parse_error::truncated_bth);
    auto f = shrink(8 + 12 + 4 + 8);
    f[bth_at] = to_u8(ib_opcode::rc_rdma_write_first); /* RETH is 16 bytes */
    EXPECT_EQ(parse(f), parse_error::truncated_ext_hdrs);
}

TEST_F(parse_errors, pad_rules) {
    /* An ACK with a pad count: ACKs carry no payload (IBTA 9.2). */
    auto frames = load("rc_pingpong.pcap");
    auto ack = frames.at(15).bytes;
    ack[bth_at + 1] |= 0x10;
    EXPECT_EQ(parse(ack), parse_error::bad_pad);
    /* Pad larger than the payload: a 1-byte area cannot hold pad 3. */
    auto f = good;
    f[bth_at + 1] = uint8_t((f[bth_at + 1] & ~0x30) | 0x30);
    roce_packet p;
    EXPECT_EQ(parse_frame(f.data(), f.size(), p), parse_error::ok); /* 1021 + 3 is legal */
    EXPECT_EQ(p.payload_len, 1021u);
    /* Payload + pad must be a multiple of 4: drop one byte and fix the lengths. */
    f = good;
    f.pop_back();
    store_be16(&f[ip + 2], uint16_t(load_be16(&f[ip + 2]) - 1));
    store_be16(&f[udp + 4], uint16_t(load_be16(&f[udp + 4]) - 1));
    EXPECT_EQ(parse(f), parse_error::bad_pad);
}

TEST_F(parse_errors, vlan_tags) {
    auto tagged = [&](int tags) {
        std::vector<uint8_t> f(good.begin(), good.begin() + 12);
        for (int i = 0; i < tags; i++) {
            const uint8_t tag[4] = {0x81, 0x00, 0x20, uint8_t(0x10 + i)};
            f.insert(f.end(), tag, tag + 4);
        }
        f.insert(f.end(), good.begin() + 12, good.end());
        return f;
    };
    roce_packet p;
    auto one = tagged(1);
    ASSERT_EQ(parse_frame_verified(one.data(), one.size(), p), parse_error::ok);
    EXPECT_EQ(p.vlan_count, 1);
    EXPECT_EQ(p.vlan_tci[0], 0x2010);
    EXPECT_EQ(p.l3_offset, 18);
    auto two = tagged(2);
    ASSERT_EQ(parse_frame_verified(two.data(), two.size(), p), parse_error::ok);
    EXPECT_EQ(p.vlan_count, 2);
    EXPECT_EQ(parse(tagged(3)), parse_error::too_many_vlans);
}

TEST(parse, error_names_are_distinct) {
    std::map<std::string, int> seen;
    for (int i = 0; i < int(parse_error::count); i++)
        seen[parse_error_name(parse_error(i))]++;
    EXPECT_EQ(seen.size(), size_t(parse_error::count));
    for (auto &[name, n] : seen)
        EXPECT_EQ(n, 1) << name;
}

TEST(parse, every_truncation_of_every_golden_packet_fails_cleanly) {
    /* Prefixes of real packets: never ok (the ICRC or lengths must catch it), never a crash. */
    for (const char *name : {"rc_pingpong.pcap", "ib_atomic_bw.pcap", "ud_pingpong.pcap"}) {
        auto frames = load(name);
        for (size_t i = 0; i < frames.size(); i += 7) {
            const auto &b = frames[i].bytes;
            for (size_t len = 0; len < std::min<size_t>(b.size(), 128); len++) {
                roce_packet p;
                EXPECT_NE(parse_frame_verified(b.data(), len, p), parse_error::ok);
            }
        }
    }
}

} // namespace
} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Header struct tests: accessors put each field at its IBTA bit position.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <rte_ip.h>

#include <uroce/hdr.h>

namespace uroce {
namespace {

TEST(hdr, bth_fields_at_ibta_positions) {
    /* IBTA 9.2 figure 42, written out by hand: opcode 0x0a, SE, MigReq, pad 3,
     * TVer 0, P_Key 0x8001, FECN, BECN, DestQP 0x123456, AckReq, PSN 0xabcdef. */
    const uint8_t wire[12] = {0x0a, 0xf0, 0x80, 0x01, 0xc0, 0x12,
                              0x34, 0x56, 0x80, 0xab, 0xcd, 0xef};
    bth b;
    std::memset(&b, 0, sizeof(b));
    b.opcode = 0x0a;
    b.set_flags(true, true, 3);
    b.set_pkey(0x8001);
    b.set_ecn_bits(true, true);
    b.set_dest_qp(0x123456);
    b.set_ack_req(true);
    b.set_psn(0xabcdef);
    EXPECT_EQ(0, std::memcmp(&b, wire, sizeof(wire)));
    const auto *r = reinterpret_cast<const bth *>(wire);
    EXPECT_TRUE(r->se());
    EXPECT_TRUE(r->mig_req());
    EXPECT_EQ(r->pad(), 3);
    EXPECT_EQ(r->tver(), 0);
    EXPECT_EQ(r->pkey(), 0x8001);
    EXPECT_TRUE(r->fecn());
    EXPECT_TRUE(r->becn());
    EXPECT_EQ(r->dest_qp(), 0x123456u);
    EXPECT_TRUE(r->ack_req());
    EXPECT_EQ(r->psn(), 0xabcdefu);
    b.set_pad(1);
    EXPECT_EQ(b.pad(), 1);
    EXPECT_TRUE(b.se());
}

TEST(hdr, atomic_eth_is_unaligned_and_big_endian) {
    uint8_t buf[1 + sizeof(atomic_eth)] = {};
    auto *a = reinterpret_cast<atomic_eth *>(buf + 1); /* deliberately odd address */
    a->set_va(0x0102030405060708);
    a->set_rkey(0x11223344);
    a->set_swap_add(0xa1a2a3a4a5a6a7a8);
    a->set_compare(0xb1b2b3b4b5b6b7b8);
    EXPECT_EQ(buf[1], 0x01);
    EXPECT_EQ(buf[8], 0x08);
    EXPECT_EQ(buf[9], 0x11);
    EXPECT_EQ(buf[13], 0xa1);
    EXPECT_EQ(buf[21], 0xb1);
    EXPECT_EQ(buf[28], 0xb8);
    EXPECT_EQ(a->va(), 0x0102030405060708u);
    EXPECT_EQ(a->rkey(), 0x11223344u);
    EXPECT_EQ(a->swap_add(), 0xa1a2a3a4a5a6a7a8u);
    EXPECT_EQ(a->compare(), 0xb1b2b3b4b5b6b7b8u);
}

TEST(hdr, reth_aeth_deth_immdt_ieth) {
    reth r;
    r.set_va(0x00007fbbc8b51000);
    r.set_rkey(0x108d);
    r.set_dma_length(65536);
    const uint8_t reth_wire[16] = {0, 0, 0x7f, 0xbb, 0xc8, 0xb5, 0x10, 0,
                                   0, 0, 0x10, 0x8d, 0,    1,    0,    0};
    EXPECT_EQ(0, std::memcmp(&r, reth_wire, 16));

    aeth a;
    a.syndrome = aeth_syndrome::make_rnr_nak(12);
    a.set_msn(0x010203);
    const uint8_t aeth_wire[4] = {0x2c, 1, 2, 3};
    EXPECT_EQ(0, std::memcmp(&a, aeth_wire, 4));
    EXPECT_EQ(aeth_syndrome::type(a.syndrome), aeth_syndrome::type_rnr_nak);
    EXPECT_EQ(aeth_syndrome::value(a.syndrome), 12);
    EXPECT_EQ(aeth_syndrome::make_nak(aeth_syndrome::nak_remote_access_error), 0x62);
    EXPECT_EQ(aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits), 0x1f);

    deth d;
    d.set_qkey(deth::gsi_qkey);
    d.set_src_qp(1);
    const uint8_t deth_wire[8] = {0x80, 0x01, 0, 0, 0, 0, 0, 1};
    EXPECT_EQ(0, std::memcmp(&d, deth_wire, 8));

    immdt i;
    i.set_imm_raw(0x78563412); /* network order stays as it is */
    EXPECT_EQ(i.imm_be[0], 0x12);
    EXPECT_EQ(i.imm(), 0x12345678u);

    ieth e;
    e.set_rkey(0xdeadbeef);
    EXPECT_EQ(e.rkey_be[0], 0xde);
}

TEST(hdr, ip_and_udp) {
    /* scapy roce.uts vector 1's IPv4 header. */
    const uint8_t v4[20] = {0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11,
                            0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07};
    const auto *ip = reinterpret_cast<const ipv4_hdr *>(v4);
    EXPECT_EQ(ip->version(), 4);
    EXPECT_EQ(ip->header_length(), 20u);
    EXPECT_EQ(ip->total_length(), 0x40);
    EXPECT_EQ(ip->id(), 0x0478);
    EXPECT_FALSE(ip->is_fragment()); /* DF alone is not a fragment */
    EXPECT_EQ(ip->protocol, ip_proto_udp);
    EXPECT_EQ(ip->src_addr(), 0xc0a80007u);

    ipv6_hdr v6{};
    v6.set_vtc_flow(0xab, 0x12345);
    EXPECT_EQ(v6.version(), 6);
    EXPECT_EQ(v6.traffic_class(), 0xab);
    EXPECT_EQ(v6.flow_label(), 0x12345u);
    EXPECT_EQ(v6.vtc_flow_be[0], 0x6a);

    vlan_hdr vl{};
    vl.set_tci(0x6005);
    EXPECT_EQ(vl.pcp(), 3);
    EXPECT_EQ(vl.vid(), 5);
}

/* RFC 1071 as written: big-endian 16-bit words, end-around carry. */
uint16_t rfc1071_sum(const uint8_t *p, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i < len; i += 2)
        sum += uint32_t(p[i]) << 8 | p[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return uint16_t(sum);
}

/* checksum_ok against the textbook sum and DPDK's rte_raw_cksum, for every
 * IHL (options included): headers whose checksum was set right, headers
 * with a bit flipped anywhere (RFC 1071 catches every one-bit error), and
 * the sums at the edges (all zeros, all ones, a checksum of 0xffff where
 * 0x0000 was computed: one's complement has two zeros, and both pass). */
TEST(hdr, ipv4_checksum_ok_is_rfc1071s_check) {
    std::mt19937 rng(1071);
    alignas(8) uint8_t buf[64];
    size_t good = 0, bad = 0;
    for (int round = 0; round < 20000; round++) {
        const unsigned ihl = 5 + round % 11;
        for (uint8_t &b : buf)
            b = uint8_t(rng());
        if (round % 7 == 0) std::memset(buf, round % 14 ? 0xff : 0, sizeof(buf));
        buf[0] = uint8_t(0x40 | ihl);
        auto *ip = reinterpret_cast<ipv4_hdr *>(buf);
        const size_t len = ip->header_length();
        if (round % 2 == 0) { /* a header as a sender makes it */
            ip->set_checksum(0);
            ip->set_checksum(uint16_t(~rfc1071_sum(buf, len)));
            if (round % 6 == 0 && ip->checksum() == 0) ip->set_checksum(0xffff);
            ASSERT_TRUE(ip->checksum_ok()) << "ihl " << ihl << " round " << round;
            if (round % 4 == 0) { /* one bit flipped */
                const size_t bit = rng() % (len * 8);
                buf[bit / 8] ^= uint8_t(1u << (bit % 8));
                ASSERT_FALSE(ip->checksum_ok()) << "bit " << bit << " round " << round;
            }
        }
        const bool want = rfc1071_sum(buf, len) == 0xffff;
        ASSERT_EQ(ip->checksum_ok(), want) << "ihl " << ihl << " round " << round;
        ASSERT_EQ(want, rte_raw_cksum(buf, len) == 0xffff) << "round " << round;
        (want ? good : bad)++;
    }
    EXPECT_GE(good, 5000u);
    EXPECT_GE(bad, 5000u);
    /* the scapy vector above is a real sender's header */
    const uint8_t v4[20] = {0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11,
                            0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07};
    EXPECT_TRUE(reinterpret_cast<const ipv4_hdr *>(v4)->checksum_ok());
}

} // namespace
} // namespace uroce

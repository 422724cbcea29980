/* SPDX-License-Identifier: BSD-3-Clause
 * Header struct tests: accessors put each field at its IBTA bit position.
 */
#include <gtest/gtest.h>

#include <cstring>

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

} // namespace
} // namespace uroce

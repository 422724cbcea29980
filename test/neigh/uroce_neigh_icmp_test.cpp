/* SPDX-License-Identifier: BSD-3-Clause
 * ICMP and ICMPv6 echo (uroce_neigh_icmp.cpp): exact replies, odd lengths,
 * Ethernet padding, IP options, chained payloads, multicast echo, and the
 * drops (checksums, fragments, not for us, ICMPv6 behind extension headers).
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, IcmpEchoReplyExact) {
    auto out = rx(nf::icmp_echo);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
    EXPECT_EQ(n->counters().icmp_rx_echo_request, 1u);
    EXPECT_EQ(n->counters().icmp_tx_echo_reply, 1u);
    EXPECT_EQ(n->size(), 0u); /* ICMP does not populate the cache */
}

TEST_F(NeighTest, IcmpEchoOddLength) {
    auto out = rx(nf::icmp_echo_odd);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_odd_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoEthernetPaddingNotEchoed) {
    auto out = rx(nf::icmp_echo_small);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_small_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoIpOptionsStripped) {
    auto out = rx(nf::icmp_echo_options);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_options_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoChainedOddSegments) {
    for (size_t seg : {1, 3, 7, 16}) {
        make();
        auto out = rx(mk_chain(nf::icmp_echo, 43, seg));
        ASSERT_EQ(out.size(), 1u) << seg;
        EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
        expect_ipv4_icmp_checksums_ok(out[0]);
    }
    /* headers split across segments: counted, not parsed */
    expect_dropped(bytes(), neigh_drop::truncated);
    rte_mbuf *m = mk_chain(nf::icmp_echo, 30, 64);
    rte_mbuf *out[2];
    uint16_t k = 0;
    n->process_burst(&m, 1, out, k);
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->drops(neigh_drop::headers_split), 1u);
}

TEST_F(NeighTest, IcmpDrops) {
    expect_dropped(nf::icmp_echo_bad_icmp_csum, neigh_drop::bad_icmp_checksum);
    expect_dropped(nf::icmp_echo_bad_ip_csum, neigh_drop::bad_ip_checksum);
    expect_dropped(nf::icmp_echo_fragment, neigh_drop::ip_fragment);
    expect_dropped(nf::icmp_echo_not_us, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_echo_broadcast, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_echo_other_mac, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_dest_unreach, neigh_drop::unsupported_type);
    expect_dropped(nf::udp_to_us, neigh_drop::unsupported_type);
    bytes t(nf::icmp_echo.begin(), nf::icmp_echo.end() - 1); /* IP length beyond frame */
    expect_dropped(t, neigh_drop::truncated);
    bytes v = nf::icmp_echo;
    v[14] = 0x55; /* version 5 */
    expect_dropped(v, neigh_drop::bad_ip_header);
    bytes src_mc = nf::icmp_echo;
    src_mc[6] = 0x03; /* group bit in the source MAC */
    expect_dropped(src_mc, neigh_drop::bad_source);
    bytes et = nf::icmp_echo;
    et[12] = 0x88;
    et[13] = 0xb5;
    expect_dropped(et, neigh_drop::unsupported_ethertype);
    EXPECT_EQ(n->counters().icmp_tx_echo_reply, 0u);
}

TEST_F(NeighTest, Icmpv6EchoReplyExact) {
    auto out = rx(nf::icmp6_echo);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    out = rx(nf::icmp6_echo_ll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_ll_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().icmpv6_tx_echo_reply, 2u);
}

TEST_F(NeighTest, Icmpv6EchoAllNodesRepliesFromUnicast) {
    auto out = rx(nf::icmp6_echo_allnodes);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_allnodes_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    cfg.icmpv6_multicast_echo = false;
    make();
    expect_dropped(nf::icmp6_echo_allnodes, neigh_drop::not_for_us);
}

TEST_F(NeighTest, Icmpv6EchoChained) {
    auto out = rx(mk_chain(nf::icmp6_echo, 63, 5));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_reply_expected);
}

TEST_F(NeighTest, Icmpv6Drops) {
    expect_dropped(nf::icmp6_echo_bad_csum, neigh_drop::bad_icmp_checksum);
    expect_dropped(nf::icmp6_echo_not_us, neigh_drop::not_for_us);
    expect_dropped(nf::icmp6_echo_hbh, neigh_drop::unsupported_ext_hdr);
    expect_dropped(nf::router_solicit, neigh_drop::unsupported_type);
    bytes t(nf::icmp6_echo.begin(), nf::icmp6_echo.end() - 3);
    expect_dropped(t, neigh_drop::truncated);
}

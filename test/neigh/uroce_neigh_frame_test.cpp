/* SPDX-License-Identifier: BSD-3-Clause
 * Frame building (uroce_neigh_frame.cpp): the configured 802.1Q tag on
 * frames we originate, a hardware-stripped tag put back on replies, the
 * builders against the scapy frames directly, and the mbuf-chain checksum
 * against the naive RFC 1071 sum.
 */
#include "uroce_neigh_fixture.h"

#include "uroce_ip_addr.h"
#include "uroce_neigh_frame.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, RequestsCarryConfiguredVlan) {
    cfg.vlan_tci = uint16_t(3 << 13 | 5); /* PCP 3 (the usual RoCE priority), VID 5 */
    make();
    n->resolve(G("10.99.0.2"));
    n->resolve(G("fd00:99::2"));
    auto out = poll(0);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_FRAME(out[0], nf::arp_request_vlan_expected_out);
    EXPECT_FRAME(out[1], nf::ns_vlan_expected_out);
    expect_icmpv6_checksum_ok(out[1], 18);
}

TEST_F(NeighTest, HardwareStrippedVlanGoesBackOn) {
    rte_mbuf *m = mk(nf::arp_request);
    m->ol_flags |= RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED;
    m->vlan_tci = 0x6005;
    rte_mbuf *out[1];
    uint16_t k = 0;
    n->process_burst(&m, 1, out, k);
    ASSERT_EQ(k, 1);
    EXPECT_EQ(out[0]->ol_flags & (RTE_MBUF_F_TX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED),
              RTE_MBUF_F_TX_VLAN);
    EXPECT_EQ(out[0]->vlan_tci, 0x6005);
    EXPECT_FRAME(to_bytes(out[0]), nf::arp_reply_expected);
    rte_pktmbuf_free(out[0]);
}

/* The builders on their own, against the frames the cache is expected to
 * send (ResolveArp, ResolveNdAndNaRules): ARP request 10.99.0.1 -> 10.99.0.2,
 * NS fd00:99::1 -> the solicited-node group of fd00:99::2. */
TEST_F(NeighTest, BuildersMatchScapy) {
    neigh_frame::origin o{g_pool, std::nullopt, ME};
    rte_mbuf *m = neigh_frame::build_arp_request(o, mac_addr::broadcast(), 0x0a630001, 0x0a630002);
    ASSERT_NE(m, nullptr);
    EXPECT_FRAME(to_bytes(m), nf::arp_request_expected_out);
    rte_pktmbuf_free(m);
    gid target = G("fd00:99::2");
    gid group = ipv6_solicited_node(target.raw.data());
    m = neigh_frame::build_nd(o, icmpv6_type_neighbor_solicit, ipv6_multicast_mac(group.raw.data()),
                              G("fd00:99::1"), group, target, 0);
    ASSERT_NE(m, nullptr);
    EXPECT_FRAME(to_bytes(m), nf::ns_expected_out);
    expect_icmpv6_checksum_ok(to_bytes(m));
    rte_pktmbuf_free(m);
    /* no pool: nothing built (the caller counts tx_alloc_fail) */
    neigh_frame::origin none{nullptr, std::nullopt, ME};
    EXPECT_EQ(neigh_frame::build_arp_request(none, mac_addr::broadcast(), 1, 2), nullptr);
}

/* mbuf_sum() over chains split at odd offsets equals the naive big-endian
 * RFC 1071 sum (byte-swapped: DPDK sums native little-endian words). */
TEST_F(NeighTest, MbufSumOverChains) {
    const bytes &f = nf::icmp_echo;
    for (size_t seg : {1, 3, 7, 16}) {
        rte_mbuf *m = mk_chain(f, 43, seg);
        for (uint32_t off : {0u, 14u, 15u, 34u}) {
            uint32_t len = uint32_t(f.size()) - off;
            EXPECT_EQ(rte_bswap16(neigh_frame::mbuf_sum(m, off, len)),
                      be_fold(be_sum(&f[off], len)))
                << "segments of " << seg << ", offset " << off;
        }
        rte_pktmbuf_free(m);
    }
}

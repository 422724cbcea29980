/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbor Discovery, NS and NA (uroce_neigh_nd.cpp): NS -> NA (global,
 * link-local, without SLLA, DAD), NS validation, the RFC 4861 7.2.5 NA rules,
 * NA for unknown targets.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, NsToNaExact) {
    auto out = rx(nf::ns);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected); /* S=1 O=1 R=0, TLLA = our MAC */
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().nd_rx_ns, 1u);
    EXPECT_EQ(n->counters().nd_tx_na, 1u);
    /* RFC 4861 7.2.3: sender learned from its SLLA as STALE */
    auto v = n->lookup(G("fd00:99::2"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(v->mac, PEER);
}

TEST_F(NeighTest, NsForLinkLocal) {
    auto out = rx(nf::ns_ll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_ll_expected);
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(state("fe80::ff:fe00:2"), neigh_state::stale);
}

TEST_F(NeighTest, NsUnicastWithoutSlla) {
    auto out = rx(nf::ns_unicast_nosll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected); /* answered to the Ethernet source */
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, NsDadDefended) {
    auto out = rx(nf::ns_dad);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_dad_expected); /* to ff02::1, S=0 (RFC 4861 7.2.4) */
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().nd_rx_ns_dad, 1u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, NsInvalid) {
    expect_dropped(nf::ns_hop64, neigh_drop::bad_hop_limit);
    expect_dropped(nf::ns_optlen0, neigh_drop::bad_nd);
    expect_dropped(nf::ns_other_target, neigh_drop::not_for_us);
    expect_dropped(nf::ns_dad_with_sll, neigh_drop::bad_nd);
    bytes bad = nf::ns;
    bad.back() ^= 1; /* checksum no longer matches */
    expect_dropped(bad, neigh_drop::bad_icmp_checksum);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, ResolveNdAndNaRules) {
    EXPECT_FALSE(n->resolve(G("fd00:99::2")));
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::ns_expected_out);
    expect_icmpv6_checksum_ok(out[0]);

    EXPECT_TRUE(rx(nf::na_from_peer).empty());
    EXPECT_EQ(state("fd00:99::2"), neigh_state::reachable);
    EXPECT_EQ(*n->resolve(G("fd00:99::2")), PEER);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::resolved);

    /* O=0 with a different MAC: not applied; REACHABLE -> STALE (7.2.5) */
    rx(nf::na_unsolicited_no_override);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::stale);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER);
    /* O=1, S=0, different MAC: applied, STALE, event changed */
    rx(nf::na_unsolicited_override_new);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER_NEW);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::stale);
    ASSERT_EQ(events.v.size(), 2u);
    EXPECT_EQ(events.v[1].e, neigh_event::changed);
    /* solicited NA confirms */
    rx(nf::na_from_peer);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::reachable);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER);

    expect_dropped(nf::na_mcast_solicited, neigh_drop::bad_nd);
    expect_dropped(nf::na_claims_ours, neigh_drop::address_conflict);
    ASSERT_FALSE(events.v.empty());
    EXPECT_EQ(events.v.back().e, neigh_event::address_conflict);
    EXPECT_EQ(events.v.back().ip, G("fd00:99::1"));
    EXPECT_EQ(*events.v.back().mac, PEER);
}

TEST_F(NeighTest, NaWithoutEntryIgnored) {
    EXPECT_TRUE(rx(nf::na_from_peer).empty());
    EXPECT_EQ(n->counters().nd_rx_na_ignored, 1u);
    EXPECT_EQ(n->size(), 0u); /* NA never creates entries */
    EXPECT_EQ(n->drops_total(), 0u);
}

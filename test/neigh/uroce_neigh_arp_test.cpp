/* SPDX-License-Identifier: BSD-3-Clause
 * ARP (uroce_neigh_arp.cpp): exact replies (VLAN-tagged too), RFC 5227
 * probes, the RFC 826 merge with and without arp_accept, conflicts, malformed
 * requests.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, ArpRequestReplyExact) {
    auto out = rx(nf::arp_request);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_reply_expected); /* 60 bytes, zero padding: no junk echoed */
    EXPECT_EQ(n->counters().arp_rx_request, 1u);
    EXPECT_EQ(n->counters().arp_tx_reply, 1u);
    /* RFC 826 merge: the requester is learned (STALE: unconfirmed) */
    auto v = n->lookup(G("10.99.0.2"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(v->mac, PEER);
    EXPECT_EQ(n->counters().learned_new, 1u);
    EXPECT_TRUE(events.v.empty()); /* nobody was waiting for it */
}

TEST_F(NeighTest, ArpVlanTagKept) {
    auto out = rx(nf::arp_request_vlan);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_reply_vlan_expected);
}

TEST_F(NeighTest, ArpProbeAnsweredNotLearned) {
    auto out = rx(nf::arp_probe);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_probe_reply_expected);
    EXPECT_EQ(n->counters().arp_rx_probe, 1u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, ArpNotForUs) {
    expect_dropped(nf::arp_request_other, neigh_drop::not_for_us);
    EXPECT_EQ(n->size(), 0u); /* RFC 826: not for us and unknown -> not added */
}

TEST_F(NeighTest, GratuitousArpLearning) {
    /* Unknown sender, arp_accept off (RFC 826 / Linux default): not added. */
    auto out = rx(nf::garp_peer2);
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(n->counters().arp_rx_gratuitous, 1u);
    EXPECT_EQ(n->size(), 0u);

    /* Known sender: the merge updates its MAC (RFC 826) -> STALE, event "changed". */
    rx(nf::arp_request); /* learns 10.99.0.2 = PEER */
    ASSERT_EQ(n->lookup(G("10.99.0.2"))->mac, PEER);
    out = rx(nf::garp_peer_new_mac);
    EXPECT_TRUE(out.empty());
    auto v = n->lookup(G("10.99.0.2"));
    EXPECT_EQ(v->mac, PEER_NEW);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(n->counters().learned_changed, 1u);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::changed);
    EXPECT_EQ(*events.v[0].mac, PEER_NEW);
}

TEST_F(NeighTest, GratuitousArpAcceptCreates) {
    cfg.arp_accept = true;
    make();
    rx(nf::garp_peer2);
    auto v = n->lookup(G("10.99.0.3"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->mac, PEER2);
    EXPECT_EQ(v->state, neigh_state::stale);
}

TEST_F(NeighTest, ArpConflictAndMalformed) {
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(n->counters().address_conflicts, 1u);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::address_conflict);
    EXPECT_EQ(events.v[0].ip, G("10.99.0.1"));
    EXPECT_EQ(*events.v[0].mac, PEER);
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(events.v.size(), 1u); /* rate-limited: 1 event/s */
    poll(2 * S);
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(events.v.size(), 2u);
    events.v.clear();
    expect_dropped(nf::arp_bad_hrd, neigh_drop::bad_arp);
    expect_dropped(nf::arp_bad_op, neigh_drop::bad_arp);
    bytes t(nf::arp_request.begin(), nf::arp_request.begin() + 40);
    expect_dropped(t, neigh_drop::truncated);
    expect_dropped(bytes(nf::arp_request.begin(), nf::arp_request.begin() + 10),
                   neigh_drop::truncated);
    EXPECT_EQ(n->size(), 0u);
}

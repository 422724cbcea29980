/* SPDX-License-Identifier: BSD-3-Clause
 * The neighbour cache (uroce_neigh_cache.cpp): resolution, retransmission
 * and timeout, REACHABLE -> STALE -> DELAY -> PROBE -> deleted, stale gc,
 * confirm(), randomised ReachableTime, special addresses, static entries, a
 * full cache and eviction, hash chains, parked frames, the tx cap, no pool,
 * unicast ND probes.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, ResolveArp) {
    EXPECT_FALSE(n->resolve(G("10.99.0.2")));
    EXPECT_EQ(n->counters().cache_misses, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::incomplete);
    auto out = poll(100);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_request_expected_out);
    EXPECT_FALSE(n->resolve(G("10.99.0.2"))); /* still pending: no second request */
    EXPECT_EQ(n->counters().resolve_pending, 1u);
    EXPECT_TRUE(poll(200).empty());

    EXPECT_TRUE(rx(nf::arp_reply_to_us).empty());
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::resolved);
    EXPECT_EQ(events.v[0].ip, G("10.99.0.2"));
    EXPECT_EQ(*events.v[0].mac, PEER);
    auto mac = n->resolve(G("10.99.0.2"));
    ASSERT_TRUE(mac);
    EXPECT_EQ(*mac, PEER);
    EXPECT_EQ(n->counters().cache_hits, 1u);
    EXPECT_EQ(n->counters().resolutions, 1u);
}

TEST_F(NeighTest, ResolveTimeoutAndRetransmit) {
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002));
    EXPECT_EQ(poll(0).size(), 1u);     /* t=0: first request */
    EXPECT_EQ(poll(S / 2).size(), 0u); /* not yet */
    EXPECT_EQ(poll(S).size(), 1u);     /* RETRANS_TIMER */
    EXPECT_EQ(poll(2 * S).size(), 1u); /* 3rd = MAX_MULTICAST_SOLICIT */
    EXPECT_EQ(n->counters().arp_tx_request, 3u);
    EXPECT_EQ(poll(3 * S).size(), 0u); /* gives up */
    EXPECT_EQ(n->counters().resolution_timeouts, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::failed);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::failed);
    EXPECT_FALSE(events.v[0].mac);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002)); /* hold-down: no storm */
    EXPECT_EQ(n->counters().resolve_failed, 1u);
    EXPECT_EQ(poll(3 * S + S / 2).size(), 0u);
    poll(4 * S); /* failed_hold over: entry removed */
    EXPECT_EQ(n->size(), 0u);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002)); /* a fresh attempt */
    EXPECT_EQ(poll(4 * S + 1).size(), 1u);
}

TEST_F(NeighTest, CacheTimeoutsReachableStaleDelayProbe) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    ASSERT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(30 * S - 1);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(30 * S); /* REACHABLE_TIME */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_EQ(n->counters().reachable_timeouts, 1u);
    /* use: the stale MAC is returned and DELAY starts (RFC 4861 7.3.3) */
    EXPECT_EQ(*n->resolve(G("10.99.0.2")), PEER);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::delay);
    EXPECT_TRUE(poll(34 * S).empty());
    auto out = poll(35 * S); /* DELAY_FIRST_PROBE_TIME: unicast probe */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_unicast_probe_expected_out);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::probe);
    EXPECT_EQ(poll(36 * S).size(), 1u);
    EXPECT_EQ(poll(37 * S).size(), 1u);
    EXPECT_TRUE(poll(38 * S).empty()); /* MAX_UNICAST_SOLICIT unanswered: deleted */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(n->counters().probe_failures, 1u);
    ASSERT_FALSE(events.v.empty());
    EXPECT_EQ(events.v.back().e, neigh_event::failed);
}

TEST_F(NeighTest, ProbeAnsweredAndStaleGc) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    poll(30 * S);
    n->resolve(G("10.99.0.2"));
    poll(35 * S); /* probe sent */
    rx(nf::arp_reply_to_us);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    /* unused stale entries are collected after stale_gc */
    poll(65 * S); /* reachable expires at 35+30 */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    poll(125 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(n->counters().stale_gc, 1u);
}

TEST_F(NeighTest, ConfirmKeepsReachable) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    poll(20 * S);
    n->confirm(G("10.99.0.2"));
    poll(30 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(50 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_EQ(n->counters().confirmations, 1u);
}

TEST_F(NeighTest, RandomizedReachableTime) {
    cfg.randomize_reachable = true;
    make();
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    auto v = n->lookup(G("10.99.0.2"));
    EXPECT_GE(v->deadline_ns, 15 * S);
    EXPECT_LT(v->deadline_ns, 45 * S);
}

TEST_F(NeighTest, ResolveSpecialAddresses) {
    EXPECT_EQ(*n->resolve(G("255.255.255.255")), mac_addr::broadcast());
    EXPECT_EQ(n->resolve(G("224.0.0.251"))->to_string(), "01:00:5e:00:00:fb");
    EXPECT_EQ(n->resolve(G("239.255.1.2"))->to_string(), "01:00:5e:7f:01:02");
    EXPECT_EQ(n->resolve(G("ff02::1:ff00:2"))->to_string(), "33:33:ff:00:00:02");
    EXPECT_EQ(*n->resolve(G("10.99.0.1")), ME);
    EXPECT_EQ(*n->resolve(G("fe80::ff:fe00:1")), ME);
    EXPECT_FALSE(n->resolve(G("0.0.0.0")));
    EXPECT_FALSE(n->resolve(G("::")));
    EXPECT_FALSE(n->resolve(G("127.0.0.1")));
    EXPECT_EQ(n->counters().resolve_invalid, 3u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, StaticEntries) {
    EXPECT_TRUE(n->add_static(G("10.99.0.2"), PEER));
    EXPECT_EQ(*n->resolve(G("10.99.0.2")), PEER);
    rx(nf::garp_peer_new_mac); /* learning never overrides a static entry */
    EXPECT_EQ(n->lookup(G("10.99.0.2"))->mac, PEER);
    poll(1000 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::permanent);
    n->flush();
    EXPECT_EQ(n->size(), 1u);
    EXPECT_TRUE(n->remove(G("10.99.0.2")));
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, CacheFullAndEviction) {
    cfg.max_entries = 4;
    make();
    for (int i = 2; i <= 5; i++)
        n->resolve_ipv4(0x0a630000 + i);
    EXPECT_EQ(n->size(), 4u);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630006)); /* all INCOMPLETE: nothing evictable */
    EXPECT_EQ(n->counters().cache_full, 1u);
    poll(0);
    /* learning when full is skipped, never evicts */
    rx(nf::garp_peer2);
    /* a STALE entry is evictable by resolve() */
    ASSERT_TRUE(n->remove(G("10.99.0.2")));
    rx(nf::arp_request); /* 10.99.0.2 learned STALE */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630007));
    EXPECT_EQ(n->counters().evictions, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(state("10.99.0.7"), neigh_state::incomplete);
}

TEST_F(NeighTest, ManyEntriesHashChains) {
    cfg.max_entries = 3000;
    make();
    for (uint32_t i = 0; i < 3000; i++)
        n->resolve_ipv4(0x0b000000 + i * 7919);
    EXPECT_EQ(n->size(), 3000u);
    for (uint32_t i = 0; i < 3000; i += 3)
        ASSERT_TRUE(n->remove(gid::from_ipv4(0x0b000000 + i * 7919)));
    for (uint32_t i = 0; i < 3000; i++)
        ASSERT_EQ(bool(n->lookup(gid::from_ipv4(0x0b000000 + i * 7919))), i % 3 != 0) << i;
    n->flush();
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, SendOrHoldReleasedOnResolution) {
    rte_mbuf *out[8];
    uint16_t k = 0;
    bytes frame(nf::icmp_echo.begin(), nf::icmp_echo.end());
    EXPECT_FALSE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k));
    EXPECT_FALSE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k)); /* replaces the older one */
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->counters().held_dropped, 1u);
    auto o = poll(0);
    ASSERT_EQ(o.size(), 1u); /* just the ARP request */
    rx(nf::arp_reply_to_us);
    o = poll(1);
    ASSERT_EQ(o.size(), 1u);
    EXPECT_EQ(mac_addr::from_bytes(o[0].data()), PEER);
    EXPECT_EQ(n->counters().held_sent, 1u);
    EXPECT_TRUE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k));
    ASSERT_EQ(k, 1);
    rte_pktmbuf_free(out[0]);
}

TEST_F(NeighTest, HeldFrameFreedOnFailure) {
    rte_mbuf *out[8];
    uint16_t k = 0;
    n->send_or_hold(mk(nf::icmp_echo), G("10.99.0.2"), out, k);
    for (uint64_t t = 0; t <= 3; t++)
        poll(t * S);
    EXPECT_EQ(n->counters().held_dropped, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::failed);
}

TEST_F(NeighTest, TxCapDefersRequests) {
    n->resolve_ipv4(0x0a630002);
    n->resolve_ipv4(0x0a630003);
    rte_mbuf *out[2];
    uint16_t k = 0;
    n->poll(0, out, k, 1);
    EXPECT_EQ(k, 1);
    n->poll(1, out, k, 2);
    EXPECT_EQ(k, 2);
    rte_pktmbuf_free_bulk(out, k);
}

TEST_F(NeighTest, NoPoolNoRequests) {
    cfg.pool = nullptr;
    make();
    n->resolve_ipv4(0x0a630002);
    EXPECT_TRUE(poll(0).empty());
    EXPECT_EQ(n->counters().tx_alloc_fail, 1u);
    rx(nf::arp_reply_to_us); /* passive learning still resolves */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
}

TEST_F(NeighTest, NdProbeIsUnicast) {
    n->resolve(G("fd00:99::2"));
    poll(0);
    rx(nf::na_from_peer);
    poll(30 * S);
    n->resolve(G("fd00:99::2"));
    auto out = poll(35 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::ns_unicast_probe_expected_out);
    expect_icmpv6_checksum_ok(out[0]);
}

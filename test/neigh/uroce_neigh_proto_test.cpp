/* SPDX-License-Identifier: BSD-3-Clause
 * The protocol layer's skeleton (uroce_neigh_proto.cpp): announcements on start
 * and on announce(), the engine's classification, bursts (order, bulk frees),
 * shared (cloned) frames, and the malformed-frame sweeps: every truncation of
 * every frame plus random corruption, with no crash and no mbuf leak.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, AnnouncementsOnStart) {
    cfg.announce_on_start = true;
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_FRAME(out[0], nf::arp_announce_expected_out); /* RFC 5227 2.3 */
    EXPECT_FRAME(out[1], nf::una_ll_expected_out);       /* RFC 4861 7.2.6 */
    EXPECT_FRAME(out[2], nf::una_expected_out);
    expect_icmpv6_checksum_ok(out[1]);
    expect_icmpv6_checksum_ok(out[2]);
    EXPECT_TRUE(poll(S).empty());
    EXPECT_EQ(poll(2 * S).size(), 3u); /* ANNOUNCE_NUM 2, ANNOUNCE_INTERVAL 2 s */
    EXPECT_TRUE(poll(10 * S).empty());
    EXPECT_EQ(n->counters().arp_tx_announce, 2u);
    EXPECT_EQ(n->counters().nd_tx_unsolicited_na, 4u);
    /* explicit re-announce; a tx array too small for a whole round waits */
    n->announce();
    rte_mbuf *o[3];
    uint16_t k = 0;
    n->poll(11 * S, o, k, 2);
    EXPECT_EQ(k, 0);
    n->poll(11 * S + 1, o, k, 3);
    EXPECT_EQ(k, 3);
    rte_pktmbuf_free_bulk(o, k);
}

TEST_F(NeighTest, EngineClassification) {
    for (const bytes *f : {&nf::arp_request, &nf::arp_request_vlan, &nf::icmp_echo, &nf::icmp6_echo,
                           &nf::ns, &nf::na_from_peer, &nf::router_solicit}) {
        rte_mbuf *m = mk(*f);
        EXPECT_TRUE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    /* MLD behind a Hop-by-Hop header is ours too (echo behind one is then
     * counted as unsupported_ext_hdr) */
    for (const bytes *f : {&nf::mldv2_query, &nf::mldv1_query, &nf::icmp6_echo_hbh}) {
        rte_mbuf *m = mk(*f);
        EXPECT_TRUE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    /* UDP (RoCEv2 goes to the transport), runts */
    for (const bytes *f : {&nf::udp_to_us}) {
        rte_mbuf *m = mk(*f);
        EXPECT_FALSE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    rte_mbuf *m = mk(bytes(nf::icmp_echo.begin(), nf::icmp_echo.begin() + 20));
    EXPECT_FALSE(neigh::is_neigh_frame(m));
    rte_pktmbuf_free(m);
}

TEST_F(NeighTest, MixedBurstKeepsOrder) {
    const bytes *in[] = {&nf::arp_request,  &nf::icmp_echo_bad_icmp_csum,
                         &nf::icmp_echo,    &nf::udp_to_us,
                         &nf::icmp6_echo,   &nf::ns,
                         &nf::na_from_peer, &nf::ns_dad};
    const bytes *want[] = {&nf::arp_reply_expected, &nf::icmp_echo_reply_expected,
                           &nf::icmp6_echo_reply_expected, &nf::na_expected, &nf::na_dad_expected};
    rte_mbuf *m[8], *out[8];
    for (int i = 0; i < 8; i++)
        m[i] = mk(*in[i]);
    uint16_t k = 0;
    n->process_burst(m, 8, out, k);
    ASSERT_EQ(k, 5);
    auto got = collect(out, k);
    for (int i = 0; i < 5; i++)
        EXPECT_FRAME(got[i], *want[i]);
    EXPECT_EQ(n->counters().rx_frames, 8u);
    EXPECT_EQ(n->drops_total(), 2u);
}

TEST_F(NeighTest, BigBurstFreesInBulk) {
    std::vector<rte_mbuf *> m(200), out(200);
    for (auto &x : m)
        x = mk(nf::icmp_echo_not_us);
    uint16_t k = 0;
    n->process_burst(m.data(), 200, out.data(), k);
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->drops(neigh_drop::not_for_us), 200u);
}

/* Every frame, every truncation, and random corruption: never a crash or a
 * leak, and every frame is either answered, consumed or counted as a drop. */
TEST_F(NeighTest, MalformedNeverCrashes) {
    const bytes *all[] = {&nf::arp_request,
                          &nf::arp_request_vlan,
                          &nf::arp_reply_to_us,
                          &nf::garp_peer2,
                          &nf::icmp_echo,
                          &nf::icmp_echo_options,
                          &nf::icmp_echo_small,
                          &nf::icmp6_echo,
                          &nf::icmp6_echo_allnodes,
                          &nf::ns,
                          &nf::ns_dad,
                          &nf::na_from_peer,
                          &nf::na_unsolicited_override_new,
                          &nf::icmp6_echo_hbh,
                          &nf::mldv2_query,
                          &nf::mldv1_query,
                          &nf::mldv2_report_other};
    std::mt19937 rng(12345);
    uint64_t replies = 0, inputs = 0;
    for (const bytes *f : all) {
        for (size_t len = 0; len <= f->size(); len++) {
            replies += rx(bytes(f->begin(), f->begin() + len)).size();
            inputs++;
        }
        for (int r = 0; r < 300; r++) {
            bytes b = *f;
            int flips = 1 + int(rng() % 4);
            for (int i = 0; i < flips; i++)
                b[rng() % b.size()] = uint8_t(rng());
            if (rng() % 3 == 0) b.resize(rng() % (b.size() + 1));
            replies += rx(b).size();
            inputs++;
        }
        n->resolve(G("fd00:99::2"));
        n->resolve(G("10.99.0.2"));
        for (auto &x : poll(n->now() + S))
            (void)x;
    }
    EXPECT_EQ(n->counters().rx_frames, inputs);
    EXPECT_LE(replies + n->drops_total(), inputs);
    EXPECT_GT(n->drops(neigh_drop::truncated), 0u);
    EXPECT_GT(n->drops(neigh_drop::bad_icmp_checksum), 0u);
    /* replies were all well-formed enough to carry our MAC as the source */
}

/* A frame still referenced elsewhere (refcnt 2, e.g. kept for capture) is
 * answered from a copy; the shared original is untouched. */
TEST_F(NeighTest, SharedMbufNotWrittenInPlace) {
    rte_mbuf *m = mk(nf::icmp_echo);
    rte_mbuf_refcnt_update(m, 1);
    auto out = rx(m);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    EXPECT_EQ(n->counters().rx_shared_copied, 1u);
    EXPECT_FRAME(to_bytes(m), nf::icmp_echo);
    EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
    rte_pktmbuf_free(m);
    /* a clone (indirect mbuf) of a still-held frame */
    rte_mbuf *orig = mk(nf::ns);
    rte_mbuf *clone = rte_pktmbuf_clone(orig, g_pool);
    ASSERT_NE(clone, nullptr);
    out = rx(clone);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected);
    EXPECT_FRAME(to_bytes(orig), nf::ns);
    rte_pktmbuf_free(orig);
}

/* The same sweep with every frame in an exactly-sized heap buffer (see
 * mk_exact): bounds are enforced by ASan in the sanitizer build. Replies
 * that need room past the request are dropped as no_room, never written. */
TEST_F(NeighTest, MalformedExactBuffers) {
    const bytes *all[] = {&nf::arp_request,    &nf::arp_request_vlan,    &nf::arp_probe,
                          &nf::icmp_echo,      &nf::icmp_echo_options,   &nf::icmp_echo_small,
                          &nf::icmp6_echo,     &nf::icmp6_echo_allnodes, &nf::ns,
                          &nf::ns_dad,         &nf::ns_unicast_nosll,    &nf::na_from_peer,
                          &nf::icmp6_echo_hbh, &nf::mldv2_query,         &nf::mldv1_query};
    std::mt19937 rng(777);
    n->resolve(G("fd00:99::2"));
    n->resolve(G("10.99.0.2"));
    poll(0);
    for (const bytes *f : all) {
        for (size_t len = 0; len <= f->size(); len++)
            rx(mk_exact(bytes(f->begin(), f->begin() + len)));
        for (int r = 0; r < 200; r++) {
            bytes b = *f;
            for (int i = 0; i < 3; i++)
                b[rng() % b.size()] = uint8_t(rng());
            rx(mk_exact(b));
        }
    }
    /* full-size requests are still answered from an exact buffer when the
     * reply is no longer than the request (fresh instance: IP id 0) */
    EXPECT_GT(n->drops(neigh_drop::truncated), 0u);
    make();
    auto out = rx(mk_exact(nf::icmp_echo));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    out = rx(mk_exact(nf::ns));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected);
}

/* SPDX-License-Identifier: BSD-3-Clause
 * MLD (uroce_neigh_mld.cpp): join reports, their retransmission and refresh,
 * the groups following the address table, v1/v2 queries, invalid and
 * foreign MLD, MLD off.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST_F(NeighTest, MldJoinRetransmitAndRefresh) {
    cfg.mld = true;
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    /* one record: the link-local and fd00:99::1 share ff02::1:ff00:1 */
    EXPECT_FRAME(out[0], nf::mld_join_expected_out);
    expect_icmpv6_checksum_ok(out[0], 14, 8); /* behind the 8-byte Hop-by-Hop header */
    EXPECT_TRUE(poll(S / 2).empty());
    out = poll(S); /* [Robustness Variable] 2, [Unsolicited Report Interval] 1 s */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_join_expected_out);
    EXPECT_TRUE(poll(30 * S).empty());
    out = poll(61 * S); /* refresh: current state */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    EXPECT_EQ(n->counters().mld_tx_report, 3u);
}

TEST_F(NeighTest, MldGroupsFollowAddresses) {
    cfg.mld = true;
    ASSERT_TRUE(addrs.add("fd00:99::1:2345/64"));
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_join_two_groups_expected_out);
}

TEST_F(NeighTest, MldQueriesAnswered) {
    cfg.mld = true;
    cfg.mld_refresh_ns = 0;
    make();
    poll(0);
    poll(S); /* the two joins */
    EXPECT_TRUE(rx(nf::mldv2_query).empty());
    EXPECT_EQ(n->counters().mld_rx_query, 1u);
    auto out = poll(2 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    /* group-specific: ours answered, another group's not */
    rx(nf::mldv2_query_other_group);
    EXPECT_TRUE(poll(3 * S).empty());
    rx(nf::mldv2_query_our_group);
    EXPECT_EQ(poll(4 * S).size(), 1u);
    /* an MLDv1 querier: answer in MLDv1, one report per group, to the group */
    rx(nf::mldv1_query);
    out = poll(5 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mldv1_report_expected_out);
    EXPECT_EQ(n->counters().mld_rx_query_v1, 1u);
    /* still MLDv1 mode for the next queries, until 260 s without v1 queries */
    rx(nf::mldv2_query);
    out = poll(6 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mldv1_report_expected_out);
    rx(nf::mldv2_query);
    out = poll(5 * S + 261 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    EXPECT_EQ(n->drops_total(), 0u);
}

TEST_F(NeighTest, MldInvalidAndForeign) {
    cfg.mld = true;
    make();
    poll(0);
    expect_dropped(nf::mldv2_query_hop64, neigh_drop::bad_mld);
    expect_dropped(nf::mldv2_query_global_src, neigh_drop::bad_mld);
    EXPECT_TRUE(rx(nf::mldv2_report_other).empty());
    EXPECT_EQ(n->counters().mld_rx_other, 1u);
    bytes bad = nf::mldv2_query;
    bad.back() ^= 0x40;
    expect_dropped(bad, neigh_drop::bad_icmp_checksum);
    EXPECT_EQ(n->counters().mld_rx_query, 0u);
}

TEST_F(NeighTest, MldOffSendsNothing) {
    cfg.mld = false;
    make();
    EXPECT_TRUE(poll(0).empty());
    rx(nf::mldv2_query);
    EXPECT_TRUE(poll(S).empty());
}

/* SPDX-License-Identifier: BSD-3-Clause
 * The public face of lib/neigh (uroce_neigh.cpp): counter, drop and state
 * names, and the entry iteration and dumps.
 */
#include "uroce_neigh_fixture.h"

using namespace uroce;
using namespace uroce::neigh_test;

TEST(NeighNames, CountersAndDrops) {
    size_t k;
    const char *const *names = neigh_counter_names(k);
    EXPECT_EQ(k * sizeof(uint64_t), sizeof(neigh_counters));
    EXPECT_STREQ(names[0], "rx_frames");
    EXPECT_STREQ(neigh_drop_name(neigh_drop::bad_icmp_checksum), "bad_icmp_checksum");
    size_t kd;
    const char *const *descs = neigh_counter_descriptions(kd);
    EXPECT_EQ(kd, k);
    for (size_t i = 0; i < kd; i++)
        EXPECT_GT(strlen(descs[i]), 5u) << names[i];
    for (size_t i = 0; i < size_t(neigh_drop::count); i++)
        EXPECT_GT(strlen(neigh_drop_description(neigh_drop(i))), 5u)
            << neigh_drop_name(neigh_drop(i));
    EXPECT_STREQ(neigh_drop_name(neigh_drop::count), "?");
    EXPECT_STREQ(neigh_state_name(neigh_state::reachable), "REACHABLE");
}

/* for_each() (a template over an out-of-line visitor), dump() and
 * dump_counters() through the public class. */
TEST_F(NeighTest, ForEachAndDumps) {
    ASSERT_TRUE(n->add_static(G("10.99.0.2"), PEER));
    EXPECT_FALSE(n->resolve(G("fd00:99::2")));
    std::vector<neigh_entry_view> seen;
    n->for_each([&](const neigh_entry_view &v) { seen.push_back(v); });
    ASSERT_EQ(seen.size(), 2u);
    size_t permanent = 0, incomplete = 0;
    for (const auto &v : seen) {
        if (v.state == neigh_state::permanent) {
            permanent++;
            EXPECT_EQ(v.ip, G("10.99.0.2"));
            EXPECT_EQ(v.mac, PEER);
        } else if (v.state == neigh_state::incomplete) {
            incomplete++;
            EXPECT_EQ(v.ip, G("fd00:99::2"));
        }
    }
    EXPECT_EQ(permanent, 1u);
    EXPECT_EQ(incomplete, 1u);
    const neigh &cn = *n;
    size_t k = 0;
    const auto count = [&k](const neigh_entry_view &) { k++; };
    cn.for_each(count);
    EXPECT_EQ(k, 2u);

    expect_dropped(nf::icmp_echo_not_us, neigh_drop::not_for_us);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_NE(f, nullptr);
    n->dump(f);
    n->dump_counters(f);
    std::fclose(f);
    std::string text(buf, len);
    std::free(buf);
    EXPECT_NE(text.find("::ffff:10.99.0.2 lladdr 02:00:00:00:00:02 PERMANENT probes 0\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("fd00:99::2 lladdr (none) INCOMPLETE probes 0\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("neigh.resolve_calls 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("neigh.drop.not_for_us 1\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("neigh.drop.truncated"), std::string::npos) << text; /* zeros omitted */
}

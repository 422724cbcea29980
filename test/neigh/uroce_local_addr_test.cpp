/* SPDX-License-Identifier: BSD-3-Clause
 * The port's own addresses (uroce_local_addr.cpp): the GID table and its
 * rxe-like layout, address parsing and what is refused, source selection,
 * solicited-node groups, the MAC's text forms and the addresses derived from
 * it. No EAL: the address table is plain data, independent of the cache and
 * the protocols.
 */
#include <gtest/gtest.h>

#include "uroce_ip_addr.h"
#include <uroce/local_addr.h>

using namespace uroce;

namespace {

const mac_addr ME{{0x02, 0, 0, 0, 0, 0x01}};

gid G(const char *s) {
    auto g = gid::parse(s);
    EXPECT_TRUE(g.has_value()) << s;
    return g.value_or(gid{});
}

} // namespace

TEST(LocalAddrTable, GidTableLikeRxe) {
    local_addr_table t;
    t.set_mac(ME);
    ASSERT_TRUE(t.add("10.99.0.1/24"));
    ASSERT_TRUE(t.add("fd00:99::1/64"));
    ASSERT_TRUE(t.add("10.98.0.1"));
    ASSERT_EQ(t.gid_count(), 4u);
    EXPECT_EQ(t.gid_at(0)->to_string(), "fe80::ff:fe00:1"); /* EUI-64, U/L bit flipped */
    EXPECT_EQ(t.gid_at(1)->to_string(), "::ffff:10.99.0.1");
    EXPECT_EQ(t.gid_at(2)->to_string(), "::ffff:10.98.0.1");
    EXPECT_EQ(t.gid_at(3)->to_string(), "fd00:99::1");
    EXPECT_FALSE(t.gid_at(4));
    EXPECT_EQ(t.gid_index(G("10.98.0.1")), 2);
    EXPECT_EQ(t.gid_index(G("10.98.0.2")), -1);
    t.set_mac(*mac_addr::parse("00:11:22:33:44:55"));
    EXPECT_EQ(t.gid_at(0)->to_string(), "fe80::211:22ff:fe33:4455");
    EXPECT_TRUE(t.remove(G("10.99.0.1")));
    EXPECT_EQ(t.gid_at(1)->to_string(), "::ffff:10.98.0.1");
    EXPECT_EQ(t.gid_count(), 3u);
}

TEST(LocalAddrTable, ParseAndReject) {
    local_addr_table t;
    t.set_mac(ME);
    EXPECT_FALSE(t.add("10.99.0.1/33"));
    EXPECT_FALSE(t.add("10.99.0.1/"));
    EXPECT_FALSE(t.add("10.99.0.1/2x"));
    EXPECT_FALSE(t.add("224.0.0.1"));
    EXPECT_FALSE(t.add("127.0.0.1"));
    EXPECT_FALSE(t.add("0.0.0.0"));
    EXPECT_FALSE(t.add("255.255.255.255"));
    EXPECT_FALSE(t.add("ff02::1"));
    EXPECT_FALSE(t.add("::"));
    EXPECT_FALSE(t.add("::1"));
    EXPECT_FALSE(t.add("fe80::1")); /* link-local is derived from the MAC */
    EXPECT_FALSE(t.add("bogus"));
    EXPECT_TRUE(t.add("10.99.0.1/24"));
    EXPECT_FALSE(t.add("10.99.0.1/16")); /* duplicate */
    EXPECT_TRUE(t.add("fd00:99::1/64"));
    EXPECT_FALSE(t.add("fd00:99::1/129"));
    EXPECT_TRUE(t.add("::ffff:10.97.0.1/120")); /* IPv6 notation of a mapped IPv4: /120 = /24 */
    EXPECT_EQ(t.ipv4_at(1).prefix_len, 24);
    EXPECT_TRUE(t.is_local_ipv4(0x0a630001));
    EXPECT_TRUE(t.is_local(G("fe80::ff:fe00:1")));
    EXPECT_TRUE(t.is_our_solicited_node(G("ff02::1:ff00:1").raw.data()));
    EXPECT_FALSE(t.is_our_solicited_node(G("ff02::1:ff00:2").raw.data()));
    /* source selection */
    EXPECT_EQ(*t.ipv4_source_for(0x0a610005), 0x0a610001u);
    EXPECT_EQ(*t.ipv4_source_for(0x08080808), 0x0a630001u);
    EXPECT_EQ(t.ipv6_source_for(G("fe80::5").raw.data()).to_string(), "fe80::ff:fe00:1");
    EXPECT_EQ(t.ipv6_source_for(G("fd00:99::5").raw.data()).to_string(), "fd00:99::1");
}

TEST(LocalAddrTable, DerivedAddresses) {
    EXPECT_EQ(ipv6_link_local_from_mac(ME).to_string(), "fe80::ff:fe00:1");
    EXPECT_EQ(ipv6_solicited_node(G("fd00::12:3456").raw.data()).to_string(), "ff02::1:ff12:3456");
}

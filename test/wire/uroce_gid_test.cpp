/* SPDX-License-Identifier: BSD-3-Clause */
#include <gtest/gtest.h>

#include <uroce/gid.h>

namespace uroce {
namespace {

TEST(gid, ipv4_mapped) {
    gid g = gid::from_ipv4(0x0a4d000c);
    EXPECT_TRUE(g.is_ipv4_mapped());
    EXPECT_EQ(g.ipv4(), 0x0a4d000cu);
    EXPECT_EQ(g.to_string(), "::ffff:10.77.0.12");
    EXPECT_EQ(*gid::parse("10.77.0.12"), g);
    EXPECT_EQ(*gid::parse("::ffff:10.77.0.12"), g);
}

TEST(gid, ipv6) {
    auto g = gid::parse("fe80::5054:ff:fe4d:b"); /* rxe's GID index 0 in the peer VM */
    ASSERT_TRUE(g);
    EXPECT_FALSE(g->is_ipv4_mapped());
    EXPECT_EQ(g->to_string(), "fe80::5054:ff:fe4d:b");
    EXPECT_EQ(g->interface_id(), 0x505400fffe4d000bu);
    EXPECT_FALSE(gid::parse("not-an-address"));
    EXPECT_FALSE(gid::parse(""));
    EXPECT_FALSE(gid::parse(std::string(200, '1')));
}

TEST(gid, wire_hex_as_ibv_rc_pingpong_sends_it) {
    /* From shared/golden/oob-ibv_rc_pingpong.txt: 0000:000011:94a939:<gid> */
    auto g = gid::from_wire_hex("00000000000000000000ffff0a4d000c");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->to_string(), "::ffff:10.77.0.12");
    EXPECT_EQ(g->to_wire_hex(), "00000000000000000000ffff0a4d000c");
    EXPECT_FALSE(gid::from_wire_hex("00000000000000000000ffff0a4d000"));
    EXPECT_FALSE(gid::from_wire_hex("00000000000000000000ffff0a4d000g"));
    EXPECT_TRUE(gid{}.is_zero());
}

} // namespace
} // namespace uroce

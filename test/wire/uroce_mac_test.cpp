/* SPDX-License-Identifier: BSD-3-Clause
 * <uroce/mac.h> and lib/wire/uroce_mac.cpp: the MAC address's text forms,
 * its classes, and the IP multicast to Ethernet group mappings.
 */
#include <gtest/gtest.h>

#include <uroce/mac.h>

using namespace uroce;

namespace {

TEST(mac_addr, parse_and_format) {
    auto m = mac_addr::parse("02:AB:cd:0:1:ff");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->to_string(), "02:ab:cd:00:01:ff");
    EXPECT_TRUE(mac_addr::parse("02-00-00-00-00-01"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00:01:02"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00:1x"));
    EXPECT_FALSE(mac_addr::parse("020:00:00:00:00:01"));
    EXPECT_FALSE(mac_addr::parse(""));
}

TEST(mac_addr, classes) {
    EXPECT_TRUE(mac_addr::broadcast().is_multicast());
    EXPECT_FALSE(mac_addr::broadcast().is_valid_unicast());
    EXPECT_TRUE(mac_addr{}.is_zero());
    EXPECT_FALSE(mac_addr{}.is_valid_unicast());
    EXPECT_TRUE((mac_addr{{0x02, 0, 0, 0, 0, 1}}).is_valid_unicast());
    EXPECT_FALSE((mac_addr{{0x01, 0, 0x5e, 0, 0, 1}}).is_valid_unicast());
}

TEST(mac_addr, multicast_mappings) {
    /* RFC 1112 6.4: 224.0.0.251 -> 01:00:5e:00:00:fb; only the low 23 bits count */
    EXPECT_EQ(ipv4_multicast_mac(0xe00000fb).to_string(), "01:00:5e:00:00:fb");
    EXPECT_EQ(ipv4_multicast_mac(0xef8000fb).to_string(), "01:00:5e:00:00:fb");
    /* RFC 2464 7: ff02::1:ff12:3456 -> 33:33:ff:12:34:56 */
    const uint8_t sn[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0x12, 0x34, 0x56};
    EXPECT_EQ(ipv6_multicast_mac(sn).to_string(), "33:33:ff:12:34:56");
}

} // namespace

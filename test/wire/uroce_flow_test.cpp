/* SPDX-License-Identifier: BSD-3-Clause
 * UDP source ports as Linux derives them; figures observed on rxe peers.
 */
#include <gtest/gtest.h>

#include "pcap_frames.h"
#include <uroce/flow.h>
#include <uroce/parse.h>

namespace uroce {
namespace {

TEST(flow, label_is_symmetric_and_in_range) {
    for (uint32_t a : {1u, 0x11u, 0x3fu, 0xffffffu})
        for (uint32_t b : {2u, 0x12u, 0x7654u, 0xfffffeu}) {
            EXPECT_EQ(calc_flow_label(a, b), calc_flow_label(b, a));
            EXPECT_LE(calc_flow_label(a, b), flow_label_mask);
            uint16_t sport = flow_label_to_udp_sport(calc_flow_label(a, b));
            EXPECT_GE(sport, 0xc000);
        }
}

TEST(flow, rc_pingpong_capture_uses_the_kernel_port) {
    /* Both rxe QPs were 0x11 (shared/golden/oob-ibv_rc_pingpong.txt): every RC
     * packet of the capture must carry the port derived from (0x11, 0x11). */
    std::string err;
    auto frames = test::read_pcap_frames(test::golden_path("rc_pingpong.pcap"), err);
    const uint16_t want = flow_label_to_udp_sport(calc_flow_label(0x11, 0x11));
    size_t checked = 0;
    for (const auto &f : frames) {
        roce_packet p;
        if (parse_frame(f.bytes.data(), f.bytes.size(), p) != parse_error::ok) continue;
        EXPECT_EQ(p.udp()->src_port(), want) << "frame " << f.number;
        checked++;
    }
    EXPECT_GT(checked, 100u);
}

TEST(flow, ud_ports) {
    std::string err;
    auto frames = test::read_pcap_frames(test::golden_path("ud_pingpong.pcap"), err);
    size_t checked = 0;
    for (const auto &f : frames) {
        roce_packet p;
        if (parse_frame(f.bytes.data(), f.bytes.size(), p) != parse_error::ok) continue;
        ASSERT_NE(p.deth(), nullptr);
        EXPECT_EQ(p.udp()->src_port(), ud_udp_sport(p.deth()->src_qp())) << "frame " << f.number;
        checked++;
    }
    EXPECT_EQ(checked, 40u);
}

} // namespace
} // namespace uroce

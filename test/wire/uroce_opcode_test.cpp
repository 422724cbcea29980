/* SPDX-License-Identifier: BSD-3-Clause
 * Opcode table tests, against header lengths listed independently from
 * rxe_opcode.c's .length fields and IBTA 9.2.1 table 36.
 */
#include <gtest/gtest.h>

#include <map>

#include <uroce/opcode.h>

namespace uroce {
namespace {

TEST(opcode, extension_lengths_match_rxe) {
    /* rxe_opcode.c .length minus RXE_BTH_BYTES, by opcode. */
    const std::map<uint8_t, uint8_t> expected = {
        {0x00, 0},
        {0x01, 0},
        {0x02, 0},
        {0x03, 4},
        {0x04, 0},
        {0x05, 4},
        {0x06, 16},
        {0x07, 0},
        {0x08, 0},
        {0x09, 4},
        {0x0a, 16},
        {0x0b, 20},
        {0x0c, 16},
        {0x0d, 4},
        {0x0e, 0},
        {0x0f, 4},
        {0x10, 4},
        {0x11, 4},
        {0x12, 12},
        {0x13, 28},
        {0x14, 28},
        {0x16, 4},
        {0x17, 4},
        {0x1c, 20},
        {0x1d, 16},
        {0x20, 0},
        {0x21, 0},
        {0x22, 0},
        {0x23, 4},
        {0x24, 0},
        {0x25, 4},
        {0x26, 16},
        {0x27, 0},
        {0x28, 0},
        {0x29, 4},
        {0x2a, 16},
        {0x2b, 20},
        {0x64, 8},
        {0x65, 12},
        {0x81, 16},
        /* uroce's selective repeat (manufacturer-specific range, not rxe's):
         * SR WRITE FIRST/MIDDLE/LAST/ONLY = RETH, SACK = AETH + 16-byte bitmap */
        {0xc0, 16},
        {0xc1, 16},
        {0xc2, 16},
        {0xc3, 16},
        {0xc4, 20},
    };
    size_t valid = 0;
    for (int op = 0; op < 256; op++) {
        const opcode_info &info = opcode_lookup(uint8_t(op));
        auto it = expected.find(uint8_t(op));
        if (it == expected.end()) {
            EXPECT_FALSE(info.is_valid()) << std::hex << op;
            EXPECT_STREQ(opcode_name(uint8_t(op)), "UNKNOWN");
            continue;
        }
        valid++;
        ASSERT_TRUE(info.is_valid()) << std::hex << op;
        EXPECT_EQ(info.ext_len, it->second) << info.name;
    }
    EXPECT_EQ(valid, expected.size());
}

TEST(opcode, transport_from_high_bits) {
    for (int op = 0; op < 256; op++) {
        const opcode_info &info = opcode_lookup(uint8_t(op));
        if (!info.is_valid() || info.transport == ib_transport::cnp) continue;
        if (info.has(op_flag::vendor)) {
            /* manufacturer-specific (IBTA 9.2.1: 0xC0-0xFF); ours ride on RC */
            EXPECT_EQ(op >> 6, 3) << info.name;
            EXPECT_EQ(info.transport, ib_transport::rc) << info.name;
            continue;
        }
        EXPECT_EQ(uint8_t(info.transport), op >> 5) << info.name;
    }
}

TEST(opcode, message_position_and_direction_are_consistent) {
    for (int op = 0; op < 256; op++) {
        const opcode_info &info = opcode_lookup(uint8_t(op));
        if (!info.is_valid()) continue;
        int positions = info.has(op_flag::only) + info.has_any(op_flag::first) +
                        info.has_any(op_flag::middle) + info.has_any(op_flag::last);
        EXPECT_GE(positions, 1) << info.name;
        EXPECT_FALSE(info.has_any(op_flag::middle) && info.has_any(op_flag::only)) << info.name;
        if (info.transport != ib_transport::cnp) {
            EXPECT_NE(info.has(op_flag::request), info.has(op_flag::response)) << info.name;
        }
        /* IBTA 9.3.3: RETH starts a WRITE and rides on a READ request
         * (uroce's selective repeat puts one on every WRITE packet). */
        if (info.has(op_flag::write) && !info.has(op_flag::vendor)) {
            EXPECT_EQ(info.has(op_flag::reth), info.has_any(op_flag::first)) << info.name;
        }
        /* ImmDt only on the last packet of a message. */
        if (info.has(op_flag::immdt)) {
            EXPECT_TRUE(info.has_any(op_flag::last)) << info.name;
        }
        /* Names carry the transport: "RC ", "UC ", "UD ", or "CNP". */
        std::string n = info.name;
        const char *prefix = info.transport == ib_transport::rc   ? "RC "
                             : info.transport == ib_transport::uc ? "UC "
                             : info.transport == ib_transport::ud ? "UD "
                                                                  : "CNP";
        EXPECT_EQ(n.rfind(prefix, 0), 0u) << n;
    }
}

TEST(opcode, read_middle_response_has_no_aeth) {
    /* IBTA 9.7.5.1.5 / rxe: READ_RESPONSE_MIDDLE carries only payload. */
    EXPECT_EQ(opcode_lookup(ib_opcode::rc_rdma_read_response_middle).offset(ext_hdr::aeth), 0xff);
    EXPECT_EQ(opcode_lookup(ib_opcode::rc_rdma_read_response_first).offset(ext_hdr::aeth), 0);
}

} // namespace
} // namespace uroce

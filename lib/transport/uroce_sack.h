/* SPDX-License-Identifier: BSD-3-Clause
 * Selective repeat between uroce peers (IRN, Mittal et al., SIGCOMM 2018):
 * the responder's window of PSNs received ahead of the expected PSN, and
 * the requester's record of what it re-sent for a SACK. The wire format and
 * the rules are in doc/loss-recovery.md ("Selective repeat"); the code in
 * uroce_sack.cpp.
 *
 * The window is 128 bits: bit i stands for PSN ePSN + 1 + i (ePSN itself is
 * missing by definition: had it arrived it would have been taken in
 * order). The SACK's bitmap is the same 128 bits (include/uroce/hdr.h
 * sack_eth), so what goes on the wire is the window as it stands.
 */
#ifndef UROCE_SACK_H
#define UROCE_SACK_H

#include <cstdint>

#include <uroce/opcode.h>

namespace uroce {

inline constexpr uint32_t sr_window_psns = 128;

/* 128 bits as two words; bit i of the window is bit (i % 64) of w[i / 64]. */
struct sr_bits {
    uint64_t w[2] = {0, 0};

    constexpr bool test(uint32_t i) const { return i < 128 && ((w[i >> 6] >> (i & 63)) & 1); }
    constexpr void set(uint32_t i) {
        if (i < 128) w[i >> 6] |= uint64_t(1) << (i & 63);
    }
    constexpr bool any() const { return (w[0] | w[1]) != 0; }
    /* drop the lowest n bits: bit i becomes bit i - n */
    constexpr void shift(uint32_t n) {
        if (n >= 128) {
            w[0] = w[1] = 0;
        } else if (n >= 64) {
            w[0] = w[1] >> (n - 64);
            w[1] = 0;
        } else if (n > 0) {
            w[0] = (w[0] >> n) | (w[1] << (64 - n));
            w[1] >>= n;
        }
    }
    /* index of the highest set bit; -1 when none */
    constexpr int highest() const {
        if (w[1]) return 127 - __builtin_clzll(w[1]);
        if (w[0]) return 63 - __builtin_clzll(w[0]);
        return -1;
    }
};

static_assert([] {
    sr_bits b;
    b.set(0);
    b.set(64);
    b.set(127);
    b.shift(64);
    return !b.test(0 + 64) && b.test(0) && b.test(63) && b.highest() == 63;
}());

/* Per QP (qp::sr). */
struct sr_state {
    /* responder: PSNs ePSN + 1 + i placed, and which of them end a message */
    sr_bits received;
    sr_bits ends_msg;
    /* requester: when each PSN (by PSN % 128, the window) was last re-sent
     * for a SACK, so a SACK shows a PSN missing again only after an RTT */
    uint64_t resent_ns[sr_window_psns] = {};
    uint32_t resent_psn[sr_window_psns] = {};
};

/* The opcode of a packet of an RDMA WRITE (without immediate: an
 * immediate consumes a receive WQE, which must go in order) on a QP with
 * selective repeat. */
static inline constexpr uint8_t sr_write_opcode(bool first, bool last) {
    using O = ib_opcode;
    return to_u8(first ? (last ? O::sr_rdma_write_only : O::sr_rdma_write_first)
                       : (last ? O::sr_rdma_write_last : O::sr_rdma_write_middle));
}

/* A request the responder may place ahead of the expected PSN: one of the
 * selective-repeat WRITE opcodes, which carry their own address. */
static inline constexpr bool sr_placeable(const opcode_info &info) {
    return info.has(op_flag::vendor | op_flag::write);
}

} // namespace uroce

#endif

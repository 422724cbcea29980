/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 UDP source port entropy, derived exactly as the Linux kernel does
 * (include/rdma/ib_verbs.h: rdma_calc_flow_label, rdma_flow_label_to_udp_sport),
 * so switches hash our flows the way they hash hardware RoCE NICs' flows.
 * The source port range 0xC000-0xFFFF is IBTA Annex A17.2.3's.
 */
#ifndef UROCE_FLOW_H
#define UROCE_FLOW_H

#include <uroce/export.h>

#include <cstdint>

namespace uroce {

inline constexpr uint32_t flow_label_mask = 0xfffff;
inline constexpr uint16_t rocev2_sport_min = 0xc000;

/* Symmetric in (lqpn, rqpn): both directions of an RC connection get the same label. */
static inline constexpr uint32_t calc_flow_label(uint32_t lqpn, uint32_t rqpn) {
    uint64_t v = uint64_t(lqpn) * rqpn;
    v ^= v >> 20;
    v ^= v >> 40;
    return uint32_t(v & flow_label_mask);
}

/* Fold the 20-bit flow label into the 14 free bits of a port in 0xC000-0xFFFF. */
static inline constexpr uint16_t flow_label_to_udp_sport(uint32_t flow_label) {
    uint32_t low = flow_label & 0x03fff;
    uint32_t high = flow_label & 0xfc000;
    low ^= high >> 14;
    return uint16_t(low | rocev2_sport_min);
}

/* rdma_cm connections: the label comes from the CM's TCP-like ports (cma.c). */
static inline constexpr uint32_t calc_flow_label_cm(uint16_t sport, uint16_t dport) {
    return (uint32_t(sport) * 31 + dport) & flow_label_mask;
}

/* UD QPs and QP1 in rxe: 0xC000 + hash_32(qpn, 14) (rxe_qp.c, hash_32 = golden ratio). */
static inline constexpr uint16_t ud_udp_sport(uint32_t qpn) {
    return uint16_t(rocev2_sport_min + (uint32_t(qpn * 0x61C88647u) >> 18));
}

/* Measured on Linux rxe (frames in test/golden/): QPN 0x3f<->0x3f gives 53121, UD QP1 55410,
 * UD 0x12 63494. */
static_assert(flow_label_to_udp_sport(calc_flow_label(0x3f, 0x3f)) == 53121);
static_assert(ud_udp_sport(1) == 55410);
static_assert(ud_udp_sport(0x12) == 63494);

} // namespace uroce

#endif

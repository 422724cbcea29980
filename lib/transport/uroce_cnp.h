/* SPDX-License-Identifier: BSD-3-Clause
 * Notification point (RoCEv2 Annex A17.9.3, DCQCN's NP): a RoCE frame that
 * arrives with the IP ECN bits at CE (RFC 3168: a switch on the way was
 * congested) makes the receiver send a Congestion Notification Packet to the
 * QP that sent it, at most one per QP per cc_config::cnp_interval_ns. And
 * the other direction: a CNP that arrives goes to the QP's reaction point
 * (uroce_dcqcn.h).
 *
 * The CNP is built as a ConnectX-4 Lx sends it (the golden capture in
 * published-vectors.pcap, checked field by field in uroce_cnp_test.cpp):
 * the connection's addresses, DSCP 48 with ECT(0), DF, UDP source port 0,
 * BTH opcode 0x81 with BECN set, P_Key 0xFFFF, the peer's QPN, PSN 0 and
 * AckReq 0, then 16 reserved zero bytes and the ICRC.
 */
#ifndef UROCE_CNP_H
#define UROCE_CNP_H

#include <cstdint>

#include <uroce/cc.h>
#include <uroce/parse.h>

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

class device;
struct qp;
struct hdr_template;

/* The IP ECN field (RFC 3168 section 5). */
inline constexpr uint8_t ecn_mask = 0x3;
inline constexpr uint8_t ecn_not_ect = 0x0;
inline constexpr uint8_t ecn_ect1 = 0x1;
inline constexpr uint8_t ecn_ect0 = 0x2;
inline constexpr uint8_t ecn_ce = 0x3;

/* The traffic class a device sends with: the address vector's DSCP, and
 * the ECN bits the config asks for (ECT(0) or Not-ECT). */
static inline uint8_t tclass_with_ecn(uint8_t tclass, bool ecn) {
    return uint8_t((tclass & ~ecn_mask) | (ecn ? ecn_ect0 : ecn_not_ect));
}

/* The IP ECN field of a parsed frame. */
static inline uint8_t frame_ecn(const roce_packet &p) {
    return p.ip_version == 4 ? p.ipv4()->ecn() : uint8_t(p.ipv6()->traffic_class() & ecn_mask);
}

/* Per QP: when the last CNP went out. */
struct cnp_np_state {
    uint64_t last_ns = 0;
    bool sent = false;
};

/* Build a CNP on template t (the QP's path) to dest_qpn: t's addresses and
 * hop limit, traffic class tclass, UDP source port 0. nullptr when the pool
 * is empty. */
rte_mbuf *cnp_build(rte_mempool *pool, const hdr_template &t, uint32_t dest_qpn, uint8_t tclass,
                    uint16_t ip_id);

/* A CE-marked frame p arrived for q (after every receive check): count it
 * and send the peer QP a CNP unless one went within the interval. */
void cnp_on_ce(device *d, qp *q);

/* A CNP arrived for q (after the address and P_Key checks). */
void cnp_rcv(device *d, qp *q);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * Packet building and payload movement for the transport's fast path.
 *
 * TX: the Eth/IP/UDP part of every frame of a QP (or UD address handle) is a
 * template computed once; per packet only lengths, IP id/checksum, BTH and
 * extension headers are written. The payload is gathered from the work
 * request's SGEs straight into the mbuf (the one copy), then the variant
 * fields are masked in place and one CRC call covers the frame while it is
 * still in L1 (a frame is at most 4 KB + headers): copy and CRC touch each
 * byte once from memory, and a small frame costs one CRC call, not four.
 *
 * RX: the ICRC is checked over the whole frame first (no byte reaches user
 * memory from a corrupt frame), then the payload is copied once, again from
 * L1.
 */
#ifndef UROCE_PKT_H
#define UROCE_PKT_H

#include <cstdint>

#include <uroce/build.h>
#include <uroce/parse.h>
#include <uroce/verbs.h>

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

struct hdr_template {
    uint8_t bytes[sizeof(eth_hdr) + sizeof(vlan_hdr) + sizeof(ipv6_hdr) + sizeof(udp_hdr)] = {};
    uint8_t l2_len = 0;
    uint8_t l3_len = 0;
    uint8_t len = 0; /* l2 + l3 + udp */
    uint8_t ip_version = 4;
    bool csum_offload = false;
};

void make_hdr_template(hdr_template &t, const roce_path &path, bool csum_offload);

/* Where a packet's payload comes from: an SGE list at a byte offset, or a
 * flat buffer (inline data, atomic results, read responses from one MR). */
struct payload_src {
    const sge *sg = nullptr;
    uint32_t num_sge = 0;
    uint64_t offset = 0;
    const uint8_t *flat = nullptr;
};

/* Allocate an mbuf and build a whole frame. Returns nullptr when the pool is
 * empty. ip_id is the IPv4 identification to use. */
rte_mbuf *pkt_build(rte_mempool *pool, const hdr_template &t, const bth_fields &b,
                    const ext_fields &x, const payload_src *src, uint32_t payload_len,
                    uint16_t ip_id);

/* ICRC of a parsed frame held in m (any segmentation), compared with the
 * stored one. */
bool pkt_icrc_ok(const roce_packet &p, const rte_mbuf *m);

/* Copy len payload bytes starting at payload offset off of packet p (in m) to dst. */
void pkt_copy_payload(const roce_packet &p, const rte_mbuf *m, uint32_t off, uint8_t *dst,
                      uint32_t len);

} // namespace uroce

#endif

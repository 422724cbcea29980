/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 builder: writes Eth[/VLAN]/IP/UDP/BTH/extension headers in one pass,
 * driven by the opcode table, then pad and ICRC.
 *
 * A QP computes its roce_path once (at RTR) and reuses it for every packet;
 * per packet only the BTH and extension fields change.
 */
#ifndef UROCE_BUILD_H
#define UROCE_BUILD_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>

#include <uroce/flow.h>
#include <uroce/gid.h>
#include <uroce/hdr.h>
#include <uroce/opcode.h>
#include <uroce/parse.h>

struct rte_mbuf;

namespace uroce {

/* Addressing of one direction of a flow: what an address handle resolves to. */
struct roce_path {
    uint8_t src_mac[6] = {};
    uint8_t dst_mac[6] = {};
    bool has_vlan = false;
    uint16_t vlan_tci = 0;
    uint8_t ip_version = 4; /* 4 when both GIDs are IPv4-mapped, else 6 */
    gid sgid;
    gid dgid;
    uint8_t traffic_class = 0; /* IPv4 TOS (DSCP|ECN) or IPv6 traffic class */
    uint8_t hop_limit = 64;    /* IPv4 TTL or IPv6 hop limit */
    uint32_t flow_label = 0;   /* IPv6 flow label; also the source of the UDP source port */
    uint16_t udp_sport = rocev2_sport_min;
    bool ipv4_dont_fragment = true; /* rxe_net.c sets DF */
    /* RoCEv2 senders leave the UDP checksum 0 (rxe_net.c, hardware NICs); a
     * captured non-zero value is carried here so a capture rebuilds byte for byte. */
    uint16_t udp_checksum = 0;
};

struct bth_fields {
    uint8_t opcode = 0;
    bool solicited = false;
    bool mig_req = false;
    bool ack_req = false;
    bool fecn = false;
    bool becn = false;
    uint8_t tver = 0;
    uint16_t pkey = bth::default_pkey;
    uint32_t dest_qp = 0;
    uint32_t psn = 0;
};

/* Values for the extension headers; only those the opcode carries are written. */
struct ext_fields {
    uint64_t va = 0;         /* RETH / AtomicETH */
    uint32_t rkey = 0;       /* RETH / AtomicETH / IETH */
    uint32_t dma_length = 0; /* RETH */
    uint8_t syndrome = 0;    /* AETH */
    uint32_t msn = 0;        /* AETH */
    uint64_t swap_add = 0;   /* AtomicETH */
    uint64_t compare = 0;    /* AtomicETH */
    uint64_t orig = 0;       /* AtomicAckETH */
    uint32_t imm_raw = 0;    /* ImmDt, network order as in ibv_wc.imm_data */
    uint32_t qkey = 0;       /* DETH */
    uint32_t src_qp = 0;     /* DETH */
    uint8_t feth_selectivity = 0;
    uint8_t feth_placement = 0;
    const uint8_t *sack_bitmap = nullptr; /* SACK ETH: 16 bytes, or zeros */
};

/* Pad bytes that round a payload up to a 4-byte multiple (IBTA 9.2: PadCnt). */
static inline constexpr uint8_t pad_for(uint32_t payload_len) {
    return uint8_t((0u - payload_len) & 3);
}

static inline constexpr size_t l2_length(const roce_path &p) {
    return sizeof(eth_hdr) + (p.has_vlan ? sizeof(vlan_hdr) : 0);
}
static inline constexpr size_t l3_length(const roce_path &p) {
    return p.ip_version == 4 ? sizeof(ipv4_hdr) : sizeof(ipv6_hdr);
}
/* Bytes from the Ethernet header up to the payload, for this path and opcode. */
static inline constexpr size_t header_length(const roce_path &p, uint8_t opcode) {
    return l2_length(p) + l3_length(p) + sizeof(udp_hdr) + sizeof(bth) +
           opcode_lookup(opcode).ext_len;
}
/* Whole frame without FCS: headers, payload, pad, ICRC. */
static inline constexpr size_t frame_length(const roce_path &p, uint8_t opcode,
                                            uint32_t payload_len) {
    return header_length(p, opcode) + payload_len + pad_for(payload_len) + icrc_len;
}

/* Fill a roce_path's IP version from its GIDs (IPv4 when both are IPv4-mapped). */
UROCE_API void path_set_ip_version(roce_path &p);

/* Write all headers into out[0 .. header_length). The IPv4 header checksum is
 * computed unless ip_csum_offload (then left 0 for the NIC). The UDP checksum
 * is 0, as rxe and hardware RoCE NICs send it. Returns the bytes written. */
UROCE_API size_t write_headers(uint8_t *out, const roce_path &path, const bth_fields &b,
                               const ext_fields &x, uint32_t payload_len, uint16_t ip_id,
                               bool ip_csum_offload = false);

/* Write pad zeros and the ICRC after a contiguous frame whose headers and
 * payload are in place; returns the full frame length. */
UROCE_API size_t finish_frame(uint8_t *frame, size_t header_len, uint32_t payload_len,
                              size_t l2_len);

/* Build a whole contiguous frame: headers, a copy of payload, pad, ICRC.
 * out must hold frame_length(path, b.opcode, payload_len) bytes. */
UROCE_API size_t build_frame(uint8_t *out, const roce_path &path, const bth_fields &b,
                             const ext_fields &x, const void *payload, uint32_t payload_len,
                             uint16_t ip_id);

/* Build around an mbuf chain that already holds exactly payload_len payload
 * bytes: headers go into the first segment's headroom (prepend), pad and ICRC
 * are appended to the last segment, and the ICRC is computed over the chain.
 * Sets l2_len/l3_len/l4_len and, with ip_csum_offload, the IPv4 checksum
 * offload flags. Returns false when headroom or tailroom is short. */
UROCE_API bool build_mbuf(struct rte_mbuf *m, const roce_path &path, const bth_fields &b,
                          const ext_fields &x, uint16_t ip_id, bool ip_csum_offload = false);

/* The inverse of write_headers: recover the fields of a parsed packet, so a
 * capture can be rebuilt byte for byte (tests, uroce-dump). */
UROCE_API void extract_fields(const roce_packet &p, roce_path &path, bth_fields &b, ext_fields &x,
                              uint16_t &ip_id);

/* RFC 1071 checksum of an IPv4 header (checksum field treated as zero by the caller). */
UROCE_API uint16_t ipv4_header_checksum(const ipv4_hdr *ip, size_t len);

} // namespace uroce

#endif

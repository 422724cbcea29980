/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 parser: from a byte span or an rte_mbuf chain to a parsed view.
 *
 * The view holds offsets, not copies: every header is read in place through
 * the structs of uroce_hdr.h. Validation is strict (see parse_error) and
 * nothing throws: the fast path returns an enumerated error, which the
 * caller counts per reason.
 */
#ifndef UROCE_PARSE_H
#define UROCE_PARSE_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>

#include <uroce/hdr.h>
#include <uroce/opcode.h>

struct rte_mbuf;

namespace uroce {

/* Every way a frame can fail to be a well-formed RoCEv2 packet. */
enum class parse_error : uint8_t {
    ok = 0,
    truncated_eth,  /* shorter than an Ethernet header (+ VLAN tags) */
    not_ip,         /* Ethernet type is neither IPv4 nor IPv6 (after VLAN tags) */
    too_many_vlans, /* more than two stacked 802.1Q/802.1ad tags */
    truncated_ip,   /* shorter than the IP header */
    bad_ip_version, /* IP version nibble disagrees with the Ethernet type */
    bad_ipv4_ihl,   /* IHL < 5 */
    bad_ip_length,  /* IP total/payload length beyond the frame or below the headers */
    ip_fragment,    /* MF set or fragment offset non-zero: RoCEv2 is never fragmented */
    not_udp,        /* protocol / next header is not UDP */
    truncated_udp,
    bad_udp_length,     /* UDP length disagrees with the IP length */
    not_rocev2_port,    /* UDP destination port is not 4791 */
    truncated_bth,      /* no room for BTH + ICRC */
    bad_tver,           /* BTH TVer is not 0 (IBTA 9.2: C9-3? transport version 0) */
    unknown_opcode,     /* opcode not in the table (RD, XRC, reserved) */
    truncated_ext_hdrs, /* no room for the opcode's extension headers + ICRC */
    bad_pad,            /* PadCnt on an opcode without payload, or pad larger than the payload */
    bad_payload_length, /* payload where the opcode allows none, or ATOMIC_WRITE not 8 bytes */
    headers_split,      /* mbuf: headers not contiguous in the first segment */
    bad_icrc,           /* ICRC mismatch (from the verify functions) */
    count
};

UROCE_API const char *parse_error_name(parse_error e);

/* A parsed RoCEv2 packet. Offsets are from the first byte handed to the parser
 * (the Ethernet header for parse_frame/parse_mbuf, the IP header for parse_ip). */
struct roce_packet {
    const uint8_t *hdr = nullptr; /* the contiguous header bytes (first mbuf segment) */
    uint32_t frame_len = 0; /* bytes from hdr[0] to the end of the ICRC (Ethernet FCS excluded) */
    uint16_t l3_offset = 0;
    uint16_t l4_offset = 0;
    uint16_t bth_offset = 0;
    uint16_t ext_offset = 0; /* first byte after the BTH */
    uint32_t payload_offset = 0;
    uint32_t payload_len = 0; /* payload bytes, pad excluded */
    uint32_t icrc_offset = 0;
    uint16_t vlan_tci[2] = {0, 0};
    uint8_t vlan_count = 0;
    uint8_t ip_version = 0; /* 4 or 6 */
    uint8_t pad = 0;
    uint8_t opcode = 0;
    const opcode_info *info = nullptr;

    const ipv4_hdr *ipv4() const { return reinterpret_cast<const ipv4_hdr *>(hdr + l3_offset); }
    const ipv6_hdr *ipv6() const { return reinterpret_cast<const ipv6_hdr *>(hdr + l3_offset); }
    const eth_hdr *eth() const { return reinterpret_cast<const eth_hdr *>(hdr); }
    const udp_hdr *udp() const { return reinterpret_cast<const udp_hdr *>(hdr + l4_offset); }
    const struct bth *bth() const { return reinterpret_cast<const struct bth *>(hdr + bth_offset); }

    /* An extension header, or nullptr when this opcode does not carry it. */
    template <class H> const H *ext(ext_hdr which) const {
        uint8_t off = info->offset(which);
        return off == 0xff ? nullptr : reinterpret_cast<const H *>(hdr + ext_offset + off);
    }
    const struct reth *reth() const { return ext<struct reth>(ext_hdr::reth); }
    const struct aeth *aeth() const { return ext<struct aeth>(ext_hdr::aeth); }
    const struct atomic_eth *atomic_eth() const {
        return ext<struct atomic_eth>(ext_hdr::atomic_eth);
    }
    const struct atomic_ack_eth *atomic_ack_eth() const {
        return ext<struct atomic_ack_eth>(ext_hdr::atomic_ack_eth);
    }
    const struct immdt *immdt() const { return ext<struct immdt>(ext_hdr::immdt); }
    const struct ieth *ieth() const { return ext<struct ieth>(ext_hdr::ieth); }
    const struct deth *deth() const { return ext<struct deth>(ext_hdr::deth); }
    const struct feth *feth() const { return ext<struct feth>(ext_hdr::feth); }
    const struct sack_eth *sack_eth() const { return ext<struct sack_eth>(ext_hdr::sack_eth); }

    uint32_t psn() const { return bth()->psn(); }
    uint32_t dest_qp() const { return bth()->dest_qp(); }
    /* Payload in the contiguous header bytes; for mbuf chains use the segment walk of the caller.
     */
    const uint8_t *payload() const { return hdr + payload_offset; }
    /* The ICRC as stored (only when the whole frame is contiguous). */
    uint32_t stored_icrc() const { return load_le32(hdr + icrc_offset); }
};

/* Parse an Ethernet frame (optionally 802.1Q-tagged); len excludes the FCS. */
UROCE_API parse_error parse_frame(const uint8_t *data, size_t len, roce_packet &out);
/* Parse from the IP header (no L2), e.g. vectors from a UDP tunnel or scapy. */
UROCE_API parse_error parse_ip(const uint8_t *data, size_t len, roce_packet &out);
/* Parse an mbuf chain holding an Ethernet frame. All headers must sit in the
 * first segment (every PMD puts at least the first 128 B there); payload and
 * ICRC may span segments. */
UROCE_API parse_error parse_mbuf(const struct rte_mbuf *m, roce_packet &out);

/* ICRC verification of an already-parsed packet. */
UROCE_API uint32_t compute_icrc(const roce_packet &p); /* contiguous frame */
UROCE_API uint32_t compute_icrc(const roce_packet &p, const struct rte_mbuf *m); /* mbuf chain */
static inline bool icrc_matches(const roce_packet &p) {
    return compute_icrc(p) == p.stored_icrc();
}
UROCE_API bool icrc_matches(const roce_packet &p, const struct rte_mbuf *m);

/* parse_frame / parse_mbuf followed by the ICRC check: parse_error::bad_icrc on mismatch. */
UROCE_API parse_error parse_frame_verified(const uint8_t *data, size_t len, roce_packet &out);
UROCE_API parse_error parse_mbuf_verified(const struct rte_mbuf *m, roce_packet &out);

} // namespace uroce

#endif

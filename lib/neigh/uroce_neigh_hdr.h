/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour-protocol wire headers (internal to lib/neigh): ARP, ICMP echo,
 * ICMPv6 (echo, Neighbor Solicitation/Advertisement), ND options and MLD.
 * The MAC address type is in uroce_local_addr.h, the address helpers
 * (multicast MACs, solicited-node groups, EUI-64) in uroce_ip_addr.h.
 *
 * Same conventions as uroce_hdr.h: byte arrays only (alignof == 1, sizeof ==
 * wire size), so a header can be overlaid at any offset of a frame, and every
 * multi-byte field is read and written through accessors named by byte order.
 * References: RFC 826 (ARP), RFC 792 (ICMP), RFC 4443 (ICMPv6), RFC 4861
 * (Neighbor Discovery), RFC 2464 8 (the Ethernet link-layer address option),
 * RFC 2710 / RFC 3810 (MLDv1 / MLDv2), RFC 2711 (Router Alert).
 */
#ifndef UROCE_NEIGH_HDR_H
#define UROCE_NEIGH_HDR_H

#include <cstddef>
#include <cstdint>

#include <uroce/byteorder.h>
#include <uroce/gid.h>
#include <uroce/hdr.h>

namespace uroce {

/* ---------------------------------------------------------------- ARP (RFC 826) */

inline constexpr uint16_t arp_hrd_ethernet = 1;
inline constexpr uint16_t arp_op_request = 1;
inline constexpr uint16_t arp_op_reply = 2;

/* ARP for Ethernet/IPv4 only: hlen 6, plen 4, hence fixed 28 bytes. */
struct arp_hdr {
    uint8_t hrd_be[2]; /* hardware type: 1 = Ethernet */
    uint8_t pro_be[2]; /* protocol type: 0x0800 */
    uint8_t hln;       /* 6 */
    uint8_t pln;       /* 4 */
    uint8_t op_be[2];
    uint8_t sha[6]; /* sender hardware address */
    uint8_t spa[4]; /* sender protocol address */
    uint8_t tha[6]; /* target hardware address */
    uint8_t tpa[4]; /* target protocol address */

    uint16_t hrd() const { return load_be16(hrd_be); }
    uint16_t pro() const { return load_be16(pro_be); }
    uint16_t op() const { return load_be16(op_be); }
    uint32_t sender_ip() const { return load_be32(spa); } /* host order */
    uint32_t target_ip() const { return load_be32(tpa); }
    bool is_ether_ipv4() const {
        return hrd() == arp_hrd_ethernet && pro() == ether_type_ipv4 && hln == 6 && pln == 4;
    }

    void set_hrd(uint16_t v) { store_be16(hrd_be, v); }
    void set_pro(uint16_t v) { store_be16(pro_be, v); }
    void set_op(uint16_t v) { store_be16(op_be, v); }
    void set_sender_ip(uint32_t v) { store_be32(spa, v); }
    void set_target_ip(uint32_t v) { store_be32(tpa, v); }
};

/* ---------------------------------------------------------------- ICMP (RFC 792) */

inline constexpr uint8_t ip_proto_icmp = 1;
inline constexpr uint8_t icmp_type_echo_reply = 0;
inline constexpr uint8_t icmp_type_dest_unreach = 3;
inline constexpr uint8_t icmp_type_echo_request = 8;
inline constexpr uint8_t icmp_type_time_exceeded = 11;

/* ICMP header with the echo request/reply layout of the second word (RFC 792
 * p.14: identifier, sequence number); other types keep rest[] opaque. */
struct icmp_hdr {
    uint8_t type;
    uint8_t code;
    uint8_t checksum_be[2];
    uint8_t id_be[2];
    uint8_t seq_be[2];

    uint16_t checksum() const { return load_be16(checksum_be); }
    uint16_t id() const { return load_be16(id_be); }
    uint16_t seq() const { return load_be16(seq_be); }
    void set_checksum(uint16_t v) { store_be16(checksum_be, v); }
    void set_id(uint16_t v) { store_be16(id_be, v); }
    void set_seq(uint16_t v) { store_be16(seq_be, v); }
};

/* ---------------------------------------------------------------- ICMPv6 (RFC 4443, RFC 4861) */

inline constexpr uint8_t ip_proto_icmpv6 = 58;
inline constexpr uint8_t icmpv6_type_dest_unreach = 1;
inline constexpr uint8_t icmpv6_type_echo_request = 128;
inline constexpr uint8_t icmpv6_type_echo_reply = 129;
inline constexpr uint8_t icmpv6_type_mld_query = 130;
inline constexpr uint8_t icmpv6_type_router_solicit = 133;
inline constexpr uint8_t icmpv6_type_router_advert = 134;
inline constexpr uint8_t icmpv6_type_neighbor_solicit = 135;
inline constexpr uint8_t icmpv6_type_neighbor_advert = 136;
inline constexpr uint8_t icmpv6_type_redirect = 137;
inline constexpr uint8_t icmpv6_type_mldv2_report = 143;
/* RFC 4861 6.1.2 / 7.1: ND messages must arrive with hop limit 255, proving
 * they were not forwarded by a router. */
inline constexpr uint8_t nd_hop_limit = 255;

/* The common 4-byte ICMPv6 header (RFC 4443 2.1). */
struct icmpv6_hdr {
    uint8_t type;
    uint8_t code;
    uint8_t checksum_be[2];

    uint16_t checksum() const { return load_be16(checksum_be); }
    void set_checksum(uint16_t v) { store_be16(checksum_be, v); }
};

/* Echo Request/Reply (RFC 4443 4.1, 4.2). */
struct icmpv6_echo {
    icmpv6_hdr h;
    uint8_t id_be[2];
    uint8_t seq_be[2];

    uint16_t id() const { return load_be16(id_be); }
    uint16_t seq() const { return load_be16(seq_be); }
    void set_id(uint16_t v) { store_be16(id_be, v); }
    void set_seq(uint16_t v) { store_be16(seq_be, v); }
};

/* Neighbor Solicitation (RFC 4861 4.3). Options follow. */
struct nd_ns {
    icmpv6_hdr h;
    uint8_t reserved[4];
    uint8_t target[16];
};

/* Neighbor Advertisement (RFC 4861 4.4). Options follow. */
struct nd_na {
    icmpv6_hdr h;
    uint8_t flags_be[4]; /* R (31) | S (30) | O (29) | reserved */
    uint8_t target[16];

    static constexpr uint32_t flag_router = 0x80000000u;
    static constexpr uint32_t flag_solicited = 0x40000000u;
    static constexpr uint32_t flag_override = 0x20000000u;

    uint32_t flags() const { return load_be32(flags_be); }
    bool router() const { return flags() & flag_router; }
    bool solicited() const { return flags() & flag_solicited; }
    bool override_flag() const { return flags() & flag_override; }
    void set_flags(bool r, bool s, bool o) {
        store_be32(flags_be,
                   (r ? flag_router : 0) | (s ? flag_solicited : 0) | (o ? flag_override : 0));
    }
};

/* ND option TLV header (RFC 4861 4.6): length in units of 8 octets, 0 invalid. */
inline constexpr uint8_t nd_opt_source_lladdr = 1;
inline constexpr uint8_t nd_opt_target_lladdr = 2;
inline constexpr uint8_t nd_opt_nonce = 14; /* RFC 7527 enhanced DAD (Linux sends it) */

struct nd_opt_hdr {
    uint8_t type;
    uint8_t len; /* units of 8 octets */
    size_t length_bytes() const { return size_t(len) * 8; }
};

/* Source/Target Link-Layer Address option for Ethernet (RFC 4861 4.6.1, RFC 2464 8). */
struct nd_opt_lladdr {
    uint8_t type;
    uint8_t len; /* 1 */
    uint8_t addr[6];
};

/* ---------------------------------------------------------------- MLD (RFC 2710, RFC 3810) */

/* Nodes join the solicited-node group of each of their addresses (RFC 4861
 * 7.2.1); MLD reports tell snooping switches, which otherwise may not
 * forward Neighbor Solicitations to us. */
inline constexpr uint8_t ipv6_nh_hop_by_hop = 0;
inline constexpr uint8_t icmpv6_type_mldv1_report = 131;
inline constexpr uint8_t icmpv6_type_mld_done = 132;
inline constexpr uint8_t mld_rec_mode_is_exclude = 2;   /* RFC 3810 5.2.12: current state */
inline constexpr uint8_t mld_rec_change_to_exclude = 4; /* state change: join */
inline constexpr uint8_t ipv6_opt_router_alert = 5;     /* RFC 2711 */
inline constexpr uint16_t router_alert_mld = 0; /* RFC 2711: "Datagram contains a MLD message" */
/* ff02::16, all MLDv2-capable routers (RFC 3810 5.2.14). */
static inline gid ipv6_all_mldv2_routers() {
    gid g;
    g.raw = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x16};
    return g;
}

/* Hop-by-Hop header carrying only the Router Alert option padded to 8 bytes,
 * as every MLD message has (RFC 2710 3, RFC 3810 5: hop limit 1 + RA). */
struct ipv6_hbh_hdr {
    uint8_t next_header;
    uint8_t hdr_ext_len; /* in 8-octet units, not counting the first 8 */
    uint8_t options[6];
    size_t length_bytes() const { return (size_t(hdr_ext_len) + 1) * 8; }
};

/* MLDv1 message (RFC 2710 3); also the MLDv2 query's first 24 bytes. */
struct mld_hdr {
    icmpv6_hdr h;
    uint8_t max_resp_delay_be[2];
    uint8_t reserved[2];
    uint8_t mcast_addr[16];

    uint16_t max_resp_delay() const { return load_be16(max_resp_delay_be); }
};

/* MLDv2 Report header (RFC 3810 5.2); address records follow. */
struct mldv2_report_hdr {
    icmpv6_hdr h;
    uint8_t reserved[2];
    uint8_t num_records_be[2];

    uint16_t num_records() const { return load_be16(num_records_be); }
    void set_num_records(uint16_t v) { store_be16(num_records_be, v); }
};

/* MLDv2 Multicast Address Record without sources (RFC 3810 5.2.4). */
struct mldv2_record {
    uint8_t type;
    uint8_t aux_data_len;
    uint8_t num_sources_be[2];
    uint8_t mcast_addr[16];
};

/* ---------------------------------------------------------------- sizes and layout checks */

#define UROCE_CHECK_NEIGH_HDR(type, size)                                                          \
    static_assert(sizeof(type) == (size), #type " has the wrong wire size");                       \
    static_assert(alignof(type) == 1, #type " must be overlayable at any offset")

UROCE_CHECK_NEIGH_HDR(arp_hdr, 28);
UROCE_CHECK_NEIGH_HDR(icmp_hdr, 8);
UROCE_CHECK_NEIGH_HDR(icmpv6_hdr, 4);
UROCE_CHECK_NEIGH_HDR(icmpv6_echo, 8);
UROCE_CHECK_NEIGH_HDR(nd_ns, 24);
UROCE_CHECK_NEIGH_HDR(nd_na, 24);
UROCE_CHECK_NEIGH_HDR(nd_opt_hdr, 2);
UROCE_CHECK_NEIGH_HDR(nd_opt_lladdr, 8);
UROCE_CHECK_NEIGH_HDR(ipv6_hbh_hdr, 8);
UROCE_CHECK_NEIGH_HDR(mld_hdr, 24);
UROCE_CHECK_NEIGH_HDR(mldv2_report_hdr, 8);
UROCE_CHECK_NEIGH_HDR(mldv2_record, 20);
#undef UROCE_CHECK_NEIGH_HDR

static_assert(offsetof(arp_hdr, op_be) == 6 && offsetof(arp_hdr, sha) == 8 &&
              offsetof(arp_hdr, spa) == 14 && offsetof(arp_hdr, tha) == 18 &&
              offsetof(arp_hdr, tpa) == 24);
static_assert(offsetof(icmp_hdr, checksum_be) == 2 && offsetof(icmp_hdr, id_be) == 4 &&
              offsetof(icmp_hdr, seq_be) == 6);
static_assert(offsetof(icmpv6_echo, id_be) == 4 && offsetof(icmpv6_echo, seq_be) == 6);
static_assert(offsetof(nd_ns, target) == 8 && offsetof(nd_na, flags_be) == 4 &&
              offsetof(nd_na, target) == 8);
static_assert(offsetof(nd_opt_lladdr, addr) == 2);
static_assert(offsetof(mld_hdr, max_resp_delay_be) == 4 && offsetof(mld_hdr, mcast_addr) == 8);
static_assert(offsetof(mldv2_report_hdr, num_records_be) == 6);
static_assert(offsetof(mldv2_record, mcast_addr) == 4);

/* Ethernet frames shorter than this (without FCS) are padded (IEEE 802.3 minimum). */
inline constexpr size_t eth_min_frame_len = 60;
/* Frame sizes of what this subsystem builds. */
inline constexpr size_t arp_frame_len = sizeof(eth_hdr) + sizeof(arp_hdr); /* 42, padded to 60 */
inline constexpr size_t nd_frame_len =
    sizeof(eth_hdr) + sizeof(ipv6_hdr) + sizeof(nd_ns) + sizeof(nd_opt_lladdr); /* 86 */
static_assert(sizeof(nd_ns) == sizeof(nd_na), "NS and NA share one frame size");

} // namespace uroce

#endif

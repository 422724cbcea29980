/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 wire headers: one struct per header, byte-order-explicit accessors.
 *
 * All structs are made of byte arrays, so alignof == 1 and sizeof is exactly
 * the wire size: a header may be overlaid at any offset of a frame
 * (AtomicETH is 28 bytes and follows a 12-byte BTH, so nothing after it is
 * 8-aligned). Field layout: IBTA Vol 1 Release 1.4, 9.2 (BTH) and 9.3
 * (extended transport headers); RoCEv2 encapsulation: IBTA Annex A17.
 * Offsets are checked with static_assert at the bottom of this file; no other
 * file in uroce computes a header offset by hand.
 */
#ifndef UROCE_HDR_H
#define UROCE_HDR_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <uroce/byteorder.h>

namespace uroce {

/* ---------------------------------------------------------------- L2 / L3 / L4 */

inline constexpr uint16_t ether_type_ipv4 = 0x0800;
inline constexpr uint16_t ether_type_arp = 0x0806;
inline constexpr uint16_t ether_type_vlan = 0x8100;
inline constexpr uint16_t ether_type_qinq = 0x88a8;
inline constexpr uint16_t ether_type_ipv6 = 0x86dd;
inline constexpr uint8_t ip_proto_udp = 17;
/* IANA-assigned RoCEv2 destination port (IBTA Annex A17.2.3). */
inline constexpr uint16_t rocev2_udp_port = 4791;

struct eth_hdr {
    uint8_t dst[6];
    uint8_t src[6];
    uint8_t ether_type_be[2];

    uint16_t ether_type() const { return load_be16(ether_type_be); }
    void set_ether_type(uint16_t v) { store_be16(ether_type_be, v); }
};

/* 802.1Q tag: follows an eth_hdr whose ether_type is 0x8100. */
struct vlan_hdr {
    uint8_t tci_be[2];
    uint8_t ether_type_be[2];

    uint16_t tci() const { return load_be16(tci_be); }
    uint16_t vid() const { return tci() & 0x0fff; }
    uint8_t pcp() const { return uint8_t(tci() >> 13); }
    uint16_t ether_type() const { return load_be16(ether_type_be); }
    void set_tci(uint16_t v) { store_be16(tci_be, v); }
    void set_ether_type(uint16_t v) { store_be16(ether_type_be, v); }
};

/* The bytes of header h from offset off: where the 32-bit word that a
 * 24-bit field ends begins (load_be24_in_word; BTH, AETH, DETH). */
template <class H> inline const uint8_t *header_word(const H &h, size_t off) {
    return reinterpret_cast<const uint8_t *>(&h) + off;
}

struct ipv4_hdr {
    uint8_t version_ihl;
    uint8_t tos; /* DSCP (7:2) and ECN (1:0); masked to ones in the ICRC */
    uint8_t total_length_be[2];
    uint8_t id_be[2];
    uint8_t frag_be[2]; /* flags (15:13) and fragment offset (12:0) */
    uint8_t ttl;        /* masked to ones in the ICRC */
    uint8_t protocol;
    uint8_t checksum_be[2]; /* masked to ones in the ICRC */
    uint8_t src[4];
    uint8_t dst[4];

    static constexpr uint16_t flag_df = 0x4000;
    static constexpr uint16_t flag_mf = 0x2000;
    static constexpr uint16_t frag_offset_mask = 0x1fff;

    uint8_t version() const { return version_ihl >> 4; }
    uint8_t ihl() const { return version_ihl & 0x0f; }
    size_t header_length() const { return size_t(ihl()) * 4; }
    uint8_t dscp() const { return tos >> 2; }
    uint8_t ecn() const { return tos & 3; }
    uint16_t total_length() const { return load_be16(total_length_be); }
    uint16_t id() const { return load_be16(id_be); }
    uint16_t frag() const { return load_be16(frag_be); }
    bool is_fragment() const { return (frag() & (flag_mf | frag_offset_mask)) != 0; }
    uint16_t checksum() const { return load_be16(checksum_be); }
    uint32_t src_addr() const { return load_be32(src); } /* host order */
    uint32_t dst_addr() const { return load_be32(dst); }
    /* RFC 1071: the header's 16-bit words, the checksum field included, add
     * up to 0xffff in one's complement when the checksum is right. The
     * caller has checked that the IHL is at least 5 and that its
     * header_length() bytes are here, options included (as parsing does).
     * Added as 32-bit words in host order, at most 15 of them into 64 bits:
     * a one's-complement sum folds to the same 16 bits whatever the width
     * of the words added (RFC 1071 2(C)), and to all ones whatever their
     * byte order (2(B)). rte_raw_cksum's loop over 16-bit words was a third
     * of rx_one's time at 64 B SENDs. */
    bool checksum_ok() const {
        const auto *p = reinterpret_cast<const uint8_t *>(this);
        const size_t len = header_length();
        auto word = [p](size_t at) {
            uint32_t w;
            std::memcpy(&w, p + at, sizeof(w));
            return w;
        };
        /* the fixed 20 bytes straight, then the options (IHL > 5), if any */
        uint64_t sum = uint64_t(word(0)) + word(4) + word(8) + word(12) + word(16);
        for (size_t i = sizeof(ipv4_hdr); i < len; i += 4)
            sum += word(i);
        sum = (sum & 0xffffffffu) + (sum >> 32); /* < 2^32 + 15 */
        sum = (sum & 0xffffffffu) + (sum >> 32); /* < 2^32 */
        sum = (sum & 0xffffu) + (sum >> 16);     /* <= 0x1fffe */
        sum = (sum & 0xffffu) + (sum >> 16);     /* <= 0xffff */
        return sum == 0xffffu;
    }

    void set_total_length(uint16_t v) { store_be16(total_length_be, v); }
    void set_id(uint16_t v) { store_be16(id_be, v); }
    void set_frag(uint16_t v) { store_be16(frag_be, v); }
    void set_checksum(uint16_t v) { store_be16(checksum_be, v); }
    void set_src_addr(uint32_t v) { store_be32(src, v); }
    void set_dst_addr(uint32_t v) { store_be32(dst, v); }
};

struct ipv6_hdr {
    uint8_t vtc_flow_be[4]; /* version (31:28), traffic class (27:20), flow label (19:0) */
    uint8_t payload_length_be[2];
    uint8_t next_header;
    uint8_t hop_limit;
    uint8_t src[16];
    uint8_t dst[16];

    uint32_t vtc_flow() const { return load_be32(vtc_flow_be); }
    uint8_t version() const { return uint8_t(vtc_flow() >> 28); }
    uint8_t traffic_class() const { return uint8_t(vtc_flow() >> 20); }
    uint32_t flow_label() const { return vtc_flow() & 0xfffff; }
    uint16_t payload_length() const { return load_be16(payload_length_be); }

    void set_vtc_flow(uint8_t tclass, uint32_t flow_label) {
        store_be32(vtc_flow_be, (6u << 28) | (uint32_t(tclass) << 20) | (flow_label & 0xfffff));
    }
    void set_payload_length(uint16_t v) { store_be16(payload_length_be, v); }
};

struct udp_hdr {
    uint8_t src_port_be[2];
    uint8_t dst_port_be[2];
    uint8_t length_be[2];
    uint8_t checksum_be[2]; /* RoCEv2 senders put 0 here (rxe_net.c); masked in the ICRC */

    uint16_t src_port() const { return load_be16(src_port_be); }
    uint16_t dst_port() const { return load_be16(dst_port_be); }
    uint16_t length() const { return load_be16(length_be); }
    uint16_t checksum() const { return load_be16(checksum_be); }
    void set_src_port(uint16_t v) { store_be16(src_port_be, v); }
    void set_dst_port(uint16_t v) { store_be16(dst_port_be, v); }
    void set_length(uint16_t v) { store_be16(length_be, v); }
    void set_checksum(uint16_t v) { store_be16(checksum_be, v); }
};

/* ---------------------------------------------------------------- IB transport */

/* Base Transport Header, IBTA 9.2. */
struct bth {
    uint8_t opcode;
    uint8_t flags; /* SE (7) | MigReq (6) | PadCnt (5:4) | TVer (3:0) */
    uint8_t pkey_be[2];
    uint8_t resv8a; /* FECN (7) | BECN (6) | reserved; masked to ones in the ICRC */
    uint8_t dest_qp_be[3];
    uint8_t ack_psn_hi; /* AckReq (7) | reserved (6:0) */
    uint8_t psn_be[3];

    static constexpr uint8_t se_bit = 0x80;
    static constexpr uint8_t mig_bit = 0x40;
    static constexpr uint8_t pad_mask = 0x30;
    static constexpr uint8_t pad_shift = 4;
    static constexpr uint8_t tver_mask = 0x0f;
    static constexpr uint8_t fecn_bit = 0x80;
    static constexpr uint8_t becn_bit = 0x40;
    static constexpr uint8_t ack_req_bit = 0x80;
    static constexpr uint16_t default_pkey = 0xffff;

    bool se() const { return flags & se_bit; }
    bool mig_req() const { return flags & mig_bit; }
    uint8_t pad() const { return (flags & pad_mask) >> pad_shift; }
    uint8_t tver() const { return flags & tver_mask; }
    uint16_t pkey() const { return load_be16(pkey_be); }
    bool fecn() const { return resv8a & fecn_bit; }
    bool becn() const { return resv8a & becn_bit; }
    uint32_t dest_qp() const {
        return load_be24_in_word(header_word(*this, offsetof(bth, resv8a)));
    }
    bool ack_req() const { return ack_psn_hi & ack_req_bit; }
    uint32_t psn() const {
        return load_be24_in_word(header_word(*this, offsetof(bth, ack_psn_hi)));
    }

    void set_flags(bool se, bool mig_req, uint8_t pad, uint8_t tver = 0) {
        flags = uint8_t((se ? se_bit : 0) | (mig_req ? mig_bit : 0) |
                        ((pad << pad_shift) & pad_mask) | (tver & tver_mask));
    }
    void set_pad(uint8_t pad) {
        flags = uint8_t((flags & ~pad_mask) | ((pad << pad_shift) & pad_mask));
    }
    void set_pkey(uint16_t v) { store_be16(pkey_be, v); }
    void set_ecn_bits(bool fecn, bool becn) {
        resv8a = uint8_t((fecn ? fecn_bit : 0) | (becn ? becn_bit : 0));
    }
    void set_dest_qp(uint32_t v) { store_be24(dest_qp_be, v); }
    void set_ack_req(bool v) { ack_psn_hi = v ? ack_req_bit : 0; }
    void set_psn(uint32_t v) { store_be24(psn_be, v); }
};

/* RDMA Extended Transport Header, IBTA 9.3.3. */
struct reth {
    uint8_t va_be[8];
    uint8_t rkey_be[4];
    uint8_t dma_length_be[4];

    uint64_t va() const { return load_be64(va_be); }
    uint32_t rkey() const { return load_be32(rkey_be); }
    uint32_t dma_length() const { return load_be32(dma_length_be); }
    void set_va(uint64_t v) { store_be64(va_be, v); }
    void set_rkey(uint32_t v) { store_be32(rkey_be, v); }
    void set_dma_length(uint32_t v) { store_be32(dma_length_be, v); }
};

/* ACK Extended Transport Header, IBTA 9.3.5: syndrome and MSN. */
struct aeth {
    uint8_t syndrome;
    uint8_t msn_be[3];

    uint32_t msn() const { return load_be24_in_word(header_word(*this, offsetof(aeth, syndrome))); }
    void set_msn(uint32_t v) { store_be24(msn_be, v); }
};

/* Atomic Extended Transport Header, IBTA 9.3.4. 28 bytes, not 8-aligned on the wire. */
struct atomic_eth {
    uint8_t va_be[8];
    uint8_t rkey_be[4];
    uint8_t swap_add_be[8];
    uint8_t compare_be[8];

    uint64_t va() const { return load_be64(va_be); }
    uint32_t rkey() const { return load_be32(rkey_be); }
    uint64_t swap_add() const { return load_be64(swap_add_be); }
    uint64_t compare() const { return load_be64(compare_be); }
    void set_va(uint64_t v) { store_be64(va_be, v); }
    void set_rkey(uint32_t v) { store_be32(rkey_be, v); }
    void set_swap_add(uint64_t v) { store_be64(swap_add_be, v); }
    void set_compare(uint64_t v) { store_be64(compare_be, v); }
};

/* Atomic Acknowledge Extended Transport Header, IBTA 9.3.6. */
struct atomic_ack_eth {
    uint8_t orig_be[8];

    uint64_t orig() const { return load_be64(orig_be); }
    void set_orig(uint64_t v) { store_be64(orig_be, v); }
};

/* Immediate Data, IBTA 9.3.7. Opaque: kept in network order end to end,
 * like ibv_wc.imm_data, so imm_be() returns the raw big-endian word. */
struct immdt {
    uint8_t imm_be[4];

    uint32_t imm_raw() const { return load_le32(imm_be); } /* as stored: network order */
    uint32_t imm() const { return load_be32(imm_be); }     /* host order */
    void set_imm_raw(uint32_t network_order) { store_le32(imm_be, network_order); }
};

/* Invalidate Extended Transport Header, IBTA 9.3.8: the R_Key to invalidate. */
struct ieth {
    uint8_t rkey_be[4];

    uint32_t rkey() const { return load_be32(rkey_be); }
    void set_rkey(uint32_t v) { store_be32(rkey_be, v); }
};

/* Datagram Extended Transport Header, IBTA 9.3.2. */
struct deth {
    uint8_t qkey_be[4];
    uint8_t resv;
    uint8_t src_qp_be[3];

    /* Q_Keys with the high bit set are controlled Q_Keys (IBTA 10.2.4); GSI uses this one. */
    static constexpr uint32_t gsi_qkey = 0x80010000;

    uint32_t qkey() const { return load_be32(qkey_be); }
    uint32_t src_qp() const { return load_be24_in_word(header_word(*this, offsetof(deth, resv))); }
    void set_qkey(uint32_t v) { store_be32(qkey_be, v); }
    void set_src_qp(uint32_t v) {
        resv = 0;
        store_be24(src_qp_be, v);
    }
};

/* FLUSH Extended Transport Header, IBTA 1.5 9.3.9 (precedes RETH in FLUSH requests, as rxe_opcode.c
 * orders it). */
struct feth {
    uint8_t bits_be[4]; /* reserved (31:6) | selectivity level (5:4) | placement type (3:0) */

    uint8_t selectivity_level() const { return (load_be32(bits_be) >> 4) & 3; }
    uint8_t placement_type() const { return load_be32(bits_be) & 0xf; }
    void set(uint8_t selectivity_level, uint8_t placement_type) {
        store_be32(bits_be, (uint32_t(selectivity_level & 3) << 4) | (placement_type & 0xf));
    }
};

/* RoCEv2 Congestion Notification Packet body (IBTA Annex A17.9.3): 16 reserved bytes after BTH. */
struct cnp_body {
    uint8_t reserved[16];
};

/* The DMA Length field of the RETH of uroce's selective-repeat WRITE
 * packets (opcodes 0xC0-0xC3, doc/loss-recovery.md): not a length (each
 * packet's own payload length is its extent) but where the packet stands:
 * bits 23:0 its index in the message (PSN - the message's first PSN), bit
 * 31 set when the requester found the message independent of every
 * earlier outstanding request (no overlapping remote range, no SEND with
 * Invalidate), so it may be placed before them. */
namespace sr_place {
inline constexpr uint32_t independent = 1u << 31;
inline constexpr uint32_t index_mask = 0xffffff;
static inline constexpr uint32_t make(uint32_t index, bool indep) {
    return (index & index_mask) | (indep ? independent : 0u);
}
} // namespace sr_place

/* Selective-acknowledgement bitmap of uroce's SACK (opcode 0xC3, a
 * manufacturer-specific opcode, IBTA 9.2.1; doc/loss-recovery.md): after
 * the AETH, 128 bits, one per PSN after the responder's expected PSN
 * (BTH PSN + 1 is the expected PSN, still missing; bit i stands for PSN
 * BTH PSN + 2 + i). Bit i is byte i / 8, most significant bit first, as
 * network order reads. 16 bytes. */
struct sack_eth {
    static constexpr unsigned bits = 128;
    uint8_t bitmap[16];

    bool received(unsigned i) const { return i < bits && (bitmap[i >> 3] & (0x80u >> (i & 7))); }
    void set_received(unsigned i) {
        if (i < bits) bitmap[i >> 3] = uint8_t(bitmap[i >> 3] | (0x80u >> (i & 7)));
    }
};

/* The trailing Invariant CRC, stored least-significant byte first (Annex A17.3.3, rxe_icrc.c). */
struct icrc_trailer {
    uint8_t icrc_le[4];

    uint32_t value() const { return load_le32(icrc_le); }
    void set_value(uint32_t v) { store_le32(icrc_le, v); }
};

/* AETH syndrome encoding, IBTA 9.7.5.2.1 table 45. */
namespace aeth_syndrome {
inline constexpr uint8_t type_mask = 0x60;
inline constexpr uint8_t value_mask = 0x1f;
inline constexpr uint8_t type_ack = 0x00;
inline constexpr uint8_t type_rnr_nak = 0x20;
inline constexpr uint8_t type_reserved = 0x40;
inline constexpr uint8_t type_nak = 0x60;
/* ACK credit code 31: the end-to-end credit count is invalid (no flow control). */
inline constexpr uint8_t ack_unlimited_credits = 0x1f;
/* NAK codes, IBTA 9.7.5.2.4. */
inline constexpr uint8_t nak_psn_seq_error = 0x00;
inline constexpr uint8_t nak_invalid_request = 0x01;
inline constexpr uint8_t nak_remote_access_error = 0x02;
inline constexpr uint8_t nak_remote_op_error = 0x03;
inline constexpr uint8_t nak_invalid_rd_request = 0x04;

static inline constexpr uint8_t make_ack(uint8_t credit_code) {
    return type_ack | (credit_code & value_mask);
}
static inline constexpr uint8_t make_rnr_nak(uint8_t timer_code) {
    return type_rnr_nak | (timer_code & value_mask);
}
static inline constexpr uint8_t make_nak(uint8_t nak_code) {
    return type_nak | (nak_code & value_mask);
}
static inline constexpr uint8_t type(uint8_t syndrome) {
    return syndrome & type_mask;
}
static inline constexpr uint8_t value(uint8_t syndrome) {
    return syndrome & value_mask;
}
} // namespace aeth_syndrome

/* ---------------------------------------------------------------- sizes and layout checks */

#define UROCE_CHECK_HDR(type, size)                                                                \
    static_assert(sizeof(type) == (size), #type " has the wrong wire size");                       \
    static_assert(alignof(type) == 1, #type " must be overlayable at any offset")

UROCE_CHECK_HDR(eth_hdr, 14);
UROCE_CHECK_HDR(vlan_hdr, 4);
UROCE_CHECK_HDR(ipv4_hdr, 20);
UROCE_CHECK_HDR(ipv6_hdr, 40);
UROCE_CHECK_HDR(udp_hdr, 8);
UROCE_CHECK_HDR(bth, 12);
UROCE_CHECK_HDR(reth, 16);
UROCE_CHECK_HDR(aeth, 4);
UROCE_CHECK_HDR(atomic_eth, 28);
UROCE_CHECK_HDR(atomic_ack_eth, 8);
UROCE_CHECK_HDR(immdt, 4);
UROCE_CHECK_HDR(ieth, 4);
UROCE_CHECK_HDR(deth, 8);
UROCE_CHECK_HDR(feth, 4);
UROCE_CHECK_HDR(cnp_body, 16);
UROCE_CHECK_HDR(sack_eth, 16);
UROCE_CHECK_HDR(icrc_trailer, 4);
#undef UROCE_CHECK_HDR

static_assert(offsetof(eth_hdr, ether_type_be) == 12);
static_assert(offsetof(ipv4_hdr, tos) == 1 && offsetof(ipv4_hdr, ttl) == 8 &&
              offsetof(ipv4_hdr, checksum_be) == 10 && offsetof(ipv4_hdr, src) == 12 &&
              offsetof(ipv4_hdr, dst) == 16);
static_assert(offsetof(ipv6_hdr, payload_length_be) == 4 && offsetof(ipv6_hdr, hop_limit) == 7 &&
              offsetof(ipv6_hdr, src) == 8 && offsetof(ipv6_hdr, dst) == 24);
static_assert(offsetof(udp_hdr, length_be) == 4 && offsetof(udp_hdr, checksum_be) == 6);
static_assert(offsetof(bth, pkey_be) == 2 && offsetof(bth, resv8a) == 4 &&
              offsetof(bth, dest_qp_be) == 5 && offsetof(bth, ack_psn_hi) == 8 &&
              offsetof(bth, psn_be) == 9);
static_assert(offsetof(reth, rkey_be) == 8 && offsetof(reth, dma_length_be) == 12);
static_assert(offsetof(atomic_eth, rkey_be) == 8 && offsetof(atomic_eth, swap_add_be) == 12 &&
              offsetof(atomic_eth, compare_be) == 20);
static_assert(offsetof(deth, resv) == 4 && offsetof(deth, src_qp_be) == 5);

/* Largest RoCEv2 header stack: Eth + 2 VLAN tags + IPv6 + UDP + BTH + the largest
 * extension set (RETH + ImmDt = 20; AtomicETH = 28; DETH + ImmDt = 12). */
inline constexpr size_t max_l2_len = sizeof(eth_hdr) + 2 * sizeof(vlan_hdr);
inline constexpr size_t max_ext_len = sizeof(atomic_eth);
inline constexpr size_t max_hdr_len =
    max_l2_len + sizeof(ipv6_hdr) + sizeof(udp_hdr) + sizeof(bth) + max_ext_len;
inline constexpr size_t icrc_len = sizeof(icrc_trailer);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 parser: strict validation, one enumerated error per failure.
 */
#include <uroce/parse.h>

#include <rte_mbuf.h>

#include <uroce/icrc.h>

namespace uroce {

const char *parse_error_name(parse_error e) {
    switch (e) {
    case parse_error::ok:
        return "ok";
    case parse_error::truncated_eth:
        return "truncated-eth";
    case parse_error::not_ip:
        return "not-ip";
    case parse_error::too_many_vlans:
        return "too-many-vlans";
    case parse_error::truncated_ip:
        return "truncated-ip";
    case parse_error::bad_ip_version:
        return "bad-ip-version";
    case parse_error::bad_ipv4_ihl:
        return "bad-ipv4-ihl";
    case parse_error::bad_ip_length:
        return "bad-ip-length";
    case parse_error::ip_fragment:
        return "ip-fragment";
    case parse_error::not_udp:
        return "not-udp";
    case parse_error::truncated_udp:
        return "truncated-udp";
    case parse_error::bad_udp_length:
        return "bad-udp-length";
    case parse_error::not_rocev2_port:
        return "not-rocev2-port";
    case parse_error::truncated_bth:
        return "truncated-bth";
    case parse_error::bad_tver:
        return "bad-tver";
    case parse_error::unknown_opcode:
        return "unknown-opcode";
    case parse_error::truncated_ext_hdrs:
        return "truncated-ext-hdrs";
    case parse_error::bad_pad:
        return "bad-pad";
    case parse_error::bad_payload_length:
        return "bad-payload-length";
    case parse_error::headers_split:
        return "headers-split";
    case parse_error::bad_icrc:
        return "bad-icrc";
    case parse_error::count:
        break;
    }
    return "invalid-parse-error";
}

namespace {

/* The bytes a parser may read: `contiguous` of them at `data`, out of a
 * packet of `total` bytes (they differ only for multi-segment mbufs). */
struct byte_window {
    const uint8_t *data;
    size_t contiguous;
    size_t total;

    /* ok when [off, off + n) is readable; else the caller's truncation error,
     * or headers_split when the bytes exist but sit in a later segment.
     * contiguous <= total, so the common case is one compare. */
    parse_error need(size_t off, size_t n, parse_error truncated) const {
        if (off + n <= contiguous) [[likely]]
            return parse_error::ok;
        return off + n > total ? truncated : parse_error::headers_split;
    }
};

#define UROCE_TRY(expr)                                                                            \
    do {                                                                                           \
        parse_error e_ = (expr);                                                                   \
        if (e_ != parse_error::ok) [[unlikely]]                                                    \
            return e_;                                                                             \
    } while (0)

/* The stages are inlined into each entry point: as calls they passed the
 * packet and the window through memory, and with the bounds check's second
 * compare they were a quarter of a 64 B SEND's parse (210 instructions, now
 * 154; callgrind, doc/performance.md "Sixteenth pass"). */
#define UROCE_PARSE_STAGE [[gnu::always_inline]] inline

/* IPv4 (RFC 791) or IPv6 (RFC 8200) header at l3; sets l4_offset and ip_end. */
UROCE_PARSE_STAGE parse_error parse_l3(const byte_window &w, size_t l3, uint8_t version,
                                       roce_packet &out, size_t &ip_end) {
    out.l3_offset = uint16_t(l3);
    out.ip_version = version;
    if (version == 4) {
        UROCE_TRY(w.need(l3, sizeof(ipv4_hdr), parse_error::truncated_ip));
        const auto *ip = reinterpret_cast<const ipv4_hdr *>(w.data + l3);
        if (ip->version() != 4) return parse_error::bad_ip_version;
        if (ip->ihl() < 5) return parse_error::bad_ipv4_ihl;
        size_t hlen = ip->header_length();
        UROCE_TRY(w.need(l3, hlen, parse_error::truncated_ip));
        size_t tot = ip->total_length();
        /* Ethernet may pad a frame beyond the IP datagram, never shorten it. */
        if (tot < hlen || l3 + tot > w.total) return parse_error::bad_ip_length;
        /* RoCEv2 packets are never fragmented (Annex A17.4.3: DF set, and the
         * transport could not reassemble them anyway). */
        if (ip->is_fragment()) return parse_error::ip_fragment;
        if (ip->protocol != ip_proto_udp) return parse_error::not_udp;
        out.l4_offset = uint16_t(l3 + hlen);
        ip_end = l3 + tot;
    } else {
        UROCE_TRY(w.need(l3, sizeof(ipv6_hdr), parse_error::truncated_ip));
        const auto *ip = reinterpret_cast<const ipv6_hdr *>(w.data + l3);
        if (ip->version() != 6) return parse_error::bad_ip_version;
        size_t plen = ip->payload_length();
        /* Payload length 0 would mean a jumbogram (RFC 2675), never RoCE. */
        if (plen == 0 || l3 + sizeof(ipv6_hdr) + plen > w.total) return parse_error::bad_ip_length;
        /* Extension headers are not used by RoCEv2 senders; UDP must follow. */
        if (ip->next_header != ip_proto_udp) return parse_error::not_udp;
        out.l4_offset = uint16_t(l3 + sizeof(ipv6_hdr));
        ip_end = l3 + sizeof(ipv6_hdr) + plen;
    }
    return parse_error::ok;
}

/* UDP, BTH, extension headers, pad and payload bounds. */
UROCE_PARSE_STAGE parse_error parse_l4(const byte_window &w, size_t ip_end, roce_packet &out) {
    size_t l4 = out.l4_offset;
    if (ip_end < l4 + sizeof(udp_hdr)) return parse_error::truncated_udp;
    UROCE_TRY(w.need(l4, sizeof(udp_hdr), parse_error::truncated_udp));
    const auto *udp = reinterpret_cast<const udp_hdr *>(w.data + l4);
    if (udp->length() != ip_end - l4) return parse_error::bad_udp_length;
    if (udp->dst_port() != rocev2_udp_port) return parse_error::not_rocev2_port;

    size_t bth_off = l4 + sizeof(udp_hdr);
    if (ip_end < bth_off + sizeof(bth) + icrc_len) return parse_error::truncated_bth;
    UROCE_TRY(w.need(bth_off, sizeof(bth), parse_error::truncated_bth));
    const auto *b = reinterpret_cast<const bth *>(w.data + bth_off);
    /* IBTA 9.2: the transport header version is 0; others are not ours to parse. */
    if (b->tver() != 0) return parse_error::bad_tver;
    const opcode_info &info = opcode_lookup(b->opcode);
    if (!info.is_valid()) return parse_error::unknown_opcode;

    size_t ext_off = bth_off + sizeof(bth);
    if (ip_end < ext_off + info.ext_len + icrc_len) return parse_error::truncated_ext_hdrs;
    UROCE_TRY(w.need(ext_off, info.ext_len, parse_error::truncated_ext_hdrs));

    size_t payload_off = ext_off + info.ext_len;
    size_t icrc_off = ip_end - icrc_len;
    size_t padded = icrc_off - payload_off;
    uint8_t pad = b->pad();
    /* IBTA 9.2: PadCnt rounds the payload to a 4-byte multiple; so payload +
     * pad is a multiple of 4, and pad never exceeds the payload area. */
    if (!info.has(op_flag::payload)) {
        if (pad != 0) return parse_error::bad_pad;
        if (padded != 0) return parse_error::bad_payload_length;
    } else {
        if ((padded & 3) != 0 || pad > padded) return parse_error::bad_pad;
        /* ATOMIC_WRITE carries exactly 8 bytes (IBTA 1.5 9.4.8). */
        if (info.has(op_flag::atomic_write) && padded - pad != 8)
            return parse_error::bad_payload_length;
    }

    out.bth_offset = uint16_t(bth_off);
    out.ext_offset = uint16_t(ext_off);
    out.payload_offset = uint32_t(payload_off);
    out.payload_len = uint32_t(padded - pad);
    out.pad = pad;
    out.icrc_offset = uint32_t(icrc_off);
    out.frame_len = uint32_t(ip_end);
    out.opcode = b->opcode;
    out.info = &info;
    return parse_error::ok;
}

UROCE_PARSE_STAGE parse_error parse_from_eth(const byte_window &w, roce_packet &out) {
    out = roce_packet{};
    out.hdr = w.data;
    UROCE_TRY(w.need(0, sizeof(eth_hdr), parse_error::truncated_eth));
    size_t off = sizeof(eth_hdr);
    uint16_t type = reinterpret_cast<const eth_hdr *>(w.data)->ether_type();
    while (type == ether_type_vlan || type == ether_type_qinq) {
        if (out.vlan_count == 2) return parse_error::too_many_vlans;
        UROCE_TRY(w.need(off, sizeof(vlan_hdr), parse_error::truncated_eth));
        const auto *v = reinterpret_cast<const vlan_hdr *>(w.data + off);
        out.vlan_tci[out.vlan_count++] = v->tci();
        type = v->ether_type();
        off += sizeof(vlan_hdr);
    }
    uint8_t version;
    if (type == ether_type_ipv4)
        version = 4;
    else if (type == ether_type_ipv6)
        version = 6;
    else
        return parse_error::not_ip;
    size_t ip_end = 0;
    UROCE_TRY(parse_l3(w, off, version, out, ip_end));
    return parse_l4(w, ip_end, out);
}

} // namespace

parse_error parse_frame(const uint8_t *data, size_t len, roce_packet &out) {
    return parse_from_eth(byte_window{data, len, len}, out);
}

parse_error parse_ip(const uint8_t *data, size_t len, roce_packet &out) {
    out = roce_packet{};
    out.hdr = data;
    byte_window w{data, len, len};
    if (len < 1) return parse_error::truncated_ip;
    uint8_t version = data[0] >> 4;
    if (version != 4 && version != 6) return parse_error::bad_ip_version;
    size_t ip_end = 0;
    UROCE_TRY(parse_l3(w, 0, version, out, ip_end));
    return parse_l4(w, ip_end, out);
}

parse_error parse_mbuf(const struct rte_mbuf *m, roce_packet &out) {
    return parse_from_eth(
        byte_window{rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, m->pkt_len}, out);
}

uint32_t compute_icrc(const roce_packet &p) {
    return icrc_compute(p.hdr + p.l3_offset, p.icrc_offset - p.l3_offset);
}

uint32_t compute_icrc(const roce_packet &p, const struct rte_mbuf *m) {
    return icrc_compute_mbuf(m, p.l3_offset, p.icrc_offset);
}

bool icrc_matches(const roce_packet &p, const struct rte_mbuf *m) {
    uint8_t buf[icrc_len];
    const auto *stored =
        static_cast<const uint8_t *>(rte_pktmbuf_read(m, p.icrc_offset, icrc_len, buf));
    return stored && compute_icrc(p, m) == load_le32(stored);
}

parse_error parse_frame_verified(const uint8_t *data, size_t len, roce_packet &out) {
    UROCE_TRY(parse_frame(data, len, out));
    return icrc_matches(out) ? parse_error::ok : parse_error::bad_icrc;
}

parse_error parse_mbuf_verified(const struct rte_mbuf *m, roce_packet &out) {
    UROCE_TRY(parse_mbuf(m, out));
    return icrc_matches(out, m) ? parse_error::ok : parse_error::bad_icrc;
}

} // namespace uroce

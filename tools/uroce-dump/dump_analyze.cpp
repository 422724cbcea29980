/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: frame classification, strict parse, ICRC and extra checks.
 */
#include "dump_analyze.h"

#include <pcap/dlt.h>

#include <cstdio>
#include <cstring>
#include <iterator>

#include <uroce/hdr.h>

namespace uroce::dump {

bool link_kind_from_dlt(int dlt, link_kind &out) {
    switch (dlt) {
    case DLT_EN10MB:
        out = link_kind::ethernet;
        return true;
    case DLT_LINUX_SLL:
        out = link_kind::linux_sll;
        return true;
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
        out = link_kind::linux_sll2;
        return true;
#endif
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
        out = link_kind::raw_ip;
        return true;
    default:
        return false;
    }
}

namespace {

inline constexpr size_t sll_hdr_len = 16;  /* protocol at offset 14 */
inline constexpr size_t sll2_hdr_len = 20; /* protocol at offset 0 */
/* Shortest frame that could be RoCE: Eth + IPv4 + UDP + BTH + ICRC. */
inline constexpr size_t min_roce_frame = 14 + 20 + 8 + 12 + 4;
/* Longest frame worth trying to repair: a 4096-byte MTU packet with the
 * largest header stack fits easily; anything longer is not RoCE. */
inline constexpr size_t max_roce_frame = 16384;

uint32_t ones_sum(const uint8_t *p, size_t n, uint32_t sum = 0) {
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += uint32_t(p[i]) << 8 | p[i + 1];
    if (n & 1) sum += uint32_t(p[n - 1]) << 8;
    return sum;
}

uint16_t fold(uint32_t sum) {
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return uint16_t(sum);
}

} // namespace

bool ipv4_header_checksum_ok(const uint8_t *ip, size_t hlen) {
    /* Summing a header including its checksum yields 0xffff when it is right. */
    return fold(ones_sum(ip, hlen)) == 0xffff;
}

bool udp_checksum_ok(const roce_packet &p) {
    const udp_hdr *u = p.udp();
    if (u->checksum() == 0) return true;
    uint32_t udp_len = u->length();
    uint32_t sum = 0;
    if (p.ip_version == 4) {
        sum = ones_sum(p.ipv4()->src, 8);
    } else {
        sum = ones_sum(p.ipv6()->src, 32);
    }
    sum += ip_proto_udp + udp_len;
    sum = ones_sum(p.hdr + p.l4_offset, udp_len, sum);
    /* A computed 0 is sent as 0xffff (RFC 768), so both fold to 0xffff here. */
    return fold(sum) == 0xffff;
}

bool walk_frame(const uint8_t *f, size_t len, frame_addrs &a) {
    a = frame_addrs{};
    if (len < sizeof(eth_hdr)) return false;
    const auto *eth = reinterpret_cast<const eth_hdr *>(f);
    std::memcpy(a.dst_mac, eth->dst, 6);
    std::memcpy(a.src_mac, eth->src, 6);
    a.has_mac = true;
    size_t off = sizeof(eth_hdr);
    uint16_t type = eth->ether_type();
    while ((type == ether_type_vlan || type == ether_type_qinq) && a.vlan_count < 2) {
        if (len < off + sizeof(vlan_hdr)) return false;
        type = reinterpret_cast<const vlan_hdr *>(f + off)->ether_type();
        off += sizeof(vlan_hdr);
        a.vlan_count++;
    }
    a.ether_type = type;
    a.l3_offset = uint16_t(off);
    size_t l4 = 0, ip_end = 0;
    if (type == ether_type_ipv4) {
        if (len < off + sizeof(ipv4_hdr)) return false;
        const auto *ip = reinterpret_cast<const ipv4_hdr *>(f + off);
        if (ip->version() != 4 || ip->ihl() < 5) return false;
        a.ip_version = 4;
        std::memcpy(a.src_ip, ip->src, 4);
        std::memcpy(a.dst_ip, ip->dst, 4);
        a.l4_proto = ip->protocol;
        a.fragment = (ip->frag() & ipv4_hdr::frag_offset_mask) != 0;
        l4 = off + ip->header_length();
        ip_end = off + ip->total_length();
    } else if (type == ether_type_ipv6) {
        if (len < off + sizeof(ipv6_hdr)) return false;
        const auto *ip = reinterpret_cast<const ipv6_hdr *>(f + off);
        if (ip->version() != 6) return false;
        a.ip_version = 6;
        std::memcpy(a.src_ip, ip->src, 16);
        std::memcpy(a.dst_ip, ip->dst, 16);
        a.l4_proto = ip->next_header;
        l4 = off + sizeof(ipv6_hdr);
        ip_end = l4 + ip->payload_length();
    } else {
        return false;
    }
    if (a.fragment) return true;
    /* Ports: only the first 4 bytes of TCP/UDP are needed, so a snapped frame still names them. */
    if ((a.l4_proto == ip_proto_udp || a.l4_proto == 6) && len >= l4 + 4) {
        a.has_ports = true;
        a.src_port = load_be16(f + l4);
        a.dst_port = load_be16(f + l4 + 2);
        size_t l4_hdr = 8;
        if (a.l4_proto == 6 && len >= l4 + 14) {
            l4_hdr = size_t(f[l4 + 12] >> 4) * 4;
            a.tcp_flags = f[l4 + 13];
        }
        a.l4_payload_len = ip_end > l4 + l4_hdr ? uint32_t(ip_end - l4 - l4_hdr) : 0;
    }
    return true;
}

void analyzer::read_raw_bth(const uint8_t *f, size_t len) {
    /* A malformed packet is still named by its BTH where one can be read. */
    if (!rep_.addrs.has_ports) return;
    size_t l4 = rep_.addrs.l3_offset + (rep_.addrs.ip_version == 4
                                            ? size_t(f[rep_.addrs.l3_offset] & 0x0f) * 4
                                            : sizeof(ipv6_hdr));
    size_t b = l4 + sizeof(udp_hdr);
    if (len < b + sizeof(bth)) return;
    const auto *h = reinterpret_cast<const bth *>(f + b);
    rep_.raw_bth = true;
    rep_.raw_opcode = h->opcode;
    rep_.raw_qp = h->dest_qp();
    rep_.raw_psn = h->psn();

    /* For --flows on snapped captures (tcpdump -s 128): what the captured
     * bytes and the IP length say, without the ICRC's guarantee. */
    roce_summary &s = rep_.roce;
    s = roce_summary{};
    s.opcode = h->opcode;
    s.dest_qp = h->dest_qp();
    s.psn = h->psn();
    s.frame_len = rep_.wire_len;
    const opcode_info &info = opcode_lookup(h->opcode);
    if (!info.is_valid()) return;
    size_t ext = b + sizeof(bth);
    size_t overhead = sizeof(bth) + info.ext_len + icrc_len + h->pad();
    if (info.has(op_flag::payload) && rep_.addrs.l4_payload_len > overhead)
        s.payload_len = uint32_t(rep_.addrs.l4_payload_len - overhead);
    if (len < ext + info.ext_len) return;
    auto at = [&](ext_hdr which) { return f + ext + info.offset(which); };
    if (info.has(op_flag::aeth)) {
        const auto *a = reinterpret_cast<const aeth *>(at(ext_hdr::aeth));
        s.has_aeth = true;
        s.syndrome = a->syndrome;
        s.msn = a->msn();
    }
    if (info.has(op_flag::reth)) {
        s.has_reth = true;
        s.dma_length = reinterpret_cast<const reth *>(at(ext_hdr::reth))->dma_length();
    }
    if (info.has(op_flag::deth)) {
        s.has_deth = true;
        s.src_qp = reinterpret_cast<const deth *>(at(ext_hdr::deth))->src_qp();
    }
}

static roce_summary summarize(const roce_packet &p) {
    roce_summary s;
    s.opcode = p.opcode;
    s.dest_qp = p.dest_qp();
    s.psn = p.psn();
    s.payload_len = p.payload_len;
    s.frame_len = p.frame_len;
    if (const aeth *a = p.aeth()) {
        s.has_aeth = true;
        s.syndrome = a->syndrome;
        s.msn = a->msn();
    }
    if (const reth *r = p.reth()) {
        s.has_reth = true;
        s.dma_length = r->dma_length();
    }
    if (const deth *d = p.deth()) {
        s.has_deth = true;
        s.src_qp = d->src_qp();
    }
    return s;
}

void analyzer::run_extra_checks(const uint8_t *f) {
    const roce_packet &p = rep_.pkt;
    if (p.ip_version == 4 && !ipv4_header_checksum_ok(f + p.l3_offset, p.ipv4()->header_length())) {
        rep_.error = err_ipv4_checksum;
        char buf[64];
        std::snprintf(buf, sizeof buf, "IPv4 header checksum 0x%04x is wrong",
                      p.ipv4()->checksum());
        rep_.detail = buf;
        return;
    }
    if (!udp_checksum_ok(p)) {
        rep_.error = err_udp_checksum;
        char buf[64];
        std::snprintf(buf, sizeof buf, "UDP checksum 0x%04x is wrong (RoCEv2 senders send 0)",
                      p.udp()->checksum());
        rep_.detail = buf;
        return;
    }
    /* BTH byte 4: FECN, BECN and six reserved bits that senders set to 0
     * (IBTA 9.2); the ICRC masks the byte, so this is the only check on it. */
    uint8_t resv = p.bth()->resv8a & uint8_t(~(bth::fecn_bit | bth::becn_bit));
    if (resv != 0) {
        rep_.error = err_bth_reserved;
        char buf[64];
        std::snprintf(buf, sizeof buf, "BTH byte 4 is 0x%02x: reserved bits set", p.bth()->resv8a);
        rep_.detail = buf;
    }
}

void analyzer::analyze_roce(const uint8_t *f, size_t len) {
    rep_.cls = frame_class::roce;
    if (rep_.caplen < rep_.wire_len) {
        /* The ICRC and lengths cannot be checked on a snapped frame. */
        rep_.snapped = true;
        read_raw_bth(f, len);
        return;
    }
    rep_.perr = parse_frame(f, len, rep_.pkt);
    if (rep_.perr != parse_error::ok) {
        rep_.error = parse_error_name(rep_.perr);
        read_raw_bth(f, len);
        return;
    }
    rep_.parsed = true;
    rep_.roce = summarize(rep_.pkt);
    rep_.icrc_checked = true;
    rep_.icrc_stored = rep_.pkt.stored_icrc();
    rep_.icrc_expected = compute_icrc(rep_.pkt);
    rep_.icrc_ok = rep_.icrc_stored == rep_.icrc_expected;
    if (!rep_.icrc_ok) {
        rep_.error = parse_error_name(parse_error::bad_icrc);
        char buf[64];
        std::snprintf(buf, sizeof buf, "stored 0x%08x, expected 0x%08x", rep_.icrc_stored,
                      rep_.icrc_expected);
        rep_.detail = buf;
        return;
    }
    if (!opts_.lenient) run_extra_checks(f);
}

/* A frame that is not UDP to 4791 may still be a RoCE packet with one header
 * field corrupted: the EtherType (or VLAN TPID), the IP version/IHL byte, the
 * IPv4 flags/fragment offset, the IP protocol or the UDP destination port. Restore one such field
 * at a time; if the strict parser then accepts it AND its ICRC verifies (a 2^-32 coincidence
 * otherwise), it was RoCE and that field is the damage. */
bool analyzer::try_repairs(const uint8_t *f, size_t len) {
    if (len < min_roce_frame || len > max_roce_frame) return false;
    struct repair {
        size_t off;
        uint8_t bytes[2];
        uint8_t n;
        const char *what;
    };
    repair cand[12];
    size_t nc = 0;
    auto add = [&](size_t off, uint16_t v, uint8_t n, const char *what) {
        if (off + n > len || nc == std::size(cand)) return;
        repair r{off, {uint8_t(n == 2 ? v >> 8 : v), uint8_t(v)}, n, what};
        if (std::memcmp(f + off, r.bytes, n) == 0) return; /* already that value */
        cand[nc++] = r;
    };
    uint16_t type12 = load_be16(f + 12);
    add(12, ether_type_ipv4, 2, "EtherType");
    add(12, ether_type_ipv6, 2, "EtherType");
    if (type12 == ether_type_vlan || type12 == ether_type_qinq) {
        add(16, ether_type_ipv4, 2, "inner EtherType");
        add(16, ether_type_ipv6, 2, "inner EtherType");
    } else if (load_be16(f + 16) == ether_type_ipv4 || load_be16(f + 16) == ether_type_ipv6) {
        add(12, ether_type_vlan, 2, "VLAN TPID");
    }
    const frame_addrs &a = rep_.addrs;
    size_t l3 = a.l3_offset ? a.l3_offset : 14;
    uint16_t type = a.ether_type;
    if (type == ether_type_ipv4) {
        /* RoCEv2 senders use no IPv4 options: version 4, IHL 5. */
        add(l3, 0x45, 1, "IPv4 version/IHL");
        /* A flipped flag or offset bit turns the packet into a fragment; RoCEv2
         * senders set DF (rxe_net.c), some may leave it clear. */
        add(l3 + 6, ipv4_hdr::flag_df, 2, "IPv4 flags/fragment offset");
        add(l3 + 6, 0, 2, "IPv4 flags/fragment offset");
        add(l3 + 9, ip_proto_udp, 1, "IPv4 protocol");
        add(l3 + 20 + 2, rocev2_udp_port, 2, "UDP destination port");
    } else if (type == ether_type_ipv6) {
        add(l3, uint8_t(0x60 | (f[l3] & 0x0f)), 1, "IPv6 version");
        add(l3 + 6, ip_proto_udp, 1, "IPv6 next header");
        add(l3 + 40 + 2, rocev2_udp_port, 2, "UDP destination port");
    }
    repair_buf_.assign(f, f + len);
    for (size_t i = 0; i < nc; i++) {
        const repair &r = cand[i];
        uint8_t saved[2];
        std::memcpy(saved, &repair_buf_[r.off], r.n);
        std::memcpy(&repair_buf_[r.off], r.bytes, r.n);
        roce_packet p;
        if (parse_frame_verified(repair_buf_.data(), len, p) == parse_error::ok) {
            rep_.cls = frame_class::roce;
            rep_.repaired = true;
            rep_.parsed = true;
            rep_.pkt = p;
            rep_.roce = summarize(p);
            /* The error is what the strict parser says about the frame as captured. */
            roce_packet orig;
            parse_error e = parse_frame(f, len, orig);
            rep_.perr = e;
            rep_.error = e == parse_error::ok ? "corrupt-header" : parse_error_name(e);
            char buf[160];
            unsigned was = r.n == 2 ? load_be16(f + r.off) : f[r.off];
            unsigned want = r.n == 2 ? load_be16(r.bytes) : r.bytes[0];
            std::snprintf(buf, sizeof buf,
                          r.n == 2 ? "RoCE packet with a corrupt %s at byte %zu: 0x%04x, ICRC "
                                     "verifies with 0x%04x"
                                   : "RoCE packet with a corrupt %s at byte %zu: 0x%02x, ICRC "
                                     "verifies with 0x%02x",
                          r.what, r.off, was & 0xffff, want & 0xffff);
            rep_.detail = buf;
            rep_.icrc_checked = true;
            rep_.icrc_ok = true;
            rep_.icrc_stored = rep_.icrc_expected = p.stored_icrc();
            /* Addresses as the repaired frame reads them (the originals may be garbage). */
            walk_frame(repair_buf_.data(), len, rep_.addrs);
            rep_.addrs.has_mac = link_ == link_kind::ethernet;
            return true;
        }
        std::memcpy(&repair_buf_[r.off], saved, r.n);
    }
    return false;
}

const frame_report &analyzer::analyze(uint64_t number, const uint8_t *data, uint32_t caplen,
                                      uint32_t wire_len) {
    rep_ = frame_report{};
    rep_.number = number;
    rep_.caplen = caplen;
    rep_.wire_len = wire_len < caplen ? caplen : wire_len;

    const uint8_t *f = data;
    size_t len = caplen;
    if (link_ != link_kind::ethernet) {
        /* Give the record an Ethernet header carrying its protocol, so one
         * parser path (parse_frame) serves every link type. */
        size_t hdr = 0;
        uint16_t proto = 0;
        if (link_ == link_kind::linux_sll && caplen >= sll_hdr_len) {
            hdr = sll_hdr_len;
            proto = load_be16(data + 14);
        } else if (link_ == link_kind::linux_sll2 && caplen >= sll2_hdr_len) {
            hdr = sll2_hdr_len;
            proto = load_be16(data);
        } else if (link_ == link_kind::raw_ip && caplen >= 1) {
            proto = (data[0] >> 4) == 6 ? ether_type_ipv6 : ether_type_ipv4;
        } else {
            return rep_; /* too short for its link header: other_l2 */
        }
        eth_buf_.assign(sizeof(eth_hdr), 0);
        store_be16(eth_buf_.data() + 12, proto);
        eth_buf_.insert(eth_buf_.end(), data + hdr, data + caplen);
        f = eth_buf_.data();
        len = eth_buf_.size();
        rep_.caplen = uint32_t(len);
        rep_.wire_len = uint32_t(rep_.wire_len - hdr + sizeof(eth_hdr));
    }

    bool ip = walk_frame(f, len, rep_.addrs);
    if (link_ != link_kind::ethernet) rep_.addrs.has_mac = false;
    if (ip && !rep_.addrs.fragment && rep_.addrs.l4_proto == ip_proto_udp && rep_.addrs.has_ports &&
        rep_.addrs.dst_port == rocev2_udp_port) {
        analyze_roce(f, len);
        return rep_;
    }
    if (rep_.caplen == rep_.wire_len && try_repairs(f, len)) return rep_;
    if (ip)
        rep_.cls = frame_class::other_ip;
    else if (rep_.addrs.ether_type == ether_type_arp)
        rep_.cls = frame_class::arp;
    else
        rep_.cls = frame_class::other_l2;
    return rep_;
}

} // namespace uroce::dump

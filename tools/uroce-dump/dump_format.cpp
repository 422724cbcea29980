/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: line formatting.
 */
#include "dump_format.h"

#include <uroce/cm_mad.h>

#include <arpa/inet.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include <uroce/hdr.h>
#include <uroce/opcode.h>

namespace uroce::dump {

namespace {

/* printf-style append; lines are short, so a fixed buffer is plenty. */
__attribute__((format(printf, 2, 3))) void appendf(std::string &s, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) s.append(buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
}

/* IBTA 9.7.7.2 table 46 (the same numbers as rdmavt's credit_table). */
constexpr int32_t credit_table[31] = {
    0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,  192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};

/* IBTA 9.7.5.2.8 table 48, in units of 10 us (rxe_comp.c rnrnak_usec / 10). */
constexpr uint32_t rnr_table_10us[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                         16,    24,   32,   48,    64,    96,    128,   192,
                                         256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                         4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};

const char *transport_ecn(uint8_t ecn) {
    switch (ecn) {
    case 1:
        return "ECT1";
    case 2:
        return "ECT0";
    case 3:
        return "CE";
    default:
        return nullptr;
    }
}

std::string l4_name(uint8_t proto) {
    switch (proto) {
    case 1:
        return "ICMP";
    case 6:
        return "TCP";
    case 17:
        return "UDP";
    case 58:
        return "ICMPv6";
    default: {
        std::string s;
        appendf(s, "IP proto %u", proto);
        return s;
    }
    }
}

} // namespace

int32_t aeth_credits(uint8_t code) {
    code &= aeth_syndrome::value_mask;
    return code == aeth_syndrome::ack_unlimited_credits ? -1 : credit_table[code];
}

uint64_t rnr_timer_ns(uint8_t code) {
    return uint64_t(rnr_table_10us[code & aeth_syndrome::value_mask]) * 10000;
}

const char *nak_code_name(uint8_t code) {
    switch (code) {
    case aeth_syndrome::nak_psn_seq_error:
        return "PSN-seq-error";
    case aeth_syndrome::nak_invalid_request:
        return "invalid-request";
    case aeth_syndrome::nak_remote_access_error:
        return "remote-access-error";
    case aeth_syndrome::nak_remote_op_error:
        return "remote-op-error";
    case aeth_syndrome::nak_invalid_rd_request:
        return "invalid-RD-request";
    default:
        return nullptr;
    }
}

std::string aeth_syndrome_text(uint8_t syndrome) {
    std::string s;
    uint8_t v = aeth_syndrome::value(syndrome);
    switch (aeth_syndrome::type(syndrome)) {
    case aeth_syndrome::type_ack:
        if (v == aeth_syndrome::ack_unlimited_credits)
            s = "ACK credits=unlimited";
        else
            appendf(s, "ACK credits=%d", aeth_credits(v));
        break;
    case aeth_syndrome::type_rnr_nak: {
        uint64_t ns = rnr_timer_ns(v);
        appendf(s, "RNR-NAK timer=%" PRIu64 ".%02" PRIu64 "ms", ns / 1000000, (ns / 10000) % 100);
        break;
    }
    case aeth_syndrome::type_nak:
        if (const char *n = nak_code_name(v))
            appendf(s, "NAK %s", n);
        else
            appendf(s, "NAK reserved-code-%u", v);
        break;
    default:
        appendf(s, "reserved-syndrome 0x%02x", syndrome);
        return s;
    }
    /* Bit 7 is reserved (IBTA 9.3.5); say so rather than hide it. */
    if (syndrome & 0x80) s += " (reserved bit 7 set)";
    return s;
}

std::string ip_text(const uint8_t *addr, uint8_t version) {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(version == 6 ? AF_INET6 : AF_INET, addr, buf, sizeof buf)) return "?";
    return buf;
}

std::string mac_text(const uint8_t *m) {
    std::string s;
    appendf(s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return s;
}

/* A UD payload to the GSI QP, read as a CM MAD (<uroce/cm_mad.h>): the
 * message by name, its comm IDs or request ID, and what identifies the
 * connection (service ID, QPN, PSN, reason). */
std::string cm_mad_text(const roce_packet &p) {
    std::string s;
    cm_mad_view v;
    mad_error e = parse_cm_mad(p.payload(), p.payload_len, v);
    if (e == mad_error::short_mad) {
        appendf(s, " MAD short (%u bytes)", p.payload_len);
        return s;
    }
    const auto *h = reinterpret_cast<const mad_hdr *>(p.payload());
    if (e != mad_error::ok) {
        appendf(s, " MAD class=0x%02x version=%u method=0x%02x attr=0x%04x (%s)", h->mgmt_class,
                h->class_version, h->method, h->attr_id(), mad_error_name(e));
        return s;
    }
    appendf(s, " CM %s TID=0x%016" PRIx64, v.info->name, h->tid());
    switch (v.info->attr) {
    case cm_attr::req: {
        const cm_req &m = *v.as<cm_req>();
        appendf(s, " comm=0x%08x sid=0x%016" PRIx64 " QPN=0x%06x PSN=%u mtu=%u", m.local_comm_id(),
                m.service_id(), m.local_qpn(), m.starting_psn(), 128u << m.path_mtu());
        if (service_id_is_ip(m.service_id())) {
            const auto &ip = *reinterpret_cast<const cma_ip_hdr *>(v.private_data());
            const uint8_t *src = ip.ip_ver() == 6 ? ip.src_addr : ip.src_addr + 12;
            const uint8_t *dst = ip.ip_ver() == 6 ? ip.dst_addr : ip.dst_addr + 12;
            appendf(s, " %s:%u -> %s:%u", ip_text(src, ip.ip_ver()).c_str(), ip.src_port(),
                    ip_text(dst, ip.ip_ver()).c_str(), service_id_port(m.service_id()));
        }
        break;
    }
    case cm_attr::rep: {
        const cm_rep &m = *v.as<cm_rep>();
        appendf(s, " comm=0x%08x remote=0x%08x QPN=0x%06x PSN=%u", m.local_comm_id(),
                m.remote_comm_id(), m.local_qpn(), m.starting_psn());
        break;
    }
    case cm_attr::rtu:
    case cm_attr::drep:
        appendf(s, " comm=0x%08x remote=0x%08x", v.as<cm_rtu>()->local_comm_id(),
                v.as<cm_rtu>()->remote_comm_id());
        break;
    case cm_attr::dreq:
        appendf(s, " comm=0x%08x remote=0x%08x QPN=0x%06x", v.as<cm_dreq>()->local_comm_id(),
                v.as<cm_dreq>()->remote_comm_id(), v.as<cm_dreq>()->remote_qpn());
        break;
    case cm_attr::rej: {
        const cm_rej &m = *v.as<cm_rej>();
        appendf(s, " comm=0x%08x remote=0x%08x reason=%u (%s) rejected=%s", m.local_comm_id(),
                m.remote_comm_id(), m.reason(), cm_rej_reason_name(m.reason()),
                cm_msg_ref_name(m.msg_rejected()));
        break;
    }
    case cm_attr::mra: {
        const cm_mra &m = *v.as<cm_mra>();
        appendf(s, " comm=0x%08x remote=0x%08x mraed=%s timeout=%u", m.local_comm_id(),
                m.remote_comm_id(), cm_msg_ref_name(m.msg_mraed()), m.service_timeout());
        break;
    }
    case cm_attr::sidr_req:
        appendf(s, " request=0x%08x sid=0x%016" PRIx64, v.as<cm_sidr_req>()->request_id(),
                v.as<cm_sidr_req>()->service_id());
        break;
    case cm_attr::sidr_rep:
        appendf(s, " request=0x%08x status=%u QPN=0x%06x qkey=0x%08x",
                v.as<cm_sidr_rep>()->request_id(), v.as<cm_sidr_rep>()->status,
                v.as<cm_sidr_rep>()->qpn(), v.as<cm_sidr_rep>()->qkey());
        break;
    case cm_attr::lap:
    case cm_attr::apr:
        break;
    }
    return s;
}

/* uroce's SACK (doc/loss-recovery.md): the expected PSN (BTH PSN + 1,
 * missing) and the runs of PSNs received after it, e.g.
 * " SACK ePSN=101 got=103-110,115". */
static std::string sack_text(const roce_packet &p, const sack_eth &x) {
    const uint32_t epsn = (p.bth()->psn() + 1) & 0xffffff;
    std::string s;
    appendf(s, " SACK ePSN=%u got=", epsn);
    bool any = false;
    for (unsigned i = 0; i < sack_eth::bits;) {
        if (!x.received(i)) {
            ++i;
            continue;
        }
        unsigned j = i;
        while (j + 1 < sack_eth::bits && x.received(j + 1))
            ++j;
        const uint32_t from = (epsn + 1 + i) & 0xffffff, to = (epsn + 1 + j) & 0xffffff;
        if (any) s += ',';
        if (i == j)
            appendf(s, "%u", from);
        else
            appendf(s, "%u-%u", from, to);
        any = true;
        i = j + 1;
    }
    if (!any) s += "none";
    return s;
}

std::string format_roce_fields(const frame_report &r) {
    const roce_packet &p = r.pkt;
    std::string s;
    if (const deth *d = p.deth())
        appendf(s, " DETH qkey=0x%08x srcQP=0x%06x", d->qkey(), d->src_qp());
    if (p.deth() && p.bth()->dest_qp() == gsi_qpn) s += cm_mad_text(p);
    if (const feth *f = p.feth())
        appendf(s, " FETH sel=%u plt=%u", f->selectivity_level(), f->placement_type());
    if (const reth *x = p.reth())
        appendf(s, " RETH va=0x%016" PRIx64 " rkey=0x%08x dlen=%u", x->va(), x->rkey(),
                x->dma_length());
    if (const atomic_eth *x = p.atomic_eth()) {
        appendf(s, " AtomicETH va=0x%016" PRIx64 " rkey=0x%08x", x->va(), x->rkey());
        if (p.opcode == to_u8(ib_opcode::rc_fetch_add))
            appendf(s, " add=%" PRIu64, x->swap_add());
        else
            appendf(s, " compare=%" PRIu64 " swap=%" PRIu64, x->compare(), x->swap_add());
    }
    if (const aeth *x = p.aeth())
        appendf(s, " AETH %s MSN=%u", aeth_syndrome_text(x->syndrome).c_str(), x->msn());
    if (const sack_eth *x = p.sack_eth()) s += sack_text(p, *x);
    if (const atomic_ack_eth *x = p.atomic_ack_eth()) appendf(s, " orig=%" PRIu64, x->orig());
    if (const immdt *x = p.immdt()) appendf(s, " ImmDt=0x%08x", x->imm());
    if (const ieth *x = p.ieth()) appendf(s, " IETH rkey=0x%08x", x->rkey());
    if (r.icrc_checked) {
        if (r.icrc_ok)
            s += " ICRC ok";
        else
            appendf(s, " ICRC BAD (stored 0x%08x, expected 0x%08x)", r.icrc_stored,
                    r.icrc_expected);
    }
    return s;
}

std::string format_line(const frame_report &r, const std::string &time, const format_options &o) {
    std::string s;
    const frame_addrs &a = r.addrs;
    appendf(s, "%5" PRIu64 " %s ", r.number, time.c_str());
    if (o.show_macs && a.has_mac)
        appendf(s, "%s -> %s ", mac_text(a.src_mac).c_str(), mac_text(a.dst_mac).c_str());

    if (r.cls == frame_class::arp) {
        appendf(s, "non-RoCE: ARP len=%u", r.wire_len);
        return s;
    }
    if (r.cls == frame_class::other_l2) {
        if (r.caplen < 14)
            appendf(s, "non-RoCE: short frame len=%u", r.wire_len);
        else
            appendf(s, "non-RoCE: EtherType 0x%04x len=%u", a.ether_type, r.wire_len);
        return s;
    }
    std::string src = ip_text(a.src_ip, a.ip_version), dst = ip_text(a.dst_ip, a.ip_version);
    if (r.cls == frame_class::other_ip) {
        if (a.has_ports)
            appendf(s, "non-RoCE: %s %s:%u -> %s:%u len=%u", l4_name(a.l4_proto).c_str(),
                    src.c_str(), a.src_port, dst.c_str(), a.dst_port, a.l4_payload_len);
        else
            appendf(s, "non-RoCE: %s %s -> %s%s", l4_name(a.l4_proto).c_str(), src.c_str(),
                    dst.c_str(), a.fragment ? " fragment" : "");
        return s;
    }

    /* RoCE */
    appendf(s, "%s -> %s sport %u", src.c_str(), dst.c_str(), a.src_port);
    if (r.parsed && r.pkt.vlan_count) appendf(s, " vlan=%u", r.pkt.vlan_tci[0] & 0x0fff);
    if (!r.parsed) {
        if (r.snapped) {
            if (r.raw_bth)
                appendf(s, " %s QP=0x%06x PSN=%u", opcode_name(r.raw_opcode), r.raw_qp, r.raw_psn);
            appendf(s, " [snapped: %u of %u bytes captured, not verified]", r.caplen, r.wire_len);
            return s;
        }
        appendf(s, " MALFORMED %s", r.error.c_str());
        if (r.raw_bth)
            appendf(s, " (opcode 0x%02x %s QP=0x%06x PSN=%u)", r.raw_opcode,
                    opcode_name(r.raw_opcode), r.raw_qp, r.raw_psn);
        if (!r.detail.empty()) appendf(s, ": %s", r.detail.c_str());
        return s;
    }
    const roce_packet &p = r.pkt;
    const bth *b = p.bth();
    appendf(s, " %s QP=0x%06x PSN=%u", p.info->name, b->dest_qp(), b->psn());
    /* ACKs and CNPs carry no solicited/ack-request semantics and no payload:
     * their lines stay short unless a flag is actually set. */
    bool quiet_flags = !p.info->has_any(op_flag::request | op_flag::payload);
    if (!quiet_flags || b->se() || b->mig_req() || b->ack_req())
        appendf(s, " SE=%d M=%d A=%d", b->se(), b->mig_req(), b->ack_req());
    if (p.info->has(op_flag::payload) || p.pad) appendf(s, " pad=%u len=%u", p.pad, p.payload_len);
    if (b->pkey() != bth::default_pkey) appendf(s, " pkey=0x%04x", b->pkey());
    if (b->fecn()) s += " FECN";
    if (b->becn()) s += " BECN";
    uint8_t ecn = p.ip_version == 4 ? p.ipv4()->ecn() : uint8_t(p.ipv6()->traffic_class() & 3);
    if (ecn == 3) appendf(s, " ecn=%s", transport_ecn(ecn));
    s += format_roce_fields(r);
    /* A bad ICRC already reads "ICRC BAD (stored, expected)" above. */
    if (!r.error.empty() && !(r.icrc_checked && !r.icrc_ok)) {
        appendf(s, " ERROR %s", r.error.c_str());
        if (!r.detail.empty()) appendf(s, ": %s", r.detail.c_str());
    }
    return s;
}

const char *const fields_header =
    "frame\topcode\tse\tm\ta\tpadcnt\tp_key\tdestqp\tpsn\treth.va\treth.r_key\treth.dmalen\t"
    "aeth.syndrome\taeth.msn\tdeth.q_key\tdeth.srcqp\tatomic.swapdt\tatomic.cmpdt\t"
    "atomicack.orig\ticrc";

std::string format_fields(const frame_report &r) {
    /* Only packets that parse as captured: a repaired frame is not what tshark would decode. */
    if (r.cls != frame_class::roce || !r.parsed || r.repaired) return "";
    const roce_packet &p = r.pkt;
    const bth *b = p.bth();
    std::string s;
    appendf(s, "%" PRIu64 "\t%u\t%d\t%d\t%d\t%u\t%u\t0x%06x\t%u", r.number, p.opcode, b->se(),
            b->mig_req(), b->ack_req(), b->pad(), b->pkey(), b->dest_qp(), b->psn());
    /* tshark shows the AtomicETH address and key in the RETH fields. */
    if (const reth *x = p.reth())
        appendf(s, "\t0x%016" PRIx64 "\t0x%08x\t%u", x->va(), x->rkey(), x->dma_length());
    else if (const atomic_eth *y = p.atomic_eth())
        appendf(s, "\t0x%016" PRIx64 "\t0x%08x\t", y->va(), y->rkey());
    else
        s += "\t\t\t";
    if (const aeth *x = p.aeth())
        appendf(s, "\t%u\t%u", x->syndrome, x->msn());
    else
        s += "\t\t";
    if (const deth *x = p.deth())
        appendf(s, "\t0x%016" PRIx64 "\t0x%08x", uint64_t(x->qkey()), x->src_qp());
    else
        s += "\t\t";
    if (const atomic_eth *x = p.atomic_eth())
        appendf(s, "\t%" PRIu64 "\t%" PRIu64, x->swap_add(), x->compare());
    else
        s += "\t\t";
    if (const atomic_ack_eth *x = p.atomic_ack_eth())
        appendf(s, "\t%" PRIu64, x->orig());
    else
        s += "\t";
    /* tshark prints the ICRC wire bytes as a big-endian number. */
    appendf(s, "\t0x%08x", bswap32(p.stored_icrc()));
    return s;
}

} // namespace uroce::dump

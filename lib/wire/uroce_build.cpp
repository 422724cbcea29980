/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 builder: every header in one pass, driven by the opcode table.
 */
#include <uroce/build.h>

#include <cstring>

#include <rte_mbuf.h>

#include <uroce/icrc.h>

namespace uroce {

uint16_t ipv4_header_checksum(const ipv4_hdr *ip, size_t len) {
    /* RFC 1071: one's-complement sum of 16-bit words, folded, inverted. */
    const auto *p = reinterpret_cast<const uint8_t *>(ip);
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += load_be16(p + i);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return uint16_t(~sum);
}

void path_set_ip_version(roce_path &p) {
    p.ip_version = (p.sgid.is_ipv4_mapped() && p.dgid.is_ipv4_mapped()) ? 4 : 6;
}

namespace {

/* Extension headers, each written only when the opcode carries it. */
void write_ext(uint8_t *ext, const opcode_info &info, const ext_fields &x) {
    auto at = [&](ext_hdr h) { return ext + info.offset(h); };
    if (info.has(op_flag::deth)) {
        auto *d = reinterpret_cast<deth *>(at(ext_hdr::deth));
        d->set_qkey(x.qkey);
        d->set_src_qp(x.src_qp);
    }
    if (info.has(op_flag::feth))
        reinterpret_cast<feth *>(at(ext_hdr::feth))->set(x.feth_selectivity, x.feth_placement);
    if (info.has(op_flag::reth)) {
        auto *r = reinterpret_cast<reth *>(at(ext_hdr::reth));
        r->set_va(x.va);
        r->set_rkey(x.rkey);
        r->set_dma_length(x.dma_length);
    }
    if (info.has(op_flag::atomic_eth)) {
        auto *a = reinterpret_cast<atomic_eth *>(at(ext_hdr::atomic_eth));
        a->set_va(x.va);
        a->set_rkey(x.rkey);
        a->set_swap_add(x.swap_add);
        a->set_compare(x.compare);
    }
    if (info.has(op_flag::aeth)) {
        auto *a = reinterpret_cast<aeth *>(at(ext_hdr::aeth));
        a->syndrome = x.syndrome;
        a->set_msn(x.msn);
    }
    if (info.has(op_flag::atomic_ack_eth))
        reinterpret_cast<atomic_ack_eth *>(at(ext_hdr::atomic_ack_eth))->set_orig(x.orig);
    if (info.has(op_flag::immdt))
        reinterpret_cast<immdt *>(at(ext_hdr::immdt))->set_imm_raw(x.imm_raw);
    if (info.has(op_flag::ieth)) reinterpret_cast<ieth *>(at(ext_hdr::ieth))->set_rkey(x.rkey);
    if (info.has(op_flag::cnp_body)) std::memset(at(ext_hdr::cnp_body), 0, sizeof(cnp_body));
    if (info.has(op_flag::sack_eth)) {
        if (x.sack_bitmap)
            std::memcpy(at(ext_hdr::sack_eth), x.sack_bitmap, sizeof(sack_eth));
        else
            std::memset(at(ext_hdr::sack_eth), 0, sizeof(sack_eth));
    }
}

} // namespace

size_t write_headers(uint8_t *out, const roce_path &path, const bth_fields &b, const ext_fields &x,
                     uint32_t payload_len, uint16_t ip_id, bool ip_csum_offload) {
    const opcode_info &info = opcode_lookup(b.opcode);
    const uint8_t pad = pad_for(payload_len);
    /* Everything the UDP header covers: BTH, extension headers, payload, pad, ICRC. */
    const size_t udp_len =
        sizeof(udp_hdr) + sizeof(bth) + info.ext_len + payload_len + pad + icrc_len;
    uint8_t *p = out;

    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, path.dst_mac, sizeof(eth->dst));
    std::memcpy(eth->src, path.src_mac, sizeof(eth->src));
    const uint16_t l3_type = path.ip_version == 4 ? ether_type_ipv4 : ether_type_ipv6;
    p += sizeof(eth_hdr);
    if (path.has_vlan) {
        eth->set_ether_type(ether_type_vlan);
        auto *v = reinterpret_cast<vlan_hdr *>(p);
        v->set_tci(path.vlan_tci);
        v->set_ether_type(l3_type);
        p += sizeof(vlan_hdr);
    } else {
        eth->set_ether_type(l3_type);
    }

    if (path.ip_version == 4) {
        auto *ip = reinterpret_cast<ipv4_hdr *>(p);
        ip->version_ihl = 0x45;
        ip->tos = path.traffic_class;
        ip->set_total_length(uint16_t(sizeof(ipv4_hdr) + udp_len));
        ip->set_id(ip_id);
        ip->set_frag(path.ipv4_dont_fragment ? ipv4_hdr::flag_df : 0);
        ip->ttl = path.hop_limit;
        ip->protocol = ip_proto_udp;
        ip->set_checksum(0);
        ip->set_src_addr(path.sgid.ipv4());
        ip->set_dst_addr(path.dgid.ipv4());
        if (!ip_csum_offload) ip->set_checksum(ipv4_header_checksum(ip, sizeof(ipv4_hdr)));
        p += sizeof(ipv4_hdr);
    } else {
        auto *ip = reinterpret_cast<ipv6_hdr *>(p);
        ip->set_vtc_flow(path.traffic_class, path.flow_label);
        ip->set_payload_length(uint16_t(udp_len));
        ip->next_header = ip_proto_udp;
        ip->hop_limit = path.hop_limit;
        std::memcpy(ip->src, path.sgid.raw.data(), 16);
        std::memcpy(ip->dst, path.dgid.raw.data(), 16);
        p += sizeof(ipv6_hdr);
    }

    auto *udp = reinterpret_cast<udp_hdr *>(p);
    udp->set_src_port(path.udp_sport);
    udp->set_dst_port(rocev2_udp_port);
    udp->set_length(uint16_t(udp_len));
    udp->set_checksum(path.udp_checksum);
    p += sizeof(udp_hdr);

    auto *bh = reinterpret_cast<bth *>(p);
    bh->opcode = b.opcode;
    bh->set_flags(b.solicited, b.mig_req, pad, b.tver);
    bh->set_pkey(b.pkey);
    bh->set_ecn_bits(b.fecn, b.becn);
    bh->set_dest_qp(b.dest_qp);
    bh->set_ack_req(b.ack_req);
    bh->set_psn(b.psn);
    p += sizeof(bth);

    write_ext(p, info, x);
    p += info.ext_len;
    return size_t(p - out);
}

size_t finish_frame(uint8_t *frame, size_t header_len, uint32_t payload_len, size_t l2_len) {
    const uint8_t pad = pad_for(payload_len);
    uint8_t *tail = frame + header_len + payload_len;
    std::memset(tail, 0, pad);
    const size_t covered = header_len - l2_len + payload_len + pad;
    reinterpret_cast<icrc_trailer *>(tail + pad)->set_value(icrc_compute(frame + l2_len, covered));
    return header_len + payload_len + pad + icrc_len;
}

size_t build_frame(uint8_t *out, const roce_path &path, const bth_fields &b, const ext_fields &x,
                   const void *payload, uint32_t payload_len, uint16_t ip_id) {
    size_t hl = write_headers(out, path, b, x, payload_len, ip_id);
    if (payload_len) std::memcpy(out + hl, payload, payload_len);
    return finish_frame(out, hl, payload_len, l2_length(path));
}

bool build_mbuf(struct rte_mbuf *m, const roce_path &path, const bth_fields &b, const ext_fields &x,
                uint16_t ip_id, bool ip_csum_offload) {
    const uint32_t payload_len = m->pkt_len;
    const uint8_t pad = pad_for(payload_len);
    const size_t hl = header_length(path, b.opcode);
    if (rte_pktmbuf_headroom(m) < hl) return false;
    struct rte_mbuf *last = rte_pktmbuf_lastseg(m);
    if (rte_pktmbuf_tailroom(last) < pad + icrc_len) return false;

    auto *hdr = reinterpret_cast<uint8_t *>(rte_pktmbuf_prepend(m, uint16_t(hl)));
    write_headers(hdr, path, b, x, payload_len, ip_id, ip_csum_offload);
    auto *tail = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, uint16_t(pad + icrc_len)));
    std::memset(tail, 0, pad);
    const size_t l2 = l2_length(path);
    reinterpret_cast<icrc_trailer *>(tail + pad)
        ->set_value(icrc_compute_mbuf(m, uint32_t(l2), m->pkt_len - uint32_t(icrc_len)));

    m->l2_len = l2;
    m->l3_len = l3_length(path);
    m->l4_len = sizeof(udp_hdr);
    if (path.ip_version == 4)
        m->ol_flags |= RTE_MBUF_F_TX_IPV4 | (ip_csum_offload ? RTE_MBUF_F_TX_IP_CKSUM : 0);
    else
        m->ol_flags |= RTE_MBUF_F_TX_IPV6;
    return true;
}

void extract_fields(const roce_packet &p, roce_path &path, bth_fields &b, ext_fields &x,
                    uint16_t &ip_id) {
    path = roce_path{};
    b = bth_fields{};
    x = ext_fields{};
    ip_id = 0;
    std::memcpy(path.dst_mac, p.eth()->dst, 6);
    std::memcpy(path.src_mac, p.eth()->src, 6);
    path.has_vlan = p.vlan_count > 0;
    path.vlan_tci = p.vlan_tci[0];
    path.ip_version = p.ip_version;
    if (p.ip_version == 4) {
        const ipv4_hdr *ip = p.ipv4();
        path.sgid = gid::from_ipv4(ip->src_addr());
        path.dgid = gid::from_ipv4(ip->dst_addr());
        path.traffic_class = ip->tos;
        path.hop_limit = ip->ttl;
        path.ipv4_dont_fragment = ip->frag() & ipv4_hdr::flag_df;
        ip_id = ip->id();
    } else {
        const ipv6_hdr *ip = p.ipv6();
        path.sgid = gid::from_bytes(ip->src);
        path.dgid = gid::from_bytes(ip->dst);
        path.traffic_class = ip->traffic_class();
        path.flow_label = ip->flow_label();
        path.hop_limit = ip->hop_limit;
    }
    path.udp_sport = p.udp()->src_port();
    path.udp_checksum = p.udp()->checksum();

    const struct bth *bh = p.bth();
    b.opcode = bh->opcode;
    b.solicited = bh->se();
    b.mig_req = bh->mig_req();
    b.tver = bh->tver();
    b.ack_req = bh->ack_req();
    b.fecn = bh->fecn();
    b.becn = bh->becn();
    b.pkey = bh->pkey();
    b.dest_qp = bh->dest_qp();
    b.psn = bh->psn();

    if (const auto *d = p.deth()) {
        x.qkey = d->qkey();
        x.src_qp = d->src_qp();
    }
    if (const auto *f = p.feth()) {
        x.feth_selectivity = f->selectivity_level();
        x.feth_placement = f->placement_type();
    }
    if (const auto *r = p.reth()) {
        x.va = r->va();
        x.rkey = r->rkey();
        x.dma_length = r->dma_length();
    }
    if (const auto *a = p.atomic_eth()) {
        x.va = a->va();
        x.rkey = a->rkey();
        x.swap_add = a->swap_add();
        x.compare = a->compare();
    }
    if (const auto *a = p.aeth()) {
        x.syndrome = a->syndrome;
        x.msn = a->msn();
    }
    if (const auto *a = p.atomic_ack_eth()) x.orig = a->orig();
    if (const auto *i = p.immdt()) x.imm_raw = i->imm_raw();
    if (const auto *i = p.ieth()) x.rkey = i->rkey();
}

} // namespace uroce

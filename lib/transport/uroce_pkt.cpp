/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_pkt.h"

#include <algorithm>
#include <cstring>

#include <rte_mbuf.h>

#include <uroce/icrc.h>
#include <uroce/flow.h>

namespace uroce {

void make_hdr_template(hdr_template &t, const roce_path &path, bool csum_offload) {
    std::memset(t.bytes, 0, sizeof(t.bytes));
    uint8_t *p = t.bytes;
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, path.dst_mac, 6);
    std::memcpy(eth->src, path.src_mac, 6);
    size_t off = sizeof(eth_hdr);
    uint16_t et = path.ip_version == 4 ? ether_type_ipv4 : ether_type_ipv6;
    if (path.has_vlan) {
        eth->set_ether_type(ether_type_vlan);
        auto *v = reinterpret_cast<vlan_hdr *>(p + off);
        v->set_tci(path.vlan_tci);
        v->set_ether_type(et);
        off += sizeof(vlan_hdr);
    } else {
        eth->set_ether_type(et);
    }
    t.l2_len = uint8_t(off);
    if (path.ip_version == 4) {
        auto *ip = reinterpret_cast<ipv4_hdr *>(p + off);
        ip->version_ihl = 0x45;
        ip->tos = path.traffic_class;
        ip->set_frag(path.ipv4_dont_fragment ? ipv4_hdr::flag_df : 0);
        ip->ttl = path.hop_limit;
        ip->protocol = ip_proto_udp;
        ip->set_src_addr(path.sgid.ipv4());
        ip->set_dst_addr(path.dgid.ipv4());
        off += sizeof(ipv4_hdr);
    } else {
        auto *ip = reinterpret_cast<ipv6_hdr *>(p + off);
        ip->set_vtc_flow(path.traffic_class, path.flow_label);
        ip->next_header = ip_proto_udp;
        ip->hop_limit = path.hop_limit;
        std::memcpy(ip->src, path.sgid.raw.data(), 16);
        std::memcpy(ip->dst, path.dgid.raw.data(), 16);
        off += sizeof(ipv6_hdr);
    }
    t.l3_len = uint8_t(off - t.l2_len);
    auto *udp = reinterpret_cast<udp_hdr *>(p + off);
    udp->set_src_port(path.udp_sport);
    udp->set_dst_port(rocev2_udp_port);
    /* UDP checksum 0, over IPv4 (IBTA A17.4.2) and IPv6 alike, as rxe_net.c
     * and RoCE NICs send it; path.udp_checksum (kept from captures) is not used */
    off += sizeof(udp_hdr);
    t.len = uint8_t(off);
    t.ip_version = path.ip_version;
    t.csum_offload = csum_offload;
    /* total length, id and checksum are still 0 in the template */
    t.ip_csum_base = path.ip_version == 4
                         ? ipv4_csum_partial(reinterpret_cast<const ipv4_hdr *>(p + t.l2_len))
                         : 0;
}

uint16_t ipv4_csum_partial(const ipv4_hdr *ip) {
    const auto *h = reinterpret_cast<const uint8_t *>(ip);
    uint32_t sum = 0;
    for (size_t i = 0; i < sizeof(ipv4_hdr); i += 2)
        sum += load_be16(h + i);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return uint16_t(sum);
}

/* The template into the frame: a constant size per shape, so each memcpy
 * compiles to a few vector moves (a variable-length one became rep movsq). */
static inline void copy_template(uint8_t *f, const hdr_template &t) {
    switch (t.len) {
    case hdr_len_v4:
        std::memcpy(f, t.bytes, hdr_len_v4);
        break;
    case hdr_len_v4_vlan:
        std::memcpy(f, t.bytes, hdr_len_v4_vlan);
        break;
    case hdr_len_v6:
        std::memcpy(f, t.bytes, hdr_len_v6);
        break;
    case hdr_len_v6_vlan:
        std::memcpy(f, t.bytes, hdr_len_v6_vlan);
        break;
    default: /* not made by make_hdr_template */
        std::memcpy(f, t.bytes, t.len);
        break;
    }
}

/* The payload's pieces in order, from an SGE list at a byte offset or a flat
 * buffer, each handed to copy(dst, src, n). */
template <class Copy>
static inline void gather_payload(uint8_t *dst, const payload_src *src, uint32_t payload_len,
                                  Copy &&copy) {
    if (!payload_len) return;
    if (src->flat) {
        copy(dst, src->flat, payload_len);
        return;
    }
    uint64_t off = src->offset;
    uint32_t i = 0;
    while (i < src->num_sge && off >= src->sg[i].length)
        off -= src->sg[i++].length;
    uint32_t left = payload_len;
    while (left && i < src->num_sge) {
        uint64_t avail = src->sg[i].length - off;
        uint32_t c = avail < left ? uint32_t(avail) : left;
        copy(dst, reinterpret_cast<const uint8_t *>(src->sg[i].addr) + off, c);
        dst += c;
        left -= c;
        off = 0;
        ++i;
    }
}

/* A one-segment mbuf for a frame_len-byte frame, its data at *data.
 *
 * rte_pktmbuf_alloc resets the mbuf with loads (buf_len, ol_flags) and
 * read-modify-writes (the l2/l3/l4_len bit-fields share tx_offload's word):
 * the mbuf's lines are cold when it leaves the pool (it was freed a window
 * ago, often by the peer's receive path), so each load waited out a miss,
 * and the bit-fields' narrow stores stalled the load of their own word
 * (perf annotate: a third of pkt_build). Here the header is only stored to,
 * as a PMD's receive path fills it: rte_mbuf_raw_alloc's mbuf already has
 * refcnt 1, one segment, no next and its pool, buf_addr and buf_len (its
 * contract in rte_mbuf.h), and for a pool without pinned external buffers
 * the buffer follows the mbuf and its private area (rte_mbuf_buf_addr), all
 * of it known from the pool's geometry. */
template <class TakeRaw>
static inline rte_mbuf *tx_mbuf_alloc(rte_mempool *pool, const tx_pool_geometry &geo,
                                      uint32_t frame_len, uint64_t tx_offload, uint8_t **data,
                                      TakeRaw &&take_raw) {
    if (geo.pinned) [[unlikely]] {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        if (!m) return nullptr;
        if (rte_pktmbuf_tailroom(m) < frame_len) {
            rte_pktmbuf_free(m);
            return nullptr;
        }
        m->data_len = uint16_t(frame_len);
        m->pkt_len = frame_len;
        m->tx_offload = tx_offload;
        *data = rte_pktmbuf_mtod(m, uint8_t *);
        return m;
    }
    if (uint32_t(RTE_PKTMBUF_HEADROOM) + frame_len > geo.data_room) return nullptr;
    rte_mbuf *m = take_raw();
    if (!m) return nullptr;
    m->data_off = RTE_PKTMBUF_HEADROOM;
    m->port = RTE_MBUF_PORT_INVALID;
    m->ol_flags = 0;
    m->packet_type = 0;
    m->pkt_len = frame_len;
    m->data_len = uint16_t(frame_len);
    m->vlan_tci = 0;
    m->vlan_tci_outer = 0;
    m->tx_offload = tx_offload;
    *data = reinterpret_cast<uint8_t *>(m) + geo.data_off;
    return m;
}

tx_pool_geometry tx_pool_geometry::of(rte_mempool *pool) {
    tx_pool_geometry g;
    if (!pool) return g;
    g.pinned = (rte_pktmbuf_priv_flags(pool) & RTE_PKTMBUF_POOL_F_PINNED_EXT_BUF) != 0;
    g.data_room = rte_pktmbuf_data_room_size(pool);
    /* rte_mbuf_buf_addr's offset, then the headroom */
    g.data_off = uint32_t(sizeof(rte_mbuf)) + rte_pktmbuf_priv_size(pool) + RTE_PKTMBUF_HEADROOM;
    return g;
}

tx_mbuf_stash::tx_mbuf_stash(rte_mempool *pool)
    : pool_(pool), geo_(tx_pool_geometry::of(pool)),
      batch_(uint16_t(pool ? std::clamp(pool->size / 256u, 1u, unsigned(size)) : 1)) {}

tx_mbuf_stash::~tx_mbuf_stash() {
    if (end_ > next_)
        rte_mempool_put_bulk(pool_, reinterpret_cast<void **>(m_ + next_), end_ - next_);
}

/* The lines pkt_build stores to first: the mbuf's header and the start of
 * its data room (the headers, and a small frame's payload). */
static inline void prefetch_for_build(rte_mbuf *m, const tx_pool_geometry &geo) {
    const char *data = reinterpret_cast<const char *>(m) + geo.data_off;
    __builtin_prefetch(m, 1, 3);
    __builtin_prefetch(data, 1, 3);
    __builtin_prefetch(data + RTE_CACHE_LINE_SIZE, 1, 3);
}

bool tx_mbuf_stash::refill() {
    /* all or nothing: with the pool nearly empty, one at a time */
    if (rte_mempool_get_bulk(pool_, reinterpret_cast<void **>(m_), batch_) == 0) {
        end_ = batch_;
    } else if (rte_mempool_get(pool_, reinterpret_cast<void **>(m_)) == 0) {
        end_ = 1;
    } else {
        return false;
    }
    next_ = 0;
    return true;
}

inline rte_mbuf *tx_mbuf_stash::take() {
    if (next_ == end_ && !refill()) return nullptr;
    rte_mbuf *m = m_[next_++];
    if (next_ < end_) prefetch_for_build(m_[next_], geo_);
    return m;
}

template <class TakeRaw>
static inline rte_mbuf *build_frame(rte_mempool *pool, const tx_pool_geometry &geo,
                                    TakeRaw &&take_raw, const hdr_template &t, const bth_fields &b,
                                    const ext_fields &x, const payload_src *src,
                                    uint32_t payload_len, uint16_t ip_id, bool *icrc_due) {
    const opcode_info &info = opcode_lookup(b.opcode);
    uint32_t hdr_len = t.len + uint32_t(sizeof(bth)) + info.ext_len;
    uint8_t pad = pad_for(payload_len);
    uint32_t frame_len = hdr_len + payload_len + pad + uint32_t(icrc_len);
    uint8_t *f;
    rte_mbuf *m = tx_mbuf_alloc(
        pool, geo, frame_len, rte_mbuf_tx_offload(t.l2_len, t.l3_len, sizeof(udp_hdr), 0, 0, 0, 0),
        &f, take_raw);
    if (!m) return nullptr;
    if (icrc_due) *icrc_due = false;
    copy_template(f, t);
    uint8_t *l3 = f + t.l2_len;
    uint32_t l3_payload = frame_len - t.l2_len;
    if (t.ip_version == 4) {
        auto *ip = reinterpret_cast<ipv4_hdr *>(l3);
        ip->set_total_length(uint16_t(l3_payload));
        ip->set_id(ip_id);
        /* with offload the field stays 0 from the template, as DPDK asks */
        if (t.csum_offload)
            m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
        else
            ip->set_checksum(ipv4_csum_finish(t.ip_csum_base, uint16_t(l3_payload), ip_id));
    } else {
        reinterpret_cast<ipv6_hdr *>(l3)->set_payload_length(
            uint16_t(l3_payload - sizeof(ipv6_hdr)));
    }
    auto *udp = reinterpret_cast<udp_hdr *>(l3 + t.l3_len);
    udp->set_length(uint16_t(l3_payload - t.l3_len));

    auto *bh = reinterpret_cast<bth *>(f + t.len);
    bh->opcode = b.opcode;
    bh->set_flags(b.solicited, b.mig_req, pad, b.tver);
    bh->set_pkey(b.pkey);
    bh->set_ecn_bits(b.fecn, b.becn);
    bh->set_dest_qp(b.dest_qp);
    bh->set_ack_req(b.ack_req);
    bh->set_psn(b.psn);

    uint8_t *ext = f + t.len + sizeof(bth);
    if (info.ext_len) {
        uint8_t o;
        if ((o = info.offset(ext_hdr::deth)) != 0xff) {
            auto *h = reinterpret_cast<deth *>(ext + o);
            h->set_qkey(x.qkey);
            h->set_src_qp(x.src_qp);
        }
        if ((o = info.offset(ext_hdr::reth)) != 0xff) {
            auto *h = reinterpret_cast<reth *>(ext + o);
            h->set_va(x.va);
            h->set_rkey(x.rkey);
            h->set_dma_length(x.dma_length);
        }
        if ((o = info.offset(ext_hdr::atomic_eth)) != 0xff) {
            auto *h = reinterpret_cast<atomic_eth *>(ext + o);
            h->set_va(x.va);
            h->set_rkey(x.rkey);
            h->set_swap_add(x.swap_add);
            h->set_compare(x.compare);
        }
        if ((o = info.offset(ext_hdr::aeth)) != 0xff) {
            auto *h = reinterpret_cast<aeth *>(ext + o);
            h->syndrome = x.syndrome;
            h->set_msn(x.msn);
        }
        if ((o = info.offset(ext_hdr::atomic_ack_eth)) != 0xff)
            reinterpret_cast<atomic_ack_eth *>(ext + o)->set_orig(x.orig);
        if ((o = info.offset(ext_hdr::immdt)) != 0xff)
            reinterpret_cast<immdt *>(ext + o)->set_imm_raw(x.imm_raw);
        if ((o = info.offset(ext_hdr::ieth)) != 0xff)
            reinterpret_cast<ieth *>(ext + o)->set_rkey(x.rkey);
        if ((o = info.offset(ext_hdr::sack_eth)) != 0xff) {
            if (x.sack_bitmap)
                std::memcpy(ext + o, x.sack_bitmap, sizeof(sack_eth));
            else
                std::memset(ext + o, 0, sizeof(sack_eth));
        }
    }

    /* the one copy of the payload: user memory straight into the frame */
    uint8_t *dst = f + hdr_len;
    if (frame_len - icrc_len - t.l2_len >= icrc_fuse_min && icrc_fused_copy()) {
        /* ...and the ICRC in the same pass: the masked headers first, then
         * each piece of payload as it is copied, then the pad, which is the
         * order the ICRC covers them in (IBTA A17.3.3; lib/icrc masks the
         * variant header fields in registers) */
        icrc_state st = icrc_begin(l3, hdr_len - t.l2_len);
        gather_payload(dst, src, payload_len, [&st](uint8_t *d, const uint8_t *s, uint32_t n) {
            icrc_copy_update(st, d, s, n);
        });
        dst += payload_len;
        if (pad) {
            std::memset(dst, 0, pad);
            icrc_update(st, dst, pad);
        }
        icrc_write_wire(dst + pad, icrc_finish(st));
        return m;
    }
    gather_payload(dst, src, payload_len,
                   [](uint8_t *d, const uint8_t *s, uint32_t n) { std::memcpy(d, s, n); });
    dst += payload_len;
    if (pad) std::memset(dst, 0, pad);
    if (icrc_due) {
        *icrc_due = true; /* the caller's, with other frames' (pkt_icrc_fill) */
        return m;
    }
    /* the one CRC pass, over the frame while it is hot in L1 (lib/icrc masks
     * the variant header fields in registers, IBTA A17.3.3) */
    icrc_write_wire(f + hdr_len + payload_len + pad,
                    icrc_compute(l3, frame_len - icrc_len - t.l2_len));
    return m;
}

rte_mbuf *pkt_build(rte_mempool *pool, const hdr_template &t, const bth_fields &b,
                    const ext_fields &x, const payload_src *src, uint32_t payload_len,
                    uint16_t ip_id, bool *icrc_due) {
    return build_frame(
        pool, tx_pool_geometry::of(pool), [pool] { return rte_mbuf_raw_alloc(pool); }, t, b, x, src,
        payload_len, ip_id, icrc_due);
}

rte_mbuf *pkt_build(tx_mbuf_stash &stash, const hdr_template &t, const bth_fields &b,
                    const ext_fields &x, const payload_src *src, uint32_t payload_len,
                    uint16_t ip_id, bool *icrc_due) {
    return build_frame(
        stash.pool(), stash.geometry(), [&stash] { return stash.take(); }, t, b, x, src,
        payload_len, ip_id, icrc_due);
}

void pkt_icrc_fill(rte_mbuf *m) {
    uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, m->l2_len);
    const uint32_t len = m->data_len - m->l2_len - uint32_t(icrc_len);
    icrc_write_wire(l3 + len, icrc_compute(l3, len));
}

bool pkt_icrc_ok(const roce_packet &p, const rte_mbuf *m) {
    if (m->nb_segs == 1)
        return icrc_compute(p.hdr + p.l3_offset, p.icrc_offset - p.l3_offset) ==
               icrc_read_wire(p.hdr + p.icrc_offset);
    uint8_t buf[icrc_len];
    const void *wire = rte_pktmbuf_read(m, p.icrc_offset, icrc_len, buf);
    return wire && icrc_compute_mbuf(m, p.l3_offset, p.icrc_offset) == icrc_read_wire(wire);
}

bool pkt_icrc_defers(const roce_packet &p, const rte_mbuf *m) {
    const uint32_t l3_len = p.icrc_offset - p.l3_offset; /* IP header .. ICRC field */
    return m->nb_segs == 1 && l3_len >= icrc_fuse_min && p.payload_len &&
           p.info->has_any(op_flag::send | op_flag::write | op_flag::read) && icrc_fused_copy();
}

void pkt_icrc_begin(const roce_packet &p, icrc_check &c) {
    icrc_check_begin(c, p.hdr + p.l3_offset, p.payload_offset - p.l3_offset, p.payload_len,
                     p.icrc_offset - p.payload_offset - p.payload_len);
}

void pkt_copy_payload(const roce_packet &p, const rte_mbuf *m, uint32_t off, uint8_t *dst,
                      uint32_t len) {
    uint32_t at = p.payload_offset + off;
    if (m->nb_segs == 1) {
        std::memcpy(dst, p.hdr + at, len);
        return;
    }
    while (m && at >= m->data_len) {
        at -= m->data_len;
        m = m->next;
    }
    while (m && len) {
        uint32_t c = m->data_len - at;
        if (c > len) c = len;
        std::memcpy(dst, rte_pktmbuf_mtod_offset(m, const uint8_t *, at), c);
        dst += c;
        len -= c;
        at = 0;
        m = m->next;
    }
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_cnp.h"

#include <cstring>

#include <rte_mbuf.h>

#include <uroce/icrc.h>

#include "uroce_device.h"
#include "uroce_pkt.h"
#include "uroce_qp.h"

namespace uroce {

rte_mbuf *cnp_build(rte_mempool *pool, const hdr_template &t, uint32_t dest_qpn, uint8_t tclass,
                    uint16_t ip_id) {
    constexpr uint32_t bth_on = uint32_t(sizeof(bth) + sizeof(cnp_body));
    const uint32_t frame_len = t.len + bth_on + uint32_t(icrc_len);
    rte_mbuf *m = rte_pktmbuf_alloc(pool);
    if (!m) return nullptr;
    if (rte_pktmbuf_tailroom(m) < frame_len) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
    m->data_len = uint16_t(frame_len);
    m->pkt_len = frame_len;
    std::memcpy(f, t.bytes, t.len);
    uint8_t *l3 = f + t.l2_len;
    const uint32_t l3_payload = frame_len - t.l2_len;
    if (t.ip_version == 4) {
        auto *ip = reinterpret_cast<ipv4_hdr *>(l3);
        ip->tos = tclass;
        ip->set_total_length(uint16_t(l3_payload));
        ip->set_id(ip_id);
        ip->set_checksum(0);
        /* the template's partial sum has the QP's TOS in it: sum afresh (a
         * CNP is rare; no offload flag, so a capture shows what was sent) */
        ip->set_checksum(uint16_t(~ipv4_csum_partial(ip)));
    } else {
        auto *ip = reinterpret_cast<ipv6_hdr *>(l3);
        ip->set_vtc_flow(tclass, ip->flow_label());
        ip->set_payload_length(uint16_t(l3_payload - sizeof(ipv6_hdr)));
    }
    m->l2_len = t.l2_len;
    m->l3_len = t.l3_len;
    m->l4_len = sizeof(udp_hdr);
    auto *udp = reinterpret_cast<udp_hdr *>(l3 + t.l3_len);
    /* ConnectX-4 Lx sends its CNPs from UDP port 0 (the golden capture);
     * the CNP belongs to no flow whose ECMP path it must follow */
    udp->set_src_port(0);
    udp->set_length(uint16_t(l3_payload - t.l3_len));
    udp->set_checksum(0);

    auto *bh = reinterpret_cast<bth *>(f + t.len);
    bh->opcode = to_u8(ib_opcode::cnp);
    bh->set_flags(false, false, 0, 0);
    bh->set_pkey(0xffff); /* Annex A17.9.3: P_Key 0xFFFF, whatever the QP's */
    bh->set_ecn_bits(false, true);
    bh->set_dest_qp(dest_qpn);
    bh->set_ack_req(false);
    bh->set_psn(0);
    std::memset(f + t.len + sizeof(bth), 0, sizeof(cnp_body));
    icrc_write_wire(f + t.len + bth_on, icrc_compute(l3, frame_len - icrc_len - t.l2_len));
    return m;
}

void cnp_on_ce(device *d, qp *q) {
    ++q->cnt.ce_marks_rcvd;
    const cc_config &cc = d->config().cc;
    /* UD: the sender is named per datagram (DETH), not by a connection, and
     * a CNP to it would need an address handle; mlx5 does not answer UD either */
    /* before RTR the QP has no path (its header template is empty): the
     * frame is dropped by the state check after this, and no CNP can go */
    const bool has_path = q->state == qp_state::rtr || q->state == qp_state::rts ||
                          q->state == qp_state::sqd || q->state == qp_state::sqe;
    if (!cc.cnp || q->type == qp_type::ud || !has_path) {
        ++q->cnt.ce_no_cnp;
        return;
    }
    uint64_t now = d->now_ns();
    if (q->np.sent && now - q->np.last_ns < cc.cnp_interval_ns) {
        ++q->cnt.ce_no_cnp;
        return;
    }
    uint8_t tclass = uint8_t((cc.cnp_dscp << 2) | (cc.ecn ? ecn_ect0 : ecn_not_ect));
    rte_mbuf *m = cnp_build(d->pool(), q->hdr, q->attr.dest_qp_num, tclass, d->next_ip_id());
    if (!m) {
        ++d->cnt().tx_alloc_fail;
        ++q->cnt.ce_no_cnp;
        return;
    }
    q->np.sent = true;
    q->np.last_ns = now;
    ++q->cnt.cnps_sent;
    d->tx(m);
}

void cnp_rcv(device *d, qp *q) {
    ++q->cnt.cnps_rcvd;
    if (!q->cc.dcqcn) {
        ++d->cnt().rx_cnp_ignored;
        return;
    }
    if (dcqcn_on_cnp(q->cc, d->now_ns())) ++q->cnt.rate_cuts;
    /* the rate may have risen since the requester gave up its turn */
    if (req_has_work(q)) d->schedule(q);
}

} // namespace uroce

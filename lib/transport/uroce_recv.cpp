/* SPDX-License-Identifier: BSD-3-Clause
 * Receive dispatch (rxe_recv.c's job): parse, ICRC, destination GID, QPN
 * lookup, transport/P_Key checks, then requests to the responder and
 * responses to the completer. Every drop is counted by reason.
 */
#include <rte_mbuf.h>

#include "uroce_device.h"
#include "uroce_pkt.h"
#include "uroce_qp.h"

namespace uroce {

static inline bool transport_matches(ib_transport t, qp_type q) {
    return (t == ib_transport::rc && q == qp_type::rc) ||
           (t == ib_transport::uc && q == qp_type::uc) ||
           (t == ib_transport::ud && q == qp_type::ud);
}

void device::rx_one(rte_mbuf *m) {
    ++cnt_.rx_pkts;
    roce_packet p;
    if (parse_mbuf(m, p) != parse_error::ok) {
        ++cnt_.rx_parse_errors;
        return;
    }
    /* The ICRC covers everything from the IP header on; nothing in a frame
     * that fails it is trusted (Annex A17.3.3). */
    if (!pkt_icrc_ok(p, m)) {
        ++cnt_.rx_icrc_errors;
        return;
    }
    if (p.info->transport == ib_transport::cnp) return; /* congestion control: not in this issue */
    gid dst =
        p.ip_version == 4 ? gid::from_ipv4(p.ipv4()->dst_addr()) : gid::from_bytes(p.ipv6()->dst);
    if (!has_gid(dst)) {
        ++cnt_.rx_not_ours;
        return;
    }
    qp *q = lookup_qp(p.dest_qp());
    if (!q) {
        ++cnt_.rx_no_qp;
        return;
    }
    if (!transport_matches(p.info->transport, q->type)) {
        ++cnt_.rx_wrong_transport;
        return;
    }
    /* One P_Key table entry: the default full-member key (IBTA 10.9.3). */
    if ((p.bth()->pkey() & 0x7fff) != 0x7fff) {
        ++cnt_.rx_bad_pkey;
        return;
    }
    if (p.info->has(op_flag::request))
        resp_rcv(q, p, m);
    else
        comp_rcv(q, p, m);
}

void device::rx_burst(rte_mbuf **pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) {
        if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
        rx_one(pkts[i]);
    }
    rte_pktmbuf_free_bulk(pkts, n);
    /* ACKs are coalesced per burst: one per QP, after the whole burst. */
    run_scheduled();
    tx_flush();
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Building the CM's messages (IBTA 12.6) from what a connection knows: one
 * function per message, each writing a whole 256-byte MAD (header, message,
 * private data, zeros elsewhere), as cm.c's cm_format_req/rep/rtu/... do.
 *
 * On RoCE there are no LIDs: the LID fields carry the permissive LID 0xFFFF
 * (cm.c does the same for RoCE ports), and the path is the GIDs, flow label,
 * traffic class and hop limit.
 */
#ifndef UROCE_CM_MSG_H
#define UROCE_CM_MSG_H

#include <cstddef>
#include <cstdint>

#include <uroce/cm_mad.h>
#include <uroce/gid.h>

namespace uroce {

inline constexpr uint16_t permissive_lid = 0xffff; /* IBTA 4.1.2: no LID on RoCE */

/* The primary path of a REQ (IBTA 12.6.5: the GRH fields the active side
 * will use, as seen from it). */
struct cm_path {
    gid local_gid;
    gid remote_gid;
    uint32_t flow_label = 0;
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 64;
    uint8_t sl = 0;
    uint8_t packet_rate = 0;
    uint8_t local_ack_timeout = 0; /* the QP's ACK timeout exponent */
};

/* Private data to copy behind a message's fixed fields; at most the
 * message's private_len bytes (the rest stays zero). */
struct cm_private {
    const uint8_t *data = nullptr;
    size_t len = 0;
};

struct cm_req_params {
    uint32_t local_comm_id = 0;
    uint64_t service_id = 0;
    uint64_t local_ca_guid = 0;
    uint32_t local_qkey = 0; /* UD/RD only */
    uint32_t local_qpn = 0;
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    cm_transport transport = cm_transport::rc;
    uint8_t remote_cm_response_timeout = 20; /* CMA_CM_RESPONSE_TIMEOUT */
    uint8_t local_cm_response_timeout = 20;
    uint32_t starting_psn = 0;
    uint8_t retry_count = 7;
    uint8_t rnr_retry_count = 7;
    uint8_t max_cm_retries = 15; /* CMA_MAX_CM_RETRIES */
    uint8_t path_mtu = 5;        /* ibv_mtu: 5 = 4096 */
    bool srq = false;
    uint16_t pkey = 0xffff;
    cm_path path;
    cm_private private_data; /* REQ: rdma_cm's 36-byte IP header first, then the user's */
};

struct cm_rep_params {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;
    uint32_t starting_psn = 0;
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t target_ack_delay = 0;
    uint8_t failover_accepted = 0;
    bool e2e_flow_control = false;
    uint8_t rnr_retry_count = 7;
    bool srq = false;
    uint64_t local_ca_guid = 0;
    cm_private private_data;
};

/* Each writes mad (mad_size bytes) completely. */
void build_cm_req(uint8_t *mad, uint64_t tid, const cm_req_params &p);
void build_cm_rep(uint8_t *mad, uint64_t tid, const cm_rep_params &p);
void build_cm_rtu(uint8_t *mad, uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
                  cm_private pd = {});
void build_cm_dreq(uint8_t *mad, uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
                   uint32_t remote_qpn, cm_private pd = {});
void build_cm_drep(uint8_t *mad, uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
                   cm_private pd = {});
/* ari: the additional reject information (IBTA 12.6.7.2 table 103; at most
 * 72 bytes), its length in the reject info length field. */
void build_cm_rej(uint8_t *mad, uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
                  cm_msg_ref rejected, cm_rej_reason reason, cm_private pd = {},
                  cm_private ari = {});
void build_cm_mra(uint8_t *mad, uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
                  cm_msg_ref mraed, uint8_t service_timeout, cm_private pd = {});

/* SIDR (IBTA 12.11): a UD service's QPN and Q_Key for its service ID. */
void build_cm_sidr_req(uint8_t *mad, uint64_t tid, uint32_t request_id, uint64_t service_id,
                       cm_private pd = {});
void build_cm_sidr_rep(uint8_t *mad, uint64_t tid, uint32_t request_id, cm_sidr_status status,
                       uint32_t qpn, uint64_t service_id, uint32_t qkey, cm_private pd = {});

/* The other way: a received REQ or REP's fields as parameters (as seen from
 * its sender: its local comm ID, QPN and GID are its own). The private data
 * points into the message. build_cm_req(mad, tid, cm_req_params_of(m))
 * writes m again. */
cm_req_params cm_req_params_of(const cm_req &m);
cm_rep_params cm_rep_params_of(const cm_rep &m);

/* rdma_cm's IP header (IBTA A11, cma.c cma_hdr) for a REQ: the active
 * side's address and port and the passive side's address. IPv4 GIDs
 * (::ffff:a.b.c.d) give IP version 4 and the address in the last 4 bytes. */
void build_cma_ip_hdr(cma_ip_hdr &h, const gid &src, uint16_t src_port, const gid &dst);

} // namespace uroce

#endif

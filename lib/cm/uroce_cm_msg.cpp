/* SPDX-License-Identifier: BSD-3-Clause
 * Building the CM's messages (uroce_cm_msg.h).
 */
#include "uroce_cm_msg.h"

#include <algorithm>
#include <cstring>

namespace uroce {

namespace {

/* Zero the MAD, write its header, and return the message behind it. */
template <class Msg> Msg &start(uint8_t *mad, cm_attr attr, uint64_t tid) {
    std::memset(mad, 0, mad_size);
    make_cm_mad_hdr(*reinterpret_cast<mad_hdr *>(mad), attr, tid);
    return *reinterpret_cast<Msg *>(mad + mad_hdr_size);
}

void put_private(uint8_t *mad, cm_attr attr, cm_private pd) {
    const cm_attr_info &info = *cm_attr_lookup(uint16_t(attr));
    if (pd.data && pd.len)
        std::memcpy(mad + mad_hdr_size + info.private_offset, pd.data,
                    std::min<size_t>(pd.len, info.private_len));
}

template <class Msg>
void comm_ids_only(uint8_t *mad, cm_attr attr, uint64_t tid, uint32_t local, uint32_t remote,
                   cm_private pd) {
    Msg &m = start<Msg>(mad, attr, tid);
    m.set_local_comm_id(local);
    m.set_remote_comm_id(remote);
    put_private(mad, attr, pd);
}

} // namespace

void build_cm_req(uint8_t *mad, uint64_t tid, const cm_req_params &p) {
    cm_req &m = start<cm_req>(mad, cm_attr::req, tid);
    m.set_local_comm_id(p.local_comm_id);
    m.set_service_id(p.service_id);
    m.set_local_ca_guid(p.local_ca_guid);
    m.set_local_qkey(p.local_qkey);
    m.set_local_qpn(p.local_qpn);
    m.responder_resources = p.responder_resources;
    m.initiator_depth = p.initiator_depth;
    m.set_remote_cm_response_timeout(p.remote_cm_response_timeout);
    m.set_transport(p.transport);
    m.set_starting_psn(p.starting_psn);
    m.set_local_cm_response_timeout(p.local_cm_response_timeout);
    m.set_retry_count(p.retry_count);
    m.set_pkey(p.pkey);
    m.set_path_mtu(p.path_mtu);
    m.set_rnr_retry_count(p.rnr_retry_count);
    m.set_max_cm_retries(p.max_cm_retries);
    m.set_srq(p.srq);
    store_be16(m.primary_local_lid_be, permissive_lid);
    store_be16(m.primary_remote_lid_be, permissive_lid);
    m.set_local_gid(p.path.local_gid);
    m.set_remote_gid(p.path.remote_gid);
    m.set_flow(p.path.flow_label, p.path.packet_rate);
    m.primary_traffic_class = p.path.traffic_class;
    m.primary_hop_limit = p.path.hop_limit;
    m.set_sl(p.path.sl);
    m.set_local_ack_timeout(p.path.local_ack_timeout);
    put_private(mad, cm_attr::req, p.private_data);
}

void build_cm_rep(uint8_t *mad, uint64_t tid, const cm_rep_params &p) {
    cm_rep &m = start<cm_rep>(mad, cm_attr::rep, tid);
    m.set_local_comm_id(p.local_comm_id);
    m.set_remote_comm_id(p.remote_comm_id);
    m.set_local_qkey(p.local_qkey);
    m.set_local_qpn(p.local_qpn);
    m.set_starting_psn(p.starting_psn);
    m.responder_resources = p.responder_resources;
    m.initiator_depth = p.initiator_depth;
    m.set_target_ack_delay(p.target_ack_delay);
    m.set_failover_accepted(p.failover_accepted);
    m.set_e2e_flow_control(p.e2e_flow_control);
    m.set_rnr_retry_count(p.rnr_retry_count);
    m.set_srq(p.srq);
    m.set_local_ca_guid(p.local_ca_guid);
    put_private(mad, cm_attr::rep, p.private_data);
}

void build_cm_rtu(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, cm_private pd) {
    comm_ids_only<cm_rtu>(mad, cm_attr::rtu, tid, local, remote, pd);
}

void build_cm_drep(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, cm_private pd) {
    comm_ids_only<cm_drep>(mad, cm_attr::drep, tid, local, remote, pd);
}

void build_cm_dreq(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, uint32_t remote_qpn,
                   cm_private pd) {
    cm_dreq &m = start<cm_dreq>(mad, cm_attr::dreq, tid);
    m.set_local_comm_id(local);
    m.set_remote_comm_id(remote);
    m.set_remote_qpn(remote_qpn);
    put_private(mad, cm_attr::dreq, pd);
}

void build_cm_rej(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, cm_msg_ref rejected,
                  cm_rej_reason reason, cm_private pd, cm_private ari) {
    cm_rej &m = start<cm_rej>(mad, cm_attr::rej, tid);
    m.set_local_comm_id(local);
    m.set_remote_comm_id(remote);
    m.set_msg_rejected(rejected);
    m.set_reason(reason);
    const size_t ari_len = std::min(ari.len, sizeof(m.ari));
    if (ari_len) std::memcpy(m.ari, ari.data, ari_len);
    m.set_reject_info_length(uint8_t(ari_len));
    put_private(mad, cm_attr::rej, pd);
}

void build_cm_mra(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, cm_msg_ref mraed,
                  uint8_t service_timeout, cm_private pd) {
    cm_mra &m = start<cm_mra>(mad, cm_attr::mra, tid);
    m.set_local_comm_id(local);
    m.set_remote_comm_id(remote);
    m.set_msg_mraed(mraed);
    m.set_service_timeout(service_timeout);
    put_private(mad, cm_attr::mra, pd);
}

void build_cm_sidr_req(uint8_t *mad, uint64_t tid, uint32_t request_id, uint64_t service_id,
                       cm_private pd) {
    cm_sidr_req &m = start<cm_sidr_req>(mad, cm_attr::sidr_req, tid);
    m.set_request_id(request_id);
    m.set_pkey(0xffff);
    m.set_service_id(service_id);
    put_private(mad, cm_attr::sidr_req, pd);
}

void build_cm_sidr_rep(uint8_t *mad, uint64_t tid, uint32_t request_id, cm_sidr_status status,
                       uint32_t qpn, uint64_t service_id, uint32_t qkey, cm_private pd) {
    cm_sidr_rep &m = start<cm_sidr_rep>(mad, cm_attr::sidr_rep, tid);
    m.set_request_id(request_id);
    m.status = uint8_t(status);
    m.set_qpn(qpn);
    m.set_service_id(service_id);
    m.set_qkey(qkey);
    put_private(mad, cm_attr::sidr_rep, pd);
}

cm_req_params cm_req_params_of(const cm_req &m) {
    cm_req_params p;
    p.local_comm_id = m.local_comm_id();
    p.service_id = m.service_id();
    p.local_ca_guid = m.local_ca_guid();
    p.local_qkey = m.local_qkey();
    p.local_qpn = m.local_qpn();
    p.responder_resources = m.responder_resources;
    p.initiator_depth = m.initiator_depth;
    p.transport = m.transport();
    p.remote_cm_response_timeout = m.remote_cm_response_timeout();
    p.local_cm_response_timeout = m.local_cm_response_timeout();
    p.starting_psn = m.starting_psn();
    p.retry_count = m.retry_count();
    p.rnr_retry_count = m.rnr_retry_count();
    p.max_cm_retries = m.max_cm_retries();
    p.path_mtu = m.path_mtu();
    p.srq = m.srq();
    p.pkey = m.pkey();
    p.path.local_gid = m.local_gid();
    p.path.remote_gid = m.remote_gid();
    p.path.flow_label = m.flow_label();
    p.path.traffic_class = m.primary_traffic_class;
    p.path.hop_limit = m.primary_hop_limit;
    p.path.sl = m.sl();
    p.path.packet_rate = m.packet_rate();
    p.path.local_ack_timeout = m.local_ack_timeout();
    p.private_data = {m.private_data, sizeof(m.private_data)};
    return p;
}

cm_rep_params cm_rep_params_of(const cm_rep &m) {
    cm_rep_params p;
    p.local_comm_id = m.local_comm_id();
    p.remote_comm_id = m.remote_comm_id();
    p.local_qkey = m.local_qkey();
    p.local_qpn = m.local_qpn();
    p.starting_psn = m.starting_psn();
    p.responder_resources = m.responder_resources;
    p.initiator_depth = m.initiator_depth;
    p.target_ack_delay = m.target_ack_delay();
    p.failover_accepted = m.failover_accepted();
    p.e2e_flow_control = m.e2e_flow_control();
    p.rnr_retry_count = m.rnr_retry_count();
    p.srq = m.srq();
    p.local_ca_guid = m.local_ca_guid();
    p.private_data = {m.private_data, sizeof(m.private_data)};
    return p;
}

void build_cma_ip_hdr(cma_ip_hdr &h, const gid &src, uint16_t src_port, const gid &dst) {
    std::memset(&h, 0, sizeof(h));
    h.version = cma_ip_hdr::cma_version;
    const bool v4 = src.is_ipv4_mapped();
    h.set_ip_ver(v4 ? 4 : 6);
    h.set_src_port(src_port);
    if (v4) {
        std::memcpy(h.src_addr + 12, src.raw.data() + 12, 4);
        std::memcpy(h.dst_addr + 12, dst.raw.data() + 12, 4);
    } else {
        std::memcpy(h.src_addr, src.raw.data(), 16);
        std::memcpy(h.dst_addr, dst.raw.data(), 16);
    }
}

} // namespace uroce

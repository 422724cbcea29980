/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --flows: per (source, destination, destination QP) statistics.
 *
 * PSN accounting follows IBTA 9.7.1 (24-bit, modular; "ahead" means within
 * the next 2^23). It is done for RC and UC requests, and for the packets of
 * multi-packet RDMA READ responses; UD and CNP PSNs are not sequenced, and
 * ACK PSNs are coalesced by design (one ACK covers many requests), so those
 * are counted but not checked.
 */
#ifndef UROCE_DUMP_FLOWS_H
#define UROCE_DUMP_FLOWS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dump_analyze.h"

namespace uroce::dump {

/* Signed distance a - b between 24-bit PSNs, in [-2^23, 2^23). */
static inline constexpr int32_t psn_distance(uint32_t a, uint32_t b) {
    return int32_t(((a - b) << 8)) >> 8;
}

struct flow_key {
    uint8_t ip_version = 0;
    uint8_t src[16] = {};
    uint8_t dst[16] = {};
    uint32_t dest_qp = 0;
    /* Requests and responses to one QP are separate rows: when both ends use
     * the same QPN (rxe often does), one row would mix two PSN spaces. */
    enum role_t : uint8_t { request, response, other } role = other;
    bool operator<(const flow_key &o) const;
};

struct flow_stats {
    uint64_t first_frame = 0;
    uint64_t packets = 0;
    uint64_t wire_bytes = 0;    /* frame bytes as on the wire */
    uint64_t payload_bytes = 0; /* RoCE payload, pad excluded */
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint64_t psn_gaps = 0;        /* forward jumps past the next expected PSN */
    uint64_t psn_missing = 0;     /* PSNs skipped by those jumps */
    uint64_t retransmissions = 0; /* PSNs at or behind one already seen */
    uint64_t acks = 0;
    uint64_t naks = 0;     /* NAK syndromes (PSN sequence error, invalid request, ...) */
    uint64_t rnr_naks = 0; /* RNR NAK syndromes */
    uint64_t cnps = 0;
    uint8_t transport_mask = 0; /* bit per ib_transport value seen */

    /* Sequencing state. */
    bool have_req = false;
    uint32_t next_req_psn = 0; /* the next in-order request PSN */
    uint32_t req_slack = 0;    /* extra PSNs a READ request may have consumed */
    bool have_read_resp = false;
    uint32_t last_read_resp_psn = 0;
    bool read_resp_open = false; /* inside a multi-packet READ response */
};

class flow_table {
  public:
    /* Counts a RoCE packet (parsed, or snapped with its BTH readable); others are ignored. */
    void add(const frame_report &r);
    /* Flows in order of first appearance. */
    std::vector<std::pair<flow_key, const flow_stats *>> flows() const;
    /* The --flows table (header + one line per flow). */
    std::string format() const;

  private:
    std::map<flow_key, flow_stats> map_;
};

} // namespace uroce::dump

#endif

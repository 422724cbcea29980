/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --flows.
 */
#include "dump_flows.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "dump_format.h"
#include <uroce/hdr.h>
#include <uroce/opcode.h>

namespace uroce::dump {

bool flow_key::operator<(const flow_key &o) const {
    if (ip_version != o.ip_version) return ip_version < o.ip_version;
    if (int c = std::memcmp(src, o.src, sizeof src)) return c < 0;
    if (int c = std::memcmp(dst, o.dst, sizeof dst)) return c < 0;
    if (dest_qp != o.dest_qp) return dest_qp < o.dest_qp;
    return role < o.role;
}

namespace {

/* The smallest IB path MTU (IBTA 9.7.2.1): a READ of dma_length bytes
 * consumes at most ceil(dma_length / 256) PSNs (rxe_req.c update_wqe_psn
 * uses the real MTU, which we do not know from the capture). */
inline constexpr uint32_t min_pmtu = 256;

void sequence_request(flow_stats &s, const roce_summary &r, const opcode_info &info) {
    if (!s.have_req) {
        s.have_req = true;
    } else {
        int32_t d = psn_distance(r.psn, s.next_req_psn);
        if (d < 0) {
            /* At or behind what was already sent: go-back-N or a duplicate. */
            s.retransmissions++;
            return;
        }
        if (uint32_t(d) > s.req_slack) {
            s.psn_gaps++;
            s.psn_missing += uint32_t(d) - s.req_slack;
        }
    }
    uint32_t span = 1;
    if (info.has(op_flag::read) && r.has_reth)
        span = std::max<uint32_t>(1, (r.dma_length + min_pmtu - 1) / min_pmtu);
    s.next_req_psn = (r.psn + 1) & 0xffffff;
    s.req_slack = span - 1;
}

void sequence_read_response(flow_stats &s, const roce_summary &r, const opcode_info &info) {
    bool starts = info.has(op_flag::first); /* FIRST or ONLY */
    if (s.have_read_resp) {
        int32_t d = psn_distance(r.psn, s.last_read_resp_psn);
        if (!starts && s.read_resp_open) {
            if (d <= 0)
                s.retransmissions++;
            else if (d > 1) {
                s.psn_gaps++;
                s.psn_missing += uint32_t(d - 1);
            }
        } else if (d <= 0) {
            /* A READ response restarting at or behind a PSN already answered:
             * the requester retried the READ. */
            s.retransmissions++;
        }
    }
    s.have_read_resp = true;
    s.last_read_resp_psn = r.psn;
    s.read_resp_open = !info.has(op_flag::last);
}

std::string pad_right(std::string s, size_t w) {
    if (s.size() < w) s.append(w - s.size(), ' ');
    return s;
}

std::string kind_text(uint8_t mask, flow_key::role_t role) {
    std::string s;
    switch (mask) {
    case 1u << uint8_t(ib_transport::rc):
        s = "RC";
        break;
    case 1u << uint8_t(ib_transport::uc):
        s = "UC";
        break;
    case 1u << uint8_t(ib_transport::ud):
        s = "UD";
        break;
    case 1u << uint8_t(ib_transport::cnp):
        return "CNP";
    default:
        s = "mixed";
    }
    return s + (role == flow_key::request ? " req" : role == flow_key::response ? " resp" : "");
}

} // namespace

void flow_table::add(const frame_report &r) {
    if (r.cls != frame_class::roce || r.repaired) return;
    if (!r.parsed && !(r.snapped && r.raw_bth)) return;
    /* Snapped packets: the analyzer filled r.roce from the captured bytes. */
    const roce_summary &sum = r.roce;
    const opcode_info &info = opcode_lookup(sum.opcode);
    if (!info.is_valid()) return;
    flow_key k;
    k.ip_version = r.addrs.ip_version;
    std::memcpy(k.src, r.addrs.src_ip, sizeof k.src);
    std::memcpy(k.dst, r.addrs.dst_ip, sizeof k.dst);
    k.dest_qp = sum.dest_qp;
    k.role = info.has(op_flag::request)    ? flow_key::request
             : info.has(op_flag::response) ? flow_key::response
                                           : flow_key::other;
    auto [it, fresh] = map_.try_emplace(k);
    flow_stats &s = it->second;
    if (fresh) {
        s.first_frame = r.number;
        s.first_psn = sum.psn;
    }
    s.packets++;
    s.wire_bytes += r.wire_len;
    s.payload_bytes += sum.payload_len;
    s.last_psn = sum.psn;
    s.transport_mask |= uint8_t(1u << uint8_t(info.transport));

    if (sum.has_aeth) {
        switch (aeth_syndrome::type(sum.syndrome)) {
        case aeth_syndrome::type_ack:
            if (info.has(op_flag::ack) || info.has(op_flag::atomic)) s.acks++;
            break;
        case aeth_syndrome::type_rnr_nak:
            s.rnr_naks++;
            break;
        case aeth_syndrome::type_nak:
            s.naks++;
            break;
        default:
            break;
        }
    }
    if (info.transport == ib_transport::cnp) s.cnps++;
    /* PSNs are sequenced for RC/UC only. */
    if (info.transport != ib_transport::rc && info.transport != ib_transport::uc) return;
    if (info.has(op_flag::request))
        sequence_request(s, sum, info);
    else if (info.has(op_flag::read) && info.has(op_flag::response))
        sequence_read_response(s, sum, info);
}

std::vector<std::pair<flow_key, const flow_stats *>> flow_table::flows() const {
    std::vector<std::pair<flow_key, const flow_stats *>> v;
    v.reserve(map_.size());
    for (const auto &[k, s] : map_)
        v.emplace_back(k, &s);
    std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
        return a.second->first_frame < b.second->first_frame;
    });
    return v;
}

std::string flow_table::format() const {
    auto v = flows();
    std::vector<std::string> names;
    size_t w = 4;
    for (const auto &[k, s] : v) {
        char qp[16];
        std::snprintf(qp, sizeof qp, "0x%06x", k.dest_qp);
        names.push_back(ip_text(k.src, k.ip_version) + " -> " + ip_text(k.dst, k.ip_version) +
                        " QP=" + qp);
        w = std::max(w, names.back().size());
    }
    std::string out = pad_right("flow", w);
    out += "  kind     packets      bytes    payload  first_psn   last_psn  gaps(missing)  "
           "retrans   acks   naks  rnr_naks  cnps\n";
    for (size_t i = 0; i < v.size(); i++) {
        const flow_stats &s = *v[i].second;
        char gaps[48], line[256];
        std::snprintf(gaps, sizeof gaps, "%" PRIu64 "(%" PRIu64 ")", s.psn_gaps, s.psn_missing);
        std::snprintf(line, sizeof line,
                      "  %-8s %8" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10u %10u %14s %8" PRIu64
                      " %6" PRIu64 " %6" PRIu64 " %9" PRIu64 " %5" PRIu64 "\n",
                      kind_text(s.transport_mask, v[i].first.role).c_str(), s.packets, s.wire_bytes,
                      s.payload_bytes, s.first_psn, s.last_psn, gaps, s.retransmissions, s.acks,
                      s.naks, s.rnr_naks, s.cnps);
        out += pad_right(names[i], w) + line;
    }
    return out;
}

} // namespace uroce::dump

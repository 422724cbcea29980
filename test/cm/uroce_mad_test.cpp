/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_mad.cpp and <uroce/cm_mad.h>: the CM MADs of a real rping
 * between two Linux rxe hosts (test/golden/rping_rdmacm.pcap) read field by
 * field as tshark decodes them, every setter the inverse of its getter on
 * those bytes, and each way a MAD is refused.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <uroce/cm_mad.h>
#include <uroce/parse.h>

#include "pcap_frames.h"

using namespace uroce;
using namespace uroce::test;

namespace {

struct cm_frame {
    uint64_t number;
    std::vector<uint8_t> mad; /* the 256 bytes after the DETH */
};

/* The UD SEND_ONLY frames to QP1 of the capture, with their MADs. */
std::vector<cm_frame> golden_cm_frames() {
    std::vector<cm_frame> out;
    std::string err;
    const auto frames = read_pcap_frames(golden_path("rping_rdmacm.pcap"), err);
    EXPECT_TRUE(err.empty()) << err;
    for (const captured_frame &f : frames) {
        roce_packet p;
        if (parse_frame_verified(f.bytes.data(), f.bytes.size(), p) != parse_error::ok) continue;
        if (p.bth()->dest_qp() != gsi_qpn || !p.deth()) continue;
        EXPECT_EQ(p.deth()->qkey(), gsi_qkey) << "frame " << f.number;
        EXPECT_EQ(p.bth()->pkey(), 0xffff) << "frame " << f.number;
        out.push_back({f.number, std::vector<uint8_t>(p.payload(), p.payload() + p.payload_len)});
    }
    return out;
}

TEST(cm_mad, rping_capture_is_req_rep_rtu_dreq_drep) {
    const auto frames = golden_cm_frames();
    ASSERT_EQ(frames.size(), 5u);
    const char *expect[] = {"REQ", "REP", "RTU", "DREQ", "DREP"};
    const char *tshark[] = {"ConnectRequest", "ConnectReply", "ReadyToUse", "DisconnectRequest",
                            "DisconnectReply"};
    for (size_t i = 0; i < frames.size(); i++) {
        cm_mad_view v;
        ASSERT_EQ(parse_cm_mad(frames[i].mad.data(), frames[i].mad.size(), v), mad_error::ok);
        EXPECT_STREQ(v.info->name, expect[i]);
        EXPECT_STREQ(v.info->long_name, tshark[i]);
        EXPECT_EQ(v.hdr->attr_mod(), 0u);
        EXPECT_EQ(v.hdr->status(), 0u);
    }
}

/* Frame 1 as tshark -V decodes it (tshark -r test/golden/rping_rdmacm.pcap
 * -Y frame.number==1 -V), but for the one word it misreads (below). */
TEST(cm_mad, rping_req_fields_as_tshark_reads_them) {
    const auto frames = golden_cm_frames();
    ASSERT_FALSE(frames.empty());
    cm_mad_view v;
    ASSERT_EQ(parse_cm_mad(frames[0].mad.data(), frames[0].mad.size(), v), mad_error::ok);
    EXPECT_EQ(v.hdr->tid(), 0x000000026b379295ull);
    const cm_req &r = *v.as<cm_req>();
    EXPECT_EQ(r.local_comm_id(), 0x9592376bu);
    EXPECT_EQ(r.service_id(), 0x0000000001061c06ull); /* RDMA_PS_TCP, rping's port 7174 */
    EXPECT_TRUE(service_id_is_ip(r.service_id()));
    EXPECT_EQ(service_id_port_space(r.service_id()), rdma_port_space::tcp);
    EXPECT_EQ(service_id_port(r.service_id()), 7174);
    EXPECT_EQ(r.local_ca_guid(), 0x505400fffe4d000cull);
    EXPECT_EQ(r.local_qkey(), 0u);
    EXPECT_EQ(r.local_qpn(), 0x14u);
    EXPECT_EQ(r.responder_resources, 1);
    EXPECT_EQ(r.initiator_depth, 1);
    EXPECT_EQ(r.remote_cm_response_timeout(), 0x14); /* CMA_CM_RESPONSE_TIMEOUT 20 */
    EXPECT_EQ(r.transport(), cm_transport::rc);
    EXPECT_EQ(r.starting_psn(), 0x3c0ef9u);
    EXPECT_EQ(r.local_cm_response_timeout(), 0x14);
    EXPECT_EQ(r.retry_count(), 7);
    EXPECT_EQ(r.pkey(), 0xffff);
    EXPECT_EQ(r.path_mtu(), 5); /* 4096 */
    EXPECT_EQ(r.rnr_retry_count(), 7);
    EXPECT_EQ(r.max_cm_retries(), 15); /* CMA_MAX_CM_RETRIES */
    EXPECT_FALSE(r.srq());
    EXPECT_EQ(r.local_gid().to_string(), "::ffff:10.77.0.12");
    EXPECT_EQ(r.remote_gid().to_string(), "::ffff:10.77.0.11");
    /* Bytes 88..91 of the message are 6e f8 60 00: the flow label is their
     * top 20 bits and the packet rate the low 6 bits of byte 91 (IBTA table
     * 99; Linux ibta_vol1_c12.h CM_REQ_PRIMARY_FLOW_LABEL (88, 20 bits),
     * CM_REQ_PRIMARY_PACKET_RATE (91, 6 bits)). Wireshark 4.0 reads this one
     * word a byte early and shows flow label 0x006ef, packet rate 0x2e. */
    EXPECT_EQ(r.flow_label(), 0x6ef86u);
    EXPECT_EQ(r.packet_rate(), 0);
    EXPECT_EQ(r.primary_traffic_class, 0);
    EXPECT_EQ(r.primary_hop_limit, 0x40);
    EXPECT_EQ(r.sl(), 0);
    EXPECT_EQ(r.local_ack_timeout(), 0x13);
    const auto &ip = *reinterpret_cast<const cma_ip_hdr *>(v.private_data());
    EXPECT_EQ(ip.version, cma_ip_hdr::cma_version);
    EXPECT_EQ(ip.ip_ver(), 4);
    EXPECT_EQ(ip.src_port(), 0xbc80);
    EXPECT_EQ(ip.src_ipv4(), 0x0a4d000cu);
    EXPECT_EQ(ip.dst_ipv4(), 0x0a4d000bu);
}

/* The comm IDs tie the five messages into one connection and its end. */
TEST(cm_mad, rping_comm_ids_pair_up) {
    const auto frames = golden_cm_frames();
    ASSERT_EQ(frames.size(), 5u);
    cm_mad_view req, rep, rtu, dreq, drep;
    ASSERT_EQ(parse_cm_mad(frames[0].mad.data(), mad_size, req), mad_error::ok);
    ASSERT_EQ(parse_cm_mad(frames[1].mad.data(), mad_size, rep), mad_error::ok);
    ASSERT_EQ(parse_cm_mad(frames[2].mad.data(), mad_size, rtu), mad_error::ok);
    ASSERT_EQ(parse_cm_mad(frames[3].mad.data(), mad_size, dreq), mad_error::ok);
    ASSERT_EQ(parse_cm_mad(frames[4].mad.data(), mad_size, drep), mad_error::ok);
    const uint32_t client = req.as<cm_req>()->local_comm_id();
    const uint32_t server = rep.as<cm_rep>()->local_comm_id();
    EXPECT_EQ(rep.as<cm_rep>()->remote_comm_id(), client);
    EXPECT_EQ(rep.hdr->tid(), req.hdr->tid()); /* a REP answers with the REQ's TID */
    EXPECT_EQ(rtu.as<cm_rtu>()->local_comm_id(), client);
    EXPECT_EQ(rtu.as<cm_rtu>()->remote_comm_id(), server);
    /* rping's client (10.77.0.12, the REQ's sender) disconnected */
    EXPECT_EQ(dreq.as<cm_dreq>()->local_comm_id(), client);
    EXPECT_EQ(dreq.as<cm_dreq>()->remote_comm_id(), server);
    EXPECT_EQ(dreq.as<cm_dreq>()->remote_qpn(), rep.as<cm_rep>()->local_qpn());
    EXPECT_EQ(drep.as<cm_drep>()->local_comm_id(), server);
    EXPECT_EQ(drep.as<cm_drep>()->remote_comm_id(), client);
    EXPECT_EQ(drep.hdr->tid(), dreq.hdr->tid());
    EXPECT_EQ(rep.as<cm_rep>()->starting_psn() & 0xffffff, rep.as<cm_rep>()->starting_psn());
    EXPECT_EQ(rep.as<cm_rep>()->rnr_retry_count(), 7);
}

/* Building the REQ field by field with the setters gives the captured bytes. */
TEST(cm_mad, setters_rebuild_the_captured_req) {
    const auto frames = golden_cm_frames();
    ASSERT_FALSE(frames.empty());
    cm_mad_view v;
    ASSERT_EQ(parse_cm_mad(frames[0].mad.data(), mad_size, v), mad_error::ok);
    const cm_req &in = *v.as<cm_req>();
    std::vector<uint8_t> buf(mad_size, 0);
    auto &h = *reinterpret_cast<mad_hdr *>(buf.data());
    make_cm_mad_hdr(h, cm_attr::req, v.hdr->tid());
    auto &out = *reinterpret_cast<cm_req *>(buf.data() + mad_hdr_size);
    out.set_local_comm_id(in.local_comm_id());
    out.set_service_id(in.service_id());
    out.set_local_ca_guid(in.local_ca_guid());
    out.set_local_qkey(in.local_qkey());
    out.set_local_qpn(in.local_qpn());
    out.responder_resources = in.responder_resources;
    out.initiator_depth = in.initiator_depth;
    out.set_remote_cm_response_timeout(in.remote_cm_response_timeout());
    out.set_transport(in.transport());
    out.set_starting_psn(in.starting_psn());
    out.set_local_cm_response_timeout(in.local_cm_response_timeout());
    out.set_retry_count(in.retry_count());
    out.set_pkey(in.pkey());
    out.set_path_mtu(in.path_mtu());
    out.set_rnr_retry_count(in.rnr_retry_count());
    out.set_max_cm_retries(in.max_cm_retries());
    std::memcpy(out.primary_local_lid_be, in.primary_local_lid_be,
                4); /* 0xffff: RoCE has no LIDs */
    out.set_local_gid(in.local_gid());
    out.set_remote_gid(in.remote_gid());
    out.set_flow(in.flow_label(), in.packet_rate());
    out.primary_traffic_class = in.primary_traffic_class;
    out.primary_hop_limit = in.primary_hop_limit;
    out.set_sl(in.sl());
    out.set_local_ack_timeout(in.local_ack_timeout());
    std::memcpy(out.private_data, in.private_data, sizeof(out.private_data));
    EXPECT_EQ(buf, frames[0].mad);
}

TEST(cm_mad, refusals) {
    const auto frames = golden_cm_frames();
    ASSERT_FALSE(frames.empty());
    cm_mad_view v;
    auto with = [&](size_t off, uint8_t byte) {
        std::vector<uint8_t> m = frames[0].mad;
        m[off] = byte;
        return parse_cm_mad(m.data(), m.size(), v);
    };
    EXPECT_EQ(parse_cm_mad(frames[0].mad.data(), mad_size - 1, v), mad_error::short_mad);
    EXPECT_EQ(with(0, 2), mad_error::bad_base_version);
    EXPECT_EQ(with(1, 0x03), mad_error::not_cm_class); /* the SA's class */
    EXPECT_EQ(with(2, 1), mad_error::bad_class_version);
    EXPECT_EQ(with(3, 0x81), mad_error::bad_method); /* GetResp() */
    EXPECT_EQ(with(17, 0x1b), mad_error::unknown_attribute);
    EXPECT_EQ(with(17, 0x10), mad_error::ok);
    for (unsigned e = 0; e < unsigned(mad_error::count); e++)
        EXPECT_STRNE(mad_error_name(mad_error(e)), "unknown");
}

TEST(cm_mad, attribute_table_is_consistent) {
    for (const cm_attr_info &i : cm_attr_table) {
        EXPECT_EQ(cm_attr_lookup(uint16_t(i.attr)), &i);
        EXPECT_LE(i.private_offset + i.private_len, cm_msg_size) << i.name;
    }
    EXPECT_EQ(cm_attr_lookup(0x0001), nullptr);
    /* a REQ carries rdma_cm's 36-byte IP header in its 92 bytes: 56 left for the user */
    EXPECT_EQ(cm_attr_lookup(uint16_t(cm_attr::req))->private_len - sizeof(cma_ip_hdr), 56u);
}

} // namespace

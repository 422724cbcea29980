/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_msg.cpp: the builders write what rxe wrote (the REQ, REP,
 * RTU, DREQ and DREP of test/golden/rping_rdmacm.pcap rebuilt byte for byte
 * from their fields), and tshark, an independent decoder, reads every
 * message we build (REJ and MRA too, which the capture lacks) as the CM
 * message it is, with no malformed or expert error.
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <uroce/build.h>
#include <uroce/capture.h>
#include <uroce/cm_mad.h>
#include <uroce/parse.h>

#include "pcap_frames.h"
#include "uroce_cm_msg.h"

using namespace uroce;
using namespace uroce::test;

namespace {

std::vector<std::vector<uint8_t>> golden_mads() {
    std::vector<std::vector<uint8_t>> out;
    std::string err;
    for (const captured_frame &f : read_pcap_frames(golden_path("rping_rdmacm.pcap"), err)) {
        roce_packet p;
        if (parse_frame_verified(f.bytes.data(), f.bytes.size(), p) != parse_error::ok) continue;
        if (p.bth()->dest_qp() == gsi_qpn && p.deth())
            out.emplace_back(p.payload(), p.payload() + p.payload_len);
    }
    EXPECT_TRUE(err.empty()) << err;
    return out;
}

cm_mad_view view(const std::vector<uint8_t> &mad) {
    cm_mad_view v;
    EXPECT_EQ(parse_cm_mad(mad.data(), mad.size(), v), mad_error::ok);
    return v;
}

/* cm_req_params_of() reads every field, build_cm_req() writes them back. */
TEST(cm_msg, rebuilds_the_captured_req) {
    const auto mads = golden_mads();
    ASSERT_EQ(mads.size(), 5u);
    const cm_mad_view v = view(mads[0]);
    const cm_req &r = *v.as<cm_req>();
    const cm_req_params p = cm_req_params_of(r);
    /* rdma_cm's IP header, rebuilt from the addresses it carries */
    const auto &ip = *reinterpret_cast<const cma_ip_hdr *>(v.private_data());
    cma_ip_hdr h;
    build_cma_ip_hdr(h, r.local_gid(), ip.src_port(), r.remote_gid());
    EXPECT_EQ(std::memcmp(&h, &ip, sizeof(h)), 0);
    std::vector<uint8_t> mad(mad_size);
    build_cm_req(mad.data(), v.hdr->tid(), p);
    EXPECT_EQ(mad, mads[0]);
}

TEST(cm_msg, rebuilds_the_captured_rep_rtu_dreq_drep) {
    const auto mads = golden_mads();
    ASSERT_EQ(mads.size(), 5u);
    std::vector<uint8_t> mad(mad_size);

    const cm_mad_view rv = view(mads[1]);
    const cm_rep_params p = cm_rep_params_of(*rv.as<cm_rep>());
    build_cm_rep(mad.data(), rv.hdr->tid(), p);
    EXPECT_EQ(mad, mads[1]);

    const cm_mad_view tv = view(mads[2]);
    build_cm_rtu(mad.data(), tv.hdr->tid(), tv.as<cm_rtu>()->local_comm_id(),
                 tv.as<cm_rtu>()->remote_comm_id());
    EXPECT_EQ(mad, mads[2]);

    const cm_mad_view dv = view(mads[3]);
    const cm_dreq &d = *dv.as<cm_dreq>();
    build_cm_dreq(mad.data(), dv.hdr->tid(), d.local_comm_id(), d.remote_comm_id(), d.remote_qpn());
    EXPECT_EQ(mad, mads[3]);

    const cm_mad_view pv = view(mads[4]);
    build_cm_drep(mad.data(), pv.hdr->tid(), pv.as<cm_drep>()->local_comm_id(),
                  pv.as<cm_drep>()->remote_comm_id());
    EXPECT_EQ(mad, mads[4]);
}

TEST(cm_msg, private_data_is_cut_to_the_message) {
    std::vector<uint8_t> mad(mad_size), pd(300, 0xab);
    build_cm_rtu(mad.data(), 1, 2, 3, {pd.data(), pd.size()});
    for (size_t i = mad_hdr_size + 8; i < mad_size; i++)
        ASSERT_EQ(mad[i], 0xab) << i;
    build_cm_mra(mad.data(), 1, 2, 3, cm_msg_ref::req, 24, {pd.data(), 4});
    const cm_mad_view v = view(mad);
    EXPECT_EQ(v.as<cm_mra>()->service_timeout(), 24);
    EXPECT_EQ(v.as<cm_mra>()->msg_mraed(), cm_msg_ref::req);
    EXPECT_EQ(v.private_data()[3], 0xab);
    EXPECT_EQ(v.private_data()[4], 0);
}

/* Every message in a frame as rxe would send it (UD SEND_ONLY to QP1,
 * Q_Key 0x80010000), read back by tshark. */
TEST(cm_msg, tshark_decodes_every_message) {
    if (std::system("command -v tshark >/dev/null 2>&1") != 0) GTEST_SKIP() << "no tshark";
    const std::string pcap = ::testing::TempDir() + "uroce_cm_msg_test.pcap";
    std::string err;
    auto w = pcap_writer::open(pcap, err);
    ASSERT_TRUE(w) << err;

    roce_path path;
    path.sgid = gid::from_ipv4(0x0a4d000c);
    path.dgid = gid::from_ipv4(0x0a4d000b);
    const uint8_t src_mac[6] = {0x52, 0x54, 0, 0x4d, 0, 0x0c},
                  dst_mac[6] = {0x52, 0x54, 0, 0x4d, 0, 0x0b};
    std::memcpy(path.src_mac, src_mac, 6);
    std::memcpy(path.dst_mac, dst_mac, 6);
    path_set_ip_version(path);
    bth_fields b;
    b.opcode = uint8_t(ib_opcode::ud_send_only);
    b.dest_qp = gsi_qpn;
    b.ack_req = true;
    ext_fields x;
    x.qkey = gsi_qkey;
    x.src_qp = gsi_qpn;

    cm_req_params rq;
    rq.local_comm_id = 0x11223344;
    rq.service_id = rdma_service_id(rdma_port_space::tcp, 7174);
    rq.local_qpn = 0x11;
    rq.starting_psn = 0x123456;
    rq.path.local_gid = path.sgid;
    rq.path.remote_gid = path.dgid;
    cma_ip_hdr ip;
    build_cma_ip_hdr(ip, path.sgid, 0xbc80, path.dgid);
    rq.private_data = {reinterpret_cast<const uint8_t *>(&ip), sizeof(ip)};
    cm_rep_params rp;
    rp.local_comm_id = 0x55667788;
    rp.remote_comm_id = rq.local_comm_id;
    rp.local_qpn = 0x12;

    std::vector<std::vector<uint8_t>> mads(9, std::vector<uint8_t>(mad_size));
    build_cm_req(mads[0].data(), 7, rq);
    build_cm_mra(mads[1].data(), 7, rp.local_comm_id, rq.local_comm_id, cm_msg_ref::req, 24);
    build_cm_rep(mads[2].data(), 7, rp);
    build_cm_rtu(mads[3].data(), 7, rq.local_comm_id, rp.local_comm_id);
    build_cm_dreq(mads[4].data(), 8, rq.local_comm_id, rp.local_comm_id, 0x12);
    build_cm_drep(mads[5].data(), 8, rp.local_comm_id, rq.local_comm_id);
    build_cm_rej(mads[6].data(), 9, 0x99, 0x11223344, cm_msg_ref::req,
                 cm_rej_reason::invalid_service_id);
    uint8_t sidr_priv[sizeof(cma_ip_hdr)];
    std::memcpy(sidr_priv, &ip, sizeof(ip));
    build_cm_sidr_req(mads[7].data(), 10, 0x77, rdma_service_id(rdma_port_space::udp, 7174),
                      {sidr_priv, sizeof(sidr_priv)});
    build_cm_sidr_rep(mads[8].data(), 10, 0x77, cm_sidr_status::valid, 0x13,
                      rdma_service_id(rdma_port_space::udp, 7174), 0x01234567);
    std::vector<uint8_t> frame(frame_length(path, b.opcode, mad_size));
    for (size_t i = 0; i < mads.size(); i++) {
        b.psn = uint32_t(i);
        size_t n = build_frame(frame.data(), path, b, x, mads[i].data(), mad_size, uint16_t(i));
        w->write(frame.data(), uint32_t(n));
    }
    w.reset();

    const std::string cmd = "tshark -r " + pcap +
                            " -T fields -e _ws.col.Info -e _ws.expert -e _ws.malformed 2>/dev/null";
    FILE *f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::vector<std::string> lines;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f))
        lines.emplace_back(buf);
    pclose(f);
    const char *want[] = {"CM: ConnectRequest", "CM: MsgRcptAck",        "CM: ConnectReply",
                          "CM: ReadyToUse",     "CM: DisconnectRequest", "CM: DisconnectReply",
                          "CM: ConnectReject",  "CM: ServiceIDResReq",   "CM: ServiceIDResReqResp"};
    ASSERT_EQ(lines.size(), std::size(want));
    for (size_t i = 0; i < lines.size(); i++) {
        EXPECT_NE(lines[i].find(want[i]), std::string::npos) << lines[i];
        /* the Info column first, then empty expert and malformed columns */
        EXPECT_EQ(lines[i].find('\t'), lines[i].rfind('\t') - 1) << "tshark flagged: " << lines[i];
    }
    std::remove(pcap.c_str());
}

TEST(cm_msg, sidr_messages_read_back) {
    uint8_t mad[mad_size];
    const uint8_t pd[3] = {9, 8, 7};
    build_cm_sidr_req(mad, 0x200000077ull, 0x77, 0x0000000001111c06ull, {pd, sizeof(pd)});
    cm_mad_view v;
    ASSERT_EQ(parse_cm_mad(mad, mad_size, v), mad_error::ok);
    EXPECT_EQ(v.info->attr, cm_attr::sidr_req);
    EXPECT_EQ(v.hdr->tid(), 0x200000077ull);
    EXPECT_EQ(v.as<cm_sidr_req>()->request_id(), 0x77u);
    EXPECT_EQ(v.as<cm_sidr_req>()->pkey(), 0xffff);
    EXPECT_EQ(v.as<cm_sidr_req>()->service_id(), 0x0000000001111c06ull);
    EXPECT_EQ(v.private_data()[2], 7);
    build_cm_sidr_rep(mad, 5, 0x77, cm_sidr_status::rejected, 0x123456, 0x0000000001111c06ull,
                      0x01234567, {pd, sizeof(pd)});
    ASSERT_EQ(parse_cm_mad(mad, mad_size, v), mad_error::ok);
    const cm_sidr_rep &r = *v.as<cm_sidr_rep>();
    EXPECT_EQ(r.request_id(), 0x77u);
    EXPECT_EQ(r.status, uint8_t(cm_sidr_status::rejected));
    EXPECT_EQ(r.qpn(), 0x123456u);
    EXPECT_EQ(r.qkey(), 0x01234567u);
    EXPECT_EQ(r.service_id(), 0x0000000001111c06ull);
    EXPECT_EQ(v.private_data()[0], 9);
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * The InfiniBand Communication Manager on the wire: MADs on the GSI QP.
 *
 * On RoCEv2, rdma_cm connects QPs with the IB CM (IBTA vol. 1 chapter 12;
 * Linux drivers/infiniband/core/cm.c, cm_msgs.h, cma.c). Its messages are
 * 256-byte Management Datagrams (IBTA 13.4) carried as UD SEND_ONLY to QP1,
 * the General Services Interface QP, with P_Key 0xFFFF and Q_Key 0x80010000
 * in the DETH (rxe drops QP1 traffic with any other Q_Key):
 *
 *   Eth | IP | UDP 4791 | BTH (UD SEND_ONLY, dest QP 1) | DETH | MAD (256) | ICRC
 *   MAD = mad_hdr (24: base version 1, class 0x07 CM, class version 2,
 *         method SEND, TID, attribute ID) + the CM message (232)
 *
 * Every struct here is a byte array (alignof 1, sizeof = its wire size)
 * with accessors named by byte order, as <uroce/hdr.h>; bit fields are read
 * and written through their shift and width, named beside them. The
 * offsets are IBTA 12.6's tables (REQ table 99, MRA 100, REJ 101, REP 103,
 * RTU 104, DREQ 105, DREP 106, SIDR_REQ 110, SIDR_REP 111), checked against
 * a real rxe capture (test/golden/rping_rdmacm.pcap) and tshark.
 */
#ifndef UROCE_CM_MAD_H
#define UROCE_CM_MAD_H

#include <uroce/export.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <uroce/byteorder.h>
#include <uroce/gid.h>

namespace uroce {

/* ---------------------------------------------------------------- the GSI QP */

inline constexpr uint32_t gsi_qpn = 1;            /* IBTA 3.5.3: QP1 */
inline constexpr uint32_t gsi_qkey = 0x80010000u; /* IBTA 13.4.6.1: the GSI's well-known Q_Key */
inline constexpr size_t mad_size = 256;           /* IBTA 13.4.2: every MAD */
inline constexpr size_t mad_hdr_size = 24;        /* the common header */
inline constexpr size_t cm_msg_size = mad_size - mad_hdr_size; /* 232 */

/* A small helper for the sub-byte fields: bits [shift, shift + width) of a byte. */
static inline constexpr uint8_t cm_bits(uint8_t byte, unsigned shift, unsigned width) {
    return uint8_t((byte >> shift) & ((1u << width) - 1));
}
static inline constexpr uint8_t cm_set_bits(uint8_t byte, unsigned shift, unsigned width,
                                            unsigned v) {
    const unsigned mask = ((1u << width) - 1) << shift;
    return uint8_t((byte & ~mask) | ((v << shift) & mask));
}

/* ---------------------------------------------------------------- MAD header (IBTA 13.4.3) */

inline constexpr uint8_t mad_base_version = 1;
inline constexpr uint8_t mad_class_cm = 0x07;    /* IB_MGMT_CLASS_CM */
inline constexpr uint8_t cm_class_version = 2;   /* IB_CM_CLASS_VERSION */
inline constexpr uint8_t mad_method_send = 0x03; /* the CM sends every message with Send() */

struct mad_hdr {
    uint8_t base_version;
    uint8_t mgmt_class;
    uint8_t class_version;
    uint8_t method; /* R (7) | method (6:0) */
    uint8_t status_be[2];
    uint8_t class_specific_be[2];
    uint8_t tid_be[8];
    uint8_t attr_id_be[2];
    uint8_t resv_be[2];
    uint8_t attr_mod_be[4];

    uint16_t status() const { return load_be16(status_be); }
    uint64_t tid() const { return load_be64(tid_be); }
    uint16_t attr_id() const { return load_be16(attr_id_be); }
    uint32_t attr_mod() const { return load_be32(attr_mod_be); }
    void set_status(uint16_t v) { store_be16(status_be, v); }
    void set_tid(uint64_t v) { store_be64(tid_be, v); }
    void set_attr_id(uint16_t v) { store_be16(attr_id_be, v); }
    void set_attr_mod(uint32_t v) { store_be32(attr_mod_be, v); }
};

/* ---------------------------------------------------------------- CM attributes (IBTA 12.6) */

enum class cm_attr : uint16_t {
    req = 0x0010,
    mra = 0x0011,
    rej = 0x0012,
    rep = 0x0013,
    rtu = 0x0014,
    dreq = 0x0015,
    drep = 0x0016,
    sidr_req = 0x0017,
    sidr_rep = 0x0018,
    lap = 0x0019,
    apr = 0x001a,
};

/* One row per CM attribute: its names and where its private data lies in
 * the 232-byte message. Data, not a switch spread over files. */
struct cm_attr_info {
    cm_attr attr;
    const char *name;        /* "REQ" */
    const char *long_name;   /* tshark's: "ConnectRequest" */
    uint16_t private_offset; /* in the message (after the MAD header) */
    uint16_t private_len;
};

inline constexpr std::array<cm_attr_info, 11> cm_attr_table = {{
    {cm_attr::req, "REQ", "ConnectRequest", 140, 92},
    {cm_attr::mra, "MRA", "MsgRcptAck", 10, 222},
    {cm_attr::rej, "REJ", "ConnectReject", 84, 148},
    {cm_attr::rep, "REP", "ConnectReply", 36, 196},
    {cm_attr::rtu, "RTU", "ReadyToUse", 8, 224},
    {cm_attr::dreq, "DREQ", "DisconnectRequest", 12, 220},
    {cm_attr::drep, "DREP", "DisconnectReply", 8, 224},
    {cm_attr::sidr_req, "SIDR_REQ", "ServiceIDResReq", 16, 216},
    {cm_attr::sidr_rep, "SIDR_REP", "ServiceIDResReqResp", 96, 136},
    {cm_attr::lap, "LAP", "LoadAlternatePath", 140, 92}, /* not sent by uroce: RoCE has no APM */
    {cm_attr::apr, "APR", "AlternatePathResponse", 148, 84},
}};

/* The row of an attribute ID; nullptr if it is not a CM attribute. */
static inline constexpr const cm_attr_info *cm_attr_lookup(uint16_t attr_id) {
    for (const cm_attr_info &i : cm_attr_table)
        if (uint16_t(i.attr) == attr_id) return &i;
    return nullptr;
}

/* ---------------------------------------------------------------- service IDs (IBTA A3.2.2, cma.c)
 */

/* rdma_cm's port spaces. An IP service ID is (ps << 16) | port (cma.c
 * cma_get_service_id), so its top five bytes are 0x0000000001: RDMA_PS_TCP
 * port 7174 is 0x0000000001061c06. */
enum class rdma_port_space : uint16_t { ipoib = 0x0002, ib = 0x013f, tcp = 0x0106, udp = 0x0111 };

static inline constexpr uint64_t rdma_service_id(rdma_port_space ps, uint16_t port) {
    return uint64_t(uint16_t(ps)) << 16 | port;
}
static inline constexpr bool service_id_is_ip(uint64_t sid) {
    return (sid >> 24) == 0x01;
}
static inline constexpr rdma_port_space service_id_port_space(uint64_t sid) {
    return rdma_port_space(uint16_t(sid >> 16));
}
static inline constexpr uint16_t service_id_port(uint64_t sid) {
    return uint16_t(sid);
}
static_assert(rdma_service_id(rdma_port_space::tcp, 7174) == 0x0000000001061c06ull);
static_assert(service_id_is_ip(0x0000000001061c06ull) && !service_id_is_ip(0x1000000000000001ull));

/* ---------------------------------------------------------------- REQ (IBTA 12.6.5, table 99) */

enum class cm_transport : uint8_t { rc = 0, uc = 1, rd = 2 };

struct cm_req {
    uint8_t local_comm_id_be[4];
    uint8_t resv0[4];
    uint8_t service_id_be[8];
    uint8_t local_ca_guid_be[8];
    uint8_t resv1[4];
    uint8_t local_qkey_be[4];
    uint8_t local_qpn_be[3];
    uint8_t responder_resources;
    uint8_t local_eecn_be[3];
    uint8_t initiator_depth;
    uint8_t remote_eecn_be[3];
    uint8_t byte43; /* remote CM response timeout (7:3) | transport service type (2:1) | e2e flow
                       ctl (0) */
    uint8_t starting_psn_be[3];
    uint8_t byte47; /* local CM response timeout (7:3) | retry count (2:0) */
    uint8_t pkey_be[2];
    uint8_t byte50; /* path MTU (7:4) | RDC exists (3) | RNR retry count (2:0) */
    uint8_t byte51; /* max CM retries (7:4) | SRQ (3) | extended transport type (2:0) */
    uint8_t primary_local_lid_be[2];
    uint8_t primary_remote_lid_be[2];
    uint8_t primary_local_gid[16];
    uint8_t primary_remote_gid[16];
    uint8_t primary_flow_be[4]; /* flow label (31:12) | reserved (11:6) | packet rate (5:0) */
    uint8_t primary_traffic_class;
    uint8_t primary_hop_limit;
    uint8_t byte94; /* SL (7:4) | subnet local (3) */
    uint8_t byte95; /* local ACK timeout (7:3) */
    uint8_t alternate_path[44];
    uint8_t private_data[92];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint64_t service_id() const { return load_be64(service_id_be); }
    uint64_t local_ca_guid() const { return load_be64(local_ca_guid_be); }
    uint32_t local_qkey() const { return load_be32(local_qkey_be); }
    uint32_t local_qpn() const { return load_be24(local_qpn_be); }
    uint8_t remote_cm_response_timeout() const { return cm_bits(byte43, 3, 5); }
    cm_transport transport() const { return cm_transport(cm_bits(byte43, 1, 2)); }
    uint32_t starting_psn() const { return load_be24(starting_psn_be); }
    uint8_t local_cm_response_timeout() const { return cm_bits(byte47, 3, 5); }
    uint8_t retry_count() const { return cm_bits(byte47, 0, 3); }
    uint16_t pkey() const { return load_be16(pkey_be); }
    uint8_t path_mtu() const { return cm_bits(byte50, 4, 4); } /* ibv_mtu: 1..5 */
    uint8_t rnr_retry_count() const { return cm_bits(byte50, 0, 3); }
    uint8_t max_cm_retries() const { return cm_bits(byte51, 4, 4); }
    bool srq() const { return cm_bits(byte51, 3, 1); }
    gid local_gid() const { return gid::from_bytes(primary_local_gid); }
    gid remote_gid() const { return gid::from_bytes(primary_remote_gid); }
    uint32_t flow_label() const { return load_be32(primary_flow_be) >> 12; }
    uint8_t packet_rate() const { return uint8_t(load_be32(primary_flow_be) & 0x3f); }
    uint8_t sl() const { return cm_bits(byte94, 4, 4); }
    uint8_t local_ack_timeout() const { return cm_bits(byte95, 3, 5); }

    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_service_id(uint64_t v) { store_be64(service_id_be, v); }
    void set_local_ca_guid(uint64_t v) { store_be64(local_ca_guid_be, v); }
    void set_local_qkey(uint32_t v) { store_be32(local_qkey_be, v); }
    void set_local_qpn(uint32_t v) { store_be24(local_qpn_be, v); }
    void set_remote_cm_response_timeout(uint8_t v) { byte43 = cm_set_bits(byte43, 3, 5, v); }
    void set_transport(cm_transport t) { byte43 = cm_set_bits(byte43, 1, 2, uint8_t(t)); }
    void set_starting_psn(uint32_t v) { store_be24(starting_psn_be, v); }
    void set_local_cm_response_timeout(uint8_t v) { byte47 = cm_set_bits(byte47, 3, 5, v); }
    void set_retry_count(uint8_t v) { byte47 = cm_set_bits(byte47, 0, 3, v); }
    void set_pkey(uint16_t v) { store_be16(pkey_be, v); }
    void set_path_mtu(uint8_t v) { byte50 = cm_set_bits(byte50, 4, 4, v); }
    void set_rnr_retry_count(uint8_t v) { byte50 = cm_set_bits(byte50, 0, 3, v); }
    void set_max_cm_retries(uint8_t v) { byte51 = cm_set_bits(byte51, 4, 4, v); }
    void set_srq(bool v) { byte51 = cm_set_bits(byte51, 3, 1, v); }
    void set_local_gid(const gid &g) { std::memcpy(primary_local_gid, g.raw.data(), 16); }
    void set_remote_gid(const gid &g) { std::memcpy(primary_remote_gid, g.raw.data(), 16); }
    void set_flow(uint32_t flow_label, uint8_t packet_rate) {
        store_be32(primary_flow_be, (flow_label & 0xfffff) << 12 | (packet_rate & 0x3f));
    }
    void set_sl(uint8_t v) { byte94 = cm_set_bits(byte94, 4, 4, v); }
    void set_local_ack_timeout(uint8_t v) { byte95 = cm_set_bits(byte95, 3, 5, v); }
};

/* ---------------------------------------------------------------- REP (IBTA 12.6.8, table 103) */

struct cm_rep {
    uint8_t local_comm_id_be[4];
    uint8_t remote_comm_id_be[4];
    uint8_t local_qkey_be[4];
    uint8_t local_qpn_be[3];
    uint8_t resv0;
    uint8_t local_eecn_be[3];
    uint8_t resv1;
    uint8_t starting_psn_be[3];
    uint8_t resv2;
    uint8_t responder_resources;
    uint8_t initiator_depth;
    uint8_t byte26; /* target ACK delay (7:3) | failover accepted (2:1) | e2e flow ctl (0) */
    uint8_t byte27; /* RNR retry count (7:5) | SRQ (4) */
    uint8_t local_ca_guid_be[8];
    uint8_t private_data[196];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint32_t remote_comm_id() const { return load_be32(remote_comm_id_be); }
    uint32_t local_qkey() const { return load_be32(local_qkey_be); }
    uint32_t local_qpn() const { return load_be24(local_qpn_be); }
    uint32_t starting_psn() const { return load_be24(starting_psn_be); }
    uint8_t target_ack_delay() const { return cm_bits(byte26, 3, 5); }
    uint8_t failover_accepted() const { return cm_bits(byte26, 1, 2); }
    bool e2e_flow_control() const { return cm_bits(byte26, 0, 1); }
    uint8_t rnr_retry_count() const { return cm_bits(byte27, 5, 3); }
    bool srq() const { return cm_bits(byte27, 4, 1); }
    uint64_t local_ca_guid() const { return load_be64(local_ca_guid_be); }

    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_remote_comm_id(uint32_t v) { store_be32(remote_comm_id_be, v); }
    void set_local_qkey(uint32_t v) { store_be32(local_qkey_be, v); }
    void set_local_qpn(uint32_t v) { store_be24(local_qpn_be, v); }
    void set_starting_psn(uint32_t v) { store_be24(starting_psn_be, v); }
    void set_target_ack_delay(uint8_t v) { byte26 = cm_set_bits(byte26, 3, 5, v); }
    void set_failover_accepted(uint8_t v) { byte26 = cm_set_bits(byte26, 1, 2, v); }
    void set_e2e_flow_control(bool v) { byte26 = cm_set_bits(byte26, 0, 1, v); }
    void set_rnr_retry_count(uint8_t v) { byte27 = cm_set_bits(byte27, 5, 3, v); }
    void set_srq(bool v) { byte27 = cm_set_bits(byte27, 4, 1, v); }
    void set_local_ca_guid(uint64_t v) { store_be64(local_ca_guid_be, v); }
};

/* ---------------------------------------------------------------- RTU, DREP (tables 104, 106) */

/* Both are the two comm IDs and private data. */
struct cm_rtu {
    uint8_t local_comm_id_be[4];
    uint8_t remote_comm_id_be[4];
    uint8_t private_data[224];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint32_t remote_comm_id() const { return load_be32(remote_comm_id_be); }
    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_remote_comm_id(uint32_t v) { store_be32(remote_comm_id_be, v); }
};
using cm_drep = cm_rtu;

/* ---------------------------------------------------------------- DREQ (table 105) */

struct cm_dreq {
    uint8_t local_comm_id_be[4];
    uint8_t remote_comm_id_be[4];
    uint8_t remote_qpn_be[3]; /* remote QPN/EECN */
    uint8_t resv;
    uint8_t private_data[220];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint32_t remote_comm_id() const { return load_be32(remote_comm_id_be); }
    uint32_t remote_qpn() const { return load_be24(remote_qpn_be); }
    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_remote_comm_id(uint32_t v) { store_be32(remote_comm_id_be, v); }
    void set_remote_qpn(uint32_t v) { store_be24(remote_qpn_be, v); }
};

/* ---------------------------------------------------------------- REJ (table 101) */

/* Which message a REJ or an MRA answers (IBTA 12.6.6, 12.6.7). */
enum class cm_msg_ref : uint8_t { req = 0, rep = 1, other = 2 };

/* Reject reasons (IBTA 12.6.7.2 table 102; ib_cm.h enum ib_cm_rej_reason). */
enum class cm_rej_reason : uint16_t {
    no_qp = 1,
    no_eec = 2,
    no_resources = 3,
    timeout = 4,
    unsupported = 5,
    invalid_comm_id = 6,
    invalid_comm_instance = 7,
    invalid_service_id = 8, /* nobody listens: what rdma_cm reports as "connection refused" */
    invalid_transport_type = 9,
    stale_conn = 10,
    rdc_not_exist = 11,
    invalid_gid = 12,
    invalid_lid = 13,
    invalid_sl = 14,
    invalid_traffic_class = 15,
    invalid_hop_limit = 16,
    invalid_packet_rate = 17,
    invalid_alt_gid = 18,
    invalid_alt_lid = 19,
    invalid_alt_sl = 20,
    invalid_alt_traffic_class = 21,
    invalid_alt_hop_limit = 22,
    invalid_alt_packet_rate = 23,
    port_cm_redirect = 24,
    port_redirect = 25,
    invalid_mtu = 26,
    insufficient_resp_resources = 27,
    consumer_defined = 28,
    invalid_rnr_retry = 29,
    dup_local_comm_id = 30,
    invalid_class_version = 31,
    invalid_flow_label = 32,
    invalid_alt_flow_label = 33,
};

/* "REQ", "REP", "other" */
static inline constexpr const char *cm_msg_ref_name(cm_msg_ref r) {
    return r == cm_msg_ref::req ? "REQ" : r == cm_msg_ref::rep ? "REP" : "other";
}

/* The reasons' names, as ib_cm_rej_reason_msg() words them; "reserved" past the table. */
static inline constexpr const char *cm_rej_reason_name(uint16_t reason) {
    constexpr const char *names[] = {
        "reserved",
        "no QP",
        "no EEC",
        "no resources",
        "timeout",
        "unsupported request",
        "invalid comm ID",
        "invalid comm instance",
        "invalid service ID",
        "invalid transport type",
        "stale connection",
        "RDC does not exist",
        "invalid GID",
        "invalid LID",
        "invalid SL",
        "invalid traffic class",
        "invalid hop limit",
        "invalid packet rate",
        "invalid alternate GID",
        "invalid alternate LID",
        "invalid alternate SL",
        "invalid alternate traffic class",
        "invalid alternate hop limit",
        "invalid alternate packet rate",
        "port CM redirect",
        "port redirect",
        "invalid MTU",
        "insufficient responder resources",
        "consumer defined",
        "invalid RNR retry",
        "duplicate local comm ID",
        "invalid class version",
        "invalid flow label",
        "invalid alternate flow label",
    };
    return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "reserved";
}

struct cm_rej {
    uint8_t local_comm_id_be[4];
    uint8_t remote_comm_id_be[4];
    uint8_t byte8; /* message rejected (7:6) */
    uint8_t byte9; /* reject info length (7:1) */
    uint8_t reason_be[2];
    uint8_t ari[72]; /* additional reject information */
    uint8_t private_data[148];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint32_t remote_comm_id() const { return load_be32(remote_comm_id_be); }
    cm_msg_ref msg_rejected() const { return cm_msg_ref(cm_bits(byte8, 6, 2)); }
    uint8_t reject_info_length() const { return cm_bits(byte9, 1, 7); }
    uint16_t reason() const { return load_be16(reason_be); }
    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_remote_comm_id(uint32_t v) { store_be32(remote_comm_id_be, v); }
    void set_msg_rejected(cm_msg_ref v) { byte8 = cm_set_bits(byte8, 6, 2, uint8_t(v)); }
    void set_reject_info_length(uint8_t v) { byte9 = cm_set_bits(byte9, 1, 7, v); }
    void set_reason(cm_rej_reason v) { store_be16(reason_be, uint16_t(v)); }
};

/* ---------------------------------------------------------------- MRA (table 100) */

struct cm_mra {
    uint8_t local_comm_id_be[4];
    uint8_t remote_comm_id_be[4];
    uint8_t byte8; /* message MRAed (7:6) */
    uint8_t byte9; /* service timeout (7:3): the sender needs 4.096 us * 2^t more */
    uint8_t private_data[222];

    uint32_t local_comm_id() const { return load_be32(local_comm_id_be); }
    uint32_t remote_comm_id() const { return load_be32(remote_comm_id_be); }
    cm_msg_ref msg_mraed() const { return cm_msg_ref(cm_bits(byte8, 6, 2)); }
    uint8_t service_timeout() const { return cm_bits(byte9, 3, 5); }
    void set_local_comm_id(uint32_t v) { store_be32(local_comm_id_be, v); }
    void set_remote_comm_id(uint32_t v) { store_be32(remote_comm_id_be, v); }
    void set_msg_mraed(cm_msg_ref v) { byte8 = cm_set_bits(byte8, 6, 2, uint8_t(v)); }
    void set_service_timeout(uint8_t v) { byte9 = cm_set_bits(byte9, 3, 5, v); }
};

/* ---------------------------------------------------------------- SIDR (tables 110, 111) */

struct cm_sidr_req {
    uint8_t request_id_be[4];
    uint8_t pkey_be[2];
    uint8_t resv[2];
    uint8_t service_id_be[8];
    uint8_t private_data[216];

    uint32_t request_id() const { return load_be32(request_id_be); }
    uint16_t pkey() const { return load_be16(pkey_be); }
    uint64_t service_id() const { return load_be64(service_id_be); }
    void set_request_id(uint32_t v) { store_be32(request_id_be, v); }
    void set_pkey(uint16_t v) { store_be16(pkey_be, v); }
    void set_service_id(uint64_t v) { store_be64(service_id_be, v); }
};

/* SIDR_REP status (IBTA 12.11.2 table 112). */
enum class cm_sidr_status : uint8_t {
    valid = 0,
    service_id_not_supported = 1,
    rejected = 2,
    no_qp = 3,
    redirect = 4,
    unsupported_version = 5,
};

struct cm_sidr_rep {
    uint8_t request_id_be[4];
    uint8_t status;
    uint8_t additional_info_length;
    uint8_t resv0[2];
    uint8_t qpn_be[3];
    uint8_t resv1;
    uint8_t service_id_be[8];
    uint8_t qkey_be[4];
    uint8_t additional_info[72];
    uint8_t private_data[136];

    uint32_t request_id() const { return load_be32(request_id_be); }
    uint32_t qpn() const { return load_be24(qpn_be); }
    uint64_t service_id() const { return load_be64(service_id_be); }
    uint32_t qkey() const { return load_be32(qkey_be); }
    void set_request_id(uint32_t v) { store_be32(request_id_be, v); }
    void set_qpn(uint32_t v) { store_be24(qpn_be, v); }
    void set_service_id(uint64_t v) { store_be64(service_id_be, v); }
    void set_qkey(uint32_t v) { store_be32(qkey_be, v); }
};

/* ---------------------------------------------------------------- rdma_cm's IP header (IBTA A11)
 */

/* The first 36 bytes of a REQ's (and SIDR_REQ's) private data when the
 * service ID is an IP one (cma.c struct cma_hdr): rdma_cm's addresses. The
 * user's private data follows: 56 bytes at most in a REQ. */
struct cma_ip_hdr {
    uint8_t version;    /* CMA_VERSION 0x00: major (7:4) | minor (3:0) */
    uint8_t ip_version; /* 4 or 6 in (7:4) */
    uint8_t src_port_be[2];
    uint8_t src_addr[16]; /* IPv4: the last 4 bytes */
    uint8_t dst_addr[16];

    static constexpr uint8_t cma_version = 0x00;

    uint8_t ip_ver() const { return cm_bits(ip_version, 4, 4); }
    uint16_t src_port() const { return load_be16(src_port_be); }
    uint32_t src_ipv4() const { return load_be32(src_addr + 12); }
    uint32_t dst_ipv4() const { return load_be32(dst_addr + 12); }
    void set_ip_ver(uint8_t v) { ip_version = cm_set_bits(ip_version, 4, 4, v); }
    void set_src_port(uint16_t v) { store_be16(src_port_be, v); }
};

/* ---------------------------------------------------------------- sizes and layout checks */

#define UROCE_CHECK_MAD(type, size)                                                                \
    static_assert(sizeof(type) == (size), #type " has the wrong wire size");                       \
    static_assert(alignof(type) == 1, #type " must be overlayable at any offset")

UROCE_CHECK_MAD(mad_hdr, mad_hdr_size);
UROCE_CHECK_MAD(cm_req, cm_msg_size);
UROCE_CHECK_MAD(cm_rep, cm_msg_size);
UROCE_CHECK_MAD(cm_rtu, cm_msg_size);
UROCE_CHECK_MAD(cm_dreq, cm_msg_size);
UROCE_CHECK_MAD(cm_rej, cm_msg_size);
UROCE_CHECK_MAD(cm_mra, cm_msg_size);
UROCE_CHECK_MAD(cm_sidr_req, cm_msg_size);
UROCE_CHECK_MAD(cm_sidr_rep, cm_msg_size);
UROCE_CHECK_MAD(cma_ip_hdr, 36);
#undef UROCE_CHECK_MAD
/* The table's private data offsets are the structs' (IBTA 12.6). */
static_assert(offsetof(cm_req, private_data) == cm_attr_lookup(0x10)->private_offset);
static_assert(offsetof(cm_req, primary_local_gid) == 56 &&
              offsetof(cm_req, primary_hop_limit) == 93);
static_assert(offsetof(cm_rep, private_data) == cm_attr_lookup(0x13)->private_offset);
static_assert(offsetof(cm_rej, private_data) == cm_attr_lookup(0x12)->private_offset);
static_assert(offsetof(cm_mra, private_data) == cm_attr_lookup(0x11)->private_offset);
static_assert(offsetof(cm_dreq, private_data) == cm_attr_lookup(0x15)->private_offset);
static_assert(offsetof(cm_sidr_req, private_data) == cm_attr_lookup(0x17)->private_offset);
static_assert(offsetof(cm_sidr_rep, private_data) == cm_attr_lookup(0x18)->private_offset);

/* ---------------------------------------------------------------- parsing */

/* Why a MAD was not accepted as a CM message; each has a counter where the
 * CM receives MADs, and a name in uroce-dump. */
enum class mad_error : uint8_t {
    ok,
    short_mad,         /* fewer than 256 bytes after the DETH */
    bad_base_version,  /* not 1 */
    not_cm_class,      /* another management class (SA, PerfMgt, ...): not ours */
    bad_class_version, /* CM class version other than 2 */
    bad_method,        /* not Send() (the CM uses no other) */
    unknown_attribute, /* not one of cm_attr_table */
    count
};
UROCE_API const char *mad_error_name(mad_error e);

/* A MAD seen as a CM message: the header and the message's bytes, in place. */
struct cm_mad_view {
    const mad_hdr *hdr = nullptr;
    const uint8_t *msg = nullptr; /* cm_msg_size bytes */
    const cm_attr_info *info = nullptr;

    template <class T> const T *as() const { return reinterpret_cast<const T *>(msg); }
    const uint8_t *private_data() const { return msg + info->private_offset; }
};

/* Check that the len bytes at p (a UD payload, after the DETH) are a CM
 * MAD; fills out on ok. Nothing is trusted before it returns ok. */
UROCE_API mad_error parse_cm_mad(const uint8_t *p, size_t len, cm_mad_view &out);

/* Write a MAD header for a CM message: base version 1, class CM, class
 * version 2, method Send(), status 0. */
static inline void make_cm_mad_hdr(mad_hdr &h, cm_attr attr, uint64_t tid) {
    std::memset(&h, 0, sizeof(h));
    h.base_version = mad_base_version;
    h.mgmt_class = mad_class_cm;
    h.class_version = cm_class_version;
    h.method = mad_method_send;
    h.set_tid(tid);
    h.set_attr_id(uint16_t(attr));
}

} // namespace uroce

#endif

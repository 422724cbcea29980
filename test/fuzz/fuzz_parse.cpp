/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: lib/wire's parser, ICRC and builder, and uroce-dump's
 * analyzer/formatters, on arbitrary frame bytes.
 *
 * Besides "no crash, no out-of-bounds read" (ASan/UBSan), it checks what
 * must hold for any input the parser accepts:
 *  - the offsets it returns are ordered and inside the input;
 *  - parse_frame_verified agrees with parse_frame + compute_icrc;
 *  - extract_fields -> write_headers -> finish_frame yields a frame that
 *    parses, verifies, carries the same payload and extracts to the same
 *    fields (the builder can express everything the parser reports).
 * The same bytes then go through the uroce-dump analyzer as Ethernet and as
 * raw IP, through every formatter, the flow table and the check summary.
 *
 * fuzz_replay.cpp gives this a main() so ordinary (gcc) builds replay the
 * corpus and test/fuzz/regressions as a test.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dump_analyze.h"
#include "dump_check.h"
#include "dump_flows.h"
#include "dump_format.h"
#include <uroce/build.h>
#include <uroce/parse.h>

namespace uroce::fuzz {
namespace {

#define FUZZ_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz_parse: %s:%d: requirement failed: %s\n", __FILE__,          \
                         __LINE__, #cond);                                                         \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

bool same_path(const roce_path &a, const roce_path &b) {
    if (std::memcmp(a.src_mac, b.src_mac, 6) || std::memcmp(a.dst_mac, b.dst_mac, 6)) return false;
    if (a.has_vlan != b.has_vlan || (a.has_vlan && a.vlan_tci != b.vlan_tci)) return false;
    if (a.ip_version != b.ip_version || !(a.sgid == b.sgid) || !(a.dgid == b.dgid)) return false;
    if (a.traffic_class != b.traffic_class || a.hop_limit != b.hop_limit) return false;
    if (a.ip_version == 6 && a.flow_label != b.flow_label) return false;
    if (a.ip_version == 4 && a.ipv4_dont_fragment != b.ipv4_dont_fragment) return false;
    return a.udp_sport == b.udp_sport && a.udp_checksum == b.udp_checksum;
}

bool same_bth(const bth_fields &a, const bth_fields &b) {
    return a.opcode == b.opcode && a.solicited == b.solicited && a.mig_req == b.mig_req &&
           a.ack_req == b.ack_req && a.fecn == b.fecn && a.becn == b.becn && a.tver == b.tver &&
           a.pkey == b.pkey && a.dest_qp == b.dest_qp && a.psn == b.psn;
}

bool same_ext(const ext_fields &a, const ext_fields &b) {
    return a.va == b.va && a.rkey == b.rkey && a.dma_length == b.dma_length &&
           a.syndrome == b.syndrome && a.msn == b.msn && a.swap_add == b.swap_add &&
           a.compare == b.compare && a.orig == b.orig && a.imm_raw == b.imm_raw &&
           a.qkey == b.qkey && a.src_qp == b.src_qp && a.feth_selectivity == b.feth_selectivity &&
           a.feth_placement == b.feth_placement;
}

void check_layout(const roce_packet &p, size_t size) {
    FUZZ_REQUIRE(p.info != nullptr && p.info->is_valid());
    FUZZ_REQUIRE(p.l3_offset < p.l4_offset && p.l4_offset < p.bth_offset);
    FUZZ_REQUIRE(p.bth_offset + sizeof(bth) == p.ext_offset);
    FUZZ_REQUIRE(p.ext_offset + p.info->ext_len == p.payload_offset);
    FUZZ_REQUIRE(p.payload_offset + p.payload_len + p.pad == p.icrc_offset);
    FUZZ_REQUIRE(p.icrc_offset + icrc_len == p.frame_len);
    FUZZ_REQUIRE(p.frame_len <= size);
    FUZZ_REQUIRE(p.pad <= 3);
}

void round_trip(const roce_packet &p) {
    roce_path path;
    bth_fields b;
    ext_fields x;
    uint16_t ip_id;
    extract_fields(p, path, b, x, ip_id);
    std::vector<uint8_t> out(frame_length(path, b.opcode, p.payload_len));
    size_t hl = write_headers(out.data(), path, b, x, p.payload_len, ip_id);
    FUZZ_REQUIRE(hl == header_length(path, b.opcode));
    if (p.payload_len) std::memcpy(out.data() + hl, p.payload(), p.payload_len);
    size_t n = finish_frame(out.data(), hl, p.payload_len, l2_length(path));
    FUZZ_REQUIRE(n == out.size());

    roce_packet q;
    parse_error e = parse_frame_verified(out.data(), n, q);
    if (e != parse_error::ok) {
        std::fprintf(stderr, "fuzz_parse: rebuilt frame does not parse: %s\n", parse_error_name(e));
        std::abort();
    }
    FUZZ_REQUIRE(q.opcode == p.opcode && q.payload_len == p.payload_len && q.pad == p.pad);
    FUZZ_REQUIRE(std::memcmp(q.payload(), p.payload(), p.payload_len) == 0);
    roce_path path2;
    bth_fields b2;
    ext_fields x2;
    uint16_t ip_id2;
    extract_fields(q, path2, b2, x2, ip_id2);
    FUZZ_REQUIRE(same_path(path, path2));
    FUZZ_REQUIRE(same_bth(b, b2));
    FUZZ_REQUIRE(same_ext(x, x2));
    FUZZ_REQUIRE(ip_id == ip_id2);
}

void fuzz_wire(const uint8_t *data, size_t size) {
    roce_packet p;
    parse_error e = parse_frame(data, size, p);
    FUZZ_REQUIRE(parse_error_name(e) != nullptr);
    roce_packet v;
    parse_error ev = parse_frame_verified(data, size, v);
    if (e != parse_error::ok) {
        FUZZ_REQUIRE(ev == e);
    } else {
        check_layout(p, size);
        bool icrc_ok = compute_icrc(p) == p.stored_icrc();
        FUZZ_REQUIRE(icrc_matches(p) == icrc_ok);
        FUZZ_REQUIRE(ev == (icrc_ok ? parse_error::ok : parse_error::bad_icrc));
        round_trip(p);
    }

    roce_packet r;
    if (parse_ip(data, size, r) == parse_error::ok) {
        FUZZ_REQUIRE(r.l3_offset == 0);
        check_layout(r, size);
        (void)compute_icrc(r);
    }
}

/* The analyzer classifies with its own light walk; it must agree with the
 * strict parser on every frame the parser accepts as it stands. */
void check_classification(const uint8_t *data, size_t size) {
    roce_packet p;
    bool verified = parse_frame_verified(data, size, p) == parse_error::ok;
    dump::analyzer an(dump::link_kind::ethernet, {});
    const dump::frame_report &r = an.analyze(1, data, uint32_t(size), uint32_t(size));
    if (verified) {
        FUZZ_REQUIRE(r.cls == dump::frame_class::roce && r.parsed && !r.repaired && r.icrc_ok);
        FUZZ_REQUIRE(r.error.empty() || r.error == dump::err_ipv4_checksum ||
                     r.error == dump::err_udp_checksum || r.error == dump::err_bth_reserved);
    }
    if (r.cls == dump::frame_class::roce && !r.snapped && !r.repaired && r.error.empty())
        FUZZ_REQUIRE(verified);
    if (r.repaired) FUZZ_REQUIRE(!verified && !r.error.empty());
}

void fuzz_dump(const uint8_t *data, size_t size) {
    check_classification(data, size);
    /* Half the time pretend the capture was snapped short of the wire length. */
    uint32_t caplen = uint32_t(size);
    uint32_t wire = caplen + ((size && (data[size - 1] & 1)) ? 17 : 0);
    for (dump::link_kind link : {dump::link_kind::ethernet, dump::link_kind::raw_ip,
                                 dump::link_kind::linux_sll, dump::link_kind::linux_sll2}) {
        dump::analyzer an(link, {});
        dump::flow_table flows;
        dump::check_summary check(true);
        for (uint32_t w : {caplen, wire}) {
            const dump::frame_report &rep = an.analyze(1, data, caplen, w);
            std::string line = dump::format_line(rep, "0.000000", {true});
            FUZZ_REQUIRE(!line.empty());
            (void)dump::format_fields(rep);
            flows.add(rep);
            check.add(rep);
        }
        (void)check.finish();
        (void)check.format();
        (void)flows.format();
    }
}

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Frames never exceed 64 KiB + L2; longer inputs only slow the fuzzer down. */
    if (size > 70000) return 0;
    uroce::fuzz::fuzz_wire(data, size);
    uroce::fuzz::fuzz_dump(data, size);
    return 0;
}

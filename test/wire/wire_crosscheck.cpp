/* SPDX-License-Identifier: BSD-3-Clause
 * The uroce side of the scapy cross-check (scapy_crosscheck.py drives it).
 *
 *   wire_crosscheck check PCAP FIELDS       parse every frame, compare with FIELDS
 *   wire_crosscheck generate N SEED PCAP FIELDS   build N random packets
 *
 * FIELDS has one line per frame of key=value pairs (decimal), the same keys
 * both ways; check compares every key the line names.
 */
#include <pcap/pcap.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pcap_frames.h"
#include <uroce/build.h>

namespace uroce {
namespace {

using field_map = std::map<std::string, uint64_t>;

field_map fields_of(const roce_packet &p, uint32_t computed_icrc) {
    field_map f;
    const struct bth *b = p.bth();
    f["opcode"] = p.opcode;
    f["ipver"] = p.ip_version;
    f["dqpn"] = b->dest_qp();
    f["psn"] = b->psn();
    f["se"] = b->se();
    f["mig"] = b->mig_req();
    f["pad"] = b->pad();
    f["ackreq"] = b->ack_req();
    f["pkey"] = b->pkey();
    f["fecn"] = b->fecn();
    f["becn"] = b->becn();
    f["plen"] = p.payload_len;
    f["sport"] = p.udp()->src_port();
    f["icrc"] = computed_icrc;
    if (auto *r = p.reth())
        f["reth.va"] = r->va(), f["reth.rkey"] = r->rkey(), f["reth.dlen"] = r->dma_length();
    if (auto *a = p.aeth()) f["aeth.syndrome"] = a->syndrome, f["aeth.msn"] = a->msn();
    if (auto *a = p.atomic_eth())
        f["atomic.va"] = a->va(), f["atomic.rkey"] = a->rkey(),
        f["atomic.swap_add"] = a->swap_add(), f["atomic.compare"] = a->compare();
    if (auto *a = p.atomic_ack_eth()) f["atomicack.orig"] = a->orig();
    if (auto *i = p.immdt()) f["imm"] = i->imm();
    if (auto *i = p.ieth()) f["ieth.rkey"] = i->rkey();
    if (auto *d = p.deth()) f["deth.qkey"] = d->qkey(), f["deth.srcqp"] = d->src_qp();
    return f;
}

std::string format(const field_map &f) {
    std::string s;
    for (auto &[k, v] : f)
        s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
    return s;
}

int check(const char *pcap_path, const char *fields_path) {
    std::string err;
    auto frames = test::read_pcap_frames(pcap_path, err);
    if (frames.empty()) {
        std::fprintf(stderr, "check: %s: %s\n", pcap_path, err.empty() ? "no frames" : err.c_str());
        return 2;
    }
    std::ifstream in(fields_path);
    std::string line;
    size_t bad = 0, n = 0;
    for (const auto &fr : frames) {
        if (!std::getline(in, line)) {
            std::fprintf(stderr, "check: %s has fewer lines than frames\n", fields_path);
            return 2;
        }
        n++;
        roce_packet p;
        parse_error e = parse_frame(fr.bytes.data(), fr.bytes.size(), p);
        if (e != parse_error::ok) {
            if (++bad <= 10)
                std::printf("frame %zu: parse error %s\n", fr.number, parse_error_name(e));
            continue;
        }
        field_map got = fields_of(p, compute_icrc(p));
        if (got["icrc"] != p.stored_icrc()) {
            if (++bad <= 10) std::printf("frame %zu: stored ICRC differs from ours\n", fr.number);
            continue;
        }
        std::istringstream kv(line);
        std::string tok;
        std::string diffs;
        while (kv >> tok) {
            auto eq = tok.find('=');
            std::string key = tok.substr(0, eq);
            uint64_t want = std::stoull(tok.substr(eq + 1));
            auto it = got.find(key);
            if (it == got.end())
                diffs += " " + key + " missing";
            else if (it->second != want)
                diffs += " " + key + ": want " + std::to_string(want) + " got " +
                         std::to_string(it->second);
        }
        if (!diffs.empty() && ++bad <= 10) std::printf("frame %zu:%s\n", fr.number, diffs.c_str());
    }
    std::printf("check: %zu frames, %zu disagree\n", n, bad);
    return bad ? 1 : 0;
}

int generate(size_t count, uint64_t seed, const char *pcap_path, const char *fields_path) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> valid;
    for (int op = 0; op < 256; op++)
        if (opcode_lookup(uint8_t(op)).is_valid()) valid.push_back(uint8_t(op));

    pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
    pcap_dumper_t *out = pcap_dump_open(dead, pcap_path);
    if (!out) {
        std::fprintf(stderr, "generate: %s: %s\n", pcap_path, pcap_geterr(dead));
        return 2;
    }
    std::ofstream fields(fields_path);
    std::vector<uint8_t> frame(9000), payload(4096);
    for (size_t i = 0; i < count; i++) {
        roce_path path;
        const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x11}, dmac[6] = {0x02, 0, 0, 0, 0, 0x12};
        std::memcpy(path.src_mac, smac, 6);
        std::memcpy(path.dst_mac, dmac, 6);
        if (rng() % 4 == 0) {
            gid s = *gid::parse("fd00:77::1"), d = *gid::parse("fd00:77::2");
            s.raw[15] = uint8_t(rng());
            d.raw[15] = uint8_t(rng());
            path.sgid = s, path.dgid = d;
            path.flow_label = uint32_t(rng()) & flow_label_mask;
        } else {
            path.sgid = gid::from_ipv4(0x0a4d0000 | uint32_t(rng() & 0xffff));
            path.dgid = gid::from_ipv4(0x0a4d0000 | uint32_t(rng() & 0xffff));
        }
        path_set_ip_version(path);
        path.traffic_class = uint8_t(rng());
        path.hop_limit = uint8_t(rng());
        path.udp_sport = uint16_t(0xc000 | (rng() & 0x3fff));

        bth_fields b;
        b.opcode = valid[rng() % valid.size()];
        const opcode_info &info = opcode_lookup(b.opcode);
        b.solicited = rng() & 1, b.mig_req = rng() & 1, b.ack_req = rng() & 1;
        b.fecn = rng() & 1, b.becn = rng() & 1;
        b.pkey = uint16_t(rng());
        b.dest_qp = uint32_t(rng()) & 0xffffff;
        b.psn = uint32_t(rng()) & 0xffffff;
        ext_fields x;
        x.va = rng(), x.rkey = uint32_t(rng()), x.dma_length = uint32_t(rng());
        x.syndrome = uint8_t(rng() & 0x7f), x.msn = uint32_t(rng()) & 0xffffff;
        x.swap_add = rng(), x.compare = rng(), x.orig = rng(), x.imm_raw = uint32_t(rng());
        x.qkey = uint32_t(rng()), x.src_qp = uint32_t(rng()) & 0xffffff;
        uint32_t len = 0;
        if (info.has(op_flag::atomic_write))
            len = 8;
        else if (info.has(op_flag::payload))
            len = uint32_t(rng() % 4097);
        for (uint32_t j = 0; j < len; j++)
            payload[j] = uint8_t(rng());

        size_t n = build_frame(frame.data(), path, b, x, payload.data(), len, uint16_t(i));
        struct pcap_pkthdr h = {};
        h.ts.tv_sec = long(i / 1000);
        h.ts.tv_usec = long(i % 1000);
        h.caplen = h.len = uint32_t(n);
        pcap_dump(reinterpret_cast<u_char *>(out), &h, frame.data());

        roce_packet p;
        if (parse_frame_verified(frame.data(), n, p) != parse_error::ok) {
            std::fprintf(stderr, "generate: our own packet %zu does not parse\n", i + 1);
            return 1;
        }
        fields << format(fields_of(p, compute_icrc(p))) << "\n";
    }
    pcap_dump_close(out);
    pcap_close(dead);
    return 0;
}

} // namespace
} // namespace uroce

int main(int argc, char **argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "check" && argc == 4) return uroce::check(argv[2], argv[3]);
    if (mode == "generate" && argc == 6)
        return uroce::generate(std::stoull(argv[2]), std::stoull(argv[3]), argv[4], argv[5]);
    std::fprintf(stderr, "usage: %s check PCAP FIELDS | generate N SEED PCAP FIELDS\n", argv[0]);
    return 2;
}

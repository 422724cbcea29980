/* SPDX-License-Identifier: BSD-3-Clause
 * The uroce side of pkt_crosscheck.py: frames as the transport's fast path
 * builds them (make_hdr_template + pkt_build, software IPv4 checksum from
 * the template's partial sum), for scapy and tshark to dissect.
 *
 *   pkt_crosscheck PCAP FIELDS
 *
 * IPv4 and IPv6, each without and with a VLAN tag; opcodes with every
 * extension header the transport sends; payloads 0..4096 with every pad;
 * random IP ids plus, per IPv4 shape and length, the id whose header
 * checksum is 0x0000 (the one's-complement edge). FIELDS has one line per
 * frame of key=value pairs (decimal) that the script checks against its own
 * dissection.
 */
#include <pcap/pcap.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "uroce_pkt.h"
#include <uroce/icrc.h>

namespace uroce {
namespace {

roce_path make_path(bool v6, bool vlan) {
    roce_path p;
    const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x21}, dmac[6] = {0x02, 0, 0, 0, 0, 0x22};
    std::memcpy(p.src_mac, smac, 6);
    std::memcpy(p.dst_mac, dmac, 6);
    p.has_vlan = vlan;
    p.vlan_tci = 0xa064; /* PCP 5, VLAN 100 */
    p.sgid = v6 ? *gid::parse("fd00:4791::1") : gid::from_ipv4(0xc0a84d01);
    p.dgid = v6 ? *gid::parse("fd00:4791::2") : gid::from_ipv4(0xc0a84d02);
    p.ip_version = v6 ? 6 : 4;
    p.traffic_class = 0x6a; /* DSCP 26, ECT(0) */
    p.hop_limit = 64;
    p.flow_label = 0x5a5a5;
    p.udp_sport = 0xd123;
    return p;
}

int run(const char *pcap_path, const char *fields_path) {
    rte_mempool *pool = rte_pktmbuf_pool_create("pkt_xc", 255, 0, 0,
                                                RTE_PKTMBUF_HEADROOM + 4096 + 256, SOCKET_ID_ANY);
    if (!pool) {
        std::fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
        return 2;
    }
    pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
    pcap_dumper_t *out = pcap_dump_open(dead, pcap_path);
    if (!out) {
        std::fprintf(stderr, "%s: %s\n", pcap_path, pcap_geterr(dead));
        return 2;
    }
    std::ofstream fields(fields_path);
    using O = ib_opcode;
    const O ops[] = {
        O::rc_send_only,           O::rc_send_first,         O::rc_send_last_imm,
        O::rc_send_only_inv,       O::rc_rdma_write_first,   O::rc_rdma_write_middle,
        O::rc_rdma_write_only_imm, O::rc_rdma_read_request,  O::rc_rdma_read_response_only,
        O::rc_acknowledge,         O::rc_atomic_acknowledge, O::rc_compare_swap,
        O::ud_send_only,           O::ud_send_only_imm};
    const uint32_t lens[] = {0, 1, 2, 3, 4, 64, 1001, 4096};
    std::vector<uint8_t> payload(4096);
    std::mt19937 rng(4791);
    for (auto &c : payload)
        c = uint8_t(rng());
    size_t n = 0;
    for (bool v6 : {false, true})
        for (bool vlan : {false, true}) {
            const roce_path path = make_path(v6, vlan);
            hdr_template t;
            make_hdr_template(t, path, false);
            for (O op : ops) {
                const opcode_info &info = opcode_lookup(to_u8(op));
                for (uint32_t len : lens) {
                    if (len && !info.has(op_flag::payload)) continue;
                    bth_fields b;
                    b.opcode = to_u8(op);
                    b.psn = uint32_t(rng()) & 0xffffff;
                    b.dest_qp = uint32_t(rng()) & 0xffffff;
                    b.ack_req = rng() & 1;
                    b.solicited = rng() & 1;
                    ext_fields x;
                    x.va = (uint64_t(rng()) << 32) | rng();
                    x.rkey = uint32_t(rng());
                    x.dma_length = len;
                    x.syndrome = 0x1f;
                    x.msn = uint32_t(rng()) & 0xffffff;
                    x.swap_add = 1, x.compare = 2, x.orig = 3;
                    x.imm_raw = uint32_t(rng());
                    x.qkey = 0x80010000, x.src_qp = uint32_t(rng()) & 0xffffff;
                    payload_src src;
                    src.flat = payload.data();
                    /* a random id, and for IPv4 the id that makes the checksum 0x0000 */
                    std::vector<uint16_t> ids = {uint16_t(rng())};
                    if (!v6) {
                        const uint16_t tot = uint16_t(frame_length(path, b.opcode, len) - t.l2_len);
                        for (uint32_t id = 0; id <= 0xffff; ++id)
                            if (ipv4_csum_finish(t.ip_csum_base, tot, uint16_t(id)) == 0) {
                                ids.push_back(uint16_t(id));
                                break;
                            }
                    }
                    for (uint16_t id : ids) {
                        rte_mbuf *m = pkt_build(pool, t, b, x, &src, len, id);
                        if (!m) {
                            std::fprintf(stderr, "pkt_build failed\n");
                            return 1;
                        }
                        const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
                        roce_packet p;
                        if (parse_frame_verified(f, m->pkt_len, p) != parse_error::ok) {
                            std::fprintf(stderr, "frame %zu does not parse here\n", n + 1);
                            return 1;
                        }
                        struct pcap_pkthdr h = {};
                        h.ts.tv_sec = long(n);
                        h.caplen = h.len = m->pkt_len;
                        pcap_dump(reinterpret_cast<u_char *>(out), &h, f);
                        ++n;
                        fields << "ipver=" << int(p.ip_version) << " vlan=" << int(p.vlan_count)
                               << " tci=" << (p.vlan_count ? p.vlan_tci[0] : 0)
                               << " ip_id=" << (v6 ? 0 : p.ipv4()->id())
                               << " ip_csum=" << (v6 ? 0 : p.ipv4()->checksum())
                               << " opcode=" << int(p.opcode) << " psn=" << p.psn()
                               << " dqpn=" << p.dest_qp() << " plen=" << p.payload_len
                               << " icrc=" << p.stored_icrc() << "\n";
                        rte_pktmbuf_free(m);
                    }
                }
            }
        }
    pcap_dump_close(out);
    pcap_close(dead);
    std::printf("pkt_crosscheck: %zu frames\n", n);
    return 0;
}

} // namespace
} // namespace uroce

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s PCAP FIELDS\n", argv[0]);
        return 2;
    }
    const char *eal[] = {"pkt_crosscheck", "--no-huge",      "-m", "64", "--no-pci",
                         "--no-shconf",    "--no-telemetry", "-l", "0",  "--log-level=*:warning"};
    if (rte_eal_init(int(std::size(eal)), const_cast<char **>(eal)) < 0) {
        std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
        return 2;
    }
    int rc = uroce::run(argv[1], argv[2]);
    rte_eal_cleanup();
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Frame building and ICRC of the fast path, checked against the wire
 * library's independent parser and ICRC (parse_frame_verified): every
 * opcode the transport sends, IPv4 and IPv6, VLAN, payload 0..4096 with
 * every pad; SGE gathers at offsets; the in-place ICRC check on single
 * frames and on multi-segment mbuf chains, and that it restores the frame.
 */
#include <cstring>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

roce_path make_path(bool v6, bool vlan) {
    roce_path p;
    std::memcpy(p.src_mac, mac_a, 6);
    std::memcpy(p.dst_mac, mac_b, 6);
    p.has_vlan = vlan;
    p.vlan_tci = 0x2064;
    p.sgid = v6 ? *gid::parse("fd00::1") : gid::from_ipv4(0x0a000001);
    p.dgid = v6 ? *gid::parse("fd00::2") : gid::from_ipv4(0x0a000002);
    p.ip_version = v6 ? 6 : 4;
    p.traffic_class = 0x68;
    p.hop_limit = 17;
    p.flow_label = 0x12345;
    p.udp_sport = 0xc123;
    return p;
}

TEST(pkt_test, frames_agree_with_the_wire_library) {
    using O = ib_opcode;
    const O ops[] = {O::rc_send_first,
                     O::rc_send_middle,
                     O::rc_send_last,
                     O::rc_send_last_imm,
                     O::rc_send_only,
                     O::rc_send_only_imm,
                     O::rc_send_last_inv,
                     O::rc_send_only_inv,
                     O::rc_rdma_write_first,
                     O::rc_rdma_write_only_imm,
                     O::rc_rdma_read_request,
                     O::rc_rdma_read_response_first,
                     O::rc_rdma_read_response_middle,
                     O::rc_acknowledge,
                     O::rc_atomic_acknowledge,
                     O::rc_compare_swap,
                     O::rc_fetch_add,
                     O::uc_send_only,
                     O::uc_rdma_write_last_imm,
                     O::ud_send_only_imm};
    std::vector<uint8_t> payload(4096);
    fill_pattern(payload.data(), payload.size(), 3);
    for (bool v6 : {false, true})
        for (bool vlan : {false, true}) {
            hdr_template t;
            make_hdr_template(t, make_path(v6, vlan), false);
            for (O op : ops) {
                const opcode_info &info = opcode_lookup(op);
                for (uint32_t len : {0u, 1u, 2u, 3u, 4u, 255u, 4096u}) {
                    if (!info.has(op_flag::payload) && len) continue;
                    bth_fields b;
                    b.opcode = to_u8(op);
                    b.psn = 0xabcdef;
                    b.dest_qp = 0x123456;
                    b.ack_req = len == 3;
                    ext_fields x;
                    x.va = 0x1122334455667788ull;
                    x.rkey = 0xdeadbeef;
                    x.dma_length = 99;
                    x.syndrome = 0x1f;
                    x.msn = 77;
                    x.swap_add = 5;
                    x.compare = 6;
                    x.orig = 7;
                    x.imm_raw = 0x01020304;
                    x.qkey = 0x11111111;
                    x.src_qp = 0x42;
                    payload_src src;
                    src.flat = payload.data();
                    rte_mbuf *m = pkt_build(test_pool(), t, b, x, &src, len, 0x4321);
                    ASSERT_NE(m, nullptr);
                    roce_packet p;
                    ASSERT_EQ(
                        parse_frame_verified(rte_pktmbuf_mtod(m, const uint8_t *), m->pkt_len, p),
                        parse_error::ok)
                        << opcode_name(to_u8(op)) << " len " << len << " v6 " << v6 << " vlan "
                        << vlan;
                    EXPECT_EQ(p.opcode, to_u8(op));
                    EXPECT_EQ(p.psn(), 0xabcdefu);
                    EXPECT_EQ(p.dest_qp(), 0x123456u);
                    EXPECT_EQ(p.bth()->ack_req(), len == 3);
                    EXPECT_EQ(p.payload_len, len);
                    EXPECT_EQ(std::memcmp(p.payload(), payload.data(), len), 0);
                    if (p.reth()) {
                        EXPECT_EQ(p.reth()->va(), x.va);
                    }
                    if (p.aeth()) {
                        EXPECT_EQ(p.aeth()->msn(), 77u);
                    }
                    if (p.immdt()) {
                        EXPECT_EQ(p.immdt()->imm_raw(), x.imm_raw);
                    }
                    if (p.deth()) {
                        EXPECT_EQ(p.deth()->src_qp(), 0x42u);
                    }
                    if (p.ip_version == 4) {
                        EXPECT_EQ(p.ipv4()->ttl, 17);
                    }
                    /* our in-place check agrees, and leaves the frame as it was */
                    std::vector<uint8_t> before(rte_pktmbuf_mtod(m, uint8_t *),
                                                rte_pktmbuf_mtod(m, uint8_t *) + m->pkt_len);
                    roce_packet q;
                    ASSERT_EQ(parse_mbuf(m, q), parse_error::ok);
                    EXPECT_TRUE(pkt_icrc_ok(q, m));
                    EXPECT_EQ(
                        std::memcmp(before.data(), rte_pktmbuf_mtod(m, uint8_t *), m->pkt_len), 0);
                    rte_pktmbuf_free(m);
                }
            }
        }
}

TEST(pkt_test, gather_from_sges_at_an_offset) {
    hdr_template t;
    make_hdr_template(t, make_path(false, false), false);
    std::vector<uint8_t> a(100), b(3), c(500);
    fill_pattern(a.data(), a.size(), 1);
    fill_pattern(b.data(), b.size(), 2);
    fill_pattern(c.data(), c.size(), 3);
    std::vector<uint8_t> flat;
    flat.insert(flat.end(), a.begin(), a.end());
    flat.insert(flat.end(), b.begin(), b.end());
    flat.insert(flat.end(), c.begin(), c.end());
    sge sg[3] = {{reinterpret_cast<uint64_t>(a.data()), 100, 0},
                 {reinterpret_cast<uint64_t>(b.data()), 3, 0},
                 {reinterpret_cast<uint64_t>(c.data()), 500, 0}};
    for (uint32_t off : {0u, 50u, 100u, 101u, 103u, 400u})
        for (uint32_t len : {1u, 7u, 200u}) {
            if (off + len > flat.size()) continue;
            payload_src src;
            src.sg = sg;
            src.num_sge = 3;
            src.offset = off;
            bth_fields bf;
            bf.opcode = to_u8(ib_opcode::rc_send_middle);
            rte_mbuf *m = pkt_build(test_pool(), t, bf, ext_fields{}, &src, len, 1);
            roce_packet p;
            ASSERT_EQ(parse_frame_verified(rte_pktmbuf_mtod(m, const uint8_t *), m->pkt_len, p),
                      parse_error::ok);
            EXPECT_EQ(std::memcmp(p.payload(), flat.data() + off, len), 0) << off << " " << len;
            rte_pktmbuf_free(m);
        }
}

/* Copy a single-segment frame into a chain of small segments. */
static rte_mbuf *to_chain(const rte_mbuf *m, uint16_t seg) {
    const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
    rte_mbuf *head = nullptr, *prev = nullptr;
    for (uint32_t off = 0; off < m->pkt_len; off += seg) {
        uint16_t n = uint16_t(std::min<uint32_t>(seg, m->pkt_len - off));
        rte_mbuf *s = rte_pktmbuf_alloc(test_pool());
        std::memcpy(rte_pktmbuf_append(s, n), d + off, n);
        if (!head) {
            head = s;
        } else {
            prev->next = s;
            head->nb_segs++;
            head->pkt_len += n;
        }
        prev = s;
    }
    return head;
}

TEST(pkt_test, icrc_and_copy_on_mbuf_chains) {
    hdr_template t;
    make_hdr_template(t, make_path(true, false), false);
    std::vector<uint8_t> payload(3001);
    fill_pattern(payload.data(), payload.size(), 9);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_rdma_write_only);
    ext_fields x;
    x.dma_length = 3001;
    payload_src src;
    src.flat = payload.data();
    rte_mbuf *m = pkt_build(test_pool(), t, bf, x, &src, 3001, 1);
    /* headers must sit in the first segment: 128-byte segments after that */
    for (uint16_t seg : {uint16_t(256), uint16_t(1000)}) {
        rte_mbuf *c = to_chain(m, seg);
        ASSERT_GT(c->nb_segs, 1);
        roce_packet p;
        ASSERT_EQ(parse_mbuf(c, p), parse_error::ok);
        EXPECT_TRUE(pkt_icrc_ok(p, c));
        std::vector<uint8_t> out(3001);
        pkt_copy_payload(p, c, 0, out.data(), 3001);
        EXPECT_EQ(out, payload);
        pkt_copy_payload(p, c, 1000, out.data(), 5);
        EXPECT_EQ(std::memcmp(out.data(), payload.data() + 1000, 5), 0);
        /* one flipped bit in the last segment is caught */
        rte_mbuf *last = c;
        while (last->next)
            last = last->next;
        rte_pktmbuf_mtod(last, uint8_t *)[0] ^= 1;
        EXPECT_FALSE(pkt_icrc_ok(p, c));
        rte_pktmbuf_free(c);
    }
    rte_pktmbuf_free(m);
}

TEST(pkt_test, csum_offload_leaves_the_ip_checksum_to_the_nic) {
    hdr_template t;
    make_hdr_template(t, make_path(false, false), true);
    bth_fields bf;
    bf.opcode = to_u8(ib_opcode::rc_send_only);
    rte_mbuf *m = pkt_build(test_pool(), t, bf, ext_fields{}, nullptr, 0, 1);
    const auto *ip = reinterpret_cast<const ipv4_hdr *>(rte_pktmbuf_mtod(m, uint8_t *) + 14);
    EXPECT_EQ(ip->checksum(), 0);
    EXPECT_TRUE(m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM);
    EXPECT_EQ(m->l2_len, 14);
    EXPECT_EQ(m->l3_len, 20);
    rte_pktmbuf_free(m);
}

} // namespace

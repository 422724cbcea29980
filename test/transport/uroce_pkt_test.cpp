/* SPDX-License-Identifier: BSD-3-Clause
 * Frame building and ICRC of the fast path, checked against the wire
 * library's independent parser and ICRC (parse_frame_verified): every
 * opcode the transport sends, IPv4 and IPv6, VLAN, payload 0..4096 with
 * every pad; SGE gathers at offsets; the in-place ICRC check on single
 * frames and on multi-segment mbuf chains, and that it restores the frame;
 * the template's fixed-size copy for every shape, and its incremental IPv4
 * checksum against a full RFC 1071 recomputation (every IP id, the
 * 0x0000/0xffff edge of one's-complement arithmetic included); the ICRC
 * left to the TX flush, and the store-only mbuf reset against stale pools.
 */
/* rte_pktmbuf_pool_create_extbuf, for a pool of pinned external buffers */
#define ALLOW_EXPERIMENTAL_API 1

#include <cstdlib>
#include <cstring>
#include <random>
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

/* A header with the template's fixed fields and this packet's length and
 * id, checksummed from scratch by the wire library (RFC 1071). */
uint16_t full_ipv4_csum(const hdr_template &t, uint16_t total_length, uint16_t id) {
    ipv4_hdr ip;
    std::memcpy(&ip, t.bytes + t.l2_len, sizeof(ip));
    ip.set_total_length(total_length);
    ip.set_id(id);
    ip.set_checksum(0);
    return ipv4_header_checksum(&ip, sizeof(ip));
}

/* IPv4 templates with varied fixed fields, two of them with a partial sum
 * of exactly 0xffff (one's-complement -0, the edge of the fold). */
std::vector<hdr_template> v4_templates() {
    std::vector<hdr_template> ts;
    std::mt19937 rng(1624);
    for (int i = 0; i < 6; ++i) {
        roce_path p = make_path(false, i & 1);
        p.traffic_class = uint8_t(rng());
        p.hop_limit = uint8_t(rng());
        p.ipv4_dont_fragment = i != 2;
        p.sgid = gid::from_ipv4(i == 3 ? 0xffffffff : uint32_t(rng()));
        p.dgid = gid::from_ipv4(i == 4 ? 0 : uint32_t(rng()));
        hdr_template t;
        make_hdr_template(t, p, false);
        ts.push_back(t);
    }
    for (bool vlan : {false, true}) {
        /* choose the destination's low word so that the fixed fields sum to 0xffff */
        roce_path p = make_path(false, vlan);
        p.dgid = gid::from_ipv4(0x0a000000);
        hdr_template t;
        make_hdr_template(t, p, false);
        const uint16_t lo = uint16_t(~t.ip_csum_base); /* base + ~base = 0xffff */
        p.dgid = gid::from_ipv4(0x0a000000 | lo);
        make_hdr_template(t, p, false);
        EXPECT_EQ(t.ip_csum_base, 0xffff);
        ts.push_back(t);
    }
    return ts;
}

TEST(pkt_test, template_partial_sum_is_the_full_checksum_of_the_fixed_fields) {
    for (const hdr_template &t : v4_templates()) {
        ASSERT_EQ(t.ip_version, 4);
        /* with total length and id 0 the header checksum is just the inverted base */
        EXPECT_EQ(uint16_t(~t.ip_csum_base), full_ipv4_csum(t, 0, 0));
        /* the template leaves total length, id and checksum 0 */
        const auto *ip = reinterpret_cast<const ipv4_hdr *>(t.bytes + t.l2_len);
        EXPECT_EQ(ip->total_length(), 0);
        EXPECT_EQ(ip->id(), 0);
        EXPECT_EQ(ip->checksum(), 0);
    }
}

TEST(pkt_test, incremental_ipv4_checksum_equals_full_recomputation) {
    std::vector<uint16_t> lengths = {0,   1,    2,      20,     58,     62,
                                     122, 4154, 0x7fff, 0x8000, 0xfffe, 0xffff};
    std::mt19937 rng(4791);
    for (int i = 0; i < 12; ++i)
        lengths.push_back(uint16_t(rng()));
    uint64_t checked = 0, zero = 0;
    for (const hdr_template &t : v4_templates())
        for (uint16_t len : lengths)
            for (uint32_t id = 0; id <= 0xffff; ++id) {
                const uint16_t inc = ipv4_csum_finish(t.ip_csum_base, len, uint16_t(id));
                const uint16_t full = full_ipv4_csum(t, len, uint16_t(id));
                ASSERT_EQ(inc, full) << "base " << t.ip_csum_base << " len " << len << " id " << id;
                /* a non-zero header never sums to +0: the checksum is never 0xffff */
                ASSERT_NE(inc, 0xffff);
                zero += inc == 0;
                ++checked;
            }
    /* every (template, length) pair has ids whose sum is 0xffff: checksum 0x0000 */
    EXPECT_GE(zero, v4_templates().size() * lengths.size());
    EXPECT_EQ(checked, v4_templates().size() * lengths.size() * 65536);
}

TEST(pkt_test, built_frames_carry_a_valid_ipv4_checksum_for_every_id) {
    for (bool vlan : {false, true}) {
        hdr_template t;
        make_hdr_template(t, make_path(false, vlan), false);
        std::vector<uint8_t> payload(4096);
        fill_pattern(payload.data(), payload.size(), 5);
        payload_src src;
        src.flat = payload.data();
        bth_fields bf;
        bf.opcode = to_u8(ib_opcode::rc_send_only);
        uint32_t zero = 0;
        for (uint32_t id = 0; id <= 0xffff; ++id) {
            const uint32_t len = (id * 37) % 4097;
            rte_mbuf *m = pkt_build(test_pool(), t, bf, ext_fields{}, &src, len, uint16_t(id));
            ASSERT_NE(m, nullptr);
            const auto *ip =
                reinterpret_cast<const ipv4_hdr *>(rte_pktmbuf_mtod(m, uint8_t *) + t.l2_len);
            ASSERT_EQ(ip->id(), id);
            ASSERT_EQ(ip->total_length(), m->pkt_len - t.l2_len);
            /* the RFC 1071 check: the sum over the header, checksum included, is 0xffff */
            ASSERT_EQ(ipv4_header_checksum(ip, sizeof(ipv4_hdr)), 0) << "id " << id;
            zero += ip->checksum() == 0;
            rte_pktmbuf_free(m);
        }
        EXPECT_GT(zero, 0u) << "no frame hit checksum 0x0000";
    }
}

TEST(pkt_test, template_copy_matches_the_wire_builder_for_every_shape) {
    for (bool v6 : {false, true})
        for (bool vlan : {false, true}) {
            hdr_template t;
            make_hdr_template(t, make_path(v6, vlan), false);
            EXPECT_EQ(t.len, v6 ? (vlan ? hdr_len_v6_vlan : hdr_len_v6)
                                : (vlan ? hdr_len_v4_vlan : hdr_len_v4));
            EXPECT_EQ(t.len, header_length(make_path(v6, vlan), to_u8(ib_opcode::rc_send_only)) -
                                 sizeof(bth));
            bth_fields bf;
            bf.opcode = to_u8(ib_opcode::rc_send_only);
            std::vector<uint8_t> payload(64, 0xa5);
            payload_src src;
            src.flat = payload.data();
            rte_mbuf *m = pkt_build(test_pool(), t, bf, ext_fields{}, &src, 64, 0x1234);
            ASSERT_NE(m, nullptr);
            /* byte for byte what the wire library's builder writes */
            std::vector<uint8_t> want(frame_length(make_path(v6, vlan), bf.opcode, 64));
            ASSERT_EQ(build_frame(want.data(), make_path(v6, vlan), bf, ext_fields{},
                                  payload.data(), 64, 0x1234),
                      want.size());
            ASSERT_EQ(m->pkt_len, want.size());
            EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(m, uint8_t *), want.data(), want.size()), 0)
                << "v6 " << v6 << " vlan " << vlan;
            rte_pktmbuf_free(m);
        }
}

} // namespace

/* A frame whose ICRC pkt_build leaves to its caller (icrc_due) gets, from
 * pkt_icrc_fill, the same bytes pkt_build would have written itself; a frame
 * whose ICRC is fused into its payload copy never leaves it due. */
TEST(pkt_test, icrc_left_to_the_caller_is_the_one_pkt_build_writes) {
    std::vector<uint8_t> payload(4096);
    fill_pattern(payload.data(), payload.size(), 11);
    for (bool v6 : {false, true})
        for (bool vlan : {false, true}) {
            hdr_template t;
            make_hdr_template(t, make_path(v6, vlan), false);
            for (uint32_t len : {0u, 1u, 64u, 180u, 200u, 216u, 217u, 300u, 1024u, 4096u}) {
                bth_fields b;
                b.opcode = to_u8(ib_opcode::rc_send_only);
                b.psn = 0x10203;
                b.dest_qp = 0x99;
                payload_src src;
                src.flat = payload.data();
                rte_mbuf *whole = pkt_build(test_pool(), t, b, ext_fields{}, &src, len, 7);
                bool due = true;
                rte_mbuf *later = pkt_build(test_pool(), t, b, ext_fields{}, &src, len, 7, &due);
                ASSERT_NE(whole, nullptr);
                ASSERT_NE(later, nullptr);
                ASSERT_EQ(whole->pkt_len, later->pkt_len);
                const uint32_t covered = whole->pkt_len - t.l2_len - uint32_t(icrc_len);
                /* exactly the frames lib/icrc does not fuse into the copy */
                EXPECT_EQ(due, !(covered >= icrc_fuse_min && icrc_fused_copy()))
                    << "len " << len << " v6 " << v6 << " vlan " << vlan;
                if (due) pkt_icrc_fill(later);
                EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(whole, uint8_t *),
                                      rte_pktmbuf_mtod(later, uint8_t *), whole->pkt_len),
                          0)
                    << "len " << len << " v6 " << v6 << " vlan " << vlan;
                rte_pktmbuf_free(whole);
                rte_pktmbuf_free(later);
            }
        }
}

/* pkt_build only stores to the mbuf's header (no rte_pktmbuf_reset): an
 * mbuf that went back to the pool with stale fields must still leave as
 * rte_pktmbuf_alloc would have made it, in a plain pool and in one with
 * pinned external buffers (the rte_pktmbuf_alloc path). */
TEST(pkt_test, built_mbufs_are_reset_whatever_the_pool_held) {
    static const rte_pktmbuf_extmem ext = [] {
        rte_pktmbuf_extmem e{};
        e.elt_size = RTE_PKTMBUF_HEADROOM + 2048;
        e.buf_len = 64 * e.elt_size;
        e.buf_ptr = std::aligned_alloc(4096, e.buf_len);
        e.buf_iova = RTE_BAD_IOVA;
        return e;
    }();
    static rte_mempool *pinned =
        rte_pktmbuf_pool_create_extbuf("uroce_tp_ext", 63, 0, 0, uint16_t(ext.elt_size),
                                       SOCKET_ID_ANY, const_cast<rte_pktmbuf_extmem *>(&ext), 1);
    ASSERT_NE(pinned, nullptr) << rte_strerror(rte_errno);
    static rte_mempool *plain = rte_pktmbuf_pool_create("uroce_tp_small", 63, 0, 8,
                                                        RTE_PKTMBUF_HEADROOM + 2048, SOCKET_ID_ANY);
    ASSERT_NE(plain, nullptr) << rte_strerror(rte_errno);
    for (rte_mempool *pool : {plain, pinned})
        for (bool via_stash : {false, true}) {
            SCOPED_TRACE(via_stash ? "through a tx_mbuf_stash" : "from the pool");
            /* one at a time from a pool this small: the stash keeps none back */
            tx_mbuf_stash stash(pool);
            auto build = [&](const hdr_template &t, const bth_fields &b, const payload_src &src,
                             uint32_t len) {
                return via_stash ? pkt_build(stash, t, b, ext_fields{}, &src, len, 1)
                                 : pkt_build(pool, t, b, ext_fields{}, &src, len, 1);
            };
            /* dirty every mbuf of the pool, as a receive path or a user would */
            std::vector<rte_mbuf *> all(63);
            ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool, all.data(), unsigned(all.size())), 0);
            for (rte_mbuf *m : all) {
                m->ol_flags |= RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_TX_TCP_CKSUM;
                m->packet_type = 0x1234;
                m->vlan_tci = 0x77;
                m->vlan_tci_outer = 0x88;
                m->port = 3;
                m->tx_offload = ~0ull;
                m->data_off = 7;
            }
            rte_pktmbuf_free_bulk(all.data(), unsigned(all.size()));

            hdr_template t;
            make_hdr_template(t, make_path(false, true), false);
            bth_fields b;
            b.opcode = to_u8(ib_opcode::rc_send_only);
            std::vector<uint8_t> payload(64, 0x5a);
            payload_src src;
            src.flat = payload.data();
            for (int i = 0; i < 63; ++i) {
                rte_mbuf *m = build(t, b, src, 64);
                ASSERT_NE(m, nullptr);
                all[size_t(i)] = m;
                EXPECT_EQ(m->data_off, RTE_PKTMBUF_HEADROOM);
                EXPECT_EQ(rte_pktmbuf_mtod(m, uint8_t *),
                          static_cast<uint8_t *>(m->buf_addr) + RTE_PKTMBUF_HEADROOM);
                EXPECT_EQ(m->nb_segs, 1);
                EXPECT_EQ(m->next, nullptr);
                EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
                EXPECT_EQ(m->port, RTE_MBUF_PORT_INVALID);
                EXPECT_EQ(m->ol_flags & ~RTE_MBUF_F_EXTERNAL, 0u);
                EXPECT_EQ(m->ol_flags & RTE_MBUF_F_EXTERNAL,
                          pool == pinned ? RTE_MBUF_F_EXTERNAL : 0u);
                EXPECT_EQ(m->packet_type, 0u);
                EXPECT_EQ(m->vlan_tci, 0);
                EXPECT_EQ(m->vlan_tci_outer, 0);
                EXPECT_EQ(m->l2_len, t.l2_len);
                EXPECT_EQ(m->l3_len, t.l3_len);
                EXPECT_EQ(m->l4_len, sizeof(udp_hdr));
                EXPECT_EQ(m->tso_segsz, 0);
                EXPECT_EQ(m->pkt_len, m->data_len);
                roce_packet p;
                ASSERT_EQ(parse_frame_verified(rte_pktmbuf_mtod(m, const uint8_t *), m->pkt_len, p),
                          parse_error::ok);
                EXPECT_EQ(std::memcmp(p.payload(), payload.data(), payload.size()), 0);
            }
            /* the pool is empty now: a build fails cleanly */
            EXPECT_EQ(build(t, b, src, 64), nullptr);
            /* a frame longer than the pool's data room is refused, not overrun */
            rte_pktmbuf_free(all.back());
            all.pop_back();
            std::vector<uint8_t> big(4096, 1);
            src.flat = big.data();
            EXPECT_EQ(build(t, b, src, 4096), nullptr);
            EXPECT_EQ(rte_mempool_avail_count(pool), 1u); /* and nothing leaked */
            rte_pktmbuf_free_bulk(all.data(), unsigned(all.size()));
        }
}

/* A device's stash (tx_mbuf_stash): from a pool of 8191 it takes eight at
 * a time; its frames are byte for byte the pool path's; it never holds more
 * than one refill out of the pool, gives the rest back when destroyed, and
 * near the pool's end takes what is left one at a time, then fails
 * cleanly. */
TEST(pkt_test, a_stash_builds_the_same_frames_and_gives_every_mbuf_back) {
    constexpr unsigned pool_size = 8191;
    rte_mempool *pool = rte_pktmbuf_pool_create("uroce_tp_stash", pool_size, 0, 0,
                                                RTE_PKTMBUF_HEADROOM + 512, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
    hdr_template t;
    make_hdr_template(t, make_path(false, false), false);
    std::vector<uint8_t> payload(300);
    fill_pattern(payload.data(), payload.size(), 3);
    payload_src src;
    src.flat = payload.data();
    bth_fields b;
    b.opcode = to_u8(ib_opcode::rc_send_only);
    b.dest_qp = 0x42;
    std::vector<rte_mbuf *> built;
    {
        tx_mbuf_stash stash(pool);
        for (uint32_t i = 0; i < 100; ++i) {
            b.psn = i;
            const uint32_t len = (i * 37) % 301;
            rte_mbuf *s = pkt_build(stash, t, b, ext_fields{}, &src, len, uint16_t(i));
            rte_mbuf *p = pkt_build(pool, t, b, ext_fields{}, &src, len, uint16_t(i));
            ASSERT_NE(s, nullptr);
            ASSERT_NE(p, nullptr);
            ASSERT_EQ(s->pkt_len, p->pkt_len);
            EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(s, uint8_t *), rte_pktmbuf_mtod(p, uint8_t *),
                                  s->pkt_len),
                      0)
                << "frame " << i;
            EXPECT_EQ(s->tx_offload, p->tx_offload);
            built.push_back(s);
            built.push_back(p);
            /* out of the pool: what was built, and the rest of one refill */
            const unsigned out = pool_size - rte_mempool_avail_count(pool);
            EXPECT_GE(out, built.size());
            EXPECT_LE(out, built.size() + tx_mbuf_stash::size - 1);
        }
        /* a frame too long for the data room takes no mbuf */
        const unsigned before = rte_mempool_avail_count(pool);
        std::vector<uint8_t> big(1024);
        payload_src bsrc;
        bsrc.flat = big.data();
        EXPECT_EQ(pkt_build(stash, t, b, ext_fields{}, &bsrc, 1024, 1), nullptr);
        EXPECT_EQ(rte_mempool_avail_count(pool), before);
    }
    EXPECT_EQ(rte_mempool_avail_count(pool), pool_size - built.size()); /* the rest came back */
    rte_pktmbuf_free_bulk(built.data(), unsigned(built.size()));
    ASSERT_EQ(rte_mempool_avail_count(pool), pool_size);

    /* three mbufs left in the pool: a stash gets each of them, then none */
    std::vector<void *> held(pool_size - 3);
    ASSERT_EQ(rte_mempool_get_bulk(pool, held.data(), unsigned(held.size())), 0);
    {
        tx_mbuf_stash stash(pool);
        rte_mbuf *last[3];
        for (rte_mbuf *&m : last) {
            m = pkt_build(stash, t, b, ext_fields{}, &src, 64, 1);
            ASSERT_NE(m, nullptr);
        }
        EXPECT_EQ(pkt_build(stash, t, b, ext_fields{}, &src, 64, 1), nullptr);
        rte_pktmbuf_free_bulk(last, 3);
    }
    rte_mempool_put_bulk(pool, held.data(), unsigned(held.size()));
    EXPECT_EQ(rte_mempool_avail_count(pool), pool_size);
    rte_mempool_free(pool);
}

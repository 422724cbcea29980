/* SPDX-License-Identifier: BSD-3-Clause
 * Builder tests: golden packets rebuild byte for byte; every opcode
 * round-trips through build and parse over IPv4, IPv6 and VLAN; mbuf chains.
 */
#include <gtest/gtest.h>

#include <random>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "eal_env.h"
#include "pcap_frames.h"
#include <uroce/build.h>
#include <uroce/icrc.h>

namespace uroce {
namespace {

class eal_env : public test::eal_env {
  public:
    void SetUp() override {
        test::eal_env::SetUp();
        pool = rte_pktmbuf_pool_create("build_test", 1024, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
    }
    static inline rte_mempool *pool = nullptr;
};
const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env);

std::vector<uint8_t> rebuild(const roce_packet &p) {
    roce_path path;
    bth_fields b;
    ext_fields x;
    uint16_t ip_id;
    extract_fields(p, path, b, x, ip_id);
    std::vector<uint8_t> out(frame_length(path, b.opcode, p.payload_len));
    size_t n = build_frame(out.data(), path, b, x, p.payload(), p.payload_len, ip_id);
    out.resize(n);
    return out;
}

TEST(build, every_golden_packet_rebuilds_byte_for_byte) {
    size_t rebuilt = 0;
    for (const char *name : {"rc_pingpong.pcap", "ib_write_bw.pcap", "ud_pingpong.pcap",
                             "rping_rdmacm.pcap", "ib_atomic_bw.pcap", "published-vectors.pcap"}) {
        std::string err;
        for (const auto &f : test::read_pcap_frames(test::golden_path(name), err)) {
            roce_packet p;
            if (parse_frame_verified(f.bytes.data(), f.bytes.size(), p) != parse_error::ok)
                continue;
            auto again = rebuild(p);
            ASSERT_EQ(again, f.bytes)
                << name << " frame " << f.number << " (" << p.info->name << ")";
            rebuilt++;
        }
        EXPECT_TRUE(err.empty()) << err;
    }
    /* 689 rxe packets (the captures in test/golden/) + 2 published vectors, counted independently
     * with scapy. */
    EXPECT_EQ(rebuilt, 691u);
}

struct variant {
    bool ipv6;
    bool vlan;
};

roce_path make_path(variant v) {
    roce_path path;
    const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 1}, dmac[6] = {0x02, 0, 0, 0, 0, 2};
    std::memcpy(path.src_mac, smac, 6);
    std::memcpy(path.dst_mac, dmac, 6);
    path.has_vlan = v.vlan;
    path.vlan_tci = 0x6005;
    if (v.ipv6) {
        path.sgid = *gid::parse("fd00:77::11");
        path.dgid = *gid::parse("fd00:77::12");
    } else {
        path.sgid = *gid::parse("10.77.0.11");
        path.dgid = *gid::parse("10.77.0.12");
    }
    path_set_ip_version(path);
    path.traffic_class = 0x68;
    path.flow_label = calc_flow_label(0x11, 0x12);
    path.udp_sport = flow_label_to_udp_sport(path.flow_label);
    return path;
}

TEST(build, every_opcode_round_trips) {
    std::mt19937_64 rng(7);
    for (variant v :
         {variant{false, false}, variant{true, false}, variant{false, true}, variant{true, true}}) {
        roce_path path = make_path(v);
        EXPECT_EQ(path.ip_version, v.ipv6 ? 6 : 4);
        for (int op = 0; op < 256; op++) {
            const opcode_info &info = opcode_lookup(uint8_t(op));
            if (!info.is_valid()) continue;
            uint32_t len = 0;
            if (info.has(op_flag::atomic_write))
                len = 8;
            else if (info.has(op_flag::payload))
                len = uint32_t(rng() % 1500);
            std::vector<uint8_t> payload(len);
            for (auto &c : payload)
                c = uint8_t(rng());
            bth_fields b;
            b.opcode = uint8_t(op);
            b.solicited = rng() & 1;
            b.ack_req = rng() & 1;
            b.becn = info.transport == ib_transport::cnp;
            b.dest_qp = uint32_t(rng()) & 0xffffff;
            b.psn = uint32_t(rng()) & 0xffffff;
            ext_fields x;
            x.va = rng();
            x.rkey = uint32_t(rng());
            x.dma_length = uint32_t(rng());
            x.syndrome = uint8_t(rng() & 0x7f);
            x.msn = uint32_t(rng()) & 0xffffff;
            x.swap_add = rng();
            x.compare = rng();
            x.orig = rng();
            x.imm_raw = uint32_t(rng());
            x.qkey = uint32_t(rng());
            x.src_qp = uint32_t(rng()) & 0xffffff;
            std::vector<uint8_t> frame(frame_length(path, b.opcode, len));
            ASSERT_EQ(build_frame(frame.data(), path, b, x, payload.data(), len, 0x1234),
                      frame.size());

            roce_packet p;
            ASSERT_EQ(parse_frame_verified(frame.data(), frame.size(), p), parse_error::ok)
                << info.name;
            EXPECT_EQ(p.opcode, op);
            EXPECT_EQ(p.payload_len, len) << info.name;
            EXPECT_EQ(p.pad, pad_for(len));
            if (len) {
                EXPECT_EQ(0, std::memcmp(p.payload(), payload.data(), len));
            }
            EXPECT_EQ(p.psn(), b.psn);
            EXPECT_EQ(p.dest_qp(), b.dest_qp);
            EXPECT_EQ(p.bth()->se(), b.solicited);
            EXPECT_EQ(p.bth()->ack_req(), b.ack_req);
            EXPECT_EQ(p.udp()->src_port(), path.udp_sport);
            EXPECT_EQ(p.udp()->checksum(), 0);
            if (auto *r = p.reth()) {
                EXPECT_EQ(r->va(), x.va);
                EXPECT_EQ(r->dma_length(), x.dma_length);
            }
            if (auto *a = p.atomic_eth()) {
                EXPECT_EQ(a->compare(), x.compare);
                EXPECT_EQ(a->swap_add(), x.swap_add);
            }
            if (auto *a = p.aeth()) {
                EXPECT_EQ(a->msn(), x.msn);
                EXPECT_EQ(a->syndrome, x.syndrome);
            }
            if (auto *a = p.atomic_ack_eth()) {
                EXPECT_EQ(a->orig(), x.orig);
            }
            if (auto *i = p.immdt()) {
                EXPECT_EQ(i->imm_raw(), x.imm_raw);
            }
            if (auto *d = p.deth()) {
                EXPECT_EQ(d->qkey(), x.qkey);
                EXPECT_EQ(d->src_qp(), x.src_qp);
            }
            if (v.ipv6) {
                EXPECT_EQ(p.ipv6()->flow_label(), path.flow_label);
                EXPECT_EQ(p.ipv6()->traffic_class(), path.traffic_class);
            } else {
                EXPECT_EQ(ipv4_header_checksum(p.ipv4(), 20), 0) << "a valid header sums to 0xffff";
                EXPECT_TRUE(p.ipv4()->frag() & ipv4_hdr::flag_df);
            }
            /* and back again */
            EXPECT_EQ(rebuild(p), frame) << info.name;
        }
    }
}

/* Build into an mbuf chain holding the payload, then parse and verify it from the chain. */
TEST(build, mbuf_chain) {
    rte_mempool *pool = eal_env::pool;
    std::mt19937 rng(11);
    for (variant v : {variant{false, false}, variant{true, true}}) {
        roce_path path = make_path(v);
        for (int iter = 0; iter < 200; iter++) {
            uint32_t len = rng() % 4097;
            std::vector<uint8_t> payload(len);
            for (auto &c : payload)
                c = uint8_t(rng());
            /* Payload spread over 1-4 segments of random sizes. */
            rte_mbuf *head = rte_pktmbuf_alloc(pool);
            ASSERT_NE(head, nullptr);
            uint32_t off = 0;
            rte_mbuf *seg = head;
            while (off < len) {
                uint32_t chunk = std::min<uint32_t>(len - off, 1 + rng() % 1800);
                if (rte_pktmbuf_tailroom(seg) < chunk + 8) {
                    rte_mbuf *next = rte_pktmbuf_alloc(pool);
                    ASSERT_NE(next, nullptr);
                    ASSERT_EQ(rte_pktmbuf_chain(head, next), 0);
                    seg = next;
                }
                uint8_t *dst =
                    reinterpret_cast<uint8_t *>(rte_pktmbuf_append(head, uint16_t(chunk)));
                ASSERT_NE(dst, nullptr);
                std::memcpy(dst, payload.data() + off, chunk);
                off += chunk;
            }
            bth_fields b;
            b.opcode = to_u8(len % 2 ? ib_opcode::rc_send_only_imm : ib_opcode::rc_rdma_write_only);
            b.psn = iter;
            b.dest_qp = 0x12;
            ext_fields x;
            x.dma_length = len;
            ASSERT_TRUE(build_mbuf(head, path, b, x, uint16_t(iter)));
            EXPECT_EQ(head->l2_len, l2_length(path));

            roce_packet p;
            ASSERT_EQ(parse_mbuf_verified(head, p), parse_error::ok)
                << "len " << len << " segs " << head->nb_segs << " data_len " << head->data_len;
            EXPECT_EQ(p.payload_len, len);
            /* The same bytes, linearised, give the same ICRC. */
            std::vector<uint8_t> flat(head->pkt_len);
            /* rte_pktmbuf_read copies only when the bytes span segments. */
            const void *bytes = rte_pktmbuf_read(head, 0, head->pkt_len, flat.data());
            ASSERT_NE(bytes, nullptr);
            std::memmove(flat.data(), bytes, flat.size());
            roce_packet q;
            ASSERT_EQ(parse_frame_verified(flat.data(), flat.size(), q), parse_error::ok);
            if (len) {
                EXPECT_EQ(0, std::memcmp(flat.data() + q.payload_offset, payload.data(), len));
            }
            rte_pktmbuf_free(head);
        }
    }
}

TEST(build, mbuf_without_headroom_is_refused) {
    rte_mbuf *m = rte_pktmbuf_alloc(eal_env::pool);
    ASSERT_NE(m, nullptr);
    m->data_off = 10; /* empty, with 10 bytes of headroom: too few for any header stack */
    roce_path path = make_path({false, false});
    bth_fields b;
    b.opcode = to_u8(ib_opcode::rc_send_only);
    ext_fields x;
    EXPECT_FALSE(build_mbuf(m, path, b, x, 0));
    EXPECT_EQ(m->pkt_len, 0u); /* untouched */
    rte_pktmbuf_free(m);
}

TEST(build, pad_for) {
    EXPECT_EQ(pad_for(0), 0);
    EXPECT_EQ(pad_for(1), 3);
    EXPECT_EQ(pad_for(2), 2);
    EXPECT_EQ(pad_for(3), 1);
    EXPECT_EQ(pad_for(4), 0);
    EXPECT_EQ(pad_for(4097), 3);
}

} // namespace
} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Engine tests: frame classification, and two whole stacks (ethdev port,
 * engine, neighbours, transport) in one process over a net_ring pair:
 * ARP resolution, then RC SEND / RDMA WRITE / RDMA READ with data checked,
 * and the --pcap capture of it verified frame by frame.
 */
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "eal_env.h"
#include "pcap_frames.h"
#include "rc_connect.h"
#include <uroce/build.h>
#include "uroce_device.h"
#include <uroce/engine.h>
#include <uroce/ethdev.h>
#include <uroce/neigh.h>
#include <uroce/capture.h>
#include <uroce/verbs.h>

namespace uroce {
namespace {

class eal_env : public test::eal_env {
  public:
    eal_env() : test::eal_env("512") {}
    void SetUp() override {
        test::eal_env::SetUp();
        pool = rte_pktmbuf_pool_create("engine_ut", 2047, 0, 0, RTE_PKTMBUF_HEADROOM + 2048,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
    }
    static inline rte_mempool *pool = nullptr;
};
const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env);

/* ---------------------------------------------------------------- transmit and capture */

/* A port that takes at most `room` frames per call and frees them at once,
 * as net_af_packet does after copying them into its ring. */
class freeing_port final : public netdev {
  public:
    unsigned room = 0;
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        uint16_t k = uint16_t(std::min<unsigned>(n, room));
        room -= k;
        for (uint16_t i = 0; i < k; i++)
            taken.push_back(rte_pktmbuf_pkt_len(pkts[i]));
        rte_pktmbuf_free_bulk(pkts, k);
        return k;
    }
    const uint8_t *mac() const override { return mac_; }
    netdev_caps caps() const override { return {}; }
    std::vector<uint32_t> taken;

  private:
    uint8_t mac_[6] = {2, 0, 0, 0, 0, 1};
};

/* ---------------------------------------------------------------- pollers */

/* What more the loop drives (the CM on QP1 hooks in this way): each poller
 * runs once per poll with the time, at most max_pollers of them, and a
 * removed one runs no more. */
TEST(engine_pollers, run_once_per_poll_until_removed) {
    struct counting final : engine_poller {
        unsigned runs = 0;
        uint64_t last = 0;
        unsigned poll(uint64_t now_ns) override {
            runs++;
            last = now_ns;
            return 0;
        }
    };
    freeing_port port;
    engine eng(port);
    counting p[engine::max_pollers + 1];
    for (unsigned i = 0; i < engine::max_pollers; i++)
        EXPECT_TRUE(eng.add_poller(&p[i]));
    EXPECT_FALSE(eng.add_poller(&p[engine::max_pollers])) << "full";
    eng.poll();
    eng.poll();
    for (unsigned i = 0; i < engine::max_pollers; i++)
        EXPECT_EQ(p[i].runs, 2u);
    EXPECT_GT(p[0].last, 0u);
    EXPECT_TRUE(eng.remove_poller(&p[1]));
    EXPECT_FALSE(eng.remove_poller(&p[1]));
    eng.poll();
    EXPECT_EQ(p[1].runs, 2u);
    EXPECT_EQ(p[0].runs, 3u);
    EXPECT_EQ(p[engine::max_pollers - 1].runs, 3u);
}

/* The loop reads the clock once per poll: the neighbours, every poller
 * and the device's timers see that one time (each read costs 30 ns in a
 * KVM guest; doc/performance.md). The device's clock counts its reads. */
TEST(engine_poll, reads_the_clock_once_for_pollers_and_device) {
    struct counting_clock final : clock_source {
        unsigned reads = 0;
        uint64_t t = 1000;
        uint64_t now_ns() override {
            reads++;
            return t += 7; /* moves at every read: a second read would show */
        }
    };
    struct recording final : engine_poller {
        std::vector<uint64_t> seen;
        unsigned poll(uint64_t now_ns) override {
            seen.push_back(now_ns);
            return 0;
        }
    };
    counting_clock clk;
    freeing_port port;
    engine eng(port);
    device_config dc;
    dc.dev = &eng;
    dc.pool = eal_env::pool;
    dc.clock = &clk;
    dc.max_mtu = mtu::mtu_1024; /* the test pool's 2 KiB rooms */
    dc.gids[dc.num_gids++] = gid::from_ipv4(0x0a580001);
    verbs_error err;
    device *ctx = open_device(dc, &err);
    ASSERT_NE(ctx, nullptr) << verbs_error_str(err);
    eng.attach(ctx, nullptr);
    recording p[2];
    ASSERT_TRUE(eng.add_poller(&p[0]));
    ASSERT_TRUE(eng.add_poller(&p[1]));
    for (int i = 0; i < 3; i++) {
        const unsigned before = clk.reads;
        eng.poll();
        EXPECT_EQ(clk.reads - before, 1u) << "poll " << i;
        ASSERT_EQ(p[0].seen.size(), size_t(i + 1));
        EXPECT_EQ(p[0].seen[size_t(i)], clk.t) << "the poll's one read";
        EXPECT_EQ(p[1].seen[size_t(i)], clk.t);
    }
    eng.remove_poller(&p[0]);
    eng.remove_poller(&p[1]);
    close_device(ctx);
}

/* A frame of `len` bytes whose first byte says which it is; two segments
 * when `chained`, so that a PMD freeing segment by segment is covered. */
rte_mbuf *numbered_frame(uint8_t id, uint16_t len, bool chained) {
    rte_mbuf *m = rte_pktmbuf_alloc(eal_env::pool);
    const uint16_t first = chained ? uint16_t(len / 2) : len;
    std::memset(rte_pktmbuf_append(m, first), id, first);
    if (chained) {
        rte_mbuf *tail = rte_pktmbuf_alloc(eal_env::pool);
        std::memset(rte_pktmbuf_append(tail, uint16_t(len - first)), id, len - first);
        EXPECT_EQ(rte_pktmbuf_chain(m, tail), 0);
    }
    return m;
}

/* polls counts every poll; idle_polls those with no frame received or sent
 * since the poll before, so polls - idle_polls is the loop's useful turns. */
TEST(engine_poll, counts_idle_polls) {
    freeing_port port;
    port.room = 1;
    engine eng(port);
    eng.poll();
    eng.poll();
    EXPECT_EQ(eng.counters().polls, 2u);
    EXPECT_EQ(eng.counters().idle_polls, 2u);
    rte_mbuf *in = numbered_frame(1, 64, false); /* not IP: counted and freed */
    eng.rx_burst(&in, 1);
    EXPECT_EQ(eng.poll(), 0u);
    EXPECT_EQ(eng.counters().idle_polls, 2u) << "a frame came in";
    eng.poll();
    EXPECT_EQ(eng.counters().idle_polls, 3u);
    rte_mbuf *out = numbered_frame(2, 64, false);
    EXPECT_EQ(eng.tx_burst(&out, 1), 1u);
    EXPECT_EQ(eng.poll(), 1u);
    EXPECT_EQ(eng.counters().idle_polls, 3u) << "a frame went out";
    eng.poll();
    EXPECT_EQ(eng.counters().polls, 6u);
    EXPECT_EQ(eng.counters().idle_polls, 4u);
}

/* --pcap shows what the port took, once, even when the caller offers the
 * refused frames again; tx_bytes counts those frames without reading an
 * mbuf the port has already freed. */
TEST(engine_tx, capture_shows_each_frame_the_port_took_once) {
    const std::string path = std::string(::testing::TempDir()) + "/uroce_engine_tx_" +
                             std::to_string(getpid()) + ".pcap";
    std::string err;
    auto cap = pcap_writer::open(path, err);
    ASSERT_NE(cap, nullptr) << err;
    freeing_port port;
    engine eng(port, cap.get());

    rte_mbuf *frames[6];
    for (uint8_t i = 0; i < 6; i++)
        frames[i] = numbered_frame(i, uint16_t(100 + i), i % 2 == 1);
    port.room = 4;
    ASSERT_EQ(eng.tx_burst(frames, 6), 4);
    /* the two refused frames are still the caller's, with one reference */
    EXPECT_EQ(rte_mbuf_refcnt_read(frames[4]), 1);
    EXPECT_EQ(rte_mbuf_refcnt_read(frames[5]), 1);
    EXPECT_EQ(rte_mbuf_refcnt_read(frames[5]->next), 1);
    port.room = 1;
    ASSERT_EQ(eng.tx_burst(frames + 4, 2), 1); /* a retry, as device::tx_flush does */
    rte_pktmbuf_free(frames[5]);               /* what the caller then drops */

    EXPECT_EQ(eng.counters().tx_frames, 5u);
    EXPECT_EQ(eng.counters().tx_bytes, 100u + 101 + 102 + 103 + 104);
    cap->flush();
    auto got = test::read_pcap_frames(path, err);
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_EQ(got.size(), 5u);
    for (uint8_t i = 0; i < 5; i++) {
        ASSERT_EQ(got[i].bytes.size(), 100u + i);
        EXPECT_EQ(got[i].bytes.front(), i);
        EXPECT_EQ(got[i].bytes.back(), i);
    }
    cap.reset();
    unlink(path.c_str());
}

/* ---------------------------------------------------------------- classification */

/* An mbuf holding (at most the first 2 KB of) a frame: enough for classification. */
rte_mbuf *mbuf_of(const std::vector<uint8_t> &bytes) {
    rte_mbuf *m = rte_pktmbuf_alloc(eal_env::pool);
    uint16_t len = uint16_t(std::min<size_t>(bytes.size(), rte_pktmbuf_tailroom(m)));
    std::memcpy(rte_pktmbuf_append(m, len), bytes.data(), len);
    return m;
}

frame_class classify(const std::vector<uint8_t> &bytes) {
    rte_mbuf *m = mbuf_of(bytes);
    frame_class c = classify_frame(m);
    rte_pktmbuf_free(m);
    return c;
}

std::vector<uint8_t> roce_frame(bool ipv6, bool vlan) {
    roce_path path;
    path.has_vlan = vlan;
    path.sgid = ipv6 ? *gid::parse("fd00::1") : gid::from_ipv4(0x0a000001);
    path.dgid = ipv6 ? *gid::parse("fd00::2") : gid::from_ipv4(0x0a000002);
    path_set_ip_version(path);
    bth_fields b;
    b.opcode = to_u8(ib_opcode::rc_send_only);
    ext_fields x;
    std::vector<uint8_t> f(frame_length(path, b.opcode, 8));
    const uint8_t payload[8] = {};
    build_frame(f.data(), path, b, x, payload, 8, 1);
    return f;
}

TEST(classify, routes_by_protocol) {
    EXPECT_EQ(classify(roce_frame(false, false)), frame_class::roce);
    EXPECT_EQ(classify(roce_frame(true, false)), frame_class::roce);
    EXPECT_EQ(classify(roce_frame(false, true)), frame_class::roce);

    auto f = roce_frame(false, false);
    f[14 + 20 + 3] = 0x35; /* UDP port 4661 */
    EXPECT_EQ(classify(f), frame_class::other_udp);
    f[14 + 9] = 6; /* TCP */
    EXPECT_EQ(classify(f), frame_class::not_udp);
    f[14 + 9] = 1; /* ICMP */
    EXPECT_EQ(classify(f), frame_class::neighbour);
    auto v6 = roce_frame(true, false);
    v6[14 + 6] = 58; /* ICMPv6 */
    EXPECT_EQ(classify(v6), frame_class::neighbour);
    f[12] = 0x08, f[13] = 0x06; /* ARP */
    EXPECT_EQ(classify(f), frame_class::neighbour);
    f[12] = 0x88, f[13] = 0xcc; /* LLDP */
    EXPECT_EQ(classify(f), frame_class::not_ip);
    EXPECT_EQ(classify(std::vector<uint8_t>(f.begin(), f.begin() + 10)), frame_class::runt);
    EXPECT_EQ(classify(std::vector<uint8_t>(f.begin(), f.begin() + 30)), frame_class::not_ip);
    auto shortip = roce_frame(false, false);
    shortip.resize(14 + 12);
    EXPECT_EQ(classify(shortip), frame_class::runt);
}

/* ---------------------------------------------------------------- two stacks */

struct stack {
    std::unique_ptr<ethdev_port> port;
    rte_mempool *tx_pool = nullptr;
    local_addr_table addrs;
    std::unique_ptr<neigh> nb;
    std::unique_ptr<pcap_writer> capture;
    std::unique_ptr<engine> eng;
    device *ctx = nullptr;
    uroce::pd *pd = nullptr;
    uroce::cq *cq = nullptr;
    qp *q = nullptr;
    std::vector<uint8_t> buf;
    mr *m = nullptr;

    ~stack() {
        if (ctx) close_device(ctx);
        eng.reset();
        nb.reset();
        port.reset();
        if (tx_pool) rte_mempool_free(tx_pool);
    }
};

class engine_pair : public ::testing::Test {
  protected:
    static constexpr uint32_t ip_a = 0x0a580001, ip_b = 0x0a580002; /* 10.88.0.1, 10.88.0.2 */
    stack a, b;
    rte_ring *ab = nullptr, *ba = nullptr;
    std::string capture_path;

    void SetUp() override {
        static int n = 0;
        std::string sfx = std::to_string(n++);
        ab = rte_ring_create(("ab" + sfx).c_str(), 1024, SOCKET_ID_ANY,
                             RING_F_SP_ENQ | RING_F_SC_DEQ);
        ba = rte_ring_create(("ba" + sfx).c_str(), 1024, SOCKET_ID_ANY,
                             RING_F_SP_ENQ | RING_F_SC_DEQ);
        ASSERT_TRUE(ab && ba);
        int pa = rte_eth_from_rings(("ringA" + sfx).c_str(), &ba, 1, &ab, 1, SOCKET_ID_ANY);
        int pb = rte_eth_from_rings(("ringB" + sfx).c_str(), &ab, 1, &ba, 1, SOCKET_ID_ANY);
        ASSERT_GE(pa, 0);
        ASSERT_GE(pb, 0);
        capture_path = std::string(::testing::TempDir()) + "/uroce_engine_" +
                       std::to_string(getpid()) + ".pcap";
        make(a, uint16_t(pa), ip_a, 0x0a, "a" + sfx, true);
        make(b, uint16_t(pb), ip_b, 0x0b, "b" + sfx, false);
    }

    void TearDown() override {
        if (!getenv("UROCE_KEEP_CAPTURE")) unlink(capture_path.c_str());
    }

    void make(stack &s, uint16_t port_id, uint32_t ip, uint8_t mac_low, const std::string &name,
              bool capture) {
        /* net_ring ports have no MAC of their own: give each a locally administered one. */
        rte_ether_addr mac = {{0x02, 0, 0, 0, 0x88, mac_low}};
        ethdev_config cfg;
        cfg.port_id = port_id;
        cfg.mac = mac;
        cfg.rx_desc = 512;
        cfg.tx_desc = 512;
        std::string err;
        s.port = ethdev_port::open(cfg, err);
        ASSERT_NE(s.port, nullptr) << err;
        ASSERT_EQ(std::memcmp(s.port->mac(), mac.addr_bytes, 6), 0);
        s.tx_pool = rte_pktmbuf_pool_create(("tx" + name).c_str(), 4095, 256, 0,
                                            RTE_PKTMBUF_HEADROOM + 9100, SOCKET_ID_ANY);
        ASSERT_NE(s.tx_pool, nullptr);
        s.addrs.set_mac(mac_addr::from_bytes(s.port->mac()));
        ASSERT_TRUE(s.addrs.add_ipv4(ip, 24));
        neigh_config nc;
        nc.pool = s.tx_pool;
        s.nb = std::make_unique<neigh>(nc, s.addrs);
        if (capture) {
            s.capture = pcap_writer::open(capture_path, err);
            ASSERT_NE(s.capture, nullptr) << err;
        }
        s.eng = std::make_unique<engine>(*s.port, s.capture.get());

        device_config dc;
        dc.dev = s.eng.get();
        dc.pool = s.tx_pool;
        for (size_t i = 0; i < s.addrs.gid_count() && i < std::size(dc.gids); i++)
            dc.gids[dc.num_gids++] = *s.addrs.gid_at(i);
        verbs_error verr;
        s.ctx = open_device(dc, &verr);
        ASSERT_NE(s.ctx, nullptr) << verbs_error_str(verr);
        s.eng->attach(s.ctx, s.nb.get());

        s.pd = alloc_pd(s.ctx);
        s.cq = create_cq(s.ctx, 1024);
        qp_init_attr ia;
        ia.send_cq = s.cq;
        ia.recv_cq = s.cq;
        ia.qp_type = qp_type::rc;
        ia.cap.max_send_wr = 64;
        ia.cap.max_recv_wr = 64;
        s.q = create_qp(s.pd, ia, &verr);
        ASSERT_NE(s.q, nullptr) << verbs_error_str(verr);
        s.buf.assign(256 * 1024, 0);
        s.m = reg_mr(s.pd, s.buf.data(), s.buf.size(),
                     access_local_write | access_remote_write | access_remote_read |
                         access_remote_atomic,
                     &verr);
        ASSERT_NE(s.m, nullptr) << verbs_error_str(verr);
    }

    void pump(int rounds = 1) {
        for (int i = 0; i < rounds; i++) {
            ethdev_engine_poll(*a.eng, *a.port);
            ethdev_engine_poll(*b.eng, *b.port);
        }
    }

    /* Resolve the peer's MAC the way an app does before RTR: ARP over the link. */
    std::optional<mac_addr> resolve(stack &self, uint32_t peer_ip) {
        for (int i = 0; i < 1000; i++) {
            if (auto mac = self.nb->resolve_ipv4(peer_ip)) return mac;
            pump();
        }
        return std::nullopt;
    }

    void connect(stack &self, stack &peer, const mac_addr &peer_mac, uint32_t sq_psn,
                 uint32_t rq_psn) {
        test::rc_peer p;
        p.qpn = qp_num(peer.q);
        p.dgid = gid::from_ipv4(&peer == &a ? ip_a : ip_b);
        p.sgid_index = uint8_t(self.addrs.gid_index(gid::from_ipv4(&self == &a ? ip_a : ip_b)));
        peer_mac.copy_to(p.dmac);
        p.sq_psn = sq_psn;
        p.rq_psn = rq_psn;
        ASSERT_TRUE(test::rc_connect(self.q, p));
    }

    wc wait_one(stack &s) {
        wc w;
        for (int i = 0; i < 100000; i++) {
            if (poll_cq(s.cq, 1, &w) == 1) return w;
            pump();
        }
        ADD_FAILURE() << "no completion";
        w.status = wc_status::general_err;
        return w;
    }
};

TEST_F(engine_pair, arp_then_send_write_read_over_net_ring) {
    auto mac_b = resolve(a, ip_b);
    ASSERT_TRUE(mac_b);
    EXPECT_EQ(std::memcmp(mac_b->b.data(), b.port->mac(), 6), 0);
    auto mac_a = resolve(b, ip_a); /* learned from A's request (RFC 826): no second exchange */
    ASSERT_TRUE(mac_a);
    EXPECT_EQ(b.nb->counters().arp_tx_request, 0u);

    connect(a, b, *mac_b, 0x100, 0x200);
    connect(b, a, *mac_a, 0x200, 0x100);

    /* SEND of 10000 bytes: three 4096-byte packets. */
    for (size_t i = 0; i < 10000; i++)
        a.buf[i] = uint8_t(i * 13 + 1);
    sge rs{uint64_t(uintptr_t(b.buf.data())), 10000, mr_lkey(b.m)};
    recv_wr rw;
    rw.wr_id = 7;
    rw.sg_list = &rs;
    rw.num_sge = 1;
    recv_wr *bad_r = nullptr;
    ASSERT_EQ(post_recv(b.q, &rw, &bad_r), verbs_error::ok);
    sge ss{uint64_t(uintptr_t(a.buf.data())), 10000, mr_lkey(a.m)};
    send_wr sw;
    sw.wr_id = 1;
    sw.sg_list = &ss;
    sw.num_sge = 1;
    sw.opcode = wr_opcode::send;
    sw.send_flags = send_signaled;
    send_wr *bad = nullptr;
    ASSERT_EQ(post_send(a.q, &sw, &bad), verbs_error::ok);
    wc w = wait_one(a);
    EXPECT_EQ(w.status, wc_status::success);
    w = wait_one(b);
    EXPECT_EQ(w.status, wc_status::success);
    EXPECT_EQ(w.opcode, wc_opcode::recv);
    EXPECT_EQ(w.byte_len, 10000u);
    EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data(), 10000), 0);

    /* RDMA WRITE of 64 KiB into B at offset 128 KiB. */
    for (size_t i = 0; i < 65536; i++)
        a.buf[65536 + i] = uint8_t(i * 7 + 3);
    ss = sge{uint64_t(uintptr_t(a.buf.data() + 65536)), 65536, mr_lkey(a.m)};
    sw = send_wr{};
    sw.wr_id = 2;
    sw.sg_list = &ss;
    sw.num_sge = 1;
    sw.opcode = wr_opcode::rdma_write;
    sw.send_flags = send_signaled;
    sw.wr.rdma.remote_addr = uint64_t(uintptr_t(b.buf.data() + 131072));
    sw.wr.rdma.rkey = mr_rkey(b.m);
    ASSERT_EQ(post_send(a.q, &sw, &bad), verbs_error::ok);
    w = wait_one(a);
    EXPECT_EQ(w.status, wc_status::success);
    EXPECT_EQ(std::memcmp(a.buf.data() + 65536, b.buf.data() + 131072, 65536), 0);

    /* RDMA READ it back into A at offset 192 KiB. */
    ss = sge{uint64_t(uintptr_t(a.buf.data() + 196608)), 65536, mr_lkey(a.m)};
    sw.wr_id = 3;
    sw.opcode = wr_opcode::rdma_read;
    ASSERT_EQ(post_send(a.q, &sw, &bad), verbs_error::ok);
    w = wait_one(a);
    EXPECT_EQ(w.status, wc_status::success);
    EXPECT_EQ(w.opcode, wc_opcode::rdma_read);
    EXPECT_EQ(std::memcmp(a.buf.data() + 65536, a.buf.data() + 196608, 65536), 0);

    /* Everything A saw and sent is in its capture, and every RoCE frame verifies. */
    EXPECT_GT(a.eng->counters().rx_by_class[size_t(frame_class::roce)], 0u);
    EXPECT_GT(a.eng->counters().rx_by_class[size_t(frame_class::neighbour)], 0u);
    a.capture->flush();
    std::string err;
    auto frames = test::read_pcap_frames(capture_path, err);
    ASSERT_FALSE(frames.empty()) << err;
    size_t roce = 0, neighbour = 0;
    for (const auto &f : frames) {
        if (classify(f.bytes) == frame_class::neighbour) {
            neighbour++;
            continue;
        }
        roce_packet p;
        parse_error e = parse_frame_verified(f.bytes.data(), f.bytes.size(), p);
        EXPECT_EQ(e, parse_error::ok) << "frame " << f.number << ": " << parse_error_name(e);
        roce++;
    }
    /* A's ARP request, B's reply, and each side's announcements (gratuitous ARP, unsolicited NA).
     */
    EXPECT_GE(neighbour, 2u);
    EXPECT_EQ(roce + neighbour, a.eng->counters().rx_frames + a.eng->counters().tx_frames);
    EXPECT_EQ(roce,
              a.eng->counters().rx_by_class[size_t(frame_class::roce)] +
                  (a.eng->counters().tx_frames -
                   (neighbour - a.eng->counters().rx_by_class[size_t(frame_class::neighbour)])));
}

TEST_F(engine_pair, unknown_traffic_is_counted_and_freed) {
    auto f = roce_frame(false, false);
    f[14 + 9] = 6; /* TCP */
    unsigned avail = rte_mempool_avail_count(eal_env::pool);
    rte_mbuf *pkts[3] = {mbuf_of(f), mbuf_of(f), mbuf_of(std::vector<uint8_t>(8, 0))};
    a.eng->rx_burst(pkts, 3);
    EXPECT_EQ(a.eng->counters().rx_by_class[size_t(frame_class::not_udp)], 2u);
    EXPECT_EQ(a.eng->counters().rx_by_class[size_t(frame_class::runt)], 1u);
    EXPECT_EQ(rte_mempool_avail_count(eal_env::pool), avail);
}

} // namespace
} // namespace uroce

namespace uroce {
namespace {

/* ibv_rc_pingpong's pattern at 64 KiB: each side keeps receives posted and
 * answers every message with one of its own (16 packets each way at MTU 4096). */
TEST_F(engine_pair, send_pingpong_64k) {
    auto mac_b = resolve(a, ip_b);
    auto mac_a = resolve(b, ip_a);
    ASSERT_TRUE(mac_a && mac_b);
    connect(a, b, *mac_b, 0xabc, 0xdef);
    connect(b, a, *mac_a, 0xdef, 0xabc);
    const uint32_t size = 65536;
    auto post_recvs = [&](stack &s, int n) {
        sge rs{uint64_t(uintptr_t(s.buf.data() + size)), size, mr_lkey(s.m)};
        recv_wr rw;
        rw.wr_id = 100;
        rw.sg_list = &rs;
        rw.num_sge = 1;
        recv_wr *bad;
        for (int i = 0; i < n; i++)
            ASSERT_EQ(post_recv(s.q, &rw, &bad), verbs_error::ok);
    };
    auto send = [&](stack &s) {
        sge ss{uint64_t(uintptr_t(s.buf.data())), size, mr_lkey(s.m)};
        send_wr sw;
        sw.wr_id = 1;
        sw.sg_list = &ss;
        sw.num_sge = 1;
        sw.opcode = wr_opcode::send;
        sw.send_flags = send_signaled;
        send_wr *bad;
        ASSERT_EQ(post_send(s.q, &sw, &bad), verbs_error::ok);
    };
    post_recvs(a, 60);
    post_recvs(b, 60);
    for (int iter = 0; iter < 200; iter++) {
        send(a);
        int got = 0;
        while (got < 2) { /* A's send completion and B's receive */
            wc w;
            pump();
            while (poll_cq(a.cq, 1, &w) == 1) {
                ASSERT_EQ(w.status, wc_status::success)
                    << "iteration " << iter << ": " << wc_status_str(w.status);
                got++;
            }
            while (poll_cq(b.cq, 1, &w) == 1) {
                ASSERT_EQ(w.status, wc_status::success)
                    << "iteration " << iter << ": " << wc_status_str(w.status);
                got++;
                post_recvs(b, 1);
            }
        }
    }
    EXPECT_EQ(a.ctx->qp_totals().retransmits, 0u);
    EXPECT_EQ(b.ctx->qp_totals().dup_requests, 0u);
}

} // namespace
} // namespace uroce

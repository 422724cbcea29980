/* SPDX-License-Identifier: BSD-3-Clause
 * The apps' stack with shards: --shards parsed and checked, and two stacks
 * over a net_ring pair, one of them with two shards: an RC QP on shard 1
 * reached through shard 0's fan-out (net_ring has no RSS), data checked;
 * and shard 1 run by the stack on lcore 1 while the test's thread uses
 * shard 0. EAL (an eal_session, uroce_eal.h) gets two lcores (-l 0,1); at
 * most two threads poll.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "uroce_app_options.h"
#include "uroce_app_stack.h"
#include <uroce/opcode.h>
#include "rc_connect.h"

namespace uroce::app {
namespace {

class eal_two_lcores : public ::testing::Environment {
  public:
    void SetUp() override {
        eal_config c;
        c.hugepages = hugepage_mode::never;
        c.lcores = "0,1";
        c.telemetry = false;
        c.log_level = "*:warning";
        std::string err;
        eal_ = eal_session::start(c, err);
        ASSERT_TRUE(eal_) << err;
    }
    void TearDown() override { eal_.reset(); }

  private:
    std::unique_ptr<eal_session> eal_;
};
const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_two_lcores);

TEST(stack_options, shards) {
    for (const char *good : {"--shards=2", "--shards"}) {
        stack_options o;
        command_line cl("app", "");
        add_stack_options(cl, o);
        const char *argv[] = {"app", good, "2"};
        const int argc = std::strchr(good, '=') ? 2 : 3;
        ASSERT_EQ(cl.parse(argc, const_cast<char **>(argv)), command_line::result::run)
            << cl.error();
        EXPECT_EQ(o.shards, 2u);
    }
    for (const char *bad : {"0", "x", "2x", "100000"}) {
        stack_options o;
        command_line cl("app", "");
        add_stack_options(cl, o);
        const char *argv[] = {"app", "--shards", bad};
        EXPECT_EQ(cl.parse(3, const_cast<char **>(argv)), command_line::result::usage_error) << bad;
        EXPECT_NE(cl.error().find("--shards"), std::string::npos) << cl.error();
    }
}

/* Two stacks joined by a net_ring pair; A's shards all send into the one
 * ring to B (multi-producer), and A reads one RX queue. */
class shard_stacks : public ::testing::Test {
  protected:
    static constexpr uint32_t ip_a = 0x0a590001, ip_b = 0x0a590002; /* 10.89.0.1, .2 */

    void make(unsigned shards, bool run_lcores) {
        static int n = 0;
        const std::string sfx = std::to_string(n++);
        ab = rte_ring_create(("stab" + sfx).c_str(), 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
        ba = rte_ring_create(("stba" + sfx).c_str(), 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
        ASSERT_TRUE(ab && ba);
        std::vector<rte_ring *> tx_ab(shards, ab);
        int pa =
            rte_eth_from_rings(("stA" + sfx).c_str(), &ba, 1, tx_ab.data(), shards, SOCKET_ID_ANY);
        int pb = rte_eth_from_rings(("stB" + sfx).c_str(), &ab, 1, &ba, 1, SOCKET_ID_ANY);
        ASSERT_GE(pa, 0);
        ASSERT_GE(pb, 0);
        stack_options oa, ob;
        oa.port_id = pa;
        ob.port_id = pb;
        oa.ips = {"10.89.0.1/24"};
        ob.ips = {"10.89.0.2/24"};
        oa.mac = rte_ether_addr{{0x02, 0, 0, 0x89, 0, 1}};
        ob.mac = rte_ether_addr{{0x02, 0, 0, 0x89, 0, 2}};
        oa.name = "sa" + sfx;
        ob.name = "sb" + sfx;
        oa.shards = shards;
        oa.run_shard_lcores = run_lcores;
        std::string err;
        a = stack::create(oa, err);
        ASSERT_NE(a, nullptr) << err;
        b = stack::create(ob, err);
        ASSERT_NE(b, nullptr) << err;
    }

    void TearDown() override {
        a.reset();
        b.reset();
        if (ab) rte_ring_free(ab);
        if (ba) rte_ring_free(ba);
    }

    /* The test's thread polls A's shard 0 (and the others unless the stack
     * runs them) and B. */
    void pump() {
        for (unsigned s = 0; s < (a_runs_lcores ? 1u : a->shard_count()); s++)
            a->poll_shard(s);
        b->poll();
    }

    std::optional<mac_addr> resolve(stack &self, uint32_t peer_ip) {
        for (int i = 0; i < 100000; i++) {
            if (auto mac = self.neighbours().resolve(gid::from_ipv4(peer_ip))) return mac;
            pump();
        }
        return std::nullopt;
    }

    struct side {
        pd *p = nullptr;
        cq *c = nullptr;
        qp *q = nullptr;
        mr *m = nullptr;
        std::vector<uint8_t> buf;
    };

    void make_side(side &s, device *ctx) {
        s.p = alloc_pd(ctx);
        s.c = create_cq(ctx, 256);
        qp_init_attr ia;
        ia.send_cq = ia.recv_cq = s.c;
        ia.qp_type = qp_type::rc;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
        s.q = create_qp(s.p, ia);
        ASSERT_NE(s.q, nullptr);
        s.buf.assign(256 * 1024, 0);
        s.m = reg_mr(s.p, s.buf.data(), s.buf.size(),
                     access_local_write | access_remote_write | access_remote_read);
        ASSERT_NE(s.m, nullptr);
    }

    void destroy_side(side &s) {
        destroy_qp(s.q);
        dereg_mr(s.m);
        destroy_cq(s.c);
        dealloc_pd(s.p);
    }

    void connect(side &self, const side &peer, stack &st, uint32_t peer_ip,
                 const mac_addr &peer_mac) {
        test::rc_peer p;
        p.qpn = qp_num(peer.q);
        p.dgid = gid::from_ipv4(peer_ip);
        p.sgid_index = uint8_t(st.gid_index_for(gid::from_ipv4(peer_ip)));
        peer_mac.copy_to(p.dmac);
        p.sq_psn = p.rq_psn = 100;
        ASSERT_TRUE(test::rc_connect(self.q, p));
    }

    /* WRITE 64 KiB from x to y, then READ it back into x's second half. */
    void write_and_read(side &x, side &y) {
        for (size_t i = 0; i < 65536; i++)
            x.buf[i] = uint8_t(i * 13 + 5);
        for (wr_opcode op : {wr_opcode::rdma_write, wr_opcode::rdma_read}) {
            sge s{uint64_t(uintptr_t(x.buf.data() + (op == wr_opcode::rdma_read ? 65536 : 0))),
                  65536, mr_lkey(x.m)};
            send_wr wr;
            wr.wr_id = uint64_t(op);
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = op;
            wr.send_flags = send_signaled;
            wr.wr.rdma.remote_addr = uint64_t(uintptr_t(y.buf.data()));
            wr.wr.rdma.rkey = mr_rkey(y.m);
            send_wr *bad;
            ASSERT_EQ(post_send(x.q, &wr, &bad), verbs_error::ok);
            wc w{};
            int got = 0;
            for (int i = 0; i < 2000000 && got == 0; i++) {
                pump();
                got = poll_cq(x.c, 1, &w);
            }
            ASSERT_EQ(got, 1);
            EXPECT_EQ(w.status, wc_status::success) << wc_status_str(w.status);
        }
        EXPECT_EQ(std::memcmp(x.buf.data(), y.buf.data(), 65536), 0);
        EXPECT_EQ(std::memcmp(x.buf.data(), x.buf.data() + 65536, 65536), 0);
    }

    rte_ring *ab = nullptr, *ba = nullptr;
    std::unique_ptr<stack> a, b;
    bool a_runs_lcores = false;
};

TEST_F(shard_stacks, qp_on_shard_1_is_reached_through_the_fanout) {
    make(2, false);
    ASSERT_EQ(a->shard_count(), 2u);
    EXPECT_EQ(a->port().rx_queues(), 1); /* net_ring: no RSS, shard 0 reads */
    EXPECT_EQ(a->port().tx_queues(), 2);
    auto mac_b = resolve(*a, ip_b), mac_a = resolve(*b, ip_a);
    ASSERT_TRUE(mac_a && mac_b);
    side x, y;
    make_side(x, a->ctx(1));
    make_side(y, b->ctx());
    /* QPNs start at a random point of each device's range: shard 1's slice */
    EXPECT_EQ(qpn_shard(qp_num(x.q), 2), 1u);
    EXPECT_GE(qp_num(x.q), 0x10011u);
    EXPECT_GE(qp_num(y.q), 0x11u);
    EXPECT_LT(qp_num(y.q), 0x11u + device_config{}.max_qp);
    connect(x, y, *a, ip_b, *mac_b);
    connect(y, x, *b, ip_a, *mac_a);
    write_and_read(x, y);
    const shard_counters &f0 = *a->fanout_counters(0), &f1 = *a->fanout_counters(1);
    EXPECT_GT(f1.fanout_in, 0u);
    EXPECT_EQ(f0.fanout_out, f1.fanout_in);
    EXPECT_EQ(f0.fanout_ring_full, 0u);
    EXPECT_EQ(device_counters(a->ctx(0)).rx_no_qp, 0u);
    EXPECT_GT(a->port().queue_counters(1).tx_pkts, 0u); /* shard 1 sent on its own queue */
    destroy_side(x);
    destroy_side(y);
}

TEST_F(shard_stacks, the_stack_runs_shard_1_on_lcore_1) {
    ASSERT_GE(rte_lcore_count(), 2u);
    const unsigned worker = rte_get_next_lcore(-1, 1, 0);
    a_runs_lcores = true;
    make(2, true);
    EXPECT_EQ(rte_eal_get_lcore_state(worker), RUNNING);
    auto mac_b = resolve(*a, ip_b), mac_a = resolve(*b, ip_a);
    ASSERT_TRUE(mac_a && mac_b);
    /* QPs on shard 0, the test's thread; lcore 1 polls shard 1 meanwhile */
    side x, y;
    make_side(x, a->ctx());
    make_side(y, b->ctx());
    connect(x, y, *a, ip_b, *mac_b);
    connect(y, x, *b, ip_a, *mac_a);
    write_and_read(x, y);
    EXPECT_GT(a->eng(1).counters().polls, 0u);
    destroy_side(x);
    destroy_side(y);
    a.reset();
    EXPECT_NE(rte_eal_get_lcore_state(worker), RUNNING);
}

/* stack::poll sends before it receives: a SEND the app posted leaves
 * ahead of the ACK for the peer's SEND that the same poll receives (with
 * receive first it would wait behind that burst; doc/performance.md, "2 B
 * send_lat over memif"). Both messages then complete. */
TEST_F(shard_stacks, a_poll_sends_what_was_posted_before_it_receives) {
    make(1, false);
    auto mac_b = resolve(*a, ip_b), mac_a = resolve(*b, ip_a);
    ASSERT_TRUE(mac_a && mac_b);
    side x, y;
    make_side(x, a->ctx());
    make_side(y, b->ctx());
    connect(x, y, *a, ip_b, *mac_b);
    connect(y, x, *b, ip_a, *mac_a);
    auto post = [](side &s, bool recv) {
        sge g{uint64_t(uintptr_t(s.buf.data() + (recv ? 4096 : 0))), 64, mr_lkey(s.m)};
        if (recv) {
            recv_wr wr;
            wr.sg_list = &g;
            wr.num_sge = 1;
            recv_wr *bad;
            return post_recv(s.q, &wr, &bad);
        }
        send_wr wr;
        wr.sg_list = &g;
        wr.num_sge = 1;
        wr.opcode = wr_opcode::send;
        wr.send_flags = send_signaled;
        send_wr *bad;
        return post_send(s.q, &wr, &bad);
    };
    ASSERT_EQ(post(x, true), verbs_error::ok);
    ASSERT_EQ(post(y, true), verbs_error::ok);
    ASSERT_EQ(post(y, false), verbs_error::ok);
    b->poll(); /* B's SEND is on its way to A */
    ASSERT_EQ(rte_ring_count(ba), 1u);
    ASSERT_EQ(post(x, false), verbs_error::ok);
    a->poll(); /* A's SEND out, then B's SEND in (and its ACK out) */
    rte_mbuf *out[4];
    ASSERT_EQ(rte_ring_dequeue_burst(ab, reinterpret_cast<void **>(out), 4, nullptr), 2u);
    /* IPv4 without VLAN: the BTH's opcode follows Ethernet, IPv4 and UDP */
    constexpr size_t opcode_off = sizeof(eth_hdr) + sizeof(ipv4_hdr) + sizeof(udp_hdr);
    EXPECT_EQ(rte_pktmbuf_mtod(out[0], const uint8_t *)[opcode_off],
              to_u8(ib_opcode::rc_send_only));
    EXPECT_EQ(rte_pktmbuf_mtod(out[1], const uint8_t *)[opcode_off],
              to_u8(ib_opcode::rc_acknowledge));
    ASSERT_EQ(rte_ring_enqueue_burst(ab, reinterpret_cast<void **>(out), 2, nullptr), 2u);
    for (side *s : {&x, &y}) {
        unsigned got = 0;
        wc w[4];
        for (int i = 0; i < 100000 && got < 2; i++) {
            pump();
            const int n = poll_cq(s->c, 4, w);
            for (int k = 0; k < n; k++)
                EXPECT_EQ(w[k].status, wc_status::success) << wc_status_str(w[k].status);
            got += unsigned(n);
        }
        EXPECT_EQ(got, 2u) << "a SEND and a receive on each side";
    }
    destroy_side(x);
    destroy_side(y);
}

TEST(stack_create, shard_limits) {
    std::string err;
    stack_options o;
    o.vdev = "net_ring_st_lim";
    o.ips = {"10.89.1.1/24"};
    o.shards = 3;
    EXPECT_EQ(stack::create(o, err), nullptr);
    EXPECT_NE(err.find("lcores"), std::string::npos) << err;
    o.shards = 2;
    o.pcap = "/tmp/never.pcap";
    EXPECT_EQ(stack::create(o, err), nullptr);
    EXPECT_NE(err.find("--pcap"), std::string::npos) << err;
}

} // namespace
} // namespace uroce::app

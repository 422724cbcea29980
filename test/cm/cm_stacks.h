/* SPDX-License-Identifier: BSD-3-Clause
 * Test fixture for the rdma_cm layer: two full stacks (memlink port,
 * engine, device, neighbours, CM on QP1) joined by an in-memory link, in
 * one process on one thread, on a manual clock (CM timeouts of seconds
 * without sleeping).
 */
#ifndef UROCE_TEST_CM_STACKS_H
#define UROCE_TEST_CM_STACKS_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <rte_mbuf.h>

#include <uroce/clock.h>
#include <uroce/cm.h>
#include <uroce/engine.h>
#include <uroce/neigh.h>
#include <uroce/verbs.h>

#include "eal_env.h"
#include "uroce_memlink.h"

namespace uroce::test {

inline rte_mempool *cm_test_pool() {
    static rte_mempool *mp = rte_pktmbuf_pool_create(
        "uroce_cm", 16383, 256, 0, RTE_PKTMBUF_HEADROOM + 4096 + 256, SOCKET_ID_ANY);
    return mp;
}

struct cm_stack {
    memlink_port *port = nullptr;
    local_addr_table addrs;
    std::unique_ptr<neigh> nb;
    std::unique_ptr<engine> eng;
    device *ctx = nullptr;
    cm_service *cm = nullptr;
    cm_event_channel *ch = nullptr;
    uroce::pd *pd = nullptr;
    uroce::cq *cq = nullptr;
    uint32_t ip = 0;

    void teardown() {
        if (ch) { /* what the test left unread */
            cm_event *ev;
            while (get_event(ch, &ev) == verbs_error::ok) {
                cm_id *unanswered = ev->event == cm_event_type::connect_request ? ev->id : nullptr;
                ack_event(ev);
                if (unanswered) destroy_id(unanswered);
            }
        }
        if (ch) {
            EXPECT_EQ(destroy_event_channel(ch), verbs_error::ok);
        }
        if (cm) {
            EXPECT_EQ(close_cm(cm), verbs_error::ok);
        }
        if (ctx) close_device(ctx);
        ch = nullptr;
        cm = nullptr;
        ctx = nullptr;
        eng.reset();
        nb.reset();
    }
};

/* An event channel's fd (or any) is readable now: an event waits. */
inline bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

class cm_pair : public ::testing::Test {
  protected:
    static constexpr uint32_t ip_a = 0x0a4d000c, ip_b = 0x0a4d000b; /* 10.77.0.12, 10.77.0.11 */
    manual_clock clk{1'000'000'000};
    std::unique_ptr<memlink> link;
    cm_stack a, b;
    cm_config cfg;
    bool with_cm = true; /* false: the stacks without the CM (QP1 free for a test) */
    /* every frame takes this long over the link (0: it arrives at once);
     * the clock then moves while frames are on their way */
    uint64_t link_delay_ns = 0;
    static constexpr uint64_t delayed_step_ns = 50'000;

    void SetUp() override { ASSERT_NE(cm_test_pool(), nullptr); }
    void TearDown() override {
        if (link) link->set_filter({});
        a.teardown();
        b.teardown();
        link.reset();
    }

    /* Both stacks; extra_b: more IPv4 addresses of b. */
    void start(bool ipv6 = false, std::vector<uint32_t> extra_b = {}) {
        memlink_config lc;
        if (link_delay_ns) {
            lc.delay = 1.0;
            lc.delay_ns = link_delay_ns;
        }
        link = std::make_unique<memlink>(lc, &clk);
        make(a, 0x0c, ip_a, ipv6, {}, 1);
        make(b, 0x0b, ip_b, ipv6, extra_b, 2);
    }

    void make(cm_stack &s, uint8_t mac_low, uint32_t ip, bool ipv6, std::vector<uint32_t> extra,
              uint64_t seed) {
        const uint8_t mac[6] = {0x02, 0, 0, 0, 0x77, mac_low};
        s.port = link->add_port(mac);
        s.ip = ip;
        s.addrs.set_mac(mac_addr::from_bytes(mac));
        ASSERT_TRUE(s.addrs.add_ipv4(ip, 24));
        for (uint32_t x : extra)
            ASSERT_TRUE(s.addrs.add_ipv4(x, 24));
        if (ipv6) {
            ASSERT_TRUE(s.addrs.add(v6_of(ip), 64));
        }
        neigh_config nc;
        nc.pool = cm_test_pool();
        nc.announce_on_start = false;
        s.nb = std::make_unique<neigh>(nc, s.addrs);
        s.eng = std::make_unique<engine>(*s.port);
        device_config dc;
        dc.dev = s.eng.get();
        dc.pool = cm_test_pool();
        dc.clock = &clk;
        dc.seed = seed;
        for (size_t i = 0; i < s.addrs.gid_count() && i < std::size(dc.gids); i++)
            dc.gids[dc.num_gids++] = *s.addrs.gid_at(i);
        verbs_error err;
        s.ctx = open_device(dc, &err);
        ASSERT_NE(s.ctx, nullptr) << verbs_error_str(err);
        s.eng->attach(s.ctx, s.nb.get());
        if (with_cm) {
            cm_config c = cfg;
            c.seed = seed;
            s.cm = open_cm(*s.eng, c, &err);
            ASSERT_NE(s.cm, nullptr) << verbs_error_str(err);
            s.ch = create_event_channel(s.cm, &err);
            ASSERT_NE(s.ch, nullptr) << verbs_error_str(err);
        }
        s.pd = alloc_pd(s.ctx);
        s.cq = create_cq(s.ctx, 8192);
        ASSERT_TRUE(s.pd && s.cq);
    }

    static gid v6_of(uint32_t ip) {
        gid g = *gid::parse("fd00:77::");
        store_be32(g.raw.data() + 12, ip);
        return g;
    }

    static sockaddr_storage addr(uint32_t ip, uint16_t port) {
        sockaddr_storage ss{};
        auto *in = reinterpret_cast<sockaddr_in *>(&ss);
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(ip);
        in->sin_port = htons(port);
        return ss;
    }
    static sockaddr_storage addr6(const gid &g, uint16_t port) {
        sockaddr_storage ss{};
        auto *in6 = reinterpret_cast<sockaddr_in6 *>(&ss);
        in6->sin6_family = AF_INET6;
        std::memcpy(in6->sin6_addr.s6_addr, g.raw.data(), 16);
        in6->sin6_port = htons(port);
        return ss;
    }
    static const sockaddr *sa(const sockaddr_storage &ss) {
        return reinterpret_cast<const sockaddr *>(&ss);
    }

    /* One round of both loops; true when a frame moved. */
    bool pump() {
        bool moved = false;
        rte_mbuf *pkts[64];
        for (cm_stack *s : {&a, &b}) {
            uint16_t n = s->port->rx_burst(pkts, 64);
            if (n) moved = true;
            s->eng->rx_burst(pkts, n);
            if (s->eng->poll()) moved = true;
        }
        return moved;
    }

    /* Pump until pred(); when the link is quiet, let time pass (step_ns).
     * With link_delay_ns, frames on their way need time to pass too: then
     * it moves in steps of delayed_step_ns whenever no frame moved. */
    bool run_until(const std::function<bool()> &pred, uint64_t max_ns = 120'000'000'000ull,
                   uint64_t step_ns = 1'000'000) {
        const uint64_t end = clk.now_ns() + max_ns;
        for (;;) {
            if (pred()) return true;
            if (!pump() && (link_delay_ns || link->in_flight() == 0)) {
                if (clk.now_ns() >= end) return pred();
                clk.advance(link_delay_ns ? std::min(step_ns, delayed_step_ns) : step_ns);
            }
        }
    }

    /* The next event on s's channel (pumping meanwhile); nullptr on timeout. */
    cm_event *next_event(cm_stack &s, uint64_t max_ns = 120'000'000'000ull) {
        cm_event *ev = nullptr;
        run_until([&] { return get_event(s.ch, &ev) == verbs_error::ok; }, max_ns);
        return ev;
    }

    /* The next event, which must be of type t; acknowledged unless keep. */
    ::testing::AssertionResult expect_event(cm_stack &s, cm_event_type t,
                                            cm_event *keep_out = nullptr, cm_id **id_out = nullptr,
                                            int *status = nullptr) {
        cm_event *ev = next_event(s);
        if (!ev) return ::testing::AssertionFailure() << "no event, wanted " << cm_event_str(t);
        if (id_out) *id_out = ev->id;
        if (status) *status = ev->status;
        if (keep_out) *keep_out = *ev;
        const cm_event_type got = ev->event;
        const int st = ev->status;
        ack_event(ev);
        if (got != t)
            return ::testing::AssertionFailure() << "got " << cm_event_str(got) << " (status " << st
                                                 << "), wanted " << cm_event_str(t);
        return ::testing::AssertionSuccess();
    }

    qp_init_attr qp_init(cm_stack &s, uint32_t depth = 64) {
        qp_init_attr ia;
        ia.send_cq = s.cq;
        ia.recv_cq = s.cq;
        ia.cap.max_send_wr = depth;
        ia.cap.max_recv_wr = depth;
        return ia;
    }
};

} // namespace uroce::test

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_*_pingpong exchange: golden bytes from real rdma-core runs (rxe, Linux
 * 6.1, rdma-core 44), loopback end to end, and error paths.
 *
 * Captures: test/apps/common/data/oob-ibv_rc_pingpong.txt (tshark follow dump
 * from /work/shared/golden), test/golden/rc_pingpong.pcap and
 * test/golden/ud_pingpong.pcap (their TCP segments).
 */
#include "pingpong_oob.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "oob_golden.h"

using namespace uroce::oob;
using namespace std::chrono_literals;
namespace pp = uroce::oob::pingpong;
using uroce::test::tcp_capture;

namespace {

gid_raw v4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return gid_raw{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

struct golden_case {
    const char *name;
    tcp_capture cap;
    pp::dest client, server;
};

/* The three captures and the addresses the stock tools printed for them. */
std::vector<golden_case> golden_cases() {
    std::vector<golden_case> out;
    std::string err;
    auto txt =
        uroce::test::read_follow_dump(uroce::test::oob_data_path("oob-ibv_rc_pingpong.txt"), err);
    EXPECT_TRUE(err.empty()) << err;
    out.push_back({"oob-ibv_rc_pingpong.txt",
                   txt,
                   {0, 0x11, 0x94a939, v4_gid(10, 77, 0, 12)},
                   {0, 0x11, 0xa0668a, v4_gid(10, 77, 0, 11)}});
    auto rc = uroce::test::read_pcap_tcp(uroce::test::golden_path("rc_pingpong.pcap"), 18515, err);
    EXPECT_TRUE(err.empty()) << err;
    /* Same run as the follow dump. */
    out.push_back({"rc_pingpong.pcap",
                   rc,
                   {0, 0x11, 0x94a939, v4_gid(10, 77, 0, 12)},
                   {0, 0x11, 0xa0668a, v4_gid(10, 77, 0, 11)}});
    auto ud = uroce::test::read_pcap_tcp(uroce::test::golden_path("ud_pingpong.pcap"), 18515, err);
    EXPECT_TRUE(err.empty()) << err;
    out.push_back({"ud_pingpong.pcap",
                   ud,
                   {0, 0x12, 0x4e5794, v4_gid(10, 77, 0, 12)},
                   {0, 0x12, 0x15a340, v4_gid(10, 77, 0, 11)}});
    return out;
}

} // namespace

TEST(pingpong_wire, gid_wire_hex) {
    gid_raw g = v4_gid(10, 77, 0, 12);
    EXPECT_EQ(pp::gid_to_wire(g), "00000000000000000000ffff0a4d000c");
    gid_raw back{};
    ASSERT_TRUE(pp::wire_to_gid("00000000000000000000FFFF0A4D000C", back));
    EXPECT_EQ(back, g);
    EXPECT_FALSE(pp::wire_to_gid("00000000000000000000ffff0a4d000", back));  /* 31 digits */
    EXPECT_FALSE(pp::wire_to_gid("00000000000000000000ffff0a4d000g", back)); /* not hex */
    gid_raw ll{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x4d, 0x00, 0x0b};
    EXPECT_EQ(pp::gid_to_wire(ll), "fe80000000000000505400fffe4d000b");
}

TEST(pingpong_wire, format_layout) {
    pp::dest d{0x0001, 0x000011, 0x91c68e, v4_gid(10, 77, 0, 12)};
    auto m = pp::format(d);
    ASSERT_EQ(m.size(), 52u);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(m.data())),
              "0001:000011:91c68e:00000000000000000000ffff0a4d000c");
    EXPECT_EQ(m[51], 0);
    /* 24-bit fields are masked, never widen the fixed buffer. */
    pp::dest wide{0xffff, 0x1abcdef, 0xff123456, {}};
    auto w = pp::format(wide);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(w.data()), 19), "ffff:abcdef:123456:");
}

/* (1) Golden: each captured message parses into the fields the tools printed,
 * and re-formats to the same 52 bytes; the client's "done\0" is 5 bytes. */
TEST(pingpong_golden, parse_and_reformat_captured_messages) {
    for (const auto &g : golden_cases()) {
        SCOPED_TRACE(g.name);
        ASSERT_EQ(g.cap.sizes(true), (std::vector<size_t>{52, 5}));
        ASSERT_EQ(g.cap.sizes(false), (std::vector<size_t>{52}));
        const auto &cmsg = g.cap.chunks[0].bytes;
        const auto &smsg = g.cap.chunks[1].bytes;
        const auto &done = g.cap.chunks[2].bytes;
        ASSERT_TRUE(g.cap.chunks[0].from_client);
        ASSERT_FALSE(g.cap.chunks[1].from_client);
        ASSERT_TRUE(g.cap.chunks[2].from_client);

        auto c = pp::parse(cmsg);
        ASSERT_TRUE(c) << c.message();
        EXPECT_EQ(*c, g.client);
        auto s = pp::parse(smsg);
        ASSERT_TRUE(s) << s.message();
        EXPECT_EQ(*s, g.server);

        auto cf = pp::format(*c);
        auto sf = pp::format(*s);
        EXPECT_EQ(std::vector<uint8_t>(cf.begin(), cf.end()), cmsg);
        EXPECT_EQ(std::vector<uint8_t>(sf.begin(), sf.end()), smsg);
        EXPECT_EQ(done, (std::vector<uint8_t>{'d', 'o', 'n', 'e', 0}));
    }
}

/* (1b) Golden, whole sequence: our server against the captured client bytes
 * sends exactly the captured server bytes (hook before the reply); our client
 * against the captured server bytes sends exactly the captured client bytes. */
TEST(pingpong_golden, replay_against_captured_peer) {
    for (const auto &g : golden_cases()) {
        SCOPED_TRACE(g.name);
        /* Our server vs the captured client. */
        {
            auto l = tcp_listener::listen("127.0.0.1", 0);
            ASSERT_TRUE(l) << l.message();
            std::string rerr;
            std::vector<uint8_t> got;
            std::thread peer([&] {
                auto s = connect_tcp("127.0.0.1", l->port(), 2s);
                if (!s) {
                    rerr = s.message();
                    return;
                }
                got = uroce::test::replay(*s, g.cap, /*as_client=*/true, rerr);
            });
            bool hook_ran = false;
            auto rem = pp::server_exchange(
                *l, g.server,
                [&](const pp::dest &d) -> result<void> {
                    hook_ran = true;
                    EXPECT_EQ(d, g.client);
                    return {};
                },
                2s, 2s);
            peer.join();
            ASSERT_TRUE(rem) << rem.message();
            EXPECT_TRUE(hook_ran);
            EXPECT_EQ(*rem, g.client);
            EXPECT_TRUE(rerr.empty()) << rerr;
            EXPECT_EQ(got, g.cap.stream(false));
        }
        /* Our client vs the captured server. */
        {
            auto l = tcp_listener::listen("127.0.0.1", 0);
            ASSERT_TRUE(l) << l.message();
            std::string rerr;
            std::vector<uint8_t> got;
            std::thread peer([&] {
                auto s = l->accept(2s);
                if (!s) {
                    rerr = s.message();
                    return;
                }
                got = uroce::test::replay(*s, g.cap, /*as_client=*/false, rerr);
            });
            auto rem = pp::client_exchange("127.0.0.1", l->port(), g.client, 2s);
            peer.join();
            ASSERT_TRUE(rem) << rem.message();
            EXPECT_EQ(*rem, g.server);
            EXPECT_TRUE(rerr.empty()) << rerr;
            EXPECT_EQ(got, g.cap.stream(true));
        }
    }
}

/* (2) Loopback: both sides ours, RC (hook connects) and UD (same format). */
TEST(pingpong_loopback, rc_and_ud) {
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(round == 0 ? "rc" : "ud");
        auto l = tcp_listener::listen("127.0.0.1", 0);
        ASSERT_TRUE(l) << l.message();
        pp::dest cl{0, 0x11, 0x123456, v4_gid(127, 0, 0, 1)};
        pp::dest sv{0, round == 0 ? 0x12u : 0x13u, 0xabcdef, v4_gid(127, 0, 0, 1)};
        /* The hook is slow: if the server replied before running it, the
         * client would return before hook_done is set. */
        std::atomic<bool> hook_done{false};
        result<pp::dest> srv = make_error(errc::io, "not run");
        std::thread t([&] {
            srv = pp::server_exchange(
                *l, sv,
                [&](const pp::dest &remote) -> result<void> {
                    std::this_thread::sleep_for(100ms);
                    hook_done = remote == cl;
                    return {};
                },
                2s, 2s);
        });
        auto cli = pp::client_exchange("127.0.0.1", l->port(), cl, 2s);
        bool hook_before_reply = hook_done;
        t.join();
        ASSERT_TRUE(cli) << cli.message();
        ASSERT_TRUE(srv) << srv.message();
        EXPECT_EQ(*cli, sv);
        EXPECT_EQ(*srv, cl);
        EXPECT_TRUE(hook_before_reply);
    }
}

/* srq_pingpong: 256 slots each way whatever -q says; the stock tool sends
 * the unused slots uninitialised, so they are read and not parsed. */
TEST(pingpong_loopback, srq_slots) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l) << l.message();
    std::vector<pp::dest> cl, sv;
    for (uint32_t i = 0; i < 4; ++i) {
        cl.push_back({0, 0x11 + i, 0x100 + i, v4_gid(127, 0, 0, 1)});
        sv.push_back({0, 0x31 + i, 0x200 + i, v4_gid(127, 0, 0, 2)});
    }
    std::vector<pp::dest> hooked;
    result<std::vector<pp::dest>> srv = make_error(errc::io, "not run");
    std::thread t([&] {
        auto s = l->accept(2s);
        if (!s) return;
        srv = pp::server_exchange_multi(
            *s, sv, pp::srq_slots,
            [&](std::span<const pp::dest> remote) -> result<void> {
                hooked.assign(remote.begin(), remote.end());
                return {};
            },
            2s);
    });
    /* The client side by hand, as the stock tool: 4 real slots, 252 of
     * garbage (not even a valid message), then "done". */
    auto c = connect_tcp("127.0.0.1", l->port(), 2s);
    ASSERT_TRUE(c) << c.message();
    std::vector<uint8_t> out;
    for (size_t i = 0; i < pp::srq_slots; ++i) {
        auto m = i < cl.size() ? pp::format(cl[i]) : pp::message{};
        if (i >= cl.size()) std::memset(m.data(), 0xa5, m.size());
        out.insert(out.end(), m.begin(), m.end());
    }
    ASSERT_TRUE(c->write_all(out, 2s, "slots"));
    std::vector<uint8_t> in(pp::srq_slots * pp::msg_size);
    ASSERT_TRUE(c->read_exact(in, 2s, "slots"));
    ASSERT_TRUE(c->write_all(std::string_view("done", 5), 2s, "done"));
    t.join();
    ASSERT_TRUE(srv) << srv.message();
    EXPECT_EQ(*srv, cl);
    EXPECT_EQ(hooked, cl);
    for (size_t i = 0; i < pp::srq_slots; ++i) {
        auto d = pp::parse(std::span<const uint8_t>(in).subspan(i * pp::msg_size, pp::msg_size));
        ASSERT_TRUE(d) << i;
        EXPECT_EQ(*d, i < sv.size() ? sv[i] : pp::dest{});
    }

    /* And our client against our server. */
    auto l2 = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l2);
    std::thread t2([&] {
        auto s = l2->accept(2s);
        if (!s) return;
        srv = pp::server_exchange_multi(*s, sv, pp::srq_slots, nullptr, 2s);
    });
    auto cli = pp::client_exchange_multi("127.0.0.1", l2->port(), cl, pp::srq_slots, 2s);
    t2.join();
    ASSERT_TRUE(cli) << cli.message();
    ASSERT_TRUE(srv) << srv.message();
    EXPECT_EQ(*cli, sv);
    EXPECT_EQ(*srv, cl);
}

/* (3) Error paths. */
TEST(pingpong_errors, peer_closes_mid_exchange) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::thread t([&] {
        auto s = l->accept(2s);
        if (!s) return;
        uint8_t in[52];
        (void)s->read_exact(in, 2s, "x");
        const char half[] = "0000:000011";
        (void)s->write_all(std::string_view(half), 1s, "x");
        s->close();
    });
    auto r = pp::client_exchange("127.0.0.1", l->port(), {}, 2s);
    t.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::peer_closed);
    EXPECT_EQ(
        r.message(),
        "peer closed the connection during the pingpong address exchange (got 11 of 52 bytes)");
}

TEST(pingpong_errors, server_never_answers) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::atomic<bool> stop{false};
    std::thread t([&] {
        auto s = l->accept(2s);
        for (int i = 0; i < 100 && !stop; ++i)
            std::this_thread::sleep_for(10ms);
    });
    auto t0 = std::chrono::steady_clock::now();
    auto r = pp::client_exchange("127.0.0.1", l->port(), {}, 200ms);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    stop = true;
    t.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::timeout);
    EXPECT_EQ(
        r.message(),
        "timed out after 200 ms waiting for the pingpong address exchange (got 0 of 52 bytes)");
    EXPECT_LT(ms, 2000);
}

TEST(pingpong_errors, client_never_sends) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::thread t([&] {
        auto c = connect_tcp("127.0.0.1", l->port(), 1s);
        std::this_thread::sleep_for(400ms);
    });
    auto r = pp::server_exchange(*l, {}, nullptr, 1s, 200ms);
    t.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::timeout);
}

TEST(pingpong_errors, no_client_connects) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    auto r = pp::server_exchange(*l, {}, nullptr, 200ms, 200ms);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::timeout);
    EXPECT_NE(r.message().find("waiting for a client to connect"), std::string::npos);
}

TEST(pingpong_errors, malformed_messages) {
    auto good = pp::format({0, 0x11, 0x94a939, v4_gid(10, 77, 0, 12)});
    auto bad = [&](size_t pos, uint8_t c) {
        auto m = good;
        m[pos] = c;
        return pp::parse(m);
    };
    EXPECT_TRUE(pp::parse(good));
    auto r = bad(4, '-');
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::malformed);
    EXPECT_EQ(r.message().rfind(
                  "malformed pingpong address message from peer: expected ':' after the LID: "
                  "\"0000-000011:94a939:",
                  0),
              0u)
        << r.message();
    EXPECT_FALSE(bad(7, 'z'));
    EXPECT_FALSE(bad(30, ':'));
    EXPECT_FALSE(bad(51, 'x'));
    std::vector<uint8_t> short_msg(good.begin(), good.begin() + 40);
    EXPECT_FALSE(pp::parse(short_msg));

    /* Over the wire: a server that answers garbage. */
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::thread t([&] {
        auto s = l->accept(2s);
        if (!s) return;
        uint8_t in[52];
        (void)s->read_exact(in, 2s, "x");
        std::array<uint8_t, 52> junk;
        junk.fill('Z');
        (void)s->write_all(junk, 1s, "x");
        s->drain_until_eof(1s);
    });
    auto w = pp::client_exchange("127.0.0.1", l->port(), {}, 1s);
    t.join();
    ASSERT_FALSE(w);
    EXPECT_EQ(w.code(), errc::malformed);
}

TEST(pingpong_errors, hook_failure_closes_without_reply) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    result<pp::dest> srv = make_error(errc::io, "not run");
    std::thread t([&] {
        srv = pp::server_exchange(
            *l, {},
            [](const pp::dest &) -> result<void> {
                return make_error(errc::io, "modify QP to RTR failed");
            },
            2s, 2s);
    });
    auto cli = pp::client_exchange("127.0.0.1", l->port(), {}, 2s);
    t.join();
    ASSERT_FALSE(srv);
    EXPECT_EQ(srv.code(), errc::callback);
    EXPECT_EQ(srv.message(),
              "could not connect to the remote QP before replying: modify QP to RTR failed");
    ASSERT_FALSE(cli);
    EXPECT_EQ(cli.code(), errc::peer_closed);
}

TEST(pingpong_errors, wrong_done) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::thread t([&] {
        auto s = connect_tcp("127.0.0.1", l->port(), 1s);
        if (!s) return;
        auto m = pp::format({});
        (void)s->write_all(m, 1s, "x");
        uint8_t in[52];
        (void)s->read_exact(in, 1s, "x");
        (void)s->write_all(std::string_view("nope", 5), 1s, "x");
        s->drain_until_eof(1s);
    });
    auto r = pp::server_exchange(*l, {}, nullptr, 1s, 1s);
    t.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::malformed);
}

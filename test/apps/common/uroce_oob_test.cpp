/* SPDX-License-Identifier: BSD-3-Clause
 * uroce_oob: TCP helpers on 127.0.0.1 with ephemeral ports; every wait bounded.
 */
#include "uroce_oob.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using namespace uroce::oob;
using namespace std::chrono_literals;

namespace {

struct pair_fixture {
    tcp_listener l;
    tcp_socket client, server;
};

/* A connected client/server pair over 127.0.0.1. */
pair_fixture make_pair() {
    pair_fixture p;
    auto l = tcp_listener::listen("127.0.0.1", 0);
    EXPECT_TRUE(l) << l.message();
    p.l = std::move(*l);
    auto c = connect_tcp("127.0.0.1", p.l.port(), 2s);
    EXPECT_TRUE(c) << c.message();
    p.client = std::move(*c);
    auto s = p.l.accept(2s);
    EXPECT_TRUE(s) << s.message();
    p.server = std::move(*s);
    return p;
}

long elapsed_ms(std::chrono::steady_clock::time_point t0) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
}

} // namespace

TEST(uroce_oob, format_duration) {
    EXPECT_EQ(format_duration(10s), "10 s");
    EXPECT_EQ(format_duration(200ms), "200 ms");
    EXPECT_EQ(format_duration(1500ms), "1.5 s");
}

TEST(uroce_oob, ephemeral_listen_and_exact_io) {
    auto p = make_pair();
    ASSERT_NE(p.l.port(), 0);
    ASSERT_TRUE(p.client.is_open());
    ASSERT_TRUE(p.server.is_open());
    EXPECT_NE(p.client.peer().find("127.0.0.1:"), std::string::npos);
    const uint8_t msg[52] = {'0', '0', '0', '0', ':'};
    ASSERT_TRUE(p.client.write_all(msg, 1s, "test"));
    uint8_t in[52] = {};
    auto r = p.server.read_exact(in, 1s, "test");
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(0, std::memcmp(in, msg, sizeof msg));
}

TEST(uroce_oob, read_exact_reassembles_split_writes) {
    auto p = make_pair();
    std::thread t([&] {
        const uint8_t a[3] = {1, 2, 3}, b[5] = {4, 5, 6, 7, 8};
        (void)p.client.write_all(a, 1s, "a");
        std::this_thread::sleep_for(50ms);
        (void)p.client.write_all(b, 1s, "b");
    });
    uint8_t in[8] = {};
    auto r = p.server.read_exact(in, 2s, "split");
    t.join();
    ASSERT_TRUE(r) << r.message();
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(in[i], i + 1);
}

TEST(uroce_oob, read_timeout_is_bounded_and_named) {
    auto p = make_pair();
    uint8_t in[52];
    auto t0 = std::chrono::steady_clock::now();
    auto r = p.server.read_exact(in, 200ms, "the key exchange");
    long ms = elapsed_ms(t0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::timeout);
    EXPECT_EQ(r.message(),
              "timed out after 200 ms waiting for the key exchange (got 0 of 52 bytes)");
    EXPECT_GE(ms, 150);
    EXPECT_LT(ms, 2000);
}

TEST(uroce_oob, peer_close_mid_message) {
    auto p = make_pair();
    const uint8_t part[10] = {};
    ASSERT_TRUE(p.client.write_all(part, 1s, "x"));
    p.client.close();
    uint8_t in[52];
    auto r = p.server.read_exact(in, 2s, "the key exchange");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::peer_closed);
    EXPECT_EQ(r.message(),
              "peer closed the connection during the key exchange (got 10 of 52 bytes)");
}

TEST(uroce_oob, write_to_closed_peer_is_an_error_not_a_signal) {
    auto p = make_pair();
    p.server.close();
    std::this_thread::sleep_for(50ms);
    std::vector<uint8_t> big(1 << 16, 0x55);
    result<void> r;
    /* The first write may still succeed (the RST arrives after it). */
    for (int i = 0; i < 20 && r.ok(); ++i) {
        r = p.client.write_all(big, 500ms, "the bw report exchange");
        if (r) std::this_thread::sleep_for(20ms);
    }
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::peer_closed) << r.message();
}

TEST(uroce_oob, accept_timeout) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l) << l.message();
    auto t0 = std::chrono::steady_clock::now();
    auto s = l->accept(200ms);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), errc::timeout);
    EXPECT_EQ(s.message(), "timed out after 200 ms waiting for a client to connect on port " +
                               std::to_string(l->port()));
    EXPECT_LT(elapsed_ms(t0), 2000);
}

TEST(uroce_oob, connect_refused_retries_until_timeout) {
    uint16_t port;
    {
        auto l = tcp_listener::listen("127.0.0.1", 0);
        ASSERT_TRUE(l);
        port = l->port();
    } /* closed: nothing listens there now */
    auto t0 = std::chrono::steady_clock::now();
    auto c = connect_tcp("127.0.0.1", port, 300ms, 50ms);
    long ms = elapsed_ms(t0);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.code(), errc::connect);
    EXPECT_EQ(c.message(), "could not connect to 127.0.0.1:" + std::to_string(port) +
                               " within 300 ms (last error: Connection refused)");
    EXPECT_GE(ms, 250);
    EXPECT_LT(ms, 3000);
}

TEST(uroce_oob, connect_succeeds_when_server_starts_late) {
    uint16_t port;
    {
        auto l = tcp_listener::listen("127.0.0.1", 0);
        ASSERT_TRUE(l);
        port = l->port();
    }
    std::thread srv([port] {
        std::this_thread::sleep_for(300ms);
        auto l = tcp_listener::listen("127.0.0.1", port);
        if (!l) return; /* port taken meanwhile: the client then times out */
        auto s = l->accept(3s);
    });
    auto c = connect_tcp("127.0.0.1", port, 3s, 50ms);
    srv.join();
    EXPECT_TRUE(c) << c.message();
}

TEST(uroce_oob, unknown_host) {
    auto c = connect_tcp("no-such-host.invalid", 18515, 200ms);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.code(), errc::resolve);
    EXPECT_EQ(c.message().rfind("unknown host 'no-such-host.invalid': ", 0), 0u) << c.message();
}

TEST(uroce_oob, ipv6_loopback_and_dual_stack_any) {
    auto l = tcp_listener::listen("", 0);
    ASSERT_TRUE(l) << l.message();
    /* The "any" listener accepts IPv4 peers (dual stack or 0.0.0.0). */
    auto c = connect_tcp("127.0.0.1", l->port(), 1s);
    ASSERT_TRUE(c) << c.message();
    auto s = l->accept(1s);
    ASSERT_TRUE(s) << s.message();
    auto c6 = connect_tcp("::1", l->port(), 500ms);
    if (c6) { /* only where ::1 exists */
        auto s6 = l->accept(1s);
        EXPECT_TRUE(s6) << s6.message();
    }
}

TEST(uroce_oob, listen_on_a_busy_port) {
    auto a = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(a) << a.message();
    auto b = tcp_listener::listen("127.0.0.1", a->port());
    ASSERT_FALSE(b);
    EXPECT_EQ(b.code(), errc::listen);
    EXPECT_EQ(b.message(), "could not listen on 127.0.0.1:" + std::to_string(a->port()) +
                               ": Address already in use");
}

TEST(uroce_oob, errors_on_closed_socket) {
    tcp_socket s;
    uint8_t b[4];
    auto r = s.read_exact(b, 100ms, "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::invalid);
    EXPECT_STREQ(errc_name(errc::peer_closed), "peer_closed");
}

/* set_cancel_flag: a wait far longer than the test (an hour, as a
 * --run_infinitely server's) ends with errc::cancelled soon after the flag
 * goes up; each kind of wait (read, accept). */
TEST(uroce_oob, cancel_flag_ends_long_waits) {
    std::atomic<bool> stop{false};
    set_cancel_flag(&stop);
    auto p = make_pair();
    std::thread raiser([&] {
        std::this_thread::sleep_for(150ms);
        stop.store(true);
    });
    uint8_t in[52];
    auto t0 = std::chrono::steady_clock::now();
    auto r = p.server.read_exact(in, std::chrono::hours(1), "the end of the client's run");
    const long ms = elapsed_ms(t0);
    raiser.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::cancelled);
    EXPECT_EQ(r.message(), "interrupted during the end of the client's run");
    EXPECT_GE(ms, 100);
    EXPECT_LT(ms, 5000);
    /* still up: every wait ends at once */
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l) << l.message();
    auto s = l->accept(std::chrono::hours(1));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), errc::cancelled);
    EXPECT_EQ(s.message(), "interrupted while accepting");
    set_cancel_flag(nullptr);
    /* without a flag, waits run to their deadline as before */
    auto t1 = std::chrono::steady_clock::now();
    auto s2 = l->accept(200ms);
    ASSERT_FALSE(s2);
    EXPECT_EQ(s2.code(), errc::timeout);
    EXPECT_GE(elapsed_ms(t1), 150);
}

/* A wait longer than poll() takes in one call (its int milliseconds): still
 * bounded by its deadline, in steps, and data that arrives ends it. */
TEST(uroce_oob, very_long_deadline_still_reads) {
    auto p = make_pair();
    std::thread writer([&] {
        std::this_thread::sleep_for(100ms);
        const uint8_t msg[4] = {1, 2, 3, 4};
        (void)p.client.write_all(msg, 1s, "x");
    });
    uint8_t in[4];
    auto r = p.server.read_exact(in, std::chrono::hours(24 * 365 * 10), "the message");
    writer.join();
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(in[3], 4);
}

/* SPDX-License-Identifier: BSD-3-Clause
 * perftest exchange: golden bytes from real perftest 4.5-0.17 ("6.06") runs
 * between two rxe devices, loopback end to end for every test kind, and
 * error paths.
 *
 * Captures: test/apps/common/data/oob-ib_write_bw.txt and
 * oob-ib_send_lat.txt (tshark follow dumps from /work/shared/golden) and the
 * TCP segments of test/golden/ib_write_bw.pcap (a different run; the capture
 * stops after the third KEY exchange).
 */
#include "perftest_oob.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "oob_golden.h"

using namespace uroce::oob;
using namespace std::chrono_literals;
namespace pt = uroce::oob::perftest;
using uroce::test::tcp_capture;

namespace {

gid_raw v4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return gid_raw{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

tcp_capture load_dump(const char *name) {
    std::string err;
    auto cap = uroce::test::read_follow_dump(uroce::test::oob_data_path(name), err);
    EXPECT_TRUE(err.empty()) << err;
    return cap;
}

std::vector<uint8_t> chunk(const tcp_capture &cap, bool from_client, size_t index) {
    size_t n = 0;
    for (const auto &c : cap.chunks)
        if (c.from_client == from_client && n++ == index) return c.bytes;
    return {};
}

template <size_t N> std::vector<uint8_t> vec(const std::array<uint8_t, N> &a) {
    return std::vector<uint8_t>(a.begin(), a.end());
}

/* The keys the stock tools exchanged in oob-ib_write_bw.txt. */
const pt::key wbw_client{0, 1, 0x2b, 0x522350, 0x10f6, 0x00007f7918f62000ull, v4_gid(10, 77, 0, 12),
                         0};
const pt::key wbw_server{0, 1, 0x2b, 0xa2f343, 0x0f87, 0x00007f0d1b1bf000ull, v4_gid(10, 77, 0, 11),
                         0};

} // namespace

/* ---- wire formats --------------------------------------------------------- */

TEST(perftest_wire, scalars) {
    EXPECT_EQ(vec(pt::format_be32(4096)), (std::vector<uint8_t>{0, 0, 0x10, 0}));
    EXPECT_EQ(vec(pt::format_be32(64)), (std::vector<uint8_t>{0, 0, 0, 0x40}));
    EXPECT_EQ(vec(pt::format_mtu(5)), (std::vector<uint8_t>{'5', 0}));
    EXPECT_EQ(vec(pt::format_mtu(3)), (std::vector<uint8_t>{'3', 0}));
    auto m = pt::parse_mtu(std::vector<uint8_t>{'3', 0});
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, 3);
    EXPECT_FALSE(pt::parse_mtu(std::vector<uint8_t>{'x', 0}));
    EXPECT_EQ(pt::negotiate_mtu(5, 3), 3);
    EXPECT_EQ(pt::negotiate_mtu(3, 5), 3);
    EXPECT_EQ(pt::negotiate_mtu(5, 0), 5); /* invalid remote MTU ignored */
    EXPECT_EQ(pt::mtu_bytes(5), 4096);
    EXPECT_EQ(pt::mtu_bytes(3), 1024);
    EXPECT_DOUBLE_EQ(pt::version_number("6.06"), 6.06);
    EXPECT_DOUBLE_EQ(pt::version_number("5.70-beta"), 5.70);
    EXPECT_DOUBLE_EQ(pt::version_number(""), 0.0);
    /* hton_double: big-endian IEEE-754. */
    EXPECT_EQ(vec(pt::format_double(1.0)), (std::vector<uint8_t>{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
    auto v = pt::format_version("6.06");
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(v.data())), "6.06");
    for (size_t i = 4; i < 16; ++i)
        EXPECT_EQ(v[i], 0);
}

TEST(perftest_wire, key_formats) {
    auto g = pt::format_key(wbw_client, pt::key_format::gid);
    ASSERT_EQ(g.size(), 108u);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(g.data())),
              "0000:0001:00002b:522350:000010f6:00007f7918f62000:00:00:00:00:00:00:00:00:00:00:ff:"
              "ff:0a:4d:00:0c:"
              "00000000:");
    auto n = pt::format_key(wbw_client, pt::key_format::no_gid);
    ASSERT_EQ(n.size(), 59u);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(n.data())),
              "0000:0001:00002b:522350:000010f6:00007f7918f62000:00000000");
    auto pg = pt::parse_key(g);
    ASSERT_TRUE(pg) << pg.message();
    EXPECT_EQ(*pg, wbw_client);
    auto pn = pt::parse_key(n);
    ASSERT_TRUE(pn) << pn.message();
    pt::key no_gid = wbw_client;
    no_gid.gid = {};
    EXPECT_EQ(*pn, no_gid);
    /* Full-width values. */
    pt::key big{0xffff, 0xffff, 0xffffff, 0xffffff, 0xffffffff, ~0ull, {}, 0xffffffff};
    big.gid.fill(0xff);
    auto pb = pt::parse_key(pt::format_key(big, pt::key_format::gid));
    ASSERT_TRUE(pb);
    EXPECT_EQ(*pb, big);
}

TEST(perftest_wire, malformed_keys) {
    auto g = pt::format_key(wbw_client, pt::key_format::gid);
    auto bad = [&](size_t pos, uint8_t c) {
        auto m = g;
        m[pos] = c;
        return pt::parse_key(m);
    };
    auto r = bad(9, '-');
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::malformed);
    EXPECT_EQ(
        r.message().rfind("malformed perftest KEY message from peer: expected ':' after OUT_READS: "
                          "\"0000:0001-00002b",
                          0),
        0u)
        << r.message();
    EXPECT_FALSE(bad(60, 'q'));  /* a GID byte */
    EXPECT_FALSE(bad(106, 'x')); /* the SRQN's trailing ':' */
    EXPECT_FALSE(bad(107, '!')); /* the NUL */
    EXPECT_FALSE(pt::parse_key(std::vector<uint8_t>(100, '0')));
    auto n = pt::format_key(wbw_client, pt::key_format::no_gid);
    n[58] = 'x';
    EXPECT_FALSE(pt::parse_key(n));
    auto v = pt::parse_version(std::vector<uint8_t>(16, '6'));
    ASSERT_FALSE(v);
    EXPECT_EQ(v.code(), errc::malformed);
}

TEST(perftest_wire, config_validation) {
    pt::config c;
    EXPECT_TRUE(pt::validate(c));
    c.version = "6.29";
    auto r = pt::validate(c);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::invalid);
    c.version = "5.60";
    EXPECT_FALSE(pt::validate(c));
    c.version = "6.27";
    EXPECT_TRUE(pt::validate(c));
    c.num_qps = 0;
    EXPECT_FALSE(pt::validate(c));
    c.num_qps = 1;
    c.kind = pt::test_kind::lat;
    c.duplex = true;
    EXPECT_FALSE(pt::validate(c));
}

/* ---- (1) golden: parse and re-format each captured message ---------------- */

TEST(perftest_golden, write_bw_dump_messages) {
    auto cap = load_dump("oob-ib_write_bw.txt");
    const std::vector<size_t> layout{16, 4, 4, 2, 108, 108, 108, 108, 8, 8, 8, 8, 8, 108, 5};
    ASSERT_EQ(cap.sizes(true), layout);
    ASSERT_EQ(cap.sizes(false), layout);
    for (bool cl : {true, false}) {
        SCOPED_TRACE(cl ? "client" : "server");
        auto ver = pt::parse_version(chunk(cap, cl, 0));
        ASSERT_TRUE(ver);
        EXPECT_EQ(*ver, "6.06");
        EXPECT_EQ(vec(pt::format_version(*ver)), chunk(cap, cl, 0));
        auto cb = chunk(cap, cl, 1), cls = chunk(cap, cl, 2);
        EXPECT_EQ(pt::parse_be32(std::span<const uint8_t, 4>(cb.data(), 4)), 4096);
        EXPECT_EQ(pt::parse_be32(std::span<const uint8_t, 4>(cls.data(), 4)), 64);
        EXPECT_EQ(vec(pt::format_be32(4096)), cb);
        EXPECT_EQ(vec(pt::format_be32(64)), cls);
        auto mtu = pt::parse_mtu(chunk(cap, cl, 3));
        ASSERT_TRUE(mtu);
        EXPECT_EQ(*mtu, 5);
        EXPECT_EQ(vec(pt::format_mtu(*mtu)), chunk(cap, cl, 3));
        /* The same key in all five hand shakes (4 before, 1 after the reports). */
        for (size_t i : {4u, 5u, 6u, 7u, 13u}) {
            auto k = pt::parse_key(chunk(cap, cl, i));
            ASSERT_TRUE(k) << k.message();
            EXPECT_EQ(*k, cl ? wbw_client : wbw_server);
            EXPECT_EQ(pt::format_key(*k, pt::key_format::gid), chunk(cap, cl, i));
        }
        /* xchg_bw_reports: five 8-byte fields, one write each. */
        std::vector<uint8_t> rep;
        for (size_t i = 8; i < 13; ++i) {
            auto c = chunk(cap, cl, i);
            rep.insert(rep.end(), c.begin(), c.end());
        }
        auto r = pt::parse_bw_report(rep, false);
        ASSERT_TRUE(r);
        /* Byte-exact round trip, including the server's garbage. */
        EXPECT_EQ(pt::format_bw_report(*r, false), rep);
        if (cl) {
            /* ib_write_bw -s 65536 -n 200: the client's real report. */
            EXPECT_EQ(r->size, 65536u);
            EXPECT_EQ(r->iters, 200u);
            EXPECT_NEAR(r->bw_peak, 34.61, 0.01);             /* MB/s */
            EXPECT_NEAR(r->bw_avg, 22.28, 0.01);              /* MB/s */
            EXPECT_NEAR(r->msg_rate_avg, 0.000356, 0.000001); /* Mpps */
            EXPECT_GT(r->bw_peak, r->bw_avg);
        } else {
            /* The half-duplex server never fills my_bw_rep: uninitialised stack
             * (here stack addresses 0x00007fff34da2bd4 ... and a 6). Only the
             * layout is meaningful. */
            EXPECT_EQ(r->size, 0x00007fff34da2bd4ull);
        }
        EXPECT_EQ(chunk(cap, cl, 14), (std::vector<uint8_t>{'d', 'o', 'n', 'e', 0}));
    }
}

TEST(perftest_golden, send_lat_dump_messages) {
    auto cap = load_dump("oob-ib_send_lat.txt");
    const std::vector<size_t> layout{16, 4, 4, 2, 108, 108, 108, 108, 108, 5};
    ASSERT_EQ(cap.sizes(true), layout);
    ASSERT_EQ(cap.sizes(false), layout);
    /* ib_send_lat -s 2 -n 1000: out_reads 1, rkey 0 (nobody WRITEs/READs). */
    const pt::key cl_key{0, 1, 0x2e, 0xe6a006, 0, 0x000055ed71b1d000ull, v4_gid(10, 77, 0, 12), 0};
    const pt::key sv_key{0, 1, 0x2e, 0x09db1b, 0, 0x0000563d39aa1000ull, v4_gid(10, 77, 0, 11), 0};
    for (bool cl : {true, false}) {
        SCOPED_TRACE(cl ? "client" : "server");
        for (size_t i = 4; i < 9; ++i) {
            auto k = pt::parse_key(chunk(cap, cl, i));
            ASSERT_TRUE(k) << k.message();
            /* The same key in all five hand shakes. */
            EXPECT_EQ(*k, cl ? cl_key : sv_key);
            EXPECT_EQ(pt::format_key(*k, pt::key_format::gid), chunk(cap, cl, i));
        }
        EXPECT_EQ(chunk(cap, cl, 9), (std::vector<uint8_t>{'d', 'o', 'n', 'e', 0}));
    }
}

TEST(perftest_golden, write_bw_pcap_prefix) {
    std::string err;
    auto cap = uroce::test::read_pcap_tcp(uroce::test::golden_path("ib_write_bw.pcap"), 18515, err);
    ASSERT_TRUE(err.empty()) << err;
    /* The capture keeps 300 frames: the TCP exchange up to the third KEY. */
    const std::vector<size_t> layout{16, 4, 4, 2, 108, 108, 108};
    ASSERT_EQ(cap.sizes(true), layout);
    ASSERT_EQ(cap.sizes(false), layout);
    const pt::key c{0, 1, 0x13, 0x111726, 0x042c, 0x00007fa16819e000ull, v4_gid(10, 77, 0, 12), 0};
    const pt::key s{0, 1, 0x13, 0x797298, 0x0466, 0x00007fa391ac2000ull, v4_gid(10, 77, 0, 11), 0};
    for (bool cl : {true, false}) {
        for (size_t i = 4; i < 7; ++i) {
            auto k = pt::parse_key(chunk(cap, cl, i));
            ASSERT_TRUE(k) << k.message();
            EXPECT_EQ(*k, cl ? c : s);
            EXPECT_EQ(pt::format_key(*k, pt::key_format::gid), chunk(cap, cl, i));
        }
    }
}

/* ---- (1b) golden: the whole sequence against the captured peer ------------ */

namespace {

struct replay_result {
    result<pt::outcome> ours = make_error(errc::io, "not run");
    std::vector<uint8_t> got;
    std::string peer_err;
};

/* Runs our side (`cfg.side`) against the other side of `cap` replayed. */
replay_result replay_session(const tcp_capture &cap, pt::config cfg, const pt::hooks &h) {
    replay_result rr;
    auto l = tcp_listener::listen("127.0.0.1", 0);
    EXPECT_TRUE(l) << l.message();
    const bool ours_is_client = cfg.side == pt::role::client;
    std::thread peer([&] {
        result<tcp_socket> s =
            ours_is_client ? l->accept(3s) : connect_tcp("127.0.0.1", l->port(), 3s);
        if (!s) {
            rr.peer_err = s.message();
            return;
        }
        rr.got = uroce::test::replay(*s, cap, /*as_client=*/!ours_is_client, rr.peer_err);
    });
    if (ours_is_client) {
        auto s = pt::session::connect("127.0.0.1", l->port(), cfg);
        if (s)
            rr.ours = pt::run(*s, h);
        else
            rr.ours = s.err();
    } else {
        auto s = pt::session::accept(*l, cfg, 3s);
        if (s)
            rr.ours = pt::run(*s, h);
        else
            rr.ours = s.err();
    }
    peer.join();
    return rr;
}

} // namespace

TEST(perftest_golden, write_bw_replay_both_roles) {
    auto cap = load_dump("oob-ib_write_bw.txt");
    auto report_of = [&](bool cl) {
        std::vector<uint8_t> rep;
        for (size_t i = 8; i < 13; ++i) {
            auto c = chunk(cap, cl, i);
            rep.insert(rep.end(), c.begin(), c.end());
        }
        return *pt::parse_bw_report(rep, false);
    };
    pt::config cfg;
    cfg.test_verb = pt::verb::write;
    cfg.kind = pt::test_kind::bw;
    cfg.mtu = 5;
    cfg.timeout = 3s;
    cfg.test_timeout = 3s;

    for (bool ours_client : {true, false}) {
        SCOPED_TRACE(ours_client ? "our client vs captured server"
                                 : "our server vs captured client");
        cfg.side = ours_client ? pt::role::client : pt::role::server;
        const pt::key mine = ours_client ? wbw_client : wbw_server;
        const pt::key theirs = ours_client ? wbw_server : wbw_client;
        int runs = 0;
        pt::hooks h;
        h.create_local = [&](const pt::negotiated &n) -> result<std::vector<pt::key>> {
            EXPECT_EQ(n.remote_version, "6.06");
            EXPECT_EQ(n.mtu, 5);
            EXPECT_EQ(n.cycle_buffer, 4096);
            EXPECT_EQ(n.cache_line_size, 64);
            return std::vector<pt::key>{mine};
        };
        h.connect_qps = [&](std::span<const pt::key> rem) -> result<void> {
            EXPECT_EQ(rem.size(), 1u);
            EXPECT_EQ(rem[0], theirs);
            return {};
        };
        h.run = [&](uint64_t size) -> result<pt::bw_report> {
            ++runs;
            EXPECT_EQ(size, 65536u);
            return report_of(true);
        };
        /* To reproduce the capture byte for byte, our idle server sends the
         * stock server's uninitialised bytes. */
        h.idle_report = [&] { return report_of(false); };
        cfg.size = 65536;
        auto rr = replay_session(cap, cfg, h);
        ASSERT_TRUE(rr.ours) << rr.ours.message();
        EXPECT_TRUE(rr.peer_err.empty()) << rr.peer_err;
        EXPECT_EQ(rr.got, cap.stream(ours_client));
        EXPECT_EQ(rr.ours->hand_shakes, 5);
        EXPECT_EQ(runs, ours_client ? 1 : 0);
        ASSERT_EQ(rr.ours->remote_reports.size(), 1u);
        EXPECT_EQ(pt::format_bw_report(rr.ours->remote_reports[0], false),
                  pt::format_bw_report(report_of(!ours_client), false));
    }
}

TEST(perftest_golden, send_lat_replay_both_roles) {
    auto cap = load_dump("oob-ib_send_lat.txt");
    pt::config cfg;
    cfg.test_verb = pt::verb::send;
    cfg.kind = pt::test_kind::lat;
    cfg.mtu = 5;
    cfg.size = 2;
    cfg.timeout = 3s;
    cfg.test_timeout = 3s;
    for (bool ours_client : {true, false}) {
        SCOPED_TRACE(ours_client ? "our client vs captured server"
                                 : "our server vs captured client");
        cfg.side = ours_client ? pt::role::client : pt::role::server;
        auto mine = pt::parse_key(chunk(cap, ours_client, 4));
        auto theirs = pt::parse_key(chunk(cap, !ours_client, 4));
        ASSERT_TRUE(mine && theirs);
        int runs = 0, prepares = 0;
        pt::hooks h;
        h.create_local = [&](const pt::negotiated &) -> result<std::vector<pt::key>> {
            return std::vector<pt::key>{*mine};
        };
        h.connect_qps = [&](std::span<const pt::key> rem) -> result<void> {
            EXPECT_EQ(rem[0], *theirs);
            return {};
        };
        h.prepare = [&](uint64_t) -> result<void> {
            ++prepares;
            return {};
        };
        h.run = [&](uint64_t) -> result<pt::bw_report> {
            ++runs;
            return pt::bw_report{};
        };
        auto rr = replay_session(cap, cfg, h);
        ASSERT_TRUE(rr.ours) << rr.ours.message();
        EXPECT_TRUE(rr.peer_err.empty()) << rr.peer_err;
        EXPECT_EQ(rr.got, cap.stream(ours_client));
        EXPECT_EQ(rr.ours->hand_shakes, 5);
        EXPECT_EQ(runs, 1);
        EXPECT_EQ(prepares, 1);
    }
}

/* ---- (2) loopback: both sides ours, every test kind ------------------------ */

namespace {

struct side_stats {
    std::atomic<int> runs{0}, prepares{0}, connects{0};
    std::vector<uint64_t> sizes;
    std::vector<std::pair<double, double>>
        exchanged; /* reports_exchanged: peaks, mine and peer's */
    std::mutex mu;
};

pt::key make_key(bool client, int qp) {
    pt::key k;
    k.out_reads = 16;
    k.qpn = static_cast<uint32_t>((client ? 0x100 : 0x200) + qp);
    k.psn = client ? 0x123456u : 0x654321u;
    k.rkey = client ? 0x1111u : 0x2222u;
    k.vaddr = client ? 0x7f0000001000ull + qp * 0x10000ull : 0x7f0000801000ull + qp * 0x10000ull;
    k.gid = v4_gid(127, 0, 0, 1);
    return k;
}

pt::hooks make_hooks(bool client, const pt::config &c, side_stats &st) {
    pt::hooks h;
    h.create_local = [client, c](const pt::negotiated &n) -> result<std::vector<pt::key>> {
        EXPECT_EQ(n.remote_version, "6.06");
        std::vector<pt::key> v;
        for (int i = 0; i < c.num_qps; ++i)
            v.push_back(make_key(client, i));
        return v;
    };
    h.connect_qps = [client, c, &st](std::span<const pt::key> rem) -> result<void> {
        ++st.connects;
        EXPECT_EQ(rem.size(), static_cast<size_t>(c.num_qps));
        for (int i = 0; i < static_cast<int>(rem.size()); ++i)
            EXPECT_EQ(rem[i], make_key(!client, i));
        return {};
    };
    h.prepare = [&st](uint64_t) -> result<void> {
        ++st.prepares;
        return {};
    };
    h.run = [client, &st](uint64_t size) -> result<pt::bw_report> {
        ++st.runs;
        {
            std::lock_guard<std::mutex> g(st.mu);
            st.sizes.push_back(size);
        }
        pt::bw_report r;
        r.size = size;
        r.iters = 1000;
        r.bw_peak = client ? 100.5 : 200.25;
        r.bw_avg = client ? 90.0 : 180.0;
        r.msg_rate_avg = 0.001;
        return r;
    };
    h.reports_exchanged = [&st](const pt::bw_report &mine, const pt::bw_report &peer) {
        std::lock_guard<std::mutex> g(st.mu);
        st.exchanged.emplace_back(mine.bw_peak, peer.bw_peak);
    };
    return h;
}

/* One exchange over 127.0.0.1: the server (sc) on a thread, the client
 * (cc) here; the client's session closes before the server is joined (a
 * --run_infinitely server waits for that). */
struct pair_outcome {
    result<pt::outcome> server = make_error(errc::io, "not run");
    result<pt::outcome> client = make_error(errc::io, "not run");
};
pair_outcome run_pair(const pt::config &sc, const pt::config &cc, side_stats &sst,
                      side_stats &cst) {
    pair_outcome o;
    auto l = tcp_listener::listen("127.0.0.1", 0);
    EXPECT_TRUE(l) << l.message();
    if (!l) return o;
    std::thread srv([&] {
        auto s = pt::session::accept(*l, sc, 2s);
        o.server = s ? pt::run(*s, make_hooks(false, sc, sst)) : result<pt::outcome>(s.err());
    });
    {
        auto cs = pt::session::connect("127.0.0.1", l->port(), cc);
        o.client = cs ? pt::run(*cs, make_hooks(true, cc, cst)) : result<pt::outcome>(cs.err());
    }
    srv.join();
    return o;
}

struct loop_case {
    pt::verb v;
    pt::test_kind k;
    bool duplex, run_all;
    int qps;
};

std::string case_name(const loop_case &lc) {
    return pt::test_name(lc.v, lc.k) + (lc.duplex ? " -b" : "") + (lc.run_all ? " -a" : "") +
           " -q " + std::to_string(lc.qps);
}

/* How many runs each side performs, as perftest does. */
int expected_runs(const loop_case &lc, bool client) {
    int n_sizes = lc.run_all ? 23 : 1;
    if (lc.v == pt::verb::atomic) n_sizes = 1;
    if (lc.k == pt::test_kind::bw) {
        if (lc.v == pt::verb::send || lc.duplex) return n_sizes;
        return client ? n_sizes : 0;
    }
    if (lc.v == pt::verb::send || lc.v == pt::verb::write) return n_sizes;
    return client ? n_sizes : 0;
}

} // namespace

TEST(perftest_loopback, every_test_kind) {
    std::vector<loop_case> cases;
    for (auto v : {pt::verb::send, pt::verb::write, pt::verb::read, pt::verb::atomic}) {
        for (bool run_all : {false, true}) {
            cases.push_back({v, pt::test_kind::bw, false, run_all, 1});
            cases.push_back({v, pt::test_kind::bw, true, run_all, 1});
            cases.push_back({v, pt::test_kind::lat, false, run_all, 1});
        }
        cases.push_back({v, pt::test_kind::bw, false, false, 3});
        cases.push_back({v, pt::test_kind::lat, false, false, 2});
    }
    for (const auto &lc : cases) {
        SCOPED_TRACE(case_name(lc));
        pt::config base;
        base.test_verb = lc.v;
        base.kind = lc.k;
        base.duplex = lc.duplex;
        base.run_all = lc.run_all;
        base.num_qps = lc.qps;
        base.size = lc.v == pt::verb::atomic ? 8 : 4096;
        base.timeout = 2s;
        base.test_timeout = 2s;
        pt::config sc = base, cc = base;
        sc.side = pt::role::server;
        sc.mtu = 3;
        cc.side = pt::role::client;
        cc.mtu = 5;
        cc.cycle_buffer = 65536;

        side_stats sst, cst;
        auto [so, co] = run_pair(sc, cc, sst, cst);
        ASSERT_TRUE(co) << co.message();
        ASSERT_TRUE(so) << so.message();

        EXPECT_EQ(co->params.mtu, 3);
        EXPECT_EQ(so->params.mtu, 3);
        EXPECT_EQ(co->params.cycle_buffer, 65536);
        EXPECT_EQ(so->params.cycle_buffer, 65536);
        EXPECT_EQ(co->hand_shakes, so->hand_shakes);
        EXPECT_EQ(cst.connects, 1);
        EXPECT_EQ(sst.connects, 1);
        EXPECT_EQ(cst.runs, expected_runs(lc, true));
        EXPECT_EQ(sst.runs, expected_runs(lc, false));
        if (lc.v == pt::verb::send) {
            EXPECT_EQ(cst.prepares, cst.runs.load());
            EXPECT_EQ(sst.prepares, sst.runs.load());
        }
        if (lc.run_all && lc.v != pt::verb::atomic && cst.runs > 0) {
            EXPECT_EQ(cst.sizes.front(), 2u);
            EXPECT_EQ(cst.sizes.back(), uint64_t{1} << 23);
        }
        /* Reports: bw only; half-duplex write/read/atomic once; duplex once per
         * run; send_bw half duplex none. */
        size_t want_reports = 0;
        if (lc.k == pt::test_kind::bw) {
            if (lc.duplex)
                want_reports = static_cast<size_t>(expected_runs(lc, true));
            else if (lc.v != pt::verb::send)
                want_reports = 1;
        }
        EXPECT_EQ(co->remote_reports.size(), want_reports);
        EXPECT_EQ(so->remote_reports.size(), want_reports);
        if (want_reports && !lc.duplex) {
            EXPECT_DOUBLE_EQ(so->remote_reports.back().bw_peak, 100.5); /* the client's */
            EXPECT_DOUBLE_EQ(co->remote_reports.back().bw_peak, 0.0);   /* idle server: zeros */
        }
        if (want_reports && lc.duplex) {
            EXPECT_DOUBLE_EQ(so->remote_reports.back().bw_peak, 100.5);
            EXPECT_DOUBLE_EQ(co->remote_reports.back().bw_peak, 200.25);
        }
        /* The hook sees every exchange, with this side's report beside the
         * peer's (what -b prints the sum of). */
        ASSERT_EQ(cst.exchanged.size(), want_reports);
        ASSERT_EQ(sst.exchanged.size(), want_reports);
        if (want_reports) {
            const auto c_pair = std::make_pair(100.5, lc.duplex ? 200.25 : 0.0);
            EXPECT_EQ(cst.exchanged.back(), c_pair);
            /* the half-duplex server's own report is its idle_report: zeros */
            const auto s_pair = std::make_pair(lc.duplex ? 200.25 : 0.0, 100.5);
            EXPECT_EQ(sst.exchanged.back(), s_pair);
        }
    }
}

/* The hand shake counts of the two captured runs (num_qps 1). */
TEST(perftest_loopback, hand_shake_counts_match_captures) {
    struct want {
        pt::verb v;
        pt::test_kind k;
        int hs;
    };
    /* ib_write_bw: 3 + end-of-test + close = 5 (capture); ib_send_lat: 5
     * (capture); the others follow from their main(). */
    for (auto w :
         {want{pt::verb::write, pt::test_kind::bw, 5}, want{pt::verb::send, pt::test_kind::lat, 5},
          want{pt::verb::send, pt::test_kind::bw, 5}, want{pt::verb::read, pt::test_kind::bw, 5},
          want{pt::verb::atomic, pt::test_kind::bw, 5},
          want{pt::verb::write, pt::test_kind::lat, 4}, want{pt::verb::read, pt::test_kind::lat, 5},
          want{pt::verb::atomic, pt::test_kind::lat, 5}}) {
        SCOPED_TRACE(pt::test_name(w.v, w.k));
        pt::config c;
        c.test_verb = w.v;
        c.kind = w.k;
        c.timeout = 2s;
        c.test_timeout = 2s;
        auto l = tcp_listener::listen("127.0.0.1", 0);
        ASSERT_TRUE(l);
        side_stats a, b;
        result<pt::outcome> so = make_error(errc::io, "not run");
        pt::config sc = c;
        sc.side = pt::role::server;
        std::thread srv([&] { so = pt::run_server(*l, sc, make_hooks(false, sc, a), 2s); });
        c.side = pt::role::client;
        auto co = pt::run_client("127.0.0.1", l->port(), c, make_hooks(true, c, b));
        srv.join();
        ASSERT_TRUE(co) << co.message();
        ASSERT_TRUE(so) << so.message();
        EXPECT_EQ(co->hand_shakes, w.hs);
        EXPECT_EQ(so->hand_shakes, w.hs);
    }
}

/* ---- (3) error paths -------------------------------------------------------- */

namespace {

/* A scripted perftest server: accepts, then runs `script` on the socket. */
template <class F>
result<pt::outcome> against_server(pt::config c, F script, int *hook_calls = nullptr) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    EXPECT_TRUE(l);
    std::thread t([&] {
        auto s = l->accept(2s);
        if (s) script(*s);
    });
    c.side = pt::role::client;
    result<pt::outcome> out = make_error(errc::io, "not run");
    auto cs = pt::session::connect("127.0.0.1", l->port(), c);
    if (!cs) {
        out = cs.err();
    } else {
        pt::hooks h;
        h.create_local = [&](const pt::negotiated &) -> result<std::vector<pt::key>> {
            if (hook_calls) ++*hook_calls;
            return std::vector<pt::key>{make_key(true, 0)};
        };
        h.connect_qps = [](std::span<const pt::key>) -> result<void> { return {}; };
        h.run = [](uint64_t) -> result<pt::bw_report> { return pt::bw_report{}; };
        out = pt::run(*cs, h);
    }
    t.join();
    return out;
}

/* Server side of the preamble with the given version string. */
void serve_preamble(tcp_socket &s, std::string_view version) {
    uint8_t buf[16];
    (void)s.read_exact(std::span<uint8_t>(buf, 16), 1s, "v");
    auto v = pt::format_version(version);
    (void)s.write_all(v, 1s, "v");
    for (int i = 0; i < 2; ++i) {
        (void)s.read_exact(std::span<uint8_t>(buf, 4), 1s, "sys");
        auto b = pt::format_be32(i ? 64 : 4096);
        (void)s.write_all(b, 1s, "sys");
    }
    (void)s.read_exact(std::span<uint8_t>(buf, 2), 1s, "mtu");
    auto m = pt::format_mtu(3);
    (void)s.write_all(m, 1s, "mtu");
}

pt::config quick_config() {
    pt::config c;
    c.timeout = 200ms;
    c.test_timeout = 200ms;
    return c;
}

} // namespace

TEST(perftest_errors, version_too_old) {
    int hooks = 0;
    auto r = against_server(
        quick_config(),
        [](tcp_socket &s) {
            uint8_t buf[16];
            (void)s.read_exact(buf, 1s, "v");
            auto v = pt::format_version("5.60");
            (void)s.write_all(v, 1s, "v");
            s.drain_until_eof(1s);
        },
        &hooks);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::incompatible);
    EXPECT_EQ(r.message(),
              "peer perftest version \"5.60\" is older than 5.70; perftest refuses to talk to it");
    EXPECT_EQ(hooks, 0);
}

TEST(perftest_errors, peer_never_answers) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = against_server(quick_config(), [](tcp_socket &s) { s.drain_until_eof(1s); });
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::timeout);
    EXPECT_EQ(r.message(),
              "timed out after 200 ms waiting for the perftest version (got 0 of 16 bytes)");
    EXPECT_LT(ms, 2000);
}

TEST(perftest_errors, peer_closes_during_key_exchange) {
    auto r = against_server(quick_config(), [](tcp_socket &s) {
        serve_preamble(s, "6.06");
        uint8_t key[108];
        (void)s.read_exact(key, 1s, "key");
        const char part[] = "0000:0001:0000";
        (void)s.write_all(std::string_view(part), 1s, "key");
        s.close();
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::peer_closed);
    EXPECT_EQ(r.message(),
              "peer closed the connection during the key exchange (got 14 of 108 bytes)");
}

TEST(perftest_errors, malformed_key_from_peer) {
    auto r = against_server(quick_config(), [](tcp_socket &s) {
        serve_preamble(s, "6.29");
        uint8_t key[108];
        (void)s.read_exact(key, 1s, "key");
        std::vector<uint8_t> junk(108, 'J');
        (void)s.write_all(junk, 1s, "key");
        s.drain_until_eof(1s);
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::malformed);
    EXPECT_EQ(
        r.message().rfind("malformed perftest KEY message from peer: LID is not 4 hex digits", 0),
        0u)
        << r.message();
}

TEST(perftest_errors, malformed_mtu_from_peer) {
    auto r = against_server(quick_config(), [](tcp_socket &s) {
        uint8_t buf[16];
        (void)s.read_exact(buf, 1s, "v");
        (void)s.write_all(pt::format_version("6.06"), 1s, "v");
        for (int i = 0; i < 2; ++i) {
            (void)s.read_exact(std::span<uint8_t>(buf, 4), 1s, "sys");
            (void)s.write_all(pt::format_be32(64), 1s, "sys");
        }
        (void)s.read_exact(std::span<uint8_t>(buf, 2), 1s, "mtu");
        (void)s.write_all(std::string_view("?!"), 1s, "mtu");
        s.drain_until_eof(1s);
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::malformed);
}

TEST(perftest_errors, key_format_mismatch_fails_fast) {
    /* A peer expecting the 59-byte format against our 108-byte one (IB
     * without GID vs RoCE): it parses garbage and gives up; we must not hang. */
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    pt::config sc = quick_config();
    sc.side = pt::role::server;
    sc.keys = pt::key_format::no_gid;
    result<pt::outcome> so = make_error(errc::io, "not run");
    side_stats a, b;
    std::thread srv([&] {
        auto s = pt::session::accept(*l, sc, 2s);
        if (s) so = pt::run(*s, make_hooks(false, sc, a));
    });
    pt::config cc = quick_config();
    auto cs = pt::session::connect("127.0.0.1", l->port(), cc);
    ASSERT_TRUE(cs);
    auto co = pt::run(*cs, make_hooks(true, cc, b));
    srv.join();
    ASSERT_FALSE(so);
    EXPECT_EQ(so.code(), errc::malformed);
    ASSERT_FALSE(co);
    EXPECT_TRUE(co.code() == errc::peer_closed || co.code() == errc::timeout) << co.message();
}

TEST(perftest_errors, hook_failure_is_reported) {
    auto l = tcp_listener::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    std::thread t([&] {
        auto s = l->accept(2s);
        if (s) serve_preamble(*s, "6.06"), s->drain_until_eof(1s);
    });
    pt::config c = quick_config();
    auto cs = pt::session::connect("127.0.0.1", l->port(), c);
    ASSERT_TRUE(cs);
    pt::hooks h;
    h.create_local = [](const pt::negotiated &) -> result<std::vector<pt::key>> {
        return make_error(errc::io, "ibv_create_qp failed");
    };
    h.connect_qps = [](std::span<const pt::key>) -> result<void> { return {}; };
    auto r = pt::run(*cs, h);
    cs->socket().close();
    t.join();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::callback);
    EXPECT_EQ(r.message(), "could not set up the local QPs: ibv_create_qp failed");
}

TEST(perftest_errors, bad_config_is_refused_before_connecting) {
    pt::config c;
    c.version = "6.29";
    auto s = pt::session::connect("127.0.0.1", 1, c);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), errc::invalid);
    EXPECT_NE(s.message().find("[5.70, 6.28)"), std::string::npos);
}

/* ---- -R: the exchange over rdma_cm's control QP ---------------------------- */

TEST(perftest_wire, binary_key_layout) {
    /* struct pingpong_dest as rdma_write_keys sends it (HAVE_ENDIAN): each
     * int big-endian at its LP64 offset, 4 B of padding before vaddr. */
    const pt::key k{0, 16, 0x000011, 0xabcdef, 0x1234, 0x00007f7918f62000ull, v4_gid(10, 77, 0, 12),
                    0};
    auto b = pt::format_key(k, pt::key_format::binary);
    ASSERT_EQ(b.size(), pt::key_size_binary);
    const std::vector<uint8_t> want = {0, 0, 0,    0,    0,    0,    0,    16,
                                       0, 0, 0,    0x11, 0,    0xab, 0xcd, 0xef, /* lid..psn */
                                       0, 0, 0x12, 0x34, 0,    0,    0,    0,    /* rkey, pad */
                                       0, 0, 0x7f, 0x79, 0x18, 0xf6, 0x20, 0,    /* vaddr */
                                       0, 0, 0,    0,    0,    0,    0,    0,
                                       0, 0, 0xff, 0xff, 10,   77,   0,    12, /* gid */
                                       0, 0, 0,    0,    0,    0,    0,    0}; /* srqn, gid_index */
    EXPECT_EQ(b, want);
    auto back = pt::parse_key(b);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, k);
    /* Whatever the padding and the ignored fields hold, the key reads the same. */
    b[20] = 0xaa;
    b[55] = 0x55;
    back = pt::parse_key(b);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, k);
    /* A QPN or PSN wider than 24 bits is cut to the field. */
    b[8] = 0xff;
    back = pt::parse_key(b);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->qpn, 0x000011u);
}

namespace {

/* Two message queues standing in for the SENDs on perftest's control QP. */
struct message_pipe {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<uint8_t>> q[2]; /* q[i]: messages to end i */
    bool closed[2] = {false, false};
    std::vector<size_t> sizes; /* every message, in order */
};

class pipe_end : public pt::message_channel {
  public:
    pipe_end(message_pipe &p, int me) : p_(p), me_(me) {}
    result<void> send(std::span<const uint8_t> msg, milliseconds, std::string_view) override {
        std::lock_guard<std::mutex> g(p_.mu);
        if (p_.closed[1 - me_]) return make_error(errc::peer_closed, "peer closed");
        p_.q[1 - me_].emplace_back(msg.begin(), msg.end());
        p_.sizes.push_back(msg.size());
        p_.cv.notify_all();
        return {};
    }
    result<void> recv(std::span<uint8_t> msg, milliseconds t, std::string_view what) override {
        std::unique_lock<std::mutex> g(p_.mu);
        if (!p_.cv.wait_for(g, t, [&] { return !p_.q[me_].empty() || p_.closed[1 - me_]; }))
            return make_error(errc::timeout, std::string(what) + ": timeout");
        if (p_.q[me_].empty()) return make_error(errc::peer_closed, "peer closed");
        auto m = std::move(p_.q[me_].front());
        p_.q[me_].pop_front();
        if (m.size() != msg.size())
            return make_error(errc::malformed, std::string(what) + ": " + std::to_string(m.size()) +
                                                   " bytes, expected " +
                                                   std::to_string(msg.size()));
        std::memcpy(msg.data(), m.data(), m.size());
        return {};
    }
    void close() override {
        std::lock_guard<std::mutex> g(p_.mu);
        p_.closed[me_] = true;
        p_.cv.notify_all();
    }

  private:
    message_pipe &p_;
    int me_;
};

} // namespace

TEST(perftest_loopback, rdma_cm_every_test_kind) {
    for (auto v : {pt::verb::send, pt::verb::write, pt::verb::read, pt::verb::atomic}) {
        for (auto k : {pt::test_kind::bw, pt::test_kind::lat}) {
            for (int qps : {1, 2}) {
                const loop_case lc{v, k, false, false, qps};
                SCOPED_TRACE(case_name(lc) + " -R");
                pt::config base;
                base.test_verb = v;
                base.kind = k;
                base.num_qps = qps;
                base.size = v == pt::verb::atomic ? 8 : 4096;
                base.timeout = 2s;
                base.test_timeout = 2s;
                pt::config sc = base, cc = base;
                sc.side = pt::role::server;
                cc.side = pt::role::client;
                message_pipe pipe;
                side_stats sst, cst;
                int cm_calls[2] = {0, 0};
                auto hooks_for = [&](bool client, const pt::config &c, side_stats &st) {
                    pt::hooks h = make_hooks(client, c, st);
                    h.connect_cm = [&, client,
                                    c](const pt::negotiated &) -> result<std::vector<pt::key>> {
                        ++cm_calls[client];
                        std::vector<pt::key> keys;
                        for (int i = 0; i < c.num_qps; ++i)
                            keys.push_back(make_key(client, i));
                        return keys;
                    };
                    h.create_local = nullptr;              /* -R must not use it */
                    if (qps == 2) h.connect_qps = nullptr; /* optional with -R */
                    return h;
                };
                result<pt::outcome> so = make_error(errc::io, "not run");
                std::thread srv([&] {
                    pt::session s(std::make_unique<pipe_end>(pipe, 0), sc);
                    so = pt::run(s, hooks_for(false, sc, sst));
                });
                pt::session cs(std::make_unique<pipe_end>(pipe, 1), cc);
                auto co = pt::run(cs, hooks_for(true, cc, cst));
                srv.join();
                ASSERT_TRUE(co) << co.message();
                ASSERT_TRUE(so) << so.message();
                EXPECT_EQ(cm_calls[0], 1);
                EXPECT_EQ(cm_calls[1], 1);
                /* With -R connect_qps only hands over the peer's keys (checked in it). */
                EXPECT_EQ(cst.connects, qps == 2 ? 0 : 1);
                EXPECT_EQ(sst.connects, qps == 2 ? 0 : 1);
                EXPECT_EQ(co->hand_shakes, so->hand_shakes);
                EXPECT_EQ(cst.runs, expected_runs(lc, true));
                EXPECT_EQ(sst.runs, expected_runs(lc, false));
                ASSERT_EQ(co->remote_keys.size(), size_t(qps));
                for (int i = 0; i < qps; ++i)
                    EXPECT_EQ(co->remote_keys[size_t(i)], make_key(false, i));
                /* version 16, cycle_buffer 4, cache line 4, MTU 2, then only
                 * 56-byte keys and 8-byte report fields: never "done". */
                ASSERT_GE(pipe.sizes.size(), 10u);
                const std::vector<size_t> preamble = {16, 16, 4, 4, 4, 4, 2, 2, 56, 56};
                EXPECT_TRUE(std::equal(preamble.begin(), preamble.end(), pipe.sizes.begin()));
                for (size_t i = preamble.size(); i < pipe.sizes.size(); ++i)
                    EXPECT_TRUE(pipe.sizes[i] == 56 || pipe.sizes[i] == 8) << pipe.sizes[i];
            }
        }
    }
}

TEST(perftest_errors, rdma_cm_needs_connect_cm) {
    message_pipe pipe;
    pt::config c;
    c.side = pt::role::client;
    c.timeout = 200ms;
    pt::session s(std::make_unique<pipe_end>(pipe, 1), c);
    side_stats st;
    auto r = pt::run(s, make_hooks(true, c, st)); /* create_local, no connect_cm */
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::invalid);
    EXPECT_TRUE(pipe.sizes.empty()); /* refused before sending anything */
}

/* --run_infinitely (send_bw.c, write_bw.c ... RUN_INFINITELY): the send test
 * posts its receives and meets at the ready hand shake, the others go
 * straight to the run (both sides with -b); each side's run is its last
 * step (no reports, no close); a half-duplex server waits for the client's
 * end, which its closing the connection is, and that is a success. */
TEST(perftest_loopback, run_infinitely) {
    struct inf_case {
        pt::verb v;
        bool duplex;
    };
    for (const inf_case ic : {inf_case{pt::verb::send, false}, inf_case{pt::verb::write, false},
                              inf_case{pt::verb::read, false}, inf_case{pt::verb::atomic, false},
                              inf_case{pt::verb::write, true}}) {
        SCOPED_TRACE(pt::test_name(ic.v, pt::test_kind::bw) + (ic.duplex ? " -b" : ""));
        pt::config base;
        base.test_verb = ic.v;
        base.kind = pt::test_kind::bw;
        base.duplex = ic.duplex;
        base.run_infinitely = true;
        base.size = ic.v == pt::verb::atomic ? 8 : 4096;
        base.timeout = 2s;
        base.test_timeout = 2s;
        pt::config sc = base, cc = base;
        sc.side = pt::role::server;
        cc.side = pt::role::client;
        side_stats sst, cst;
        auto [so, co] = run_pair(sc, cc, sst, cst);
        ASSERT_TRUE(co) << co.message();
        ASSERT_TRUE(so) << so.message();
        const bool server_runs = ic.v == pt::verb::send || ic.duplex;
        EXPECT_EQ(cst.runs, 1);
        EXPECT_EQ(sst.runs, server_runs ? 1 : 0);
        EXPECT_EQ(cst.prepares, ic.v == pt::verb::send ? 1 : 0);
        EXPECT_EQ(co->hand_shakes, so->hand_shakes);
        EXPECT_TRUE(co->remote_reports.empty());
        EXPECT_TRUE(so->remote_reports.empty());
        EXPECT_TRUE(cst.exchanged.empty());
    }
    pt::config lat;
    lat.kind = pt::test_kind::lat;
    lat.run_infinitely = true;
    auto v = pt::validate(lat);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.message(), "run_infinitely applies to bw tests of one size");
}

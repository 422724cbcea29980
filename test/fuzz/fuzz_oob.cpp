/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the TCP exchanges of apps/common, the first thing a
 * uroce-pingpong / uroce-perf process reads from a peer it has not
 * authenticated (QPN, PSN, rkey, VA and GID all come from these bytes).
 *
 * Covered, on every input:
 *  - the message parsers on the whole input: pingpong::parse and
 *    wire_to_gid, perftest::parse_key (both formats), parse_version,
 *    parse_mtu, parse_bw_report (both sizes), version_number;
 *  - then, by the first byte, one whole exchange over a socketpair whose
 *    other end has already written the rest of the input and closed for
 *    writing (the hostile peer): pingpong client_exchange /
 *    server_exchange, or perftest::run as client or server for every verb,
 *    bw/lat, 1-2 QPs, duplex and run_all (config from the second byte).
 *
 * Oracle (besides ASan/UBSan): whatever a parser accepts formats back to
 * the same bytes (hex digits compared case-blind), and every field it
 * returns fits its wire width (QPN and PSN 24 bits); an exchange returns,
 * never hangs (each wait is bounded and the peer's EOF ends it), hands the
 * hooks exactly one key per QP, and when it succeeds the peer's keys it
 * reports are the ones the parser gives for the bytes it read.
 */
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <span>
#include <vector>

#include "fuzz_common.h"
#include "perftest_oob.h"
#include "pingpong_oob.h"

namespace uroce::fuzz {
namespace {

using namespace uroce::oob;
using bytes = std::span<const uint8_t>;

bool same_ignoring_hex_case(bytes a, bytes b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++)
        if (std::tolower(a[i]) != std::tolower(b[i])) return false;
    return true;
}

void parsers(bytes in) {
    if (auto d = pingpong::parse(in)) {
        FUZZ_REQUIRE(d->qpn < (1u << 24) && d->psn < (1u << 24));
        auto back = pingpong::format(*d);
        FUZZ_REQUIRE(same_ignoring_hex_case(back, in));
    }
    if (in.size() >= 32) {
        gid_raw g;
        std::string_view hex(reinterpret_cast<const char *>(in.data()), 32);
        if (pingpong::wire_to_gid(hex, g)) {
            std::string s = pingpong::gid_to_wire(g);
            FUZZ_REQUIRE(same_ignoring_hex_case(
                bytes(reinterpret_cast<const uint8_t *>(s.data()), s.size()), in.first(32)));
        }
    }
    for (size_t len : {perftest::key_size_gid, perftest::key_size_no_gid}) {
        if (in.size() < len) continue;
        bytes msg = in.first(len);
        if (auto k = perftest::parse_key(msg)) {
            FUZZ_REQUIRE(k->qpn < (1u << 24) && k->psn < (1u << 24));
            auto f = len == perftest::key_size_gid ? perftest::key_format::gid
                                                   : perftest::key_format::no_gid;
            auto back = perftest::format_key(*k, f);
            FUZZ_REQUIRE(same_ignoring_hex_case(back, msg));
        }
    }
    (void)perftest::parse_key(in);
    if (auto v = perftest::parse_version(in)) {
        FUZZ_REQUIRE(v->size() < in.size());
        (void)perftest::version_number(*v);
    }
    if (auto m = perftest::parse_mtu(in)) {
        FUZZ_REQUIRE(*m >= 0 && *m <= 99);
        (void)perftest::negotiate_mtu(5, *m);
        (void)perftest::mtu_bytes(*m);
    }
    for (bool per_port : {false, true}) {
        size_t want = per_port ? 72 : 40;
        if (in.size() < want) continue;
        auto r = perftest::parse_bw_report(in.first(want), per_port);
        FUZZ_REQUIRE(r.ok());
        auto back = perftest::format_bw_report(*r, per_port);
        /* doubles: NaN payloads survive a bitwise copy, so the bytes do too */
        FUZZ_REQUIRE(back.size() == want && std::memcmp(back.data(), in.data(), want) == 0);
    }
    (void)perftest::parse_bw_report(in, false);
}

/* A connected pair: ours, and the peer's end with the input already
 * written to it and shut for writing. */
struct wire_pair {
    tcp_socket ours;
    int peer = -1;
    bool ok = false;
    explicit wire_pair(bytes stream) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return;
        /* room for the whole input on the peer's side, and for everything we
         * write back (never read) */
        int sz = 1 << 20;
        ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        ::setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
        ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        ::setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
        size_t off = 0;
        while (off < stream.size()) {
            ssize_t n = ::write(sv[1], stream.data() + off, stream.size() - off);
            if (n <= 0) break;
            off += size_t(n);
        }
        ::shutdown(sv[1], SHUT_WR);
        ours = tcp_socket(sv[0]);
        ours.set_peer("fuzz-peer");
        peer = sv[1];
        ok = off == stream.size();
    }
    ~wire_pair() {
        if (peer >= 0) ::close(peer);
    }
};

constexpr milliseconds wait{200};

void pingpong_exchange(bool server, bytes stream) {
    wire_pair w(stream);
    if (!w.ok) return;
    pingpong::dest local{0, 0x11, 0x123456, {}};
    local.gid[15] = 1;
    if (server) {
        int hooked = 0;
        pingpong::dest seen;
        auto r = pingpong::server_exchange(
            w.ours, local,
            [&](const pingpong::dest &rem) -> result<void> {
                hooked++;
                seen = rem;
                FUZZ_REQUIRE(rem.qpn < (1u << 24) && rem.psn < (1u << 24));
                return {};
            },
            wait);
        if (r) {
            FUZZ_REQUIRE(hooked == 1 && *r == seen);
            FUZZ_REQUIRE(stream.size() >= pingpong::msg_size + pingpong::done_size);
        }
    } else {
        auto r = pingpong::client_exchange(w.ours, local, wait);
        if (r) {
            FUZZ_REQUIRE(stream.size() >= pingpong::msg_size);
            auto again = pingpong::parse(stream.first(pingpong::msg_size));
            FUZZ_REQUIRE(again.ok() && *again == *r);
        }
    }
}

void perftest_exchange(uint8_t cfg_byte, uint8_t cfg_byte2, bytes stream) {
    using namespace perftest;
    config c;
    c.side = cfg_byte & 1 ? role::server : role::client;
    c.test_verb = verb(cfg_byte >> 1 & 3);
    c.kind = cfg_byte & 8 ? test_kind::lat : test_kind::bw;
    c.num_qps = cfg_byte & 16 ? 2 : 1;
    c.duplex = cfg_byte & 32;
    c.run_all = cfg_byte & 64;
    c.duration = cfg_byte & 128;
    c.ud = cfg_byte2 & 1;
    c.report_per_port = cfg_byte2 & 2;
    c.keys = cfg_byte2 & 4 ? key_format::no_gid : key_format::gid;
    c.send_done = !(cfg_byte2 & 8);
    c.mtu = 1 + (cfg_byte2 >> 4) % 5;
    c.size = 1u << ((cfg_byte2 >> 4) & 15);
    c.timeout = wait;
    c.test_timeout = wait;
    if (!validate(c)) return;

    wire_pair w(stream);
    if (!w.ok) return;
    session s(std::move(w.ours), c);
    int created = 0, connected = 0;
    std::vector<key> remote_seen;
    hooks h;
    h.create_local = [&](const negotiated &n) -> result<std::vector<key>> {
        created++;
        FUZZ_REQUIRE(n.mtu >= 1 && n.mtu <= 5);
        std::vector<key> v(size_t(c.num_qps));
        for (size_t i = 0; i < v.size(); i++) {
            v[i].qpn = uint32_t(0x11 + i);
            v[i].psn = 0x123456;
            v[i].rkey = 0x1234;
            v[i].vaddr = 0x7f0000001000;
            v[i].out_reads = 16;
        }
        return v;
    };
    h.connect_qps = [&](std::span<const key> rem) -> result<void> {
        connected++;
        FUZZ_REQUIRE(rem.size() == size_t(c.num_qps));
        for (const key &k : rem)
            FUZZ_REQUIRE(k.qpn < (1u << 24) && k.psn < (1u << 24));
        remote_seen.assign(rem.begin(), rem.end());
        return {};
    };
    h.prepare = [&](uint64_t size) -> result<void> {
        FUZZ_REQUIRE(size > 0);
        return {};
    };
    h.run = [&](uint64_t size) -> result<bw_report> {
        FUZZ_REQUIRE(connected == 1);
        bw_report r;
        r.size = size;
        r.iters = 1000;
        r.bw_avg = r.bw_peak = 1.0;
        return r;
    };
    auto r = run(s, h);
    FUZZ_REQUIRE(created <= 1 && connected <= created);
    if (r) {
        FUZZ_REQUIRE(created == 1 && connected == 1);
        FUZZ_REQUIRE(r->remote_keys == remote_seen);
        FUZZ_REQUIRE(r->hand_shakes > 0);
    }
}

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce::fuzz;
    static bool once = [] {
        std::signal(SIGPIPE, SIG_IGN);
        return true;
    }();
    (void)once;
    /* A perftest run_all exchange is a few KiB; longer inputs only slow it down. */
    if (size > 16384) return 0;
    parsers(bytes(data, size));
    if (size < 2) return 0;
    const uint8_t mode = data[0];
    switch (mode % 3) {
    case 0:
        pingpong_exchange(mode & 4, bytes(data + 1, size - 1));
        break;
    default:
        if (size < 3) return 0;
        perftest_exchange(data[1], data[2], bytes(data + 3, size - 3));
        break;
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * perftest TCP exchange. Protocol facts from linux-rdma/perftest
 * (tag v4.5-0.17 = "6.06", and master = "6.29"): src/perftest_communication.c
 * (ethernet_write_keys, ethernet_read_keys, ctx_hand_shake,
 * ctx_xchg_data_ethernet, xchg_bw_reports, ctx_close_connection,
 * exchange_versions, check_version_compatibility, check_sys_data,
 * check_mtu, negotiate_params), src/perftest_communication.h (KEY_* formats,
 * hton_* macros) and the main() of each test. Written from those facts, not
 * copied.
 */
#include "perftest_oob.h"

#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace uroce::oob::perftest {

namespace {

std::span<const uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

/* KEY field widths in hex digits: LID, OUT_READS, QPN, PSN, RKEY, VADDR,
 * [16 GID bytes,] SRQN (perftest_communication.h KEY_PRINT_FMT[_GID]). */
constexpr size_t n_fixed = 6;
constexpr size_t fixed_widths[n_fixed] = {4, 4, 6, 6, 8, 16};

} // namespace

const char *verb_name(verb v) {
    switch (v) {
    case verb::send:
        return "send";
    case verb::write:
        return "write";
    case verb::read:
        return "read";
    case verb::atomic:
        return "atomic";
    }
    return "?";
}

std::string test_name(verb v, test_kind k) {
    return std::string("ib_") + verb_name(v) + (k == test_kind::bw ? "_bw" : "_lat");
}

/* ---- KEY messages --------------------------------------------------------- */

size_t key_size(key_format f) {
    switch (f) {
    case key_format::gid:
        return key_size_gid;
    case key_format::no_gid:
        return key_size_no_gid;
    case key_format::binary:
        return key_size_binary;
    }
    return 0;
}

namespace {

/* struct pingpong_dest on LP64 (perftest_resources.h): int lid, out_reads,
 * qpn, psn; unsigned rkey; 4 B of padding; unsigned long long vaddr; union
 * ibv_gid gid; unsigned srqn; int gid_index. rdma_write_keys converts each
 * scalar with htobe32/htobe64 and copies the struct whole, padding
 * included (we send zeros there; the reader ignores it, and srqn and
 * gid_index too). */
struct binary_key_layout {
    static constexpr size_t lid = 0, out_reads = 4, qpn = 8, psn = 12, rkey = 16, vaddr = 24,
                            gid = 32, srqn = 48, gid_index = 52;
};

void put_be32(uint8_t *p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}
uint32_t get_be32(const uint8_t *p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

std::vector<uint8_t> format_binary_key(const key &k) {
    using L = binary_key_layout;
    std::vector<uint8_t> out(key_size_binary, 0);
    put_be32(&out[L::lid], k.lid);
    put_be32(&out[L::out_reads], k.out_reads);
    put_be32(&out[L::qpn], k.qpn);
    put_be32(&out[L::psn], k.psn);
    put_be32(&out[L::rkey], k.rkey);
    put_be32(&out[L::vaddr], uint32_t(k.vaddr >> 32));
    put_be32(&out[L::vaddr + 4], uint32_t(k.vaddr));
    std::memcpy(&out[L::gid], k.gid.data(), k.gid.size());
    put_be32(&out[L::srqn], k.srqn);
    put_be32(&out[L::gid_index], 0);
    return out;
}

key parse_binary_key(std::span<const uint8_t> msg) {
    /* rdma_read_keys: ntohl of each int (the QPN and PSN as they are: the
     * peer's own 24-bit values), be64toh of vaddr, the GID raw. Any bytes
     * are a valid struct; a value too wide for our fields is cut as the
     * verbs would cut it. */
    using L = binary_key_layout;
    key k;
    k.lid = uint16_t(get_be32(&msg[L::lid]));
    k.out_reads = uint16_t(get_be32(&msg[L::out_reads]));
    k.qpn = get_be32(&msg[L::qpn]) & 0xffffffu;
    k.psn = get_be32(&msg[L::psn]) & 0xffffffu;
    k.rkey = get_be32(&msg[L::rkey]);
    k.vaddr = uint64_t(get_be32(&msg[L::vaddr])) << 32 | get_be32(&msg[L::vaddr + 4]);
    std::memcpy(k.gid.data(), &msg[L::gid], k.gid.size());
    k.srqn = get_be32(&msg[L::srqn]);
    return k;
}

} // namespace

std::vector<uint8_t> format_key(const key &k, key_format f) {
    if (f == key_format::binary) return format_binary_key(k);
    /* ethernet_write_keys: sprintf into char msg[KEY_MSG_SIZE(_GID)] and
     * write(sizeof msg), so the NUL goes on the wire. */
    char buf[key_size_gid + 16];
    int n;
    if (f == key_format::gid) {
        n = std::snprintf(
            buf, sizeof buf,
            "%04x:%04x:%06x:%06x:%08x:%016llx:"
            "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:"
            "%08x:",
            k.lid, k.out_reads, k.qpn & 0xffffffu, k.psn & 0xffffffu, k.rkey,
            static_cast<unsigned long long>(k.vaddr), k.gid[0], k.gid[1], k.gid[2], k.gid[3],
            k.gid[4], k.gid[5], k.gid[6], k.gid[7], k.gid[8], k.gid[9], k.gid[10], k.gid[11],
            k.gid[12], k.gid[13], k.gid[14], k.gid[15], k.srqn);
    } else {
        n = std::snprintf(buf, sizeof buf, "%04x:%04x:%06x:%06x:%08x:%016llx:%08x", k.lid,
                          k.out_reads, k.qpn & 0xffffffu, k.psn & 0xffffffu, k.rkey,
                          static_cast<unsigned long long>(k.vaddr), k.srqn);
    }
    std::vector<uint8_t> out(key_size(f), 0);
    std::memcpy(out.data(), buf, std::min(static_cast<size_t>(n), out.size() - 1));
    return out;
}

result<key> parse_key(std::span<const uint8_t> msg) {
    if (msg.size() == key_size_binary) return parse_binary_key(msg);
    const bool with_gid = msg.size() == key_size_gid;
    if (!with_gid && msg.size() != key_size_no_gid)
        return make_error(errc::malformed, "perftest KEY message has " +
                                               std::to_string(msg.size()) + " bytes, expected " +
                                               std::to_string(key_size_gid) + ", " +
                                               std::to_string(key_size_no_gid) + " or " +
                                               std::to_string(key_size_binary));
    auto bad = [&](const std::string &why) {
        return make_error(errc::malformed, "malformed perftest KEY message from peer: " + why +
                                               ": \"" + printable(msg) + "\"");
    };
    size_t pos = 0;
    /* One fixed-width hex field followed by `sep`. */
    auto field = [&](size_t width, char sep, uint64_t &out,
                     const char *name) -> std::optional<error> {
        uint64_t v = 0;
        for (size_t i = 0; i < width; ++i) {
            int h = hex_value(msg[pos + i]);
            if (h < 0)
                return bad(std::string(name) + " is not " + std::to_string(width) + " hex digits");
            v = (v << 4) | static_cast<uint64_t>(h);
        }
        pos += width;
        if (msg[pos] != static_cast<uint8_t>(sep))
            return bad(sep ? std::string("expected ':' after ") + name
                           : std::string("missing the terminating NUL"));
        ++pos;
        out = v;
        return std::nullopt;
    };
    static const char *names[n_fixed] = {"LID", "OUT_READS", "QPN", "PSN", "RKEY", "VADDR"};
    uint64_t v[n_fixed] = {};
    for (size_t i = 0; i < n_fixed; ++i)
        if (auto e = field(fixed_widths[i], ':', v[i], names[i])) return *e;
    key k;
    k.lid = static_cast<uint16_t>(v[0]);
    k.out_reads = static_cast<uint16_t>(v[1]);
    k.qpn = static_cast<uint32_t>(v[2]);
    k.psn = static_cast<uint32_t>(v[3]);
    k.rkey = static_cast<uint32_t>(v[4]);
    k.vaddr = v[5];
    uint64_t s = 0;
    if (with_gid) {
        for (size_t i = 0; i < 16; ++i) {
            uint64_t b = 0;
            if (auto e = field(2, ':', b, "GID byte")) return *e;
            k.gid[i] = static_cast<uint8_t>(b);
        }
        /* KEY_PRINT_FMT_GID ends "%08x:" then the NUL. */
        if (auto e = field(8, ':', s, "SRQN")) return *e;
        if (msg[pos] != 0) return bad("missing the terminating NUL");
    } else {
        if (auto e = field(8, '\0', s, "SRQN")) return *e;
    }
    k.srqn = static_cast<uint32_t>(s);
    return k;
}

/* ---- scalars ---------------------------------------------------------------- */

std::array<uint8_t, version_size> format_version(std::string_view v) {
    /* strncpy(user_param.version, VERSION, sizeof version): NUL padded. */
    std::array<uint8_t, version_size> out{};
    std::memcpy(out.data(), v.data(), std::min(v.size(), version_size - 1));
    return out;
}

result<std::string> parse_version(std::span<const uint8_t> msg) {
    size_t n = 0;
    while (n < msg.size() && msg[n] != 0)
        ++n;
    if (n == msg.size())
        return make_error(errc::malformed, "perftest version from peer is not NUL-terminated: \"" +
                                               printable(msg) + "\"");
    for (size_t i = 0; i < n; ++i)
        if (msg[i] < 0x20 || msg[i] >= 0x7f)
            return make_error(errc::malformed,
                              "perftest version from peer is not text: \"" + printable(msg) + "\"");
    return std::string(reinterpret_cast<const char *>(msg.data()), n);
}

double version_number(std::string_view v) {
    /* atof(): leading whitespace, then the longest number prefix; 0 if none. */
    size_t i = 0;
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t'))
        ++i;
    double d = 0;
    auto r = std::from_chars(v.data() + i, v.data() + v.size(), d);
    return r.ec == std::errc() ? d : 0.0;
}

std::array<uint8_t, 4> format_be32(int32_t v) {
    uint32_t u = static_cast<uint32_t>(v);
    return {static_cast<uint8_t>(u >> 24), static_cast<uint8_t>(u >> 16),
            static_cast<uint8_t>(u >> 8), static_cast<uint8_t>(u)};
}

int32_t parse_be32(std::span<const uint8_t, 4> b) {
    return static_cast<int32_t>((uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                                (uint32_t{b[2]} << 8) | uint32_t{b[3]});
}

std::array<uint8_t, 8> format_be64(uint64_t v) {
    std::array<uint8_t, 8> out{};
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
    return out;
}

uint64_t parse_be64(std::span<const uint8_t, 8> b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = (v << 8) | b[i];
    return v;
}

std::array<uint8_t, 8> format_double(double v) {
    return format_be64(std::bit_cast<uint64_t>(v));
}

double parse_double(std::span<const uint8_t, 8> b) {
    return std::bit_cast<double>(parse_be64(b));
}

std::array<uint8_t, mtu_msg_size> format_mtu(int mtu_enum) {
    /* check_mtu: sprintf(cur, "%d", curr_mtu), then 2 bytes of it. */
    std::array<uint8_t, mtu_msg_size> out{};
    char buf[16];
    std::snprintf(buf, sizeof buf, "%d", mtu_enum);
    out[0] = static_cast<uint8_t>(buf[0]);
    out[1] = static_cast<uint8_t>(buf[1]); /* NUL for a one-digit enum */
    return out;
}

result<int> parse_mtu(std::span<const uint8_t> msg) {
    if (msg.size() != mtu_msg_size || msg[0] < '0' || msg[0] > '9' ||
        (msg[1] != 0 && (msg[1] < '0' || msg[1] > '9')))
        return make_error(errc::malformed,
                          "malformed perftest MTU message from peer: \"" + printable(msg) + "\"");
    int v = msg[0] - '0';
    if (msg[1]) v = v * 10 + (msg[1] - '0');
    return v;
}

int negotiate_mtu(int local, int remote) {
    /* check_mtu: valid_mtu_size(rem) && cur > rem ? rem : cur. */
    bool valid = remote >= 1 && remote <= 5;
    return (valid && local > remote) ? remote : local;
}

std::vector<uint8_t> format_bw_report(const bw_report &r, bool per_port) {
    std::vector<uint8_t> out;
    auto put = [&](const std::array<uint8_t, 8> &b) { out.insert(out.end(), b.begin(), b.end()); };
    put(format_be64(r.size));
    put(format_be64(r.iters));
    put(format_double(r.bw_peak));
    put(format_double(r.bw_avg));
    put(format_double(r.msg_rate_avg));
    if (per_port) {
        /* xchg_bw_reports sends p1 then p2, each bw then msgRate. */
        put(format_double(r.bw_avg_p1));
        put(format_double(r.msg_rate_avg_p1));
        put(format_double(r.bw_avg_p2));
        put(format_double(r.msg_rate_avg_p2));
    }
    return out;
}

result<bw_report> parse_bw_report(std::span<const uint8_t> msg, bool per_port) {
    size_t want = per_port ? 72 : 40;
    if (msg.size() != want)
        return make_error(errc::malformed, "perftest bw report has " + std::to_string(msg.size()) +
                                               " bytes, expected " + std::to_string(want));
    auto at = [&](size_t i) { return std::span<const uint8_t, 8>(msg.data() + 8 * i, 8); };
    bw_report r;
    r.size = parse_be64(at(0));
    r.iters = parse_be64(at(1));
    r.bw_peak = parse_double(at(2));
    r.bw_avg = parse_double(at(3));
    r.msg_rate_avg = parse_double(at(4));
    if (per_port) {
        r.bw_avg_p1 = parse_double(at(5));
        r.msg_rate_avg_p1 = parse_double(at(6));
        r.bw_avg_p2 = parse_double(at(7));
        r.msg_rate_avg_p2 = parse_double(at(8));
    }
    return r;
}

result<void> validate(const config &c) {
    double v = version_number(c.version);
    if (c.version.size() >= version_size)
        return make_error(errc::invalid,
                          "perftest version \"" + c.version + "\" is longer than 15 characters");
    if (v < min_peer_version || v >= negotiate_version)
        return make_error(errc::invalid,
                          "advertised perftest version \"" + c.version +
                              "\" must be in [5.70, 6.28): older peers refuse < 5.70, and >= 6.28 "
                              "would require negotiate_params");
    if (c.num_qps < 1 || c.num_qps > 65536)
        return make_error(errc::invalid,
                          "number of QPs must be in 1..65536, got " + std::to_string(c.num_qps));
    if (c.mtu < 1 || c.mtu > 5)
        return make_error(errc::invalid,
                          "MTU must be an ibv_mtu enum 1..5, got " + std::to_string(c.mtu));
    if (c.duplex && c.kind == test_kind::lat)
        return make_error(errc::invalid, "bidirectional (-b) applies only to bw tests");
    if (c.run_infinitely && (c.kind == test_kind::lat || c.run_all))
        return make_error(errc::invalid, "run_infinitely applies to bw tests of one size");
    return {};
}

/* ---- session ---------------------------------------------------------------- */

result<session> session::connect(std::string_view host, uint16_t port, const config &c) {
    if (auto v = validate(c); !v) return v.err();
    config cc = c;
    cc.side = role::client;
    auto s = connect_tcp(host, port, c.timeout);
    if (!s) return s.err();
    return session(std::move(*s), std::move(cc));
}

result<session> session::accept(tcp_listener &l, const config &c, milliseconds accept_timeout) {
    if (auto v = validate(c); !v) return v.err();
    config cc = c;
    cc.side = role::server;
    auto s = l.accept(accept_timeout);
    if (!s) return s.err();
    return session(std::move(*s), std::move(cc));
}

session::session(std::unique_ptr<message_channel> ch, config c)
    : chan_(std::move(ch)), cfg_(std::move(c)) {
    cfg_.rdma_cm = true;
    cfg_.keys = key_format::binary;
    cfg_.send_done = false;
}

result<void> session::xchg(std::span<const uint8_t> mine, std::span<uint8_t> theirs, milliseconds t,
                           std::string_view what) {
    /* ctx_xchg_data_ethernet / ctx_xchg_data_rdma / ctx_hand_shake:
     * "servername" (the client) writes first; the server reads first. */
    if (chan_) {
        if (cfg_.side == role::client) {
            if (auto r = chan_->send(mine, t, what); !r) return r;
            return chan_->recv(theirs, t, what);
        }
        if (auto r = chan_->recv(theirs, t, what); !r) return r;
        return chan_->send(mine, t, what);
    }
    if (cfg_.side == role::client) {
        if (auto r = sock_.write_all(mine, t, what); !r) return r;
        return sock_.read_exact(theirs, t, what);
    }
    if (auto r = sock_.read_exact(theirs, t, what); !r) return r;
    return sock_.write_all(mine, t, what);
}

result<negotiated> session::preamble() {
    negotiated n;
    /* exchange_versions: char version[16]. */
    auto mine_v = format_version(cfg_.version);
    std::array<uint8_t, version_size> rem_v{};
    if (auto r = xchg(mine_v, rem_v, cfg_.timeout, "the perftest version"); !r) return r.err();
    auto rv = parse_version(rem_v);
    if (!rv) return rv.err();
    n.remote_version = *rv;
    n.remote_version_number = version_number(*rv);
    /* check_version_compatibility: atof(rem_version) < 5.70 -> exit. */
    if (n.remote_version_number < min_peer_version)
        return make_error(errc::incompatible,
                          "peer perftest version \"" + n.remote_version +
                              "\" is older than 5.70; perftest refuses to talk to it");

    /* check_sys_data (peer >= 5.32): cycle_buffer then cache_line_size,
     * each hton_int; both sides keep the max. */
    auto mine_cb = format_be32(cfg_.cycle_buffer);
    std::array<uint8_t, 4> rem_cb{};
    if (auto r = xchg(mine_cb, rem_cb, cfg_.timeout, "the peer's page size (cycle_buffer)"); !r)
        return r.err();
    auto mine_cl = format_be32(cfg_.cache_line_size);
    std::array<uint8_t, 4> rem_cl{};
    if (auto r = xchg(mine_cl, rem_cl, cfg_.timeout, "the peer's cache line size"); !r)
        return r.err();
    n.cycle_buffer = std::max(cfg_.cycle_buffer, parse_be32(rem_cb));
    n.cache_line_size = std::max(cfg_.cache_line_size, parse_be32(rem_cl));

    /* check_mtu (peer >= 5.1; 2 bytes since 5.31). */
    auto mine_m = format_mtu(cfg_.mtu);
    std::array<uint8_t, mtu_msg_size> rem_m{};
    if (auto r = xchg(mine_m, rem_m, cfg_.timeout, "the peer's MTU"); !r) return r.err();
    auto rm = parse_mtu(rem_m);
    if (!rm) return rm.err();
    n.local_mtu = cfg_.mtu;
    n.remote_mtu = *rm;
    n.mtu = negotiate_mtu(cfg_.mtu, *rm);
    /* negotiate_params runs only when the peer advertises >= 6.28; validate()
     * keeps our version below that, and the peer checks ours: skipped. */
    return n;
}

result<key> session::hand_shake(const key &mine, milliseconds t, std::string_view what) {
    /* ctx_hand_shake -> ethernet_write_keys / ethernet_read_keys; the reader
     * expects its own format's size (rem_dest->gid_index = my_dest->gid_index). */
    auto out = format_key(mine, cfg_.keys);
    std::vector<uint8_t> in(key_size(cfg_.keys));
    if (auto r = xchg(out, in, t, what); !r) return r.err();
    return parse_key(in);
}

result<std::vector<key>> session::hand_shake_all(std::span<const key> mine, milliseconds t) {
    std::vector<key> rem;
    rem.reserve(mine.size());
    for (const key &k : mine) {
        auto r = hand_shake(k, t);
        if (!r) return r.err();
        rem.push_back(*r);
    }
    return rem;
}

result<bw_report> session::xchg_bw_reports(const bw_report &mine, milliseconds t) {
    /* xchg_bw_reports: one ctx_xchg_data per field, in this order: size
     * (sizeof(unsigned long) = 8), iters (8 since peer 5.33), bw_peak,
     * bw_avg, msgRate_avg [, bw_avg_p1, msgRate_avg_p1, bw_avg_p2,
     * msgRate_avg_p2 with report_per_port]. */
    auto out = format_bw_report(mine, cfg_.report_per_port);
    std::vector<uint8_t> in(out.size());
    for (size_t off = 0; off < out.size(); off += 8) {
        auto r = xchg(std::span<const uint8_t>(out).subspan(off, 8),
                      std::span<uint8_t>(in).subspan(off, 8), t, "the bw report exchange");
        if (!r) return r.err();
    }
    return parse_bw_report(in, cfg_.report_per_port);
}

result<void> session::close_connection(const key &mine, milliseconds t) {
    /* ctx_close_connection: a hand shake ("signal client is finished"), then
     * perftest 4.5 writes "done\0" (never read by the peer) and closes;
     * newer perftest just closes. */
    if (auto r = hand_shake(mine, t, "the closing key exchange"); !r) return r.err();
    if (chan_) {
        /* -R: nothing after the hand shake; the control connection is torn
         * down with the QPs. */
        chan_->close();
        return {};
    }
    if (cfg_.send_done) {
        /* The peer may already have closed (perftest >= 6.x does not wait):
         * a failure here is not an error of the exchange. */
        (void)sock_.write_all(bytes_of(std::string_view("done", done_size)), t,
                              "the final \"done\"");
    }
    /* Send our FIN, then read the peer's "done" and EOF so our close does
     * not reset the connection under unread bytes. Bounded, best effort. */
    sock_.shutdown_write();
    sock_.drain_until_eof(std::min(t, milliseconds(1000)));
    sock_.close();
    return {};
}

void session::finish(milliseconds t) {
    if (chan_) {
        chan_->close();
        return;
    }
    sock_.shutdown_write();
    sock_.drain_until_eof(std::min(t, milliseconds(1000)));
    sock_.close();
}

void session::abort() {
    if (chan_) chan_->close();
    sock_.close();
}

/* ---- the per-test sequence -------------------------------------------------- */

namespace {

std::vector<uint64_t> sizes_for(const config &c, const negotiated &n) {
    if (!c.run_all) return {c.size};
    /* RUN_ALL: size = 1 << i for i in [1, max_pow). write/read bw and lat:
     * max_pow 24 (write_bw.c "for (i = 1; i < 24 ; ++i)"); send_bw.c and
     * send_lat.c: size_max_pow = 24, or log2(MTU) + 1 on UD. */
    int max_pow = 24;
    if (c.test_verb == verb::send && c.ud) {
        int b = mtu_bytes(n.mtu);
        int p = 0;
        while ((1 << (p + 1)) <= b)
            ++p;
        max_pow = p + 1;
    }
    std::vector<uint64_t> s;
    for (int i = 1; i < max_pow; ++i)
        s.push_back(uint64_t{1} << i);
    return s;
}

result<outcome> run_sequence(session &s, const hooks &h) {
    const config &c = s.cfg();
    if (auto v = validate(c); !v) return v.err();
    if (c.rdma_cm ? !h.connect_cm : (!h.create_local || !h.connect_qps))
        return make_error(errc::invalid, c.rdma_cm
                                             ? "perftest run -R: the connect_cm hook is required"
                                             : "perftest run: create_local and connect_qps "
                                               "hooks are required");
    const bool client = c.side == role::client;
    const bool bw = c.kind == test_kind::bw;
    const milliseconds st = c.timeout, tt = c.test_timeout;
    outcome o;

    auto neg = s.preamble();
    if (!neg) return neg.err();
    o.params = *neg;

    /* -R: create_rdma_cm_connection's hand shakes carry my_dest[0] before
     * set_up_connection filled it: all zeros. */
    const key zero_key{};
    if (c.rdma_cm) {
        auto r = s.hand_shake(zero_key, st, "the hand shake before the rdma_cm connection");
        if (!r) return r.err();
        ++o.hand_shakes;
    }
    auto loc = c.rdma_cm ? h.connect_cm(o.params) : h.create_local(o.params);
    if (!loc)
        return make_error(errc::callback,
                          std::string(c.rdma_cm ? "could not connect the QPs through rdma_cm: "
                                                : "could not set up the local QPs: ") +
                              loc.message());
    if (c.rdma_cm) {
        auto r = s.hand_shake(zero_key, st, "the hand shake after the rdma_cm connection");
        if (!r) return r.err();
        ++o.hand_shakes;
    }
    const std::vector<key> local = *loc;
    if (local.size() != static_cast<size_t>(c.num_qps))
        return make_error(errc::callback, "create_local returned " + std::to_string(local.size()) +
                                              " keys for " + std::to_string(c.num_qps) + " QPs");

    auto hs0 = [&](milliseconds t, std::string_view what = "the key exchange") -> result<void> {
        auto r = s.hand_shake(local[0], t, what);
        if (!r) return r.err();
        ++o.hand_shakes;
        return {};
    };
    auto hs_all = [&](milliseconds t) -> result<std::vector<key>> {
        auto r = s.hand_shake_all(local, t);
        if (r) o.hand_shakes += static_cast<int>(local.size());
        return r;
    };
    auto reports = [&](const bw_report &mine, milliseconds t) -> result<void> {
        auto r = s.xchg_bw_reports(mine, t);
        if (!r) return r.err();
        o.remote_reports.push_back(*r);
        if (h.reports_exchanged) h.reports_exchanged(mine, *r);
        return {};
    };
    auto run_one = [&](uint64_t size) -> result<bw_report> {
        if (!h.run)
            return make_error(errc::invalid, "perftest run: the run hook is required on this side");
        auto r = h.run(size);
        if (!r)
            return make_error(errc::callback, "the measurement at size " + std::to_string(size) +
                                                  " failed: " + r.message());
        return r;
    };
    auto prepare = [&](uint64_t size) -> result<void> {
        if (!h.prepare) return {};
        auto r = h.prepare(size);
        if (!r) return make_error(errc::callback, "could not post receives: " + r.message());
        return {};
    };
    auto idle = [&]() { return h.idle_report ? h.idle_report() : bw_report{}; };
    auto close = [&](milliseconds t) -> result<void> {
        auto r = s.close_connection(local[0], t);
        if (r) ++o.hand_shakes;
        return r;
    };

    /* write_lat.c / read_lat.c / atomic_lat.c main: a hand shake on QP 0
     * before the per-QP loop (send_lat.c has none). */
    if (!bw && c.test_verb != verb::send)
        if (auto r = hs0(st); !r) return r.err();

    /* Every test: per-QP "shaking hands and gather the other side info". */
    auto rem = hs_all(st);
    if (!rem) return rem.err();
    o.remote_keys = *rem;

    /* ctx_connect: RTR/RTS with the peer's keys. With -R rdma_cm did that;
     * the hook (optional then) only learns the peer's buffers. */
    if (h.connect_qps)
        if (auto r = h.connect_qps(o.remote_keys); !r)
            return make_error(errc::callback, "could not connect the QPs: " + r.message());

    /* send_bw.c / send_lat.c: a QP-0 hand shake right after ctx_connect. */
    if (c.test_verb == verb::send)
        if (auto r = hs0(st); !r) return r.err();

    /* Every test: the per-QP loop around ctx_print_pingpong_data(remote). */
    if (auto r = hs_all(st); !r) return r.err();

    /* write/read/atomic (bw and lat): "An additional handshake is required
     * after moving qp to RTR." */
    if (c.test_verb != verb::send)
        if (auto r = hs0(st, "the post-RTR barrier"); !r) return r.err();

    const std::vector<uint64_t> sizes = sizes_for(c, o.params);

    if (c.run_infinitely) {
        /* send_bw.c / write_bw.c / read_bw.c / atomic_bw.c RUN_INFINITELY:
         * the send tests post their receives and meet at a hand shake, the
         * others go straight on (both sides with -b); then they run until
         * stopped. A half-duplex write/read/atomic server sits at the
         * end-of-test hand shake, which the client never reaches: the
         * client's end (its socket closing) ends the run there. */
        const milliseconds forever = std::chrono::hours(24 * 365 * 10);
        const bool runs = c.test_verb == verb::send || c.duplex || client;
        if (c.test_verb == verb::send) {
            if (auto r = prepare(c.size); !r) return r.err();
            if (auto r = hs0(tt, "the ready-to-send hand shake"); !r) return r.err();
        }
        if (runs) {
            if (auto r = run_one(c.size); !r) return r.err();
            return o;
        }
        auto r = s.hand_shake(local[0], forever, "the end of the client's run");
        if (!r && r.code() != errc::peer_closed) return r.err();
        return o;
    }

    if (bw && c.test_verb == verb::send) {
        /* send_bw.c: RUN_ALL / RUN_REGULAR. Both sides run (client
         * run_iter_bw, server run_iter_bw_server, duplex run_iter_bi). */
        const bool reports_on = c.duplex && !c.duration;
        for (size_t i = 0; i < sizes.size(); ++i) {
            if (auto r = prepare(sizes[i]); !r) return r.err();
            if (auto r = hs0(tt, "the ready-to-send hand shake"); !r) return r.err();
            auto mine = run_one(sizes[i]);
            if (!mine) return mine.err();
            if (reports_on)
                if (auto r = reports(*mine, tt); !r) return r.err();
            if (c.run_all)
                if (auto r = hs0(tt, "the end-of-size hand shake"); !r) return r.err();
        }
        if (auto r = close(tt); !r) return r.err();
        return o;
    }

    if (bw) {
        /* write_bw.c / read_bw.c / atomic_bw.c. atomic_bw treats RUN_ALL
         * as RUN_REGULAR (one run, atomics are 8 bytes). */
        std::vector<uint64_t> sz = sizes;
        if (c.test_verb == verb::atomic) sz = {c.size};
        if (!c.duplex) {
            /* "For half duplex tests, server just waits for client to exit":
             * the server never runs; it waits for the client's end-of-test
             * hand shake, then both exchange reports and close. */
            bw_report mine{};
            if (client) {
                for (uint64_t size : sz) {
                    auto r = run_one(size);
                    if (!r) return r.err();
                    mine = *r; /* my_bw_rep keeps the last size's report */
                }
            } else {
                mine = idle();
            }
            if (auto r = hs0(tt, "the end-of-test hand shake"); !r) return r.err();
            if (auto r = reports(mine, tt); !r) return r.err();
            if (auto r = close(tt); !r) return r.err();
            return o;
        }
        /* Duplex: both sides run. RUN_ALL (write/read): hand shake, run,
         * hand shake (local version >= 4.6), reports per size. RUN_REGULAR
         * (and atomic): hand shake, run, reports. */
        const bool loop = c.run_all && c.test_verb != verb::atomic;
        for (uint64_t size : sz) {
            if (auto r = hs0(tt, "the ready-to-run hand shake"); !r) return r.err();
            auto mine = run_one(size);
            if (!mine) return mine.err();
            if (loop)
                if (auto r = hs0(tt, "the end-of-size hand shake"); !r) return r.err();
            if (auto r = reports(*mine, tt); !r) return r.err();
        }
        if (auto r = close(tt); !r) return r.err();
        return o;
    }

    /* Latency tests. */
    switch (c.test_verb) {
    case verb::send:
        /* send_lat.c: per size, post receives then a sync hand shake "so the
         * client won't send packets before the server has posted his
         * receive wqes", then both run; then ctx_close_connection. */
        for (uint64_t size : sizes) {
            if (auto r = prepare(size); !r) return r.err();
            if (auto r = hs0(tt, "the ready-to-send hand shake"); !r) return r.err();
            if (auto r = run_one(size); !r) return r.err();
        }
        if (auto r = close(tt); !r) return r.err();
        return o;
    case verb::write:
        /* write_lat.c: both sides run, then exit without
         * ctx_close_connection: no more TCP bytes. */
        for (uint64_t size : sizes)
            if (auto r = run_one(size); !r) return r.err();
        s.finish(st);
        return o;
    case verb::read:
    case verb::atomic: {
        /* read_lat.c / atomic_lat.c: "Only Client post read request": the
         * server goes straight to ctx_close_connection; the client runs
         * (read_lat RUN_ALL: sizes 2..2^23; atomic_lat: once), then closes. */
        if (client) {
            std::vector<uint64_t> sz =
                c.test_verb == verb::atomic ? std::vector<uint64_t>{c.size} : sizes;
            for (uint64_t size : sz)
                if (auto r = run_one(size); !r) return r.err();
        }
        if (auto r = close(tt); !r) return r.err();
        return o;
    }
    }
    return o;
}

} // namespace

result<outcome> run(session &s, const hooks &h) {
    auto r = run_sequence(s, h);
    /* A failed exchange is over: close at once so the peer's next read fails
     * instead of waiting out its timeout (the stock tools exit here). */
    if (!r) s.abort();
    return r;
}

result<outcome> run_client(std::string_view host, uint16_t port, const config &c, const hooks &h) {
    auto s = session::connect(host, port, c);
    if (!s) return s.err();
    return run(*s, h);
}

result<outcome> run_server(tcp_listener &l, const config &c, const hooks &h,
                           milliseconds accept_timeout) {
    auto s = session::accept(l, c, accept_timeout);
    if (!s) return s.err();
    return run(*s, h);
}

} // namespace uroce::oob::perftest

/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_*_pingpong TCP exchange. Protocol facts from rdma-core
 * libibverbs/examples/rc_pingpong.c (pp_client_exch_dest,
 * pp_server_exch_dest), ud_pingpong.c (same functions, UD) and pingpong.c
 * (gid_to_wire_gid, wire_gid_to_gid). Written from those facts, not copied.
 */
#include "pingpong_oob.h"

#include <cstdio>
#include <cstring>

namespace uroce::oob::pingpong {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

error malformed(std::string_view why, std::span<const uint8_t> msg) {
    return make_error(errc::malformed, "malformed pingpong address message from peer: " +
                                           std::string(why) + ": \"" + printable(msg) + "\"");
}

/* Fixed-width hex field at msg[off, off+width). */
bool hex_field(std::span<const uint8_t> msg, size_t off, size_t width, uint32_t &out) {
    uint32_t v = 0;
    for (size_t i = 0; i < width; ++i) {
        int h = hex_value(msg[off + i]);
        if (h < 0) return false;
        v = (v << 4) | static_cast<uint32_t>(h);
    }
    out = v;
    return true;
}

void put_hex(uint8_t *dst, uint32_t v, size_t width) {
    for (size_t i = 0; i < width; ++i)
        dst[width - 1 - i] = static_cast<uint8_t>(hex_digits[(v >> (4 * i)) & 0xf]);
}

constexpr std::string_view what_addr = "the pingpong address exchange";

} // namespace

std::string gid_to_wire(const gid_raw &g) {
    /* pingpong.c gid_to_wire_gid: per 32-bit word, htobe32 of the word loaded
     * from the raw bytes, printed "%08x" -- i.e. the raw bytes in order. */
    std::string s(32, '0');
    for (size_t i = 0; i < 16; ++i) {
        s[2 * i] = hex_digits[g[i] >> 4];
        s[2 * i + 1] = hex_digits[g[i] & 0xf];
    }
    return s;
}

bool wire_to_gid(std::string_view hex32, gid_raw &out) {
    if (hex32.size() != 32) return false;
    gid_raw g{};
    for (size_t i = 0; i < 16; ++i) {
        int hi = hex_value(static_cast<uint8_t>(hex32[2 * i]));
        int lo = hex_value(static_cast<uint8_t>(hex32[2 * i + 1]));
        if (hi < 0 || lo < 0) return false;
        g[i] = static_cast<uint8_t>((hi << 4) | lo);
    }
    out = g;
    return true;
}

message format(const dest &d) {
    /* "%04x:%06x:%06x:%s" + NUL, rc_pingpong.c pp_client_exch_dest. */
    message m{};
    put_hex(&m[0], d.lid, 4);
    m[4] = ':';
    put_hex(&m[5], d.qpn & 0xffffff, 6);
    m[11] = ':';
    put_hex(&m[12], d.psn & 0xffffff, 6);
    m[18] = ':';
    std::string w = gid_to_wire(d.gid);
    std::memcpy(&m[19], w.data(), 32);
    m[51] = 0;
    return m;
}

result<dest> parse(std::span<const uint8_t> msg) {
    if (msg.size() != msg_size)
        return make_error(errc::malformed, "pingpong address message has " +
                                               std::to_string(msg.size()) + " bytes, expected " +
                                               std::to_string(msg_size));
    dest d;
    uint32_t v = 0;
    if (!hex_field(msg, 0, 4, v)) return malformed("LID is not 4 hex digits", msg);
    d.lid = static_cast<uint16_t>(v);
    if (msg[4] != ':') return malformed("expected ':' after the LID", msg);
    if (!hex_field(msg, 5, 6, d.qpn)) return malformed("QPN is not 6 hex digits", msg);
    if (msg[11] != ':') return malformed("expected ':' after the QPN", msg);
    if (!hex_field(msg, 12, 6, d.psn)) return malformed("PSN is not 6 hex digits", msg);
    if (msg[18] != ':') return malformed("expected ':' after the PSN", msg);
    std::string_view g(reinterpret_cast<const char *>(&msg[19]), 32);
    if (!wire_to_gid(g, d.gid)) return malformed("GID is not 32 hex digits", msg);
    if (msg[51] != 0) return malformed("missing the terminating NUL", msg);
    return d;
}

result<dest> client_exchange(tcp_socket &sock, const dest &local, milliseconds timeout) {
    /* pp_client_exch_dest: write ours, read theirs, write "done". */
    message out = format(local);
    if (auto r = sock.write_all(out, timeout, what_addr); !r) return r.err();
    message in{};
    if (auto r = sock.read_exact(in, timeout, what_addr); !r) return r.err();
    auto rem = parse(in);
    if (!rem) return rem.err();
    static constexpr uint8_t done[done_size] = {'d', 'o', 'n', 'e', 0};
    if (auto r = sock.write_all(done, timeout, "the final \"done\""); !r) return r.err();
    /* The stock server closes right after reading "done"; send our FIN and
     * wait briefly for its FIN so neither side sees a reset. */
    sock.shutdown_write();
    sock.drain_until_eof(std::min(timeout, milliseconds(1000)));
    sock.close();
    return rem;
}

result<dest> server_exchange(tcp_socket &sock, const dest &local, const connect_hook &hook,
                             milliseconds timeout) {
    /* pp_server_exch_dest: read theirs, pp_connect_ctx (RTR/RTS), write
     * ours, read "done" (the stock server checks only its length). */
    message in{};
    if (auto r = sock.read_exact(in, timeout, what_addr); !r) return r.err();
    auto rem = parse(in);
    if (!rem) return rem.err();
    if (hook) {
        if (auto h = hook(*rem); !h) {
            sock.close();
            return make_error(errc::callback,
                              "could not connect to the remote QP before replying: " + h.message());
        }
    }
    message out = format(local);
    if (auto r = sock.write_all(out, timeout, what_addr); !r) return r.err();
    uint8_t done[done_size] = {};
    if (auto r = sock.read_exact(done, timeout, "the client's final \"done\""); !r) return r.err();
    if (std::memcmp(done, "done", done_size) != 0)
        return make_error(errc::malformed,
                          "expected \"done\\0\" from the client, got \"" + printable(done) + "\"");
    sock.close();
    return rem;
}

result<dest> client_exchange(std::string_view host, uint16_t port, const dest &local,
                             milliseconds timeout) {
    auto s = connect_tcp(host, port, timeout);
    if (!s) return s.err();
    return client_exchange(*s, local, timeout);
}

result<dest> server_exchange(tcp_listener &listener, const dest &local, const connect_hook &hook,
                             milliseconds accept_timeout, milliseconds timeout) {
    auto s = listener.accept(accept_timeout);
    if (!s) return s.err();
    return server_exchange(*s, local, hook, timeout);
}

result<dest> server_exchange(uint16_t port, const dest &local, const connect_hook &hook,
                             milliseconds accept_timeout, milliseconds timeout) {
    auto l = tcp_listener::listen("", port, 1);
    if (!l) return l.err();
    /* The stock server closes the listening socket right after accept. */
    auto s = l->accept(accept_timeout);
    l->close();
    if (!s) return s.err();
    return server_exchange(*s, local, hook, timeout);
}

namespace {

/* slots messages: the first local.size() are ours, the rest all-zero. */
std::vector<uint8_t> format_slots(std::span<const dest> local, size_t slots) {
    std::vector<uint8_t> out;
    out.reserve(slots * msg_size);
    for (size_t i = 0; i < slots; ++i) {
        message m = format(i < local.size() ? local[i] : dest{});
        out.insert(out.end(), m.begin(), m.end());
    }
    return out;
}

result<std::vector<dest>> read_slots(tcp_socket &sock, size_t wanted, size_t slots,
                                     milliseconds timeout) {
    std::vector<uint8_t> in(slots * msg_size);
    if (auto r = sock.read_exact(in, timeout, what_addr); !r) return r.err();
    std::vector<dest> rem;
    for (size_t i = 0; i < wanted; ++i) {
        auto d = parse(std::span<const uint8_t>(in).subspan(i * msg_size, msg_size));
        if (!d) return make_error(d.code(), "QP " + std::to_string(i) + ": " + d.message());
        rem.push_back(*d);
    }
    return rem;
}

result<void> check_slots(std::span<const dest> local, size_t slots) {
    if (local.empty() || local.size() > slots)
        return make_error(errc::invalid, std::to_string(local.size()) + " QPs for " +
                                             std::to_string(slots) + " address slots");
    return {};
}

} // namespace

result<std::vector<dest>> client_exchange_multi(tcp_socket &sock, std::span<const dest> local,
                                                size_t slots, milliseconds timeout) {
    if (auto c = check_slots(local, slots); !c) return c.err();
    if (auto r = sock.write_all(format_slots(local, slots), timeout, what_addr); !r) return r.err();
    auto rem = read_slots(sock, local.size(), slots, timeout);
    if (!rem) return rem.err();
    static constexpr uint8_t done[done_size] = {'d', 'o', 'n', 'e', 0};
    if (auto r = sock.write_all(done, timeout, "the final \"done\""); !r) return r.err();
    sock.shutdown_write();
    sock.drain_until_eof(std::min(timeout, milliseconds(1000)));
    sock.close();
    return rem;
}

result<std::vector<dest>> server_exchange_multi(tcp_socket &sock, std::span<const dest> local,
                                                size_t slots, const multi_connect_hook &hook,
                                                milliseconds timeout) {
    if (auto c = check_slots(local, slots); !c) return c.err();
    auto rem = read_slots(sock, local.size(), slots, timeout);
    if (!rem) return rem.err();
    if (hook) {
        if (auto h = hook(*rem); !h) {
            sock.close();
            return make_error(errc::callback,
                              "could not connect to the remote QPs before replying: " +
                                  h.message());
        }
    }
    if (auto r = sock.write_all(format_slots(local, slots), timeout, what_addr); !r) return r.err();
    uint8_t done[done_size] = {};
    if (auto r = sock.read_exact(done, timeout, "the client's final \"done\""); !r) return r.err();
    if (std::memcmp(done, "done", done_size) != 0)
        return make_error(errc::malformed,
                          "expected \"done\\0\" from the client, got \"" + printable(done) + "\"");
    sock.close();
    return rem;
}

result<std::vector<dest>> client_exchange_multi(std::string_view host, uint16_t port,
                                                std::span<const dest> local, size_t slots,
                                                milliseconds timeout) {
    auto s = connect_tcp(host, port, timeout);
    if (!s) return s.err();
    return client_exchange_multi(*s, local, slots, timeout);
}

} // namespace uroce::oob::pingpong

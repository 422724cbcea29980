/* SPDX-License-Identifier: BSD-3-Clause
 * The TCP exchange of rdma-core's ibv_rc_pingpong / ibv_uc_pingpong /
 * ibv_ud_pingpong (libibverbs/examples/rc_pingpong.c, ud_pingpong.c,
 * pingpong.c), byte-compatible with the stock tools in either role.
 *
 * Message: sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, wgid) sent as a fixed
 * buffer of sizeof "0000:000000:000000:" + 32 hex digits = 52 bytes with the
 * trailing NUL (pp_client_exch_dest / pp_server_exch_dest `char msg[...]`).
 * wgid is gid_to_wire_gid(): the 16 raw GID bytes in order, as 32 hex digits.
 *
 * Sequence (pp_client_exch_dest / pp_server_exch_dest):
 *   client -> server  52 B  client's LID:QPN:PSN:GID
 *   server            parses it and moves its QP to RTR/RTS (pp_connect_ctx)
 *                     BEFORE replying
 *   server -> client  52 B  server's LID:QPN:PSN:GID
 *   client -> server  5 B   "done\0"; both close. The client moves its QP
 *                     to RTR/RTS after the exchange.
 * UD (ud_pingpong.c) uses the same format and sequence; the server's hook
 * creates its address handle instead of connecting a QP. UC (uc_pingpong.c)
 * is RC's exchange byte for byte.
 *
 * SRQ (srq_pingpong.c, N QPs sharing one SRQ): the same sequence with one
 * 52-byte message per QP slot, always MAX_QP = 256 slots each way whatever
 * -q N says (13312 bytes). The stock tool fills its first N slots and sends
 * the rest of its array as it is on the stack (uninitialised), so only the
 * first N are parsed; the others are read and ignored, and ours go out as
 * all-zero addresses.
 */
#ifndef UROCE_APPS_PINGPONG_OOB_H
#define UROCE_APPS_PINGPONG_OOB_H

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "uroce_oob.h"

namespace uroce::oob::pingpong {

/* struct pingpong_dest of rc_pingpong.c. */
struct dest {
    uint16_t lid = 0; /* 0 on RoCE */
    uint32_t qpn = 0; /* 24 bits */
    uint32_t psn = 0; /* 24 bits; the stock tools use lrand48() & 0xffffff */
    gid_raw gid{};    /* all zero when the stock tool runs without -g */
    friend bool operator==(const dest &, const dest &) = default;
};

inline constexpr size_t msg_size = 52; /* sizeof "0000:000000:000000:" + 32 */
inline constexpr size_t done_size = 5; /* sizeof "done" */
using message = std::array<uint8_t, msg_size>;

/* gid_to_wire_gid (pingpong.c): 32 lowercase hex digits, raw bytes in order. */
std::string gid_to_wire(const gid_raw &g);
/* wire_gid_to_gid: exactly 32 hex digits (either case). */
bool wire_to_gid(std::string_view hex32, gid_raw &out);

/* The 52-byte message. qpn and psn are masked to 24 bits (wider values would
 * overflow the stock tool's fixed buffer). */
message format(const dest &d);
/* Parses a 52-byte message: "llll:qqqqqq:pppppp:" + 32 hex + NUL. Stricter
 * than the stock sscanf("%x:%x:%x:%s"), which accepts the same bytes. */
result<dest> parse(std::span<const uint8_t> msg);

/* The server's "move my QP to RTR/RTS" step, run with the client's address
 * after it was read and before the server replies. A failure aborts the
 * exchange: the connection is closed without a reply, like the stock server. */
using connect_hook = std::function<result<void>(const dest &remote)>;

/* ---- on an already connected socket --------------------------------------
 * `timeout` bounds each wait (each read/write). */
result<dest> client_exchange(tcp_socket &sock, const dest &local, milliseconds timeout);
result<dest> server_exchange(tcp_socket &sock, const dest &local, const connect_hook &hook,
                             milliseconds timeout);

/* ---- complete client / server -------------------------------------------
 * client: connect (retrying until `timeout`), exchange, close.
 * server: accept one client on `listener` (waiting up to accept_timeout),
 *         exchange, close. */
result<dest> client_exchange(std::string_view host, uint16_t port, const dest &local,
                             milliseconds timeout);
result<dest> server_exchange(tcp_listener &listener, const dest &local, const connect_hook &hook,
                             milliseconds accept_timeout, milliseconds timeout);
/* Listens on `port` (any address, SO_REUSEADDR) for one client, then as above. */
result<dest> server_exchange(uint16_t port, const dest &local, const connect_hook &hook,
                             milliseconds accept_timeout, milliseconds timeout);

/* ---- srq_pingpong: one message per QP slot --------------------------------- */
inline constexpr size_t srq_slots = 256; /* MAX_QP in srq_pingpong.c */
using multi_connect_hook = std::function<result<void>(std::span<const dest> remote)>;
/* local.size() <= slots QPs; the peer's first local.size() addresses. */
result<std::vector<dest>> client_exchange_multi(tcp_socket &sock, std::span<const dest> local,
                                                size_t slots, milliseconds timeout);
result<std::vector<dest>> server_exchange_multi(tcp_socket &sock, std::span<const dest> local,
                                                size_t slots, const multi_connect_hook &hook,
                                                milliseconds timeout);
result<std::vector<dest>> client_exchange_multi(std::string_view host, uint16_t port,
                                                std::span<const dest> local, size_t slots,
                                                milliseconds timeout);

} // namespace uroce::oob::pingpong

#endif

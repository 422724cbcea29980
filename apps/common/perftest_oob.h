/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's TCP exchange (linux-rdma/perftest src/perftest_communication.c
 * and the main() of each test: write_bw.c, read_bw.c, send_bw.c,
 * atomic_bw.c, send_lat.c, write_lat.c, read_lat.c, atomic_lat.c),
 * byte-compatible with the stock ib_*_bw / ib_*_lat in either role.
 *
 * Every exchange is symmetric (ctx_xchg_data / ctx_hand_shake): the client
 * writes then reads, the server reads then writes, raw bytes:
 *   1. version       16 B  char[MAX_VERSION], NUL padded ("6.06")
 *   2. cycle_buffer   4 B  int32 big-endian (page size)      } check_sys_data
 *   3. cache_line     4 B  int32 big-endian                  } (peer >= 5.32)
 *   4. MTU            2 B  sprintf("%d", ibv_mtu enum)       check_mtu
 *   [negotiate_params only when the peer is >= 6.28: we advertise 6.06, so
 *    neither side runs it]
 *   5. KEY messages (ctx_hand_shake): 108 B KEY_PRINT_FMT_GID with a GID
 *      (always on RoCE), 59 B KEY_PRINT_FMT without; the count and places
 *      depend on the test (see run()).
 *   6. bw tests: xchg_bw_reports: size u64, iters u64, bw_peak, bw_avg,
 *      msgRate_avg (doubles, big-endian IEEE-754 via hton_double); 4 more
 *      doubles with --report-per-port.
 *   7. ctx_close_connection: one more KEY handshake, then (perftest 4.5 /
 *      "6.06") each side writes "done\0" and closes.
 *
 * With -R (work_rdma_cm, which turns use_rdma_cm on too) the same exchanges
 * travel as SENDs on a control RC QP that rdma_cm connected to the test's
 * port first (rdma_client_connect / rdma_server_connect): each
 * ctx_xchg_data is one message of exactly its size, and the KEY messages
 * are struct pingpong_dest in binary, 56 B (rdma_write_keys, HAVE_ENDIAN:
 * lid, out_reads, qpn, psn, rkey as big-endian int32, 4 B of padding,
 * vaddr big-endian 64, the GID, srqn and gid_index big-endian). The test's
 * own QPs are then connected by a second rdma_cm connection per QP, to the
 * same port, between two hand shakes (create_rdma_cm_connection), where the
 * TCP run creates them (ctx_init); no ctx_connect, and no "done".
 */
#ifndef UROCE_APPS_PERFTEST_OOB_H
#define UROCE_APPS_PERFTEST_OOB_H

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "uroce_oob.h"

namespace uroce::oob::perftest {

inline constexpr size_t version_size = 16;                  /* MAX_VERSION, perftest_parameters.h */
inline constexpr std::string_view default_version = "6.06"; /* Debian 12 perftest 4.5-0.17 */
inline constexpr double min_peer_version = 5.70;            /* check_version_compatibility */
inline constexpr double negotiate_version = 6.28;           /* negotiate_params threshold */
inline constexpr size_t key_size_no_gid = 59;               /* KEY_MSG_SIZE */
inline constexpr size_t key_size_gid = 108;                 /* KEY_MSG_SIZE_GID */
inline constexpr size_t mtu_msg_size = 2;                   /* check_mtu, peer >= 5.31 */
inline constexpr size_t done_size = 5;                      /* sizeof "done" */
inline constexpr size_t key_size_binary = 56;               /* sizeof(struct pingpong_dest): -R */

enum class verb { send, write, read, atomic };
enum class test_kind { bw, lat };
enum class role { client, server };

const char *verb_name(verb v);
/* "ib_write_bw" etc. */
std::string test_name(verb v, test_kind k);

/* struct pingpong_dest fields that travel in a KEY message. */
struct key {
    uint16_t lid = 0;       /* 0 on RoCE */
    uint16_t out_reads = 0; /* the peer's max_rd_atomic / max_dest_rd_atomic */
    uint32_t qpn = 0;       /* 24 bits */
    uint32_t psn = 0;       /* 24 bits, lrand48() & 0xffffff */
    uint32_t rkey = 0;      /* of the buffer the peer may WRITE/READ/atomic */
    uint64_t vaddr = 0;     /* that buffer's address */
    gid_raw gid{};          /* only in the GID format */
    uint32_t srqn = 0;      /* XRC/DC only, else 0 */
    friend bool operator==(const key &, const key &) = default;
};

enum class key_format {
    gid,    /* KEY_PRINT_FMT_GID, 108 B: what every RoCE run sends */
    no_gid, /* KEY_PRINT_FMT, 59 B: IB without -x */
    binary, /* struct pingpong_dest, 56 B: -R (rdma_write_keys) */
};
size_t key_size(key_format f);
/* The exact bytes ethernet_write_keys sends, NUL included. */
std::vector<uint8_t> format_key(const key &k, key_format f);
/* Any format, chosen by size (108, 59 or 56). Both sides must use the same
 * format: the stock reader reads the size of its own format. */
result<key> parse_key(std::span<const uint8_t> msg);

std::array<uint8_t, version_size> format_version(std::string_view v);
/* The text up to the first NUL; an error when not NUL-terminated or not
 * printable. */
result<std::string> parse_version(std::span<const uint8_t> msg);
/* atof() of the version text, as perftest compares versions. */
double version_number(std::string_view v);

std::array<uint8_t, 4> format_be32(int32_t v);
int32_t parse_be32(std::span<const uint8_t, 4> b);
std::array<uint8_t, 8> format_be64(uint64_t v);
uint64_t parse_be64(std::span<const uint8_t, 8> b);
/* hton_double: IEEE-754 bits byte-swapped on little-endian hosts, i.e. big-endian. */
std::array<uint8_t, 8> format_double(double v);
double parse_double(std::span<const uint8_t, 8> b);

/* MTU as perftest sends it: sprintf("%d", enum ibv_mtu) in 2 bytes ("5\0"). */
std::array<uint8_t, mtu_msg_size> format_mtu(int mtu_enum);
/* strtol() of the 2 bytes (like check_mtu); error when not a digit. */
result<int> parse_mtu(std::span<const uint8_t> msg);
/* check_mtu: the peer's MTU when it is valid (IBV_MTU_256..4096) and smaller. */
int negotiate_mtu(int local, int remote);
inline int mtu_bytes(int mtu_enum) {
    return mtu_enum >= 1 && mtu_enum <= 5 ? 128 << mtu_enum : 0;
}

/* struct bw_report_data: the part xchg_bw_reports sends. */
struct bw_report {
    uint64_t size = 0;
    uint64_t iters = 0;
    double bw_peak = 0, bw_avg = 0, msg_rate_avg = 0;
    /* only with --report-per-port */
    double bw_avg_p1 = 0, msg_rate_avg_p1 = 0, bw_avg_p2 = 0, msg_rate_avg_p2 = 0;
};
/* 40 bytes, or 72 with per_port: size, iters, bw_peak, bw_avg, msgRate_avg
 * [, bw_avg_p1, msgRate_avg_p1, bw_avg_p2, msgRate_avg_p2], each 8 B BE. */
std::vector<uint8_t> format_bw_report(const bw_report &r, bool per_port);
result<bw_report> parse_bw_report(std::span<const uint8_t> msg, bool per_port);

struct config {
    role side = role::client;
    verb test_verb = verb::write;
    test_kind kind = test_kind::bw;
    int num_qps = 1;       /* -q */
    bool duplex = false;   /* -b, bw tests only */
    bool run_all = false;  /* -a */
    uint64_t size = 65536; /* -s; handed to the hooks when not run_all */
    bool ud = false;       /* -c UD: run_all sizes of send tests stop at the MTU */
    bool duration = false; /* -D: send_bw duplex skips the reports */
    /* --run_infinitely (bw, one size): after the ready hand shake the sides
     * run until stopped, and no exchange follows (the stock tools end by a
     * signal); a write/read/atomic server waits for the client's end with
     * no time limit, and the client's closing the connection ends its run */
    bool run_infinitely = false;
    bool report_per_port = false; /* --report-per-port */
    key_format keys = key_format::gid;
    std::string version = std::string(default_version); /* advertised; must be in [5.70, 6.28) */
    int32_t cycle_buffer = 4096;                        /* sysconf(_SC_PAGESIZE) */
    int32_t cache_line_size = 64;
    int mtu = 5;                       /* the local port's active MTU as an ibv_mtu enum (1..5) */
    milliseconds timeout{10000};       /* each wait during setup */
    milliseconds test_timeout{600000}; /* each wait while the peer runs its measurement */
    bool send_done = true;             /* write "done\0" after the final handshake (perftest 4.5) */
    /* -R: the exchanges go over a message_channel, the keys are binary, and
     * the hooks' connect_cm creates and connects the QPs (see the top). */
    bool rdma_cm = false;
};

/* What carries the exchanges with -R: one message per ctx_xchg_data, in
 * order, exactly as many bytes as the reader expects (a SEND on perftest's
 * control QP). */
class message_channel {
  public:
    virtual ~message_channel() = default;
    virtual result<void> send(std::span<const uint8_t> msg, milliseconds timeout,
                              std::string_view what) = 0;
    /* The next message; an error when it is not exactly msg.size() bytes. */
    virtual result<void> recv(std::span<uint8_t> msg, milliseconds timeout,
                              std::string_view what) = 0;
    /* The exchange is over (or failed): stop using the channel. */
    virtual void close() = 0;
};

/* Checks the config (version range, num_qps, mtu). */
result<void> validate(const config &c);

struct negotiated {
    std::string remote_version;
    double remote_version_number = 0;
    int32_t cycle_buffer = 0;    /* max of both */
    int32_t cache_line_size = 0; /* max of both */
    int local_mtu = 0, remote_mtu = 0;
    int mtu = 0; /* what both sides use */
};

/* One perftest control connection. Each step is one call; run() strings them
 * together exactly as the stock test does. */
class session {
  public:
    static result<session> connect(std::string_view host, uint16_t port, const config &c);
    static result<session> accept(tcp_listener &l, const config &c, milliseconds accept_timeout);
    session(tcp_socket s, config c) : sock_(std::move(s)), cfg_(std::move(c)) {}
    /* -R: over a connected control channel (cfg.rdma_cm and binary keys are set). */
    session(std::unique_ptr<message_channel> ch, config c);

    const config &cfg() const { return cfg_; }
    tcp_socket &socket() { return sock_; }

    /* ctx_xchg_data_ethernet: client writes then reads, server reads then writes. */
    result<void> xchg(std::span<const uint8_t> mine, std::span<uint8_t> theirs, milliseconds t,
                      std::string_view what);
    /* exchange_versions + check_version_compatibility + check_sys_data + check_mtu. */
    result<negotiated> preamble();
    /* ctx_hand_shake for one QP: returns the peer's key. */
    result<key> hand_shake(const key &mine, milliseconds t,
                           std::string_view what = "the key exchange");
    /* One hand shake per QP. */
    result<std::vector<key>> hand_shake_all(std::span<const key> mine, milliseconds t);
    /* xchg_bw_reports (peer >= 5.33: iters is 8 bytes). */
    result<bw_report> xchg_bw_reports(const bw_report &mine, milliseconds t);
    /* ctx_close_connection: hand shake, "done" (when cfg.send_done, not with -R), close. */
    result<void> close_connection(const key &mine, milliseconds t);
    /* The end without ctx_close_connection (write_lat), or after a failure. */
    void finish(milliseconds t);
    void abort();

  private:
    tcp_socket sock_;
    std::unique_ptr<message_channel> chan_; /* -R */
    config cfg_;
};

/* What the application does between the exchanges. */
struct hooks {
    /* After the MTU exchange: create the QPs/MRs (ctx_init) and return one
     * key per QP (set_up_connection). Required. */
    std::function<result<std::vector<key>>(const negotiated &)> create_local;
    /* -R instead of create_local and connect_qps: create the QPs and
     * connect each through rdma_cm (create_rdma_cm_connection, called
     * between its two hand shakes); returns one key per QP. */
    std::function<result<std::vector<key>>(const negotiated &)> connect_cm;
    /* After the first per-QP key exchange: move the QPs to RTR/RTS with the
     * peer's keys (ctx_connect). Required; with -R optional, and the QPs
     * are connected already: it only hands over the peer's keys. */
    std::function<result<void>(std::span<const key> remote)> connect_qps;
    /* send tests: post receive WQEs before the "ready" hand shake
     * (ctx_set_recv_wqes). Optional. */
    std::function<result<void>(uint64_t size)> prepare;
    /* One measured run at `size`, on the sides where perftest runs one (see
     * doc/oob.md): bw tests return this side's report, lat tests any value.
     * Required when this side runs. */
    std::function<result<bw_report>(uint64_t size)> run;
    /* The report a side that does not measure sends in xchg_bw_reports (the
     * stock write/read/atomic bw server sends uninitialised memory).
     * Optional: zeros. */
    std::function<bw_report()> idle_report;
    /* After each xchg_bw_reports: this side's report and the peer's (-b:
     * perftest prints their sum, print_full_bw_report). Optional. */
    std::function<void(const bw_report &mine, const bw_report &peer)> reports_exchanged;
};

struct outcome {
    negotiated params;
    std::vector<key> remote_keys;          /* from the first per-QP exchange */
    std::vector<bw_report> remote_reports; /* every xchg_bw_reports, in order */
    int hand_shakes = 0;                   /* KEY exchanges done, for tests and logs */
};

/* The whole exchange of the configured test on a connected session. On
 * failure the socket is closed at once. */
result<outcome> run(session &s, const hooks &h);

/* Convenience: connect (retrying until c.timeout) and run as the client
 * (`c.side` is ignored); accept one client (waiting up to accept_timeout)
 * and run as the server. */
result<outcome> run_client(std::string_view host, uint16_t port, const config &c, const hooks &h);
result<outcome> run_server(tcp_listener &l, const config &c, const hooks &h,
                           milliseconds accept_timeout);

} // namespace uroce::oob::perftest

#endif

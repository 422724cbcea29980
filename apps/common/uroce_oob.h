/* SPDX-License-Identifier: BSD-3-Clause
 * Out-of-band TCP helpers for the uroce apps (uroce-pingpong, uroce-perf).
 *
 * rdma-core's ibv_*_pingpong and perftest exchange their QP parameters over
 * a plain TCP connection (port 18515 by default) before any RDMA traffic.
 * These helpers give the protocol code (pingpong_oob.h, perftest_oob.h) a
 * connected socket and exact-length reads/writes where every wait is bounded
 * by a timeout, and every failure comes back as a typed error carrying one
 * line that names the problem. Nothing here throws.
 */
#ifndef UROCE_APPS_OOB_H
#define UROCE_APPS_OOB_H

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace uroce::oob {

using std::chrono::milliseconds;

/* The port both rdma-core's pingpong examples and perftest use by default
 * (rc_pingpong.c main: `port = 18515`; perftest_parameters.h DEF_PORT). */
inline constexpr uint16_t default_port = 18515;

/* A GID as 16 raw bytes in network order (union ibv_gid .raw). Converts to
 * and from uroce::gid (lib/wire/uroce_gid.h) through its `raw` member. */
using gid_raw = std::array<uint8_t, 16>;

enum class errc {
    resolve,      /* getaddrinfo failed: unknown host */
    connect,      /* could not connect before the deadline */
    listen,       /* socket/bind/listen failed */
    timeout,      /* a wait (accept, read, write) ran out of time */
    peer_closed,  /* EOF or reset in the middle of an exchange */
    io,           /* any other socket error */
    malformed,    /* the peer's bytes do not match the expected format */
    incompatible, /* well-formed but unusable (e.g. perftest version too old) */
    callback,     /* an application hook reported a failure */
    invalid,      /* bad arguments from the caller */
    cancelled,    /* the cancel flag went up during a wait (set_cancel_flag) */
};

const char *errc_name(errc c);

/* Every wait here also ends, with errc::cancelled, once *flag is true (the
 * apps' SIGINT/SIGTERM flag): a wait that may last for hours (a
 * --run_infinitely server) still ends on Ctrl-C. Waits look at the flag
 * every 100 ms. Null: no flag (the default). */
void set_cancel_flag(const std::atomic<bool> *flag);

struct error {
    errc code = errc::io;
    std::string message; /* one line, no trailing newline */
};

/* A value or an error (std::expected is C++23). */
template <class T> class [[nodiscard]] result {
  public:
    result(T v) : val_(std::move(v)) {}
    result(error e) : err_(std::move(e)) {}
    bool ok() const { return val_.has_value(); }
    explicit operator bool() const { return ok(); }
    T &value() & { return *val_; }
    const T &value() const & { return *val_; }
    T &&value() && { return std::move(*val_); }
    T *operator->() { return &*val_; }
    const T *operator->() const { return &*val_; }
    T &operator*() { return *val_; }
    const T &operator*() const { return *val_; }
    const error &err() const { return err_; }
    const std::string &message() const { return err_.message; }
    errc code() const { return err_.code; }

  private:
    std::optional<T> val_;
    error err_;
};

template <> class [[nodiscard]] result<void> {
  public:
    result() = default;
    result(error e) : failed_(true), err_(std::move(e)) {}
    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const error &err() const { return err_; }
    const std::string &message() const { return err_.message; }
    errc code() const { return err_.code; }

  private:
    bool failed_ = false;
    error err_;
};

inline error make_error(errc c, std::string msg) {
    return error{c, std::move(msg)};
}

/* "10 s", "1.5 s", "200 ms": how the messages print a timeout. */
std::string format_duration(milliseconds d);
/* Value of one hex digit (either case), or -1. */
int hex_value(uint8_t c);
/* Printable copy of a peer's message for error lines (\xNN for the rest). */
std::string printable(std::span<const uint8_t> b);

/* A connected TCP socket (owns the fd). */
class tcp_socket {
  public:
    tcp_socket() = default;
    explicit tcp_socket(int fd) : fd_(fd) {}
    tcp_socket(tcp_socket &&o) noexcept
        : fd_(std::exchange(o.fd_, -1)), peer_(std::move(o.peer_)) {}
    tcp_socket &operator=(tcp_socket &&o) noexcept;
    tcp_socket(const tcp_socket &) = delete;
    tcp_socket &operator=(const tcp_socket &) = delete;
    ~tcp_socket() { close(); }

    int fd() const { return fd_; }
    bool is_open() const { return fd_ >= 0; }
    void close();
    /* "10.0.0.1:18515" (set by connect/accept; for messages only). */
    const std::string &peer() const { return peer_; }
    void set_peer(std::string p) { peer_ = std::move(p); }

    /* Reads exactly buf.size() bytes; waits at most `timeout` in total.
     * `what` names the step for the error message ("the key exchange"). */
    result<void> read_exact(std::span<uint8_t> buf, milliseconds timeout, std::string_view what);
    /* Writes all of buf, in one write() when the socket allows (the stock
     * tools read each message with a single read()). */
    result<void> write_all(std::span<const uint8_t> buf, milliseconds timeout,
                           std::string_view what);
    result<void> write_all(std::string_view s, milliseconds timeout, std::string_view what) {
        return write_all(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size()),
            timeout, what);
    }
    /* shutdown(SHUT_WR): sends our FIN after any queued bytes. */
    void shutdown_write();
    /* Waits up to `timeout` for the peer to close (EOF), discarding up to
     * `max_bytes` of data; true when EOF was seen. Used at the end of an
     * exchange so our close does not turn into a RST over unread bytes. */
    bool drain_until_eof(milliseconds timeout, size_t max_bytes = 64);

  private:
    int fd_ = -1;
    std::string peer_;
};

/* Connects to host:port (getaddrinfo, AF_UNSPEC), trying every address and
 * retrying refused/unreachable connects every `retry_interval` until
 * `timeout` has passed (the peer's server may not be listening yet; the
 * stock clients try once, rc_pingpong.c pp_client_exch_dest). */
result<tcp_socket> connect_tcp(std::string_view host, uint16_t port, milliseconds timeout,
                               milliseconds retry_interval = milliseconds(100));

/* A listening socket. Port 0 binds an ephemeral port (tests). */
class tcp_listener {
  public:
    /* bind_host empty: any address, IPv6 dual-stack when available, else
     * 0.0.0.0 (the stock servers use AI_PASSIVE, pp_server_exch_dest /
     * perftest ethernet_server_connect). SO_REUSEADDR like the stock tools. */
    static result<tcp_listener> listen(std::string_view bind_host, uint16_t port, int backlog = 1);

    tcp_listener() = default;
    tcp_listener(tcp_listener &&o) noexcept : fd_(std::exchange(o.fd_, -1)), port_(o.port_) {}
    tcp_listener &operator=(tcp_listener &&o) noexcept;
    tcp_listener(const tcp_listener &) = delete;
    tcp_listener &operator=(const tcp_listener &) = delete;
    ~tcp_listener() { close(); }

    uint16_t port() const { return port_; }
    int fd() const { return fd_; }
    void close();
    /* Waits up to `timeout` for one connection. */
    result<tcp_socket> accept(milliseconds timeout);

  private:
    int fd_ = -1;
    uint16_t port_ = 0;
};

/* A wall-clock deadline for multi-step waits. */
class deadline {
  public:
    explicit deadline(milliseconds d) : end_(std::chrono::steady_clock::now() + d), total_(d) {}
    milliseconds remaining() const;
    bool expired() const { return remaining().count() <= 0; }
    milliseconds total() const { return total_; }

  private:
    std::chrono::steady_clock::time_point end_;
    milliseconds total_;
};

} // namespace uroce::oob

#endif

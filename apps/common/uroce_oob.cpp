/* SPDX-License-Identifier: BSD-3-Clause
 * Out-of-band TCP helpers: connect/listen/accept and exact reads/writes,
 * every wait bounded by poll() with a timeout.
 */
#include "uroce_oob.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace uroce::oob {

namespace {

std::string errno_text(int e) {
    return std::strerror(e);
}

void set_nodelay(int fd) {
    /* Many tiny request/response messages: do not let Nagle hold the second
     * of two back-to-back writes (e.g. perftest's KEY then "done"). */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string sockaddr_text(const sockaddr *sa, socklen_t len) {
    char host[NI_MAXHOST] = "?";
    char serv[NI_MAXSERV] = "?";
    if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return "?";
    if (sa->sa_family == AF_INET6) return std::string("[") + host + "]:" + serv;
    return std::string(host) + ":" + serv;
}

std::string host_port_text(std::string_view host, uint16_t port) {
    std::string h(host);
    if (h.find(':') != std::string::npos) h = "[" + h + "]";
    return h + ":" + std::to_string(port);
}

std::atomic<const std::atomic<bool> *> g_cancel{nullptr};

/* poll() one fd for `events`, restarting on EINTR, never past `dl`.
 * Returns >0 ready, 0 timeout, -1 error (errno set; ECANCELED: the cancel
 * flag went up). */
int poll_one(int fd, short events, const deadline &dl, short *revents) {
    const std::atomic<bool> *cancel = g_cancel.load();
    for (;;) {
        milliseconds rem = dl.remaining();
        if (rem.count() < 0) rem = milliseconds(0);
        /* in steps: a long wait (--run_infinitely's server) is more than
         * poll() takes, and the cancel flag needs a look now and then */
        const milliseconds step =
            std::min(rem, cancel ? milliseconds(100) : milliseconds(std::chrono::hours(1)));
        pollfd p{fd, events, 0};
        int r = ::poll(&p, 1, static_cast<int>(step.count()));
        if (cancel && cancel->load()) {
            errno = ECANCELED;
            return -1;
        }
        if ((r < 0 && errno == EINTR) || (r == 0 && step < rem)) {
            if (dl.expired()) return 0;
            continue;
        }
        if (revents) *revents = p.revents;
        return r;
    }
}

/* A failed poll_one (errno set), during `when`. */
error poll_failure(const std::string &when) {
    if (errno == ECANCELED) return error{errc::cancelled, "interrupted " + when};
    return error{errc::io, "poll failed " + when + ": " + errno_text(errno)};
}

std::string progress(size_t got, size_t want) {
    return "(got " + std::to_string(got) + " of " + std::to_string(want) + " bytes)";
}

} // namespace

void set_cancel_flag(const std::atomic<bool> *flag) {
    g_cancel.store(flag);
}

const char *errc_name(errc c) {
    switch (c) {
    case errc::cancelled:
        return "cancelled";
    case errc::resolve:
        return "resolve";
    case errc::connect:
        return "connect";
    case errc::listen:
        return "listen";
    case errc::timeout:
        return "timeout";
    case errc::peer_closed:
        return "peer_closed";
    case errc::io:
        return "io";
    case errc::malformed:
        return "malformed";
    case errc::incompatible:
        return "incompatible";
    case errc::callback:
        return "callback";
    case errc::invalid:
        return "invalid";
    }
    return "?";
}

std::string format_duration(milliseconds d) {
    long long ms = d.count();
    char buf[48];
    if (ms >= 1000 && ms % 1000 == 0)
        std::snprintf(buf, sizeof buf, "%lld s", ms / 1000);
    else if (ms >= 1000)
        std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
    else
        std::snprintf(buf, sizeof buf, "%lld ms", ms);
    return buf;
}

milliseconds deadline::remaining() const {
    return std::chrono::duration_cast<milliseconds>(end_ - std::chrono::steady_clock::now());
}

int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string printable(std::span<const uint8_t> b) {
    std::string s;
    for (uint8_t c : b) {
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            s.push_back(static_cast<char>(c));
        } else {
            char x[8];
            std::snprintf(x, sizeof x, "\\x%02x", c);
            s += x;
        }
    }
    return s;
}

/* ---- tcp_socket ---------------------------------------------------------- */

tcp_socket &tcp_socket::operator=(tcp_socket &&o) noexcept {
    if (this != &o) {
        close();
        fd_ = std::exchange(o.fd_, -1);
        peer_ = std::move(o.peer_);
    }
    return *this;
}

void tcp_socket::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

result<void> tcp_socket::read_exact(std::span<uint8_t> buf, milliseconds timeout,
                                    std::string_view what) {
    if (fd_ < 0)
        return make_error(errc::invalid,
                          "socket is not connected (reading " + std::string(what) + ")");
    deadline dl(timeout);
    size_t got = 0;
    /* Bounded: each pass either makes progress or waits, and the deadline ends the waits. */
    while (got < buf.size()) {
        ssize_t n = ::recv(fd_, buf.data() + got, buf.size() - got, 0);
        if (n > 0) {
            got += static_cast<size_t>(n);
            continue;
        }
        if (n == 0)
            return make_error(errc::peer_closed, "peer closed the connection during " +
                                                     std::string(what) + " " +
                                                     progress(got, buf.size()));
        int e = errno;
        if (e == EINTR) continue;
        if (e == ECONNRESET || e == EPIPE)
            return make_error(errc::peer_closed, "peer reset the connection during " +
                                                     std::string(what) + " " +
                                                     progress(got, buf.size()));
        if (e != EAGAIN && e != EWOULDBLOCK)
            return make_error(errc::io,
                              "read error during " + std::string(what) + ": " + errno_text(e));
        short rev = 0;
        int r = poll_one(fd_, POLLIN, dl, &rev);
        if (r == 0)
            return make_error(errc::timeout, "timed out after " + format_duration(timeout) +
                                                 " waiting for " + std::string(what) + " " +
                                                 progress(got, buf.size()));
        if (r < 0) return poll_failure("during " + std::string(what));
        /* POLLHUP/POLLERR: the next recv() reports EOF or the error. */
    }
    return {};
}

result<void> tcp_socket::write_all(std::span<const uint8_t> buf, milliseconds timeout,
                                   std::string_view what) {
    if (fd_ < 0)
        return make_error(errc::invalid,
                          "socket is not connected (writing " + std::string(what) + ")");
    deadline dl(timeout);
    size_t sent = 0;
    while (sent < buf.size()) {
        ssize_t n = ::send(fd_, buf.data() + sent, buf.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        int e = (n == 0) ? EAGAIN : errno;
        if (e == EINTR) continue;
        if (e == EPIPE || e == ECONNRESET)
            return make_error(errc::peer_closed, "peer closed the connection during " +
                                                     std::string(what) + " (sent " +
                                                     std::to_string(sent) + " of " +
                                                     std::to_string(buf.size()) + " bytes)");
        if (e != EAGAIN && e != EWOULDBLOCK)
            return make_error(errc::io,
                              "write error during " + std::string(what) + ": " + errno_text(e));
        int r = poll_one(fd_, POLLOUT, dl, nullptr);
        if (r == 0)
            return make_error(errc::timeout, "timed out after " + format_duration(timeout) +
                                                 " sending " + std::string(what));
        if (r < 0) return poll_failure("during " + std::string(what));
    }
    return {};
}

void tcp_socket::shutdown_write() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

bool tcp_socket::drain_until_eof(milliseconds timeout, size_t max_bytes) {
    if (fd_ < 0) return true;
    deadline dl(timeout);
    uint8_t tmp[64];
    size_t total = 0;
    while (total <= max_bytes) {
        ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n == 0) return true;
        if (n > 0) {
            total += static_cast<size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return true; /* reset: gone too */
        if (poll_one(fd_, POLLIN, dl, nullptr) <= 0) return false;
    }
    return false;
}

/* ---- connect -------------------------------------------------------------- */

result<tcp_socket> connect_tcp(std::string_view host, uint16_t port, milliseconds timeout,
                               milliseconds retry_interval) {
    const std::string where = host_port_text(host, port);
    if (host.empty()) return make_error(errc::invalid, "no server host given");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *res = nullptr;
    const std::string host_s(host), serv = std::to_string(port);
    int g = getaddrinfo(host_s.c_str(), serv.c_str(), &hints, &res);
    if (g != 0 || !res)
        return make_error(errc::resolve,
                          "unknown host '" + host_s + "': " + (g ? gai_strerror(g) : "no address"));

    deadline dl(timeout);
    std::string last_err = "no address to try";
    if (retry_interval.count() <= 0) retry_interval = milliseconds(1);
    size_t n_addrs = 0;
    for (addrinfo *t = res; t; t = t->ai_next)
        ++n_addrs;
    /* One silent address (e.g. an unrouted IPv6 one) must not eat the whole
     * budget before the next address is tried. */
    const milliseconds per_attempt =
        std::max(milliseconds(1000), timeout / static_cast<long>(n_addrs ? n_addrs : 1));
    /* Bounded by the deadline: each round sleeps retry_interval or less. */
    for (;;) {
        for (addrinfo *t = res; t; t = t->ai_next) {
            int fd = ::socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                              t->ai_protocol);
            if (fd < 0) {
                last_err = errno_text(errno);
                continue;
            }
            int r = ::connect(fd, t->ai_addr, t->ai_addrlen);
            int e = (r == 0) ? 0 : errno;
            if (r != 0 && e == EINPROGRESS) {
                short rev = 0;
                deadline attempt(std::min(per_attempt, std::max(dl.remaining(), milliseconds(0))));
                int p = poll_one(fd, POLLOUT, attempt, &rev);
                if (p == 0) {
                    e = ETIMEDOUT;
                } else if (p < 0) {
                    e = errno;
                    if (e == ECANCELED) {
                        ::close(fd);
                        freeaddrinfo(res);
                        return poll_failure("while connecting to " + where);
                    }
                } else {
                    socklen_t len = sizeof e;
                    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
                }
            }
            if (e == 0) {
                set_nodelay(fd);
                tcp_socket s(fd);
                s.set_peer(sockaddr_text(t->ai_addr, t->ai_addrlen));
                freeaddrinfo(res);
                return s;
            }
            ::close(fd);
            last_err = errno_text(e);
        }
        milliseconds rem = dl.remaining();
        if (rem.count() <= 0) break;
        std::this_thread::sleep_for(std::min(rem, retry_interval));
        if (dl.expired()) break;
    }
    freeaddrinfo(res);
    return make_error(errc::connect, "could not connect to " + where + " within " +
                                         format_duration(timeout) + " (last error: " + last_err +
                                         ")");
}

/* ---- listen/accept -------------------------------------------------------- */

tcp_listener &tcp_listener::operator=(tcp_listener &&o) noexcept {
    if (this != &o) {
        close();
        fd_ = std::exchange(o.fd_, -1);
        port_ = o.port_;
    }
    return *this;
}

void tcp_listener::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

result<tcp_listener> tcp_listener::listen(std::string_view bind_host, uint16_t port, int backlog) {
    const std::string where =
        bind_host.empty() ? "port " + std::to_string(port) : host_port_text(bind_host, port);
    int fd = -1;
    std::string last_err;
    auto try_bind = [&](const sockaddr *sa, socklen_t len, int family) -> bool {
        int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) {
            last_err = errno_text(errno);
            return false;
        }
        int one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (family == AF_INET6 && bind_host.empty()) {
            int zero = 0; /* dual stack: also accept IPv4 peers */
            setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        }
        if (::bind(s, sa, len) != 0 || ::listen(s, backlog) != 0) {
            last_err = errno_text(errno);
            ::close(s);
            return false;
        }
        fd = s;
        return true;
    };

    if (bind_host.empty()) {
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons(port);
        if (!try_bind(reinterpret_cast<sockaddr *>(&a6), sizeof a6, AF_INET6)) {
            sockaddr_in a4{};
            a4.sin_family = AF_INET;
            a4.sin_addr.s_addr = htonl(INADDR_ANY);
            a4.sin_port = htons(port);
            try_bind(reinterpret_cast<sockaddr *>(&a4), sizeof a4, AF_INET);
        }
    } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        addrinfo *res = nullptr;
        const std::string host_s(bind_host), serv = std::to_string(port);
        int g = getaddrinfo(host_s.c_str(), serv.c_str(), &hints, &res);
        if (g != 0 || !res)
            return make_error(errc::resolve, "unknown host '" + host_s +
                                                 "': " + (g ? gai_strerror(g) : "no address"));
        for (addrinfo *t = res; t && fd < 0; t = t->ai_next)
            try_bind(t->ai_addr, t->ai_addrlen, t->ai_family);
        freeaddrinfo(res);
    }
    if (fd < 0) return make_error(errc::listen, "could not listen on " + where + ": " + last_err);

    tcp_listener l;
    l.fd_ = fd;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0) {
        if (ss.ss_family == AF_INET6)
            l.port_ = ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
        else
            l.port_ = ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    } else {
        l.port_ = port;
    }
    return l;
}

result<tcp_socket> tcp_listener::accept(milliseconds timeout) {
    if (fd_ < 0) return make_error(errc::invalid, "listener is closed");
    deadline dl(timeout);
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int c =
            ::accept4(fd_, reinterpret_cast<sockaddr *>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) {
            set_nodelay(c);
            tcp_socket s(c);
            s.set_peer(sockaddr_text(reinterpret_cast<sockaddr *>(&ss), len));
            return s;
        }
        int e = errno;
        if (e == EINTR || e == ECONNABORTED) continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return make_error(errc::io, "accept failed: " + errno_text(e));
        int r = poll_one(fd_, POLLIN, dl, nullptr);
        if (r == 0)
            return make_error(errc::timeout, "timed out after " + format_duration(timeout) +
                                                 " waiting for a client to connect on port " +
                                                 std::to_string(port_));
        if (r < 0) return poll_failure("while accepting");
    }
}

} // namespace uroce::oob

/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's -R on uroce's rdma_cm: see perf_rdma_cm.h. Protocol facts from
 * linux-rdma/perftest v4.5-0.17 src/perftest_communication.c and
 * src/perftest_resources.c (create_rdma_resources, post_one_recv_wqe,
 * rdma_read_data, rdma_write_data, destroy_ctx); written from them, not
 * copied.
 */
#include "perf_rdma_cm.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace uroce::perf {

namespace {

using clock = std::chrono::steady_clock;

constexpr uint64_t ctl_send_wrid = 1u << 16; /* receives: their slot index */
constexpr milliseconds reject_retry{100};    /* perftest's retry delay */
constexpr int resolve_timeout_ms = 2000;     /* rdma_resolve_addr/route(..., 2000) */

std::string verr(const char *what, verbs_error e) {
    return std::string(what) + ": " + verbs_error_str(e);
}

/* Poll the stack for d (a retry's pause: ARP and QP1 stay served). */
void pause(app::stack &st, milliseconds d) {
    const auto until = clock::now() + d;
    while (clock::now() < until && !app::stop_requested.load())
        st.poll();
}

/* Resolve addr and route for id: ADDR_RESOLVED then ROUTE_RESOLVED. A
 * TOS (-T) goes on the id between the two, as perftest's
 * rdma_set_option(RDMA_OPTION_ID_TOS): the route's traffic class, which
 * the REQ carries to the passive side and both QPs' paths take. */
std::string resolve(cm_events &ev, cm_id *id, const sockaddr *dst, clock::time_point deadline,
                    std::optional<uint8_t> tos) {
    if (verbs_error e = resolve_addr(id, nullptr, dst, resolve_timeout_ms); e != verbs_error::ok)
        return verr("rdma_resolve_addr", e);
    for (bool routed = false; !routed;) {
        cm_event_info e;
        if (!ev.next(e, deadline)) return "no answer to the address and route resolution";
        if (e.id != id) continue;
        switch (e.type) {
        case cm_event_type::addr_resolved:
            if (tos) id->route.traffic_class = *tos;
            if (verbs_error r = resolve_route(id, resolve_timeout_ms); r != verbs_error::ok)
                return verr("rdma_resolve_route", r);
            break;
        case cm_event_type::route_resolved:
            routed = true;
            break;
        default:
            return "resolving " + describe(e);
        }
    }
    return {};
}

/* Until ESTABLISHED (true) or a refusal (false, ev says which). */
bool wait_established(cm_events &ev, cm_id *id, clock::time_point deadline, cm_event_info &last,
                      std::string &err) {
    for (;;) {
        if (!ev.next(last, deadline)) {
            err = "no answer to the connection request";
            return false;
        }
        if (last.id != id) continue;
        if (last.type == cm_event_type::established) return true;
        err = describe(last);
        return false;
    }
}

/* Bind a new id to port (any address of the family). */
std::string bind_any(cm_events &ev, cm_id **id, int family, uint16_t port,
                     rdma_port_space ps = rdma_port_space::tcp) {
    if (verbs_error e = create_id(ev.channel(), id, nullptr, ps); e != verbs_error::ok)
        return verr("rdma_create_id", e);
    sockaddr_storage any{};
    if (family == AF_INET6) {
        auto *a = reinterpret_cast<sockaddr_in6 *>(&any);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
    } else {
        auto *a = reinterpret_cast<sockaddr_in *>(&any);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
    }
    if (verbs_error e = bind_addr(*id, reinterpret_cast<sockaddr *>(&any)); e != verbs_error::ok)
        return verr("rdma_bind_addr", e);
    return {};
}

/* Listen on port (any address of the family) with backlog. */
std::string listen_on(cm_events &ev, cm_id **id, int family, uint16_t port, int backlog,
                      rdma_port_space ps = rdma_port_space::tcp) {
    if (std::string e = bind_any(ev, id, family, port, ps); !e.empty()) return e;
    if (verbs_error e = listen(*id, backlog); e != verbs_error::ok) return verr("rdma_listen", e);
    return {};
}

} // namespace

bool make_sockaddr(const std::string &host, uint16_t port, sockaddr_storage &out) {
    std::memset(&out, 0, sizeof out);
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
    bool ok = false;
    if (res->ai_family == AF_INET) {
        std::memcpy(&out, res->ai_addr, sizeof(sockaddr_in));
        reinterpret_cast<sockaddr_in *>(&out)->sin_port = htons(port);
        ok = true;
    } else if (res->ai_family == AF_INET6) {
        std::memcpy(&out, res->ai_addr, sizeof(sockaddr_in6));
        reinterpret_cast<sockaddr_in6 *>(&out)->sin6_port = htons(port);
        ok = true;
    }
    freeaddrinfo(res);
    return ok;
}

std::string describe(const cm_event_info &ev) {
    std::string s = cm_event_str(ev.type);
    if (ev.type == cm_event_type::rejected)
        return s + " (reason " + std::to_string(ev.status) + ": " +
               cm_rej_reason_name(uint16_t(ev.status)) + ")";
    return s + " (status " + std::to_string(ev.status) + ")";
}

/* ---- cm_events ---------------------------------------------------------------- */

cm_events::cm_events(app::stack &st, cm_service *cm) : st_(st) {
    ch_ = create_event_channel(cm);
}

cm_events::~cm_events() {
    if (!ch_) return;
    /* Whatever is left (late ESTABLISHED, TIMEWAIT_EXIT) is acknowledged. */
    cm_event *e = nullptr;
    while (get_event(ch_, &e) == verbs_error::ok)
        ack_event(e);
    destroy_event_channel(ch_);
}

bool cm_events::next(cm_event_info &ev, clock::time_point deadline) {
    for (;;) {
        cm_event *e = nullptr;
        if (get_event(ch_, &e) == verbs_error::ok) {
            ev.type = e->event;
            ev.id = e->id;
            ev.status = e->status;
            ev.responder_resources = e->conn.responder_resources;
            ev.initiator_depth = e->conn.initiator_depth;
            ev.ud_qpn = e->ud.qp_num;
            ev.ud_qkey = e->ud.qkey;
            ev.ud_ah = e->ud.ah_attr;
            ack_event(e);
            note(ev);
            return true;
        }
        if (app::stop_requested.load() || clock::now() > deadline) return false;
        st_.poll();
    }
}

void cm_events::note(const cm_event_info &ev) {
    if (ev.type == cm_event_type::disconnected) disconnected_.push_back(ev.id);
}

bool cm_events::disconnected(const cm_id *id) const {
    return std::find(disconnected_.begin(), disconnected_.end(), id) != disconnected_.end();
}

/* ---- control_channel --------------------------------------------------------- */

std::string control_channel::setup_qp(cm_id *id) {
    verbs_error err = verbs_error::ok;
    pd_ = alloc_pd(id->verbs, &err);
    if (!pd_) return verr("alloc_pd", err);
    send_cq_ = create_cq(id->verbs, 4, nullptr, &err);
    recv_cq_ = create_cq(id->verbs, int(n_recv) + 1, nullptr, &err);
    if (!send_cq_ || !recv_cq_) return verr("create_cq", err);
    buf_.assign(slot * (n_recv + 1), 0);
    mr_ = reg_mr(pd_, buf_.data(), buf_.size(), access_local_write, &err);
    if (!mr_) return verr("reg_mr", err);
    /* perftest's control QP: tx_depth 1, rx_depth 1, RC */
    qp_init_attr ia;
    ia.send_cq = send_cq_;
    ia.recv_cq = recv_cq_;
    ia.qp_type = qp_type::rc;
    ia.cap.max_send_wr = 2;
    ia.cap.max_recv_wr = n_recv;
    if (verbs_error e = create_qp(id, pd_, &ia); e != verbs_error::ok) return verr("create_qp", e);
    for (unsigned i = 0; i < n_recv; i++) {
        sge s{uint64_t(uintptr_t(buf_.data() + i * slot)), uint32_t(slot), mr_lkey(mr_)};
        recv_wr wr;
        wr.wr_id = i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        recv_wr *bad;
        if (verbs_error e = post_recv(id->qp, &wr, &bad); e != verbs_error::ok)
            return verr("post_recv", e);
    }
    return {};
}

void control_channel::release_qp() {
    if (id_ && id_->qp) destroy_qp(id_);
    if (mr_) dereg_mr(mr_);
    if (send_cq_) destroy_cq(send_cq_);
    if (recv_cq_) destroy_cq(recv_cq_);
    if (pd_) dealloc_pd(pd_);
    mr_ = nullptr;
    send_cq_ = recv_cq_ = nullptr;
    pd_ = nullptr;
    if (id_) destroy_id(id_);
    id_ = nullptr;
}

control_channel::~control_channel() {
    release_qp();
    if (listener_) destroy_id(listener_);
    if (ud_listener_) destroy_id(ud_listener_);
}

std::unique_ptr<control_channel> control_channel::connect(app::stack &st, cm_service *cm,
                                                          const sockaddr *dst, milliseconds timeout,
                                                          std::string &err,
                                                          std::optional<uint8_t> tos) {
    std::unique_ptr<control_channel> c(new control_channel(st, cm));
    if (!c->events_.ok()) {
        err = "rdma_create_event_channel failed";
        return nullptr;
    }
    const auto deadline = clock::now() + timeout;
    std::string rejected; /* the last refusal: what to report when time runs out */
    auto give_up = [&](std::string why) {
        err = rejected.empty()
                  ? "the control connection: " + why
                  : "the control connection: " + rejected + ", retried every 100 ms for " +
                        std::to_string(timeout.count() / 1000) + " s";
        return nullptr;
    };
    for (;;) {
        if (verbs_error e = create_id(c->events_.channel(), &c->id_, nullptr, rdma_port_space::tcp);
            e != verbs_error::ok) {
            err = verr("rdma_create_id", e);
            return nullptr;
        }
        if (std::string r = resolve(c->events_, c->id_, dst, deadline, tos); !r.empty())
            return give_up(r);
        if (err = c->setup_qp(c->id_); !err.empty()) return nullptr;
        /* rdma_client_connect: the comm test is a SEND test: no READ
         * resources; retry_count 7 (-r default), rnr_retry_count 7. */
        cm_conn_param p;
        p.responder_resources = 0;
        p.initiator_depth = 0;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        if (verbs_error e = uroce::connect(c->id_, &p); e != verbs_error::ok) {
            err = verr("rdma_connect", e);
            return nullptr;
        }
        cm_event_info last;
        std::string why;
        if (wait_established(c->events_, c->id_, deadline, last, why)) return c;
        c->release_qp();
        if (last.type == cm_event_type::rejected) rejected = why;
        if (last.type != cm_event_type::rejected || clock::now() + reject_retry > deadline)
            return give_up(why);
        pause(st, reject_retry); /* the server may not listen yet */
    }
}

std::unique_ptr<control_channel> control_channel::accept(app::stack &st, cm_service *cm, int family,
                                                         uint16_t port,
                                                         const std::function<void()> &listening,
                                                         std::string &err, bool ud_data) {
    std::unique_ptr<control_channel> c(new control_channel(st, cm));
    if (!c->events_.ok()) {
        err = "rdma_create_event_channel failed";
        return nullptr;
    }
    if (err = listen_on(c->events_, &c->listener_, family, port, 1); !err.empty()) return nullptr;
    if (ud_data &&
        !(err = listen_on(c->events_, &c->ud_listener_, family, port, 0, rdma_port_space::udp))
             .empty())
        return nullptr;
    if (listening) listening();
    cm_event_info req;
    for (;;) {
        if (!c->events_.next(req, clock::time_point::max())) {
            err = "interrupted while waiting for a client";
            return nullptr;
        }
        if (req.type == cm_event_type::connect_request) break;
    }
    c->id_ = req.id;
    if (err = c->setup_qp(c->id_); !err.empty()) {
        (void)reject(c->id_, nullptr, 0);
        return nullptr;
    }
    cm_conn_param p;
    p.responder_resources = 0;
    p.initiator_depth = 0;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    /* rdma_server_connect does not wait for ESTABLISHED (and destroys its
     * listener: ours stays, see the header). */
    verbs_error e = uroce::accept(c->id_, &p);
    if (e != verbs_error::ok) {
        err = verr("rdma_accept", e);
        return nullptr;
    }
    return c;
}

oob::result<void> control_channel::send(std::span<const uint8_t> msg, milliseconds timeout,
                                        std::string_view what) {
    if (msg.size() > slot) return oob::make_error(oob::errc::invalid, "message too long");
    uint8_t *p = buf_.data() + n_recv * slot;
    std::memcpy(p, msg.data(), msg.size());
    sge s{uint64_t(uintptr_t(p)), uint32_t(msg.size()), mr_lkey(mr_)};
    send_wr wr;
    wr.wr_id = ctl_send_wrid;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = wr_opcode::send;
    wr.send_flags = send_signaled;
    send_wr *bad;
    if (verbs_error e = post_send(id_->qp, &wr, &bad); e != verbs_error::ok)
        return oob::make_error(oob::errc::io,
                               std::string(what) + ": post_send: " + verbs_error_str(e));
    const auto deadline = clock::now() + timeout;
    for (;;) {
        wc w;
        if (poll_cq(send_cq_, 1, &w) == 1) {
            if (w.status != wc_status::success)
                return oob::make_error(oob::errc::peer_closed,
                                       std::string(what) + ": the SEND on the control QP failed: " +
                                           wc_status_str(w.status));
            return {};
        }
        if (app::stop_requested.load()) return oob::make_error(oob::errc::io, "interrupted");
        if (clock::now() > deadline)
            return oob::make_error(oob::errc::timeout,
                                   std::string(what) +
                                       ": the SEND on the control QP never completed");
        st_.poll();
    }
}

oob::result<void> control_channel::recv(std::span<uint8_t> msg, milliseconds timeout,
                                        std::string_view what) {
    const auto deadline = clock::now() + timeout;
    for (;;) {
        wc w;
        if (poll_cq(recv_cq_, 1, &w) == 1) {
            /* rdma_read_data: a completion in error, or not a receive,
             * fails the exchange */
            if (w.status != wc_status::success || w.wr_id >= n_recv)
                return oob::make_error(oob::errc::peer_closed,
                                       std::string(what) + ": the control QP's receive failed: " +
                                           wc_status_str(w.status));
            uint8_t *p = buf_.data() + w.wr_id * slot;
            if (w.byte_len != msg.size())
                return oob::make_error(oob::errc::malformed,
                                       std::string(what) + ": the peer sent " +
                                           std::to_string(w.byte_len) + " bytes, expected " +
                                           std::to_string(msg.size()));
            std::memcpy(msg.data(), p, msg.size());
            sge s{uint64_t(uintptr_t(p)), uint32_t(slot), mr_lkey(mr_)};
            recv_wr wr;
            wr.wr_id = w.wr_id;
            wr.sg_list = &s;
            wr.num_sge = 1;
            recv_wr *bad;
            if (verbs_error e = post_recv(id_->qp, &wr, &bad); e != verbs_error::ok)
                return oob::make_error(oob::errc::io,
                                       std::string("post_recv: ") + verbs_error_str(e));
            return {};
        }
        if (app::stop_requested.load()) return oob::make_error(oob::errc::io, "interrupted");
        if (clock::now() > deadline)
            return oob::make_error(oob::errc::timeout,
                                   std::string(what) + ": nothing from the peer within " +
                                       std::to_string(timeout.count() / 1000) + " s");
        st_.poll();
    }
}

void control_channel::disconnect(milliseconds timeout) {
    if (!id_ || disconnected_) return;
    disconnected_ = true;
    (void)uroce::disconnect(id_);
    const auto deadline = clock::now() + timeout;
    cm_event_info e;
    while (!events_.disconnected(id_) && events_.next(e, deadline)) {
    }
    /* The last CM call of the run: when the peer's DREQ came first, ours
     * was the DREP, which disconnect() only queued. Ending with it queued
     * left the peer waiting its whole timeout for it (3 s of every -R run's
     * end, the server's). */
    while (cm_output_pending(cm_) && clock::now() < deadline)
        st_.poll();
}

/* ---- data_connections ---------------------------------------------------------- */

data_connections::~data_connections() {
    for (cm_id *id : ids_) {
        if (id->qp) destroy_qp(id);
        destroy_id(id);
    }
    if (hello_mr_) dereg_mr(hello_mr_);
}

std::string data_connections::ud_hello_buffer(endpoint &ep) {
    if (hello_mr_) return {};
    hello_.assign(64, 0); /* 40 bytes of GRH and the 4-byte message */
    verbs_error e = verbs_error::ok;
    hello_mr_ =
        reg_mr(ep.protection_domain(), hello_.data(), hello_.size(), access_local_write, &e);
    return hello_mr_ ? std::string{} : verr("reg_mr", e);
}

/* Client: 4 bytes WITH_IMM, the immediate our QPN, and its completion. */
std::string data_connections::send_ud_hello(cm_id *id, endpoint &ep, const cm_event_info &est,
                                            ah *a, milliseconds timeout) {
    if (std::string e = ud_hello_buffer(ep); !e.empty()) return e;
    sge s{uint64_t(uintptr_t(hello_.data())), 4, mr_lkey(hello_mr_)};
    send_wr wr;
    wr.wr_id = 0;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = wr_opcode::send_with_imm;
    wr.send_flags = send_signaled;
    wr.imm_data = htonl(qp_num(id->qp));
    wr.wr.ud.ah = a;
    wr.wr.ud.remote_qpn = est.ud_qpn;
    wr.wr.ud.remote_qkey = est.ud_qkey;
    send_wr *bad;
    if (verbs_error e = post_send(id->qp, &wr, &bad); e != verbs_error::ok)
        return verr("post_send (UD connection parameters)", e);
    const auto deadline = clock::now() + timeout;
    for (;;) {
        wc w;
        if (poll_cq(ep.qp_attrs().send_cq, 1, &w) == 1)
            return w.status == wc_status::success
                       ? std::string{}
                       : std::string("the UD connection parameters' SEND failed: ") +
                             wc_status_str(w.status);
        if (app::stop_requested.load() || clock::now() > deadline)
            return "the UD connection parameters' SEND never completed";
        st_.poll();
    }
}

/* Server: a receive for the client's 4 bytes, before the accept. */
std::string data_connections::post_ud_hello_recv(cm_id *id) {
    sge s{uint64_t(uintptr_t(hello_.data())), uint32_t(hello_.size()), mr_lkey(hello_mr_)};
    recv_wr wr;
    wr.wr_id = 0;
    wr.sg_list = &s;
    wr.num_sge = 1;
    recv_wr *bad;
    if (verbs_error e = post_recv(id->qp, &wr, &bad); e != verbs_error::ok)
        return verr("post_recv (UD connection parameters)", e);
    return {};
}

std::string data_connections::wait_ud_hello(endpoint &ep, milliseconds timeout) {
    const auto deadline = clock::now() + timeout;
    for (;;) {
        wc w;
        if (poll_cq(ep.qp_attrs().recv_cq, 1, &w) == 1)
            return w.status == wc_status::success && w.opcode == wc_opcode::recv
                       ? std::string{}
                       : std::string("no UD connection parameters from the client: ") +
                             wc_status_str(w.status);
        if (app::stop_requested.load() || clock::now() > deadline)
            return "no UD connection parameters from the client";
        st_.poll();
    }
}

std::string data_connections::connect(const sockaddr *dst, endpoint &ep, int num_qps,
                                      const cm_conn_param &param, milliseconds timeout,
                                      std::optional<uint8_t> tos) {
    if (!events_.ok()) return "rdma_create_event_channel failed";
    const auto deadline = clock::now() + timeout;
    std::string rejected; /* the last refusal: what to report when time runs out */
    auto give_up = [&](int i, const std::string &why) {
        return "data connection " + std::to_string(i) + ": " +
               (rejected.empty() ? why
                                 : rejected + ", retried every 100 ms for " +
                                       std::to_string(timeout.count() / 1000) + " s");
    };
    const bool ud = ep.qp_attrs().qp_type == qp_type::ud;
    for (int i = 0; i < num_qps;) {
        cm_id *id = nullptr;
        if (verbs_error e = create_id(events_.channel(), &id, nullptr,
                                      ud ? rdma_port_space::udp : rdma_port_space::tcp);
            e != verbs_error::ok)
            return verr("rdma_create_id", e);
        if (std::string err = resolve(events_, id, dst, deadline, tos); !err.empty()) {
            destroy_id(id);
            return give_up(i, err);
        }
        qp_init_attr ia = ep.qp_attrs();
        if (verbs_error e = create_qp(id, ep.protection_domain(), &ia); e != verbs_error::ok) {
            destroy_id(id);
            return verr("rdma_create_qp", e);
        }
        if (verbs_error e = uroce::connect(id, &param); e != verbs_error::ok) {
            destroy_qp(id);
            destroy_id(id);
            return verr("rdma_connect", e);
        }
        cm_event_info last;
        std::string err;
        if (wait_established(events_, id, deadline, last, err)) {
            ep.adopt_qp(id->qp);
            ids_.push_back(id);
            ++i;
            if (!ud) continue;
            verbs_error ae = verbs_error::ok;
            ah *a = create_ah(ep.protection_domain(), last.ud_ah, &ae);
            if (!a) return verr("create_ah (SIDR's path)", ae);
            ep.adopt_ud_peer(a, last.ud_qkey);
            if (ep.params().kind == test_kind::lat)
                if (std::string e = send_ud_hello(id, ep, last, a, timeout); !e.empty()) return e;
            continue;
        }
        destroy_qp(id);
        destroy_id(id);
        /* rdma_cm_client_connection retries: the server listens only after
         * the hand shake that preceded our REQ (a SIDR_REP refusing the
         * service is UNREACHABLE with its status). */
        const bool refused = last.type == cm_event_type::rejected ||
                             (ud && last.type == cm_event_type::unreachable && last.status > 0);
        if (refused) rejected = err;
        if (!refused || clock::now() + reject_retry > deadline) return give_up(i, err);
        pause(st_, reject_retry);
    }
    return {};
}

std::string data_connections::accept(control_channel &control, endpoint &ep, int num_qps,
                                     const cm_conn_param &param, milliseconds timeout) {
    const bool ud = ep.qp_attrs().qp_type == qp_type::ud;
    cm_id *listener = ud ? control.take_ud_listener() : control.take_listener();
    if (!listener) return "no listener for the data connections";
    ev_ = &control.events();
    const auto deadline = clock::now() + timeout;
    std::string err;
    while (int(ids_.size()) < num_qps) {
        cm_event_info e;
        if (!ev_->next(e, deadline)) {
            err = "no connection request for QP " + std::to_string(ids_.size()) + " within " +
                  std::to_string(timeout.count() / 1000) + " s";
            break;
        }
        if (e.type != cm_event_type::connect_request) continue;
        qp_init_attr ia = ep.qp_attrs();
        if (verbs_error r = create_qp(e.id, ep.protection_domain(), &ia); r != verbs_error::ok) {
            (void)reject(e.id, nullptr, 0);
            destroy_id(e.id);
            err = verr("rdma_create_qp", r);
            break;
        }
        const bool hello = ud && ep.params().kind == test_kind::lat;
        if (hello) {
            if (err = ud_hello_buffer(ep); err.empty()) err = post_ud_hello_recv(e.id);
            if (!err.empty()) {
                (void)reject(e.id, nullptr, 0);
                destroy_qp(e.id);
                destroy_id(e.id);
                break;
            }
        }
        if (verbs_error r = uroce::accept(e.id, &param); r != verbs_error::ok) {
            destroy_qp(e.id);
            destroy_id(e.id);
            err = verr("rdma_accept", r);
            break;
        }
        ep.adopt_qp(e.id->qp);
        ids_.push_back(e.id);
        if (ud) {
            /* the answers go back along the request's path, to the QPN the
             * hello names (the same as the exchange's) */
            verbs_error ae = verbs_error::ok;
            ah *a = create_ah(ep.protection_domain(), e.ud_ah, &ae);
            if (!a) {
                err = verr("create_ah (the request's path)", ae);
                break;
            }
            ep.adopt_ud_peer(a, rdma_udp_qkey);
            if (hello && !(err = wait_ud_hello(ep, timeout)).empty()) break;
        }
    }
    destroy_id(listener); /* rdma_cm_server_connection: the listener goes */
    return err;
}

std::string data_connections::disconnect(milliseconds timeout) {
    for (cm_id *id : ids_)
        (void)uroce::disconnect(id);
    /* UD ids have no connection to release: no DREQ, no DISCONNECTED */
    if (!ids_.empty() && ids_[0]->qp_type == qp_type::ud) return {};
    const auto deadline = clock::now() + timeout;
    auto all = [&] {
        return std::all_of(ids_.begin(), ids_.end(),
                           [&](const cm_id *id) { return ev_->disconnected(id); });
    };
    cm_event_info e;
    while (!all())
        if (!ev_->next(e, deadline))
            return "no DISCONNECTED for every data connection within " +
                   std::to_string(timeout.count() / 1000) + " s";
    return {};
}

} // namespace uroce::perf

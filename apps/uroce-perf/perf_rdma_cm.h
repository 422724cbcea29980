/* SPDX-License-Identifier: BSD-3-Clause
 * perftest's -R on uroce's rdma_cm (<uroce/cm.h>), as perftest 4.5 runs it
 * (src/perftest_communication.c: rdma_client_connect, rdma_server_connect,
 * create_rdma_cm_connection, rdma_cm_disconnect_nodes):
 *
 *  - the control connection: one RC connection to the test's port (18515)
 *    with responder resources and initiator depth 0, retry 7, RNR retry 7;
 *    every exchange of the test is one SEND on it (control_channel is the
 *    perftest exchange's message_channel). The server stops listening once
 *    it has accepted it.
 *  - the data connections: one RC connection per QP (-q), again to the
 *    test's port, with responder resources and initiator depth out_reads
 *    for READ and atomic tests (else 0), retry 7, RNR retry 7 and no
 *    private data of perftest's own; the server accepts as many as there
 *    are QPs (data_connections).
 *  - the end: each side disconnects every data connection and waits for
 *    their DISCONNECTED; the control connection goes last.
 *  - UD data QPs (-c UD -R): ids of the UDP port space on the same port,
 *    connected through SIDR (a SIDR_REQ; the server's accept answers with
 *    its QPN and rdma_cm's Q_Key 0x01234567, which the data SENDs then
 *    carry); the server listens for them next to the control listener.
 *    Latency tests need the server to know the client's QPN: the client
 *    SENDs 4 bytes WITH_IMM (the immediate: its QPN) once ESTABLISHED, and
 *    the server receives it before going on (perftest's
 *    rdma_cm_send_ud_connection_parameters / ..._initialize_...).
 *
 * Everything here runs in the stack's thread: each wait polls the stack.
 */
#ifndef UROCE_PERF_RDMA_CM_H
#define UROCE_PERF_RDMA_CM_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <uroce/cm.h>

#include "perf_endpoint.h"
#include "perftest_oob.h"
#include "uroce_app_stack.h"

namespace uroce::perf {

using std::chrono::milliseconds;

/* One event, copied out of the channel (and acknowledged at once). */
struct cm_event_info {
    cm_event_type type = cm_event_type::addr_resolved;
    cm_id *id = nullptr;
    int status = 0;
    uint8_t responder_resources = 0, initiator_depth = 0;
    /* UD (SIDR): the peer's QPN, Q_Key and path (ESTABLISHED), or the
     * requester's path (CONNECT_REQUEST) */
    uint32_t ud_qpn = 0, ud_qkey = 0;
    ah_attr ud_ah;
};

/* The events of one channel, waited for while the stack is polled. */
class cm_events {
  public:
    cm_events(app::stack &st, cm_service *cm);
    ~cm_events();
    bool ok() const { return ch_ != nullptr; }
    cm_event_channel *channel() const { return ch_; }
    /* The next event, or false at the deadline (or on SIGINT). */
    bool next(cm_event_info &ev, std::chrono::steady_clock::time_point deadline);
    /* DISCONNECTED seen for id (at any time, also while waiting for others). */
    bool disconnected(const cm_id *id) const;
    void note(const cm_event_info &ev);

  private:
    app::stack &st_;
    cm_event_channel *ch_ = nullptr;
    std::vector<const cm_id *> disconnected_;
};

/* "REJECTED (reason 8: invalid service ID)" and the like. */
std::string describe(const cm_event_info &ev);

/* perftest's control QP as the exchange's message channel. */
class control_channel : public oob::perftest::message_channel {
  public:
    /* Client: resolve, route, connect to dst (retrying a REJECT every 100 ms,
     * as a listener may not be up yet, until timeout). */
    static std::unique_ptr<control_channel> connect(app::stack &st, cm_service *cm,
                                                    const sockaddr *dst, milliseconds timeout,
                                                    std::string &err,
                                                    std::optional<uint8_t> tos = {});
    /* Server: listen on port, accept the first request (waits for ever,
     * or until SIGINT). listening() runs once it listens. The listener
     * stays for the data connections (data_connections::accept): uroce's
     * CM counts an accepted connection whose listener is gone as holding
     * the port (bind_addr EBUSY), where Linux frees the port with the
     * listener. */
    static std::unique_ptr<control_channel> accept(app::stack &st, cm_service *cm, int family,
                                                   uint16_t port,
                                                   const std::function<void()> &listening,
                                                   std::string &err, bool ud_data = false);
    ~control_channel() override;

    oob::result<void> send(std::span<const uint8_t> msg, milliseconds timeout,
                           std::string_view what) override;
    oob::result<void> recv(std::span<uint8_t> msg, milliseconds timeout,
                           std::string_view what) override;
    void close() override {}
    /* The end: DREQ and (bounded) DISCONNECTED. */
    void disconnect(milliseconds timeout);
    /* Our address and the peer's, as the CM resolved them. */
    const cm_route &route() const { return id_->route; }
    /* The server's listener (accept()), and the channel of its events. */
    cm_id *take_listener() { return std::exchange(listener_, nullptr); }
    /* ud_data: the listener of the UDP port space, up with the control one
     * (a SIDR_REQ before it would be refused). */
    cm_id *take_ud_listener() { return std::exchange(ud_listener_, nullptr); }
    cm_events &events() { return events_; }

  private:
    control_channel(app::stack &st, cm_service *cm) : st_(st), cm_(cm), events_(st, cm) {}
    std::string setup_qp(cm_id *id);
    void release_qp();

    static constexpr size_t slot = 128; /* the largest message is 56 bytes */
    static constexpr unsigned n_recv = 4;
    app::stack &st_;
    cm_service *cm_;
    cm_events events_;
    cm_id *id_ = nullptr;
    cm_id *listener_ = nullptr;    /* server */
    cm_id *ud_listener_ = nullptr; /* server, UD data QPs */
    pd *pd_ = nullptr;
    cq *send_cq_ = nullptr, *recv_cq_ = nullptr;
    mr *mr_ = nullptr;
    std::vector<uint8_t> buf_; /* n_recv receive slots, then the send slot */
    bool disconnected_ = false;
};

/* The test's QPs, each connected by rdma_cm (create_rdma_cm_connection). */
class data_connections {
  public:
    data_connections(app::stack &st, cm_service *cm) : st_(st), events_(st, cm) {}
    ~data_connections();
    /* Client: num_qps connections to dst, one after another; each QP is
     * created on ep's PD with ep's attributes and adopted by ep once
     * ESTABLISHED. A REJECT is retried every 100 ms until timeout. */
    /* tos: perftest's -T, the traffic class of every connection's path */
    std::string connect(const sockaddr *dst, endpoint &ep, int num_qps, const cm_conn_param &param,
                        milliseconds timeout, std::optional<uint8_t> tos = {});
    /* Server: accept num_qps requests on the control connection's
     * listener (each adopted by ep at once, as perftest goes on after
     * rdma_accept), then stop listening. perftest's server listens anew on
     * the same port; uroce's bind_addr refuses that port while the
     * control connection lives (EBUSY, see control_channel::accept), so
     * the first listener serves both: the same service ID on the wire. */
    std::string accept(control_channel &control, endpoint &ep, int num_qps,
                       const cm_conn_param &param, milliseconds timeout);
    /* rdma_cm_disconnect_nodes: DREQ on each, wait for every DISCONNECTED. */
    std::string disconnect(milliseconds timeout);

  private:
    /* UD latency tests: the client's QPN to the server (see the top). */
    std::string ud_hello_buffer(endpoint &ep);
    std::string send_ud_hello(cm_id *id, endpoint &ep, const cm_event_info &est, ah *a,
                              milliseconds timeout);
    std::string post_ud_hello_recv(cm_id *id);
    std::string wait_ud_hello(endpoint &ep, milliseconds timeout);
    app::stack &st_;
    cm_events events_;
    cm_events *ev_ = &events_; /* accept(): the control connection's channel */
    std::vector<cm_id *> ids_;
    std::vector<uint8_t> hello_;
    mr *hello_mr_ = nullptr;
};

/* A sockaddr for host:port (IPv4 or IPv6 literal, or a name). */
bool make_sockaddr(const std::string &host, uint16_t port, sockaddr_storage &out);

} // namespace uroce::perf

#endif

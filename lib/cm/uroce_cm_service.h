/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer (<uroce/cm.h>): ids, event channels, SIDR, and the QP
 * moves of rdma_accept / rdma_connect, over the CM agent on QP1.
 *
 *   engine::poll() -> cm_service::poll(now)
 *       QP1 completions -> cm_agent::receive (REQ ... DREP) or sidr_*()
 *       the agent's timers (at most every timer_tick_ns)
 *       ids waiting for a MAC (resolve_addr, a REQ from a peer not yet
 *       in the neighbour table), SIDR_REQ retries
 *       destroyed ids whose events are all acknowledged are freed
 *   cm_agent::endpoint -> send_mad (QP1), qp_to_rts / qp_to_error (the
 *       id's QP), event (-> cm_event on the id's channel)
 *
 * Everything runs on the engine's thread; only the event channel's queue
 * (uroce_cm_event.cpp) is shared with other threads, under its mutex.
 */
#ifndef UROCE_CM_SERVICE_H
#define UROCE_CM_SERVICE_H

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include <uroce/cm.h>
#include <uroce/engine.h>
#include <uroce/neigh.h>

#include "uroce_cm_agent.h"
#include "uroce_cm_gsi.h"

namespace uroce {

struct cm_event_impl : cm_event {
    cm_event_channel *ch = nullptr;
    uint8_t priv[224] = {};
};

/* The life of an id, as cma.c's rdma_cm_state. */
enum class cm_id_state : uint8_t {
    idle,
    addr_bound,
    addr_query,
    addr_resolved,
    route_resolved,
    listen,
    req_wait_mac,    /* passive: a REQ (or SIDR_REQ) whose peer's MAC is not known yet */
    connect_request, /* passive: CONNECT_REQUEST delivered, not answered */
    connect,         /* REQ/SIDR_REQ sent, or REP sent */
    established,
    disconnect, /* DREQ sent or received */
    done,       /* rejected, unreachable, disconnected */
};

struct cm_id_impl : cm_id {
    class cm_service *svc = nullptr;
    cm_id_state state = cm_id_state::idle;
    uint16_t port = 0; /* ours, host order */
    bool wildcard = true;
    gid bound; /* bind_addr's, unless wildcard */
    uint64_t service_id = 0;
    int backlog = 0;
    cm_id_impl *listener = nullptr; /* passive: the id that listened */
    /* Made by a CONNECT_REQUEST: it shares its listener's port and never
     * holds it (Linux: an accepted rdma_cm id is no bind of its own, so a
     * server may destroy its listener and bind the port again while its
     * connections live, as perftest -R's server does). */
    bool accepted = false;
    cm_conn *conn = nullptr;
    uint64_t deadline = 0; /* addr_query, req_wait_mac, SIDR retries */
    /* The PSN we expect to receive from: the Starting PSN of our REQ
     * (active) or REP (passive), cma.c's id_priv->seq_num. Each side's
     * message names the PSN its sender expects to RECEIVE (Linux cm.c:
     * ib_send_cm_req keeps the REQ's as rq_psn, cm_req_handler takes it as
     * sq_psn; the golden rping capture: the passive side sends from the
     * REQ's PSN, the active side from the REP's). */
    uint32_t seq_num = 0;
    cm_conn_param param; /* connect's or accept's, private data not kept */
    bool disconnected_sent = false;
    /* UD (SIDR) */
    uint32_t sidr_request_id = 0;
    uint64_t sidr_tid = 0;
    unsigned sidr_retries = 0;
    uint8_t sidr_mad[mad_size] = {}; /* the SIDR_REQ (active) or SIDR_REP (passive) sent */
    bool sidr_answered = false;
    /* a REQ / SIDR_REQ held for a MAC: its peer */
    cm_peer peer;
    /* what a held REQ's event will carry */
    uint8_t req_priv[cm_sidr_req_private_max] = {};
    uint8_t req_priv_len = 0;
    /* destroy_id happened; freed once no event refers to it */
    bool destroyed = false;
    std::atomic<unsigned> events_out{0};
};

struct cm_event_channel {
    cm_service *svc = nullptr;
    int fd = -1;
    std::mutex mu;
    std::deque<cm_event_impl *> q;
    unsigned ids = 0;
    std::atomic<unsigned> unacked{0};
};

/* uroce_cm_event.cpp: queue ev on ch (the stack's thread). */
void cm_channel_push(cm_event_channel *ch, cm_event_impl *ev);
/* Drops from ch the unread events of id, which is being destroyed, as the
 * kernel's ucma_cleanup_ctx_events does: its own, and the CONNECT_REQUESTs
 * it listened for, whose new ids are appended to requests for the caller
 * to refuse and destroy (the user never saw them). Returns how many. */
size_t cm_channel_purge(cm_event_channel *ch, const cm_id_impl *id,
                        std::vector<cm_id_impl *> &requests);

class cm_service final : public engine_poller, private cm_agent::endpoint {
  public:
    cm_service(engine &eng, const cm_config &cfg);
    ~cm_service() override;
    verbs_error error() const { return gsi_->error(); }

    unsigned poll(uint64_t now_ns) override;
    uint64_t now() const { return eng_.now_ns(); }

    /* the API (uroce_cm_service.cpp) */
    verbs_error create_id(cm_event_channel *ch, cm_id **out, void *ctx, rdma_port_space ps);
    verbs_error destroy_id(cm_id_impl *id);
    verbs_error bind_addr(cm_id_impl *id, const sockaddr *addr);
    verbs_error resolve_addr(cm_id_impl *id, const sockaddr *src, const sockaddr *dst,
                             int timeout_ms);
    verbs_error resolve_route(cm_id_impl *id);
    verbs_error create_qp(cm_id_impl *id, pd *p, qp_init_attr *attr);
    verbs_error connect(cm_id_impl *id, const cm_conn_param *param);
    verbs_error listen(cm_id_impl *id, int backlog);
    verbs_error accept(cm_id_impl *id, const cm_conn_param *param);
    verbs_error reject(cm_id_impl *id, const void *pd, uint8_t len);
    verbs_error disconnect(cm_id_impl *id);
    verbs_error establish(cm_id_impl *id);
    verbs_error init_qp_attr(const cm_id_impl *id, qp_attr *attr, unsigned *mask) const;
    void remove_all(); /* close_cm: DEVICE_REMOVAL to every id */

    cm_counters_snapshot counters() const;
    size_t conn_count() const { return agent_->conn_count(); }
    /* MADs that have not left through the port yet (cm_output_pending). */
    bool output_pending() const;
    device *dev() const { return eng_.dev(); }
    neigh &nb() const { return *eng_.neighbours(); }
    unsigned channels = 0;

  private:
    /* cm_agent::endpoint */
    void send_mad(const cm_peer &to, const uint8_t *mad) override;
    bool qp_to_rts(cm_conn &c, const cm_rep &rep) override;
    bool user_moves_qp(cm_conn &c) override;
    void qp_established(cm_conn &c) override;
    static void seed_rtt(const cm_conn &c, qp *q);
    void qp_to_error(cm_conn &c) override;
    void event(cm_conn &c, cm_conn_event e) override;
    bool sidr(const cm_peer &from, const cm_mad_view &v, uint64_t now_ns) override;

    void on_connect_request(cm_conn &c);
    void on_sidr_req(const cm_peer &from, const cm_mad_view &v);
    void on_sidr_rep(const cm_peer &from, const cm_mad_view &v);
    bool check_ip_hdr(const cm_id_impl *listener, const uint8_t *priv, const gid &peer_gid,
                      cm_id_impl *child);
    void deliver_request(cm_id_impl *child);
    void poll_ids(uint64_t now_ns);
    void queue(cm_id_impl *id, cm_event_type t, int status, const uint8_t *priv = nullptr,
               size_t priv_len = 0, cm_id_impl *listen_id = nullptr);
    void fill_route_from(cm_id_impl *id, const gid &local, uint16_t local_port, const gid &peer,
                         uint16_t peer_port);
    int sgid_index(const gid &g) const;
    uint16_t pick_port(rdma_port_space ps);
    bool port_taken(rdma_port_space ps, uint16_t port, const cm_id_impl *except) const;
    cm_id_impl *id_of(const cm_conn &c) const;
    void detach_conn(cm_id_impl *id);
    qp_connect_attr qp_attr_for(const cm_id_impl *id) const;
    qp_connect_attr negotiated(const cm_id_impl *id) const;
    static bool to_init(qp *q, const qp_connect_attr &a);
    void reap();
    uint64_t ca_guid() const;
    uint8_t rd_limit() const;
    /* SIDR (uroce_cm_sidr.cpp) */
    verbs_error sidr_connect(cm_id_impl *id, const cm_conn_param *param);
    verbs_error sidr_accept(cm_id_impl *id, const cm_conn_param *param);
    verbs_error sidr_reject(cm_id_impl *id, const void *pd, uint8_t len);
    void sidr_timer(cm_id_impl *id, uint64_t now_ns);
    void sidr_forget(cm_id_impl *id);
    uint64_t sidr_retry_ns() const;

    engine &eng_;
    cm_config cfg_;
    std::unique_ptr<cm_gsi> gsi_;
    std::unique_ptr<cm_agent> agent_;
    std::mt19937_64 rng_;
    uint64_t next_tick_ = 0;
    uint32_t next_sidr_id_;
    std::set<cm_id_impl *> ids_;                          /* alive */
    std::vector<cm_id_impl *> dead_;                      /* destroyed, events outstanding */
    std::unordered_map<uint32_t, cm_id_impl *> by_comm_;  /* local comm ID -> id */
    std::unordered_map<uint32_t, cm_id_impl *> sidr_out_; /* our SIDR request ID -> id */
    /* passive SIDR: (peer GID, its request ID) -> our id */
    std::map<std::pair<std::array<uint8_t, 16>, uint32_t>, cm_id_impl *> sidr_in_;
    cm_counters_snapshot own_; /* what the agent and QP1 do not count */
};

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * The CM agent: everything the CM does for one port's GSI QP (IBTA 12.9;
 * Linux cm.c's cm_port and its tables).
 *
 *   UD payload on QP1  -> receive(): parse_cm_mad (refusals counted by
 *                         reason), then by attribute:
 *     REQ    a live connection with the peer's (comm ID, GID)? its duplicate
 *            handling; else a listener for the service ID? a new passive
 *            connection (at most max_half_open at once, the rest refused
 *            with REJ no resources and counted); else REJ invalid service
 *            ID, what rdma_cm reports as "connection refused";
 *     REJ    with reason timeout and no remote comm ID: the active side
 *            gave up on its REQ; found by its comm ID, GID and CA GUID;
 *     others the connection whose local comm ID the message names; none?
 *            a DREQ still gets its DREP (cm.c cm_issue_drep: the peer may
 *            retry after our timewait ended), the rest is counted, dropped.
 *   poll(now)          -> every connection's retries and timewait.
 *
 * Comm IDs start at a random point and are never reused while a connection
 * with the same ID lives (IBTA 12.9.1: unique per CM); the agent owns its
 * connections and frees one when it leaves timewait or is destroyed.
 *
 * The agent knows no frames: its endpoint sends a MAD to a peer's GSI QP
 * and moves QPs; the transport's QP1 (or a test) is that endpoint. Control
 * path only: a MAD at a time, nothing per data packet.
 */
#ifndef UROCE_CM_AGENT_H
#define UROCE_CM_AGENT_H

#include <cstdint>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "uroce_cm_conn.h"

namespace uroce {

/* Where a MAD came from, or goes to: the peer's GSI QP is reached through
 * its GID (the UDP/IP path) and QPN 1. */
struct cm_peer {
    gid addr;
    uint32_t qpn = gsi_qpn;
    gid local; /* our GID the peer reached us on, or we send from (zero: by family) */
};

/* Why a MAD was dropped, or refused with a REJ, beside mad_error. */
#define UROCE_CM_DROPS(X)                                                                          \
    X(no_conn, "a message for a comm ID we do not have (not a REQ or DREQ)")                       \
    X(req_no_listener, "REQ for a service nobody listens on: REJ invalid service ID")              \
    X(req_half_open_full, "REQ beyond max_half_open connections: REJ no resources")                \
    X(req_not_rc, "REQ for a transport other than RC/UC: REJ invalid transport type")              \
    X(stale_dreq, "DREQ for a comm ID we no longer have: DREP sent")                               \
    X(sidr_unhandled, "SIDR_REQ or SIDR_REP where nobody handles SIDR")                            \
    X(not_sent, "LAP or APR (no alternate paths on RoCE)")

enum class cm_drop : uint8_t {
#define X(name, desc) name,
    UROCE_CM_DROPS(X)
#undef X
        count
};
const char *cm_drop_name(cm_drop d);

struct cm_agent_counters {
    uint64_t mad_refused[size_t(mad_error::count)] = {}; /* by parse_cm_mad's reason */
    uint64_t drops[size_t(cm_drop::count)] = {};
    uint64_t conns_created = 0;
    uint64_t conns_freed = 0;
};

class cm_agent {
  public:
    /* What the agent needs from the port. */
    struct endpoint {
        virtual ~endpoint() = default;
        virtual void send_mad(const cm_peer &to, const uint8_t *mad) = 0;
        virtual bool qp_to_rts(cm_conn &c, const cm_rep &rep) = 0;
        virtual bool user_moves_qp(cm_conn &c) {
            (void)c;
            return false;
        }
        virtual void qp_established(cm_conn &c) = 0;
        virtual void qp_to_error(cm_conn &c) = 0;
        /* Every connection event (the rdma_cm layer's input). On
         * connect_request the endpoint may reject at once (c.reject()):
         * the agent then frees the connection. */
        virtual void event(cm_conn &c, cm_conn_event e) = 0;
        /* SIDR_REQ and SIDR_REP (IBTA 12.11: no connection, no comm ID);
         * false: nobody handles SIDR here (counted as sidr_unhandled). */
        virtual bool sidr(const cm_peer &from, const cm_mad_view &v, uint64_t now_ns) {
            (void)from, (void)v, (void)now_ns;
            return false;
        }
    };

    struct config {
        uint64_t seed = 0;             /* comm IDs' start; 0: random */
        unsigned max_half_open = 1024; /* passive connections not yet established */
        unsigned max_conns = 1u << 16; /* all connections, any state */
    };

    cm_agent(endpoint &ep, const config &cfg);
    ~cm_agent();
    cm_agent(const cm_agent &) = delete;
    cm_agent &operator=(const cm_agent &) = delete;

    /* A UD payload that arrived on the GSI QP from peer. */
    void receive(const cm_peer &from, const uint8_t *payload, size_t len, uint64_t now_ns);
    /* Retries and timewait of every connection that is due. */
    void poll(uint64_t now_ns);

    /* Listen for REQs to a service ID (rdma_listen); false if taken. */
    bool listen(uint64_t service_id, void *context);
    bool unlisten(uint64_t service_id);
    void *listener_context(uint64_t service_id) const;

    /* A new active connection to peer; nullptr when max_conns are open. */
    cm_conn *connect(const cm_peer &peer, const cm_req_params &p, uint64_t now_ns);
    /* Forget a connection (rdma_destroy_id), as cm.c's cm_destroy_id does:
     * our REQ not yet answered is given up with REJ timeout (abandon()), a
     * REQ we did not answer gets REJ consumer defined, and the connection
     * is freed at once;
     * a connected one is disconnected (DREQ, or the DREP a DREQ is owed)
     * and freed by poll() when its timewait ends; so is one already
     * leaving. now_ns times the DREQ's retries and the timewait. */
    void destroy(cm_conn *c, uint64_t now_ns);

    const cm_msg_counters &msg_counters() const { return msg_cnt_; }
    const cm_agent_counters &counters() const { return cnt_; }
    size_t conn_count() const { return conns_.size(); }
    unsigned half_open() const;
    cm_conn *find(uint32_t local_comm_id) const;
    const cm_peer *peer_of(const cm_conn *c) const;

  private:
    struct slot;
    class relay;
    uint32_t new_comm_id();
    void on_req(const cm_peer &from, const cm_mad_view &v, uint64_t now_ns);
    cm_conn *find_abandoned(const cm_peer &from, const cm_mad_view &v) const;
    void reject_req(const cm_peer &from, const cm_mad_view &v, cm_rej_reason why, cm_drop d);
    void free_idle();
    void erase(uint32_t local_comm_id);

    endpoint &ep_;
    config cfg_;
    std::mt19937_64 rng_;
    uint32_t next_comm_id_;
    std::unordered_map<uint32_t, std::unique_ptr<slot>> conns_; /* by local comm ID */
    std::unordered_map<uint64_t, void *> listeners_;            /* by service ID */
    /* Passive connections by the peer's comm ID and GID (IBTA 12.9.5: the
     * pair names the active side's connection): a retried REQ finds its own. */
    std::map<std::pair<uint32_t, std::array<uint8_t, 16>>, uint32_t> by_remote_;
    cm_msg_counters msg_cnt_;
    cm_agent_counters cnt_;
};

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * One CM connection's state machine (IBTA 12.9, the communication
 * establishment and release protocols; Linux cm.c's cm_id states).
 *
 *   active side                          passive side
 *   connect():   IDLE -> REQ_SENT  --REQ-->  (new) REQ_RCVD      event connect_request
 *                REQ_SENT <--MRA--  (optional, when the passive side is slow)
 *                                            accept(): REQ_RCVD -> REP_SENT
 *   REP_RCVD: QP to RTR/RTS    <--REP--
 *   ESTABLISHED  --RTU-->                    REP_SENT -> ESTABLISHED  event established
 *   event established
 *   disconnect(): ESTABLISHED -> DREQ_SENT --DREQ--> DREQ_RCVD   event disconnected
 *   TIMEWAIT  <--DREP--                      disconnect(): -> TIMEWAIT
 *   event disconnected                       ... TIMEWAIT -> IDLE: event timewait_exit
 *
 * Timers: REQ, REP and DREQ are sent again after the peer's CM response
 * timeout (4.096 us * 2^t, t from the REQ) plus twice the packet lifetime,
 * at most max_cm_retries times (IBTA 12.4: the REQ's field; 15 for rdma_cm);
 * an MRA stretches the wait by the service timeout it names. When the
 * retries run out the other side is unreachable (REQ, REP) or simply gone
 * (DREQ: the connection ends anyway).
 *
 * Duplicates are answered from the state, so that a lost answer costs one
 * retry, not the connection (IBTA 12.9.8; cm.c cm_dup_*_handler): a REQ
 * again after our REP gets the REP again, a REP again after our RTU the RTU
 * again, a DREQ again in TIMEWAIT the DREP again. A message that does not
 * belong to the state is counted and dropped (IBTA 12.6.2).
 *
 * The connection knows nothing of QPs, GIDs or frames: its owner (the CM
 * agent on the GSI QP) sends its MADs, moves its QP when asked, and turns
 * its events into rdma_cm events.
 */
#ifndef UROCE_CM_CONN_H
#define UROCE_CM_CONN_H

#include <cstdint>

#include <uroce/cm_mad.h>

#include "uroce_cm_msg.h"

namespace uroce {

enum class cm_state : uint8_t {
    idle,
    req_sent,
    req_rcvd,
    mra_req_rcvd, /* we sent a REQ, the peer answered MRA: wait longer */
    rep_sent,
    mra_rep_rcvd, /* we sent a REP, the peer answered MRA */
    rep_rcvd,     /* active: the REP came; the user moves its own QP, establish() sends the RTU */
    established,
    dreq_sent,
    dreq_rcvd,
    timewait,
    count
};
const char *cm_state_name(cm_state s);

enum class cm_conn_event : uint8_t {
    connect_request,  /* passive: a REQ arrived; accept() or reject() it */
    connect_response, /* active: a REP arrived for a QP the user moves; establish() */
    established,      /* both: the connection is up */
    rejected,         /* active: the peer sent REJ (reason in last_rej_reason) */
    unreachable,      /* active or passive: REQ or REP retries ran out */
    disconnected,     /* both: a DREQ arrived, or ours was answered or ran out */
    timewait_exit,    /* the connection may be reused / freed */
};

/* What the connection needs from its owner. */
class cm_conn_owner {
  public:
    virtual ~cm_conn_owner() = default;
    /* Send a whole 256-byte MAD to the connection's peer (the GSI QP). */
    virtual void send_mad(class cm_conn &c, const uint8_t *mad) = 0;
    /* Active side, a REP arrived: move the QP to RTR and RTS with the
     * peer's QPN and PSN. false: the REP cannot be honoured (REJ follows). */
    virtual bool qp_to_rts(class cm_conn &c, const cm_rep &rep) = 0;
    /* Active side, after qp_to_rts: true when the user moves its QP
     * itself (rdma_cm's CONNECT_RESPONSE): REP_RCVD until establish(). */
    virtual bool user_moves_qp(class cm_conn &c) {
        (void)c;
        return false;
    }
    /* Passive side, the RTU arrived (or will not matter): move the QP to
     * RTS. Its RTR transition happened in accept(). */
    virtual void qp_established(class cm_conn &c) = 0;
    /* Either side, the connection is going: move the QP to ERR so that its
     * work requests flush (rdma_disconnect does the same). */
    virtual void qp_to_error(class cm_conn &c) = 0;
    virtual void event(class cm_conn &c, cm_conn_event e) = 0;
};

/* Counters of one CM agent, shared by its connections. */
struct cm_msg_counters {
    uint64_t sent[16] = {};     /* by attribute ID - 0x10 */
    uint64_t received[16] = {}; /* by attribute ID - 0x10 */
    uint64_t retries = 0;       /* REQ, REP, DREQ sent again after a timeout */
    uint64_t duplicates = 0;    /* a message answered again from the state */
    uint64_t unexpected = 0;    /* a message that does not belong to the state: dropped */
    uint64_t timeouts = 0;      /* retries ran out */
};

class cm_conn {
  public:
    /* The peer's CM response timeout and the packet lifetime, as exponents
     * of 4.096 us (IBTA 12.7.27, 12.7.26). */
    static constexpr uint8_t default_response_timeout = 20; /* CMA_CM_RESPONSE_TIMEOUT, ~4.3 s */
    static constexpr uint8_t default_packet_lifetime = 16;  /* CMA_IBOE_PACKET_LIFETIME */
    static constexpr uint8_t default_max_retries = 15;      /* CMA_MAX_CM_RETRIES */

    cm_conn(cm_conn_owner &owner, cm_msg_counters &cnt, uint32_t local_comm_id)
        : owner_(owner), cnt_(cnt), local_comm_id_(local_comm_id) {}

    /* ---- local calls; false when the state does not allow them */
    bool connect(const cm_req_params &p, uint64_t now_ns);
    bool accept(const cm_rep_params &p, uint64_t now_ns);
    bool reject(cm_rej_reason reason, cm_private pd = {}); /* REQ_RCVD, REP_RCVD */
    /* REP_RCVD: the user moved its QP; the RTU (rdma_establish). */
    bool establish();
    bool disconnect(uint64_t now_ns, cm_private pd = {});
    /* Active side, our REQ not answered yet (REQ_SENT, MRA_REQ_RCVD) and
     * the user gives up (cm.c cm_destroy_id): REJ reason timeout, with no
     * remote comm ID (we have none) and our CA GUID as its ARI, the pair
     * the passive side finds its half-open connection by (cm.c
     * cm_acquire_rejected_id); IDLE. */
    bool abandon();

    /* ---- the owner hands over every MAD for this connection (already
     * accepted by parse_cm_mad and matched by comm ID), and the time. */
    void receive(const cm_mad_view &v, uint64_t now_ns);
    /* A new REQ (the owner matched it to a listener): REQ_RCVD. */
    void receive_req(const cm_mad_view &v);
    /* Retries and timewait, when due; the owner calls it at deadline(). */
    void on_timer(uint64_t now_ns);
    uint64_t deadline() const { return deadline_; } /* UINT64_MAX: none */

    cm_state state() const { return state_; }
    bool active() const { return active_; }
    uint32_t local_comm_id() const { return local_comm_id_; }
    uint32_t remote_comm_id() const { return remote_comm_id_; }
    uint64_t tid() const { return tid_; }
    uint32_t remote_qpn() const { return remote_qpn_; }
    uint32_t remote_psn() const { return remote_psn_; }
    uint16_t last_rej_reason() const { return rej_reason_; }
    const cm_req_params &req() const { return req_; } /* sent (active) or received (passive) */
    unsigned retries_left() const { return retries_left_; }
    /* The handshake's round trip, 0 until known: our REQ (active) or REP
     * (passive) to the peer's answer to it (REP, RTU, or an MRA first).
     * Karn's rule (RFC 6298 3): none when the message was sent again, as
     * the answer may be to either copy. What the QP's RTT estimate starts
     * from (loss_seed_rtt). */
    uint64_t handshake_rtt_ns() const { return handshake_rtt_ns_; }
    /* The private data of the last message received (the REQ's on the
     * passive side until another arrives): what rdma_cm hands its user. */
    const uint8_t *last_private() const { return private_; }
    size_t last_private_len() const { return private_len_; }

    /* 4.096 us * 2^exp, in ns (IBTA 12.7.27's unit), saturating. */
    static uint64_t timeout_ns(uint8_t exp);

  private:
    void send(cm_attr attr);
    void arm(uint64_t now_ns, uint8_t response_timeout, unsigned retries);
    void enter_timewait(uint64_t now_ns);
    void on_rep(const cm_mad_view &v, uint64_t now_ns);
    void on_rtu(uint64_t now_ns);
    void on_dreq(uint64_t now_ns);
    /* How long the peer takes to answer (IBTA 12.7.22, 12.7.27): the REQ's
     * remote CM response timeout on the active side, its local one on the
     * passive side. */
    uint8_t peer_response_timeout() const {
        return active_ ? req_.remote_cm_response_timeout : req_.local_cm_response_timeout;
    }
    void on_drep(uint64_t now_ns);
    void on_rej(const cm_mad_view &v, uint64_t now_ns);
    void on_mra(const cm_mad_view &v, uint64_t now_ns);

    cm_conn_owner &owner_;
    cm_msg_counters &cnt_;
    cm_state state_ = cm_state::idle;
    bool active_ = false; /* we sent the REQ */
    uint32_t local_comm_id_;
    uint32_t remote_comm_id_ = 0;
    uint64_t tid_ = 0;
    uint32_t remote_qpn_ = 0;
    uint32_t remote_psn_ = 0;
    uint16_t rej_reason_ = 0;
    cm_req_params req_;
    void keep_private(const cm_mad_view &v);
    uint8_t last_sent_[mad_size] = {}; /* what a retry or a duplicate sends again */
    uint8_t private_[224] = {};        /* the most any CM message carries (RTU, DREP) */
    uint8_t private_len_ = 0;
    uint64_t deadline_ = UINT64_MAX;
    uint64_t retry_interval_ = 0;
    unsigned retries_left_ = 0;
    /* the handshake's round trip: when the REQ or REP left, and whether
     * its answer still times it (sent once, not answered yet) */
    uint64_t timed_since_ns_ = 0;
    bool timing_ = false;
    uint64_t handshake_rtt_ns_ = 0;
    void time_answer(uint64_t now_ns);
};

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce rdma_cm: a librdmacm-shaped connection manager over the IB CM on the
 * wire (MADs on the GSI QP1; doc/cm.md).
 *
 * The names follow librdmacm without the rdma_ prefix (rdma_create_id ->
 * uroce::create_id, struct rdma_cm_event -> uroce::cm_event,
 * RDMA_CM_EVENT_ESTABLISHED -> cm_event_type::established, ...), and every
 * enum keeps the numeric value of its librdmacm twin. Addresses are
 * sockaddr_in / sockaddr_in6, as in librdmacm.
 *
 *   cm_service *cm = open_cm(engine);           // one per engine (device + neighbours)
 *   cm_event_channel *ch = create_event_channel(cm);
 *   cm_id *id; create_id(ch, &id, ctx, rdma_port_space::tcp);
 *   active:  resolve_addr -> ADDR_RESOLVED, resolve_route -> ROUTE_RESOLVED,
 *            create_qp(id, pd, attr), connect(id, &param) -> ESTABLISHED
 *            (or REJECTED, UNREACHABLE, CONNECT_ERROR)
 *   passive: bind_addr, listen -> CONNECT_REQUEST (a new id, event.id),
 *            create_qp(event.id, ...), accept(event.id, &param) -> ESTABLISHED
 *   both:    disconnect(id) -> DISCONNECTED (the peer gets DISCONNECTED too),
 *            destroy_qp, destroy_id
 *   UD ids (rdma_port_space::udp): connect sends a SIDR_REQ; the peer's
 *            accept answers with its QPN and Q_Key; ESTABLISHED carries them
 *            in event.ud (with an address handle's attributes).
 *
 * Threading. The CM runs in the stack's thread: the thread that polls the
 * engine it was opened on (its poll is hooked into engine::poll()). Every
 * call here is made on that thread, except these, which any thread may
 * call at any time: get_event, ack_event, event_channel_fd, and waiting on
 * that fd with poll(2)/epoll. A single-threaded app (the usual uroce app:
 * one loop polls the engine and handles its events) calls everything
 * directly; an app whose logic runs in another thread waits on the
 * channel's fd, takes events with get_event, and hands the rest of its
 * calls to the stack's thread (a work channel, <uroce/work_channel.h>, or
 * the app's own queue). The drop-in librdmacm (compat/) will marshal them
 * that way. An id's fields belong to the stack's thread too (the CM writes
 * route, qp, state as the handshake goes); another thread reads them
 * through a call marshalled there, except `context`, which only the user
 * writes.
 *
 * Differences from librdmacm, all deliberate:
 *  - errors are typed (verbs_error, whose values are the errno librdmacm
 *    would set) instead of errno / -1; get_event returns again when the
 *    channel is empty (a librdmacm channel would block unless O_NONBLOCK);
 *  - there is no kernel: the CM lives in the stack (open_cm), and events
 *    happen while the engine is polled;
 *  - destroy_id does not wait for the id's events to be acknowledged: the
 *    id's memory stays valid until they are, then it is freed.
 */
#ifndef UROCE_CM_H
#define UROCE_CM_H

#include <uroce/export.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <uroce/cm_mad.h>
#include <uroce/verbs.h>

namespace uroce {

class engine;
class cm_service;
struct cm_event_channel;

/* ---------------------------------------------------------------- events */

/* rdma_cm_event_type, with librdmacm's values. */
enum class cm_event_type : uint8_t {
    addr_resolved = 0,
    addr_error = 1,
    route_resolved = 2,
    route_error = 3,
    connect_request = 4,
    connect_response = 5, /* active, an id without create_qp's QP: move it, then establish() */
    connect_error = 6,
    unreachable = 7,
    rejected = 8,
    established = 9,
    disconnected = 10,
    device_removal = 11, /* not raised: close_cm waits for the ids to go */
    multicast_join = 12, /* not raised: no multicast */
    multicast_error = 13,
    addr_change = 14, /* not raised */
    timewait_exit = 15,
};
/* "RDMA_CM_EVENT_ESTABLISHED", as rdma_event_str. */
UROCE_API const char *cm_event_str(cm_event_type e);

/* The most private data each message carries for the user (rdma_cm's IP
 * header takes the first 36 bytes of a REQ's 92 and a SIDR_REQ's 216). */
inline constexpr size_t cm_req_private_max = 92 - sizeof(cma_ip_hdr);       /* 56 */
inline constexpr size_t cm_rep_private_max = 196;                           /* REP */
inline constexpr size_t cm_rej_private_max = 148;                           /* REJ */
inline constexpr size_t cm_sidr_req_private_max = 216 - sizeof(cma_ip_hdr); /* 180 */
inline constexpr size_t cm_sidr_rep_private_max = 136;
inline constexpr size_t cm_dreq_private_max = 220;

/* rdma_conn_param. In connect/accept: what we ask for; in an event: what
 * the peer sent (private data points into the event, valid until
 * ack_event). */
struct cm_conn_param {
    const void *private_data = nullptr;
    uint8_t private_data_len = 0;
    uint8_t responder_resources = 0; /* RDMA READ/atomic the peer may have outstanding at us */
    uint8_t initiator_depth = 0;     /* ... we may have outstanding at the peer */
    uint8_t flow_control = 0;
    uint8_t retry_count = 7;     /* the transport's retries (connect only; 3 bits) */
    uint8_t rnr_retry_count = 7; /* 7: infinite (3 bits) */
    uint8_t srq = 0;
    uint32_t qp_num = 0; /* an id without create_qp: the QPN to announce */
};

/* rdma_ud_param: a UD peer, after SIDR (ESTABLISHED on the active side). */
struct cm_ud_param {
    const void *private_data = nullptr;
    uint8_t private_data_len = 0;
    uroce::ah_attr ah_attr; /* to the peer, MAC resolved: create_ah(pd, ah_attr) */
    uint32_t qp_num = 0;
    uint32_t qkey = 0;
};

struct cm_id;

/* rdma_cm_event. status: 0, or for rejected the IB CM's reject reason
 * (cm_rej_reason: 8, invalid service ID, is "connection refused"), or a
 * negative errno (unreachable: -ETIMEDOUT; addr_error: -EHOSTUNREACH or
 * -ETIMEDOUT; connect_error: -ENOMEM, -EINVAL). */
struct cm_event {
    cm_id *id = nullptr;        /* connect_request: the new id, on the listener's channel */
    cm_id *listen_id = nullptr; /* connect_request: the listening id */
    cm_event_type event = cm_event_type::addr_resolved;
    int status = 0;
    cm_conn_param conn; /* connected port spaces */
    cm_ud_param ud;     /* UD port spaces (SIDR) */
};

/* ---------------------------------------------------------------- ids */

/* rdma_addr + rdma_route (for RoCE: no path record query; the path comes
 * from the GIDs and the neighbour table). */
struct cm_route {
    sockaddr_storage src_addr{}; /* ours (a sockaddr_in or sockaddr_in6) */
    sockaddr_storage dst_addr{}; /* the peer's */
    gid sgid;
    gid dgid;
    uint8_t sgid_index = 0; /* in the device's GID table */
    uint8_t dmac[6] = {};   /* the peer's MAC (after ADDR_RESOLVED) */
    mtu path_mtu = mtu::mtu_1024;
    uint32_t flow_label = 0; /* rdma_cm's for RoCEv2: from the ports (IBTA A17.4.5.2) */
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 64;
    int num_paths = 0; /* 1 after ROUTE_RESOLVED */
};

/* rdma_cm_id: the fields an application reads. The library owns it
 * (create_id, and connect_request events, make it; destroy_id ends it). */
struct cm_id {
    device *verbs = nullptr; /* the device of the id's QP */
    cm_event_channel *channel = nullptr;
    void *context = nullptr; /* the user's */
    uroce::qp *qp = nullptr; /* create_qp's */
    cm_route route;
    rdma_port_space ps = rdma_port_space::tcp;
    uint8_t port_num = 1;
    uroce::pd *pd = nullptr; /* create_qp's */
    cq *send_cq = nullptr;   /* create_qp's (the attr's) */
    cq *recv_cq = nullptr;
    uroce::qp_type qp_type = uroce::qp_type::rc; /* ud for rdma_port_space::udp and ::ib UD */

  protected:
    cm_id() = default;
    ~cm_id() = default;
};

/* ---------------------------------------------------------------- the service */

struct cm_config {
    uint64_t seed = 0;              /* comm IDs' and PSNs' start; 0: random */
    unsigned max_half_open = 1024;  /* passive connections not yet established: more refused */
    unsigned max_conns = 1u << 16;  /* connections in any state */
    unsigned mad_queue = 256;       /* MADs parked while their peer's MAC resolves */
    unsigned gsi_recv_depth = 256;  /* receive buffers on QP1 */
    uint8_t response_timeout = 20;  /* CM response timeout exponent (4.096 us * 2^t): ~4.3 s */
    uint8_t max_cm_retries = 15;    /* REQ, REP, DREQ, SIDR_REQ retries */
    uint8_t local_ack_timeout = 19; /* the QPs' ACK timeout (IBTA 12.7.34): ~2 s, as rxe sends */
    uint8_t min_rnr_timer = 12;     /* the QPs' RNR NAK timer: 0.64 ms */
};

/* The counters of one CM: every MAD received, sent, retried, duplicated
 * and dropped, by reason (doc/cm.md lists them). X(name, description). */
#define UROCE_CM_SERVICE_COUNTERS(X)                                                               \
    X(mad_rx, "MADs received on QP1")                                                              \
    X(mad_tx, "MADs sent on QP1")                                                                  \
    X(mad_refused, "MADs refused by the parser (the sum of the six below)")                        \
    X(mad_short, "refused: fewer than 256 bytes")                                                  \
    X(mad_bad_base_version, "refused: base version not 1")                                         \
    X(mad_not_cm_class, "refused: another management class")                                       \
    X(mad_bad_class_version, "refused: CM class version not 2")                                    \
    X(mad_bad_method, "refused: a method other than Send()")                                       \
    X(mad_unknown_attribute, "refused: not a CM attribute")                                        \
    X(mad_rx_error, "QP1 receive completions in error")                                            \
    X(mad_parked, "MADs parked while the peer's MAC resolves")                                     \
    X(mad_unresolved, "parked MADs dropped: the peer's MAC did not resolve")                       \
    X(mad_queue_full, "MADs dropped: the park queue or QP1's send queue was full")                 \
    X(req_rx, "REQ received")                                                                      \
    X(rep_rx, "REP received")                                                                      \
    X(rtu_rx, "RTU received")                                                                      \
    X(rej_rx, "REJ received")                                                                      \
    X(mra_rx, "MRA received")                                                                      \
    X(dreq_rx, "DREQ received")                                                                    \
    X(drep_rx, "DREP received")                                                                    \
    X(sidr_req_rx, "SIDR_REQ received")                                                            \
    X(sidr_rep_rx, "SIDR_REP received")                                                            \
    X(req_tx, "REQ sent")                                                                          \
    X(rep_tx, "REP sent")                                                                          \
    X(rtu_tx, "RTU sent")                                                                          \
    X(rej_tx, "REJ sent")                                                                          \
    X(mra_tx, "MRA sent")                                                                          \
    X(dreq_tx, "DREQ sent")                                                                        \
    X(drep_tx, "DREP sent")                                                                        \
    X(sidr_req_tx, "SIDR_REQ sent")                                                                \
    X(sidr_rep_tx, "SIDR_REP sent")                                                                \
    X(retries, "REQ, REP, DREQ, SIDR_REQ sent again after a timeout")                              \
    X(duplicates, "messages answered again from the connection's state")                           \
    X(unexpected, "messages that do not belong to the connection's state: dropped")                \
    X(timeouts, "handshakes whose retries ran out")                                                \
    X(no_conn, "messages for a comm ID we do not have: dropped")                                   \
    X(req_no_listener, "REQ or SIDR_REQ for a service nobody listens on: refused")                 \
    X(req_half_open_full, "REQ beyond max_half_open: REJ no resources")                            \
    X(req_not_rc, "REQ for a transport other than RC/UC: refused")                                 \
    X(req_bad_ip_hdr, "REQ whose rdma_cm IP header is not for our interface: refused")             \
    X(stale_dreq, "DREQ for a comm ID we no longer have: DREP sent")                               \
    X(sidr_unknown, "SIDR_REP for no request of ours: dropped")                                    \
    X(conns_created, "connections created")                                                        \
    X(conns_freed, "connections freed")                                                            \
    X(events, "events queued on channels")                                                         \
    X(events_purged, "unread events dropped with their destroyed id (or its listener)")

struct cm_counters_snapshot {
#define UROCE_X(name, desc) uint64_t name = 0;
    UROCE_CM_SERVICE_COUNTERS(UROCE_X)
#undef UROCE_X
};

/* Open the CM on an engine (its device and neighbours must be attached):
 * creates the GSI QP1 on the device and hooks the CM's poll into
 * engine::poll(). nullptr (and *err) when QP1 exists already or the engine
 * has no device or neighbours. */
UROCE_API cm_service *open_cm(engine &eng, const cm_config &cfg = {}, verbs_error *err = nullptr);
/* Unhook from the engine and destroy QP1. busy while event channels
 * exist (destroy the ids, then the channels, first). Connections still in
 * timewait are forgotten. */
UROCE_API verbs_error close_cm(cm_service *cm);
UROCE_API cm_counters_snapshot cm_counters(const cm_service *cm);
/* Non-zero counters, one per line. */
UROCE_API void cm_print_counters(const cm_service *cm, FILE *f);
/* Connections that exist (any state, timewait included). */
UROCE_API size_t cm_connection_count(const cm_service *cm);
/* Whether a MAD the CM sent has not left through the port yet: parked
 * while the peer's MAC resolves, queued on QP1, or behind other frames in
 * the device's TX queue. disconnect(), reject() and the like only queue
 * their DREQ, DREP or REJ, which leaves in a later poll; a kernel CM sends
 * it even after the process has gone, so rdma_cm programs end right after
 * their last call. A program that is about to end polls its engine while
 * this is true (bounded by a timeout: a link that is down never drains),
 * or the peer waits its whole CM timeout for an answer that never left. */
UROCE_API bool cm_output_pending(const cm_service *cm);
/* The CM's poll (timers, QP1 completions, parked MADs); engine::poll()
 * calls it, so only a program that polls no engine calls it itself. */
UROCE_API unsigned cm_poll(cm_service *cm);

/* ---------------------------------------------------------------- event channels */

UROCE_API cm_event_channel *create_event_channel(cm_service *cm, verbs_error *err = nullptr);
/* busy while ids use it or events are not acknowledged. */
UROCE_API verbs_error destroy_event_channel(cm_event_channel *ch);
/* Readable (POLLIN) while the channel holds an event: wait on it with
 * poll(2), epoll or a DPDK interrupt; get_event consumes. Any thread. */
UROCE_API int event_channel_fd(const cm_event_channel *ch);
/* The oldest event, or again when there is none. Any thread. */
UROCE_API verbs_error get_event(cm_event_channel *ch, cm_event **event);
/* Done with an event (its private data is freed). Any thread. */
UROCE_API verbs_error ack_event(cm_event *event);

/* ---------------------------------------------------------------- ids */

/* ps tcp or ib: RC (connected); udp: UD (SIDR). */
UROCE_API verbs_error create_id(cm_event_channel *ch, cm_id **id, void *context,
                                rdma_port_space ps);
/* A connected id is disconnected first (DREQ), as rdma_destroy_id; its QP
 * must have been destroyed by destroy_qp or is left to the caller. */
UROCE_API verbs_error destroy_id(cm_id *id);

/* Our address (and port): a local address of the engine's interface, or
 * the wildcard (0.0.0.0 / ::). Port 0 picks a free one. */
UROCE_API verbs_error bind_addr(cm_id *id, const sockaddr *addr);
/* Pick the source (src, or by the destination's family), resolve the
 * peer's MAC (ARP / ND): ADDR_RESOLVED, or ADDR_ERROR after timeout_ms. */
UROCE_API verbs_error resolve_addr(cm_id *id, const sockaddr *src, const sockaddr *dst,
                                   int timeout_ms);
/* The path from the GIDs (no SA on RoCE): ROUTE_RESOLVED. */
UROCE_API verbs_error resolve_route(cm_id *id, int timeout_ms);

/* rdma_create_qp: a QP of the id's type on pd (and the id's device), moved
 * to INIT (RC) or to RTS with rdma_cm's Q_Key (UD), as librdmacm does. */
UROCE_API verbs_error create_qp(cm_id *id, pd *pd, qp_init_attr *attr);
UROCE_API void destroy_qp(cm_id *id);

/* Active side: REQ (or SIDR_REQ for UD). ESTABLISHED when the peer
 * accepts (the QP is then in RTS), REJECTED, UNREACHABLE. */
UROCE_API verbs_error connect(cm_id *id, const cm_conn_param *param);
/* Passive side: CONNECT_REQUEST for each REQ to our port. backlog caps
 * the requests not yet accepted (0: the CM's max_half_open). */
UROCE_API verbs_error listen(cm_id *id, int backlog);
/* Answer a CONNECT_REQUEST: the QP goes to RTR and RTS with the negotiated
 * attributes and the REP leaves; ESTABLISHED follows the RTU. For UD ids
 * a SIDR_REP with our QPN and Q_Key. */
UROCE_API verbs_error accept(cm_id *id, const cm_conn_param *param);
/* Refuse it (REJ consumer defined, or SIDR_REP rejected), with private data. */
UROCE_API verbs_error reject(cm_id *id, const void *private_data, uint8_t private_data_len);
/* DREQ (or DREP if the peer asked first); the QP goes to ERR so its work
 * requests flush. DISCONNECTED follows on both sides. */
UROCE_API verbs_error disconnect(cm_id *id);

/* rdma_establish: an active id whose QP the user made itself (connect
 * with param.qp_num, no create_qp) gets CONNECT_RESPONSE when the peer
 * accepts; the user moves its QP (init_qp_attr) and calls establish,
 * which sends the RTU. No ESTABLISHED event follows (librdmacm raises
 * none for it either). */
UROCE_API verbs_error establish(cm_id *id);
/* rdma_init_qp_attr: set attr->qp_state to INIT, RTR or RTS; fills what
 * a QP of this id takes for it, from what the handshake negotiated so far,
 * and its mask (qp_attr_state | ...), for modify_qp(qp, *attr, *mask).
 * INIT: port, P_Key index, access (remote WRITE, and READ/atomic when the
 * id takes any; none before a REQ; a Q_Key for UD). RTR: the path, MTU,
 * the peer's QPN, the PSN we receive from, max_dest_rd_atomic, RNR timer.
 * RTS: the PSN we send from, ACK timeout, retry counts, max_rd_atomic.
 * RTR and RTS need the peer's QPN: passive after CONNECT_REQUEST, active
 * after CONNECT_RESPONSE (else inval). The values are the ones the CM's
 * own QP moves (accept, connect) use. */
UROCE_API verbs_error init_qp_attr(const cm_id *id, qp_attr *attr, unsigned *mask);

/* The Q_Key of rdma_cm's UD ids (RDMA_UDP_QKEY). */
inline constexpr uint32_t rdma_udp_qkey = 0x01234567;

} // namespace uroce

#endif

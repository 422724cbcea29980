/* SPDX-License-Identifier: BSD-3-Clause
 * The rdma_cm layer (uroce_cm_service.h): ids, addresses and routes, the
 * QP moves of rdma_connect / rdma_accept, events, and the public API's
 * entry points. SIDR (UD ids) is in uroce_cm_sidr.cpp.
 */
#include "uroce_cm_service.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <uroce/flow.h>

#include "uroce_device.h" /* tx_queued: output_pending */
#include "uroce_qp.h"     /* loss_seed_rtt: the handshake's round trip as the QP's first */

namespace uroce {

namespace {

/* sockaddr_in / sockaddr_in6 -> GID (IPv4-mapped for IPv4) and port. */
bool sa_to_gid(const sockaddr *sa, gid &g, uint16_t &port) {
    if (!sa) return false;
    if (sa->sa_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(sa);
        g = gid::from_ipv4(ntohl(in->sin_addr.s_addr));
        port = ntohs(in->sin_port);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(sa);
        g = gid::from_bytes(in6->sin6_addr.s6_addr);
        port = ntohs(in6->sin6_port);
        return true;
    }
    return false;
}

void gid_to_sa(const gid &g, uint16_t port, sockaddr_storage &out) {
    std::memset(&out, 0, sizeof(out));
    if (g.is_ipv4_mapped()) {
        auto *in = reinterpret_cast<sockaddr_in *>(&out);
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(g.ipv4());
        in->sin_port = htons(port);
    } else {
        auto *in6 = reinterpret_cast<sockaddr_in6 *>(&out);
        in6->sin6_family = AF_INET6;
        std::memcpy(in6->sin6_addr.s6_addr, g.raw.data(), 16);
        in6->sin6_port = htons(port);
    }
}

bool is_wildcard(const gid &g) {
    return g.is_zero() || (g.is_ipv4_mapped() && g.ipv4() == 0);
}

bool mac_usable(const std::optional<neigh_entry_view> &e) {
    return e && e->state != neigh_state::incomplete && e->state != neigh_state::failed &&
           e->state != neigh_state::none;
}

constexpr uint64_t timer_tick_ns = 1'000'000;           /* the CM's timers are milliseconds */
constexpr uint64_t request_mac_wait_ns = 3'000'000'000; /* a REQ's peer's MAC, at most */

} // namespace

cm_service::cm_service(engine &eng, const cm_config &cfg)
    : eng_(eng), cfg_(cfg), rng_(cfg.seed ? cfg.seed : std::random_device{}()) {
    cm_gsi::config gc;
    gc.recv_depth = cfg.gsi_recv_depth;
    gc.park_cap = cfg.mad_queue;
    gsi_ = std::make_unique<cm_gsi>(eng.dev(), *eng.neighbours(), gc);
    cm_agent::config ac;
    ac.seed = rng_();
    ac.max_half_open = cfg.max_half_open;
    ac.max_conns = cfg.max_conns;
    agent_ = std::make_unique<cm_agent>(static_cast<cm_agent::endpoint &>(*this), ac);
    next_sidr_id_ = uint32_t(rng_());
}

cm_service::~cm_service() {
    eng_.remove_poller(this);
    for (cm_id_impl *id : ids_)
        delete id;
    for (cm_id_impl *id : dead_)
        delete id;
}

/* ---------------------------------------------------------------- the loop */

unsigned cm_service::poll(uint64_t now_ns) {
    unsigned work = gsi_->poll(now_ns, [&](const gid &from, const gid &to, uint32_t src_qp,
                                           const uint8_t *mad, size_t len) {
        cm_peer p;
        p.addr = from;
        p.qpn = src_qp;
        p.local = to;
        agent_->receive(p, mad, len, now_ns);
    });
    if (now_ns >= next_tick_) {
        agent_->poll(now_ns);
        poll_ids(now_ns);
        next_tick_ = now_ns + timer_tick_ns;
        work++;
    }
    reap();
    return work;
}

void cm_service::reap() {
    for (size_t i = 0; i < dead_.size();) {
        if (dead_[i]->events_out.load() == 0) {
            delete dead_[i];
            dead_[i] = dead_.back();
            dead_.pop_back();
        } else {
            i++;
        }
    }
}

void cm_service::poll_ids(uint64_t now_ns) {
    std::vector<cm_id_impl *> due;
    for (cm_id_impl *id : ids_)
        if (id->state == cm_id_state::addr_query || id->state == cm_id_state::req_wait_mac ||
            (id->state == cm_id_state::connect && id->qp_type == qp_type::ud &&
             id->sidr_request_id))
            due.push_back(id);
    for (cm_id_impl *id : due) {
        switch (id->state) {
        case cm_id_state::addr_query: {
            std::optional<neigh_entry_view> e = nb().lookup(id->route.dgid);
            if (mac_usable(e)) {
                e->mac.copy_to(id->route.dmac);
                id->state = cm_id_state::addr_resolved;
                queue(id, cm_event_type::addr_resolved, 0);
            } else if (!e || e->state == neigh_state::failed || now_ns >= id->deadline) {
                id->state = cm_id_state::addr_bound;
                queue(id, cm_event_type::addr_error,
                      now_ns >= id->deadline ? -ETIMEDOUT : -EHOSTUNREACH);
            }
            break;
        }
        case cm_id_state::req_wait_mac: {
            /* The peer gave up on its REQ (REJ timeout) before we showed it:
             * forget it without a word. */
            if (id->conn && id->conn->state() == cm_state::idle) {
                destroy_id(id);
                break;
            }
            std::optional<neigh_entry_view> e = nb().lookup(id->route.dgid);
            if (mac_usable(e)) {
                e->mac.copy_to(id->route.dmac);
                deliver_request(id);
            } else if (!e || e->state == neigh_state::failed || now_ns >= id->deadline) {
                /* Never shown to the user: refuse and forget it. */
                if (id->conn) id->conn->reject(cm_rej_reason::no_resources);
                if (id->qp_type == qp_type::ud) {
                    build_cm_sidr_rep(id->sidr_mad, id->sidr_tid, id->sidr_request_id,
                                      cm_sidr_status::rejected, 0, id->service_id, 0);
                    send_mad(id->peer, id->sidr_mad);
                    own_.sidr_rep_tx++;
                }
                destroy_id(id);
            }
            break;
        }
        case cm_id_state::connect:
            sidr_timer(id, now_ns);
            break;
        default:
            break;
        }
    }
}

/* ---------------------------------------------------------------- events */

void cm_service::queue(cm_id_impl *id, cm_event_type t, int status, const uint8_t *priv,
                       size_t priv_len, cm_id_impl *listen_id) {
    auto *ev = new cm_event_impl;
    ev->id = id;
    ev->listen_id = listen_id;
    ev->event = t;
    ev->status = status;
    if (priv && priv_len) {
        priv_len = std::min(priv_len, sizeof(ev->priv));
        std::memcpy(ev->priv, priv, priv_len);
        ev->conn.private_data = ev->priv;
        ev->conn.private_data_len = uint8_t(priv_len);
        ev->ud.private_data = ev->priv;
        ev->ud.private_data_len = uint8_t(priv_len);
    }
    if (t == cm_event_type::established || t == cm_event_type::connect_request ||
        t == cm_event_type::connect_response) {
        ev->conn.responder_resources = id->param.responder_resources;
        ev->conn.initiator_depth = id->param.initiator_depth;
        ev->conn.retry_count = id->param.retry_count;
        ev->conn.rnr_retry_count = id->param.rnr_retry_count;
        ev->conn.srq = id->param.srq;
        ev->conn.flow_control = id->param.flow_control;
        ev->conn.qp_num = id->param.qp_num;
    }
    own_.events++;
    cm_channel_push(id->channel, ev);
}

cm_id_impl *cm_service::id_of(const cm_conn &c) const {
    auto it = by_comm_.find(c.local_comm_id());
    return it == by_comm_.end() ? nullptr : it->second;
}

void cm_service::send_mad(const cm_peer &to, const uint8_t *mad) {
    gsi_->send(to.addr, to.qpn, to.local, mad, now());
}

/* A QP the user made with plain create_qp is still in RESET: INIT first. */
bool cm_service::to_init(qp *q, const qp_connect_attr &a) {
    qp_attr at;
    if (query_qp(q, &at, 0, nullptr) != verbs_error::ok) return false;
    return at.qp_state != qp_state::reset || modify_qp_to_init(q, a) == verbs_error::ok;
}

qp_connect_attr cm_service::qp_attr_for(const cm_id_impl *id) const {
    qp_connect_attr a;
    a.path_mtu = id->route.path_mtu;
    a.ah_attr.grh.dgid = id->route.dgid;
    a.ah_attr.grh.sgid_index = id->route.sgid_index;
    a.ah_attr.grh.flow_label = id->route.flow_label;
    a.ah_attr.grh.hop_limit = id->route.hop_limit;
    a.ah_attr.grh.traffic_class = id->route.traffic_class;
    std::memcpy(a.ah_attr.dmac, id->route.dmac, 6);
    a.min_rnr_timer = cfg_.min_rnr_timer;
    a.timeout = cfg_.local_ack_timeout;
    a.qkey = rdma_udp_qkey;
    return a;
}

/* The attributes of a connected id's QP, as negotiated so far (cm.c
 * cm_init_qp_rtr_attr / cm_init_qp_rts_attr, cma.c rdma_init_qp_attr):
 * the peer's QPN; we send from the PSN the peer's message named and
 * receive from the one ours named (seq_num); the READ/atomic depths and
 * retry counts of id->param, which holds the REQ's, seen from us, until
 * accept() (passive) and the REP's once it came (active). */
qp_connect_attr cm_service::negotiated(const cm_id_impl *id) const {
    qp_connect_attr a = qp_attr_for(id);
    const cm_conn &c = *id->conn;
    a.dest_qp_num = c.remote_qpn();
    a.sq_psn = c.remote_psn();
    a.rq_psn = id->seq_num;
    a.max_dest_rd_atomic = std::min<uint8_t>(id->param.responder_resources, rd_limit());
    a.max_rd_atomic = std::min<uint8_t>(id->param.initiator_depth, rd_limit());
    a.retry_cnt = c.req().retry_count;
    if (c.active()) {
        a.rnr_retry = id->param.rnr_retry_count; /* the REP's */
    } else {
        const cm_req_params &rq = c.req();
        a.rnr_retry = rq.rnr_retry_count;
        a.timeout = rq.path.local_ack_timeout ? rq.path.local_ack_timeout : cfg_.local_ack_timeout;
    }
    return a;
}

/* Active side, the REP arrived (cm.c cm_rep_handler, cma.c
 * cma_rep_recv): what the peer offers becomes ours, seen from our side
 * (its initiator depth our responder resources and the other way round),
 * and the QP goes RTR and RTS before the RTU leaves. */
bool cm_service::qp_to_rts(cm_conn &c, const cm_rep &rep) {
    cm_id_impl *id = id_of(c);
    if (!id) return false;
    id->param.responder_resources = rep.initiator_depth;
    id->param.initiator_depth = rep.responder_resources;
    id->param.rnr_retry_count = rep.rnr_retry_count();
    id->param.srq = rep.srq();
    id->param.qp_num = rep.local_qpn();
    if (!id->qp) return true; /* the user's QP, announced by qp_num: CONNECT_RESPONSE */
    const qp_connect_attr a = negotiated(id);
    if (!to_init(id->qp, a)) return false;
    if (modify_qp_to_rtr(id->qp, a) != verbs_error::ok ||
        modify_qp_to_rts(id->qp, a) != verbs_error::ok)
        return false;
    seed_rtt(c, id->qp);
    return true;
}

/* The handshake was the connection's first round trip with the peer: the
 * QP's RTT estimate starts from it rather than from the tail-loss probe's
 * 1 ms guess (loss_seed_rtt). Active side on the REP (REQ -> REP), passive
 * side on the RTU (REP -> RTU; its QP went RTS in accept()). */
void cm_service::seed_rtt(const cm_conn &c, qp *q) {
    if (q && c.handshake_rtt_ns()) loss_seed_rtt(q, c.handshake_rtt_ns());
}

void cm_service::qp_established(cm_conn &c) {
    const cm_id_impl *id = id_of(c);
    if (id) seed_rtt(c, id->qp);
}

/* librdmacm: an id with no QP of rdma_create_qp's gets CONNECT_RESPONSE;
 * its user moves the QP (init_qp_attr) and calls rdma_establish. */
bool cm_service::user_moves_qp(cm_conn &c) {
    const cm_id_impl *id = id_of(c);
    return id && !id->qp;
}

void cm_service::qp_to_error(cm_conn &c) {
    cm_id_impl *id = id_of(c);
    if (!id || !id->qp) return;
    qp_attr at;
    at.qp_state = qp_state::err;
    modify_qp(id->qp, at, qp_attr_state);
}

void cm_service::event(cm_conn &c, cm_conn_event e) {
    if (e == cm_conn_event::connect_request) return on_connect_request(c);
    cm_id_impl *id = id_of(c);
    if (!id) return;
    switch (e) {
    case cm_conn_event::established:
        id->state = cm_id_state::established;
        /* The active side gets the REP's private data (rdma_cm: all 196 bytes). */
        if (c.active())
            queue(id, cm_event_type::established, 0, c.last_private(), c.last_private_len());
        else
            queue(id, cm_event_type::established, 0);
        return;
    case cm_conn_event::connect_response:
        queue(id, cm_event_type::connect_response, 0, c.last_private(), c.last_private_len());
        return;
    case cm_conn_event::rejected:
        /* A request not shown to the user yet: poll_ids forgets it. */
        if (id->state == cm_id_state::req_wait_mac) return;
        id->state = cm_id_state::done;
        queue(id, cm_event_type::rejected, c.last_rej_reason(), c.last_private(),
              c.last_private_len());
        return;
    case cm_conn_event::unreachable:
        id->state = cm_id_state::done;
        queue(id, cm_event_type::unreachable, -ETIMEDOUT);
        return;
    case cm_conn_event::disconnected:
        /* Once per connection (cma.c: only from RDMA_CM_CONNECT). */
        if (id->disconnected_sent) return;
        id->disconnected_sent = true;
        id->state = cm_id_state::disconnect;
        queue(id, cm_event_type::disconnected, 0);
        return;
    case cm_conn_event::timewait_exit:
        id->state = cm_id_state::done;
        queue(id, cm_event_type::timewait_exit, 0);
        return;
    default:
        return;
    }
}

/* ---------------------------------------------------------------- the passive side */

int cm_service::sgid_index(const gid &g) const {
    for (int i = 0; i < 16; i++) {
        gid t;
        if (query_gid(dev(), 1, i, &t) != verbs_error::ok) break;
        if (t == g) return i;
    }
    return -1;
}

void cm_service::fill_route_from(cm_id_impl *id, const gid &local, uint16_t local_port,
                                 const gid &peer, uint16_t peer_port) {
    id->route.sgid = local;
    id->route.dgid = peer;
    const int idx = sgid_index(local);
    id->route.sgid_index = uint8_t(idx < 0 ? 0 : idx);
    gid_to_sa(local, local_port, id->route.src_addr);
    gid_to_sa(peer, peer_port, id->route.dst_addr);
    id->route.num_paths = 1;
}

/* IBTA A11 / cma.c: the REQ's rdma_cm IP header must name one of our
 * addresses (the one a bound listener listens on) as its destination and
 * the REQ's sender as its source; Linux (cma_get_net_dev,
 * validate_net_dev) rejects a REQ whose addresses are not for the
 * interface it arrived on. */
bool cm_service::check_ip_hdr(const cm_id_impl *listener, const uint8_t *priv, const gid &peer_gid,
                              cm_id_impl *child) {
    cma_ip_hdr h;
    std::memcpy(&h, priv, sizeof(h));
    if (h.version != cma_ip_hdr::cma_version) return false;
    gid src, dst;
    if (h.ip_ver() == 4) {
        src = gid::from_ipv4(h.src_ipv4());
        dst = gid::from_ipv4(h.dst_ipv4());
    } else if (h.ip_ver() == 6) {
        src = gid::from_bytes(h.src_addr);
        dst = gid::from_bytes(h.dst_addr);
    } else {
        return false;
    }
    if (!(src == peer_gid) || !nb().addrs().is_local(dst) || sgid_index(dst) < 0) return false;
    if (!listener->wildcard && !(listener->bound == dst)) return false;
    fill_route_from(child, dst, listener->port, src, h.src_port());
    return true;
}

/* A REQ for a service someone listens on (the agent checked that). */
void cm_service::on_connect_request(cm_conn &c) {
    const cm_req_params &r = c.req();
    auto *listener = static_cast<cm_id_impl *>(agent_->listener_context(r.service_id));
    if (!listener || listener->state != cm_id_state::listen || listener->qp_type != qp_type::rc) {
        c.reject(cm_rej_reason::invalid_service_id);
        own_.req_no_listener++;
        return;
    }
    unsigned pending = 0;
    for (const cm_id_impl *id : ids_)
        pending += id->listener == listener && (id->state == cm_id_state::req_wait_mac ||
                                                id->state == cm_id_state::connect_request);
    if (listener->backlog > 0 && pending >= unsigned(listener->backlog)) {
        c.reject(cm_rej_reason::no_resources);
        own_.req_half_open_full++;
        return;
    }
    auto *child = new cm_id_impl;
    child->svc = this;
    child->channel = listener->channel;
    child->context = listener->context;
    child->ps = listener->ps;
    child->qp_type = listener->qp_type;
    child->verbs = dev();
    child->listener = listener;
    child->accepted = true;
    child->port = listener->port;
    child->service_id = r.service_id;
    const gid peer = r.path.local_gid; /* the REQ's sender's (its "local") */
    const gid ours = r.path.remote_gid;
    const uint8_t *priv = c.last_private();
    size_t user_off = 0;
    if (service_id_is_ip(r.service_id)) {
        if (!check_ip_hdr(listener, priv, peer, child)) {
            delete child;
            c.reject(cm_rej_reason::consumer_defined); /* cm.c cm_destroy_id after the handler */
            own_.req_bad_ip_hdr++;
            return;
        }
        user_off = sizeof(cma_ip_hdr);
    } else {
        if (sgid_index(ours) < 0) {
            delete child;
            c.reject(cm_rej_reason::invalid_gid);
            own_.req_bad_ip_hdr++;
            return;
        }
        fill_route_from(child, ours, 0, peer, 0);
    }
    child->req_priv_len = uint8_t(std::min<size_t>(c.last_private_len(), 92) - user_off);
    std::memcpy(child->req_priv, priv + user_off, child->req_priv_len);
    child->route.flow_label = r.path.flow_label;
    child->route.traffic_class = r.path.traffic_class;
    child->route.hop_limit = r.path.hop_limit ? r.path.hop_limit : 64;
    device_attr da;
    query_device(dev(), &da);
    child->route.path_mtu = mtu(std::min<unsigned>(r.path_mtu, unsigned(da.max_mtu)));
    if (!mtu_valid(child->route.path_mtu)) child->route.path_mtu = mtu::mtu_1024;
    /* As seen from us (cm.c cm_format_req_event). */
    child->param.responder_resources = r.initiator_depth;
    child->param.initiator_depth = r.responder_resources;
    child->param.retry_count = r.retry_count;
    child->param.rnr_retry_count = r.rnr_retry_count;
    child->param.srq = r.srq;
    child->param.qp_num = r.local_qpn;
    child->seq_num = uint32_t(rng_()) & 0xffffff; /* our REP's Starting PSN */
    child->peer.addr = peer;
    child->peer.local = ours;
    child->conn = &c;
    by_comm_[c.local_comm_id()] = child;
    ids_.insert(child);
    child->channel->ids++;
    if (std::optional<mac_addr> mac = nb().resolve(peer)) {
        mac->copy_to(child->route.dmac);
        deliver_request(child);
    } else {
        child->state = cm_id_state::req_wait_mac;
        child->deadline = now() + request_mac_wait_ns;
    }
}

void cm_service::deliver_request(cm_id_impl *child) {
    child->state = cm_id_state::connect_request;
    if (child->qp_type == qp_type::ud) {
        auto *ev = new cm_event_impl;
        ev->id = child;
        ev->listen_id = child->listener;
        ev->event = cm_event_type::connect_request;
        std::memcpy(ev->priv, child->req_priv, child->req_priv_len);
        ev->ud.private_data = ev->priv;
        ev->ud.private_data_len = child->req_priv_len;
        ev->ud.ah_attr = qp_attr_for(child).ah_attr;
        own_.events++;
        cm_channel_push(child->channel, ev);
        return;
    }
    queue(child, cm_event_type::connect_request, 0, child->req_priv, child->req_priv_len,
          child->listener);
}

/* ---------------------------------------------------------------- ids */

verbs_error cm_service::create_id(cm_event_channel *ch, cm_id **out, void *ctx,
                                  rdma_port_space ps) {
    if (ps != rdma_port_space::tcp && ps != rdma_port_space::udp && ps != rdma_port_space::ib)
        return verbs_error::notsup;
    auto *id = new cm_id_impl;
    id->svc = this;
    id->channel = ch;
    id->context = ctx;
    id->ps = ps;
    id->qp_type = ps == rdma_port_space::udp ? qp_type::ud : qp_type::rc;
    id->verbs = dev();
    ids_.insert(id);
    ch->ids++;
    *out = id;
    return verbs_error::ok;
}

void cm_service::detach_conn(cm_id_impl *id) {
    if (!id->conn) return;
    cm_conn *c = id->conn;
    id->conn = nullptr;
    by_comm_.erase(c->local_comm_id());
    agent_->destroy(c, now()); /* REJ, DREQ or DREP as cm.c's cm_destroy_id */
}

verbs_error cm_service::destroy_id(cm_id_impl *id) {
    if (!ids_.count(id)) return verbs_error::inval;
    if (id->state == cm_id_state::listen) agent_->unlisten(id->service_id);
    /* Requests not yet shown to the user die with their listener. */
    std::vector<cm_id_impl *> orphans;
    for (cm_id_impl *other : ids_)
        if (other->listener == id) {
            other->listener = nullptr;
            if (other->state == cm_id_state::req_wait_mac) orphans.push_back(other);
        }
    /* Its unread events go with it (ucma_cleanup_ctx_events): handed over
     * later they would name an id the user has let go, with no context
     * (rping's CM thread crashed on a DISCONNECTED queued before its
     * rdma_destroy_id). Requests queued for a listener die as unshown ones
     * do. */
    own_.events_purged += cm_channel_purge(id->channel, id, orphans);
    for (cm_id_impl *o : orphans) {
        if (o->conn) o->conn->reject(cm_rej_reason::consumer_defined);
        destroy_id(o);
    }
    detach_conn(id);
    sidr_forget(id);
    ids_.erase(id);
    id->destroyed = true;
    id->channel->ids--;
    dead_.push_back(id); /* freed by poll() once its events are acknowledged */
    return verbs_error::ok;
}

bool cm_service::port_taken(rdma_port_space ps, uint16_t port, const cm_id_impl *except) const {
    for (const cm_id_impl *id : ids_)
        if (id != except && id->ps == ps && id->port == port && !id->accepted &&
            id->state != cm_id_state::idle)
            return true;
    return false;
}

uint16_t cm_service::pick_port(rdma_port_space ps) {
    /* The kernel's ephemeral range (ip_local_port_range), from a random
     * point; 0 when every port in it is taken. */
    constexpr uint32_t first = 32768, count = 60999 - 32768 + 1;
    const uint32_t start = uint32_t(rng_() % count);
    for (uint32_t i = 0; i < count; i++) {
        const uint16_t p = uint16_t(first + (start + i) % count);
        if (!port_taken(ps, p, nullptr)) return p;
    }
    return 0;
}

verbs_error cm_service::bind_addr(cm_id_impl *id, const sockaddr *addr) {
    if (id->state != cm_id_state::idle) return verbs_error::inval;
    gid g;
    uint16_t port;
    if (!sa_to_gid(addr, g, port)) return verbs_error::inval;
    id->wildcard = is_wildcard(g);
    if (!id->wildcard && (!nb().addrs().is_local(g) || sgid_index(g) < 0))
        return verbs_error::inval; /* EADDRNOTAVAIL */
    if (port == 0) {
        if ((port = pick_port(id->ps)) == 0) return verbs_error::busy; /* EADDRINUSE */
    } else if (port_taken(id->ps, port, id)) {
        return verbs_error::busy; /* EADDRINUSE */
    }
    id->bound = g;
    id->port = port;
    gid_to_sa(g, port, id->route.src_addr);
    id->route.sgid = g;
    id->state = cm_id_state::addr_bound;
    return verbs_error::ok;
}

verbs_error cm_service::resolve_addr(cm_id_impl *id, const sockaddr *src, const sockaddr *dst,
                                     int timeout_ms) {
    gid dg;
    uint16_t dport;
    if (!sa_to_gid(dst, dg, dport) || is_wildcard(dg)) return verbs_error::inval;
    if (id->state == cm_id_state::idle) {
        sockaddr_storage any{};
        if (!src) {
            any.ss_family = dst->sa_family;
            src = reinterpret_cast<const sockaddr *>(&any);
        }
        if (verbs_error e = bind_addr(id, src); e != verbs_error::ok) return e;
    }
    if (id->state != cm_id_state::addr_bound) return verbs_error::inval;
    gid sg = id->bound;
    if (id->wildcard) {
        if (dg.is_ipv4_mapped()) {
            std::optional<uint32_t> s = nb().addrs().ipv4_source_for(dg.ipv4());
            if (!s) return verbs_error::inval;
            sg = gid::from_ipv4(*s);
        } else {
            sg = nb().addrs().ipv6_source_for(dg.raw.data());
        }
    }
    if (sg.is_ipv4_mapped() != dg.is_ipv4_mapped() || sgid_index(sg) < 0) return verbs_error::inval;
    fill_route_from(id, sg, id->port, dg, dport);
    if (std::optional<mac_addr> mac = nb().resolve(dg)) {
        mac->copy_to(id->route.dmac);
        id->state = cm_id_state::addr_resolved;
        queue(id, cm_event_type::addr_resolved, 0);
        return verbs_error::ok;
    }
    id->state = cm_id_state::addr_query;
    id->deadline = now() + uint64_t(timeout_ms > 0 ? timeout_ms : 2000) * 1'000'000;
    return verbs_error::ok;
}

/* RoCE has no SA: the path is the GIDs, the MAC, the MTU, and rdma_cm's
 * flow label from the ports (cma.c cma_get_roce_udp_flow_label). */
verbs_error cm_service::resolve_route(cm_id_impl *id) {
    if (id->state != cm_id_state::addr_resolved) return verbs_error::inval;
    device_attr da;
    query_device(dev(), &da);
    id->route.path_mtu = da.max_mtu;
    uint16_t dport = ntohs(id->route.dst_addr.ss_family == AF_INET
                               ? reinterpret_cast<sockaddr_in *>(&id->route.dst_addr)->sin_port
                               : reinterpret_cast<sockaddr_in6 *>(&id->route.dst_addr)->sin6_port);
    id->route.flow_label = calc_flow_label_cm(id->port, dport);
    id->route.hop_limit = 64;
    id->route.num_paths = 1;
    id->service_id = rdma_service_id(id->ps, dport);
    id->state = cm_id_state::route_resolved;
    queue(id, cm_event_type::route_resolved, 0);
    return verbs_error::ok;
}

verbs_error cm_service::create_qp(cm_id_impl *id, pd *p, qp_init_attr *attr) {
    if (!p || !attr || id->qp) return verbs_error::inval;
    attr->qp_type = id->qp_type;
    verbs_error e = verbs_error::ok;
    qp *q = uroce::create_qp(p, *attr, &e);
    if (!q) return e;
    qp_connect_attr a = qp_attr_for(id);
    /* librdmacm: a connected QP waits in INIT for the handshake; a UD one
     * goes straight to RTS with rdma_cm's Q_Key (ucma_init_ud_qp). */
    e = id->qp_type == qp_type::ud ? connect_qp(q, a) : modify_qp_to_init(q, a);
    if (e != verbs_error::ok) {
        uroce::destroy_qp(q);
        return e;
    }
    id->qp = q;
    id->pd = p;
    id->send_cq = attr->send_cq;
    id->recv_cq = attr->recv_cq;
    return verbs_error::ok;
}

uint8_t cm_service::rd_limit() const {
    device_attr da;
    query_device(dev(), &da);
    return uint8_t(std::min<uint32_t>(da.max_qp_rd_atom, 255));
}

uint64_t cm_service::ca_guid() const {
    /* EUI-64 of the port's MAC, as a NIC's node GUID */
    const uint8_t *m = eng_.mac();
    return uint64_t(m[0] ^ 0x02) << 56 | uint64_t(m[1]) << 48 | uint64_t(m[2]) << 40 |
           0xfffeull << 24 | uint64_t(m[3]) << 16 | uint64_t(m[4]) << 8 | m[5];
}

verbs_error cm_service::connect(cm_id_impl *id, const cm_conn_param *param) {
    if (!param || id->state != cm_id_state::route_resolved) return verbs_error::inval;
    if (!id->qp && !param->qp_num) return verbs_error::inval;
    if (id->qp_type == qp_type::ud) return sidr_connect(id, param);
    const bool ip = service_id_is_ip(id->service_id);
    const size_t max = ip ? cm_req_private_max : 92;
    if (param->private_data_len > max || (param->private_data_len && !param->private_data))
        return verbs_error::inval;
    uint8_t priv[92] = {};
    size_t off = 0;
    if (ip) {
        cma_ip_hdr h;
        build_cma_ip_hdr(h, id->route.sgid, id->port, id->route.dgid);
        std::memcpy(priv, &h, sizeof(h));
        off = sizeof(h);
    }
    if (param->private_data_len)
        std::memcpy(priv + off, param->private_data, param->private_data_len);
    cm_req_params p;
    p.service_id = id->service_id;
    p.local_ca_guid = ca_guid();
    p.local_qpn = id->qp ? qp_num(id->qp) : param->qp_num;
    p.responder_resources = param->responder_resources;
    p.initiator_depth = param->initiator_depth;
    p.transport = cm_transport::rc;
    p.remote_cm_response_timeout = cfg_.response_timeout;
    p.local_cm_response_timeout = cfg_.response_timeout;
    p.starting_psn = uint32_t(rng_()) & 0xffffff;
    p.retry_count = param->retry_count & 7;
    p.rnr_retry_count = param->rnr_retry_count & 7;
    p.max_cm_retries = cfg_.max_cm_retries & 15;
    p.path_mtu = uint8_t(id->route.path_mtu);
    p.srq = param->srq;
    p.path.local_gid = id->route.sgid;
    p.path.remote_gid = id->route.dgid;
    p.path.flow_label = id->route.flow_label;
    p.path.traffic_class = id->route.traffic_class;
    p.path.hop_limit = id->route.hop_limit;
    p.path.local_ack_timeout = cfg_.local_ack_timeout;
    p.private_data = {priv, off + param->private_data_len};
    id->param = *param;
    id->param.private_data = nullptr;
    id->param.private_data_len = 0;
    id->seq_num = p.starting_psn;
    cm_peer peer;
    peer.addr = id->route.dgid;
    peer.local = id->route.sgid;
    id->peer = peer;
    id->state = cm_id_state::connect;
    cm_conn *c = agent_->connect(peer, p, now());
    if (!c) {
        id->state = cm_id_state::route_resolved;
        return verbs_error::nomem;
    }
    id->conn = c;
    by_comm_[c->local_comm_id()] = id;
    return verbs_error::ok;
}

verbs_error cm_service::listen(cm_id_impl *id, int backlog) {
    if (id->state == cm_id_state::idle) {
        sockaddr_in any{};
        any.sin_family = AF_INET;
        if (verbs_error e = bind_addr(id, reinterpret_cast<const sockaddr *>(&any));
            e != verbs_error::ok)
            return e;
    }
    if (id->state != cm_id_state::addr_bound) return verbs_error::inval;
    id->service_id = rdma_service_id(id->ps, id->port);
    /* Two ids on one port (wildcard and an address, or two addresses)
     * would share a service ID: one listener per port, as a bound socket. */
    if (!agent_->listen(id->service_id, id)) return verbs_error::busy;
    id->backlog = backlog;
    id->state = cm_id_state::listen;
    return verbs_error::ok;
}

verbs_error cm_service::accept(cm_id_impl *id, const cm_conn_param *param) {
    if (id->state != cm_id_state::connect_request) return verbs_error::inval;
    cm_conn_param none;
    if (!param) param = &none;
    if (!id->qp && !param->qp_num) return verbs_error::inval;
    if (id->qp_type == qp_type::ud) return sidr_accept(id, param);
    if (param->private_data_len > cm_rep_private_max ||
        (param->private_data_len && !param->private_data))
        return verbs_error::inval;
    cm_conn *c = id->conn;
    if (!c) return verbs_error::inval;
    const cm_conn_param asked = id->param;
    id->param.responder_resources = param->responder_resources;
    id->param.initiator_depth = param->initiator_depth;
    if (id->qp) {
        /* rdma_accept: RTR and RTS before the REP leaves (ucma_accept). */
        const qp_connect_attr a = negotiated(id);
        verbs_error e = to_init(id->qp, a) ? verbs_error::ok : verbs_error::inval;
        if (e == verbs_error::ok) e = modify_qp_to_rtr(id->qp, a);
        if (e == verbs_error::ok) e = modify_qp_to_rts(id->qp, a);
        if (e != verbs_error::ok) {
            id->param = asked;
            return e;
        }
    }
    cm_rep_params rp;
    rp.local_qpn = id->qp ? qp_num(id->qp) : param->qp_num;
    rp.starting_psn = id->seq_num;
    rp.responder_resources = param->responder_resources;
    rp.initiator_depth = param->initiator_depth;
    rp.target_ack_delay = 0;
    rp.rnr_retry_count = param->rnr_retry_count & 7;
    rp.srq = param->srq;
    rp.local_ca_guid = ca_guid();
    rp.private_data = {static_cast<const uint8_t *>(param->private_data), param->private_data_len};
    if (!c->accept(rp, now())) {
        id->param = asked;
        return verbs_error::inval;
    }
    id->state = cm_id_state::connect;
    return verbs_error::ok;
}

verbs_error cm_service::reject(cm_id_impl *id, const void *pd, uint8_t len) {
    if (id->state != cm_id_state::connect_request) return verbs_error::inval;
    if (len && !pd) return verbs_error::inval;
    if (id->qp_type == qp_type::ud) return sidr_reject(id, pd, len);
    if (len > cm_rej_private_max) return verbs_error::inval;
    if (!id->conn ||
        !id->conn->reject(cm_rej_reason::consumer_defined, {static_cast<const uint8_t *>(pd), len}))
        return verbs_error::inval;
    id->state = cm_id_state::done;
    return verbs_error::ok;
}

verbs_error cm_service::disconnect(cm_id_impl *id) {
    if (id->qp_type == qp_type::ud) {
        if (id->state != cm_id_state::established) return verbs_error::inval;
        id->state = cm_id_state::done;
        return verbs_error::ok;
    }
    if (!id->conn || !id->conn->disconnect(now())) return verbs_error::inval;
    return verbs_error::ok;
}

/* rdma_establish: after CONNECT_RESPONSE the user moved its QP; the RTU
 * (no ESTABLISHED event follows, as librdmacm raises none for it). */
verbs_error cm_service::establish(cm_id_impl *id) {
    if (id->qp || !id->conn || !id->conn->establish()) return verbs_error::inval;
    id->state = cm_id_state::established;
    return verbs_error::ok;
}

/* rdma_init_qp_attr (cma.c, cm.c cm_init_qp_*_attr): what a QP the user
 * moves itself takes for the state it asks for, from what the handshake
 * negotiated so far: the values our own QP moves use (negotiated()). */
verbs_error cm_service::init_qp_attr(const cm_id_impl *id, qp_attr *attr, unsigned *mask) const {
    if (!attr || !mask) return verbs_error::inval;
    const qp_state want = attr->qp_state;
    unsigned m = qp_attr_state;
    if (id->qp_type == qp_type::ud) {
        /* cma_ib_init_qp_attr, ucma_init_ud_qp: a Q_Key in INIT, RTS from PSN 0 */
        if (want == qp_state::init) {
            attr->pkey_index = 0;
            attr->port_num = id->port_num;
            attr->qkey = rdma_udp_qkey;
            m |= qp_attr_pkey_index | qp_attr_port | qp_attr_qkey;
        } else if (want == qp_state::rts) {
            attr->sq_psn = 0;
            m |= qp_attr_sq_psn;
        } else if (want != qp_state::rtr) {
            return verbs_error::inval;
        }
        *mask = m;
        return verbs_error::ok;
    }
    const cm_state cs = id->conn ? id->conn->state() : cm_state::idle;
    if (want == qp_state::init) {
        /* no connection yet: cma_ib_init_qp_attr, no remote access; else
         * cm_init_qp_init_attr: WRITE, and READ/atomic when we take any */
        attr->pkey_index = 0;
        attr->port_num = id->port_num;
        attr->qp_access_flags = 0;
        if (id->conn && cs != cm_state::idle)
            attr->qp_access_flags =
                access_remote_write |
                (id->param.responder_resources ? access_remote_read | access_remote_atomic : 0);
        *mask = m | qp_attr_access_flags | qp_attr_pkey_index | qp_attr_port;
        return verbs_error::ok;
    }
    /* RTR and RTS once the peer's QPN is known: the passive side from the
     * REQ, the active side from the REP. */
    const bool known =
        id->conn &&
        (id->conn->active() ? cs == cm_state::rep_rcvd || cs == cm_state::established
                            : cs == cm_state::req_rcvd || cs == cm_state::rep_sent ||
                                  cs == cm_state::mra_rep_rcvd || cs == cm_state::established);
    if (!known || (want != qp_state::rtr && want != qp_state::rts)) return verbs_error::inval;
    const qp_connect_attr a = negotiated(id);
    if (want == qp_state::rtr) {
        attr->ah_attr = a.ah_attr;
        attr->path_mtu = a.path_mtu;
        attr->dest_qp_num = a.dest_qp_num;
        attr->rq_psn = a.rq_psn;
        attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
        attr->min_rnr_timer = a.min_rnr_timer;
        m |= qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn |
             qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer;
    } else {
        attr->sq_psn = a.sq_psn;
        attr->timeout = a.timeout;
        attr->retry_cnt = a.retry_cnt;
        attr->rnr_retry = a.rnr_retry;
        attr->max_rd_atomic = a.max_rd_atomic;
        m |= qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry |
             qp_attr_max_qp_rd_atomic;
    }
    *mask = m;
    return verbs_error::ok;
}

cm_counters_snapshot cm_service::counters() const {
    cm_counters_snapshot s = own_;
    const cm_msg_counters &m = agent_->msg_counters();
    const cm_agent_counters &a = agent_->counters();
    const cm_gsi_counters &g = gsi_->counters();
    s.mad_rx = g.rx;
    s.mad_tx = g.tx;
    s.mad_rx_error = g.rx_error;
    s.mad_parked = g.parked;
    s.mad_unresolved = g.unresolved;
    s.mad_queue_full = g.queue_full;
    for (uint64_t n : a.mad_refused)
        s.mad_refused += n;
    s.mad_short = a.mad_refused[size_t(mad_error::short_mad)];
    s.mad_bad_base_version = a.mad_refused[size_t(mad_error::bad_base_version)];
    s.mad_not_cm_class = a.mad_refused[size_t(mad_error::not_cm_class)];
    s.mad_bad_class_version = a.mad_refused[size_t(mad_error::bad_class_version)];
    s.mad_bad_method = a.mad_refused[size_t(mad_error::bad_method)];
    s.mad_unknown_attribute = a.mad_refused[size_t(mad_error::unknown_attribute)];
    auto at = [](cm_attr x) { return unsigned(x) - unsigned(cm_attr::req); };
    s.req_rx = m.received[at(cm_attr::req)];
    s.rep_rx = m.received[at(cm_attr::rep)];
    s.rtu_rx = m.received[at(cm_attr::rtu)];
    s.rej_rx = m.received[at(cm_attr::rej)];
    s.mra_rx = m.received[at(cm_attr::mra)];
    s.dreq_rx = m.received[at(cm_attr::dreq)];
    s.drep_rx = m.received[at(cm_attr::drep)];
    s.sidr_req_rx = m.received[at(cm_attr::sidr_req)];
    s.sidr_rep_rx = m.received[at(cm_attr::sidr_rep)];
    s.req_tx = m.sent[at(cm_attr::req)];
    s.rep_tx = m.sent[at(cm_attr::rep)];
    s.rtu_tx = m.sent[at(cm_attr::rtu)];
    s.rej_tx = m.sent[at(cm_attr::rej)];
    s.mra_tx = m.sent[at(cm_attr::mra)];
    s.dreq_tx = m.sent[at(cm_attr::dreq)];
    s.drep_tx = m.sent[at(cm_attr::drep)];
    s.retries += m.retries;
    s.duplicates += m.duplicates;
    s.unexpected += m.unexpected;
    s.timeouts += m.timeouts;
    s.no_conn = a.drops[size_t(cm_drop::no_conn)];
    s.req_no_listener += a.drops[size_t(cm_drop::req_no_listener)];
    s.req_half_open_full += a.drops[size_t(cm_drop::req_half_open_full)];
    s.req_not_rc = a.drops[size_t(cm_drop::req_not_rc)];
    s.stale_dreq = a.drops[size_t(cm_drop::stale_dreq)];
    s.unexpected += a.drops[size_t(cm_drop::not_sent)] + a.drops[size_t(cm_drop::sidr_unhandled)];
    s.conns_created = a.conns_created;
    s.conns_freed = a.conns_freed;
    return s;
}

/* ---------------------------------------------------------------- the public API */

namespace {
cm_id_impl *impl(cm_id *id) {
    return static_cast<cm_id_impl *>(id);
}
} // namespace

cm_service *open_cm(engine &eng, const cm_config &cfg, verbs_error *err) {
    auto fail = [err](verbs_error e) -> cm_service * {
        if (err) *err = e;
        return nullptr;
    };
    if (!eng.dev() || !eng.neighbours()) return fail(verbs_error::inval);
    auto *cm = new cm_service(eng, cfg);
    if (cm->error() != verbs_error::ok) {
        verbs_error e = cm->error();
        delete cm;
        return fail(e);
    }
    if (!eng.add_poller(cm)) {
        delete cm;
        return fail(verbs_error::busy);
    }
    if (err) *err = verbs_error::ok;
    return cm;
}

verbs_error close_cm(cm_service *cm) {
    if (!cm) return verbs_error::inval;
    if (cm->channels) return verbs_error::busy;
    delete cm;
    return verbs_error::ok;
}

cm_counters_snapshot cm_counters(const cm_service *cm) {
    return cm ? cm->counters() : cm_counters_snapshot{};
}

void cm_print_counters(const cm_service *cm, FILE *f) {
    if (!cm) return;
    const cm_counters_snapshot s = cm->counters();
#define UROCE_X(name, desc)                                                                        \
    if (s.name) std::fprintf(f, "cm %-22s %12llu  %s\n", #name, (unsigned long long)s.name, desc);
    UROCE_CM_SERVICE_COUNTERS(UROCE_X)
#undef UROCE_X
}

size_t cm_connection_count(const cm_service *cm) {
    return cm ? cm->conn_count() : 0;
}

bool cm_service::output_pending() const {
    return gsi_->unsent() > 0 || dev()->tx_queued() > 0;
}

bool cm_output_pending(const cm_service *cm) {
    return cm && cm->output_pending();
}

unsigned cm_poll(cm_service *cm) {
    return cm ? cm->poll(cm->now()) : 0;
}

verbs_error create_id(cm_event_channel *ch, cm_id **id, void *context, rdma_port_space ps) {
    if (!ch || !id) return verbs_error::inval;
    return ch->svc->create_id(ch, id, context, ps);
}
verbs_error destroy_id(cm_id *id) {
    return id ? impl(id)->svc->destroy_id(impl(id)) : verbs_error::inval;
}
verbs_error bind_addr(cm_id *id, const sockaddr *addr) {
    return id ? impl(id)->svc->bind_addr(impl(id), addr) : verbs_error::inval;
}
verbs_error resolve_addr(cm_id *id, const sockaddr *src, const sockaddr *dst, int timeout_ms) {
    return id ? impl(id)->svc->resolve_addr(impl(id), src, dst, timeout_ms) : verbs_error::inval;
}
verbs_error resolve_route(cm_id *id, int) {
    return id ? impl(id)->svc->resolve_route(impl(id)) : verbs_error::inval;
}
verbs_error create_qp(cm_id *id, pd *p, qp_init_attr *attr) {
    return id ? impl(id)->svc->create_qp(impl(id), p, attr) : verbs_error::inval;
}
void destroy_qp(cm_id *id) {
    if (!id || !id->qp) return;
    uroce::destroy_qp(id->qp);
    id->qp = nullptr;
}
verbs_error connect(cm_id *id, const cm_conn_param *param) {
    return id ? impl(id)->svc->connect(impl(id), param) : verbs_error::inval;
}
verbs_error listen(cm_id *id, int backlog) {
    return id ? impl(id)->svc->listen(impl(id), backlog) : verbs_error::inval;
}
verbs_error accept(cm_id *id, const cm_conn_param *param) {
    return id ? impl(id)->svc->accept(impl(id), param) : verbs_error::inval;
}
verbs_error reject(cm_id *id, const void *private_data, uint8_t private_data_len) {
    return id ? impl(id)->svc->reject(impl(id), private_data, private_data_len)
              : verbs_error::inval;
}
verbs_error disconnect(cm_id *id) {
    return id ? impl(id)->svc->disconnect(impl(id)) : verbs_error::inval;
}
verbs_error establish(cm_id *id) {
    return id ? impl(id)->svc->establish(impl(id)) : verbs_error::inval;
}
verbs_error init_qp_attr(const cm_id *id, qp_attr *attr, unsigned *mask) {
    return id ? static_cast<const cm_id_impl *>(id)->svc->init_qp_attr(
                    static_cast<const cm_id_impl *>(id), attr, mask)
              : verbs_error::inval;
}

} // namespace uroce

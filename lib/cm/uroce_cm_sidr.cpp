/* SPDX-License-Identifier: BSD-3-Clause
 * SIDR for rdma_cm's UD ids (IBTA 12.11; cm.c cm_sidr_*, cma.c
 * cma_resolve_ib_udp / cma_sidr_rep_handler): no connection and no comm
 * ID, a request and its answer.
 *
 *   active   connect():  SIDR_REQ (request ID, service ID, rdma_cm's IP
 *                        header + the user's data), sent again after the CM
 *                        response timeout, at most max_cm_retries times;
 *            SIDR_REP:   status valid -> ESTABLISHED with the peer's QPN
 *                        and Q_Key and an AH's attributes (event.ud); any
 *                        other status -> UNREACHABLE with it as status
 *                        (cma.c); no answer -> UNREACHABLE, -ETIMEDOUT.
 *   passive  SIDR_REQ:   nobody listens -> SIDR_REP "service ID not
 *                        supported"; the IP header is not for us ->
 *                        "rejected"; else CONNECT_REQUEST on a new id;
 *                        accept() -> SIDR_REP valid with our QPN and
 *                        rdma_cm's Q_Key, reject() -> "rejected". A
 *                        repeated SIDR_REQ (same peer, same request ID) is
 *                        answered with the same SIDR_REP, or ignored while
 *                        the user has not answered.
 */
#include <cerrno>
#include <cstring>

#include "uroce_cm_service.h"

namespace uroce {

uint64_t cm_service::sidr_retry_ns() const {
    return cm_conn::timeout_ns(cfg_.response_timeout) +
           2 * cm_conn::timeout_ns(cm_conn::default_packet_lifetime);
}

verbs_error cm_service::sidr_connect(cm_id_impl *id, const cm_conn_param *param) {
    if (param->private_data_len > cm_sidr_req_private_max ||
        (param->private_data_len && !param->private_data))
        return verbs_error::inval;
    uint8_t priv[216] = {};
    cma_ip_hdr h;
    build_cma_ip_hdr(h, id->route.sgid, id->port, id->route.dgid);
    std::memcpy(priv, &h, sizeof(h));
    if (param->private_data_len)
        std::memcpy(priv + sizeof(h), param->private_data, param->private_data_len);
    uint32_t rid;
    do {
        rid = next_sidr_id_++;
    } while (rid == 0 || sidr_out_.count(rid));
    id->sidr_request_id = rid;
    id->sidr_tid = uint64_t(rid) | 2ull << 32;
    build_cm_sidr_req(id->sidr_mad, id->sidr_tid, rid, id->service_id,
                      {priv, sizeof(h) + param->private_data_len});
    id->peer.addr = id->route.dgid;
    id->peer.local = id->route.sgid;
    id->sidr_retries = cfg_.max_cm_retries;
    id->deadline = now() + sidr_retry_ns();
    id->state = cm_id_state::connect;
    sidr_out_[rid] = id;
    send_mad(id->peer, id->sidr_mad);
    own_.sidr_req_tx++;
    return verbs_error::ok;
}

void cm_service::sidr_timer(cm_id_impl *id, uint64_t now_ns) {
    if (!id->sidr_request_id || now_ns < id->deadline) return;
    if (id->sidr_retries > 0) {
        id->sidr_retries--;
        id->deadline = now_ns + sidr_retry_ns();
        send_mad(id->peer, id->sidr_mad);
        own_.sidr_req_tx++;
        own_.retries++;
        return;
    }
    own_.timeouts++;
    sidr_out_.erase(id->sidr_request_id);
    id->sidr_request_id = 0;
    id->state = cm_id_state::done;
    queue(id, cm_event_type::unreachable, -ETIMEDOUT);
}

void cm_service::sidr_forget(cm_id_impl *id) {
    if (id->sidr_request_id) {
        auto it = sidr_out_.find(id->sidr_request_id);
        if (it != sidr_out_.end() && it->second == id) sidr_out_.erase(it);
    }
    for (auto it = sidr_in_.begin(); it != sidr_in_.end();)
        it = it->second == id ? sidr_in_.erase(it) : std::next(it);
}

bool cm_service::sidr(const cm_peer &from, const cm_mad_view &v, uint64_t) {
    if (v.info->attr == cm_attr::sidr_req)
        on_sidr_req(from, v);
    else
        on_sidr_rep(from, v);
    return true;
}

void cm_service::on_sidr_rep(const cm_peer &from, const cm_mad_view &v) {
    const cm_sidr_rep &r = *v.as<cm_sidr_rep>();
    auto it = sidr_out_.find(r.request_id());
    if (it == sidr_out_.end() || !(it->second->route.dgid == from.addr)) {
        own_.sidr_unknown++;
        return;
    }
    cm_id_impl *id = it->second;
    sidr_out_.erase(it);
    id->sidr_request_id = 0;
    if (r.status != uint8_t(cm_sidr_status::valid)) {
        id->state = cm_id_state::done;
        queue(id, cm_event_type::unreachable, r.status);
        return;
    }
    id->state = cm_id_state::established;
    auto *ev = new cm_event_impl;
    ev->id = id;
    ev->event = cm_event_type::established;
    std::memcpy(ev->priv, v.private_data(), cm_sidr_rep_private_max);
    ev->ud.private_data = ev->priv;
    ev->ud.private_data_len = uint8_t(cm_sidr_rep_private_max);
    ev->ud.ah_attr = qp_attr_for(id).ah_attr;
    ev->ud.qp_num = r.qpn();
    ev->ud.qkey = r.qkey();
    own_.events++;
    cm_channel_push(id->channel, ev);
}

void cm_service::on_sidr_req(const cm_peer &from, const cm_mad_view &v) {
    const cm_sidr_req &r = *v.as<cm_sidr_req>();
    auto dup = sidr_in_.find({from.addr.raw, r.request_id()});
    if (dup != sidr_in_.end()) {
        /* The peer did not hear our answer: the same one again. */
        own_.duplicates++;
        if (dup->second->sidr_answered) {
            send_mad(from, dup->second->sidr_mad);
            own_.sidr_rep_tx++;
        }
        return;
    }
    uint8_t mad[mad_size];
    auto *listener = static_cast<cm_id_impl *>(agent_->listener_context(r.service_id()));
    if (!listener || listener->qp_type != qp_type::ud || listener->state != cm_id_state::listen) {
        build_cm_sidr_rep(mad, v.hdr->tid(), r.request_id(),
                          cm_sidr_status::service_id_not_supported, 0, r.service_id(), 0);
        send_mad(from, mad);
        own_.sidr_rep_tx++;
        own_.req_no_listener++;
        return;
    }
    /* A SIDR_REQ flood must not grow state without bound: at most
     * max_half_open requests the users have not answered (and the
     * listener's backlog), as for REQs. */
    unsigned pending = 0, of_listener = 0;
    for (const cm_id_impl *id : ids_)
        if (id->qp_type == qp_type::ud &&
            (id->state == cm_id_state::req_wait_mac || id->state == cm_id_state::connect_request)) {
            pending++;
            of_listener += id->listener == listener;
        }
    if (pending >= cfg_.max_half_open ||
        (listener->backlog > 0 && of_listener >= unsigned(listener->backlog))) {
        build_cm_sidr_rep(mad, v.hdr->tid(), r.request_id(), cm_sidr_status::rejected, 0,
                          r.service_id(), 0);
        send_mad(from, mad);
        own_.sidr_rep_tx++;
        own_.req_half_open_full++;
        return;
    }
    auto *child = new cm_id_impl;
    child->svc = this;
    child->channel = listener->channel;
    child->context = listener->context;
    child->ps = listener->ps;
    child->qp_type = qp_type::ud;
    child->verbs = dev();
    child->listener = listener;
    child->port = listener->port;
    child->service_id = r.service_id();
    const uint8_t *priv = v.private_data();
    if (!service_id_is_ip(r.service_id()) || !check_ip_hdr(listener, priv, from.addr, child)) {
        delete child;
        build_cm_sidr_rep(mad, v.hdr->tid(), r.request_id(), cm_sidr_status::rejected, 0,
                          r.service_id(), 0);
        send_mad(from, mad);
        own_.sidr_rep_tx++;
        own_.req_bad_ip_hdr++;
        return;
    }
    child->req_priv_len = uint8_t(cm_sidr_req_private_max);
    std::memcpy(child->req_priv, priv + sizeof(cma_ip_hdr), cm_sidr_req_private_max);
    child->sidr_request_id = r.request_id();
    child->sidr_tid = v.hdr->tid();
    child->peer = from;
    child->route.hop_limit = 64;
    ids_.insert(child);
    child->channel->ids++;
    sidr_in_[{from.addr.raw, r.request_id()}] = child;
    if (std::optional<mac_addr> mac = nb().resolve(from.addr)) {
        mac->copy_to(child->route.dmac);
        deliver_request(child);
    } else {
        child->state = cm_id_state::req_wait_mac;
        child->deadline = now() + 3'000'000'000ull;
    }
}

verbs_error cm_service::sidr_accept(cm_id_impl *id, const cm_conn_param *param) {
    if (param->private_data_len > cm_sidr_rep_private_max ||
        (param->private_data_len && !param->private_data))
        return verbs_error::inval;
    build_cm_sidr_rep(id->sidr_mad, id->sidr_tid, id->sidr_request_id, cm_sidr_status::valid,
                      id->qp ? qp_num(id->qp) : param->qp_num, id->service_id, rdma_udp_qkey,
                      {static_cast<const uint8_t *>(param->private_data), param->private_data_len});
    id->sidr_answered = true;
    id->state = cm_id_state::established;
    send_mad(id->peer, id->sidr_mad);
    own_.sidr_rep_tx++;
    return verbs_error::ok;
}

verbs_error cm_service::sidr_reject(cm_id_impl *id, const void *pd, uint8_t len) {
    if (len > cm_sidr_rep_private_max) return verbs_error::inval;
    build_cm_sidr_rep(id->sidr_mad, id->sidr_tid, id->sidr_request_id, cm_sidr_status::rejected, 0,
                      id->service_id, 0, {static_cast<const uint8_t *>(pd), len});
    id->sidr_answered = true;
    id->state = cm_id_state::done;
    send_mad(id->peer, id->sidr_mad);
    own_.sidr_rep_tx++;
    return verbs_error::ok;
}

} // namespace uroce

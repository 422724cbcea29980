/* SPDX-License-Identifier: BSD-3-Clause
 * The CM agent (uroce_cm_agent.h).
 */
#include "uroce_cm_agent.h"

namespace uroce {

const char *cm_drop_name(cm_drop d) {
    static constexpr const char *names[] = {
#define X(name, desc) #name,
        UROCE_CM_DROPS(X)
#undef X
    };
    return unsigned(d) < std::size(names) ? names[unsigned(d)] : "unknown";
}

/* Each connection's owner: its peer, and the forwarding to the endpoint. */
class cm_agent::relay final : public cm_conn_owner {
  public:
    relay(cm_agent &agent, const cm_peer &peer) : agent_(agent), peer_(peer) {}
    void send_mad(cm_conn &, const uint8_t *mad) override { agent_.ep_.send_mad(peer_, mad); }
    bool qp_to_rts(cm_conn &c, const cm_rep &rep) override { return agent_.ep_.qp_to_rts(c, rep); }
    bool user_moves_qp(cm_conn &c) override { return agent_.ep_.user_moves_qp(c); }
    void qp_established(cm_conn &c) override { agent_.ep_.qp_established(c); }
    void qp_to_error(cm_conn &c) override { agent_.ep_.qp_to_error(c); }
    void event(cm_conn &c, cm_conn_event e) override { agent_.ep_.event(c, e); }
    const cm_peer &peer() const { return peer_; }

  private:
    cm_agent &agent_;
    cm_peer peer_;
};

struct cm_agent::slot {
    slot(cm_agent &agent, const cm_peer &peer, uint32_t comm_id)
        : owner(agent, peer), conn(owner, agent.msg_cnt_, comm_id) {}
    relay owner;
    cm_conn conn;
    bool orphan = false; /* destroyed by its user while in timewait: freed when it ends */
};

namespace {
bool is_half_open(cm_state s) {
    return s == cm_state::req_rcvd || s == cm_state::rep_sent || s == cm_state::mra_rep_rcvd;
}
} // namespace

cm_agent::cm_agent(endpoint &ep, const config &cfg)
    : ep_(ep), cfg_(cfg), rng_(cfg.seed ? cfg.seed : std::random_device{}()) {
    next_comm_id_ = uint32_t(rng_());
}

cm_agent::~cm_agent() = default;

uint32_t cm_agent::new_comm_id() {
    /* Sequential from a random start, skipping 0 and any ID still in use. */
    for (;;) {
        uint32_t id = next_comm_id_++;
        if (id != 0 && !conns_.count(id)) return id;
    }
}

cm_conn *cm_agent::find(uint32_t local_comm_id) const {
    auto it = conns_.find(local_comm_id);
    return it == conns_.end() ? nullptr : &it->second->conn;
}

const cm_peer *cm_agent::peer_of(const cm_conn *c) const {
    auto it = conns_.find(c->local_comm_id());
    return it == conns_.end() ? nullptr : &it->second->owner.peer();
}

unsigned cm_agent::half_open() const {
    unsigned n = 0;
    for (const auto &[id, s] : conns_)
        n += !s->conn.active() && is_half_open(s->conn.state());
    return n;
}

bool cm_agent::listen(uint64_t service_id, void *context) {
    return listeners_.emplace(service_id, context).second;
}

bool cm_agent::unlisten(uint64_t service_id) {
    return listeners_.erase(service_id) > 0;
}

void *cm_agent::listener_context(uint64_t service_id) const {
    auto it = listeners_.find(service_id);
    return it == listeners_.end() ? nullptr : it->second;
}

cm_conn *cm_agent::connect(const cm_peer &peer, const cm_req_params &p, uint64_t now_ns) {
    if (conns_.size() >= cfg_.max_conns) return nullptr;
    const uint32_t id = new_comm_id();
    auto s = std::make_unique<slot>(*this, peer, id);
    cm_conn *c = &s->conn;
    conns_.emplace(id, std::move(s));
    cnt_.conns_created++;
    c->connect(p, now_ns);
    return c;
}

void cm_agent::destroy(cm_conn *c, uint64_t now_ns) {
    auto it = conns_.find(c->local_comm_id());
    if (it == conns_.end()) return;
    /* As cm.c's cm_destroy_id: leave the peer nothing hanging. */
    switch (c->state()) {
    case cm_state::req_sent:
    case cm_state::mra_req_rcvd:
        c->abandon();
        break;
    case cm_state::req_rcvd:
    case cm_state::rep_rcvd:
        c->reject(cm_rej_reason::consumer_defined);
        break;
    case cm_state::established:
    case cm_state::dreq_rcvd:
        c->disconnect(now_ns);
        it->second->orphan = true;
        return;
    case cm_state::dreq_sent:
    case cm_state::timewait:
        it->second->orphan = true;
        return;
    default:
        break;
    }
    erase(it->first);
}

void cm_agent::erase(uint32_t local_comm_id) {
    auto it = conns_.find(local_comm_id);
    if (it == conns_.end()) return;
    const cm_conn &c = it->second->conn;
    if (!c.active()) by_remote_.erase({c.remote_comm_id(), it->second->owner.peer().addr.raw});
    conns_.erase(it);
    cnt_.conns_freed++;
}

void cm_agent::reject_req(const cm_peer &from, const cm_mad_view &v, cm_rej_reason why, cm_drop d) {
    uint8_t mad[mad_size];
    build_cm_rej(mad, v.hdr->tid(), 0, v.as<cm_req>()->local_comm_id(), cm_msg_ref::req, why);
    cnt_.drops[size_t(d)]++;
    msg_cnt_.sent[unsigned(cm_attr::rej) - unsigned(cm_attr::req)]++;
    ep_.send_mad(from, mad);
}

void cm_agent::on_req(const cm_peer &from, const cm_mad_view &v, uint64_t now_ns) {
    const cm_req &r = *v.as<cm_req>();
    /* A connection we already have (a retried REQ, or one in timewait):
     * the connection answers from its state. */
    auto known = by_remote_.find({r.local_comm_id(), from.addr.raw});
    if (known != by_remote_.end()) {
        cm_conn *c = find(known->second);
        if (c && c->state() != cm_state::idle) {
            c->receive(v, now_ns);
            return;
        }
    }
    if (r.transport() != cm_transport::rc && r.transport() != cm_transport::uc)
        return reject_req(from, v, cm_rej_reason::invalid_transport_type, cm_drop::req_not_rc);
    if (!listeners_.count(r.service_id()))
        return reject_req(from, v, cm_rej_reason::invalid_service_id, cm_drop::req_no_listener);
    if (half_open() >= cfg_.max_half_open || conns_.size() >= cfg_.max_conns)
        return reject_req(from, v, cm_rej_reason::no_resources, cm_drop::req_half_open_full);
    const uint32_t id = new_comm_id();
    auto s = std::make_unique<slot>(*this, from, id);
    cm_conn *c = &s->conn;
    conns_.emplace(id, std::move(s));
    by_remote_[{r.local_comm_id(), from.addr.raw}] = id;
    cnt_.conns_created++;
    c->receive_req(v);
    /* The endpoint refused it at once (cm.c: the listener's handler failed). */
    if (c->state() == cm_state::idle) erase(id);
}

void cm_agent::receive(const cm_peer &from, const uint8_t *payload, size_t len, uint64_t now_ns) {
    cm_mad_view v;
    const mad_error e = parse_cm_mad(payload, len, v);
    if (e != mad_error::ok) {
        cnt_.mad_refused[size_t(e)]++;
        return;
    }
    switch (v.info->attr) {
    case cm_attr::req:
        return on_req(from, v, now_ns);
    case cm_attr::sidr_req:
    case cm_attr::sidr_rep:
        msg_cnt_.received[unsigned(v.info->attr) - unsigned(cm_attr::req)]++;
        if (!ep_.sidr(from, v, now_ns)) cnt_.drops[size_t(cm_drop::sidr_unhandled)]++;
        return;
    case cm_attr::lap:
    case cm_attr::apr:
        cnt_.drops[size_t(cm_drop::not_sent)]++;
        return;
    default:
        break;
    }
    /* Every other message names our comm ID as its remote one (a REJ or
     * MRA of our REQ carries theirs too); only a REJ timeout of a REQ we
     * received names none (find_abandoned). */
    const uint32_t ours = load_be32(v.msg + 4);
    cm_conn *c = ours ? find(ours) : find_abandoned(from, v);
    if (!c) {
        if (v.info->attr == cm_attr::dreq) {
            /* cm.c cm_issue_drep: our timewait may have ended before the
             * peer's last DREQ retry; answer so that it can end too. */
            uint8_t mad[mad_size];
            build_cm_drep(mad, v.hdr->tid(), ours, v.as<cm_dreq>()->local_comm_id());
            cnt_.drops[size_t(cm_drop::stale_dreq)]++;
            msg_cnt_.sent[unsigned(cm_attr::drep) - unsigned(cm_attr::req)]++;
            ep_.send_mad(from, mad);
        } else {
            cnt_.drops[size_t(cm_drop::no_conn)]++;
        }
        return;
    }
    c->receive(v, now_ns);
    free_idle();
}

/* A REJ with reason timeout and no remote comm ID: the active side gave up
 * on a REQ it sent us before it heard our answer (cm.c cm_destroy_id). It
 * names its connection by its comm ID and its CA GUID in the ARI (cm.c
 * cm_acquire_rejected_id); we know the connection by its comm ID and GID,
 * and check the GUID against the one its REQ carried. */
cm_conn *cm_agent::find_abandoned(const cm_peer &from, const cm_mad_view &v) const {
    if (v.info->attr != cm_attr::rej) return nullptr;
    const cm_rej &r = *v.as<cm_rej>();
    if (r.reason() != uint16_t(cm_rej_reason::timeout) || r.reject_info_length() < 8)
        return nullptr;
    auto known = by_remote_.find({r.local_comm_id(), from.addr.raw});
    if (known == by_remote_.end()) return nullptr;
    cm_conn *c = find(known->second);
    return c && c->req().local_ca_guid == load_be64(r.ari) ? c : nullptr;
}

void cm_agent::poll(uint64_t now_ns) {
    for (auto &[id, s] : conns_)
        if (s->conn.deadline() <= now_ns) s->conn.on_timer(now_ns);
    free_idle();
}

/* Connections their users destroyed are freed once they are idle. */
void cm_agent::free_idle() {
    std::vector<uint32_t> done;
    for (const auto &[id, s] : conns_)
        if (s->orphan && s->conn.state() == cm_state::idle) done.push_back(id);
    for (uint32_t id : done)
        erase(id);
}

} // namespace uroce

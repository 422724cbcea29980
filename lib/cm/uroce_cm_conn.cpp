/* SPDX-License-Identifier: BSD-3-Clause
 * One CM connection's state machine (uroce_cm_conn.h).
 */
#include "uroce_cm_conn.h"

#include <algorithm>
#include <cstring>

namespace uroce {

const char *cm_state_name(cm_state s) {
    static constexpr const char *names[] = {
        "IDLE",     "REQ_SENT",    "REQ_RCVD",  "MRA_REQ_RCVD", "REP_SENT", "MRA_REP_RCVD",
        "REP_RCVD", "ESTABLISHED", "DREQ_SENT", "DREQ_RCVD",    "TIMEWAIT",
    };
    static_assert(std::size(names) == size_t(cm_state::count));
    return unsigned(s) < std::size(names) ? names[unsigned(s)] : "?";
}

uint64_t cm_conn::timeout_ns(uint8_t exp) {
    if (exp > 31) exp = 31; /* the fields are 5 bits wide */
    return 4096ull << exp;  /* 4.096 us * 2^exp */
}

namespace {
unsigned attr_index(cm_attr a) {
    return unsigned(a) - unsigned(cm_attr::req);
}
} // namespace

void cm_conn::send(cm_attr attr) {
    cnt_.sent[attr_index(attr)]++;
    owner_.send_mad(*this, last_sent_);
}

/* Wait for the peer: its CM response timeout plus a round trip of packet
 * lifetimes (IBTA 12.4; cm.c: 2 * packet life + remote CM response timeout). */
void cm_conn::arm(uint64_t now_ns, uint8_t response_timeout, unsigned retries) {
    retry_interval_ = timeout_ns(response_timeout) + 2 * timeout_ns(default_packet_lifetime);
    retries_left_ = retries;
    deadline_ = now_ns + retry_interval_;
}

/* IBTA 12.9.7.1: a released connection's comm ID and QP stay quarantined
 * long enough for packets still in flight to die (cm.c cm_enter_timewait). */
void cm_conn::enter_timewait(uint64_t now_ns) {
    state_ = cm_state::timewait;
    deadline_ =
        now_ns + 2 * timeout_ns(default_packet_lifetime) + timeout_ns(req_.path.local_ack_timeout);
}

bool cm_conn::connect(const cm_req_params &p, uint64_t now_ns) {
    if (state_ != cm_state::idle) return false;
    active_ = true;
    req_ = p;
    req_.local_comm_id = local_comm_id_;
    tid_ = uint64_t(local_comm_id_) | 1ull << 32;
    build_cm_req(last_sent_, tid_, req_);
    req_.private_data = {}; /* in the MAD now; the caller's buffer is not kept */
    send(cm_attr::req);
    state_ = cm_state::req_sent;
    arm(now_ns, p.remote_cm_response_timeout, p.max_cm_retries);
    timed_since_ns_ = now_ns;
    timing_ = true;
    return true;
}

/* The answer to the REQ or REP we time has come: one round trip. */
void cm_conn::time_answer(uint64_t now_ns) {
    if (!timing_) return;
    timing_ = false;
    handshake_rtt_ns_ = now_ns > timed_since_ns_ ? now_ns - timed_since_ns_ : 1;
}

void cm_conn::keep_private(const cm_mad_view &v) {
    private_len_ = uint8_t(std::min<size_t>(v.info->private_len, sizeof(private_)));
    std::memcpy(private_, v.private_data(), private_len_);
}

void cm_conn::receive_req(const cm_mad_view &v) {
    const cm_req &r = *v.as<cm_req>();
    cnt_.received[attr_index(cm_attr::req)]++;
    keep_private(v);
    tid_ = v.hdr->tid();
    remote_comm_id_ = r.local_comm_id();
    remote_qpn_ = r.local_qpn();
    remote_psn_ = r.starting_psn();
    /* What the peer asked for, as seen from it (its local = our remote). */
    req_ = cm_req_params_of(r);
    req_.private_data = {}; /* the MAD is not ours to keep */
    state_ = cm_state::req_rcvd;
    owner_.event(*this, cm_conn_event::connect_request);
}

bool cm_conn::accept(const cm_rep_params &p, uint64_t now_ns) {
    if (state_ != cm_state::req_rcvd) return false;
    cm_rep_params rep = p;
    rep.local_comm_id = local_comm_id_;
    rep.remote_comm_id = remote_comm_id_;
    build_cm_rep(last_sent_, tid_, rep);
    send(cm_attr::rep);
    state_ = cm_state::rep_sent;
    arm(now_ns, peer_response_timeout(), req_.max_cm_retries);
    timed_since_ns_ = now_ns;
    timing_ = true;
    return true;
}

bool cm_conn::reject(cm_rej_reason reason, cm_private pd) {
    if (state_ != cm_state::req_rcvd && state_ != cm_state::rep_rcvd) return false;
    /* IBTA 12.6.7.1: what is rejected; after a REP, "other" (cm.c cm_format_rej) */
    const cm_msg_ref what = state_ == cm_state::req_rcvd ? cm_msg_ref::req : cm_msg_ref::other;
    build_cm_rej(last_sent_, tid_, local_comm_id_, remote_comm_id_, what, reason, pd);
    send(cm_attr::rej);
    state_ = cm_state::idle;
    deadline_ = UINT64_MAX;
    return true;
}

bool cm_conn::establish() {
    if (state_ != cm_state::rep_rcvd) return false;
    build_cm_rtu(last_sent_, tid_, local_comm_id_, remote_comm_id_);
    send(cm_attr::rtu);
    state_ = cm_state::established;
    return true;
}

bool cm_conn::abandon() {
    if (state_ != cm_state::req_sent && state_ != cm_state::mra_req_rcvd) return false;
    uint8_t guid[8];
    store_be64(guid, req_.local_ca_guid);
    build_cm_rej(last_sent_, tid_, local_comm_id_, 0, cm_msg_ref::other, cm_rej_reason::timeout, {},
                 {guid, sizeof(guid)});
    send(cm_attr::rej);
    state_ = cm_state::idle;
    deadline_ = UINT64_MAX;
    return true;
}

bool cm_conn::disconnect(uint64_t now_ns, cm_private pd) {
    switch (state_) {
    case cm_state::established:
    case cm_state::rep_sent: /* the RTU may be lost; the peer may already use the QP */
    case cm_state::mra_rep_rcvd:
        build_cm_dreq(last_sent_, tid_, local_comm_id_, remote_comm_id_, remote_qpn_, pd);
        send(cm_attr::dreq);
        owner_.qp_to_error(*this);
        state_ = cm_state::dreq_sent;
        arm(now_ns, peer_response_timeout(), req_.max_cm_retries);
        return true;
    case cm_state::dreq_rcvd:
        build_cm_drep(last_sent_, tid_, local_comm_id_, remote_comm_id_, pd);
        send(cm_attr::drep);
        enter_timewait(now_ns);
        return true;
    default:
        return false;
    }
}

void cm_conn::receive(const cm_mad_view &v, uint64_t now_ns) {
    const cm_attr attr = v.info->attr;
    if (attr_index(attr) < std::size(cnt_.received)) cnt_.received[attr_index(attr)]++;
    /* A duplicate REQ says nothing new; keep the first one's data. */
    if (attr != cm_attr::req) keep_private(v);
    switch (attr) {
    case cm_attr::req:
        /* The peer did not hear our answer: answer again from the state. */
        if (state_ == cm_state::rep_sent || state_ == cm_state::mra_rep_rcvd) {
            cnt_.duplicates++;
            send(cm_attr::rep);
            timing_ = false; /* Karn: the RTU may answer either REP */
        } else if (state_ == cm_state::req_rcvd) {
            cnt_.duplicates++; /* the application has not answered yet */
        } else if (state_ == cm_state::timewait) {
            /* IBTA 12.9.8.3.1: a REQ for a connection in timewait is stale. */
            uint8_t mad[mad_size];
            build_cm_rej(mad, v.hdr->tid(), local_comm_id_, v.as<cm_req>()->local_comm_id(),
                         cm_msg_ref::req, cm_rej_reason::stale_conn);
            cnt_.sent[attr_index(cm_attr::rej)]++;
            owner_.send_mad(*this, mad);
        } else {
            cnt_.unexpected++;
        }
        return;
    case cm_attr::rep:
        return on_rep(v, now_ns);
    case cm_attr::rtu:
        return on_rtu(now_ns);
    case cm_attr::dreq:
        return on_dreq(now_ns);
    case cm_attr::drep:
        return on_drep(now_ns);
    case cm_attr::rej:
        return on_rej(v, now_ns);
    case cm_attr::mra:
        return on_mra(v, now_ns);
    default:
        cnt_.unexpected++;
    }
}

void cm_conn::on_rep(const cm_mad_view &v, uint64_t now_ns) {
    const cm_rep &r = *v.as<cm_rep>();
    if (state_ == cm_state::established && r.local_comm_id() == remote_comm_id_) {
        /* Our RTU was lost (cm.c cm_dup_rep_handler): send it again. */
        cnt_.duplicates++;
        send(cm_attr::rtu);
        return;
    }
    if (state_ == cm_state::rep_rcvd && r.local_comm_id() == remote_comm_id_) {
        cnt_.duplicates++; /* our user has not established yet: the RTU will answer */
        return;
    }
    if (state_ != cm_state::req_sent && state_ != cm_state::mra_req_rcvd) {
        cnt_.unexpected++;
        return;
    }
    remote_comm_id_ = r.local_comm_id();
    remote_qpn_ = r.local_qpn();
    remote_psn_ = r.starting_psn();
    time_answer(now_ns); /* before qp_to_rts: the QP's RTT starts from it */
    if (!owner_.qp_to_rts(*this, r)) {
        build_cm_rej(last_sent_, tid_, local_comm_id_, remote_comm_id_, cm_msg_ref::rep,
                     cm_rej_reason::no_resources);
        send(cm_attr::rej);
        enter_timewait(now_ns);
        owner_.event(*this, cm_conn_event::unreachable);
        return;
    }
    deadline_ = UINT64_MAX;
    if (owner_.user_moves_qp(*this)) {
        /* IBTA 12.9.5.2 (cm.c IB_CM_REP_RCVD): the RTU waits for the user. */
        state_ = cm_state::rep_rcvd;
        owner_.event(*this, cm_conn_event::connect_response);
        return;
    }
    build_cm_rtu(last_sent_, tid_, local_comm_id_, remote_comm_id_);
    send(cm_attr::rtu);
    state_ = cm_state::established;
    owner_.event(*this, cm_conn_event::established);
}

void cm_conn::on_rtu(uint64_t now_ns) {
    if (state_ == cm_state::established) {
        cnt_.duplicates++;
        return;
    }
    if (state_ != cm_state::rep_sent && state_ != cm_state::mra_rep_rcvd) {
        cnt_.unexpected++;
        return;
    }
    state_ = cm_state::established;
    deadline_ = UINT64_MAX;
    time_answer(now_ns);
    owner_.qp_established(*this);
    owner_.event(*this, cm_conn_event::established);
}

void cm_conn::on_dreq(uint64_t now_ns) {
    switch (state_) {
    case cm_state::rep_rcvd: /* the peer may use the QP already; it leaves first */
    case cm_state::established:
    case cm_state::rep_sent:
    case cm_state::mra_rep_rcvd:
        state_ = cm_state::dreq_rcvd;
        deadline_ = UINT64_MAX;
        owner_.qp_to_error(*this);
        owner_.event(*this, cm_conn_event::disconnected);
        return;
    case cm_state::dreq_sent:
        /* Both sides disconnect at once: answer, and we are done. */
        build_cm_drep(last_sent_, tid_, local_comm_id_, remote_comm_id_);
        send(cm_attr::drep);
        enter_timewait(now_ns);
        owner_.event(*this, cm_conn_event::disconnected);
        return;
    case cm_state::timewait:
        /* Our DREP was lost (cm.c cm_dreq_handler): send it again. */
        cnt_.duplicates++;
        {
            uint8_t mad[mad_size];
            build_cm_drep(mad, tid_, local_comm_id_, remote_comm_id_);
            cnt_.sent[attr_index(cm_attr::drep)]++;
            owner_.send_mad(*this, mad);
        }
        return;
    case cm_state::dreq_rcvd:
        cnt_.duplicates++; /* the application has not disconnected yet */
        return;
    default:
        cnt_.unexpected++;
    }
}

void cm_conn::on_drep(uint64_t now_ns) {
    if (state_ == cm_state::timewait) {
        cnt_.duplicates++;
        return;
    }
    if (state_ != cm_state::dreq_sent) {
        cnt_.unexpected++;
        return;
    }
    enter_timewait(now_ns);
    owner_.event(*this, cm_conn_event::disconnected);
}

void cm_conn::on_rej(const cm_mad_view &v, uint64_t now_ns) {
    const cm_rej &r = *v.as<cm_rej>();
    switch (state_) {
    case cm_state::req_sent:
    case cm_state::mra_req_rcvd:
        rej_reason_ = r.reason();
        remote_comm_id_ = r.local_comm_id();
        state_ = cm_state::idle;
        deadline_ = UINT64_MAX;
        owner_.event(*this, cm_conn_event::rejected);
        return;
    case cm_state::req_rcvd:
        /* The active side gave up before we answered (cm.c cm_rej_handler:
         * REJ in REQ_RCVD, its REQ timed out or its id was destroyed). */
        rej_reason_ = r.reason();
        state_ = cm_state::idle;
        deadline_ = UINT64_MAX;
        owner_.event(*this, cm_conn_event::rejected);
        return;
    case cm_state::rep_sent:
    case cm_state::mra_rep_rcvd:
    case cm_state::rep_rcvd:
        rej_reason_ = r.reason();
        owner_.qp_to_error(*this);
        enter_timewait(now_ns);
        owner_.event(*this, cm_conn_event::rejected);
        return;
    default:
        cnt_.unexpected++;
    }
}

void cm_conn::on_mra(const cm_mad_view &v, uint64_t now_ns) {
    const cm_mra &m = *v.as<cm_mra>();
    const bool for_req = m.msg_mraed() == cm_msg_ref::req &&
                         (state_ == cm_state::req_sent || state_ == cm_state::mra_req_rcvd);
    const bool for_rep = m.msg_mraed() == cm_msg_ref::rep &&
                         (state_ == cm_state::rep_sent || state_ == cm_state::mra_rep_rcvd);
    if (!for_req && !for_rep) {
        cnt_.unexpected++;
        return;
    }
    /* IBTA 12.6.6: the peer needs its service timeout more; our retries
     * wait that long, and start again from there. The MRA is the peer's
     * answer to our message: the round trip ends here (the REP or RTU
     * after it waits for the peer's application, not the path). */
    time_answer(now_ns);
    if (for_req) {
        state_ = cm_state::mra_req_rcvd;
        remote_comm_id_ = m.local_comm_id();
    } else {
        state_ = cm_state::mra_rep_rcvd;
    }
    deadline_ = now_ns + timeout_ns(m.service_timeout()) + 2 * timeout_ns(default_packet_lifetime);
}

void cm_conn::on_timer(uint64_t now_ns) {
    if (now_ns < deadline_) return;
    switch (state_) {
    case cm_state::req_sent:
    case cm_state::mra_req_rcvd:
    case cm_state::rep_sent:
    case cm_state::mra_rep_rcvd:
    case cm_state::dreq_sent: {
        const bool req = state_ == cm_state::req_sent || state_ == cm_state::mra_req_rcvd;
        const bool rep = state_ == cm_state::rep_sent || state_ == cm_state::mra_rep_rcvd;
        if (retries_left_ > 0) {
            retries_left_--;
            cnt_.retries++;
            send(req ? cm_attr::req : rep ? cm_attr::rep : cm_attr::dreq);
            timing_ = false; /* Karn: the answer may be to either copy */
            if (state_ == cm_state::mra_req_rcvd) state_ = cm_state::req_sent;
            if (state_ == cm_state::mra_rep_rcvd) state_ = cm_state::rep_sent;
            deadline_ = now_ns + retry_interval_;
            return;
        }
        cnt_.timeouts++;
        if (req) {
            state_ = cm_state::idle;
            deadline_ = UINT64_MAX;
            owner_.event(*this, cm_conn_event::unreachable);
        } else if (rep) {
            owner_.qp_to_error(*this);
            enter_timewait(now_ns);
            owner_.event(*this, cm_conn_event::unreachable);
        } else {
            /* A DREQ nobody answers: the connection is gone all the same. */
            enter_timewait(now_ns);
            owner_.event(*this, cm_conn_event::disconnected);
        }
        return;
    }
    case cm_state::timewait:
        state_ = cm_state::idle;
        deadline_ = UINT64_MAX;
        owner_.event(*this, cm_conn_event::timewait_exit);
        return;
    default:
        deadline_ = UINT64_MAX;
    }
}

} // namespace uroce

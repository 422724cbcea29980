/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_conn.cpp: two connections, active and passive, joined by
 * a pipe that can lose chosen messages, on a clock the test moves. Every
 * lost message of the handshake and the release costs a retry, not the
 * connection; retries run out into the right event; a REJ, an MRA, a
 * message out of place and a REQ in timewait are each handled as IBTA 12.9
 * and cm.c do. The handshake's round trip is timed for the QPs (Karn: not
 * across a message sent again; an MRA ends it).
 */
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "uroce_cm_conn.h"

using namespace uroce;

namespace {

struct side;

/* A MAD on its way, and whether the pipe loses it. */
struct in_flight {
    side *to;
    std::vector<uint8_t> mad;
};

struct side final : cm_conn_owner {
    std::string name;
    side *peer = nullptr;
    std::deque<in_flight> *pipe = nullptr;
    cm_msg_counters cnt;
    cm_conn conn;
    std::vector<cm_conn_event> events;
    std::vector<std::string> qp; /* the QP moves asked for */
    bool refuse_rep = false;

    side(const char *n, uint32_t comm_id) : name(n), conn(*this, cnt, comm_id) {}

    void send_mad(cm_conn &, const uint8_t *mad) override {
        pipe->push_back({peer, std::vector<uint8_t>(mad, mad + mad_size)});
    }
    uint64_t rtt_at_qp_move = 0; /* the handshake's round trip the QP move saw */
    bool qp_to_rts(cm_conn &c, const cm_rep &rep) override {
        qp.push_back("rts qpn=" + std::to_string(rep.local_qpn()));
        rtt_at_qp_move = c.handshake_rtt_ns();
        return !refuse_rep;
    }
    void qp_established(cm_conn &c) override {
        qp.push_back("established");
        rtt_at_qp_move = c.handshake_rtt_ns();
    }
    void qp_to_error(cm_conn &) override { qp.push_back("error"); }
    void event(cm_conn &, cm_conn_event e) override { events.push_back(e); }

    /* What the CM agent does with a MAD for this side: a REQ for an idle
     * connection starts it, anything else goes to it. */
    void deliver(const std::vector<uint8_t> &mad, uint64_t now) {
        cm_mad_view v;
        ASSERT_EQ(parse_cm_mad(mad.data(), mad.size(), v), mad_error::ok);
        if (v.info->attr == cm_attr::req && conn.state() == cm_state::idle)
            conn.receive_req(v);
        else
            conn.receive(v, now);
    }
};

uint16_t attr_of(const std::vector<uint8_t> &mad) {
    return reinterpret_cast<const mad_hdr *>(mad.data())->attr_id();
}

struct cm_conn_t : ::testing::Test {
    std::deque<in_flight> pipe;
    side a{"active", 0xa0000001}, b{"passive", 0xb0000001};
    uint64_t now = 1'000'000;
    std::vector<uint16_t> lose; /* attribute IDs to lose, once each, in order */
    std::vector<uint16_t> seen; /* every MAD that went through the pipe */

    void SetUp() override {
        a.peer = &b;
        b.peer = &a;
        a.pipe = b.pipe = &pipe;
    }

    /* Deliver what is in flight (and what that makes them send). */
    void flush() {
        while (!pipe.empty()) {
            in_flight f = pipe.front();
            pipe.pop_front();
            const uint16_t attr = attr_of(f.mad);
            seen.push_back(attr);
            if (!lose.empty() && lose.front() == attr) {
                lose.erase(lose.begin());
                continue;
            }
            f.to->deliver(f.mad, now);
        }
    }
    /* Move the clock to the next deadline of either side and fire it. */
    void next_timer() {
        now = std::min(a.conn.deadline(), b.conn.deadline());
        ASSERT_NE(now, UINT64_MAX) << "no timer pending";
        a.conn.on_timer(now);
        b.conn.on_timer(now);
        flush();
    }

    cm_req_params req_params() const {
        cm_req_params p;
        p.service_id = rdma_service_id(rdma_port_space::tcp, 7174);
        p.local_qpn = 0x11;
        p.starting_psn = 0x1234;
        p.responder_resources = p.initiator_depth = 1;
        p.max_cm_retries = 3;
        return p;
    }
    cm_rep_params rep_params() const {
        cm_rep_params p;
        p.local_qpn = 0x22;
        p.starting_psn = 0x5678;
        return p;
    }
    void connect_both() {
        ASSERT_TRUE(a.conn.connect(req_params(), now));
        flush();
        ASSERT_EQ(b.conn.state(), cm_state::req_rcvd);
        ASSERT_TRUE(b.conn.accept(rep_params(), now));
        flush();
    }
};

TEST_F(cm_conn_t, handshake_and_release) {
    connect_both();
    EXPECT_EQ(seen, (std::vector<uint16_t>{0x10, 0x13, 0x14})); /* REQ REP RTU */
    EXPECT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(b.conn.state(), cm_state::established);
    EXPECT_EQ(a.conn.remote_qpn(), 0x22u);
    EXPECT_EQ(a.conn.remote_psn(), 0x5678u);
    EXPECT_EQ(b.conn.remote_qpn(), 0x11u);
    EXPECT_EQ(b.conn.remote_psn(), 0x1234u);
    EXPECT_EQ(a.conn.remote_comm_id(), b.conn.local_comm_id());
    EXPECT_EQ(b.conn.remote_comm_id(), a.conn.local_comm_id());
    EXPECT_EQ(a.conn.tid(), b.conn.tid()); /* one transaction, as rxe's capture shows */
    EXPECT_EQ(b.conn.req().service_id, rdma_service_id(rdma_port_space::tcp, 7174));
    EXPECT_EQ(a.qp, (std::vector<std::string>{"rts qpn=34"}));
    EXPECT_EQ(b.qp, (std::vector<std::string>{"established"}));
    EXPECT_EQ(a.events, (std::vector<cm_conn_event>{cm_conn_event::established}));
    EXPECT_EQ(b.events, (std::vector<cm_conn_event>{cm_conn_event::connect_request,
                                                    cm_conn_event::established}));
    EXPECT_EQ(a.conn.deadline(), UINT64_MAX); /* nothing to retry once established */

    ASSERT_TRUE(a.conn.disconnect(now));
    flush();
    EXPECT_EQ(b.conn.state(), cm_state::dreq_rcvd);
    EXPECT_EQ(b.events.back(), cm_conn_event::disconnected);
    ASSERT_TRUE(b.conn.disconnect(now)); /* rdma_disconnect after DISCONNECTED: the DREP */
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::timewait);
    EXPECT_EQ(b.conn.state(), cm_state::timewait);
    EXPECT_EQ(a.events.back(), cm_conn_event::disconnected);
    EXPECT_EQ(a.qp.back(), "error");
    EXPECT_EQ(b.qp.back(), "error");
    next_timer();
    EXPECT_EQ(a.conn.state(), cm_state::idle);
    EXPECT_EQ(b.conn.state(), cm_state::idle);
    EXPECT_EQ(a.events.back(), cm_conn_event::timewait_exit);
    EXPECT_EQ(b.events.back(), cm_conn_event::timewait_exit);
    EXPECT_EQ(a.cnt.retries + b.cnt.retries, 0u);
    EXPECT_EQ(a.cnt.unexpected + b.cnt.unexpected, 0u);
}

TEST_F(cm_conn_t, lost_req_is_sent_again) {
    lose = {0x10};
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    EXPECT_EQ(b.conn.state(), cm_state::idle);
    const uint64_t sent_at = now;
    next_timer();
    /* the peer's CM response timeout (2^20 * 4.096 us) plus two packet lifetimes */
    EXPECT_EQ(now - sent_at, cm_conn::timeout_ns(20) + 2 * cm_conn::timeout_ns(16));
    EXPECT_EQ(a.cnt.retries, 1u);
    ASSERT_EQ(b.conn.state(), cm_state::req_rcvd);
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(b.conn.state(), cm_state::established);
}

TEST_F(cm_conn_t, lost_rep_is_answered_again) {
    lose = {0x13};
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::req_sent);
    /* Both wait the same; the active side's REQ retry finds the passive
     * side in REP_SENT, which answers with the REP again. */
    next_timer();
    EXPECT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(b.conn.state(), cm_state::established);
    EXPECT_GE(b.cnt.duplicates + b.cnt.retries, 1u);
    EXPECT_EQ(a.events, (std::vector<cm_conn_event>{cm_conn_event::established}));
}

TEST_F(cm_conn_t, lost_rtu_is_sent_again) {
    lose = {0x14};
    connect_both();
    EXPECT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(b.conn.state(), cm_state::rep_sent);
    next_timer(); /* the REP again; the active side answers with the RTU again */
    EXPECT_EQ(b.conn.state(), cm_state::established);
    EXPECT_EQ(a.cnt.duplicates, 1u);
    EXPECT_EQ(b.cnt.retries, 1u);
    EXPECT_EQ(a.events.size(), 1u); /* established once */
}

TEST_F(cm_conn_t, retries_run_out_into_unreachable) {
    lose = {0x10, 0x10, 0x10, 0x10};
    ASSERT_TRUE(a.conn.connect(req_params(), now)); /* max_cm_retries 3: 4 REQs in all */
    flush();
    for (int i = 0; i < 4; i++)
        next_timer();
    EXPECT_EQ(a.cnt.sent[0], 4u);
    EXPECT_EQ(a.cnt.retries, 3u);
    EXPECT_EQ(a.cnt.timeouts, 1u);
    EXPECT_EQ(a.conn.state(), cm_state::idle);
    EXPECT_EQ(a.events, (std::vector<cm_conn_event>{cm_conn_event::unreachable}));
    EXPECT_EQ(a.conn.deadline(), UINT64_MAX);
}

TEST_F(cm_conn_t, unanswered_rep_runs_out_into_unreachable) {
    lose = {0x14, 0x13, 0x13, 0x13}; /* the RTU and the REP's retries */
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    lose = {0x14, 0x13, 0x13, 0x13};
    flush();
    for (int i = 0; i < 4 && b.conn.state() != cm_state::timewait; i++)
        next_timer();
    EXPECT_EQ(b.conn.state(), cm_state::timewait);
    EXPECT_EQ(b.events.back(), cm_conn_event::unreachable);
    EXPECT_EQ(b.qp.back(), "error");
}

TEST_F(cm_conn_t, reject_reaches_the_active_side) {
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    ASSERT_TRUE(b.conn.reject(cm_rej_reason::consumer_defined));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::idle);
    EXPECT_EQ(a.conn.last_rej_reason(), uint16_t(cm_rej_reason::consumer_defined));
    EXPECT_EQ(a.events, (std::vector<cm_conn_event>{cm_conn_event::rejected}));
    EXPECT_EQ(a.conn.deadline(), UINT64_MAX);       /* no REQ retry after a REJ */
    EXPECT_FALSE(b.conn.accept(rep_params(), now)); /* nothing to accept any more */
}

TEST_F(cm_conn_t, abandoned_req_is_rejected_with_timeout) {
    EXPECT_FALSE(a.conn.abandon()); /* nothing sent yet */
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    ASSERT_TRUE(a.conn.abandon());
    EXPECT_EQ(a.conn.state(), cm_state::idle);
    EXPECT_EQ(a.conn.deadline(), UINT64_MAX); /* no REQ retry after giving up */
    EXPECT_FALSE(a.conn.abandon());
    flush(); /* the pipe hands it to b by comm ID, as the agent would find it */
    EXPECT_EQ(b.conn.state(), cm_state::idle);
    EXPECT_EQ(b.conn.last_rej_reason(), uint16_t(cm_rej_reason::timeout));
    EXPECT_EQ(b.events.back(), cm_conn_event::rejected);
    EXPECT_FALSE(b.conn.accept(rep_params(), now));
}

TEST_F(cm_conn_t, refused_rep_is_rejected) {
    a.refuse_rep = true;
    connect_both();
    EXPECT_EQ(a.conn.state(), cm_state::timewait);
    EXPECT_EQ(a.events, (std::vector<cm_conn_event>{cm_conn_event::unreachable}));
    EXPECT_EQ(b.conn.state(), cm_state::timewait);
    EXPECT_EQ(b.conn.last_rej_reason(), uint16_t(cm_rej_reason::no_resources));
    EXPECT_EQ(b.events.back(), cm_conn_event::rejected);
}

TEST_F(cm_conn_t, mra_stretches_the_wait) {
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    const uint64_t first = a.conn.deadline();
    uint8_t mad[mad_size];
    build_cm_mra(mad, a.conn.tid(), b.conn.local_comm_id(), a.conn.local_comm_id(), cm_msg_ref::req,
                 24); /* 2^24 * 4.096 us: about 69 s */
    a.deliver(std::vector<uint8_t>(mad, mad + mad_size), now);
    EXPECT_EQ(a.conn.state(), cm_state::mra_req_rcvd);
    EXPECT_GT(a.conn.deadline(), first);
    EXPECT_EQ(a.conn.deadline(), now + cm_conn::timeout_ns(24) + 2 * cm_conn::timeout_ns(16));
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(a.cnt.retries, 0u);
}

/* The handshake's round trip, for the QP's first RTT estimate: the active
 * side's from its REQ to the REP, the passive side's from its REP to the
 * RTU, known when each moves its QP. */
TEST_F(cm_conn_t, handshake_round_trip_is_timed) {
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    now += 3'000'000; /* the REQ's way, and the passive application's accept */
    flush();
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    now += 2'000'000;
    flush(); /* the REP, and at once the RTU */
    ASSERT_EQ(a.conn.state(), cm_state::established);
    ASSERT_EQ(b.conn.state(), cm_state::established);
    EXPECT_EQ(a.conn.handshake_rtt_ns(), 5'000'000u);
    EXPECT_EQ(a.rtt_at_qp_move, 5'000'000u);
    EXPECT_EQ(b.conn.handshake_rtt_ns(), 2'000'000u);
    EXPECT_EQ(b.rtt_at_qp_move, 2'000'000u);
}

/* Karn's rule: an answer to a message sent twice may be to either copy. */
TEST_F(cm_conn_t, handshake_message_sent_again_is_not_timed) {
    lose = {0x10, 0x14}; /* the first REQ and the first RTU */
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    next_timer(); /* the REQ again */
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    now += 1'000'000;
    flush();
    ASSERT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(a.conn.handshake_rtt_ns(), 0u);
    EXPECT_EQ(a.rtt_at_qp_move, 0u);
    ASSERT_EQ(b.conn.state(), cm_state::rep_sent);
    next_timer(); /* the REP again, answered by the RTU again */
    ASSERT_EQ(b.conn.state(), cm_state::established);
    EXPECT_EQ(b.conn.handshake_rtt_ns(), 0u);
    EXPECT_EQ(b.rtt_at_qp_move, 0u);
}

/* An MRA answers the REQ: the round trip ends there; the REP after it
 * waited for the peer's application. */
TEST_F(cm_conn_t, mra_ends_the_round_trip) {
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    flush();
    now += 1'500'000;
    uint8_t mad[mad_size];
    build_cm_mra(mad, a.conn.tid(), b.conn.local_comm_id(), a.conn.local_comm_id(), cm_msg_ref::req,
                 24);
    a.deliver(std::vector<uint8_t>(mad, mad + mad_size), now);
    now += 500'000'000;
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    flush();
    ASSERT_EQ(a.conn.state(), cm_state::established);
    EXPECT_EQ(a.conn.handshake_rtt_ns(), 1'500'000u);
}

TEST_F(cm_conn_t, messages_out_of_place_are_counted_and_dropped) {
    ASSERT_TRUE(a.conn.connect(req_params(), now));
    uint8_t mad[mad_size];
    build_cm_rtu(mad, 1, 0x99, a.conn.local_comm_id());
    a.deliver(std::vector<uint8_t>(mad, mad + mad_size), now); /* an RTU to a REQ_SENT */
    build_cm_drep(mad, 1, 0x99, a.conn.local_comm_id());
    a.deliver(std::vector<uint8_t>(mad, mad + mad_size), now);
    EXPECT_EQ(a.cnt.unexpected, 2u);
    EXPECT_EQ(a.conn.state(), cm_state::req_sent);
    EXPECT_FALSE(a.conn.disconnect(now)); /* not connected yet */
    EXPECT_FALSE(a.conn.connect(req_params(), now));
}

/* Timewait lasts two packet lifetimes plus the QP's ACK timeout; with an ACK
 * timeout of 2^21 * 4.096 us B is still in timewait when A's DREQ comes
 * again. (With a shorter one it is idle by then, and the agent answers a
 * DREQ for a comm ID it no longer has with a DREP, as cm.c does.) */
TEST_F(cm_conn_t, lost_drep_is_answered_from_timewait) {
    cm_req_params p = req_params();
    p.path.local_ack_timeout = 21;
    ASSERT_TRUE(a.conn.connect(p, now));
    flush();
    ASSERT_TRUE(b.conn.accept(rep_params(), now));
    flush();
    lose = {0x16};
    ASSERT_TRUE(a.conn.disconnect(now));
    flush();
    ASSERT_TRUE(b.conn.disconnect(now));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::dreq_sent);
    next_timer(); /* the DREQ again; B in timewait sends the DREP again */
    EXPECT_EQ(a.conn.state(), cm_state::timewait);
    EXPECT_EQ(b.cnt.duplicates, 1u);
    EXPECT_EQ(a.cnt.retries, 1u);
}

TEST_F(cm_conn_t, both_sides_disconnect_at_once) {
    connect_both();
    ASSERT_TRUE(a.conn.disconnect(now));
    ASSERT_TRUE(b.conn.disconnect(now));
    flush();
    EXPECT_EQ(a.conn.state(), cm_state::timewait);
    EXPECT_EQ(b.conn.state(), cm_state::timewait);
    EXPECT_EQ(a.events.back(), cm_conn_event::disconnected);
    EXPECT_EQ(b.events.back(), cm_conn_event::disconnected);
}

TEST_F(cm_conn_t, req_in_timewait_is_stale) {
    connect_both();
    ASSERT_TRUE(a.conn.disconnect(now));
    flush();
    ASSERT_TRUE(b.conn.disconnect(now));
    flush();
    ASSERT_EQ(b.conn.state(), cm_state::timewait);
    uint8_t mad[mad_size];
    cm_req_params p = req_params();
    p.local_comm_id = a.conn.local_comm_id();
    build_cm_req(mad, 77, p);
    b.deliver(std::vector<uint8_t>(mad, mad + mad_size), now);
    ASSERT_EQ(pipe.size(), 1u);
    cm_mad_view v;
    ASSERT_EQ(parse_cm_mad(pipe.front().mad.data(), mad_size, v), mad_error::ok);
    EXPECT_EQ(v.info->attr, cm_attr::rej);
    EXPECT_EQ(v.as<cm_rej>()->reason(), uint16_t(cm_rej_reason::stale_conn));
    EXPECT_EQ(v.hdr->tid(), 77u);
}

TEST(cm_conn, state_names) {
    for (unsigned s = 0; s < unsigned(cm_state::count); s++)
        EXPECT_STRNE(cm_state_name(cm_state(s)), "?");
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_agent.cpp: two agents (10.0.0.1 active, 10.0.0.2 passive)
 * joined by a pipe. A REQ finds its listener, or a REJ saying nobody
 * listens; a retried REQ finds its connection instead of making a second;
 * the half-open cap holds and counts; a DREQ for a comm ID that is gone
 * still gets its DREP; bad MADs are counted by reason; destroying an ID
 * leaves the peer nothing hanging (an unanswered REQ: REJ timeout).
 */
#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <vector>

#include "uroce_cm_agent.h"

using namespace uroce;

namespace {

struct node;

struct in_flight {
    node *to;
    cm_peer from;
    std::vector<uint8_t> mad;
};

struct node final : cm_agent::endpoint {
    cm_peer me;
    std::deque<in_flight> *pipe = nullptr;
    std::vector<node *> *net = nullptr;
    std::vector<std::pair<uint32_t, cm_conn_event>> events; /* local comm ID, event */
    std::unique_ptr<cm_agent> agent;

    node(uint32_t ip, uint64_t seed, unsigned max_half_open = 1024) {
        me.addr = gid::from_ipv4(ip);
        cm_agent::config c;
        c.seed = seed;
        c.max_half_open = max_half_open;
        agent = std::make_unique<cm_agent>(*this, c);
    }
    void send_mad(const cm_peer &to, const uint8_t *mad) override {
        for (node *n : *net)
            if (n->me.addr == to.addr)
                pipe->push_back({n, me, std::vector<uint8_t>(mad, mad + mad_size)});
    }
    bool qp_to_rts(cm_conn &, const cm_rep &) override { return true; }
    void qp_established(cm_conn &) override {}
    void qp_to_error(cm_conn &) override {}
    bool refuse_requests = false; /* reject each CONNECT_REQUEST in the event, as a listener may */
    void event(cm_conn &c, cm_conn_event e) override {
        events.emplace_back(c.local_comm_id(), e);
        if (e == cm_conn_event::connect_request && refuse_requests)
            c.reject(cm_rej_reason::consumer_defined);
    }
    size_t count(cm_conn_event e) const {
        size_t n = 0;
        for (auto &[id, ev] : events)
            n += ev == e;
        return n;
    }
};

struct cm_agent_t : ::testing::Test {
    std::deque<in_flight> pipe;
    std::vector<node *> net;
    node a{0x0a000001, 1}, b{0x0a000002, 2, 2};
    uint64_t now = 1'000'000;
    unsigned lose_next = 0; /* lose this many of the next MADs */

    void SetUp() override {
        net = {&a, &b};
        for (node *n : net) {
            n->pipe = &pipe;
            n->net = &net;
        }
    }
    std::vector<uint16_t> flush() {
        std::vector<uint16_t> seen;
        while (!pipe.empty()) {
            in_flight f = pipe.front();
            pipe.pop_front();
            seen.push_back(reinterpret_cast<const mad_hdr *>(f.mad.data())->attr_id());
            if (lose_next) {
                lose_next--;
                continue;
            }
            f.to->agent->receive(f.from, f.mad.data(), f.mad.size(), now);
        }
        return seen;
    }
    void advance(uint64_t ns) {
        now += ns;
        a.agent->poll(now);
        b.agent->poll(now);
        flush();
    }
    cm_req_params req(uint16_t port = 7174) const {
        cm_req_params p;
        p.service_id = rdma_service_id(rdma_port_space::tcp, port);
        p.local_qpn = 0x11;
        p.path.local_gid = a.me.addr;
        p.path.remote_gid = b.me.addr;
        return p;
    }
    cm_conn *passive_of(const cm_conn *active) const {
        for (auto &[id, e] : b.events)
            if (e == cm_conn_event::connect_request) {
                cm_conn *c = b.agent->find(id);
                if (c && c->remote_comm_id() == active->local_comm_id()) return c;
            }
        return nullptr;
    }
};

TEST_F(cm_agent_t, req_to_a_listener_connects) {
    ASSERT_TRUE(b.agent->listen(req().service_id, &b));
    EXPECT_FALSE(b.agent->listen(req().service_id, &b)); /* taken */
    EXPECT_EQ(b.agent->listener_context(req().service_id), &b);
    cm_conn *ca = a.agent->connect(b.me, req(), now);
    ASSERT_NE(ca, nullptr);
    flush();
    cm_conn *cb = passive_of(ca);
    ASSERT_NE(cb, nullptr);
    EXPECT_EQ(b.agent->peer_of(cb)->addr, a.me.addr);
    EXPECT_EQ(b.agent->half_open(), 1u);
    ASSERT_TRUE(cb->accept(cm_rep_params{}, now));
    EXPECT_EQ(flush(), (std::vector<uint16_t>{0x13, 0x14}));
    EXPECT_EQ(ca->state(), cm_state::established);
    EXPECT_EQ(cb->state(), cm_state::established);
    EXPECT_EQ(b.agent->half_open(), 0u);
    EXPECT_EQ(a.count(cm_conn_event::established), 1u);
    EXPECT_EQ(b.count(cm_conn_event::established), 1u);
}

TEST_F(cm_agent_t, req_to_nobody_is_refused) {
    cm_conn *ca = a.agent->connect(b.me, req(9999), now);
    EXPECT_EQ(flush(), (std::vector<uint16_t>{0x10, 0x12})); /* REQ, REJ */
    EXPECT_EQ(ca->state(), cm_state::idle);
    EXPECT_EQ(ca->last_rej_reason(), uint16_t(cm_rej_reason::invalid_service_id));
    EXPECT_EQ(a.count(cm_conn_event::rejected), 1u);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::req_no_listener)], 1u);
    EXPECT_EQ(b.agent->conn_count(), 0u); /* nothing kept for it */
}

TEST_F(cm_agent_t, retried_req_finds_its_connection) {
    ASSERT_TRUE(b.agent->listen(req().service_id, nullptr));
    cm_conn *ca = a.agent->connect(b.me, req(), now);
    flush();
    cm_conn *cb = passive_of(ca);
    ASSERT_NE(cb, nullptr);
    lose_next = 1; /* the REP */
    ASSERT_TRUE(cb->accept(cm_rep_params{}, now));
    flush();
    advance(cm_conn::timeout_ns(20) + 2 * cm_conn::timeout_ns(16)); /* A's REQ again */
    EXPECT_EQ(ca->state(), cm_state::established);
    EXPECT_EQ(cb->state(), cm_state::established);
    EXPECT_EQ(b.agent->conn_count(), 1u); /* the retried REQ made no second connection */
    EXPECT_EQ(b.count(cm_conn_event::connect_request), 1u);
}

TEST_F(cm_agent_t, half_open_connections_are_capped) {
    ASSERT_TRUE(b.agent->listen(req().service_id, nullptr));
    cm_conn *c1 = a.agent->connect(b.me, req(), now);
    cm_conn *c2 = a.agent->connect(b.me, req(), now);
    cm_conn *c3 = a.agent->connect(b.me, req(), now);
    flush();
    EXPECT_EQ(b.agent->half_open(), 2u); /* max_half_open */
    EXPECT_EQ(c1->state(), cm_state::req_sent);
    EXPECT_EQ(c2->state(), cm_state::req_sent);
    EXPECT_EQ(c3->state(), cm_state::idle);
    EXPECT_EQ(c3->last_rej_reason(), uint16_t(cm_rej_reason::no_resources));
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::req_half_open_full)], 1u);
    EXPECT_EQ(b.agent->conn_count(), 2u);
}

TEST_F(cm_agent_t, dreq_for_a_gone_connection_gets_its_drep) {
    uint8_t mad[mad_size];
    build_cm_dreq(mad, 42, 0x1234, 0x5678 /* no such comm ID at B */, 0x11);
    b.agent->receive(a.me, mad, mad_size, now);
    ASSERT_EQ(pipe.size(), 1u);
    cm_mad_view v;
    ASSERT_EQ(parse_cm_mad(pipe.front().mad.data(), mad_size, v), mad_error::ok);
    EXPECT_EQ(v.info->attr, cm_attr::drep);
    EXPECT_EQ(v.hdr->tid(), 42u);
    EXPECT_EQ(v.as<cm_drep>()->remote_comm_id(), 0x1234u);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::stale_dreq)], 1u);
    build_cm_rtu(mad, 43, 0x1234, 0x5678);
    b.agent->receive(a.me, mad, mad_size, now);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::no_conn)], 1u);
}

TEST_F(cm_agent_t, bad_mads_are_counted_by_reason) {
    std::vector<uint8_t> mad(mad_size, 0);
    b.agent->receive(a.me, mad.data(), 100, now);
    b.agent->receive(a.me, mad.data(), mad_size, now); /* base version 0 */
    mad[0] = 1;
    mad[1] = 0x03; /* the SA's class */
    b.agent->receive(a.me, mad.data(), mad_size, now);
    const auto &r = b.agent->counters().mad_refused;
    EXPECT_EQ(r[size_t(mad_error::short_mad)], 1u);
    EXPECT_EQ(r[size_t(mad_error::bad_base_version)], 1u);
    EXPECT_EQ(r[size_t(mad_error::not_cm_class)], 1u);
    EXPECT_TRUE(pipe.empty());
    EXPECT_EQ(b.agent->conn_count(), 0u);
}

TEST_F(cm_agent_t, destroy_leaves_the_peer_nothing_hanging) {
    ASSERT_TRUE(b.agent->listen(req().service_id, nullptr));
    cm_conn *c1 = a.agent->connect(b.me, req(), now);
    flush();
    b.agent->destroy(passive_of(c1), now); /* REQ_RCVD: REJ consumer defined */
    flush();
    EXPECT_EQ(c1->state(), cm_state::idle);
    EXPECT_EQ(c1->last_rej_reason(), uint16_t(cm_rej_reason::consumer_defined));
    EXPECT_EQ(b.agent->conn_count(), 0u);

    cm_conn *c2 = a.agent->connect(b.me, req(), now);
    flush();
    ASSERT_TRUE(passive_of(c2)->accept(cm_rep_params{}, now));
    flush();
    ASSERT_EQ(c2->state(), cm_state::established);
    const uint32_t id2 = c2->local_comm_id();
    cm_conn *p2 = passive_of(c2);
    a.agent->destroy(c2, now); /* ESTABLISHED: DREQ, then freed after timewait */
    EXPECT_EQ(a.agent->find(id2), c2);
    /* the DREQ's retry waits for the peer, from now */
    EXPECT_EQ(c2->deadline(), now + cm_conn::timeout_ns(20) + 2 * cm_conn::timeout_ns(16));
    flush();
    EXPECT_EQ(b.count(cm_conn_event::disconnected), 1u);
    ASSERT_TRUE(p2->disconnect(now)); /* B's application answers, as rdma_disconnect does */
    flush();
    EXPECT_EQ(a.agent->find(id2)->state(), cm_state::timewait);
    advance(cm_conn::timeout_ns(20));       /* past timewait */
    EXPECT_EQ(a.agent->find(id2), nullptr); /* freed */
    EXPECT_EQ(a.agent->counters().conns_freed, 1u);
}

/* cm.c cm_destroy_id, IB_CM_REQ_SENT / IB_CM_MRA_REQ_RCVD: the REQ is given
 * up with REJ timeout, remote comm ID 0, message rejected "other", our CA
 * GUID as the ARI; the passive side finds its half-open connection by the
 * comm ID and that GUID (cm_acquire_rejected_id) and reports the rejection. */
TEST_F(cm_agent_t, destroying_an_unanswered_req_sends_rej_timeout) {
    ASSERT_TRUE(b.agent->listen(req().service_id, nullptr));
    cm_req_params p = req();
    p.local_ca_guid = 0x0211'22ff'fe33'4455ull;
    for (bool mra : {false, true}) {
        cm_conn *ca = a.agent->connect(b.me, p, now);
        flush();
        cm_conn *cb = passive_of(ca);
        ASSERT_NE(cb, nullptr);
        ASSERT_EQ(cb->state(), cm_state::req_rcvd);
        EXPECT_EQ(b.agent->half_open(), 1u);
        if (mra) { /* the passive side asked for time (Linux sends MRA for every REQ) */
            uint8_t m[mad_size];
            build_cm_mra(m, ca->tid(), cb->local_comm_id(), ca->local_comm_id(), cm_msg_ref::req,
                         24);
            a.agent->receive(b.me, m, sizeof(m), now);
            ASSERT_EQ(ca->state(), cm_state::mra_req_rcvd);
        }
        const uint32_t active_id = ca->local_comm_id();
        const uint64_t tid = ca->tid();
        a.agent->destroy(ca, now);
        EXPECT_EQ(a.agent->find(active_id), nullptr); /* freed at once */
        ASSERT_EQ(pipe.size(), 1u);
        const std::vector<uint8_t> rej_mad = pipe.front().mad;
        cm_mad_view v;
        ASSERT_EQ(parse_cm_mad(rej_mad.data(), rej_mad.size(), v), mad_error::ok);
        ASSERT_EQ(v.info->attr, cm_attr::rej);
        const cm_rej &r = *v.as<cm_rej>();
        EXPECT_EQ(v.hdr->tid(), tid); /* the REQ's transaction */
        EXPECT_EQ(r.local_comm_id(), active_id);
        EXPECT_EQ(r.remote_comm_id(), 0u); /* even after an MRA named the peer's */
        EXPECT_EQ(r.msg_rejected(), cm_msg_ref::other);
        EXPECT_EQ(r.reason(), uint16_t(cm_rej_reason::timeout));
        EXPECT_EQ(r.reject_info_length(), 8u);
        EXPECT_EQ(load_be64(r.ari), p.local_ca_guid);
        const uint32_t passive_id = cb->local_comm_id();
        flush();
        EXPECT_EQ(cb->state(), cm_state::idle);
        EXPECT_EQ(cb->last_rej_reason(), uint16_t(cm_rej_reason::timeout));
        EXPECT_EQ(b.events.back(), std::make_pair(passive_id, cm_conn_event::rejected));
        EXPECT_EQ(b.agent->half_open(), 0u);
        b.agent->destroy(cb, now); /* the user destroys it: nothing more on the wire */
        EXPECT_TRUE(pipe.empty());
        EXPECT_EQ(b.agent->conn_count(), 0u);
    }
    /* Hostile or stale: a REJ timeout whose GUID is not the REQ's, or for a
     * comm ID we have no connection with, changes nothing and is counted. */
    cm_conn *ca = a.agent->connect(b.me, p, now);
    flush();
    cm_conn *cb = passive_of(ca);
    ASSERT_NE(cb, nullptr);
    const uint64_t before = b.agent->counters().drops[size_t(cm_drop::no_conn)];
    for (auto [id, guid] : {std::pair{ca->local_comm_id(), p.local_ca_guid + 1},
                            std::pair{ca->local_comm_id() + 1, p.local_ca_guid}}) {
        uint8_t m[mad_size], g[8];
        store_be64(g, guid);
        build_cm_rej(m, ca->tid(), id, 0, cm_msg_ref::other, cm_rej_reason::timeout, {},
                     {g, sizeof(g)});
        b.agent->receive(a.me, m, sizeof(m), now);
    }
    EXPECT_EQ(cb->state(), cm_state::req_rcvd);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::no_conn)], before + 2);
}

TEST_F(cm_agent_t, comm_ids_are_unique_and_start_anywhere) {
    std::set<uint32_t> ids;
    for (int i = 0; i < 100; i++) {
        cm_conn *c = a.agent->connect(b.me, req(), now);
        ASSERT_NE(c->local_comm_id(), 0u);
        ids.insert(c->local_comm_id());
    }
    EXPECT_EQ(ids.size(), 100u);
    node other(0x0a000003, 99);
    other.pipe = &pipe;
    other.net = &net;
    cm_conn *c = other.agent->connect(b.me, req(), now);
    EXPECT_EQ(ids.count(c->local_comm_id()), 0u); /* another seed, another range */
    pipe.clear();
}

TEST(cm_agent, drop_names) {
    for (unsigned d = 0; d < unsigned(cm_drop::count); d++)
        EXPECT_STRNE(cm_drop_name(cm_drop(d)), "unknown");
}

/* The endpoint may refuse a request inside its CONNECT_REQUEST event (the
 * rdma_cm layer does when the IP header is not for us): the REJ leaves and
 * the agent keeps nothing of it; the REQ's private data was there to read. */
TEST_F(cm_agent_t, a_request_refused_in_its_event_leaves_no_state) {
    ASSERT_TRUE(b.agent->listen(req().service_id, &b));
    b.refuse_requests = true;
    cm_req_params p = req();
    const uint8_t pd[4] = {1, 2, 3, 4};
    p.private_data = {pd, sizeof(pd)};
    cm_conn *ca = a.agent->connect(b.me, p, now);
    EXPECT_EQ(flush(), (std::vector<uint16_t>{0x10, 0x12}));
    EXPECT_EQ(b.agent->conn_count(), 0u);
    EXPECT_EQ(b.agent->counters().conns_freed, 1u);
    EXPECT_EQ(ca->state(), cm_state::idle);
    EXPECT_EQ(ca->last_rej_reason(), uint16_t(cm_rej_reason::consumer_defined));
    EXPECT_EQ(a.count(cm_conn_event::rejected), 1u);
}

/* SIDR goes to the endpoint (here one that does not handle it: counted);
 * LAP and APR, which RoCE never uses, are counted and dropped. */
TEST_F(cm_agent_t, sidr_goes_to_the_endpoint_and_lap_is_dropped) {
    uint8_t mad[mad_size];
    build_cm_sidr_req(mad, 1, 7, req().service_id);
    b.agent->receive(a.me, mad, mad_size, now);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::sidr_unhandled)], 1u);
    EXPECT_EQ(b.agent->msg_counters().received[unsigned(cm_attr::sidr_req) - 0x10], 1u);
    build_cm_sidr_rep(mad, 1, 7, cm_sidr_status::valid, 0x42, req().service_id, 0x1234);
    b.agent->receive(a.me, mad, mad_size, now);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::sidr_unhandled)], 2u);
    build_cm_rtu(mad, 1, 5, 6);
    reinterpret_cast<mad_hdr *>(mad)->set_attr_id(uint16_t(cm_attr::lap));
    b.agent->receive(a.me, mad, mad_size, now);
    EXPECT_EQ(b.agent->counters().drops[size_t(cm_drop::not_sent)], 1u);
    EXPECT_TRUE(pipe.empty()) << "nothing answered";
}

} // namespace

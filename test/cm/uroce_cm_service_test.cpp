/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_service.cpp: rdma_cm between two full stacks joined by an
 * in-memory link. connect / accept / ESTABLISHED with the negotiated QP
 * attributes and data over the QP; disconnect from either side, and in the
 * middle of a transfer (both QPs flush); a REQ to a closed port is REJECTED
 * ("connection refused"); a REQ whose rdma_cm IP header is not for the
 * listener's address is refused; a peer that vanishes mid-handshake ends in
 * UNREACHABLE after the retries, on either side; a lost REP costs a retry,
 * not the connection; 1000 connections in sequence and 100 at once.
 */
#include <cerrno>
#include <vector>

#include "cm_stacks.h"

using namespace uroce;
using namespace uroce::test;

namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env("512"));

constexpr uint16_t port = 7174;

class cm_service_t : public cm_pair {
  protected:
    cm_id *listener = nullptr;

    void listen_b(uint16_t p = port, uint32_t ip = 0) {
        ASSERT_EQ(create_id(b.ch, &listener, this, rdma_port_space::tcp), verbs_error::ok);
        sockaddr_storage ss = addr(ip, p);
        ASSERT_EQ(bind_addr(listener, sa(ss)), verbs_error::ok);
        ASSERT_EQ(listen(listener, 0), verbs_error::ok);
    }

    /* a: resolve and route to b:p; its QP made. */
    cm_id *resolve_a(uint16_t p = port, uint32_t dst_ip = ip_b) {
        cm_id *id = nullptr;
        EXPECT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::tcp), verbs_error::ok);
        sockaddr_storage dst = addr(dst_ip, p);
        EXPECT_EQ(resolve_addr(id, nullptr, sa(dst), 2000), verbs_error::ok);
        EXPECT_TRUE(expect_event(a, cm_event_type::addr_resolved));
        EXPECT_EQ(resolve_route(id, 2000), verbs_error::ok);
        EXPECT_TRUE(expect_event(a, cm_event_type::route_resolved));
        qp_init_attr ia = qp_init(a);
        EXPECT_EQ(create_qp(id, a.pd, &ia), verbs_error::ok);
        return id;
    }

    /* A whole handshake: returns {active, passive}. */
    std::pair<cm_id *, cm_id *> connect_pair(uint16_t p = port) {
        cm_id *act = resolve_a(p);
        cm_conn_param cp;
        cp.responder_resources = 4;
        cp.initiator_depth = 4;
        EXPECT_EQ(connect(act, &cp), verbs_error::ok);
        cm_id *pas = nullptr;
        EXPECT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
        if (!pas) return {act, nullptr};
        qp_init_attr ia = qp_init(b);
        EXPECT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
        EXPECT_EQ(accept(pas, &cp), verbs_error::ok);
        EXPECT_TRUE(expect_event(a, cm_event_type::established));
        EXPECT_TRUE(expect_event(b, cm_event_type::established));
        return {act, pas};
    }

    void destroy(cm_id *id) {
        destroy_qp(id);
        EXPECT_EQ(destroy_id(id), verbs_error::ok);
    }
    void TearDown() override {
        if (listener) destroy_id(listener);
        /* every event acknowledged, every id freed by the loop */
        for (int i = 0; i < 10; i++)
            pump();
        cm_pair::TearDown();
    }
};

TEST_F(cm_service_t, connect_accept_carries_data_and_negotiates_the_qp) {
    start();
    listen_b();
    cm_id *act = resolve_a();
    EXPECT_EQ(act->route.dgid, gid::from_ipv4(ip_b));
    EXPECT_EQ(act->route.num_paths, 1);
    const char hello[] = "hello from rping's client";
    cm_conn_param cp;
    cp.private_data = hello;
    cp.private_data_len = sizeof(hello);
    cp.responder_resources = 2;
    cp.initiator_depth = 3;
    cp.retry_count = 6;
    cp.rnr_retry_count = 5;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);

    cm_event req;
    cm_id *pas = nullptr;
    cm_event *ev = next_event(b);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::connect_request);
    pas = ev->id;
    EXPECT_EQ(ev->listen_id, listener);
    EXPECT_EQ(pas->context, this) << "the listener's context";
    ASSERT_EQ(ev->conn.private_data_len, cm_req_private_max);
    EXPECT_EQ(std::memcmp(ev->conn.private_data, hello, sizeof(hello)), 0);
    /* as seen from the passive side (cm.c cm_format_req_event) */
    EXPECT_EQ(ev->conn.responder_resources, 3);
    EXPECT_EQ(ev->conn.initiator_depth, 2);
    EXPECT_EQ(ev->conn.retry_count, 6);
    EXPECT_EQ(ev->conn.rnr_retry_count, 5);
    EXPECT_EQ(ev->conn.qp_num, qp_num(act->qp));
    req = *ev;
    ack_event(ev);
    EXPECT_EQ(pas->route.dgid, gid::from_ipv4(ip_a));
    EXPECT_EQ(pas->route.sgid, gid::from_ipv4(ip_b));
    EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in *>(&pas->route.src_addr)->sin_port), port);
    EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in *>(&pas->route.dst_addr)->sin_port),
              ntohs(reinterpret_cast<sockaddr_in *>(&act->route.src_addr)->sin_port));

    qp_init_attr ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    const char welcome[] = "welcome";
    cm_conn_param ap;
    ap.private_data = welcome;
    ap.private_data_len = sizeof(welcome);
    ap.responder_resources = 3;
    ap.initiator_depth = 2;
    ap.rnr_retry_count = 4;
    ASSERT_EQ(accept(pas, &ap), verbs_error::ok);
    qp_attr at;
    ASSERT_EQ(query_qp(pas->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts) << "rdma_accept: RTR and RTS before the REP";
    EXPECT_EQ(at.dest_qp_num, qp_num(act->qp));
    EXPECT_EQ(at.max_dest_rd_atomic, 3);
    EXPECT_EQ(at.max_rd_atomic, 2);
    EXPECT_EQ(at.retry_cnt, 6);
    EXPECT_EQ(at.rnr_retry, 5) << "the REQ's RNR retry count";
    EXPECT_EQ(at.ah_attr.grh.flow_label, act->route.flow_label);

    ev = next_event(a);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::established) << cm_event_str(ev->event);
    ASSERT_EQ(ev->conn.private_data_len, cm_rep_private_max);
    EXPECT_STREQ(static_cast<const char *>(ev->conn.private_data), welcome);
    EXPECT_EQ(ev->conn.qp_num, qp_num(pas->qp));
    ack_event(ev);
    ASSERT_TRUE(expect_event(b, cm_event_type::established));
    ASSERT_EQ(query_qp(act->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.dest_qp_num, qp_num(pas->qp));
    EXPECT_EQ(at.max_dest_rd_atomic, 2) << "the REP's initiator depth";
    EXPECT_EQ(at.max_rd_atomic, 3) << "the REP's responder resources";
    EXPECT_EQ(at.rnr_retry, 4) << "the REP's RNR retry count";
    EXPECT_EQ(at.path_mtu, mtu::mtu_4096);

    /* data: a SEND each way and an RDMA READ */
    std::vector<uint8_t> abuf(8192, 0xaa), bbuf(8192, 0xbb);
    mr *am = reg_mr(a.pd, abuf.data(), abuf.size(), access_local_write | access_remote_read);
    mr *bm = reg_mr(b.pd, bbuf.data(), bbuf.size(),
                    access_local_write | access_remote_read | access_remote_write);
    sge rs{reinterpret_cast<uint64_t>(bbuf.data()), 4096, mr_lkey(bm)};
    recv_wr r;
    r.sg_list = &rs;
    r.num_sge = 1;
    recv_wr *rbad;
    ASSERT_EQ(post_recv(pas->qp, &r, &rbad), verbs_error::ok);
    sge ss{reinterpret_cast<uint64_t>(abuf.data()), 4096, mr_lkey(am)};
    send_wr w;
    w.sg_list = &ss;
    w.num_sge = 1;
    w.opcode = wr_opcode::send;
    w.send_flags = send_signaled;
    send_wr *sbad;
    ASSERT_EQ(post_send(act->qp, &w, &sbad), verbs_error::ok);
    sge rd{reinterpret_cast<uint64_t>(abuf.data() + 4096), 4096, mr_lkey(am)};
    send_wr rw;
    rw.wr_id = 2;
    rw.sg_list = &rd;
    rw.num_sge = 1;
    rw.opcode = wr_opcode::rdma_read;
    rw.send_flags = send_signaled;
    rw.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(bbuf.data() + 4096);
    rw.wr.rdma.rkey = mr_rkey(bm);
    ASSERT_EQ(post_send(act->qp, &rw, &sbad), verbs_error::ok);
    int got_a = 0, got_b = 0;
    ASSERT_TRUE(run_until([&] {
        wc c;
        while (poll_cq(a.cq, 1, &c) == 1) {
            EXPECT_EQ(c.status, wc_status::success);
            got_a++;
        }
        while (poll_cq(b.cq, 1, &c) == 1) {
            EXPECT_EQ(c.status, wc_status::success);
            got_b++;
        }
        return got_a == 2 && got_b == 1;
    }));
    EXPECT_EQ(bbuf[0], 0xaa);
    EXPECT_EQ(abuf[4096], 0xbb);

    /* a disconnects: both see DISCONNECTED, both QPs in ERR */
    ASSERT_EQ(disconnect(act), verbs_error::ok);
    ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    ASSERT_EQ(disconnect(pas), verbs_error::ok) << "the DREP";
    ASSERT_TRUE(expect_event(a, cm_event_type::disconnected));
    ASSERT_EQ(query_qp(act->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::err);
    ASSERT_EQ(query_qp(pas->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::err);
    EXPECT_EQ(disconnect(act), verbs_error::inval) << "once";
    /* timewait ends, then the ids go */
    ASSERT_TRUE(expect_event(a, cm_event_type::timewait_exit));
    ASSERT_TRUE(expect_event(b, cm_event_type::timewait_exit));
    dereg_mr(am);
    dereg_mr(bm);
    destroy(act);
    destroy(pas);
    EXPECT_EQ(cm_connection_count(a.cm), 0u);
    EXPECT_EQ(cm_connection_count(b.cm), 0u);
    const cm_counters_snapshot ca = cm_counters(a.cm), cb = cm_counters(b.cm);
    EXPECT_EQ(ca.req_tx, 1u);
    EXPECT_EQ(cb.req_rx, 1u);
    EXPECT_EQ(cb.rep_tx, 1u);
    EXPECT_EQ(ca.rtu_tx, 1u);
    EXPECT_EQ(ca.dreq_tx, 1u);
    EXPECT_EQ(cb.drep_tx, 1u);
    EXPECT_EQ(ca.retries + cb.retries, 0u);
}

TEST_F(cm_service_t, passive_side_disconnects_first) {
    start();
    listen_b();
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    ASSERT_EQ(disconnect(pas), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::disconnected));
    /* destroy_id without disconnect: the library sends the DREP */
    destroy(act);
    ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    destroy(pas);
    ASSERT_TRUE(run_until(
        [&] { return cm_connection_count(a.cm) == 0 && cm_connection_count(b.cm) == 0; }));
}

TEST_F(cm_service_t, closed_port_is_rejected_as_connection_refused) {
    start();
    cm_id *act = resolve_a(4444);
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::rejected, nullptr, nullptr, &status));
    EXPECT_EQ(status, int(cm_rej_reason::invalid_service_id));
    EXPECT_EQ(cm_counters(b.cm).req_no_listener, 1u);
    destroy(act);
}

TEST_F(cm_service_t, reject_by_the_listener_carries_its_private_data) {
    start();
    listen_b();
    cm_id *act = resolve_a();
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    const char no[] = "go away";
    ASSERT_EQ(reject(pas, no, sizeof(no)), verbs_error::ok);
    cm_event *ev = next_event(a);
    ASSERT_NE(ev, nullptr);
    EXPECT_EQ(ev->event, cm_event_type::rejected);
    EXPECT_EQ(ev->status, int(cm_rej_reason::consumer_defined));
    EXPECT_STREQ(static_cast<const char *>(ev->conn.private_data), no);
    ack_event(ev);
    destroy(pas);
    destroy(act);
}

TEST_F(cm_service_t, req_for_another_address_of_the_port_is_refused) {
    constexpr uint32_t ip_b2 = 0x0a4d000d; /* 10.77.0.13 */
    start(false, {ip_b2});
    listen_b(port, ip_b2); /* bound to .13; the REQ's IP header names .11 */
    cm_id *act = resolve_a(port, ip_b);
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::rejected, nullptr, nullptr, &status));
    EXPECT_EQ(status, int(cm_rej_reason::consumer_defined));
    EXPECT_EQ(cm_counters(b.cm).req_bad_ip_hdr, 1u);
    EXPECT_EQ(cm_connection_count(b.cm), 0u) << "no state kept for it";
    destroy(act);
}

TEST_F(cm_service_t, peer_vanishing_before_rep_is_unreachable_after_the_retries) {
    cfg.response_timeout = 14; /* ~67 ms, plus two packet lifetimes: ~0.6 s a try */
    cfg.max_cm_retries = 3;
    start();
    listen_b();
    cm_id *act = resolve_a();
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from != a.port; });
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::unreachable, nullptr, nullptr, &status));
    EXPECT_EQ(status, -ETIMEDOUT);
    const cm_counters_snapshot c = cm_counters(a.cm);
    EXPECT_EQ(c.req_tx, 4u) << "the REQ and three retries";
    EXPECT_EQ(c.retries, 3u);
    EXPECT_EQ(c.timeouts, 1u);
    destroy(act);
}

TEST_F(cm_service_t, active_vanishing_after_rep_is_unreachable_on_the_passive_side) {
    cfg.response_timeout = 14;
    cfg.max_cm_retries = 2;
    start();
    listen_b();
    cm_id *act = resolve_a();
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from != b.port; });
    qp_init_attr ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    ASSERT_EQ(accept(pas, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(b, cm_event_type::unreachable, nullptr, nullptr, &status));
    EXPECT_EQ(status, -ETIMEDOUT);
    qp_attr at;
    ASSERT_EQ(query_qp(pas->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::err);
    const cm_counters_snapshot cb = cm_counters(b.cm);
    EXPECT_EQ(cb.retries, 2u);
    EXPECT_EQ(cb.rep_tx, 3u + cb.duplicates) << "each of a's REQ retries is answered too";
    /* a never heard the REP: its REQ retries meet a passive side that gave up */
    destroy(pas);
    destroy(act);
}

TEST_F(cm_service_t, a_lost_rep_costs_one_retry_not_the_connection) {
    cfg.response_timeout = 14;
    start();
    listen_b();
    int dropped = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        /* the first REP: UD to QP1 from b, attribute 0x13 at MAD offset 16 */
        if (from == b.port && dropped == 0 && m->pkt_len > 300) {
            const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
            const size_t mad = 14 + 20 + 8 + 12 + 8;
            if (load_be16(p + mad + 16) == 0x13) {
                dropped++;
                return false;
            }
        }
        return true;
    });
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    EXPECT_EQ(dropped, 1);
    const cm_counters_snapshot ca = cm_counters(a.cm), cb = cm_counters(b.cm);
    /* both timers run out once: a's REQ comes again (answered from the
     * state with the REP), b's REP goes again */
    EXPECT_GE(ca.retries + cb.retries, 1u);
    EXPECT_LE(ca.retries + cb.retries, 2u);
    EXPECT_GE(cb.duplicates, ca.retries) << "a duplicate REQ answered with the REP again";
    EXPECT_EQ(cm_connection_count(b.cm), 1u) << "one connection, not two";
    destroy(act);
    destroy(pas);
}

TEST_F(cm_service_t, disconnect_mid_transfer_flushes_both_sides) {
    start();
    listen_b();
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    std::vector<uint8_t> abuf(64 * 4096), bbuf(64 * 4096);
    mr *am = reg_mr(a.pd, abuf.data(), abuf.size(), access_local_write);
    mr *bm = reg_mr(b.pd, bbuf.data(), bbuf.size(), access_local_write);
    for (int i = 0; i < 64; i++) {
        sge rs{reinterpret_cast<uint64_t>(bbuf.data() + i * 4096), 4096, mr_lkey(bm)};
        recv_wr r;
        r.wr_id = uint64_t(i);
        r.sg_list = &rs;
        r.num_sge = 1;
        recv_wr *bad;
        ASSERT_EQ(post_recv(pas->qp, &r, &bad), verbs_error::ok);
        sge ss{reinterpret_cast<uint64_t>(abuf.data() + i * 4096), 4096, mr_lkey(am)};
        send_wr w;
        w.wr_id = uint64_t(i);
        w.sg_list = &ss;
        w.num_sge = 1;
        w.send_flags = send_signaled;
        send_wr *sbad;
        ASSERT_EQ(post_send(act->qp, &w, &sbad), verbs_error::ok);
    }
    pump(); /* on the wire, not yet acknowledged */
    ASSERT_EQ(disconnect(act), verbs_error::ok);
    ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    ASSERT_EQ(disconnect(pas), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::disconnected));
    /* every WR completes, successfully or flushed, and nothing is left */
    int done_a = 0, done_b = 0, flushed = 0;
    ASSERT_TRUE(run_until([&] {
        wc c;
        while (poll_cq(a.cq, 1, &c) == 1) {
            done_a++;
            flushed += c.status == wc_status::wr_flush_err;
        }
        while (poll_cq(b.cq, 1, &c) == 1) {
            done_b++;
            flushed += c.status == wc_status::wr_flush_err;
        }
        return done_a == 64 && done_b == 64;
    }));
    EXPECT_GT(flushed, 0);
    dereg_mr(am);
    dereg_mr(bm);
    destroy(act);
    destroy(pas);
}

TEST_F(cm_service_t, a_thousand_connections_in_sequence) {
    start();
    listen_b();
    for (int i = 0; i < 1000; i++) {
        auto [act, pas] = connect_pair();
        ASSERT_TRUE(pas) << "connection " << i;
        ASSERT_EQ(disconnect(act), verbs_error::ok);
        ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
        destroy(pas); /* sends the DREP */
        ASSERT_TRUE(expect_event(a, cm_event_type::disconnected));
        destroy(act);
    }
    ASSERT_TRUE(run_until(
        [&] { return cm_connection_count(a.cm) == 0 && cm_connection_count(b.cm) == 0; }));
    EXPECT_EQ(cm_counters(a.cm).conns_created, 1000u);
    EXPECT_EQ(cm_counters(b.cm).conns_freed, 1000u);
}

TEST_F(cm_service_t, a_hundred_connections_at_once) {
    start();
    listen_b();
    std::vector<cm_id *> act(100);
    for (auto &id : act)
        id = resolve_a();
    cm_conn_param cp;
    for (cm_id *id : act)
        ASSERT_EQ(connect(id, &cp), verbs_error::ok);
    std::vector<cm_id *> pas;
    int est_a = 0, est_b = 0;
    ASSERT_TRUE(run_until([&] {
        cm_event *ev;
        while (get_event(b.ch, &ev) == verbs_error::ok) {
            if (ev->event == cm_event_type::connect_request) {
                cm_id *id = ev->id;
                pas.push_back(id);
                qp_init_attr ia = qp_init(b);
                EXPECT_EQ(create_qp(id, b.pd, &ia), verbs_error::ok);
                EXPECT_EQ(accept(id, &cp), verbs_error::ok);
            } else {
                EXPECT_EQ(ev->event, cm_event_type::established) << cm_event_str(ev->event);
                est_b++;
            }
            ack_event(ev);
        }
        while (get_event(a.ch, &ev) == verbs_error::ok) {
            EXPECT_EQ(ev->event, cm_event_type::established) << cm_event_str(ev->event);
            est_a++;
            ack_event(ev);
        }
        return est_a == 100 && est_b == 100;
    }));
    EXPECT_EQ(cm_connection_count(a.cm), 100u);
    for (cm_id *id : act)
        ASSERT_EQ(disconnect(id), verbs_error::ok);
    int disc_a = 0, disc_b = 0;
    ASSERT_TRUE(run_until([&] {
        cm_event *ev;
        while (get_event(b.ch, &ev) == verbs_error::ok) {
            if (ev->event == cm_event_type::disconnected) {
                disc_b++;
                EXPECT_EQ(disconnect(ev->id), verbs_error::ok);
            }
            ack_event(ev);
        }
        while (get_event(a.ch, &ev) == verbs_error::ok) {
            disc_a += ev->event == cm_event_type::disconnected;
            ack_event(ev);
        }
        return disc_a == 100 && disc_b == 100;
    }));
    for (cm_id *id : act)
        destroy(id);
    for (cm_id *id : pas)
        destroy(id);
}

TEST_F(cm_service_t, api_misuse_is_refused) {
    start();
    cm_id *id = nullptr;
    ASSERT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::tcp), verbs_error::ok);
    cm_conn_param cp;
    EXPECT_EQ(connect(id, &cp), verbs_error::inval) << "no route";
    EXPECT_EQ(accept(id, &cp), verbs_error::inval) << "no request";
    EXPECT_EQ(resolve_route(id, 100), verbs_error::inval) << "no address";
    EXPECT_EQ(disconnect(id), verbs_error::inval);
    sockaddr_storage foreign = addr(0x0a4d0063, 1); /* not ours */
    EXPECT_EQ(bind_addr(id, sa(foreign)), verbs_error::inval);
    sockaddr_storage mine = addr(ip_a, 9000);
    ASSERT_EQ(bind_addr(id, sa(mine)), verbs_error::ok);
    cm_id *other = nullptr;
    ASSERT_EQ(create_id(a.ch, &other, nullptr, rdma_port_space::tcp), verbs_error::ok);
    EXPECT_EQ(bind_addr(other, sa(mine)), verbs_error::busy) << "port in use";
    EXPECT_EQ(destroy_event_channel(a.ch), verbs_error::busy) << "ids on it";
    EXPECT_EQ(close_cm(a.cm), verbs_error::busy) << "a channel open";
    EXPECT_EQ(destroy_id(other), verbs_error::ok);
    EXPECT_EQ(destroy_id(id), verbs_error::ok);
    EXPECT_EQ(destroy_id(id), verbs_error::inval) << "twice";
    verbs_error err;
    EXPECT_EQ(open_cm(*a.eng, {}, &err), nullptr);
    EXPECT_EQ(err, verbs_error::busy) << "one QP1 per device";
}

TEST_F(cm_service_t, connects_over_ipv6_gids) {
    start(true);
    cm_id *l = nullptr;
    ASSERT_EQ(create_id(b.ch, &l, nullptr, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage any6 = addr6(gid{}, port);
    ASSERT_EQ(bind_addr(l, sa(any6)), verbs_error::ok);
    ASSERT_EQ(listen(l, 0), verbs_error::ok);
    cm_id *act = nullptr;
    ASSERT_EQ(create_id(a.ch, &act, nullptr, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage dst = addr6(v6_of(ip_b), port);
    ASSERT_EQ(resolve_addr(act, nullptr, sa(dst), 2000), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::addr_resolved));
    EXPECT_EQ(act->route.sgid, v6_of(ip_a));
    ASSERT_EQ(resolve_route(act, 2000), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::route_resolved));
    qp_init_attr ia = qp_init(a);
    ASSERT_EQ(create_qp(act, a.pd, &ia), verbs_error::ok);
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    EXPECT_EQ(pas->route.dgid, v6_of(ip_a));
    ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    ASSERT_EQ(accept(pas, &cp), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::established));
    ASSERT_TRUE(expect_event(b, cm_event_type::established));
    destroy(act);
    destroy(pas);
    destroy_id(l);
}

} // namespace

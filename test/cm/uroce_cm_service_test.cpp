/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_service.cpp: rdma_cm between two full stacks joined by an
 * in-memory link. connect / accept / ESTABLISHED with the negotiated QP
 * attributes and data over the QP; disconnect from either side, and in the
 * middle of a transfer (both QPs flush); a REQ to a closed port is REJECTED
 * ("connection refused"); a REQ whose rdma_cm IP header is not for the
 * listener's address is refused; a peer that vanishes mid-handshake ends in
 * UNREACHABLE after the retries, on either side; an active id destroyed
 * before its REQ is answered rejects it at the peer (REJ timeout); a lost REP costs a retry,
 * not the connection; the handshake's round trip starts each QP's RTT
 * estimate (no tail-loss probe over a slow link); 1000 connections in
 * sequence and 100 at once. Against
 * a real rxe (test/golden/rping_rdmacm.pcap, 10.77.0.12 -> 10.77.0.11, the
 * fixture's addresses): its REQ, injected, is a CONNECT_REQUEST with rping's
 * parameters, and our REQ carries what rxe's does.
 */
#include <cerrno>
#include <tuple>
#include <vector>

#include "cm_stacks.h"
#include "pcap_frames.h"
#include <uroce/flow.h>
#include <uroce/parse.h>

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
        if (link) link->set_filter({}); /* its captures were the test body's locals */
        if (listener) destroy_id(listener);
        /* every event acknowledged, every id freed by the loop */
        for (int i = 0; i < 10; i++)
            pump();
        cm_pair::TearDown();
    }
};

TEST_F(cm_service_t, connect_accept_carries_data_and_negotiates_the_qp) {
    start();
    /* Every RoCE frame either side sends verifies (ICRC, lengths), as
     * uroce-dump --check would have it; the CM MADs among them parse. */
    unsigned roce_frames = 0, mads = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *) {
        std::vector<uint8_t> f(rte_pktmbuf_mtod(m, uint8_t *),
                               rte_pktmbuf_mtod(m, uint8_t *) + m->data_len);
        if (classify_frame(m) != frame_class::roce) return true;
        roce_frames++;
        roce_packet p;
        EXPECT_EQ(parse_frame_verified(f.data(), f.size(), p), parse_error::ok);
        if (p.bth() && p.bth()->dest_qp() == 1) {
            cm_mad_view v;
            EXPECT_EQ(parse_cm_mad(p.payload(), p.payload_len, v), mad_error::ok);
            mads++;
        }
        return true;
    });
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
    EXPECT_EQ(mads, 5u) << "REQ REP RTU DREQ DREP";
    EXPECT_GT(roce_frames, mads);
}

/* rping -q: both QPs made and moved by the application (ibv_create_qp,
 * rdma_init_qp_attr, ibv_modify_qp), the ids only announce their QPNs.
 * The passive side moves its QP before accept; the active side gets
 * CONNECT_RESPONSE, moves its QP, and establish() sends the RTU. The
 * attributes are the negotiated ones, and data flows both ways. */
TEST_F(cm_service_t, qps_the_user_moves_with_init_qp_attr) {
    start();
    listen_b();
    cm_id *act = nullptr;
    ASSERT_EQ(create_id(a.ch, &act, nullptr, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage dst = addr(ip_b, port);
    ASSERT_EQ(resolve_addr(act, nullptr, sa(dst), 2000), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::addr_resolved));
    ASSERT_EQ(resolve_route(act, 2000), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::route_resolved));
    qp_init_attr ia = qp_init(a);
    qp *qa = uroce::create_qp(a.pd, ia);
    ASSERT_NE(qa, nullptr);
    auto move = [](const cm_id *id, qp *q, qp_state s) {
        qp_attr at;
        at.qp_state = s;
        unsigned mask = 0;
        if (verbs_error e = init_qp_attr(id, &at, &mask); e != verbs_error::ok) return e;
        return modify_qp(q, at, mask);
    };
    qp_attr at;
    unsigned mask = 0;
    at.qp_state = qp_state::init;
    ASSERT_EQ(init_qp_attr(act, &at, &mask), verbs_error::ok);
    EXPECT_EQ(mask, qp_attr_state | qp_attr_access_flags | qp_attr_pkey_index | qp_attr_port);
    EXPECT_EQ(at.qp_access_flags, 0u) << "no connection yet (cma_ib_init_qp_attr)";
    ASSERT_EQ(move(act, qa, qp_state::init), verbs_error::ok);
    at.qp_state = qp_state::rtr;
    EXPECT_EQ(init_qp_attr(act, &at, &mask), verbs_error::inval) << "no peer QPN yet";

    cm_conn_param cp;
    cp.responder_resources = 2;
    cp.initiator_depth = 3;
    cp.retry_count = 6;
    cp.rnr_retry_count = 5;
    cp.qp_num = qp_num(qa);
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    at.qp_state = qp_state::rts;
    EXPECT_EQ(init_qp_attr(act, &at, &mask), verbs_error::inval) << "REQ sent, no REP yet";

    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    qp_init_attr ib = qp_init(b);
    qp *qb = uroce::create_qp(b.pd, ib);
    ASSERT_NE(qb, nullptr);
    at = {};
    at.qp_state = qp_state::init;
    ASSERT_EQ(init_qp_attr(pas, &at, &mask), verbs_error::ok);
    EXPECT_EQ(at.qp_access_flags, access_remote_write | access_remote_read | access_remote_atomic)
        << "the REQ's initiator depth gives us responder resources";
    for (qp_state s : {qp_state::init, qp_state::rtr, qp_state::rts})
        ASSERT_EQ(move(pas, qb, s), verbs_error::ok) << int(s);
    ASSERT_EQ(query_qp(qb, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.dest_qp_num, qp_num(qa));
    EXPECT_EQ(at.max_dest_rd_atomic, 3) << "the REQ's initiator depth";
    EXPECT_EQ(at.max_rd_atomic, 2) << "the REQ's responder resources";
    EXPECT_EQ(at.retry_cnt, 6);
    EXPECT_EQ(at.rnr_retry, 5);
    EXPECT_EQ(at.path_mtu, mtu::mtu_4096);
    EXPECT_EQ(at.ah_attr.grh.dgid, gid::from_ipv4(ip_a));
    const uint32_t b_rq_psn = at.rq_psn, b_sq_psn = at.sq_psn;
    cm_conn_param ap;
    ap.responder_resources = 3;
    ap.initiator_depth = 2;
    ap.rnr_retry_count = 4;
    ap.qp_num = qp_num(qb);
    ASSERT_EQ(accept(pas, &ap), verbs_error::ok);

    cm_event *ev = next_event(a);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::connect_response) << cm_event_str(ev->event);
    EXPECT_EQ(ev->conn.qp_num, qp_num(qb));
    ack_event(ev);
    EXPECT_EQ(cm_counters(a.cm).rtu_tx, 0u) << "the RTU waits for establish()";
    for (qp_state s : {qp_state::init, qp_state::rtr, qp_state::rts})
        ASSERT_EQ(move(act, qa, s), verbs_error::ok) << int(s);
    ASSERT_EQ(query_qp(qa, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.dest_qp_num, qp_num(qb));
    EXPECT_EQ(at.max_dest_rd_atomic, 2) << "the REP's initiator depth";
    EXPECT_EQ(at.max_rd_atomic, 3) << "the REP's responder resources";
    EXPECT_EQ(at.rnr_retry, 4) << "the REP's";
    EXPECT_EQ(at.rq_psn, b_sq_psn) << "the REQ's PSN: a receives from where b sends";
    EXPECT_EQ(at.sq_psn, b_rq_psn) << "the REP's PSN";
    ASSERT_EQ(establish(act), verbs_error::ok);
    EXPECT_EQ(establish(act), verbs_error::inval) << "once";
    ASSERT_TRUE(expect_event(b, cm_event_type::established));
    EXPECT_EQ(cm_counters(a.cm).rtu_tx, 1u);

    /* a SEND each way */
    std::vector<uint8_t> abuf(256, 0xaa), bbuf(256, 0xbb);
    mr *am = reg_mr(a.pd, abuf.data(), abuf.size(), access_local_write);
    mr *bm = reg_mr(b.pd, bbuf.data(), bbuf.size(), access_local_write);
    for (auto [from, to, fm, tm, fb, tb] :
         {std::tuple{qa, qb, am, bm, abuf.data(), bbuf.data() + 128},
          std::tuple{qb, qa, bm, am, bbuf.data(), abuf.data() + 128}}) {
        sge rs{reinterpret_cast<uint64_t>(tb), 128, mr_lkey(tm)};
        recv_wr r;
        r.sg_list = &rs;
        r.num_sge = 1;
        recv_wr *rbad;
        ASSERT_EQ(post_recv(to, &r, &rbad), verbs_error::ok);
        sge ss{reinterpret_cast<uint64_t>(fb), 128, mr_lkey(fm)};
        send_wr w;
        w.sg_list = &ss;
        w.num_sge = 1;
        w.opcode = wr_opcode::send;
        w.send_flags = send_signaled;
        send_wr *sbad;
        ASSERT_EQ(post_send(from, &w, &sbad), verbs_error::ok);
    }
    int got = 0;
    ASSERT_TRUE(run_until([&] {
        wc c;
        for (cq *q : {a.cq, b.cq})
            while (poll_cq(q, 1, &c) == 1) {
                EXPECT_EQ(c.status, wc_status::success);
                got++;
            }
        return got == 4;
    }));
    EXPECT_EQ(bbuf[128], 0xaa);
    EXPECT_EQ(abuf[128], 0xbb);
    ASSERT_EQ(disconnect(act), verbs_error::ok);
    ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    ASSERT_EQ(disconnect(pas), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::disconnected));
    dereg_mr(am);
    dereg_mr(bm);
    EXPECT_EQ(uroce::destroy_qp(qa), verbs_error::ok);
    EXPECT_EQ(uroce::destroy_qp(qb), verbs_error::ok);
    EXPECT_EQ(destroy_id(act), verbs_error::ok);
    EXPECT_EQ(destroy_id(pas), verbs_error::ok);
}

/* A UD id's QP, moved by its user (librdmacm's ucma_init_ud_qp). */
TEST_F(cm_service_t, init_qp_attr_for_ud_ids) {
    start();
    cm_id *id = nullptr;
    ASSERT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::udp), verbs_error::ok);
    qp_init_attr ia = qp_init(a);
    ia.qp_type = qp_type::ud;
    qp *q = uroce::create_qp(a.pd, ia);
    ASSERT_NE(q, nullptr);
    for (qp_state s : {qp_state::init, qp_state::rtr, qp_state::rts}) {
        qp_attr at;
        at.qp_state = s;
        unsigned mask = 0;
        ASSERT_EQ(init_qp_attr(id, &at, &mask), verbs_error::ok);
        ASSERT_EQ(modify_qp(q, at, mask), verbs_error::ok) << int(s);
    }
    qp_attr at;
    ASSERT_EQ(query_qp(q, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.qkey, rdma_udp_qkey);
    at.qp_state = qp_state::sqd;
    unsigned mask;
    EXPECT_EQ(init_qp_attr(id, &at, &mask), verbs_error::inval);
    EXPECT_EQ(uroce::destroy_qp(q), verbs_error::ok);
    EXPECT_EQ(destroy_id(id), verbs_error::ok);
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

/* disconnect() only queues the DREP; cm_output_pending says so until the
 * side's own polls have sent it, and the peer's DISCONNECTED proves that
 * it left. A program that ended while it was pending (uroce-perf -R's
 * client did) left its peer waiting out the DREQ's timeout. */
TEST_F(cm_service_t, output_is_pending_until_the_drep_has_left) {
    start();
    listen_b();
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    ASSERT_TRUE(run_until([&] { return !cm_output_pending(a.cm) && !cm_output_pending(b.cm); }))
        << "the handshake's MADs have left";
    ASSERT_EQ(disconnect(act), verbs_error::ok);
    EXPECT_TRUE(cm_output_pending(a.cm)) << "the DREQ, before any poll";
    ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    EXPECT_FALSE(cm_output_pending(b.cm));
    ASSERT_EQ(disconnect(pas), verbs_error::ok) << "the DREP";
    EXPECT_TRUE(cm_output_pending(b.cm)) << "queued, not sent";
    /* b's loop alone: nothing reaches a meanwhile */
    rte_mbuf *pkts[64];
    for (int i = 0; i < 100 && cm_output_pending(b.cm); i++) {
        const uint16_t n = b.port->rx_burst(pkts, 64);
        b.eng->rx_burst(pkts, n);
        b.eng->poll();
    }
    EXPECT_FALSE(cm_output_pending(b.cm)) << "b's own polls send it";
    EXPECT_EQ(cm_counters(b.cm).drep_tx, 1u);
    EXPECT_EQ(cm_output_pending(nullptr), false);
    ASSERT_TRUE(expect_event(a, cm_event_type::disconnected)) << "the DREP arrived";
    destroy(act);
    destroy(pas);
}

/* perftest -R's server destroys its first listener and binds the port again
 * for the data connections while the first connection lives: connections
 * never hold their listener's port, so that bind succeeds. */
TEST_F(cm_service_t, port_is_free_again_once_its_listener_is_gone) {
    start();
    listen_b();
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    cm_id *again = nullptr;
    ASSERT_EQ(create_id(b.ch, &again, this, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage ss = addr(0, port);
    EXPECT_EQ(bind_addr(again, sa(ss)), verbs_error::busy) << "the listener still holds it";
    ASSERT_EQ(destroy_id(listener), verbs_error::ok);
    listener = again;
    ASSERT_EQ(bind_addr(listener, sa(ss)), verbs_error::ok);
    ASSERT_EQ(listen(listener, 0), verbs_error::ok);
    auto [act2, pas2] = connect_pair();
    ASSERT_TRUE(pas2) << "the new listener takes the next REQ";
    for (cm_id *id : {act, act2})
        ASSERT_EQ(disconnect(id), verbs_error::ok);
    for (int i = 0; i < 2; i++)
        ASSERT_TRUE(expect_event(b, cm_event_type::disconnected));
    for (cm_id *id : {pas, pas2, act, act2})
        destroy(id);
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

/* ucma_cleanup_ctx_events: a listener destroyed with a CONNECT_REQUEST
 * still unread takes it along; the request's id, never shown to the user,
 * is destroyed, and the peer hears a consumer-defined REJ (cm.c
 * cm_destroy_id in REQ_RCVD). */
TEST_F(cm_service_t, a_request_unread_when_its_listener_goes_is_refused) {
    start();
    listen_b();
    cm_id *act = resolve_a();
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    const int fd = event_channel_fd(b.ch);
    ASSERT_TRUE(run_until([&] { return readable(fd); }));
    ASSERT_EQ(destroy_id(listener), verbs_error::ok);
    listener = nullptr;
    EXPECT_EQ(cm_counters(b.cm).events_purged, 1u);
    EXPECT_FALSE(readable(fd)) << "the fd's count went with the event";
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::rejected, nullptr, nullptr, &status));
    EXPECT_EQ(status, int(cm_rej_reason::consumer_defined));
    cm_event *ev = nullptr;
    EXPECT_EQ(get_event(b.ch, &ev), verbs_error::again);
    destroy(act);
    EXPECT_TRUE(
        run_until([&] { return cm_connection_count(a.cm) + cm_connection_count(b.cm) == 0; }));
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

/* rdma_destroy_id on an id whose REQ is unanswered: REJ timeout (cm.c
 * cm_destroy_id), and the passive side's request, not answered by its user
 * yet, ends in REJECTED (status 4, timeout), as Linux reports it. */
TEST_F(cm_service_t, destroying_an_unanswered_connect_rejects_it_at_the_peer) {
    start();
    listen_b();
    cm_id *act = resolve_a();
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    destroy(act);
    int status = 0;
    cm_id *got = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::rejected, nullptr, &got, &status));
    EXPECT_EQ(got, pas);
    EXPECT_EQ(status, int(cm_rej_reason::timeout));
    EXPECT_EQ(cm_counters(a.cm).rej_tx, 1u);
    EXPECT_EQ(cm_counters(b.cm).rej_rx, 1u);
    const cm_conn_param none;
    EXPECT_NE(accept(pas, &none), verbs_error::ok) << "nothing left to accept";
    destroy(pas);
    EXPECT_TRUE(
        run_until([&] { return cm_connection_count(a.cm) + cm_connection_count(b.cm) == 0; }));
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

/* The handshake is the connection's first round trip: each QP's RTT
 * estimate starts from it (active: REQ -> REP, passive: REP -> RTU), so the
 * tail-loss probe does not fire at its 1 ms first guess against a peer
 * whose answers take longer. On a link that holds every frame 2 ms (a 4 ms
 * round trip), ten SENDs each way complete without a single probe; with the
 * 1 ms guess every QP probed its silence (ucmatose -c 100 against rxe under
 * TCG: about 4 spurious resends per QP, some arriving after rxe's
 * disconnect had put the QP in ERR, doc/interop.md). */
TEST_F(cm_service_t, handshake_round_trip_starts_the_qps_rtt) {
    link_delay_ns = 2'000'000;
    start();
    listen_b();
    auto [act, pas] = connect_pair();
    ASSERT_TRUE(pas);
    constexpr int n = 10;
    std::vector<uint8_t> abuf(n * 64), bbuf(n * 64);
    mr *am = reg_mr(a.pd, abuf.data(), abuf.size(), access_local_write);
    mr *bm = reg_mr(b.pd, bbuf.data(), bbuf.size(), access_local_write);
    ASSERT_TRUE(am && bm);
    /* receives for both directions, then the active side's sends, then
     * the passive side's (ucmatose's server sends first; either order
     * shows the same) */
    for (int dir = 0; dir < 2; dir++) {
        cm_id *from = dir ? pas : act, *to = dir ? act : pas;
        mr *fm = dir ? bm : am, *tm = dir ? am : bm;
        uint8_t *fb = dir ? bbuf.data() : abuf.data(), *tb = dir ? abuf.data() : bbuf.data();
        for (int i = 0; i < n; i++) {
            sge rs{reinterpret_cast<uint64_t>(tb + i * 64), 64, mr_lkey(tm)};
            recv_wr r;
            r.wr_id = uint64_t(i);
            r.sg_list = &rs;
            r.num_sge = 1;
            recv_wr *bad;
            ASSERT_EQ(post_recv(to->qp, &r, &bad), verbs_error::ok);
        }
        for (int i = 0; i < n; i++) {
            sge ss{reinterpret_cast<uint64_t>(fb + i * 64), 64, mr_lkey(fm)};
            send_wr w;
            w.wr_id = uint64_t(100 + i);
            w.sg_list = &ss;
            w.num_sge = 1;
            w.send_flags = send_signaled;
            send_wr *sbad;
            ASSERT_EQ(post_send(from->qp, &w, &sbad), verbs_error::ok);
        }
        int done = 0;
        ASSERT_TRUE(run_until(
            [&] {
                wc c[16];
                for (cm_stack *st : {&a, &b}) {
                    const int got = poll_cq(st->cq, 16, c);
                    for (int i = 0; i < got; i++)
                        EXPECT_EQ(c[i].status, wc_status::success) << wc_status_str(c[i].status);
                    done += got;
                }
                return done == 2 * n;
            },
            10'000'000'000ull));
    }
    for (cm_id *id : {act, pas}) {
        const qp_counters &qc = qp_counters_of(id->qp);
        EXPECT_EQ(qc.tlp_probes, 0u) << (id == act ? "active" : "passive");
        EXPECT_EQ(qc.timeouts, 0u);
    }
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

/* A REQ flood does not grow state without bound: past max_half_open
 * unanswered requests, REJ no resources, counted. */
TEST_F(cm_service_t, half_open_connections_are_capped) {
    cfg.max_half_open = 3;
    start();
    listen_b();
    std::vector<cm_id *> act, pending;
    cm_conn_param cp;
    for (int i = 0; i < 5; i++) {
        act.push_back(resolve_a());
        ASSERT_EQ(connect(act.back(), &cp), verbs_error::ok);
    }
    int refused = 0;
    ASSERT_TRUE(run_until([&] {
        cm_event *ev;
        while (get_event(b.ch, &ev) == verbs_error::ok) {
            if (ev->event == cm_event_type::connect_request) pending.push_back(ev->id);
            ack_event(ev);
        }
        while (get_event(a.ch, &ev) == verbs_error::ok) {
            refused += ev->event == cm_event_type::rejected &&
                       ev->status == int(cm_rej_reason::no_resources);
            ack_event(ev);
        }
        return pending.size() == 3 && refused == 2;
    }));
    EXPECT_EQ(cm_counters(b.cm).req_half_open_full, 2u);
    EXPECT_EQ(cm_connection_count(b.cm), 3u);
    for (cm_id *id : pending)
        destroy(id); /* REJ consumer defined to each */
    for (cm_id *id : act)
        destroy(id);
}

/* Hostile datagrams to QP1: every one counted where it is refused (the
 * transport for a wrong Q_Key, the CM's parser by reason), none answered. */
TEST_F(cm_service_t, bad_mads_are_counted_by_reason) {
    start();
    cm_id *warm = resolve_a(); /* a knows b's MAC now */
    destroy(warm);
    qp_init_attr ia = qp_init(a);
    ia.qp_type = qp_type::ud;
    qp *q = uroce::create_qp(a.pd, ia);
    ASSERT_NE(q, nullptr);
    qp_connect_attr ca;
    ca.qkey = 0x80010000u; /* a WR Q_Key with the high bit set means the QP's (IBTA 10.2.4) */
    ASSERT_EQ(connect_qp(q, ca), verbs_error::ok);
    ah_attr aa;
    aa.grh.dgid = gid::from_ipv4(ip_b);
    aa.grh.sgid_index = 1; /* ::ffff:10.77.0.12 */
    const std::optional<neigh_entry_view> nbe = a.nb->lookup(aa.grh.dgid);
    ASSERT_TRUE(nbe);
    nbe->mac.copy_to(aa.dmac);
    ah *h = create_ah(a.pd, aa);
    ASSERT_NE(h, nullptr);
    std::vector<uint8_t> mad(256, 0);
    mad[0] = 1;    /* base version */
    mad[1] = 0x03; /* SA, not the CM */
    mad[2] = 2;
    mad[3] = 3;
    mr *m = reg_mr(a.pd, mad.data(), mad.size(), 0);
    auto send = [&](uint32_t len, uint32_t qkey) {
        sge sg{reinterpret_cast<uint64_t>(mad.data()), len, mr_lkey(m)};
        send_wr w;
        w.sg_list = &sg;
        w.num_sge = 1;
        w.wr.ud.ah = h;
        w.wr.ud.remote_qpn = 1;
        w.wr.ud.remote_qkey = qkey;
        send_wr *bad;
        ASSERT_EQ(post_send(q, &w, &bad), verbs_error::ok);
    };
    send(256, 0x80010000u); /* another class */
    send(100, 0x80010000u); /* short */
    send(256, 0x00001234u); /* not the GSI's Q_Key */
    const bool got2 = run_until([&] { return cm_counters(b.cm).mad_refused == 2; }, 1'000'000'000);
    ASSERT_TRUE(got2);
    for (int i = 0; i < 20; i++)
        pump();
    const cm_counters_snapshot c = cm_counters(b.cm);
    EXPECT_EQ(c.mad_not_cm_class, 1u);
    EXPECT_EQ(c.mad_short, 1u);
    EXPECT_EQ(c.mad_tx, 0u) << "nothing answered";
    uint64_t qkey_drops = 0;
    for_each_qp(b.ctx, [&](const uroce::qp *x) {
        if (qp_num(x) == 1) qkey_drops = qp_counters_of(x).ud_qkey_drops;
    });
    EXPECT_EQ(qkey_drops, 1u);
    char *text = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cm_print_counters(b.cm, f);
    std::fclose(f);
    EXPECT_NE(std::string(text).find("mad_not_cm_class"), std::string::npos) << text;
    std::free(text);
    dereg_mr(m);
    destroy_ah(h);
    uroce::destroy_qp(q);
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

/* The UD SEND_ONLY frames to QP1 of the golden rping capture. */
std::vector<std::vector<uint8_t>> golden_cm_frames() {
    std::vector<std::vector<uint8_t>> out;
    std::string err;
    for (const captured_frame &f : read_pcap_frames(golden_path("rping_rdmacm.pcap"), err)) {
        roce_packet p;
        if (parse_frame_verified(f.bytes.data(), f.bytes.size(), p) != parse_error::ok) continue;
        if (p.bth()->dest_qp() == 1 && p.deth()) out.push_back(f.bytes);
    }
    EXPECT_TRUE(err.empty()) << err;
    return out;
}

/* rxe's REQ (rping -c to 10.77.0.11:7174), handed to b (10.77.0.11) as if
 * from a's port: a CONNECT_REQUEST with rping's parameters, from rxe's QP
 * 0x14, and our REP goes back to its QP1. */
TEST_F(cm_service_t, rxe_req_from_the_golden_capture_is_a_connect_request) {
    start();
    listen_b();
    const auto frames = golden_cm_frames();
    ASSERT_EQ(frames.size(), 5u);
    const std::vector<uint8_t> &req = frames[0];
    rte_mbuf *m = rte_pktmbuf_alloc(cm_test_pool());
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(req.size())), req.data(), req.size());
    b.eng->rx_burst(&m, 1);
    cm_event *ev = next_event(b);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::connect_request) << cm_event_str(ev->event);
    EXPECT_EQ(ev->conn.qp_num, 0x14u);
    EXPECT_EQ(ev->conn.responder_resources, 1);
    EXPECT_EQ(ev->conn.initiator_depth, 1);
    EXPECT_EQ(ev->conn.retry_count, 7);
    EXPECT_EQ(ev->conn.rnr_retry_count, 7);
    cm_id *pas = ev->id;
    EXPECT_EQ(pas->route.dgid, gid::from_ipv4(ip_a));
    EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in *>(&pas->route.dst_addr)->sin_port), 0xbc80)
        << "rping's source port, from the IP header";
    EXPECT_EQ(pas->route.flow_label, 0x6ef86u);
    ack_event(ev);
    uint32_t rep_to_qpn = 0, rep_remote_comm = 0;
    link->set_filter([&](rte_mbuf *f, const memlink_port *from) {
        roce_packet p;
        if (from == b.port && parse_mbuf(f, p) == parse_error::ok && p.deth() &&
            p.bth()->dest_qp() == 1) {
            cm_mad_view v;
            if (parse_cm_mad(p.payload(), p.payload_len, v) == mad_error::ok &&
                v.info->attr == cm_attr::rep) {
                rep_to_qpn = p.bth()->dest_qp();
                rep_remote_comm = v.as<cm_rep>()->remote_comm_id();
            }
        }
        return true;
    });
    qp_init_attr ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    cm_conn_param cp;
    cp.responder_resources = 1;
    cp.initiator_depth = 1;
    ASSERT_EQ(accept(pas, &cp), verbs_error::ok);
    qp_attr at;
    ASSERT_EQ(query_qp(pas->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.dest_qp_num, 0x14u);
    /* rxe's passive side sent its first request from the REQ's Starting PSN
     * (the capture's frame 6: READ with PSN 0x3c0ef9): so must we. */
    EXPECT_EQ(at.sq_psn, 0x3c0ef9u);
    EXPECT_EQ(at.path_mtu, mtu::mtu_4096);
    EXPECT_EQ(at.timeout, 19) << "the REQ's local ACK timeout";
    ASSERT_TRUE(run_until([&] { return rep_to_qpn != 0; }, 1'000'000'000));
    EXPECT_EQ(rep_remote_comm, 0x9592376bu) << "rxe's comm ID";
    destroy(pas);
}

/* Our REQ next to rxe's: every field that is not a number of the moment
 * (comm ID, QPN, PSN, GUID, port and the flow label from it) as rping's. */
TEST_F(cm_service_t, our_req_carries_what_rxes_does) {
    start();
    listen_b();
    std::vector<uint8_t> ours;
    link->set_filter([&](rte_mbuf *f, const memlink_port *from) {
        roce_packet p;
        if (ours.empty() && from == a.port && parse_mbuf(f, p) == parse_error::ok && p.deth() &&
            p.bth()->dest_qp() == 1) {
            EXPECT_EQ(p.deth()->qkey(), 0x80010000u);
            EXPECT_EQ(p.deth()->src_qp(), 1u);
            EXPECT_EQ(p.udp()->src_port(), 55410);
            ours.assign(p.payload(), p.payload() + p.payload_len);
        }
        return true;
    });
    cm_id *act = resolve_a();
    cm_conn_param cp;
    cp.responder_resources = 1;
    cp.initiator_depth = 1;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return !ours.empty(); }, 1'000'000'000));
    const auto frames = golden_cm_frames();
    ASSERT_FALSE(frames.empty());
    roce_packet gp;
    ASSERT_EQ(parse_frame_verified(frames[0].data(), frames[0].size(), gp), parse_error::ok);
    cm_mad_view gv, ov;
    ASSERT_EQ(parse_cm_mad(gp.payload(), gp.payload_len, gv), mad_error::ok);
    ASSERT_EQ(parse_cm_mad(ours.data(), ours.size(), ov), mad_error::ok);
    const cm_req &g = *gv.as<cm_req>(), &o = *ov.as<cm_req>();
    EXPECT_EQ(ov.hdr->base_version, gv.hdr->base_version);
    EXPECT_EQ(ov.hdr->class_version, gv.hdr->class_version);
    EXPECT_EQ(ov.hdr->method, gv.hdr->method);
    EXPECT_EQ(o.service_id(), g.service_id());
    EXPECT_EQ(o.local_qkey(), g.local_qkey());
    EXPECT_EQ(o.responder_resources, g.responder_resources);
    EXPECT_EQ(o.initiator_depth, g.initiator_depth);
    EXPECT_EQ(o.byte43, g.byte43) << "response timeout, transport, e2e flow control";
    EXPECT_EQ(o.local_cm_response_timeout(), g.local_cm_response_timeout());
    EXPECT_EQ(o.retry_count(), g.retry_count());
    EXPECT_EQ(o.pkey(), g.pkey());
    EXPECT_EQ(o.byte50, g.byte50) << "path MTU, RDC, RNR retry count";
    EXPECT_EQ(o.byte51, g.byte51) << "max CM retries, SRQ, extended transport";
    EXPECT_EQ(std::memcmp(o.primary_local_lid_be, g.primary_local_lid_be, 4), 0);
    EXPECT_EQ(o.local_gid(), g.local_gid());
    EXPECT_EQ(o.remote_gid(), g.remote_gid());
    EXPECT_EQ(o.packet_rate(), g.packet_rate());
    EXPECT_EQ(o.primary_traffic_class, g.primary_traffic_class);
    EXPECT_EQ(o.primary_hop_limit, g.primary_hop_limit);
    EXPECT_EQ(o.byte94, g.byte94);
    EXPECT_EQ(o.byte95, g.byte95) << "local ACK timeout";
    EXPECT_EQ(std::memcmp(o.alternate_path, g.alternate_path, sizeof(g.alternate_path)), 0);
    cma_ip_hdr oh, gh;
    std::memcpy(&oh, o.private_data, sizeof(oh));
    std::memcpy(&gh, g.private_data, sizeof(gh));
    EXPECT_EQ(oh.version, gh.version);
    EXPECT_EQ(oh.ip_version, gh.ip_version);
    EXPECT_EQ(std::memcmp(oh.src_addr, gh.src_addr, 16), 0);
    EXPECT_EQ(std::memcmp(oh.dst_addr, gh.dst_addr, 16), 0);
    EXPECT_EQ(o.flow_label(), calc_flow_label_cm(oh.src_port(), 7174));
    EXPECT_EQ(g.flow_label(), calc_flow_label_cm(gh.src_port(), 7174)) << "rxe's rule, too";
    destroy(act);
}

} // namespace

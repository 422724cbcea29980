/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_sidr.cpp: UD ids through SIDR between two full stacks
 * (udaddy's exchange): the SIDR_REQ reaches the listener with its private
 * data, accept answers with the QPN and rdma_cm's Q_Key, and a datagram
 * sent with what ESTABLISHED carries arrives; a closed port and a reject
 * end in UNREACHABLE with the SIDR status; a lost SIDR_REP is answered again
 * from the passive side's state; no answer at all, UNREACHABLE -ETIMEDOUT.
 */
#include <cerrno>
#include <vector>

#include "cm_stacks.h"

using namespace uroce;
using namespace uroce::test;

namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env("512"));

constexpr uint16_t port = 7174;

class cm_sidr_t : public cm_pair {
  protected:
    cm_id *listener = nullptr;

    void listen_b() {
        ASSERT_EQ(create_id(b.ch, &listener, nullptr, rdma_port_space::udp), verbs_error::ok);
        sockaddr_storage ss = addr(0, port);
        ASSERT_EQ(bind_addr(listener, sa(ss)), verbs_error::ok);
        ASSERT_EQ(listen(listener, 0), verbs_error::ok);
    }
    cm_id *resolve_a(uint16_t p = port) {
        cm_id *id = nullptr;
        EXPECT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::udp), verbs_error::ok);
        EXPECT_EQ(id->qp_type, qp_type::ud);
        sockaddr_storage dst = addr(ip_b, p);
        EXPECT_EQ(resolve_addr(id, nullptr, sa(dst), 2000), verbs_error::ok);
        EXPECT_TRUE(expect_event(a, cm_event_type::addr_resolved));
        EXPECT_EQ(resolve_route(id, 2000), verbs_error::ok);
        EXPECT_TRUE(expect_event(a, cm_event_type::route_resolved));
        qp_init_attr ia = qp_init(a);
        EXPECT_EQ(create_qp(id, a.pd, &ia), verbs_error::ok);
        return id;
    }
    void destroy(cm_id *id) {
        destroy_qp(id);
        EXPECT_EQ(destroy_id(id), verbs_error::ok);
    }
    void TearDown() override {
        if (link) link->set_filter({}); /* its captures were the test body's locals */
        if (listener) destroy_id(listener);
        for (int i = 0; i < 10; i++)
            pump();
        cm_pair::TearDown();
    }
};

TEST_F(cm_sidr_t, resolves_the_peers_qpn_and_qkey_and_a_datagram_arrives) {
    start();
    listen_b();
    cm_id *act = resolve_a();
    const char hi[] = "udaddy";
    cm_conn_param cp;
    cp.private_data = hi;
    cp.private_data_len = sizeof(hi);
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_event *ev = next_event(b);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::connect_request);
    cm_id *pas = ev->id;
    EXPECT_EQ(pas->qp_type, qp_type::ud);
    EXPECT_EQ(ev->ud.private_data_len, cm_sidr_req_private_max);
    EXPECT_STREQ(static_cast<const char *>(ev->ud.private_data), hi);
    EXPECT_EQ(ev->ud.ah_attr.grh.dgid, gid::from_ipv4(ip_a));
    ack_event(ev);
    qp_init_attr ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    qp_attr at;
    ASSERT_EQ(query_qp(pas->qp, &at, 0, nullptr), verbs_error::ok);
    EXPECT_EQ(at.qp_state, qp_state::rts);
    EXPECT_EQ(at.qkey, rdma_udp_qkey);
    ASSERT_EQ(accept(pas, nullptr), verbs_error::ok);

    ev = next_event(a);
    ASSERT_NE(ev, nullptr);
    ASSERT_EQ(ev->event, cm_event_type::established) << cm_event_str(ev->event);
    EXPECT_EQ(ev->ud.qp_num, qp_num(pas->qp));
    EXPECT_EQ(ev->ud.qkey, rdma_udp_qkey);
    ah *h = create_ah(a.pd, ev->ud.ah_attr);
    ASSERT_NE(h, nullptr);
    const uint32_t rqpn = ev->ud.qp_num, rqkey = ev->ud.qkey;
    ack_event(ev);

    std::vector<uint8_t> out(128, 0x5a), in(40 + 128);
    mr *mo = reg_mr(a.pd, out.data(), out.size(), 0);
    mr *mi = reg_mr(b.pd, in.data(), in.size(), access_local_write);
    sge rs{reinterpret_cast<uint64_t>(in.data()), uint32_t(in.size()), mr_lkey(mi)};
    recv_wr r;
    r.sg_list = &rs;
    r.num_sge = 1;
    recv_wr *rbad;
    ASSERT_EQ(post_recv(pas->qp, &r, &rbad), verbs_error::ok);
    sge ss{reinterpret_cast<uint64_t>(out.data()), uint32_t(out.size()), mr_lkey(mo)};
    send_wr w;
    w.sg_list = &ss;
    w.num_sge = 1;
    w.send_flags = send_signaled;
    w.wr.ud.ah = h;
    w.wr.ud.remote_qpn = rqpn;
    w.wr.ud.remote_qkey = rqkey;
    send_wr *sbad;
    ASSERT_EQ(post_send(act->qp, &w, &sbad), verbs_error::ok);
    wc c{};
    ASSERT_TRUE(run_until([&] { return poll_cq(b.cq, 1, &c) == 1; }));
    EXPECT_EQ(c.status, wc_status::success);
    EXPECT_EQ(c.src_qp, qp_num(act->qp));
    EXPECT_EQ(in[40], 0x5a);
    destroy_ah(h);
    dereg_mr(mo);
    dereg_mr(mi);
    const cm_counters_snapshot ca = cm_counters(a.cm), cb = cm_counters(b.cm);
    EXPECT_EQ(ca.sidr_req_tx, 1u);
    EXPECT_EQ(cb.sidr_req_rx, 1u);
    EXPECT_EQ(cb.sidr_rep_tx, 1u);
    EXPECT_EQ(ca.sidr_rep_rx, 1u);
    destroy(act);
    destroy(pas);
}

TEST_F(cm_sidr_t, closed_port_and_reject_are_unreachable_with_the_status) {
    start();
    cm_id *act = resolve_a(4444);
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::unreachable, nullptr, nullptr, &status));
    EXPECT_EQ(status, int(cm_sidr_status::service_id_not_supported));
    destroy(act);

    listen_b();
    act = resolve_a();
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    ASSERT_EQ(reject(pas, nullptr, 0), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::unreachable, nullptr, nullptr, &status));
    EXPECT_EQ(status, int(cm_sidr_status::rejected));
    destroy(act);
    destroy(pas);
}

TEST_F(cm_sidr_t, a_lost_sidr_rep_is_answered_again) {
    cfg.response_timeout = 14;
    start();
    listen_b();
    cm_id *act = resolve_a();
    int dropped = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        if (from == b.port && dropped == 0 && m->pkt_len > 300) {
            const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
            if (load_be16(p + 14 + 20 + 8 + 12 + 8 + 16) == 0x18) {
                dropped++;
                return false;
            }
        }
        return true;
    });
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    cm_id *pas = nullptr;
    ASSERT_TRUE(expect_event(b, cm_event_type::connect_request, nullptr, &pas));
    qp_init_attr ia = qp_init(b);
    ASSERT_EQ(create_qp(pas, b.pd, &ia), verbs_error::ok);
    ASSERT_EQ(accept(pas, nullptr), verbs_error::ok);
    ASSERT_TRUE(expect_event(a, cm_event_type::established));
    EXPECT_EQ(dropped, 1);
    EXPECT_EQ(cm_counters(a.cm).retries, 1u);
    EXPECT_EQ(cm_counters(b.cm).duplicates, 1u);
    EXPECT_EQ(cm_counters(b.cm).sidr_rep_tx, 2u);
    cm_event *ev;
    EXPECT_EQ(get_event(b.ch, &ev), verbs_error::again) << "no second CONNECT_REQUEST";
    destroy(act);
    destroy(pas);
}

TEST_F(cm_sidr_t, no_answer_is_unreachable_after_the_retries) {
    cfg.response_timeout = 14;
    cfg.max_cm_retries = 2;
    start();
    cm_id *act = resolve_a();
    link->set_filter([&](rte_mbuf *, const memlink_port *from) { return from != a.port; });
    cm_conn_param cp;
    ASSERT_EQ(connect(act, &cp), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::unreachable, nullptr, nullptr, &status));
    EXPECT_EQ(status, -ETIMEDOUT);
    EXPECT_EQ(cm_counters(a.cm).sidr_req_tx, 3u);
    destroy(act);
}

TEST_F(cm_sidr_t, unanswered_requests_are_capped) {
    cfg.max_half_open = 3;
    start();
    listen_b();
    std::vector<cm_id *> act;
    cm_conn_param cp;
    for (int i = 0; i < 5; i++) {
        act.push_back(resolve_a());
        ASSERT_EQ(connect(act.back(), &cp), verbs_error::ok);
    }
    int requests = 0, refused = 0;
    std::vector<cm_id *> pending;
    ASSERT_TRUE(run_until([&] {
        cm_event *ev;
        while (get_event(b.ch, &ev) == verbs_error::ok) {
            if (ev->event == cm_event_type::connect_request) {
                requests++;
                pending.push_back(ev->id);
            }
            ack_event(ev); /* left unanswered: the ids stay in CONNECT_REQUEST */
        }
        while (get_event(a.ch, &ev) == verbs_error::ok) {
            refused += ev->event == cm_event_type::unreachable &&
                       ev->status == int(cm_sidr_status::rejected);
            ack_event(ev);
        }
        return requests == 3 && refused == 2;
    }));
    EXPECT_EQ(cm_counters(b.cm).req_half_open_full, 2u);
    for (cm_id *id : act)
        destroy(id);
    for (cm_id *id : pending)
        destroy(id);
}

} // namespace

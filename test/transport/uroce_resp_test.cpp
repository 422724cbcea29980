/* SPDX-License-Identifier: BSD-3-Clause
 * Responder: PSN checks, one sequence NAK per gap, duplicates (SEND/WRITE
 * re-ACKed, READ re-read within bounds, atomics replayed), opcode sequence,
 * length, rkey/bounds/access errors, RNR NAKs, ACK coalescing.
 */
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "uroce_psn.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class resp : public pair_fixture {
  protected:
    void SetUp() override {
        pair_fixture::SetUp();
        opt.timeout = 10; /* 4.2 ms */
    }
};

/* Drop one chosen frame from A to B (the nth request), deterministically. */
static memlink::filter_fn drop_nth(const memlink_port *from, int n, int *seen) {
    return [from, n, seen](rte_mbuf *, const memlink_port *f) {
        if (f != from) return true;
        return ++*seen != n;
    };
}

TEST_F(resp, gap_gets_one_seq_nak_then_recovers) {
    setup_pair();
    std::vector<uint8_t> src(8 * 1024), dst(8 * 1024);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 1);
    int seen = 0;
    link->set_filter(drop_nth(a.port, 2, &seen));
    ASSERT_EQ(post_recv_buf(b, dst.data(), 8192, md, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 8192, ms, 1), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    /* 8 packets, the 2nd lost: 6 arrive out of order, one NAK only */
    EXPECT_EQ(b.qp->cnt.out_of_seq, 6u);
    EXPECT_EQ(b.qp->cnt.seq_naks_sent, 1u);
    EXPECT_EQ(a.qp->cnt.seq_naks_rcvd, 1u);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.retrans_pkts, 7u);
}

/* IBTA 11.6.3.1: a connected QP that takes a packet in RTR raises
 * Communication Established, once, and not for a frame whose ICRC fails
 * (a fused SEND, checked while its payload is copied). */
TEST_F(resp, first_packet_in_rtr_raises_comm_est_once) {
    setup_pair();
    /* B back to RTR only: its peer sends before B's RTS (a lost RTU) */
    qp_attr at;
    at.qp_state = qp_state::reset;
    ASSERT_EQ(modify_qp(b.qp, at, qp_attr_state), verbs_error::ok);
    at = qp_attr{};
    at.qp_state = qp_state::init;
    at.port_num = 1;
    at.qp_access_flags = access_remote_write;
    ASSERT_EQ(modify_qp(b.qp, at,
                        qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags),
              verbs_error::ok);
    at = qp_attr{};
    at.qp_state = qp_state::rtr;
    at.path_mtu = opt.path_mtu;
    at.dest_qp_num = qp_num(a.qp);
    at.rq_psn = opt.psn_a;
    at.ah_attr = ah_to(a);
    at.max_dest_rd_atomic = opt.max_rd_atomic;
    at.min_rnr_timer = opt.min_rnr_timer;
    ASSERT_EQ(modify_qp(b.qp, at,
                        qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                            qp_attr_rq_psn | qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer),
              verbs_error::ok);
    async_event ev;
    while (get_async_event(b.ctx, &ev)) {
    }
    std::vector<uint8_t> src(1000, 0x3c), dst(2000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (uint64_t i = 0; i < 2; ++i)
        ASSERT_EQ(post_recv_buf(b, dst.data() + i * 1000, 1000, md, i), verbs_error::ok);
    /* the first SEND arrives with a flipped payload byte: its ICRC fails */
    bool flipped = false;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        if (from == a.port && !flipped && m->data_len > 500) {
            rte_pktmbuf_mtod(m, uint8_t *)[m->data_len - 100] ^= 1;
            flipped = true;
        }
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 1000, ms, 1), verbs_error::ok);
    for (int i = 0; i < 5 && !flipped; ++i)
        pump();
    ASSERT_TRUE(flipped);
    EXPECT_FALSE(get_async_event(b.ctx, &ev)) << "not from a frame whose ICRC fails";
    EXPECT_GE(b.ctx->cnt().rx_icrc_errors, 1u);
    /* its resend, and a second SEND: one event */
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 1000, ms, 2), verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 2).size(), 2u);
    ASSERT_TRUE(get_async_event(b.ctx, &ev));
    EXPECT_EQ(ev.type, event_type::comm_est);
    EXPECT_EQ(ev.qp, b.qp);
    EXPECT_FALSE(get_async_event(b.ctx, &ev)) << "once";
    EXPECT_EQ(poll_n(b.rcq, 2).size(), 2u);
}

TEST_F(resp, duplicate_send_and_write_not_executed_twice) {
    setup_pair();
    link->set_faults(0, 1.0, 0, 0, 0, 0); /* every frame twice */
    std::vector<uint8_t> src(5000), dst(5000 * 4), wdst(5000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mw = reg(b, wdst.data(), wdst.size());
    fill_pattern(src.data(), src.size(), 2);
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(post_recv_buf(b, dst.data() + i * 5000, 5000, md, i), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 5000, ms, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 5000, ms, 2,
                       reinterpret_cast<uint64_t>(wdst.data()), mr_rkey(mw)),
              verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 100, ms, 3), verbs_error::ok);
    auto sw = poll_n(a.scq, 3);
    ASSERT_EQ(sw.size(), 3u);
    for (auto &e : sw)
        EXPECT_EQ(e.status, wc_status::success);
    settle();
    wc rw[8];
    int n = poll_cq(b.rcq, 8, rw);
    ASSERT_EQ(n, 2); /* two SENDs, each completed once */
    EXPECT_EQ(rw[0].wr_id, 0u);
    EXPECT_EQ(rw[1].wr_id, 1u);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), 5000), 0);
    EXPECT_EQ(std::memcmp(wdst.data(), src.data(), 5000), 0);
    EXPECT_GT(b.qp->cnt.dup_requests, 0u);
    /* the third and fourth receive WQEs are untouched */
    wc none;
    EXPECT_EQ(poll_cq(b.rcq, 1, &none), 0);
}

TEST_F(resp, lost_read_response_is_reread) {
    opt.path_mtu = mtu::mtu_1024;
    setup_pair();
    std::vector<uint8_t> remote(6000), local(6000);
    mr *mrem = reg(b, remote.data(), remote.size());
    mr *ml = reg(a, local.data(), local.size());
    fill_pattern(remote.data(), remote.size(), 3);
    int seen = 0;
    link->set_filter(drop_nth(b.port, 3, &seen)); /* 3rd READ response */
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 6000, ml, 1,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(local, remote);
    EXPECT_EQ(b.qp->cnt.dup_reads, 1u);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
}

TEST_F(resp, duplicate_read_out_of_bounds_is_dropped) {
    setup_pair();
    std::vector<uint8_t> remote(8192), local(4096);
    mr *mrem = reg(b, remote.data(), remote.size());
    mr *ml = reg(a, local.data(), local.size());
    fill_pattern(remote.data(), remote.size(), 4);
    uint32_t read_psn = a.qp->req.psn;
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 2048, ml, 1,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    ASSERT_EQ(poll_n(a.scq, 1).size(), 1u);
    uint64_t tx_before = b.qp->cnt.tx_pkts;
    /* A duplicate READ (old PSN) asking for more than the original: rxe
     * re-read past the resource here; we must drop it. */
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(remote.data());
    x.rkey = mr_rkey(mrem);
    x.dma_length = 8192;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_read_request), read_psn, x);
    x.va = reinterpret_cast<uint64_t>(remote.data()) + 1024; /* right PSN, range past the end */
    x.dma_length = 2048;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_read_request), psn_add(read_psn, 1), x);
    x.va = reinterpret_cast<uint64_t>(remote.data()) - 1024; /* before the start */
    x.dma_length = 1024;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_read_request), read_psn, x);
    settle();
    EXPECT_EQ(b.qp->cnt.tx_pkts, tx_before);
    EXPECT_EQ(b.qp->cnt.dup_reads, 0u);
    EXPECT_EQ(b.qp->cnt.dup_requests, 3u);
    /* a proper duplicate (second half of the original) is answered */
    x.va = reinterpret_cast<uint64_t>(remote.data()) + 1024;
    x.dma_length = 1024;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_read_request), psn_add(read_psn, 1), x);
    settle();
    EXPECT_EQ(b.qp->cnt.dup_reads, 1u);
    EXPECT_EQ(b.qp->cnt.tx_pkts, tx_before + 1);
    EXPECT_EQ(a.qp->cnt.dup_responses, 1u); /* A had completed it already */
}

TEST_F(resp, duplicate_atomic_never_applied_twice) {
    setup_pair();
    alignas(8) uint64_t target = 1000;
    alignas(8) uint64_t result = 0;
    mr *mt = reg(b, &target, 8);
    mr *mres = reg(a, &result, 8);
    /* lose the first ATOMIC_ACKNOWLEDGE: A probes (or times out) and resends the atomic */
    bool dropped = false;
    link->set_filter([&](rte_mbuf *m, const memlink_port *) {
        roce_packet p = peek(m);
        if (!dropped && p.opcode == to_u8(ib_opcode::rc_atomic_acknowledge)) {
            dropped = true;
            return false;
        }
        return true;
    });
    sge s{reinterpret_cast<uint64_t>(&result), 8, mr_lkey(mres)};
    send_wr w;
    w.wr_id = 1;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::atomic_fetch_and_add;
    w.send_flags = send_signaled;
    w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&target);
    w.wr.atomic.rkey = mr_rkey(mt);
    w.wr.atomic.compare_add = 5;
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_TRUE(dropped);
    EXPECT_EQ(target, 1005u);
    EXPECT_EQ(result, 1000u);
    EXPECT_EQ(b.qp->cnt.dup_atomics, 1u);
    /* resent once: by the tail-loss probe (or the timeout without it) */
    EXPECT_EQ(a.qp->cnt.timeouts + a.qp->cnt.tlp_probes, 1u);
}

TEST_F(resp, rkey_bounds_and_access_errors) {
    struct case_t {
        wr_opcode op;
        int what; /* 0 bad rkey, 1 out of bounds, 2 no MR access, 3 stale rkey */
    };
    for (case_t c : {case_t{wr_opcode::rdma_write, 0}, case_t{wr_opcode::rdma_write, 1},
                     case_t{wr_opcode::rdma_write, 2}, case_t{wr_opcode::rdma_read, 0},
                     case_t{wr_opcode::rdma_read, 1}, case_t{wr_opcode::rdma_read, 2},
                     case_t{wr_opcode::rdma_write, 3}}) {
        setup_pair();
        std::vector<uint8_t> remote(4096, 0x33), local(4096, 0x44);
        mr *ml = reg(a, local.data(), local.size());
        unsigned acc = access_local_write | access_remote_read | access_remote_write;
        if (c.what == 2) acc = access_local_write; /* no remote access at all */
        mr *mrem = reg(b, remote.data(), 2048, acc);
        uint32_t rkey = mr_rkey(mrem);
        uint64_t va = reinterpret_cast<uint64_t>(remote.data());
        uint32_t len = 1000;
        if (c.what == 0) rkey ^= 0x1;
        if (c.what == 1) va += 1500; /* 1500 + 1000 > 2048 */
        if (c.what == 3) {
            ASSERT_EQ(dereg_mr(mrem), verbs_error::ok);
            mr *again = reg(b, remote.data(), 2048);
            EXPECT_NE(mr_rkey(again), rkey) << "a re-registration must not re-issue the key";
        }
        ASSERT_EQ(post_one(a, c.op, local.data(), len, ml, 1, va, rkey), verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, local.data(), 8, ml, 2,
                           reinterpret_cast<uint64_t>(remote.data()), rkey),
                  verbs_error::ok);
        auto sw = poll_n(a.scq, 2);
        ASSERT_EQ(sw.size(), 2u);
        EXPECT_EQ(sw[0].status, wc_status::rem_access_err) << int(c.op) << " " << c.what;
        EXPECT_EQ(sw[1].status, wc_status::wr_flush_err);
        EXPECT_EQ(b.qp->cnt.access_naks_sent, 1u);
        /* unknown or stale keys and valid keys used beyond their rights
         * are counted apart (doc/security.md) */
        const bool key_unknown = c.what == 0 || c.what == 3;
        EXPECT_EQ(b.qp->cnt.bad_rkey, key_unknown ? 1u : 0u) << c.what;
        EXPECT_EQ(b.qp->cnt.rkey_violations, key_unknown ? 0u : 1u) << c.what;
        for (uint8_t x : remote)
            ASSERT_EQ(x, 0x33);
        if (c.op == wr_opcode::rdma_read) {
            for (uint8_t x : local)
                ASSERT_EQ(x, 0x44);
        }
        EXPECT_EQ(a.qp->state, qp_state::err);
        EXPECT_EQ(b.qp->state, qp_state::err);
        TearDown();
    }
}

/* SEND with Invalidate may invalidate only a key its owner made remotely
 * invalidatable (access_remote_invalidate: ibverbs' memory windows and
 * fast-registration MRs). Naming any other key of the PD, here the
 * victim's own receive buffer registered for local access only, is an
 * invalid request (rxe: RESPST_ERR_INVALIDATE_RKEY, class J): the receive
 * completes in error, the MR stays usable, and the refusal is counted. */
TEST_F(resp, send_with_inv_only_invalidates_invalidatable_keys) {
    setup_pair();
    std::vector<uint8_t> src(64, 0x21), dst(64, 0), own(64, 0);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size(), access_local_write);
    mr *mown = reg(b, own.data(), own.size(), access_local_write);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 64, md, 1), verbs_error::ok);
    sge sg{reinterpret_cast<uint64_t>(src.data()), 64, mr_lkey(ms)};
    send_wr w;
    w.wr_id = 5;
    w.sg_list = &sg;
    w.num_sge = 1;
    w.opcode = wr_opcode::send_with_inv;
    w.send_flags = send_signaled;
    w.invalidate_rkey = mr_rkey(mown);
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::rem_inv_req_err);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_inv_req_err);
    EXPECT_EQ(b.qp->cnt.inv_rkey_refused, 1u);
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
    /* the victim's MR still works */
    EXPECT_EQ(b.ctx->mrs().lookup(mr_lkey(mown)), mown);
}

/* With access_remote_invalidate the same SEND invalidates the key. */
TEST_F(resp, send_with_inv_invalidates_a_key_marked_for_it) {
    setup_pair();
    std::vector<uint8_t> src(64, 0x21), dst(64, 0), win(64, 0);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size(), access_local_write);
    mr *mwin = reg(b, win.data(), win.size(),
                   access_local_write | access_remote_write | access_remote_invalidate);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 64, md, 1), verbs_error::ok);
    sge sg{reinterpret_cast<uint64_t>(src.data()), 64, mr_lkey(ms)};
    send_wr w;
    w.sg_list = &sg;
    w.num_sge = 1;
    w.opcode = wr_opcode::send_with_inv;
    w.send_flags = send_signaled;
    w.invalidate_rkey = mr_rkey(mwin);
    send_wr *bad;
    ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, wc_status::success);
    EXPECT_EQ(rw[0].invalidated_rkey, mr_rkey(mwin));
    EXPECT_EQ(b.ctx->mrs().lookup(mr_rkey(mwin)), nullptr);
    EXPECT_EQ(b.qp->cnt.inv_rkey_refused, 0u);
    EXPECT_EQ(b.qp->state, qp_state::rts);
}

/* ---- max_dest_rd_atomic (IBTA 9.5 / 9.7.5.1.4; rxe check_resource): the
 * responder keeps that many READ/atomic resources. A READ or atomic that
 * finds every one of them still sending its first response comes from a
 * requester beyond the limit: Invalid Request NAK, counted. */
class resp_rd : public resp {
  protected:
    /* A with max_rd_atomic 16, B with max_dest_rd_atomic dest */
    void setup_limits(uint8_t dest) {
        make_link();
        open(a, a.port, gid_for(0), mac_a, 11);
        open(b, b.port, gid_for(1), mac_b, 22);
        a.qp = make_qp(a);
        b.qp = make_qp(b);
        opt.max_rd_atomic = 16;
        connect(a, b, opt.psn_a, opt.psn_b);
        opt.max_rd_atomic = dest;
        connect(b, a, opt.psn_b, opt.psn_a);
    }
    /* A READ_REQUEST of 64 bytes of buf, as a.qp would send it. */
    rte_mbuf *read_req(uint32_t psn, uint8_t *buf, mr *m) {
        bth_fields bf;
        bf.opcode = to_u8(ib_opcode::rc_rdma_read_request);
        bf.psn = psn;
        bf.dest_qp = qp_num(b.qp);
        ext_fields x;
        x.va = reinterpret_cast<uint64_t>(buf);
        x.rkey = mr_rkey(m);
        x.dma_length = 64;
        return pkt_build(test_pool(), a.qp->hdr, bf, x, nullptr, 0, 1);
    }
};

TEST_F(resp_rd, reads_beyond_max_dest_rd_atomic_are_refused) {
    setup_limits(2);
    std::vector<uint8_t> buf(64, 0x42);
    mr *m = reg(b, buf.data(), buf.size());
    rte_mbuf *pkts[16];
    const uint32_t psn = b.qp->resp.psn;
    for (uint32_t i = 0; i < 16; ++i)
        pkts[i] = read_req(psn_add(psn, i), buf.data(), m);
    b.ctx->rx_burst(pkts, 16); /* all 16 before any response can leave */
    EXPECT_EQ(b.qp->cnt.rx_pkts, 2u);
    EXPECT_EQ(b.qp->cnt.rd_atomic_refused, 1u);
    EXPECT_EQ(b.qp->cnt.rd_atomic_evicted, 0u);
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
    EXPECT_EQ(b.qp->state, qp_state::err);
    EXPECT_EQ(b.qp->cnt.state_drops, 13u);
}

TEST_F(resp_rd, max_dest_rd_atomic_zero_serves_no_read) {
    setup_limits(0);
    std::vector<uint8_t> buf(64, 0x42);
    mr *m = reg(b, buf.data(), buf.size());
    rte_mbuf *p = read_req(b.qp->resp.psn, buf.data(), m);
    b.ctx->rx_burst(&p, 1);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 0u);
    EXPECT_EQ(b.qp->cnt.rd_atomic_refused, 1u);
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
    EXPECT_EQ(b.qp->state, qp_state::err);
}

/* A duplicate READ queues a replay of its saved response; a new READ that
 * needs that resource drops the replay (the requester, which sent the new
 * READ, no longer waits for it) and counts the eviction. */
TEST_F(resp_rd, a_queued_replay_is_evicted_and_counted) {
    setup_limits(2);
    std::vector<uint8_t> buf(64, 0x42);
    mr *m = reg(b, buf.data(), buf.size());
    const uint32_t psn = b.qp->resp.psn;
    for (uint32_t i = 0; i < 2; ++i) {
        rte_mbuf *p = read_req(psn_add(psn, i), buf.data(), m);
        b.ctx->rx_burst(&p, 1); /* answered at once */
    }
    rte_mbuf *pkts[2] = {read_req(psn, buf.data(), m), read_req(psn_add(psn, 2), buf.data(), m)};
    b.ctx->rx_burst(pkts, 2);
    EXPECT_EQ(b.qp->cnt.dup_reads, 1u);
    EXPECT_EQ(b.qp->cnt.rd_atomic_evicted, 1u);
    EXPECT_EQ(b.qp->cnt.rd_atomic_refused, 0u);
    EXPECT_EQ(b.qp->cnt.rx_pkts, 3u);
    EXPECT_EQ(b.qp->state, qp_state::rts);
}

/* A requester that keeps to the limit is never refused, losses and
 * duplicates included. */
TEST_F(resp_rd, reads_within_the_limit_are_never_refused) {
    opt.max_rd_atomic = 2;
    setup_pair();
    link->set_faults(0.05, 0.3, 0, 0, 0, 0);
    std::vector<uint8_t> src(128 * 1024), dst(128 * 1024, 0);
    fill_pattern(src.data(), src.size(), 4);
    mr *ms = reg(b, src.data(), src.size());
    mr *md = reg(a, dst.data(), dst.size());
    for (int i = 0; i < 64; ++i) {
        uint32_t len = 1000 + 5 * uint32_t(i);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, dst.data() + i * 2048, len, md, i,
                           reinterpret_cast<uint64_t>(src.data() + i * 2048), mr_rkey(ms)),
                  verbs_error::ok);
    }
    auto sw = poll_n(a.scq, 64);
    ASSERT_EQ(sw.size(), 64u);
    for (const wc &w : sw)
        EXPECT_EQ(w.status, wc_status::success) << w.wr_id;
    EXPECT_EQ(b.qp->cnt.rd_atomic_refused, 0u);
    for (int i = 0; i < 64; ++i)
        ASSERT_EQ(std::memcmp(dst.data() + i * 2048, src.data() + i * 2048, 1000), 0) << i;
}

TEST_F(resp, dereg_in_the_middle_of_a_write_stops_it) {
    setup_pair();
    std::vector<uint8_t> remote(3072, 0);
    mr *mrem = reg(b, remote.data(), remote.size());
    std::vector<uint8_t> pl(1024, 0x6b);
    ext_fields x;
    x.va = reinterpret_cast<uint64_t>(remote.data());
    x.rkey = mr_rkey(mrem);
    x.dma_length = 3072;
    uint32_t psn = b.qp->resp.psn;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_write_first), psn, x, pl.data(), 1024, false);
    EXPECT_EQ(remote[1023], 0x6b);
    ASSERT_EQ(dereg_mr(mrem), verbs_error::ok);
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_write_middle), psn_add(psn, 1), ext_fields{},
           pl.data(), 1024, false);
    EXPECT_EQ(b.qp->cnt.access_naks_sent, 1u);
    EXPECT_EQ(b.qp->state, qp_state::err);
    for (size_t i = 1024; i < remote.size(); ++i)
        ASSERT_EQ(remote[i], 0) << i;
}

TEST_F(resp, qp_access_flags_checked) {
    setup_pair();
    qp_attr at;
    at.qp_access_flags = 0; /* B's QP allows no remote access */
    ASSERT_EQ(modify_qp(b.qp, at, qp_attr_access_flags), verbs_error::ok);
    std::vector<uint8_t> remote(64), local(64);
    mr *ml = reg(a, local.data(), 64);
    mr *mrem = reg(b, remote.data(), 64);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 64, ml, 1,
                       reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_inv_req_err);
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
}

TEST_F(resp, send_longer_than_receive_buffer) {
    setup_pair();
    std::vector<uint8_t> src(3000), dst(2000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 2000, md, 7), verbs_error::ok);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 2000, md, 8), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 3000, ms, 1), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::rem_inv_req_err);
    auto rw = poll_n(b.rcq, 2);
    ASSERT_EQ(rw.size(), 2u);
    EXPECT_EQ(rw[0].wr_id, 7u);
    EXPECT_EQ(rw[0].status, wc_status::loc_len_err);
    EXPECT_EQ(rw[1].wr_id, 8u);
    EXPECT_EQ(rw[1].status, wc_status::wr_flush_err);
}

TEST_F(resp, opcode_sequence_error_is_invalid_request) {
    setup_pair();
    std::vector<uint8_t> dst(4096);
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 4096, md, 1), verbs_error::ok);
    /* SEND_MIDDLE at the expected PSN with no SEND_FIRST before it */
    std::vector<uint8_t> pl(1024, 0x77);
    ext_fields x;
    inject(b, a.qp, to_u8(ib_opcode::rc_send_middle), b.qp->resp.psn, x, pl.data(), 1024);
    settle();
    EXPECT_EQ(b.qp->cnt.opcode_seq_errors, 1u);
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
    EXPECT_EQ(b.qp->state, qp_state::err);
    for (uint8_t v : dst)
        ASSERT_EQ(v, 0);
}

TEST_F(resp, wrong_payload_size_is_invalid_request) {
    setup_pair();
    std::vector<uint8_t> dst(4096);
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 4096, md, 1), verbs_error::ok);
    std::vector<uint8_t> pl(1000, 0x77); /* a FIRST must carry exactly one MTU */
    ext_fields x;
    inject(b, a.qp, to_u8(ib_opcode::rc_send_first), b.qp->resp.psn, x, pl.data(), 1000);
    settle();
    EXPECT_EQ(b.qp->cnt.inv_req_naks_sent, 1u);
}

TEST_F(resp, rnr_nak_carries_min_rnr_timer) {
    opt.min_rnr_timer = 14; /* 0.96 ms */
    setup_pair();
    std::vector<uint8_t> src(100), dst(100);
    mr *ms = reg(a, src.data(), 100);
    mr *md = reg(b, dst.data(), 100);
    uint8_t syndrome = 0;
    link->set_filter([&](rte_mbuf *m, const memlink_port *) {
        roce_packet p = peek(m);
        if (p.opcode == to_u8(ib_opcode::rc_acknowledge) && !syndrome)
            syndrome = p.aeth()->syndrome;
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 100, ms, 1), verbs_error::ok);
    settle();
    EXPECT_EQ(syndrome, aeth_syndrome::make_rnr_nak(14));
    EXPECT_EQ(b.qp->cnt.rnr_naks_sent, 1u);
    uint64_t t0 = clk.now_ns();
    ASSERT_EQ(post_recv_buf(b, dst.data(), 100, md, 1), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    /* the requester waited at least the advertised 0.96 ms before retrying */
    EXPECT_GE(clk.now_ns() - t0, 960'000u);
    EXPECT_EQ(a.qp->cnt.rnr_naks_rcvd, 1u);
}

TEST_F(resp, a_duplicate_in_the_same_burst_does_not_hide_an_rnr_nak) {
    setup_pair();
    std::vector<uint8_t> pl(64, 1);
    uint32_t e = b.qp->resp.psn;
    /* advance B's ePSN by one WRITE so that e is a duplicate afterwards */
    std::vector<uint8_t> dst(64);
    mr *md = reg(b, dst.data(), 64);
    ext_fields wx;
    wx.va = reinterpret_cast<uint64_t>(dst.data());
    wx.rkey = mr_rkey(md);
    wx.dma_length = 64;
    inject(b, a.qp, to_u8(ib_opcode::rc_rdma_write_only), e, wx, pl.data(), 64);
    settle();
    std::vector<uint8_t> syndromes;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        if (from == b.port) syndromes.push_back(peek(m).aeth()->syndrome);
        return false; /* keep A out of it */
    });
    /* one burst: a SEND with no receive WQE (RNR), then the old WRITE again */
    auto build = [&](uint8_t op, uint32_t psn, const ext_fields &x) {
        bth_fields bf;
        bf.opcode = op;
        bf.psn = psn;
        bf.dest_qp = qp_num(b.qp);
        bf.ack_req = true;
        payload_src src;
        src.flat = pl.data();
        return pkt_build(test_pool(), a.qp->hdr, bf, x, &src, 64, 1);
    };
    rte_mbuf *burst[2] = {build(to_u8(ib_opcode::rc_send_only), psn_add(e, 1), ext_fields{}),
                          build(to_u8(ib_opcode::rc_rdma_write_only), e, wx)};
    b.ctx->rx_burst(burst, 2);
    b.ctx->poll();
    ASSERT_EQ(syndromes.size(), 1u);
    EXPECT_EQ(aeth_syndrome::type(syndromes[0]), aeth_syndrome::type_rnr_nak);
    EXPECT_EQ(b.qp->cnt.dup_requests, 1u);
}

TEST_F(resp, acks_are_coalesced) {
    setup_pair();
    std::vector<uint8_t> src(64), dst(64 * 100);
    mr *ms = reg(a, src.data(), 64);
    mr *md = reg(b, dst.data(), dst.size());
    /* 100 one-packet WRITEs posted at once reach B in bursts: far fewer than 100 ACKs */
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 64, ms, i,
                           reinterpret_cast<uint64_t>(dst.data() + 64 * i), mr_rkey(md),
                           i == 99 ? unsigned(send_signaled) : 0u),
                  verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_LE(b.qp->cnt.tx_acks, 4u);
    EXPECT_GE(b.qp->cnt.tx_acks, 1u);
}

TEST_F(resp, uc_drops_until_next_first) {
    opt.type = qp_type::uc;
    setup_pair();
    std::vector<uint8_t> src(4096), dst(4096 * 2);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 8);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 4096, md, 1), verbs_error::ok);
    ASSERT_EQ(post_recv_buf(b, dst.data() + 4096, 4096, md, 2), verbs_error::ok);
    int seen = 0;
    link->set_filter(drop_nth(a.port, 2, &seen)); /* the 2nd of 4 packets of message 1 */
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 4096, ms, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 4096, ms, 2), verbs_error::ok);
    settle();
    wc rw[4];
    int n = poll_cq(b.rcq, 4, rw);
    ASSERT_EQ(n, 1); /* message 1 lost, message 2 delivered into the first WQE */
    EXPECT_EQ(rw[0].wr_id, 1u);
    EXPECT_EQ(rw[0].byte_len, 4096u);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), 4096), 0);
    EXPECT_EQ(b.qp->cnt.uc_dropped, 2u);
    auto sw = poll_n(a.scq, 2);
    EXPECT_EQ(sw.size(), 2u); /* UC completes at the sender regardless */
}

/* UC has no NAK (IBTA 9.8.3): a refused message is dropped, the memory
 * untouched, and the drop counted, since nothing else would show it. */
TEST_F(resp, uc_refused_write_is_counted) {
    opt.type = qp_type::uc;
    setup_pair();
    std::vector<uint8_t> src(256), dst(256, 0); /* one packet: the refused one itself */
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 9);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 256, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md) ^ 0x100),
              verbs_error::ok);
    settle();
    EXPECT_EQ(dst, std::vector<uint8_t>(256, 0));
    EXPECT_EQ(b.qp->cnt.uc_dropped, 1u); /* 0 before: the refusal itself went uncounted */
    /* and the next message is received as if nothing had happened */
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 256, ms, 2,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    settle();
    EXPECT_EQ(dst, src);
    EXPECT_EQ(b.qp->cnt.uc_dropped, 1u);
}

/* ---- Fused receive (doc/security.md): the ICRC checked while the payload
 * is placed. One frame of a 4 KiB message at MTU 1024 (4 packets) gets one
 * payload byte flipped on its first transmission, so its ICRC is bad. Until
 * the resend of that PSN arrives, the responder must have committed nothing
 * for it (its PSN, no ACK covering it, no receive completion); afterwards the
 * message must complete once with exactly the sent bytes. A SEND's place is
 * the receive WQE and a WRITE MIDDLE/LAST's is set by the verified FIRST, so
 * those are placed while checked (rx_icrc_fused_errors counts the bad one); a
 * WRITE FIRST names its place in its own RETH and is checked first. */

class resp_fused : public resp {
  protected:
    /* SEND or WRITE_WITH_IMM of 4 KiB, its nth packet corrupted once. */
    void run(wr_opcode op, int nth, bool expect_fused) {
        setup_pair();
        std::vector<uint8_t> src(4096), dst(4096 + 64, 0x5a), rbuf(64);
        fill_pattern(src.data(), src.size(), 77);
        mr *ms = reg(a, src.data(), src.size());
        mr *md = reg(b, dst.data(), dst.size());
        mr *mr_ = reg(b, rbuf.data(), rbuf.size());
        const bool is_send = op == wr_opcode::send;
        ASSERT_EQ(is_send ? post_recv_buf(b, dst.data(), 4096 + 64, md, 1)
                          : post_recv_buf(b, rbuf.data(), 64, mr_, 1),
                  verbs_error::ok);
        corrupt_once c;
        c.from = a.port;
        c.nth = nth;
        uint32_t resp_psn_at_resend = 0;
        int recv_cqes_at_resend = -1;
        bool speculative_seen = false;
        std::vector<wc> early;
        c.at_resend = [&] {
            resp_psn_at_resend = b.qp->resp.psn;
            wc tmp[4];
            recv_cqes_at_resend = poll_cq(b.rcq, 4, tmp);
            /* the bad frame's bytes may sit where the resend will put its own */
            const size_t at = size_t(nth - 1) * 1024 + 5;
            speculative_seen = dst[at] == uint8_t(src[at] ^ 0xff);
        };
        link->set_filter(corrupt_filter(&c));
        sge sg{reinterpret_cast<uint64_t>(src.data()), 4096, mr_lkey(ms)};
        send_wr w;
        w.wr_id = 9;
        w.sg_list = &sg;
        w.num_sge = 1;
        w.opcode = op;
        w.send_flags = send_signaled;
        w.imm_data = 0x01020304;
        w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data());
        w.wr.rdma.rkey = mr_rkey(md);
        send_wr *bad;
        ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
        auto sw = poll_n(a.scq, 1);
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(sw[0].status, wc_status::success);
        auto rw = poll_n(b.rcq, 1);
        ASSERT_EQ(rw.size(), 1u);
        EXPECT_EQ(rw[0].status, wc_status::success);
        EXPECT_EQ(rw[0].byte_len, 4096u);
        ASSERT_TRUE(c.corrupted);
        ASSERT_TRUE(c.resent);
        /* nothing committed for the bad frame before its resend */
        EXPECT_EQ(resp_psn_at_resend, c.bad_psn);
        EXPECT_EQ(c.acks_covering_bad, 0u);
        EXPECT_EQ(recv_cqes_at_resend, 0);
        /* then exactly the sent bytes, nothing outside the target */
        EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
        for (size_t i = 4096; i < dst.size(); ++i)
            ASSERT_EQ(dst[i], 0x5a) << i;
        const dev_counters &dc = b.ctx->counters();
        EXPECT_EQ(dc.rx_icrc_errors, 1u);
        EXPECT_EQ(dc.rx_icrc_fused_errors, expect_fused ? 1u : 0u);
        if (expect_fused) {
            EXPECT_GT(dc.rx_icrc_fused, 0u);
            EXPECT_TRUE(speculative_seen); /* placed while checked, then rewritten */
        }
        EXPECT_EQ(b.qp->cnt.completions, 1u);
    }
};

TEST_F(resp_fused, send_middle_bad_icrc_commits_nothing) {
    run(wr_opcode::send, 2, true);
}
TEST_F(resp_fused, send_last_bad_icrc_completes_nothing) {
    run(wr_opcode::send, 4, true);
}
TEST_F(resp_fused, write_middle_bad_icrc_commits_nothing) {
    run(wr_opcode::rdma_write_with_imm, 2, true);
}
TEST_F(resp_fused, write_last_with_imm_bad_icrc_completes_nothing) {
    run(wr_opcode::rdma_write_with_imm, 4, true);
}
/* The RETH names the place: checked before anything is placed. */
TEST_F(resp_fused, write_first_bad_icrc_is_checked_before_placing) {
    run(wr_opcode::rdma_write_with_imm, 1, false);
}
/* The same with fusing off: the same outcome, nothing placed while checked. */
TEST_F(resp_fused, switched_off_checks_first) {
    icrc_set_fused_copy(false);
    run(wr_opcode::send, 2, false);
    icrc_set_fused_copy(true);
    EXPECT_EQ(b.ctx->counters().rx_icrc_fused, 0u);
}

/* Atomics are host atomics: two responders on two threads (two devices,
 * as two lcores would run them) applying FETCH_ADD and CMP_SWAP to the same
 * 8 bytes lose no update. */
alignas(8) uint64_t shared_target = 0;
constexpr int per_thread = 20000;
std::atomic<int> ready{0};

struct atomic_worker : pair_fixture {
    uint64_t cpus = 0;
    void TestBody() override {}
    void run(int id, uint64_t *fails) {
        /* EAL pinned the main thread to lcore 0 and threads inherit that:
         * let these two run on every CPU so they really overlap */
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int c = 0; c < CPU_SETSIZE; ++c)
            CPU_SET(c, &all);
        pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
        idle_step_ns = 1000;
        static const uint8_t macs[2][2][6] = {{{2, 1, 0, 0, 0, 1}, {2, 1, 0, 0, 0, 2}},
                                              {{2, 2, 0, 0, 0, 1}, {2, 2, 0, 0, 0, 2}}};
        link = std::make_unique<memlink>(memlink_config{}, &clk);
        a.port = link->add_port(macs[id][0]);
        b.port = link->add_port(macs[id][1]);
        open(a, a.port, gid::from_ipv4(0x0a000001), macs[id][0], 3 + id);
        open(b, b.port, gid::from_ipv4(0x0a000002), macs[id][1], 5 + id);
        a.qp = make_qp(a);
        b.qp = make_qp(b);
        connect(a, b, 1, 2);
        connect(b, a, 2, 1);
        mr *mt = reg(b, &shared_target, 8);
        alignas(8) uint64_t res = 0;
        mr *mres = reg(a, &res, 8);
        /* start together */
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        int cpu0 = sched_getcpu();
        for (int i = 0; i < per_thread; ++i) {
            sge s{reinterpret_cast<uint64_t>(&res), 8, mr_lkey(mres)};
            send_wr w;
            w.sg_list = &s;
            w.num_sge = 1;
            w.send_flags = send_signaled;
            w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&shared_target);
            w.wr.atomic.rkey = mr_rkey(mt);
            if (i % 2) {
                w.opcode = wr_opcode::atomic_fetch_and_add;
                w.wr.atomic.compare_add = 1;
            } else {
                /* increment by CAS: try again until it takes */
                w.opcode = wr_opcode::atomic_cmp_and_swp;
                w.wr.atomic.compare_add = __atomic_load_n(&shared_target, __ATOMIC_SEQ_CST);
                w.wr.atomic.swap = w.wr.atomic.compare_add + 1;
            }
            send_wr *bad;
            if (post_send(a.qp, &w, &bad) != verbs_error::ok) ++*fails;
            auto c = poll_n(a.scq, 1);
            if (c.size() != 1 || c[0].status != wc_status::success) ++*fails;
            if (w.opcode == wr_opcode::atomic_cmp_and_swp && res != w.wr.atomic.compare_add)
                --i; /* lost the race to the other thread */
        }
        cpus = uint64_t(cpu0) << 8 | uint64_t(sched_getcpu());
        TearDown();
    }
};

TEST(resp_threads, atomics_are_atomic_across_qps_and_threads) {
    uint64_t fails[2] = {0, 0};
    atomic_worker w0, w1;
    std::thread t0([&] { w0.run(0, &fails[0]); });
    std::thread t1([&] { w1.run(1, &fails[1]); });
    t0.join();
    t1.join();
    std::printf("threads ran on cpus %llx / %llx\n", (unsigned long long)w0.cpus,
                (unsigned long long)w1.cpus);
    EXPECT_EQ(fails[0] + fails[1], 0u);
    EXPECT_EQ(shared_target, uint64_t(2 * per_thread));
}

} // namespace

/* SPDX-License-Identifier: BSD-3-Clause
 * Completer: retry exhaustion (retry_cnt 7 is not infinite), the local ACK
 * timeout value, RNR retry exhaustion and recovery (rnr_retry 7 infinite),
 * in-order completion, flush of what is left, stale responses ignored.
 */
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "uroce_psn.h"
#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

class comp : public pair_fixture {};

TEST_F(comp, timeout_values) {
    EXPECT_EQ(local_ack_timeout_ns(0), 0u);
    EXPECT_EQ(local_ack_timeout_ns(1), 8192u);
    EXPECT_EQ(local_ack_timeout_ns(14), 4096u << 14); /* 67.1 ms */
    EXPECT_EQ(rnr_timer_ns(0), 655'360'000u);
    EXPECT_EQ(rnr_timer_ns(1), 10'000u);
    EXPECT_EQ(rnr_timer_ns(12), 640'000u);
    EXPECT_EQ(rnr_timer_ns(24), 40'960'000u);
    EXPECT_EQ(rnr_timer_ns(31), 491'520'000u);
}

TEST_F(comp, retry_exhaustion_then_flush) {
    for (uint8_t retry : {0, 3, 7}) {
        opt.retry_cnt = retry;
        opt.timeout = 8; /* 1.05 ms */
        setup_pair();
        std::vector<uint8_t> src(4096), dst(4096);
        mr *ms = reg(a, src.data(), src.size());
        mr *md = reg(b, dst.data(), dst.size());
        link->set_faults(1.0, 0, 0, 0, 0, 0); /* the link is cut */
        uint64_t t0 = clk.now_ns();
        for (int i = 0; i < 3; ++i)
            ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 4096, ms, i,
                               reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md), 0),
                      verbs_error::ok);
        auto sw = poll_n(a.scq, 3);
        ASSERT_EQ(sw.size(), 3u) << int(retry);
        /* errors complete even when unsignaled, in order */
        EXPECT_EQ(sw[0].status, wc_status::retry_exc_err);
        EXPECT_EQ(sw[0].wr_id, 0u);
        EXPECT_EQ(sw[1].status, wc_status::wr_flush_err);
        EXPECT_EQ(sw[2].status, wc_status::wr_flush_err);
        EXPECT_EQ(sw[2].wr_id, 2u);
        EXPECT_EQ(a.qp->cnt.timeouts, uint64_t(retry) + 1);
        EXPECT_EQ(a.qp->cnt.retransmits, uint64_t(retry));
        EXPECT_EQ(a.qp->cnt.retry_exceeded, 1u);
        uint64_t elapsed = clk.now_ns() - t0;
        EXPECT_GE(elapsed, (uint64_t(retry) + 1) * local_ack_timeout_ns(8));
        EXPECT_LT(elapsed, (uint64_t(retry) + 2) * local_ack_timeout_ns(8));
        EXPECT_EQ(a.qp->state, qp_state::err);
        /* posting in ERR completes at once with a flush error */
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 8, ms, 9,
                           reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
                  verbs_error::ok);
        wc e;
        ASSERT_EQ(poll_cq(a.scq, 1, &e), 1);
        EXPECT_EQ(e.status, wc_status::wr_flush_err);
        EXPECT_EQ(e.wr_id, 9u);
        TearDown();
    }
}

/* (without the tail-loss probe, which recovers this sooner: uroce_loss_test) */
TEST_F(comp, lost_ack_recovered_by_timeout) {
    opt.timeout = 8;
    opt.tail_loss_probe = false;
    setup_pair();
    std::vector<uint8_t> src(100), dst(100);
    mr *ms = reg(a, src.data(), 100);
    mr *md = reg(b, dst.data(), 100);
    fill_pattern(src.data(), 100, 3);
    bool dropped = false;
    link->set_filter([&](rte_mbuf *, const memlink_port *from) {
        if (from == b.port && !dropped) {
            dropped = true;
            return false;
        }
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 100, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(a.qp->cnt.timeouts, 1u);
    EXPECT_EQ(b.qp->cnt.dup_requests, 1u); /* re-ACKed, not re-executed */
    EXPECT_EQ(src, dst);
}

/* One loss, one retry: a retransmit timeout has started a retry for a lost
 * packet; the PSN sequence NAK the responder sent for that same loss, held up
 * on the way, arrives afterwards. It must not start a second retry (rxe
 * starts none while one is running): with retry_cnt 1 it would exhaust the
 * counter on a single loss. */
TEST_F(comp, stale_nak_after_timeout_starts_no_second_retry) {
    opt.timeout = 8;
    opt.tail_loss_probe = false; /* the timeout is what this is about */
    opt.retry_cnt = 1;
    setup_pair();
    std::vector<uint8_t> src(4096), dst(4096);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 5);
    bool lost = false;
    rte_mbuf *held_nak = nullptr;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        roce_packet p = peek(m);
        if (from == a.port && !lost && p.psn() == opt.psn_a) {
            lost = true; /* the first packet of the message, first time only */
            return false;
        }
        if (from == b.port && !held_nak && p.aeth() &&
            aeth_syndrome::type(p.aeth()->syndrome) == aeth_syndrome::type_nak) {
            held_nak = rte_pktmbuf_copy(m, test_pool(), 0, UINT32_MAX);
            return false; /* delivered late, by hand */
        }
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 4096, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return a.qp->cnt.timeouts == 1; }));
    ASSERT_NE(held_nak, nullptr);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
    a.ctx->rx_burst(&held_nak, 1); /* the stale NAK for the same loss */
    EXPECT_EQ(a.qp->cnt.seq_naks_rcvd, 1u);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success) << wc_status_str(sw[0].status);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
    EXPECT_EQ(a.qp->cnt.retry_exceeded, 0u);
    EXPECT_EQ(src, dst);
}

/* Long READs against a slow responder (as rxe with 16 outstanding 8 MiB
 * READs): after a loss the requester asks again, but the responder first
 * finishes every response stream it has queued, in order, and only then
 * answers the new requests. The responses arriving behind the gap show the
 * responder alive and working through our requests: the retransmit timer
 * must restart on each of them, or retry_cnt runs out while they arrive.
 * The responder is a model in the link filter: it answers READ requests in
 * arrival order, one response packet every 50 us (8 x 64 packets take 26 ms,
 * the timeout is 1 ms), and loses one response packet once. Like rxe (and
 * uroce's responder) it answers a request for the rest of a READ with the
 * opcodes of the original stream (MIDDLE.../LAST). */
TEST_F(comp, long_reads_from_a_slow_responder_keep_their_retries) {
    opt.timeout = 8; /* 1.05 ms */
    opt.retry_cnt = 3;
    opt.max_rd_atomic = 16;
    opt.path_mtu = mtu::mtu_1024;
    setup_pair();
    constexpr unsigned nreads = 8;
    constexpr uint32_t len = 64 * 1024, pmtu = 1024;
    std::vector<uint8_t> src(nreads * len), dst(nreads * len, 0);
    fill_pattern(src.data(), src.size(), 9);
    mr *ms = reg(b, src.data(), src.size());
    mr *md = reg(a, dst.data(), dst.size());
    struct request {
        uint32_t psn;
        uint64_t va;
        uint32_t len;
        uint32_t off;
        uint32_t first_idx; /* packet index of va in the original READ */
    };
    std::deque<request> queue;
    const uint64_t base = reinterpret_cast<uint64_t>(src.data());
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        roce_packet p = peek(m);
        if (from == a.port && p.opcode == to_u8(ib_opcode::rc_rdma_read_request)) {
            const uint64_t va = p.reth()->va();
            queue.push_back(
                {p.psn(), va, p.reth()->dma_length(), 0, uint32_t((va - base) % len / pmtu)});
        }
        return false; /* the model answers, not b */
    });
    for (unsigned i = 0; i < nreads; ++i)
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, dst.data() + i * len, len, md, i,
                           reinterpret_cast<uint64_t>(src.data() + i * len), mr_rkey(ms)),
                  verbs_error::ok);
    bool lost = false;
    std::vector<wc> done;
    for (unsigned step = 0; step < 100000 && done.size() < nreads; ++step) {
        a.ctx->poll();
        if (!queue.empty()) {
            request &r = queue.front();
            const uint32_t i = r.off / pmtu, k = r.first_idx + i, n = len / pmtu;
            const uint32_t plen = std::min(pmtu, r.len - r.off);
            using O = ib_opcode;
            const O op = k == 0       ? O::rc_rdma_read_response_first
                         : k + 1 == n ? O::rc_rdma_read_response_last
                                      : O::rc_rdma_read_response_middle;
            ext_fields x;
            x.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
            if (!lost && i == 3) {
                lost = true; /* the 4th response packet of the first READ */
            } else {
                inject(a, b.qp, to_u8(op), psn_add(r.psn, i), x,
                       reinterpret_cast<const uint8_t *>(r.va) + r.off, plen, false);
            }
            r.off += plen;
            if (r.off >= r.len) queue.pop_front();
        }
        clk.advance(50'000);
        wc e[8];
        int k = poll_cq(a.scq, 8, e);
        for (int j = 0; j < k; ++j)
            done.push_back(e[j]);
    }
    ASSERT_EQ(done.size(), size_t(nreads));
    for (unsigned i = 0; i < nreads; ++i) {
        EXPECT_EQ(done[i].status, wc_status::success) << i << ": " << wc_status_str(done[i].status);
        EXPECT_EQ(done[i].wr_id, i);
    }
    EXPECT_TRUE(lost);
    EXPECT_EQ(a.qp->cnt.retry_exceeded, 0u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_TRUE(src == dst);
}

/* ---- Long READs against a slow responder that loses, reorders or stalls
 * (issue 11: `ib_read_bw -s 8388608` against rxe under TCG ran out of
 * retries). The responder is a model in the link filter, as rxe's: it takes
 * READ requests in arrival order and answers one at a time, one response
 * packet per 50 us step, and answers a request for a PSN it has answered
 * before (a go-back-N re-request) again from there, after everything queued
 * before it, with the opcodes of the original stream. The requester keeps
 * `depth` READs outstanding, as ib_read_bw does. Timeout 8 (1.05 ms, 21
 * steps), retry_cnt 3: four silent timeouts end the QP. */
class slow_read : public pair_fixture {
  protected:
    static constexpr uint32_t pmtu = 1024;
    static constexpr uint32_t read_len = 64 * 1024; /* 64 response packets */
    static constexpr uint64_t step_ns = 50'000;

    /* what happens to the n-th response packet the model sends (from 0) */
    std::function<bool(uint64_t n)> lose = [](uint64_t) { return false; };
    /* the n-th is delivered after the (n+1)-th */
    std::function<bool(uint64_t n)> hold = [](uint64_t) { return false; };
    /* the model sends nothing at this step (a stall, as rxe's VM under TCG) */
    std::function<bool(uint64_t step)> silent = [](uint64_t) { return false; };
    /* the n-th response cannot be sent: as rxe's responder on a failed send
     * (rxe_resp.c read_reply -> RESPST_ERR_RNR -> cleanup), the model drops
     * the request packet it was answering from and keeps the READ it was
     * answering half-sent; it goes on only while a request packet is queued,
     * so with none left it waits for the next to arrive */
    std::function<bool(uint64_t n)> send_fails = [](uint64_t) { return false; };

    uint64_t sent = 0;          /* response packets the model sent */
    uint64_t last_sent_ns = 0;  /* when it sent the last one */
    unsigned requests_rcvd = 0; /* READ requests it took (first sends and re-requests) */
    std::vector<uint8_t> src, dst;

    struct request {
        uint32_t psn;
        uint64_t va;
        uint32_t len;
        uint32_t off;       /* bytes of it answered */
        uint32_t first_idx; /* packet index of va in its READ */
    };
    std::deque<request> queue;        /* request packets not yet taken off (rxe's req_pkts) */
    std::optional<request> answering; /* the READ being answered (rxe's resp.res) */
    struct held_pkt {
        uint8_t opcode;
        uint32_t psn;
        const uint8_t *payload;
        uint32_t len;
    };
    std::optional<held_pkt> held;

    void setup(unsigned nreads) {
        opt.timeout = 8; /* 1.05 ms */
        opt.retry_cnt = 3;
        opt.max_rd_atomic = 16;
        opt.path_mtu = mtu::mtu_1024;
        setup_pair();
        src.assign(size_t(nreads) * read_len, 0);
        dst.assign(src.size(), 0);
        fill_pattern(src.data(), src.size(), 11);
        const uint64_t base = reinterpret_cast<uint64_t>(src.data());
        link->set_filter([this, base](rte_mbuf *m, const memlink_port *from) {
            roce_packet p = peek(m);
            if (from == a.port && p.opcode == to_u8(ib_opcode::rc_rdma_read_request)) {
                const uint64_t va = p.reth()->va();
                ++requests_rcvd;
                queue.push_back({p.psn(), va, p.reth()->dma_length(), 0,
                                 uint32_t((va - base) % read_len / pmtu)});
            }
            return false; /* the model answers, not b */
        });
    }

    void send_response(const held_pkt &h) {
        ext_fields x;
        x.syndrome = aeth_syndrome::make_ack(aeth_syndrome::ack_unlimited_credits);
        inject(a, b.qp, h.opcode, h.psn, x, h.payload, h.len, false);
    }

    /* One step of the model: the next response packet, if any. */
    void respond(uint64_t step) {
        if (queue.empty() || silent(step)) return;
        if (!answering) answering = queue.front();
        request &r = *answering;
        const uint32_t i = r.off / pmtu, k = r.first_idx + i, n = read_len / pmtu;
        const uint32_t plen = std::min(pmtu, r.len - r.off);
        using O = ib_opcode;
        const O op = k == 0       ? O::rc_rdma_read_response_first
                     : k + 1 == n ? O::rc_rdma_read_response_last
                                  : O::rc_rdma_read_response_middle;
        const held_pkt h{to_u8(op), psn_add(r.psn, i),
                         reinterpret_cast<const uint8_t *>(r.va) + r.off, plen};
        const uint64_t nth = sent++;
        if (send_fails(nth)) {
            queue.pop_front();
            return;
        }
        r.off += plen;
        if (r.off >= r.len) {
            answering.reset();
            queue.pop_front();
        }
        last_sent_ns = clk.now_ns();
        if (lose(nth)) return;
        if (hold(nth) && !held) {
            held = h;
            return;
        }
        send_response(h);
        if (held) {
            send_response(*held);
            held.reset();
        }
    }

    /* Post `nreads` READs, `depth` at a time; run until all have completed
     * (or one in error and the rest flushed), or max_steps. */
    std::vector<wc> run(unsigned nreads, unsigned depth, unsigned max_steps = 200000) {
        mr *ms = reg(b, src.data(), src.size());
        mr *md = reg(a, dst.data(), dst.size());
        unsigned posted = 0;
        auto post = [&] {
            EXPECT_EQ(post_one(a, wr_opcode::rdma_read, dst.data() + size_t(posted) * read_len,
                               read_len, md, posted,
                               reinterpret_cast<uint64_t>(src.data() + size_t(posted) * read_len),
                               mr_rkey(ms)),
                      verbs_error::ok);
            ++posted;
        };
        while (posted < depth && posted < nreads)
            post();
        std::vector<wc> done;
        for (uint64_t step = 0; step < max_steps && done.size() < posted; ++step) {
            a.ctx->poll();
            respond(step);
            clk.advance(step_ns);
            wc e[16];
            const int k = poll_cq(a.scq, 16, e);
            for (int j = 0; j < k; ++j) {
                done.push_back(e[j]);
                if (e[j].status == wc_status::success && posted < nreads) post();
            }
        }
        return done;
    }

    void expect_all_read(const std::vector<wc> &done, unsigned nreads) {
        ASSERT_EQ(done.size(), size_t(nreads));
        for (unsigned i = 0; i < nreads; ++i) {
            EXPECT_EQ(done[i].status, wc_status::success)
                << i << ": " << wc_status_str(done[i].status);
            EXPECT_EQ(done[i].wr_id, i);
        }
        EXPECT_TRUE(src == dst);
        EXPECT_EQ(a.qp->cnt.retry_exceeded, 0u);
    }
};

/* Two response packets swapped on the way (a reordering, as netem's): the
 * gap starts one go-back-N re-request, which the responder answers only
 * after the rest of what it was sending. The late packet then moves the
 * completer, and the next response is a gap again: the re-request already
 * queued covers it, and asking again would queue one more copy of every
 * outstanding READ behind it, which comes back as duplicates once the data
 * is in, for longer than four timeouts (the requests posted meanwhile wait
 * behind them). Before: a second re-request per reordering, and retry
 * exhaustion in the duplicates; now one, no timeout. */
TEST_F(slow_read, reordered_responses_cost_one_rerequest) {
    constexpr unsigned nreads = 24, depth = 8;
    setup(nreads);
    hold = [](uint64_t n) { return n == 3; }; /* the 4th and 5th of READ 0 */
    auto done = run(nreads, depth);
    expect_all_read(done, nreads);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u);
    EXPECT_EQ(a.qp->cnt.rerequests_saved, 1u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    /* the responses after each gap were dropped, and counted */
    EXPECT_GE(a.qp->cnt.out_of_seq_responses, 2u);
    /* each READ answered once, plus one copy of what was outstanding */
    EXPECT_LE(requests_rcvd, nreads + depth + 1);
}

/* The responder stalls for 1.5 timeouts (a TCG hiccup) in the middle of the
 * first READs: one timeout, one go-back-N re-request of every outstanding
 * READ. The responder then finishes the original streams (forward progress)
 * and answers the re-request: about 500 duplicate responses, 25 ms, while
 * the READs posted meanwhile wait behind them. Each duplicate shows the
 * responder alive and working through our requests: the timer restarts on
 * it, and no retry is spent. Before: three more timeouts in the duplicates,
 * RETRY_EXC_ERR. */
TEST_F(slow_read, duplicate_responses_restart_the_timer) {
    constexpr unsigned nreads = 24, depth = 8;
    setup(nreads);
    silent = [](uint64_t step) { return step >= 100 && step < 130; };
    lose = [](uint64_t n) { return n == 700; }; /* and one loss after it */
    auto done = run(nreads, depth);
    expect_all_read(done, nreads);
    EXPECT_EQ(a.qp->cnt.timeouts, 1u);
    EXPECT_GE(a.qp->cnt.dup_responses, 100u);
    EXPECT_EQ(a.qp->cnt.retransmits, 2u); /* the timeout's and the loss's */
}

/* After a loss the responder pauses again and again for longer than the
 * timeout while it sends the rest of what it was asked before (rxe under
 * TCG stalls for 70-700 ms when it runs out of buffers). Each timeout finds
 * that it has sent responses since the last re-request: the requester asks
 * again for the oldest READ alone, without spending a retry (this model,
 * unlike rxe, would have gone on by itself, and answers it as a
 * duplicate). Before 2026-12-04
 * it waited the pauses out; before that, a counted retry per pause,
 * RETRY_EXC_ERR after four. */
TEST_F(slow_read, responder_pauses_after_a_loss_cost_no_retries) {
    constexpr unsigned nreads = 24, depth = 8;
    setup(nreads);
    lose = [](uint64_t n) { return n == 3; };
    /* 1.25 ms (1.2 timeouts) of silence after every 10 responses until the
     * ~120 responses queued before the re-request (the window's 128 PSNs)
     * are nearly done */
    silent = [](uint64_t step) { return step >= 10 && step < 420 && step % 35 >= 10; };
    auto done = run(nreads, depth);
    expect_all_read(done, nreads);
    EXPECT_GE(a.qp->cnt.timeouts, 5u);
    EXPECT_GE(a.qp->cnt.retry_pokes, 5u);
    EXPECT_EQ(a.qp->cnt.retransmits, 1u); /* the loss's go-back-N; each poke is one packet */
}

/* rxe's own stop (doc/interop.md, "Long READs under loss"): a response it
 * cannot send makes it drop the request packet it was answering from and
 * keep the READ half-sent, and with no request packet left it sends
 * nothing until one arrives. One READ outstanding (ib_read_bw's 8 MiB
 * READs fill the window with few), a response lost early in it, then five
 * such stops before the READ's end: each is woken by one re-request at the
 * first timeout, spending no retry, and the gap is repaired once a
 * re-request is answered as such. Before: three timeouts waited out per
 * stop, then a counted retry; retry_cnt 3 ran out at the fourth stop
 * (RETRY_EXC_ERR), as against rxe at 1% loss. */
TEST_F(slow_read, responder_stopped_until_asked_costs_no_retries) {
    constexpr unsigned nreads = 3, depth = 1;
    setup(nreads);
    lose = [](uint64_t n) { return n == 3; };
    send_fails = [](uint64_t n) { return n == 10 || n == 20 || n == 30 || n == 40 || n == 50; };
    auto done = run(nreads, depth);
    expect_all_read(done, nreads);
    EXPECT_GE(a.qp->cnt.retry_pokes, 4u);
    /* each stop costs one timeout, not four */
    EXPECT_LE(a.qp->cnt.timeouts, a.qp->cnt.retry_pokes + 2);
}

/* A dead responder still ends the QP on time: duplicates and responses
 * behind a gap restart the timer only while they come. The model answers
 * (with a reordering and a loss) and then falls silent for good: the head
 * READ completes with RETRY_EXC_ERR retry_cnt + 1 (+ 1, the uncounted
 * re-request of a retry under way) timeouts after the last response, the
 * rest flushed. */
TEST_F(slow_read, dead_responder_still_exhausts_retries_on_time) {
    constexpr unsigned nreads = 24, depth = 8;
    setup(nreads);
    hold = [](uint64_t n) { return n == 3; };
    lose = [](uint64_t n) { return n == 200; };
    silent = [](uint64_t step) { return step >= 900; };
    auto done = run(nreads, depth);
    const uint64_t end_ns = clk.now_ns();
    ASSERT_FALSE(done.empty());
    size_t first_err = 0;
    while (first_err < done.size() && done[first_err].status == wc_status::success)
        ++first_err;
    ASSERT_LT(first_err, done.size());
    EXPECT_EQ(done[first_err].status, wc_status::retry_exc_err);
    for (size_t i = first_err + 1; i < done.size(); ++i)
        EXPECT_EQ(done[i].status, wc_status::wr_flush_err);
    EXPECT_EQ(a.qp->cnt.retry_exceeded, 1u);
    EXPECT_EQ(a.qp->state, qp_state::err);
    const uint64_t t = local_ack_timeout_ns(8);
    const uint64_t silent_ns = end_ns - last_sent_ns;
    EXPECT_GE(silent_ns, 4 * t);
    /* retry_cnt + 1 = 4 silent timeouts, and at most one uncounted
     * re-request right after the last response (a retry was under way) */
    EXPECT_LT(silent_ns, 6 * t + 2 * step_ns);
}

/* The same reordering against uroce's own responder, which answers a
 * re-request at once (it drops the rest of the stream it was sending and
 * starts again from the PSN asked for). The first gap's re-request covers the
 * gap at the PSN already seen; a response lost later, in the re-request's
 * answer itself, is not covered: it starts the next retry at once, not after
 * a timeout. */
TEST_F(comp, reordered_then_lost_read_response_uroce_responder) {
    opt.timeout = 8; /* 1.05 ms */
    opt.retry_cnt = 3;
    setup_pair();
    constexpr uint32_t len = 256 * 1024; /* 256 responses */
    std::vector<uint8_t> src(len), dst(len, 0);
    fill_pattern(src.data(), src.size(), 5);
    mr *ms = reg(b, src.data(), src.size());
    mr *md = reg(a, dst.data(), dst.size());
    uint32_t first = 0;
    unsigned responses = 0;
    uint32_t rerequested = 0; /* where the re-request starts */
    bool answer_started = false, lost = false;
    link->set_filter([&](rte_mbuf *m, const memlink_port *from) {
        roce_packet p = peek(m);
        if (from == a.port) {
            if (p.opcode == to_u8(ib_opcode::rc_rdma_read_request)) {
                if (!first)
                    first = p.psn();
                else if (!rerequested)
                    rerequested = psn_diff(p.psn(), first);
            }
            return true;
        }
        if (!p.info->has(op_flag::read)) return true;
        const uint32_t i = uint32_t(psn_diff(p.psn(), first));
        ++responses;
        /* the 4th response overtaken by the 5th (memlink's reorder: held
         * behind the next frame that goes through the fault draws; a delay
         * of 0 ns for the 5th makes it do so) */
        link->set_faults(0, 0, responses == 4 ? 1.0 : 0, 0, responses == 5 ? 1.0 : 0, 0);
        if (rerequested && i == rerequested) answer_started = true;
        if (answer_started && i == 200 && !lost) {
            lost = true;
            return false;
        }
        return true;
    });
    ASSERT_EQ(post_one(a, wr_opcode::rdma_read, dst.data(), len, md, 1,
                       reinterpret_cast<uint64_t>(src.data()), mr_rkey(ms)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success) << wc_status_str(sw[0].status);
    EXPECT_TRUE(lost);
    EXPECT_TRUE(src == dst);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
    EXPECT_EQ(a.qp->cnt.retransmits, 2u); /* the reordering's and the loss's */
    EXPECT_EQ(a.qp->cnt.rerequests_saved, 1u);
}

TEST_F(comp, timeout_zero_disables_the_timer) {
    opt.timeout = 0;
    setup_pair();
    std::vector<uint8_t> src(100), dst(100);
    mr *ms = reg(a, src.data(), 100);
    mr *md = reg(b, dst.data(), 100);
    link->set_faults(1.0, 0, 0, 0, 0, 0);
    ASSERT_EQ(post_one(a, wr_opcode::rdma_write, src.data(), 100, ms, 1,
                       reinterpret_cast<uint64_t>(dst.data()), mr_rkey(md)),
              verbs_error::ok);
    auto sw = poll_n(a.scq, 1, 2'000'000'000ull);
    EXPECT_EQ(sw.size(), 0u);
    EXPECT_EQ(a.qp->cnt.timeouts, 0u);
}

TEST_F(comp, rnr_retry_exhaustion) {
    opt.rnr_retry = 2;
    opt.min_rnr_timer = 5; /* 60 us */
    setup_pair();
    std::vector<uint8_t> src(100);
    mr *ms = reg(a, src.data(), 100);
    uint64_t t0 = clk.now_ns();
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 100, ms, 1), verbs_error::ok);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 100, ms, 2), verbs_error::ok);
    auto sw = poll_n(a.scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(sw[0].status, wc_status::rnr_retry_exc_err);
    EXPECT_EQ(sw[1].status, wc_status::wr_flush_err);
    EXPECT_EQ(a.qp->cnt.rnr_naks_rcvd, 3u); /* the first try and two retries */
    EXPECT_EQ(a.qp->cnt.rnr_exceeded, 1u);
    EXPECT_GE(clk.now_ns() - t0, 2 * rnr_timer_ns(5));
}

TEST_F(comp, rnr_retry_7_is_infinite_and_recovers) {
    opt.rnr_retry = 7;
    opt.min_rnr_timer = 1; /* 10 us */
    setup_pair();
    std::vector<uint8_t> src(3000), dst(3000);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    fill_pattern(src.data(), src.size(), 6);
    ASSERT_EQ(post_one(a, wr_opcode::send, src.data(), 3000, ms, 1), verbs_error::ok);
    run_until([&] { return a.qp->cnt.rnr_naks_rcvd >= 20; });
    EXPECT_GE(a.qp->cnt.rnr_naks_rcvd, 20u);
    wc e;
    EXPECT_EQ(poll_cq(a.scq, 1, &e), 0);
    ASSERT_EQ(post_recv_buf(b, dst.data(), 3000, md, 1), verbs_error::ok);
    auto sw = poll_n(a.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, wc_status::success);
    EXPECT_EQ(src, dst);
    auto rw = poll_n(b.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].byte_len, 3000u);
}

TEST_F(comp, completions_in_order_across_opcodes) {
    setup_pair();
    std::vector<uint8_t> buf(1 << 16), rbuf(1 << 16);
    alignas(8) uint64_t target = 0, res[8] = {};
    mr *mb = reg(a, buf.data(), buf.size());
    mr *mres = reg(a, res, sizeof(res));
    mr *mrb = reg(b, rbuf.data(), rbuf.size());
    mr *mt = reg(b, &target, 8);
    for (int i = 0; i < 8; ++i)
        ASSERT_EQ(post_recv_buf(b, rbuf.data(), 1 << 16, mrb, 100 + i), verbs_error::ok);
    int id = 0;
    for (int round = 0; round < 4; ++round) {
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, buf.data(), 20000, mb, id++,
                           reinterpret_cast<uint64_t>(rbuf.data()), mr_rkey(mrb)),
                  verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::send, buf.data(), 3000, mb, id++), verbs_error::ok);
        sge s{reinterpret_cast<uint64_t>(&res[round]), 8, mr_lkey(mres)};
        send_wr w;
        w.wr_id = uint64_t(id++);
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = wr_opcode::atomic_fetch_and_add;
        w.send_flags = send_signaled;
        w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&target);
        w.wr.atomic.rkey = mr_rkey(mt);
        w.wr.atomic.compare_add = 1;
        send_wr *bad;
        ASSERT_EQ(post_send(a.qp, &w, &bad), verbs_error::ok);
        ASSERT_EQ(post_one(a, wr_opcode::rdma_write, buf.data(), 9000, mb, id++,
                           reinterpret_cast<uint64_t>(rbuf.data()), mr_rkey(mrb)),
                  verbs_error::ok);
    }
    auto sw = poll_n(a.scq, size_t(id));
    ASSERT_EQ(sw.size(), size_t(id));
    for (int i = 0; i < id; ++i) {
        EXPECT_EQ(sw[i].wr_id, uint64_t(i));
        EXPECT_EQ(sw[i].status, wc_status::success);
    }
    EXPECT_EQ(target, 4u);
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(res[i], uint64_t(i));
}

/* Fused receive (doc/security.md): a READ response is scattered into the
 * READ WQE's buffer while its ICRC is checked, because its place (the WQE's
 * SGEs at (PSN - first) x MTU) is fixed by the completer's state. One
 * response of a 4 KiB READ at MTU 1024 has a payload byte flipped: until
 * the response to the retried READ arrives, the completer must not have
 * moved past it or completed the WQE; then the WQE completes once with
 * exactly the remote bytes. Also for a corrupted last response. */
class comp_fused : public comp {
  protected:
    void run(int nth) {
        setup_pair();
        std::vector<uint8_t> remote(4096), local(4096 + 64, 0x5a);
        fill_pattern(remote.data(), remote.size(), 31);
        mr *mrem = reg(b, remote.data(), remote.size());
        mr *mloc = reg(a, local.data(), local.size());
        corrupt_once c;
        c.from = b.port;
        c.nth = nth;
        uint32_t comp_psn_at_resend = 0;
        int cqes_at_resend = -1;
        bool speculative_seen = false;
        c.at_resend = [&] {
            comp_psn_at_resend = a.qp->comp.psn;
            wc tmp[4];
            cqes_at_resend = poll_cq(a.scq, 4, tmp);
            const size_t at = size_t(nth - 1) * 1024 + 5;
            speculative_seen = local[at] == uint8_t(remote[at] ^ 0xff);
        };
        link->set_filter(corrupt_filter(&c));
        ASSERT_EQ(post_one(a, wr_opcode::rdma_read, local.data(), 4096, mloc, 3,
                           reinterpret_cast<uint64_t>(remote.data()), mr_rkey(mrem)),
                  verbs_error::ok);
        auto sw = poll_n(a.scq, 1);
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(sw[0].status, wc_status::success);
        ASSERT_TRUE(c.corrupted);
        ASSERT_TRUE(c.resent);
        EXPECT_EQ(comp_psn_at_resend, c.bad_psn);
        EXPECT_EQ(cqes_at_resend, 0);
        EXPECT_TRUE(std::equal(remote.begin(), remote.end(), local.begin()));
        for (size_t i = 4096; i < local.size(); ++i)
            ASSERT_EQ(local[i], 0x5a) << i;
        const dev_counters &dc = a.ctx->counters();
        EXPECT_EQ(dc.rx_icrc_errors, 1u);
        EXPECT_EQ(dc.rx_icrc_fused_errors, 1u);
        EXPECT_TRUE(speculative_seen); /* placed while checked, then rewritten */
        EXPECT_EQ(a.qp->cnt.completions, 1u);
    }
};

TEST_F(comp_fused, read_middle_bad_icrc_commits_nothing) {
    run(2);
}
TEST_F(comp_fused, read_last_bad_icrc_completes_nothing) {
    run(4);
}

} // namespace

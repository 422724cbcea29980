/* SPDX-License-Identifier: BSD-3-Clause
 * Work channel tests: two devices over a memlink (the transport fixture).
 *
 * Single-threaded: the test posts through the channel, then plays the lcore
 * itself (serve() + pump()), to check back-pressure, immediate and deferred
 * errors, that WRs are copied, and completion order.
 *
 * Two threads: an application thread posts thousands of RC SENDs and RDMA
 * WRITEs (and the receiver's receive WRs) through two channels while the
 * main thread (the lcore, pinned to CPU 0 by EAL) serves them and drives
 * both devices; data checked at the receiver, every completion accounted.
 */
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "uroce_tp_fixture.h"
#include <uroce/work_channel.h>

namespace uroce::test {
namespace {

class work_channel_test : public pair_fixture {
  protected:
    std::unique_ptr<work_channel> ch;

    void make_channel(work_channel_config cfg = {}) {
        cfg.dev = a.ctx;
        verbs_error err;
        ch = work_channel::create(cfg, &err);
        ASSERT_NE(ch, nullptr) << verbs_error_str(err);
        ASSERT_EQ(ch->add_cq(a.scq), verbs_error::ok);
        ASSERT_EQ(ch->add_cq(a.rcq), verbs_error::ok);
    }

    /* The lcore's loop body: serve the channel, move packets and time. */
    bool step() {
        bool moved = ch->serve() > 0;
        return pump() || moved;
    }
    /* Drive until the channel delivered n completions (collected in out). */
    std::vector<wc> poll_channel(size_t n) {
        std::vector<wc> out;
        run_until([&] {
            ch->serve();
            wc tmp[32];
            int k = ch->poll(32, tmp);
            out.insert(out.end(), tmp, tmp + k);
            return out.size() >= n;
        });
        return out;
    }

    verbs_error post_send_ch(void *buf, uint32_t len, mr *m, uint64_t id,
                             wr_opcode op = wr_opcode::send, uint64_t raddr = 0, uint32_t rkey = 0,
                             qp *q = nullptr, send_wr **bad = nullptr) {
        sge s{reinterpret_cast<uint64_t>(buf), len, m ? mr_lkey(m) : 0};
        send_wr w;
        w.wr_id = id;
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = op;
        w.send_flags = send_signaled;
        w.wr.rdma.remote_addr = raddr;
        w.wr.rdma.rkey = rkey;
        send_wr *b = nullptr;
        return ch->post_send(q ? q : a.qp, &w, bad ? bad : &b);
    }
};

TEST_F(work_channel_test, rejects_bad_configs) {
    setup_pair();
    verbs_error err;
    work_channel_config c;
    EXPECT_EQ(work_channel::create(c, &err), nullptr); /* no device */
    EXPECT_EQ(err, verbs_error::inval);
    c.dev = a.ctx;
    c.depth = 1000;
    EXPECT_EQ(work_channel::create(c, &err), nullptr); /* not a power of two */
    c.depth = 8;
    c.max_sge = 33;
    EXPECT_EQ(work_channel::create(c, &err), nullptr);
    c.max_sge = 2;
    auto ok = work_channel::create(c, &err);
    ASSERT_NE(ok, nullptr);
    EXPECT_EQ(ok->add_cq(b.scq), verbs_error::inval); /* another device's CQ */
    EXPECT_EQ(ok->add_cq(nullptr), verbs_error::inval);
    EXPECT_EQ(ok->add_cq(a.scq), verbs_error::ok);
    EXPECT_EQ(ok->add_cq(a.scq), verbs_error::ok); /* twice: no-op */
}

TEST_F(work_channel_test, full_ring_is_reported_not_dropped) {
    setup_pair();
    work_channel_config cfg;
    cfg.depth = 4;
    make_channel(cfg);
    std::vector<uint8_t> src(64, 0x5a), dst(64 * 8);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (uint64_t i = 0; i < 4; i++)
        ASSERT_EQ(post_send_ch(src.data(), 64, ms, i, wr_opcode::rdma_write,
                               reinterpret_cast<uint64_t>(dst.data() + 64 * i), mr_rkey(md)),
                  verbs_error::ok);
    send_wr *bad = nullptr;
    EXPECT_EQ(post_send_ch(src.data(), 64, ms, 4, wr_opcode::rdma_write,
                           reinterpret_cast<uint64_t>(dst.data() + 256), mr_rkey(md), nullptr,
                           &bad),
              verbs_error::nomem);
    EXPECT_NE(bad, nullptr);
    EXPECT_EQ(ch->app_counters().refused_full.load(), 1u);
    EXPECT_EQ(ch->app_counters().posted_send.load(), 4u);
    EXPECT_EQ(ch->requests_pending(), 4u);

    /* A chain: the WRs before the one that does not fit are queued. */
    ch->serve();
    EXPECT_EQ(ch->requests_pending(), 0u);
    sge s[6];
    send_wr w[6];
    for (int i = 0; i < 6; i++) {
        s[i] = sge{reinterpret_cast<uint64_t>(src.data()), 8, mr_lkey(ms)};
        w[i].wr_id = 10 + uint64_t(i);
        w[i].sg_list = &s[i];
        w[i].num_sge = 1;
        w[i].opcode = wr_opcode::rdma_write;
        w[i].send_flags = send_signaled;
        w[i].wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data() + 8 * i);
        w[i].wr.rdma.rkey = mr_rkey(md);
        w[i].next = i < 5 ? &w[i + 1] : nullptr;
    }
    EXPECT_EQ(ch->post_send(a.qp, w, &bad), verbs_error::nomem);
    EXPECT_EQ(bad, &w[4]);
    EXPECT_EQ(ch->app_counters().refused_full.load(), 2u);
    EXPECT_EQ(ch->app_counters().posted_send.load(), 8u);
    /* Nothing was lost: the 8 queued WRs all complete, in order. */
    auto got = poll_channel(8);
    ASSERT_EQ(got.size(), 8u);
    const uint64_t ids[] = {0, 1, 2, 3, 10, 11, 12, 13};
    for (size_t i = 0; i < 8; i++) {
        EXPECT_EQ(got[i].wr_id, ids[i]);
        EXPECT_EQ(got[i].status, wc_status::success);
        EXPECT_EQ(got[i].opcode, wc_opcode::rdma_write);
    }
}

TEST_F(work_channel_test, receive_chain_stops_at_a_full_ring) {
    setup_pair();
    work_channel_config cfg;
    cfg.depth = 4;
    make_channel(cfg);
    std::vector<uint8_t> buf(64 * 6);
    mr *m = reg(a, buf.data(), buf.size());
    sge s[6];
    recv_wr r[6];
    for (int i = 0; i < 6; i++) {
        s[i] = sge{reinterpret_cast<uint64_t>(buf.data() + 64 * i), 64, mr_lkey(m)};
        r[i].wr_id = 20 + uint64_t(i);
        r[i].sg_list = &s[i];
        r[i].num_sge = 1;
        r[i].next = i < 5 ? &r[i + 1] : nullptr;
    }
    recv_wr *bad = nullptr;
    EXPECT_EQ(ch->post_recv(a.qp, r, &bad), verbs_error::nomem);
    EXPECT_EQ(bad, &r[4]);
    EXPECT_EQ(ch->app_counters().posted_recv.load(), 4u);
    EXPECT_EQ(ch->app_counters().refused_full.load(), 1u);
    EXPECT_EQ(ch->serve(), 4u);
    EXPECT_EQ(a.qp->rq.count(), 4u); /* on the QP's receive queue now */
    EXPECT_EQ(ch->post_recv(a.qp, &r[4], &bad), verbs_error::ok);
    EXPECT_EQ(ch->serve(), 2u);
    EXPECT_EQ(a.qp->rq.count(), 6u);
    EXPECT_EQ(ch->serve_counters().served.load(), 6u);
}

TEST_F(work_channel_test, immediate_errors) {
    setup_pair();
    work_channel_config cfg;
    cfg.max_sge = 2;
    cfg.max_inline = 16;
    make_channel(cfg);
    std::vector<uint8_t> src(64, 1);
    mr *ms = reg(a, src.data(), src.size());
    send_wr *bad = nullptr;
    EXPECT_EQ(post_send_ch(src.data(), 8, ms, 1, wr_opcode::send, 0, 0, nullptr, &bad),
              verbs_error::ok);
    /* A null QP and another device's QP are refused on the spot. */
    send_wr w;
    sge s{reinterpret_cast<uint64_t>(src.data()), 8, mr_lkey(ms)};
    w.sg_list = &s;
    w.num_sge = 1;
    EXPECT_EQ(ch->post_send(nullptr, &w, &bad), verbs_error::inval);
    EXPECT_EQ(bad, &w);
    EXPECT_EQ(ch->post_send(b.qp, &w, &bad), verbs_error::inval);
    recv_wr r;
    r.sg_list = &s;
    r.num_sge = 1;
    recv_wr *rbad = nullptr;
    EXPECT_EQ(ch->post_recv(b.qp, &r, &rbad), verbs_error::inval);
    EXPECT_EQ(rbad, &r);
    /* More SGEs than a slot holds, a missing sg_list, too much inline data. */
    w.num_sge = 3;
    EXPECT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::inval);
    w.num_sge = 1;
    w.sg_list = nullptr;
    EXPECT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::inval);
    w.sg_list = &s;
    w.send_flags = send_inline;
    s.length = 17;
    EXPECT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::inval);
    r.num_sge = -1;
    EXPECT_EQ(ch->post_recv(a.qp, &r, &rbad), verbs_error::inval);
    EXPECT_EQ(ch->app_counters().refused_inval.load(), 7u);
    EXPECT_EQ(ch->app_counters().posted_send.load(), 1u);
    EXPECT_EQ(ch->requests_pending(), 1u);
}

TEST_F(work_channel_test, device_errors_come_back_as_error_completions) {
    opt.max_sge = 2;
    setup_pair();
    work_channel_config cfg;
    cfg.max_sge = 4; /* the slot takes more SGEs than the QP */
    make_channel(cfg);
    std::vector<uint8_t> src(64, 1), dst(64), bdst(64);
    mr *ms = reg(a, src.data(), src.size());
    mr *mdst = reg(a, dst.data(), dst.size());
    mr *mb = reg(b, bdst.data(), bdst.size());
    qp *fresh = make_qp(a); /* RESET: post_send refuses it */
    ASSERT_NE(fresh, nullptr);
    ASSERT_EQ(ch->add_cq(a.scq), verbs_error::ok);
    EXPECT_EQ(post_send_ch(src.data(), 8, ms, 100, wr_opcode::send, 0, 0, fresh), verbs_error::ok);
    /* 3 SGEs: fits the slot, not the QP. */
    sge s3[3] = {{reinterpret_cast<uint64_t>(src.data()), 8, mr_lkey(ms)},
                 {reinterpret_cast<uint64_t>(src.data() + 8), 8, mr_lkey(ms)},
                 {reinterpret_cast<uint64_t>(src.data() + 16), 8, mr_lkey(ms)}};
    send_wr w;
    w.wr_id = 101;
    w.sg_list = s3;
    w.num_sge = 3;
    w.opcode = wr_opcode::rdma_write;
    send_wr *bad = nullptr;
    EXPECT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::ok);
    /* A receive on a QP destroyed after the post. */
    qp *doomed = make_qp(a);
    ASSERT_NE(doomed, nullptr);
    const uint32_t doomed_qpn = qp_num(doomed);
    recv_wr r;
    sge rs{reinterpret_cast<uint64_t>(dst.data()), 64, mr_lkey(mdst)};
    r.wr_id = 102;
    r.sg_list = &rs;
    r.num_sge = 1;
    recv_wr *rbad = nullptr;
    EXPECT_EQ(ch->post_recv(doomed, &r, &rbad), verbs_error::ok);
    ASSERT_EQ(destroy_qp(doomed), verbs_error::ok);
    /* And a good one after them: errors do not stop the channel. */
    EXPECT_EQ(post_send_ch(src.data(), 8, ms, 103, wr_opcode::rdma_write,
                           reinterpret_cast<uint64_t>(bdst.data()), mr_rkey(mb)),
              verbs_error::ok);

    auto got = poll_channel(4);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].wr_id, 100u);
    EXPECT_EQ(got[0].status, wc_status::loc_qp_op_err);
    EXPECT_EQ(got[0].vendor_err, uint32_t(EINVAL));
    EXPECT_EQ(got[0].opcode, wc_opcode::send);
    EXPECT_EQ(got[0].qp_num, qp_num(fresh));
    EXPECT_EQ(got[1].wr_id, 101u);
    EXPECT_EQ(got[1].status, wc_status::loc_qp_op_err);
    EXPECT_EQ(got[1].vendor_err, uint32_t(EINVAL));
    EXPECT_EQ(got[1].opcode, wc_opcode::rdma_write);
    EXPECT_EQ(got[2].wr_id, 102u);
    EXPECT_EQ(got[2].status, wc_status::loc_qp_op_err);
    EXPECT_EQ(got[2].vendor_err, uint32_t(ENOENT));
    EXPECT_EQ(got[2].opcode, wc_opcode::recv);
    EXPECT_EQ(got[2].qp_num, doomed_qpn);
    EXPECT_EQ(got[3].wr_id, 103u);
    EXPECT_EQ(got[3].status, wc_status::success);
    EXPECT_EQ(ch->serve_counters().post_errors.load(), 3u);
    EXPECT_EQ(ch->serve_counters().served.load(), 1u);
}

TEST_F(work_channel_test, work_requests_are_copied_not_referenced) {
    setup_pair();
    work_channel_config cfg;
    cfg.max_inline = 64;
    make_channel(cfg);
    std::vector<uint8_t> src(256), dst(256, 0), expect(256);
    fill_pattern(src.data(), src.size(), 7);
    expect = src;
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    ASSERT_EQ(post_recv_buf(b, dst.data(), 256, md, 900), verbs_error::ok);
    ASSERT_EQ(post_recv_buf(b, dst.data() + 128, 128, md, 901), verbs_error::ok);

    /* Two SGEs, then scribble over the WR and the SGE array before serve(). */
    {
        sge s[2] = {{reinterpret_cast<uint64_t>(src.data()), 40, mr_lkey(ms)},
                    {reinterpret_cast<uint64_t>(src.data() + 100), 24, mr_lkey(ms)}};
        send_wr w;
        w.wr_id = 1;
        w.sg_list = s;
        w.num_sge = 2;
        w.opcode = wr_opcode::send;
        w.send_flags = send_signaled;
        send_wr *bad = nullptr;
        ASSERT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::ok);
        s[0] = s[1] = sge{~0ull, ~0u, ~0u};
        w.wr_id = 99;
        w.num_sge = 0;
        w.opcode = wr_opcode::rdma_read;
    }
    /* Inline: the payload is copied at post time, the buffer reused at once. */
    uint8_t inl[32];
    std::memcpy(inl, src.data() + 200, 32);
    {
        sge s{reinterpret_cast<uint64_t>(inl), 32, 0};
        send_wr w;
        w.wr_id = 2;
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = wr_opcode::send;
        w.send_flags = send_signaled | send_inline;
        send_wr *bad = nullptr;
        ASSERT_EQ(ch->post_send(a.qp, &w, &bad), verbs_error::ok);
        std::memset(inl, 0, sizeof(inl));
    }
    auto got = poll_channel(2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].wr_id, 1u);
    EXPECT_EQ(got[0].opcode, wc_opcode::send);
    EXPECT_EQ(got[1].wr_id, 2u);
    for (const wc &c : got)
        EXPECT_EQ(c.status, wc_status::success);
    auto rcv = poll_n(b.rcq, 2);
    ASSERT_EQ(rcv.size(), 2u);
    EXPECT_EQ(rcv[0].wr_id, 900u);
    EXPECT_EQ(rcv[0].byte_len, 64u);
    EXPECT_EQ(rcv[1].wr_id, 901u);
    EXPECT_EQ(rcv[1].byte_len, 32u);
    EXPECT_EQ(std::memcmp(dst.data(), expect.data(), 40), 0);
    EXPECT_EQ(std::memcmp(dst.data() + 40, expect.data() + 100, 24), 0);
    EXPECT_EQ(std::memcmp(dst.data() + 128, expect.data() + 200, 32), 0);
}

TEST_F(work_channel_test, completions_in_order_for_sends_and_receives) {
    setup_pair();
    make_channel();
    constexpr int n = 200;
    std::vector<uint8_t> src(64 * n), dst(64 * n, 0), arecv(64 * n, 0);
    fill_pattern(src.data(), src.size(), 3);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    mr *mar = reg(a, arecv.data(), arecv.size());
    /* b sends to a: a's receives go through the channel too. */
    for (int i = 0; i < n; i++) {
        sge s{reinterpret_cast<uint64_t>(arecv.data() + 64 * i), 64, mr_lkey(mar)};
        recv_wr r;
        r.wr_id = 5000 + uint64_t(i);
        r.sg_list = &s;
        r.num_sge = 1;
        recv_wr *bad = nullptr;
        ASSERT_EQ(ch->post_recv(a.qp, &r, &bad), verbs_error::ok);
    }
    for (int i = 0; i < n; i++)
        ASSERT_EQ(post_send_ch(src.data() + 64 * i, 64, ms, uint64_t(i), wr_opcode::rdma_write,
                               reinterpret_cast<uint64_t>(dst.data() + 64 * i), mr_rkey(md)),
                  verbs_error::ok);
    ASSERT_GT(ch->requests_pending(), 0u);
    /* b's SENDs to a, posted directly on b (b is not behind the channel). */
    std::vector<uint8_t> bsrc(64 * n);
    fill_pattern(bsrc.data(), bsrc.size(), 4);
    mr *mb = reg(b, bsrc.data(), bsrc.size());
    auto got = poll_channel(n);
    for (int i = 0; i < n; i++)
        ASSERT_EQ(post_one(b, wr_opcode::send, bsrc.data() + 64 * i, 64, mb, uint64_t(i)),
                  verbs_error::ok);
    auto more = poll_channel(n);
    got.insert(got.end(), more.begin(), more.end());
    ASSERT_EQ(got.size(), size_t(2 * n));
    uint64_t next_send = 0, next_recv = 5000;
    for (const wc &c : got) {
        ASSERT_EQ(c.status, wc_status::success) << wc_status_str(c.status);
        if (c.opcode == wc_opcode::recv) {
            EXPECT_EQ(c.wr_id, next_recv++);
            EXPECT_EQ(c.byte_len, 64u);
        } else {
            EXPECT_EQ(c.opcode, wc_opcode::rdma_write);
            EXPECT_EQ(c.wr_id, next_send++);
        }
    }
    EXPECT_EQ(next_send, uint64_t(n));
    EXPECT_EQ(next_recv, 5000u + n);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), 64 * n), 0);
    EXPECT_EQ(std::memcmp(arecv.data(), bsrc.data(), 64 * n), 0); /* a received b's data */
    EXPECT_EQ(ch->serve_counters().served.load(), uint64_t(2 * n));
    EXPECT_EQ(ch->serve_counters().completions.load(), uint64_t(2 * n));
    EXPECT_EQ(ch->app_counters().polled.load(), uint64_t(2 * n));
}

TEST_F(work_channel_test, full_queues_stall_and_resume) {
    opt.max_send_wr = 8;
    setup_pair();
    work_channel_config cfg;
    cfg.comp_depth = 4;
    make_channel(cfg);
    constexpr int n = 64;
    std::vector<uint8_t> src(64), dst(64 * n);
    mr *ms = reg(a, src.data(), src.size());
    mr *md = reg(b, dst.data(), dst.size());
    for (int i = 0; i < n; i++)
        ASSERT_EQ(post_send_ch(src.data(), 64, ms, uint64_t(i), wr_opcode::rdma_write,
                               reinterpret_cast<uint64_t>(dst.data() + 64 * i), mr_rkey(md)),
                  verbs_error::ok);
    /* Let the device run ahead of the application: the SQ (8) and the
     * completion ring (4) both fill; nothing is lost. */
    for (int i = 0; i < 2000; i++)
        step();
    EXPECT_GT(ch->serve_counters().qp_full_stalls.load(), 0u);
    EXPECT_GT(ch->serve_counters().comp_full_stalls.load(), 0u);
    auto got = poll_channel(n);
    ASSERT_EQ(got.size(), size_t(n));
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(got[i].wr_id, uint64_t(i));
        EXPECT_EQ(got[i].status, wc_status::success);
    }
    EXPECT_EQ(a.scq->overflows, 0u);
}

/* ---------------------------------------------------------------- two threads */

/* Put the calling thread on every CPU but the lcore's (CPU 0), so two
 * busy-polling threads never share one CPU; on a one-CPU box, anywhere. */
void leave_cpu0() {
    cpu_set_t set;
    CPU_ZERO(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = n > 1 ? 1 : 0; i < n && i < CPU_SETSIZE; i++)
        CPU_SET(i, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

TEST_F(work_channel_test, app_thread_posts_while_lcore_polls) {
    opt.max_send_wr = 256;
    opt.max_recv_wr = 256;
    setup_pair();
    work_channel_config cfg;
    cfg.max_inline = 64;
    make_channel(cfg);
    cfg.dev = b.ctx;
    auto chb = work_channel::create(cfg);
    ASSERT_NE(chb, nullptr);
    ASSERT_EQ(chb->add_cq(b.rcq), verbs_error::ok);
    ASSERT_EQ(chb->add_cq(b.scq), verbs_error::ok);

    constexpr uint64_t total = 12000; /* WRs on a's QP: every 3rd a WRITE, the rest SENDs */
    constexpr uint32_t window = 200, slots = 256, slot_size = 4096, wslots = 1024;
    std::vector<uint8_t> src(size_t(slots) * slot_size), rbuf(size_t(slots) * slot_size),
        wbuf(size_t(wslots) * slot_size);
    mr *ms = reg(a, src.data(), src.size());
    mr *mr_r = reg(b, rbuf.data(), rbuf.size());
    mr *mw = reg(b, wbuf.data(), wbuf.size());

    std::atomic<bool> done{false};
    std::string failure;
    uint64_t sends_done = 0, recvs_done = 0, writes_checked = 0, sends_checked = 0, errors = 0;

    auto size_of = [](uint64_t seq) { return uint32_t(16 + (seq * 977) % 3000); };
    auto is_write = [](uint64_t seq) { return seq % 3 == 0; };

    std::thread app([&] {
        leave_cpu0();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        uint64_t posted = 0, recvs_posted = 0;
        /* recv seq -> which WR seq it receives (SENDs in order) */
        std::vector<uint64_t> send_seq_of_recv;
        send_seq_of_recv.reserve(total);
        for (uint64_t s = 0; s < total; s++)
            if (!is_write(s)) send_seq_of_recv.push_back(s);
        const uint64_t total_sends = send_seq_of_recv.size();
        auto post_recvs = [&] {
            while (recvs_posted < total_sends && recvs_posted - recvs_done < window) {
                uint8_t *p = rbuf.data() + (recvs_posted % slots) * slot_size;
                sge s{reinterpret_cast<uint64_t>(p), slot_size, mr_lkey(mr_r)};
                recv_wr r;
                r.wr_id = recvs_posted;
                r.sg_list = &s;
                r.num_sge = 1;
                recv_wr *bad = nullptr;
                if (chb->post_recv(b.qp, &r, &bad) != verbs_error::ok) break;
                recvs_posted++;
            }
        };
        std::vector<uint8_t> expect(slot_size);
        wc wcs[32];
        while (sends_done < total || recvs_done < total_sends) {
            if (std::chrono::steady_clock::now() > deadline) {
                failure = "timeout: " + std::to_string(sends_done) + " sends, " +
                          std::to_string(recvs_done) + " receives done";
                break;
            }
            bool progress = false;
            post_recvs();
            while (posted < total && posted - sends_done < window) {
                const uint64_t seq = posted;
                const uint32_t len = size_of(seq);
                uint8_t *p = src.data() + (seq % slots) * slot_size;
                fill_pattern(p, len, uint32_t(seq));
                sge s{reinterpret_cast<uint64_t>(p), len, mr_lkey(ms)};
                send_wr w;
                w.wr_id = seq;
                w.sg_list = &s;
                w.num_sge = 1;
                w.send_flags = send_signaled;
                if (is_write(seq)) {
                    w.opcode = wr_opcode::rdma_write;
                    w.wr.rdma.remote_addr =
                        reinterpret_cast<uint64_t>(wbuf.data() + (seq % wslots) * slot_size);
                    w.wr.rdma.rkey = mr_rkey(mw);
                } else {
                    w.opcode = wr_opcode::send;
                    if (len <= 64) w.send_flags |= send_inline;
                }
                send_wr *bad = nullptr;
                if (ch->post_send(a.qp, &w, &bad) != verbs_error::ok)
                    break; /* ring full: try again after polling */
                posted++;
                progress = true;
            }
            int k = ch->poll(32, wcs);
            for (int i = 0; i < k; i++) {
                const wc &c = wcs[i];
                if (c.status != wc_status::success || c.wr_id != sends_done) {
                    errors++;
                    continue;
                }
                /* The WRITE is acknowledged: its bytes are in b's memory. */
                if (c.opcode == wc_opcode::rdma_write) {
                    fill_pattern(expect.data(), size_of(c.wr_id), uint32_t(c.wr_id));
                    if (std::memcmp(wbuf.data() + (c.wr_id % wslots) * slot_size, expect.data(),
                                    size_of(c.wr_id)) != 0)
                        errors++;
                    writes_checked++;
                }
                sends_done++;
            }
            int kr = chb->poll(32, wcs);
            for (int i = 0; i < kr; i++) {
                const wc &c = wcs[i];
                const uint64_t seq = send_seq_of_recv[recvs_done];
                if (c.status != wc_status::success || c.opcode != wc_opcode::recv ||
                    c.wr_id != recvs_done || c.byte_len != size_of(seq)) {
                    errors++;
                } else {
                    fill_pattern(expect.data(), c.byte_len, uint32_t(seq));
                    if (std::memcmp(rbuf.data() + (c.wr_id % slots) * slot_size, expect.data(),
                                    c.byte_len) != 0)
                        errors++;
                    sends_checked++;
                }
                recvs_done++;
            }
            /* Nothing to do: let the lcore run if it shares our CPU. */
            if (!progress && k == 0 && kr == 0) sched_yield();
        }
        done.store(true, std::memory_order_release);
    });

    /* The lcore: serve both channels, drive both devices, let time pass
     * when idle (the manual clock; nothing is lost on this link). */
    uint64_t idle = 0;
    while (!done.load(std::memory_order_acquire)) {
        bool moved = ch->serve() + chb->serve() > 0;
        if (pump()) moved = true;
        if (!moved && link->in_flight() == 0) {
            clk.advance(1000);
            if (++idle % 64 == 0) sched_yield();
        }
    }
    app.join();
    ASSERT_TRUE(failure.empty()) << failure;
    const uint64_t n_sends = total - (total + 2) / 3;
    EXPECT_EQ(errors, 0u);
    EXPECT_EQ(sends_done, total);
    EXPECT_EQ(recvs_done, n_sends);
    EXPECT_EQ(writes_checked, total - n_sends);
    EXPECT_EQ(sends_checked, n_sends);
    /* Every WR went through the channels and every completion came back. */
    EXPECT_EQ(ch->app_counters().posted_send.load(), total);
    EXPECT_EQ(ch->serve_counters().served.load(), total);
    EXPECT_EQ(ch->serve_counters().completions.load(), total);
    EXPECT_EQ(ch->app_counters().polled.load(), total);
    EXPECT_EQ(chb->app_counters().posted_recv.load(), n_sends);
    EXPECT_EQ(chb->serve_counters().served.load(), n_sends);
    EXPECT_EQ(chb->app_counters().polled.load(), n_sends);
    EXPECT_EQ(ch->serve_counters().post_errors.load() + chb->serve_counters().post_errors.load(),
              0u);
    EXPECT_EQ(a.qp->cnt.retransmits, 0u);
    EXPECT_EQ(a.scq->overflows + b.rcq->overflows, 0u);
}

} // namespace
} // namespace uroce::test

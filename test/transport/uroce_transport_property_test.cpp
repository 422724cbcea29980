/* SPDX-License-Identifier: BSD-3-Clause
 * Seeded property test of the RC transport over a faulty link (5% drop,
 * 5% reorder, 1% duplication, 1% corruption): thousands of random work
 * requests of every RC opcode, sizes 0..1 MiB, path MTU 256..4096, random
 * scatter/gather, inline, fences, unsignaled WRs. After each batch:
 *   - every signaled WR completed exactly once, in order, successfully;
 *   - every receive completed once, in order, with its length and immediate;
 *   - all memory of both sides equals a shadow model that applies the WRs in
 *     order (so memory outside the targeted ranges is untouched).
 * Deterministic: the link, the keys and the WR stream are seeded; time is
 * a manual clock.
 *
 * property.from_env runs a mix chosen from the environment (skipped when
 * UROCE_PROP_SEEDS is not set), for measuring failure rates:
 *   UROCE_PROP_SEEDS=1-100   seeds (a range "a-b" or one seed "a")
 *   UROCE_PROP_DROP=0.1      probability a frame is lost         (default 0.05)
 *   UROCE_PROP_REORDER=0.1   ... swapped with the next one       (default 0.05)
 *   UROCE_PROP_DUP=0.05      ... delivered twice                 (default 0.01)
 *   UROCE_PROP_CORRUPT=0.05  ... has one bit flipped             (default 0.01)
 *   UROCE_PROP_WRS=1000      work requests per seed and direction (default 1000)
 *   UROCE_PROP_BIDIR=1       traffic both ways on the QP pair    (default 0)
 *   UROCE_PROP_SR=1          selective repeat on both QPs (default 0: go-back-N)
 *   UROCE_PROP_ON_POLL=1     device_config::respond_on_poll on both (default 0)
 *   UROCE_PROP_SECONDS=60    wall-clock budget: no new seed starts after it (default none)
 * The MTU is drawn from the seed. Every seed runs (a failing one does not stop
 * the others) and the last line says how many failed and how:
 *   property from_env: 3/100 seeds failed (retry_exc_err 3, other 0) ...
 * e.g. UROCE_PROP_SEEDS=1-100 UROCE_PROP_DROP=0.2
 * build/test/transport/uroce_transport_property_test \
 *          --gtest_filter=property.from_env
 */
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

constexpr size_t area = 4u << 20; /* halves of 2 MiB: room for 1 MiB messages */
constexpr size_t atomic_slots = 512;
constexpr size_t result_slots = 4096;

struct expected_recv {
    uint64_t wr_id;
    wc_opcode op;
    uint32_t len;
    unsigned flags;
    uint32_t imm;
};

/* One direction of traffic: a requester endpoint, a responder endpoint,
 * their memory and the shadow model of that memory. */
struct stream {
    endpoint *req = nullptr, *resp = nullptr;
    /* requester side: gather source (read-only), READ destination, atomic results */
    std::vector<uint8_t> src, rdst;
    std::vector<uint64_t> ares;
    /* responder side: WRITE/READ target, receive buffers, atomic targets */
    std::vector<uint8_t> tgt, rcv;
    std::vector<uint64_t> atom;
    /* the model */
    std::vector<uint8_t> m_rdst, m_tgt, m_rcv;
    std::vector<uint64_t> m_ares, m_atom;
    mr *msrc = nullptr, *mrdst = nullptr, *mares = nullptr, *mtgt = nullptr, *mrcv = nullptr,
       *matom = nullptr;
    /* this batch */
    std::vector<uint64_t> exp_send;
    std::vector<expected_recv> exp_recv;
    uint64_t next_id = 0, next_rid = 0;
    size_t res_slot = 0;
    unsigned posted = 0, batches = 0;
    std::vector<std::vector<uint8_t>> inv_bufs;
};

/* The link's faults for one run. */
struct fault_mix {
    double drop = 0.05, reorder = 0.05, duplicate = 0.01, corrupt = 0.01;
};

class property : public pair_fixture {
  protected:
    std::mt19937_64 rng;
    /* fatal failures recorded before this seed started, and the status of
     * the first failed send completion of the seed */
    int fatal_at_seed_start = 0;
    wc_status first_bad = wc_status::success;
    /* Under a harsh mix go-back-N may run out of retries: legitimate (IBTA
     * 9.7.5.1: retry_cnt bounds the tries), if it is clean. With this set a
     * seed may end that way (ended_by_retries), checked as check_completions
     * says; anything else still fails. */
    bool retries_may_run_out = false;
    bool ended_by_retries = false;
    unsigned seeds_ended_by_retries = 0;

    static int fatal_count() {
        const ::testing::TestResult *r =
            ::testing::UnitTest::GetInstance()->current_test_info()->result();
        int n = 0;
        for (int i = 0; i < r->total_part_count(); ++i)
            if (r->GetTestPartResult(i).fatally_failed()) ++n;
        return n;
    }
    /* The current seed has failed (earlier seeds' failures do not count). */
    bool seed_failed() const { return fatal_count() > fatal_at_seed_start; }

    uint64_t rnd(uint64_t n) { return n ? rng() % n : 0; }

    uint32_t pick_size() {
        uint64_t r = rnd(100);
        if (r < 55) return uint32_t(rnd(4097));
        if (r < 85) return uint32_t(4097 + rnd(65536 - 4096));
        if (r < 97) return uint32_t(65537 + rnd(262144 - 65536));
        return uint32_t(262145 + rnd((1u << 20) - 262144 + 1)); /* up to 1 MiB */
    }

    /* Split [off, off+len) into 1..4 SGEs at random cut points. */
    std::vector<sge> split(uint8_t *base, uint64_t off, uint32_t len, uint32_t lkey) {
        unsigned n = 1 + unsigned(rnd(opt.max_sge));
        std::vector<uint32_t> cuts = {0, len};
        for (unsigned i = 1; i < n; ++i)
            cuts.push_back(uint32_t(rnd(len + 1)));
        std::sort(cuts.begin(), cuts.end());
        std::vector<sge> v;
        for (size_t i = 0; i + 1 < cuts.size(); ++i)
            v.push_back(
                {reinterpret_cast<uint64_t>(base + off + cuts[i]), cuts[i + 1] - cuts[i], lkey});
        return v;
    }

    void dump(const stream &st, uint64_t wr_id) {
        qp *q = st.req->qp;
        std::printf(
            "req: wr %llu failed; sq_comp %u req.wqe %u sq_head %u req.psn %06x comp.psn %06x "
            "max_sent %06x off %llu rd_out %u\n",
            (unsigned long long)wr_id, q->sq_comp, q->req.wqe, q->sq_head, q->req.psn, q->comp.psn,
            q->req.max_psn_sent, (unsigned long long)q->req.offset, q->req.rd_atomic_outstanding);
        qp *r = st.resp->qp;
        std::printf("resp: ePSN %06x nak_sent %d in_msg %d reply_fifo %u..%u ack_pending %d\n",
                    r->resp.psn, r->resp.nak_sent, int(r->resp.in_msg), r->resp.reply_fifo_tail,
                    r->resp.reply_fifo_head, r->resp.ack_pending);
        for (const auto &d : qp_counter_table)
            std::printf("  %s req=%llu resp=%llu\n", d.name,
                        (unsigned long long)counter_value(q->cnt, d),
                        (unsigned long long)counter_value(r->cnt, d));
    }

    void init_stream(stream &st, endpoint &req, endpoint &resp, uint64_t seed) {
        st.req = &req;
        st.resp = &resp;
        st.src.assign(area, 0);
        fill_pattern(st.src.data(), area, uint32_t(seed));
        st.rdst.assign(area, 0x11);
        st.ares.assign(result_slots, 0);
        st.tgt.assign(area, 0x22);
        st.rcv.assign(area, 0x33);
        st.atom.assign(atomic_slots, 0);
        for (size_t i = 0; i < atomic_slots; ++i)
            st.atom[i] = rng();
        st.m_rdst = st.rdst;
        st.m_tgt = st.tgt;
        st.m_rcv = st.rcv;
        st.m_ares = st.ares;
        st.m_atom = st.atom;
        st.msrc = reg(req, st.src.data(), area);
        st.mrdst = reg(req, st.rdst.data(), area);
        st.mares = reg(req, st.ares.data(), result_slots * 8);
        st.mtgt = reg(resp, st.tgt.data(), area);
        st.mrcv = reg(resp, st.rcv.data(), area);
        st.matom = reg(resp, st.atom.data(), atomic_slots * 8);
    }

    /* Post one random batch on st, updating the model as the responder will. */
    void post_batch(stream &st, unsigned total_wrs) {
        stream &s = st;
        unsigned batch = 1 + unsigned(rnd(48));
        s.exp_send.clear();
        s.exp_recv.clear();
        uint64_t rcv_off = 0, batch_bytes = 0;
        for (unsigned k = 0; k < batch && s.posted < total_wrs; ++k, ++s.posted) {
            uint64_t r = rnd(100);
            wr_opcode op = r < 18   ? wr_opcode::send
                           : r < 26 ? wr_opcode::send_with_imm
                           : r < 29 ? wr_opcode::send_with_inv
                           : r < 49 ? wr_opcode::rdma_write
                           : r < 57 ? wr_opcode::rdma_write_with_imm
                           : r < 82 ? wr_opcode::rdma_read
                           : r < 91 ? wr_opcode::atomic_cmp_and_swp
                                    : wr_opcode::atomic_fetch_and_add;
            bool atomic =
                op == wr_opcode::atomic_cmp_and_swp || op == wr_opcode::atomic_fetch_and_add;
            uint32_t len = atomic ? 8 : pick_size();
            if (batch_bytes + len > 3 * area / 4 && !atomic) len = uint32_t(rnd(4097));
            /* Within a batch, WRITEs target one half of tgt and READs read
             * the other (written by earlier batches): a READ may observe a
             * WRITE posted after it (responses are generated when sent, and
             * a duplicate READ re-reads memory, IBTA 9.7.5.1.4), so the
             * model must not depend on that order. */
            const uint64_t half = area / 2;
            const uint64_t wbase = (s.batches & 1) ? half : 0, rbase = half - wbase;
            if (len > half) len = uint32_t(half);
            batch_bytes += len;
            send_wr w;
            w.wr_id = s.next_id;
            w.opcode = op;
            bool signaled = rnd(10) != 0;
            w.send_flags = (signaled ? unsigned(send_signaled) : 0u) |
                           (rnd(20) == 0 ? unsigned(send_fence) : 0u);
            w.imm_data = uint32_t(rng());
            std::vector<sge> sg;
            if (op == wr_opcode::rdma_read) {
                uint64_t doff = rnd(area - len + 1), soff = rbase + rnd(half - len + 1);
                sg = split(s.rdst.data(), doff, len, mr_lkey(s.mrdst));
                w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(s.tgt.data() + soff);
                w.wr.rdma.rkey = mr_rkey(s.mtgt);
                std::memcpy(s.m_rdst.data() + doff, s.m_tgt.data() + soff, len);
            } else if (atomic) {
                size_t slot = rnd(atomic_slots), rs = s.res_slot++ % result_slots;
                sg.push_back({reinterpret_cast<uint64_t>(&s.ares[rs]), 8, mr_lkey(s.mares)});
                w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&s.atom[slot]);
                w.wr.atomic.rkey = mr_rkey(s.matom);
                uint64_t old = s.m_atom[slot];
                s.m_ares[rs] = old;
                if (op == wr_opcode::atomic_fetch_and_add) {
                    w.wr.atomic.compare_add = rng();
                    s.m_atom[slot] = old + w.wr.atomic.compare_add;
                } else {
                    w.wr.atomic.compare_add = rnd(2) ? old : rng();
                    w.wr.atomic.swap = rng();
                    if (old == w.wr.atomic.compare_add) s.m_atom[slot] = w.wr.atomic.swap;
                }
            } else {
                uint64_t soff = rnd(area - len + 1);
                sg = split(s.src.data(), soff, len, mr_lkey(s.msrc));
                if (len <= opt.max_inline && rnd(3) == 0) w.send_flags |= send_inline;
                if (op == wr_opcode::rdma_write || op == wr_opcode::rdma_write_with_imm) {
                    uint64_t doff = wbase + rnd(half - len + 1);
                    w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(s.tgt.data() + doff);
                    w.wr.rdma.rkey = mr_rkey(s.mtgt);
                    std::memcpy(s.m_tgt.data() + doff, s.src.data() + soff, len);
                }
                if (op != wr_opcode::rdma_write) {
                    /* a receive WQE of 1..4 SGEs, at least len long */
                    uint32_t room = len + uint32_t(rnd(64));
                    if (rcv_off + room > area) rcv_off = 0; /* batches stay far below */
                    auto rsg = split(s.rcv.data(), rcv_off, room, mr_lkey(s.mrcv));
                    recv_wr rw;
                    rw.wr_id = s.next_rid;
                    rw.sg_list = rsg.data();
                    rw.num_sge = int(rsg.size());
                    recv_wr *rbad;
                    ASSERT_EQ(post_recv(s.resp->qp, &rw, &rbad), verbs_error::ok);
                    expected_recv er{s.next_rid, wc_opcode::recv, len, 0, 0};
                    if (op == wr_opcode::rdma_write_with_imm) {
                        er.op = wc_opcode::recv_rdma_with_imm;
                        er.flags = wc_with_imm;
                        er.imm = w.imm_data;
                    } else {
                        std::memcpy(s.m_rcv.data() + rcv_off, s.src.data() + soff, len);
                        if (op == wr_opcode::send_with_imm) {
                            er.flags = wc_with_imm;
                            er.imm = w.imm_data;
                        }
                        if (op == wr_opcode::send_with_inv) {
                            s.inv_bufs.emplace_back(64);
                            w.invalidate_rkey =
                                mr_rkey(reg(*s.resp, s.inv_bufs.back().data(), 64,
                                            access_local_write | access_remote_invalidate));
                            er.flags = wc_with_inv;
                            er.imm = w.invalidate_rkey;
                        }
                    }
                    s.exp_recv.push_back(er);
                    ++s.next_rid;
                    rcv_off += room;
                }
            }
            w.sg_list = sg.data();
            w.num_sge = int(sg.size());
            send_wr *bad;
            ASSERT_EQ(post_send(s.req->qp, &w, &bad), verbs_error::ok) << "wr " << s.next_id;
            if (signaled) s.exp_send.push_back(s.next_id);
            ++s.next_id;
        }
        /* make the batch's last WR signaled, so we know when it is all done */
        if (s.exp_send.empty() || s.exp_send.back() != s.next_id - 1) {
            send_wr w;
            w.wr_id = s.next_id;
            w.opcode = wr_opcode::rdma_write;
            w.send_flags = send_signaled;
            w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(s.tgt.data());
            w.wr.rdma.rkey = mr_rkey(s.mtgt);
            send_wr *bad;
            ASSERT_EQ(post_send(s.req->qp, &w, &bad), verbs_error::ok);
            s.exp_send.push_back(s.next_id++);
        }
    }

    void check_completions(stream &s, uint64_t seed) {
        auto sw = poll_n(s.req->scq, s.exp_send.size());
        if (retries_may_run_out) {
            /* A clean end: every WR before it succeeded, in order (their data
             * was checked batch by batch), the failing one says so, every
             * later one is flushed, and the QP is in ERR. */
            size_t bad = 0;
            while (bad < sw.size() && sw[bad].status == wc_status::success)
                ++bad;
            if (bad < sw.size() && sw[bad].status == wc_status::retry_exc_err) {
                /* (an error completes unsignaled WRs too, IBTA 10.7.3.1:
                 * the ids after it are every later WR, in order) */
                for (size_t i = 0; i < bad; ++i)
                    ASSERT_EQ(sw[i].wr_id, s.exp_send[i]) << "seed " << seed;
                for (size_t i = bad + 1; i < sw.size(); ++i) {
                    ASSERT_EQ(sw[i].status, wc_status::wr_flush_err) << "seed " << seed;
                    ASSERT_GT(sw[i].wr_id, sw[i - 1].wr_id) << "seed " << seed;
                }
                EXPECT_EQ(s.req->qp->state, qp_state::err) << "seed " << seed;
                ended_by_retries = true;
                return;
            }
        }
        for (auto &e : sw)
            if (e.status != wc_status::success) {
                if (first_bad == wc_status::success) first_bad = e.status;
                dump(s, e.wr_id);
            }
        for (auto &e : sw)
            ASSERT_EQ(e.status, wc_status::success)
                << "seed " << seed << " batch " << s.batches << " wr " << e.wr_id << ": "
                << wc_status_str(e.status);
        ASSERT_EQ(sw.size(), s.exp_send.size()) << "seed " << seed << " batch " << s.batches;
        for (size_t i = 0; i < sw.size(); ++i)
            ASSERT_EQ(sw[i].wr_id, s.exp_send[i]) << "seed " << seed;
        auto rw = poll_n(s.resp->rcq, s.exp_recv.size());
        ASSERT_EQ(rw.size(), s.exp_recv.size());
        for (size_t i = 0; i < rw.size(); ++i) {
            ASSERT_EQ(rw[i].wr_id, s.exp_recv[i].wr_id);
            ASSERT_EQ(rw[i].status, wc_status::success);
            ASSERT_EQ(rw[i].opcode, s.exp_recv[i].op);
            ASSERT_EQ(rw[i].byte_len, s.exp_recv[i].len);
            ASSERT_EQ(rw[i].wc_flags, s.exp_recv[i].flags);
            if (s.exp_recv[i].flags) {
                ASSERT_EQ(rw[i].imm_data, s.exp_recv[i].imm);
            }
        }
    }

    void check_memory(stream &s, uint64_t seed) {
        wc extra;
        ASSERT_EQ(poll_cq(s.req->scq, 1, &extra), 0) << "a completion came twice";
        ASSERT_EQ(poll_cq(s.resp->rcq, 1, &extra), 0) << "a receive completed twice";
        ASSERT_TRUE(s.m_tgt == s.tgt) << "seed " << seed << " batch " << s.batches;
        ASSERT_TRUE(s.m_rcv == s.rcv) << "seed " << seed << " batch " << s.batches;
        ASSERT_TRUE(s.m_rdst == s.rdst) << "seed " << seed << " batch " << s.batches;
        ASSERT_TRUE(s.m_ares == s.ares);
        ASSERT_TRUE(s.m_atom == s.atom);
        ++s.batches;
    }

    /* bidir: B runs its own random stream to A at the same time, so each QP
     * is requester and responder at once (ACKs and requests interleave). */
    void run_seed(uint64_t seed, mtu m, unsigned total_wrs, bool bidir = false,
                  const fault_mix &mix = {}) {
        fatal_at_seed_start = fatal_count();
        first_bad = wc_status::success;
        ended_by_retries = false;
        rng.seed(seed);
        opt.path_mtu = m;
        opt.max_sge = 4;
        opt.max_inline = 128;
        opt.max_send_wr = 512;
        opt.max_recv_wr = 512;
        opt.timeout = 8; /* 1 ms */
        opt.retry_cnt = 7;
        opt.rnr_retry = 7;
        opt.max_rd_atomic = 16;
        opt.psn_a = uint32_t(rnd(1u << 24));
        opt.psn_b = uint32_t(rnd(1u << 24));
        memlink_config lc;
        lc.seed = seed * 7919 + 1;
        lc.drop = mix.drop;
        lc.reorder = mix.reorder;
        lc.duplicate = mix.duplicate;
        lc.corrupt = mix.corrupt;
        setup_pair(lc);
        auto ab = std::make_unique<stream>(), ba = std::make_unique<stream>();
        init_stream(*ab, a, b, seed);
        if (bidir) init_stream(*ba, b, a, seed + 1000);

        while (ab->posted < total_wrs) {
            post_batch(*ab, total_wrs);
            if (seed_failed()) return;
            if (bidir) {
                post_batch(*ba, total_wrs);
                if (seed_failed()) return;
            }
            check_completions(*ab, seed);
            if (seed_failed()) return;
            if (ended_by_retries) {
                ++seeds_ended_by_retries;
                std::printf("seed %llu: a QP ran out of retries, cleanly, after %u WRs\n",
                            (unsigned long long)seed, ab->posted);
                return;
            }
            if (bidir) {
                check_completions(*ba, seed);
                if (seed_failed()) return;
            }
            /* let duplicates and stragglers drain, then nothing more may complete */
            settle();
            check_memory(*ab, seed);
            if (seed_failed()) return;
            if (bidir) {
                check_memory(*ba, seed);
                if (seed_failed()) return;
            }
        }
        EXPECT_EQ(a.qp->state, qp_state::rts);
        EXPECT_EQ(b.qp->state, qp_state::rts);
        const auto &ls = link->stats();
        /* the faults really happened */
        if (mix.drop > 0) {
            EXPECT_GT(ls.dropped, 0u);
            EXPECT_GT(a.qp->cnt.retransmits + a.qp->cnt.sack_resends, 0u);
        }
        if (opt.selective_repeat && mix.drop > 0) {
            /* selective repeat really ran: packets kept past a gap, SACKs both ways */
            EXPECT_GT(b.qp->cnt.sr_placed, 0u);
            EXPECT_GT(b.qp->cnt.sacks_sent, 0u);
            EXPECT_GT(a.qp->cnt.sack_resends, 0u);
            EXPECT_EQ(b.qp->cnt.seq_naks_sent, 0u);
        }
        if (mix.reorder > 0) {
            EXPECT_GT(ls.reordered, 0u);
        }
        if (mix.duplicate > 0) {
            EXPECT_GT(ls.duplicated, 0u);
        }
        if (mix.corrupt > 0) {
            EXPECT_GT(ls.corrupted, 0u);
            EXPECT_GT(a.ctx->counters().rx_icrc_errors + b.ctx->counters().rx_icrc_errors, 0u);
        }
        /* the fused receive (payload placed while its ICRC is checked) ran, and
         * met bad frames whenever enough were corrupted: the memory checks above
         * held all the same (not with selective repeat: never fused) */
        const uint64_t fused = a.ctx->counters().rx_icrc_fused + b.ctx->counters().rx_icrc_fused;
        const uint64_t fused_bad =
            a.ctx->counters().rx_icrc_fused_errors + b.ctx->counters().rx_icrc_fused_errors;
        if (icrc_fused_copy() && !opt.selective_repeat) {
            EXPECT_GT(fused, 0u);
            if (ls.corrupted >= 50) {
                EXPECT_GT(fused_bad, 0u);
            }
        } else {
            EXPECT_EQ(fused, 0u);
        }
        /* and frames had their ICRC folded while the frame before them was
         * placed (place while checking), the bad ones among them dropped all
         * the same: the shadow memory above holds */
        const uint64_t ahead = a.ctx->counters().rx_icrc_ahead + b.ctx->counters().rx_icrc_ahead;
        if (icrc_fused_copy()) {
            EXPECT_GT(ahead, 0u);
        } else {
            EXPECT_EQ(ahead, 0u);
        }
        std::printf("seed %llu: fused receive %llu frames, %llu with a bad ICRC; %llu folded "
                    "ahead\n",
                    (unsigned long long)seed, (unsigned long long)fused,
                    (unsigned long long)fused_bad, (unsigned long long)ahead);
        std::printf(
            "seed %llu mtu %u%s%s: %u WRs in %u batches; link %llu frames, %llu dropped, "
            "%llu reordered, %llu duplicated, %llu corrupted; A: %llu retransmits, %llu "
            "timeouts, %llu seq NAKs, %llu SACK resends; B: %llu dup requests, %llu dup reads, "
            "%llu dup atomics, %llu placed out of order\n",
            (unsigned long long)seed, mtu_to_bytes(m), bidir ? " (both ways)" : "",
            opt.selective_repeat ? " SR" : "", ab->posted + ba->posted, ab->batches,
            (unsigned long long)ls.tx, (unsigned long long)ls.dropped,
            (unsigned long long)ls.reordered, (unsigned long long)ls.duplicated,
            (unsigned long long)ls.corrupted, (unsigned long long)a.qp->cnt.retransmits,
            (unsigned long long)a.qp->cnt.timeouts, (unsigned long long)a.qp->cnt.seq_naks_rcvd,
            (unsigned long long)a.qp->cnt.sack_resends, (unsigned long long)b.qp->cnt.dup_requests,
            (unsigned long long)b.qp->cnt.dup_reads, (unsigned long long)b.qp->cnt.dup_atomics,
            (unsigned long long)b.qp->cnt.sr_placed);
    }
};

TEST_F(property, mtu_256) {
    run_seed(1, mtu::mtu_256, 600);
}
TEST_F(property, mtu_1024) {
    run_seed(2, mtu::mtu_1024, 1500);
}
TEST_F(property, mtu_2048) {
    run_seed(3, mtu::mtu_2048, 1500);
}
TEST_F(property, mtu_4096) {
    run_seed(4, mtu::mtu_4096, 2000);
}
TEST_F(property, mtu_512) {
    run_seed(5, mtu::mtu_512, 1000);
}
/* more seeds, MTU drawn from the seed */
TEST_F(property, seeds_6_to_9) {
    for (uint64_t seed = 6; seed <= 9; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1500);
        if (HasFatalFailure()) return;
        TearDown();
    }
}
/* both directions at once on the same QP pair */
TEST_F(property, both_ways) {
    for (uint64_t seed = 10; seed <= 12; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1000, true);
        if (HasFatalFailure()) return;
        TearDown();
    }
}

/* The responder's output held for the next poll (respond_on_poll): the
 * same stream, both ways, under the default mix of faults. */
TEST_F(property, respond_on_poll) {
    opt.respond_on_poll = true;
    for (uint64_t seed = 13; seed <= 14; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1000, seed == 14);
        if (HasFatalFailure()) return;
        TearDown();
    }
}

/* A harsh mix, short: 10% drop, 10% reorder, 5% duplication, 5% corruption,
 * four seeds of 1000 WRs. About a quarter of such seeds run out of retries
 * (25 of 100; 35 before one retry per loss round and the timer restart on
 * outstanding responses: doc/transport.md), so which seeds do depends on
 * every random draw of the run. What must hold is that no data is lost,
 * duplicated, misordered or corrupted before that, and that the end is
 * clean; the retry accounting itself has deterministic tests
 * (uroce_comp_test). */
TEST_F(property, harsh_mix) {
    retries_may_run_out = true;
    fault_mix mix;
    mix.drop = 0.10;
    mix.reorder = 0.10;
    mix.duplicate = 0.05;
    mix.corrupt = 0.05;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1000, false, mix);
        if (HasFatalFailure()) return;
        TearDown();
    }
    std::printf("harsh mix: %u of 4 seeds ended by running out of retries, cleanly\n",
                seeds_ended_by_retries);
}

/* Selective repeat (uroce_sack.cpp) under drop, reorder, duplication and
 * corruption, every verb of the stream (SENDs, WRITEs with and without
 * immediate, READs, atomics): nothing lost, duplicated or misordered, and
 * at this mix no seed runs out of retries. Both directions for one seed. */
TEST_F(property, selective_repeat_mix) {
    opt.selective_repeat = true;
    fault_mix mix;
    mix.drop = 0.03;
    mix.reorder = 0.05;
    mix.duplicate = 0.02;
    mix.corrupt = 0.02;
    for (uint64_t seed = 21; seed <= 24; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1000, seed == 24, mix);
        if (HasFatalFailure()) return;
        TearDown();
    }
}

/* The harsh mix with selective repeat: what it must keep is the same as
 * without (a seed may end by running out of retries, cleanly). */
TEST_F(property, selective_repeat_harsh_mix) {
    opt.selective_repeat = true;
    retries_may_run_out = true;
    fault_mix mix;
    mix.drop = 0.10;
    mix.reorder = 0.10;
    mix.duplicate = 0.05;
    mix.corrupt = 0.05;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        run_seed(seed, mtu(1 + seed % 5), 1000, false, mix);
        if (HasFatalFailure()) return;
        TearDown();
    }
    std::printf("harsh mix, selective repeat: %u of 4 seeds ended by running out of retries\n",
                seeds_ended_by_retries);
}

static double env_double(const char *name, double dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtod(v, nullptr) : dflt;
}

/* The mix the environment asks for (see the header comment). */
TEST_F(property, from_env) {
    const char *seeds = std::getenv("UROCE_PROP_SEEDS");
    if (!seeds || !*seeds) GTEST_SKIP() << "set UROCE_PROP_SEEDS (e.g. 1-100) to run";
    char *end = nullptr;
    uint64_t first = std::strtoull(seeds, &end, 10), last = first;
    if (end && *end == '-') last = std::strtoull(end + 1, nullptr, 10);
    ASSERT_LE(first, last) << "UROCE_PROP_SEEDS=" << seeds;
    fault_mix mix;
    mix.drop = env_double("UROCE_PROP_DROP", mix.drop);
    mix.reorder = env_double("UROCE_PROP_REORDER", mix.reorder);
    mix.duplicate = env_double("UROCE_PROP_DUP", mix.duplicate);
    mix.corrupt = env_double("UROCE_PROP_CORRUPT", mix.corrupt);
    const unsigned wrs = unsigned(env_double("UROCE_PROP_WRS", 1000));
    const bool bidir = env_double("UROCE_PROP_BIDIR", 0) != 0;
    opt.selective_repeat = env_double("UROCE_PROP_SR", 0) != 0;
    opt.respond_on_poll = env_double("UROCE_PROP_ON_POLL", 0) != 0;
    const double budget_s = env_double("UROCE_PROP_SECONDS", 0);
    const auto t0 = std::chrono::steady_clock::now();
    unsigned ran = 0, failed = 0, retry_exc = 0;
    std::string failed_seeds;
    for (uint64_t seed = first; seed <= last; ++seed) {
        if (budget_s > 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget_s)
            break;
        run_seed(seed, mtu(1 + seed % 5), wrs, bidir, mix);
        ++ran;
        if (seed_failed()) {
            ++failed;
            if (first_bad == wc_status::retry_exc_err) ++retry_exc;
            failed_seeds += ' ';
            failed_seeds += std::to_string(seed);
        }
        TearDown();
    }
    std::printf("property from_env: %u/%u seeds failed (retry_exc_err %u, other %u); drop %g "
                "reorder %g dup %g corrupt %g, %u WRs%s, %.1f s; failed seeds:%s\n",
                failed, ran, retry_exc, failed - retry_exc, mix.drop, mix.reorder, mix.duplicate,
                mix.corrupt, wrs, bidir ? " both ways" : "",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                failed_seeds.c_str());
}

} // namespace

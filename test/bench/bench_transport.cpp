/* SPDX-License-Identifier: BSD-3-Clause
 * bench_transport: two uroce stacks joined by a memlink on ONE core.
 *
 * Measures, in the same run:
 *   ceilings  - bare memlink packet rate (alloc, touch, tx, rx, free),
 *               memcpy bandwidth (4 KB blocks), ICRC (CRC-32) bandwidth;
 *   transport - 64 B RC SEND messages/s, and 4 KB / 64 KB RC RDMA WRITE in
 *               Gbit/s at MTU 4096,
 *   channel   - 64 B RC SEND messages/s posted through a work_channel
 *               (lib/engine/uroce_work_channel.h) instead of post_send:
 *               from the same thread, and from an application thread on
 *               CPU 1 while lcore 0 serves; each next to direct posting
 *               measured just before it (ratio printed),
 *   pkt       - pkt_build alone, ns per 64 B SEND_ONLY frame (mbuf alloc and
 *               free, header template, BTH, payload copy, ICRC) for each
 *               header shape, IPv4 also with checksum offload (the field
 *               left to the NIC),
 *   fused     - (--only fused) SEND 64 B / 4 KB and WRITE 4 KB / 64 KB with the
 *               payload copy fused with the ICRC on and off, alternately, in
 *               the same run (--reps pairs), with the on/off ratios,
 * and prints each transport figure as a fraction of its ceiling. Both ends
 * run on this one core, so each side gets half of it.
 *
 *   bench_transport [--seconds S] [--only send|write4k|write64k|channel|ceil|pkt|loss|fused]
 *                   [--no-ceilings] [--reps N] [--verbose]
 */
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <algorithm>

#include <uroce/crc32.h>
#include <uroce/icrc.h>
#include "uroce_device.h"
#include "uroce_memlink.h"
#include "uroce_pkt.h"
#include <uroce/verbs.h>
#include <uroce/work_channel.h>

using namespace uroce;

namespace {

double seconds = 1.5;
int fused_reps = 3; /* --only fused: alternating on/off pairs */
bool verbose = false;
rte_mempool *pool;
const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 0xa}, mac_b[6] = {2, 0, 0, 0, 0, 0xb};

/* Rates are per CPU-second of this thread: the box is shared with other
 * builds, and wall-clock rates swing with their load. Loops end on CPU time. */
double now_s() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
double wall_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* ---------------------------------------------------------------- ceilings */

double link_pps(uint32_t frame_len) {
    memlink l({});
    memlink_port *a = l.add_port(mac_a), *b = l.add_port(mac_b);
    rte_mbuf *tx[32], *rx[32];
    uint64_t n = 0;
    double t0 = now_s(), t1;
    do {
        for (int it = 0; it < 256; ++it) {
            if (rte_pktmbuf_alloc_bulk(pool, tx, 32) != 0) return 0;
            for (auto *m : tx) {
                uint8_t *p =
                    reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, uint16_t(frame_len)));
                std::memcpy(p, mac_b, 6);
                std::memset(p + 6, 0x11, 64 - 6); /* a header's worth of writes */
            }
            a->tx_burst(tx, 32);
            uint16_t k = b->rx_burst(rx, 32);
            for (uint16_t i = 0; i < k; ++i)
                (void)*rte_pktmbuf_mtod(rx[i], volatile uint8_t *);
            rte_pktmbuf_free_bulk(rx, k);
            n += k;
        }
        t1 = now_s();
    } while (t1 - t0 < seconds / 2);
    return double(n) / (t1 - t0);
}

/* GB/s of fn over 4 KB blocks in a 256 KB working set (L2 resident, like the benchmark's buffers).
 */
template <class F> double bandwidth(F fn) {
    static std::vector<uint8_t> s(256 * 1024, 0x5a), d(256 * 1024);
    uint64_t bytes = 0;
    double t0 = now_s(), t1;
    uint32_t acc = 0;
    do {
        for (int it = 0; it < 1024; ++it) {
            size_t off = size_t(it % 64) * 4096;
            acc += fn(d.data() + off, s.data() + off, 4096);
            bytes += 4096;
        }
        t1 = now_s();
    } while (t1 - t0 < seconds / 2);
    if (acc == 42) std::printf(" ");
    return double(bytes) / (t1 - t0) / 1e9;
}

/* ---------------------------------------------------------------- two stacks */

struct side {
    memlink_port *port;
    device *ctx;
    pd *pd_;
    cq *scq, *rcq;
    qp *q;
};

/* The link and loss recovery of a run (the loss benchmark). */
struct link_mode {
    double drop = 0; /* random loss, each frame either way */
    uint64_t seed = 1;
    bool tlp = true; /* device_config::tail_loss_probe */
    bool sr = false; /* qp_attr::selective_repeat on both QPs */
};

static memlink_config link_config(const link_mode &lm) {
    memlink_config c;
    c.drop = lm.drop;
    c.seed = lm.seed;
    return c;
}

struct pair_t {
    link_mode lm;
    memlink link;
    side a{}, b{};

    void open(side &s, memlink_port *p, uint32_t ip) {
        device_config cfg;
        cfg.tail_loss_probe = lm.tlp;
        cfg.dev = p;
        cfg.pool = pool;
        cfg.gids[0] = gid::from_ipv4(ip);
        cfg.num_gids = 1;
        s.port = p;
        s.ctx = open_device(cfg);
        s.pd_ = alloc_pd(s.ctx);
        s.scq = create_cq(s.ctx, 8192);
        s.rcq = create_cq(s.ctx, 8192);
        qp_init_attr ia;
        ia.send_cq = s.scq;
        ia.recv_cq = s.rcq;
        ia.cap.max_send_wr = 1024;
        ia.cap.max_recv_wr = 4096;
        ia.cap.max_inline_data = 64;
        s.q = create_qp(s.pd_, ia);
    }
    void connect(side &s, side &peer, const uint8_t *peer_mac, uint32_t peer_ip, mtu m) {
        qp_attr at;
        at.qp_state = qp_state::init;
        at.qp_access_flags = access_remote_write | access_remote_read;
        modify_qp(s.q, at,
                  qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags);
        at = qp_attr{};
        at.qp_state = qp_state::rtr;
        at.path_mtu = m;
        at.dest_qp_num = qp_num(peer.q);
        at.rq_psn = 0;
        at.max_dest_rd_atomic = 16;
        at.min_rnr_timer = 1;
        at.ah_attr.grh.dgid = gid::from_ipv4(peer_ip);
        std::memcpy(at.ah_attr.dmac, peer_mac, 6);
        at.selective_repeat = lm.sr ? 1 : 0;
        modify_qp(s.q, at,
                  qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                      qp_attr_rq_psn | qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer |
                      (lm.sr ? unsigned(qp_attr_selective_repeat) : 0u));
        at = qp_attr{};
        at.qp_state = qp_state::rts;
        at.timeout = 14;
        at.retry_cnt = 7;
        at.rnr_retry = 7;
        at.max_rd_atomic = 16;
        modify_qp(s.q, at,
                  qp_attr_state | qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt |
                      qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic);
    }
    explicit pair_t(mtu m, const link_mode &mode = {}) : lm(mode), link(link_config(mode)) {
        open(a, link.add_port(mac_a), 0x0a000001);
        open(b, link.add_port(mac_b), 0x0a000002);
        connect(a, b, mac_b, 0x0a000002, m);
        connect(b, a, mac_a, 0x0a000001, m);
    }
    ~pair_t() {
        close_device(a.ctx);
        close_device(b.ctx);
    }
    /* Returns the frames received plus sent (0: idle). */
    unsigned pump() {
        rte_mbuf *pk[64];
        unsigned moved = 0;
        for (side *s : {&b, &a}) {
            uint16_t n = s->port->rx_burst(pk, 64);
            if (n) s->ctx->rx_burst(pk, n);
            moved += n + s->ctx->poll();
        }
        return moved;
    }
};

struct result {
    double msgs_per_s;
    double gbit_per_s;
    uint64_t retransmits;
    double cpu_share; /* CPU seconds / wall seconds during the run */
    uint64_t timeouts = 0, probes = 0, spurious = 0;
};

/* Keep the send queue full of one kind of WR; every 16th is signaled. */
result run_stream(mtu m, wr_opcode op, uint32_t size, const link_mode &lm = {}) {
    pair_t p(m, lm);
    std::vector<uint8_t> src(std::max<uint32_t>(size, 64) * 4),
        dst(std::max<uint32_t>(size, 64) * 64);
    mr *ms = reg_mr(p.a.pd_, src.data(), src.size(), access_local_write);
    mr *md = reg_mr(p.b.pd_, dst.data(), dst.size(), access_local_write | access_remote_write);
    const uint32_t depth = 512, signal_every = 16;
    uint32_t slots = uint32_t(dst.size() / std::max<uint32_t>(size, 64));
    auto post_recvs = [&](int n) {
        for (int i = 0; i < n; ++i) {
            static uint32_t r = 0;
            sge g{reinterpret_cast<uint64_t>(dst.data() +
                                             (r++ % slots) * std::max<uint32_t>(size, 64)),
                  std::max<uint32_t>(size, 64), mr_lkey(md)};
            recv_wr w;
            w.sg_list = &g;
            w.num_sge = 1;
            recv_wr *bad;
            post_recv(p.b.q, &w, &bad);
        }
    };
    if (op == wr_opcode::send) post_recvs(4000);
    uint64_t posted = 0, completed = 0, received = 0;
    uint32_t slot = 0;
    auto post_batch = [&](uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) {
            sge g{reinterpret_cast<uint64_t>(src.data() + (slot % 4) * size), size, mr_lkey(ms)};
            send_wr w;
            w.wr_id = posted;
            w.sg_list = &g;
            w.num_sge = 1;
            w.opcode = op;
            w.send_flags = ((posted + 1) % signal_every == 0) ? unsigned(send_signaled) : 0u;
            if (op == wr_opcode::send && size <= 64) w.send_flags |= send_inline;
            w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data() + (slot % slots) * size);
            w.wr.rdma.rkey = mr_rkey(md);
            send_wr *bad;
            if (post_send(p.a.q, &w, &bad) != verbs_error::ok) return;
            ++posted;
            ++slot;
        }
    };
    wc wcs[64];
    auto step = [&] {
        uint64_t in_flight = posted - completed;
        if (in_flight + 64 <= depth) post_batch(64);
        p.pump();
        int n = poll_cq(p.a.scq, 64, wcs);
        for (int i = 0; i < n; ++i) {
            if (wcs[i].status != wc_status::success) {
                std::fprintf(stderr, "completion error %s\n", wc_status_str(wcs[i].status));
                std::exit(1);
            }
            completed = wcs[i].wr_id + 1;
        }
        if (op == wr_opcode::send) {
            int k = poll_cq(p.b.rcq, 64, wcs);
            received += uint64_t(k);
            if (k) post_recvs(k);
        }
    };
    /* warm up, then measure */
    double t0 = now_s();
    while (now_s() - t0 < 0.2)
        step();
    uint64_t c0 = completed;
    uint64_t rtx0 = p.a.q->cnt.retransmits;
    t0 = now_s();
    double w0 = wall_s();
    double t1 = t0;
    uint64_t iters = 0;
    do {
        step();
        if ((++iters & 63) == 0) t1 = now_s();
    } while (t1 - t0 < seconds);
    t1 = now_s();
    double w1 = wall_s();
    double msgs = double(completed - c0) / (t1 - t0);
    return {msgs,
            msgs * size * 8 / 1e9,
            p.a.q->cnt.retransmits - rtx0,
            (t1 - t0) / (w1 - w0),
            p.a.q->cnt.timeouts,
            p.a.q->cnt.tlp_probes,
            p.a.q->cnt.tlp_spurious};
}

/* 64 B inline RC SENDs, a's WRs posted three ways in the same harness:
 *   direct      post_send / poll_cq on the lcore thread (the baseline);
 *   same_thread through a work channel, the lcore thread posting and
 *               serving: the channel's own cost (a copy in, a copy out);
 *   app_thread  an application thread on CPU 1 posts and polls the channel
 *               while this thread (lcore 0) serves it, pumps both stacks
 *               and reposts b's receives: adds the cross-CPU cache traffic.
 * Three rates for the lcore thread: per CPU-second (as run_stream), per
 * busy second, and per wall second. Busy time sums the TSC time of loop
 * iterations that moved something and took < 20 us: on this shared 2-CPU
 * box either thread can be preempted for milliseconds, and then the other
 * one spins with nothing to do (CPU time without work) or an iteration
 * swallows the preemption; busy time drops both. */
enum class post_mode { direct, same_thread, app_thread };

struct channel_result {
    double cpu_rate, busy_rate, wall_rate; /* messages/s */
    double lcore_share, app_share;         /* CPU seconds / wall seconds */
    uint64_t refused_full, qp_full_stalls, preempted;
};

channel_result run_channel(post_mode mode) {
    pair_t p(mtu::mtu_4096);
    const uint32_t size = 64, depth = 512, signal_every = 16;
    std::vector<uint8_t> src(size * 4), dst(size * 64);
    mr *ms = reg_mr(p.a.pd_, src.data(), src.size(), access_local_write);
    mr *md = reg_mr(p.b.pd_, dst.data(), dst.size(), access_local_write | access_remote_write);
    uint32_t r_slot = 0;
    auto post_recvs = [&](int n) {
        for (int i = 0; i < n; ++i) {
            sge g{reinterpret_cast<uint64_t>(dst.data() + (r_slot++ % 64) * size), size,
                  mr_lkey(md)};
            recv_wr w;
            w.sg_list = &g;
            w.num_sge = 1;
            recv_wr *bad;
            post_recv(p.b.q, &w, &bad);
        }
    };
    post_recvs(4000);
    work_channel_config cc;
    cc.dev = p.a.ctx;
    cc.depth = 1024;
    cc.comp_depth = 1024;
    auto ch = work_channel::create(cc);
    ch->add_cq(p.a.scq);
    const bool direct = mode == post_mode::direct;

    /* application side: posted/completed belong to whoever runs app_step */
    uint64_t posted = 0, completed = 0;
    std::atomic<uint64_t> completed_pub{0};
    wc awcs[64];
    auto app_step = [&] {
        unsigned moved = 0;
        for (uint32_t i = 0; i < 64 && posted - completed + 1 <= depth; ++i) {
            sge g{reinterpret_cast<uint64_t>(src.data() + (posted % 4) * size), size, mr_lkey(ms)};
            send_wr w;
            w.wr_id = posted;
            w.sg_list = &g;
            w.num_sge = 1;
            w.opcode = wr_opcode::send;
            w.send_flags = send_inline;
            if ((posted + 1) % signal_every == 0) w.send_flags |= send_signaled;
            send_wr *bad;
            verbs_error e = direct ? post_send(p.a.q, &w, &bad) : ch->post_send(p.a.q, &w, &bad);
            if (e != verbs_error::ok) break;
            ++posted;
            ++moved;
        }
        int n = direct ? poll_cq(p.a.scq, 64, awcs) : ch->poll(64, awcs);
        for (int i = 0; i < n; ++i) {
            if (awcs[i].status != wc_status::success) {
                std::fprintf(stderr, "completion error %s\n", wc_status_str(awcs[i].status));
                std::exit(1);
            }
            completed = awcs[i].wr_id + 1;
        }
        completed_pub.store(completed, std::memory_order_relaxed);
        return moved + unsigned(n);
    };
    wc bwcs[64];
    auto lcore_step = [&] {
        unsigned moved = direct ? 0 : ch->serve();
        moved += p.pump();
        int k = poll_cq(p.b.rcq, 64, bwcs);
        if (k) post_recvs(k);
        return moved + unsigned(k);
    };

    std::atomic<bool> stop{false}, measuring{false};
    double app_cpu = 0, app_wall = 0;
    std::thread app;
    if (mode == post_mode::app_thread)
        app = std::thread([&] {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0, &set);
            pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
            while (!measuring.load(std::memory_order_relaxed))
                app_step();
            double c0 = now_s(), w0 = wall_s();
            while (!stop.load(std::memory_order_relaxed))
                app_step();
            app_cpu = now_s() - c0;
            app_wall = wall_s() - w0;
        });
    auto step = [&] {
        unsigned moved = mode == post_mode::app_thread ? 0 : app_step();
        return moved + lcore_step();
    };
    double t0 = now_s();
    while (now_s() - t0 < 0.2)
        step();
    const uint64_t hz = rte_get_tsc_hz(), preempt_limit = hz / 50000; /* 20 us */
    uint64_t busy = 0, preempted = 0;
    uint64_t c0 = completed_pub.load(std::memory_order_relaxed);
    measuring.store(true);
    t0 = now_s();
    double w0 = wall_s();
    double t1 = t0;
    uint64_t iters = 0;
    do {
        uint64_t s0 = rte_rdtsc();
        unsigned moved = step();
        uint64_t dt = rte_rdtsc() - s0;
        if (dt >= preempt_limit)
            ++preempted;
        else if (moved)
            busy += dt;
        if ((++iters & 63) == 0) t1 = now_s();
    } while (t1 - t0 < seconds);
    t1 = now_s();
    double w1 = wall_s();
    uint64_t c1 = completed_pub.load(std::memory_order_relaxed);
    stop.store(true);
    if (app.joinable()) app.join();
    channel_result r;
    const double msgs = double(c1 - c0);
    r.cpu_rate = msgs / (t1 - t0);
    r.busy_rate = busy ? msgs / (double(busy) / double(hz)) : 0;
    r.wall_rate = msgs / (w1 - w0);
    r.lcore_share = (t1 - t0) / (w1 - w0);
    r.app_share = app_wall > 0 ? app_cpu / app_wall : 0;
    r.refused_full = ch->app_counters().refused_full.load();
    r.qp_full_stalls = ch->serve_counters().qp_full_stalls.load();
    r.preempted = preempted;
    return r;
}

/* ns per pkt_build of a 64 B SEND_ONLY frame, freed in bursts of 32. */
double pkt_build_ns(bool v6, bool vlan, bool offload) {
    roce_path path;
    std::memcpy(path.src_mac, mac_a, 6);
    std::memcpy(path.dst_mac, mac_b, 6);
    path.has_vlan = vlan;
    path.vlan_tci = 100;
    path.sgid = v6 ? *gid::parse("fd00::1") : gid::from_ipv4(0x0a000001);
    path.dgid = v6 ? *gid::parse("fd00::2") : gid::from_ipv4(0x0a000002);
    path_set_ip_version(path);
    hdr_template t;
    make_hdr_template(t, path, offload);
    bth_fields b;
    b.opcode = to_u8(ib_opcode::rc_send_only);
    b.dest_qp = 0x11;
    uint8_t payload[64];
    std::memset(payload, 0x5a, sizeof(payload));
    payload_src src;
    src.flat = payload;
    rte_mbuf *ms[32];
    uint64_t n = 0;
    double t0 = now_s(), t1;
    do {
        for (int it = 0; it < 1024; ++it) {
            for (int i = 0; i < 32; ++i) {
                b.psn = uint32_t(n + i) & 0xffffff;
                ms[i] = pkt_build(pool, t, b, ext_fields{}, &src, 64, uint16_t(n + i));
            }
            rte_pktmbuf_free_bulk(ms, 32);
            n += 32;
        }
        t1 = now_s();
    } while (t1 - t0 < seconds / 2);
    return (t1 - t0) / double(n) * 1e9;
}

} // namespace

int main(int argc, char **argv) {
    std::string only;
    bool skip_ceil = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--verbose"))
            verbose = true;
        else if (!std::strcmp(argv[i], "--no-ceilings"))
            skip_ceil = true;
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
            fused_reps = std::atoi(argv[++i]);
        else {
            std::printf(
                "usage: %s [--seconds S] [--only "
                "send|write4k|write64k|channel|ceil|pkt|loss|fused] [--no-ceilings] [--reps N] "
                "[--verbose]\n",
                argv[0]);
            return 2;
        }
    }
    const char *eal[] = {"bench_transport", "--no-huge",      "-m", "512", "--no-pci",
                         "--no-shconf",     "--no-telemetry", "-l", "0",   "--log-level=*:warning"};
    if (rte_eal_init(10, const_cast<char **>(eal)) < 0) {
        std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    pool = rte_pktmbuf_pool_create("bench_tp", 16383, 256, 0, RTE_PKTMBUF_HEADROOM + 4096 + 256,
                                   SOCKET_ID_ANY);
    if (!pool) return 1;
    auto want = [&](const char *k) { return only.empty() || only == k; };

    std::printf("uroce bench_transport: both stacks on one core (lcore 0), memlink, no faults; "
                "CRC engine %s.\nRates are per CPU-second of the one thread (co-tenant load "
                "excluded); 'cpu' is the share of wall time we got.\n\n",
                crc32_path_name(crc32_active_path()));
    double pps64 = 0, pps4k = 0, mcpy = 0, crc = 0;
    if (!skip_ceil) {
        pps64 = link_pps(122);  /* a 64 B SEND_ONLY frame: 14+20+8+12+64+4 */
        pps4k = link_pps(4154); /* a 4 KB WRITE_MIDDLE frame */
        mcpy = bandwidth([](uint8_t *d, const uint8_t *s, size_t n) {
            std::memcpy(d, s, n);
            return uint32_t(d[0]);
        });
        crc = bandwidth(
            [](uint8_t *, const uint8_t *s, size_t n) { return crc32_update(~0u, s, n); });
        std::printf("ceilings (measured now):\n");
        std::printf("  memlink bare packet rate, 122 B frames : %8.2f Mpps\n", pps64 / 1e6);
        std::printf("  memlink bare packet rate, 4154 B frames: %8.2f Mpps\n", pps4k / 1e6);
        std::printf("  memcpy, 4 KB blocks                    : %8.2f GB/s\n", mcpy);
        std::printf("  ICRC (CRC-32), 4 KB blocks             : %8.2f GB/s\n", crc);
    }
    /* A WRITE byte costs one copy + one CRC on each side; both sides share this core. */
    double write_ceiling_gbit = skip_ceil ? 0 : 8.0 / (2.0 / mcpy + 2.0 / crc);
    if (!skip_ceil)
        std::printf(
            "  => WRITE ceiling, both sides on one core: %.1f Gbit/s (2 copies + 2 CRCs per "
            "byte)\n\n",
            write_ceiling_gbit);
    /* percentages only next to a ceiling measured in this run */
    auto pct = [](double v, double ceil) { return ceil > 0 ? 100.0 * v / ceil : 0.0; };
    if (want("send")) {
        result r = run_stream(mtu::mtu_4096, wr_opcode::send, 64);
        std::printf(
            "RC SEND 64 B          : %8.2f M msgs/s  (%.1f%% of the bare 122 B packet rate; "
            "target 5 M/s; %llu retransmits; cpu %.0f%%)\n",
            r.msgs_per_s / 1e6, pct(r.msgs_per_s, pps64), (unsigned long long)r.retransmits,
            100 * r.cpu_share);
    }
    if (want("write4k")) {
        result r = run_stream(mtu::mtu_4096, wr_opcode::rdma_write, 4096);
        std::printf("RC WRITE 4 KB, MTU 4096 : %8.2f Gbit/s (%.2f M msgs/s; %.1f%% of the copy+CRC "
                    "ceiling; target 40 Gbit/s; %llu retransmits; cpu %.0f%%)\n",
                    r.gbit_per_s, r.msgs_per_s / 1e6, pct(r.gbit_per_s, write_ceiling_gbit),
                    (unsigned long long)r.retransmits, 100 * r.cpu_share);
    }
    if (want("write64k")) {
        result r = run_stream(mtu::mtu_4096, wr_opcode::rdma_write, 65536);
        std::printf("RC WRITE 64 KB, MTU 4096: %8.2f Gbit/s (%.3f M msgs/s; %.1f%% of the copy+CRC "
                    "ceiling; target 40 Gbit/s; %llu retransmits; cpu %.0f%%)\n",
                    r.gbit_per_s, r.msgs_per_s / 1e6, pct(r.gbit_per_s, write_ceiling_gbit),
                    (unsigned long long)r.retransmits, 100 * r.cpu_share);
    }
    if (want("channel")) {
        channel_result d = run_channel(post_mode::direct);
        channel_result st = run_channel(post_mode::same_thread);
        channel_result at = run_channel(post_mode::app_thread);
        std::printf("\nRC SEND 64 B inline, a's WRs posted three ways (M msgs/s; lcore rates "
                    "per CPU-second | per busy second | per wall second; x = vs direct):\n");
        auto line = [&](const char *what, const channel_result &r) {
            std::printf("  %-28s: %6.2f | %6.2f | %6.2f  (%.2fx | %.2fx | %.2fx)  cpu lcore "
                        "%.0f%%",
                        what, r.cpu_rate / 1e6, r.busy_rate / 1e6, r.wall_rate / 1e6,
                        r.cpu_rate / d.cpu_rate, r.busy_rate / d.busy_rate,
                        r.wall_rate / d.wall_rate, 100 * r.lcore_share);
            if (r.app_share > 0) std::printf(", app thread %.0f%%", 100 * r.app_share);
            std::printf("; %llu preempted iterations, ring full %llu, SQ-full stalls %llu\n",
                        (unsigned long long)r.preempted, (unsigned long long)r.refused_full,
                        (unsigned long long)r.qp_full_stalls);
        };
        line("direct post_send", d);
        line("channel, same thread", st);
        line("channel, app thread on cpu 1", at);
    }
    if (only == "fused") { /* on request only: not part of the default run */
        /* The payload copy fused with the ICRC (icrc_set_fused_copy) against
         * memcpy then CRC, alternately in the same run, reps times each;
         * ratio = on / off of each adjacent pair. WRITE 4 KB at MTU 4096 is
         * one WRITE_ONLY frame, whose receive side is never fused (its
         * target comes from its own RETH: doc/security.md); 64 KB is FIRST,
         * 14 MIDDLE, LAST, of which the MIDDLE and LAST packets are. */
        struct fcase {
            const char *name;
            wr_opcode op;
            uint32_t len;
        };
        const fcase cases[] = {{"RC SEND 64 B", wr_opcode::send, 64},
                               {"RC SEND 4 KB", wr_opcode::send, 4096},
                               {"RC WRITE 4 KB", wr_opcode::rdma_write, 4096},
                               {"RC WRITE 64 KB", wr_opcode::rdma_write, 65536}};
        std::printf("fused copy+ICRC on vs off (per CPU-second; %d alternating pairs):\n",
                    fused_reps);
        for (const fcase &c : cases) {
            double lo = 1e30, hi = 0;
            for (int k = 0; k < fused_reps; ++k) {
                icrc_set_fused_copy(true);
                result on = run_stream(mtu::mtu_4096, c.op, c.len);
                icrc_set_fused_copy(false);
                result off = run_stream(mtu::mtu_4096, c.op, c.len);
                const double x = on.msgs_per_s / off.msgs_per_s;
                lo = std::min(lo, x);
                hi = std::max(hi, x);
                std::printf("  %-15s on %8.3f M msgs/s %8.2f Gbit/s | off %8.3f M msgs/s %8.2f "
                            "Gbit/s | x %.3f (retransmits %llu/%llu)\n",
                            c.name, on.msgs_per_s / 1e6, on.gbit_per_s, off.msgs_per_s / 1e6,
                            off.gbit_per_s, x, (unsigned long long)on.retransmits,
                            (unsigned long long)off.retransmits);
            }
            std::printf("  %-15s on/off range %.3f .. %.3f\n", c.name, lo, hi);
        }
        for (bool on : {true, false, true, false}) {
            icrc_set_fused_copy(on);
            std::printf("  pkt_build 64 B SEND_ONLY IPv4, fused %-3s: %6.1f ns\n",
                        on ? "on" : "off", pkt_build_ns(false, false, false));
        }
        icrc_set_fused_copy(true);
    }
    if (only == "loss") { /* on request only: about a minute */
        /* 64 KiB WRITEs, MTU 4096, QP timeout 14 (67 ms, perftest's
         * default), random loss both ways; goodput as a fraction of the
         * lossless goodput measured in the same run, three seeds each. */
        std::printf("64 KiB RC WRITE goodput over memlink with random loss (both ways), MTU 4096, "
                    "QP timeout 14; fraction of lossless (Gbit/s), seeds 1..3:\n");
        double lossless = 0;
        for (uint64_t seed = 1; seed <= 3; ++seed)
            lossless +=
                run_stream(mtu::mtu_4096, wr_opcode::rdma_write, 65536, {0, seed}).gbit_per_s;
        lossless /= 3;
        std::printf("  lossless: %.2f Gbit/s (mean of 3)\n", lossless);
        struct mode_row {
            const char *name;
            bool tlp, sr;
        };
        const mode_row modes[] = {{"go-back-N, timeout only (as rxe)", false, false},
                                  {"go-back-N + tail-loss probe", true, false},
                                  {"selective repeat + tail-loss probe", true, true}};
        for (double drop : {0.0, 0.001, 0.01, 0.05}) {
            for (const mode_row &md : modes) {
                std::printf("  drop %5.1f%%  %-34s:", 100 * drop, md.name);
                for (uint64_t seed = 1; seed <= 3; ++seed) {
                    result r = run_stream(mtu::mtu_4096, wr_opcode::rdma_write, 65536,
                                          {drop, seed, md.tlp, md.sr});
                    std::printf("  %.3f (%5.2f; %llu to)", r.gbit_per_s / lossless, r.gbit_per_s,
                                (unsigned long long)r.timeouts);
                    if (verbose)
                        std::printf(" [rtx %llu probes %llu spurious %llu]",
                                    (unsigned long long)r.retransmits, (unsigned long long)r.probes,
                                    (unsigned long long)r.spurious);
                }
                std::printf("\n");
                std::fflush(stdout);
            }
        }
    }
    if (only == "pkt") { /* on request only: not part of the default run */
        std::printf("pkt_build, 64 B SEND_ONLY frame (alloc, headers, copy, ICRC, free):\n");
        for (bool v6 : {false, true})
            for (bool vlan : {false, true})
                std::printf("  IPv%d%-6s: %6.1f ns\n", v6 ? 6 : 4, vlan ? "+VLAN" : "",
                            pkt_build_ns(v6, vlan, false));
        std::printf("  IPv4, checksum offload: %6.1f ns\n", pkt_build_ns(false, false, true));
    }
    rte_eal_cleanup();
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * bench_congestion: 8 flows through one bottleneck, DCQCN off and on, side
 * by side (issue 15; doc/congestion.md has a run).
 *
 * Eight sender devices, one RC QP each, write 64 KiB messages (8 in
 * flight per QP) to one receiver device through a memlink whose port to
 * the receiver is a model bottleneck (drivers/memlink/
 * uroce_memlink_bottleneck.h): a FIFO at --bottleneck Gb/s, a --buffer KB
 * queue, RED-like CE marking (Kmin 5 KB, Kmax 200 KB, Pmax 1%: the DCQCN
 * paper's switch settings), drops when full, --delay us each way. Each
 * sender's NIC sends at --line Gb/s (the pacer at line rate; with DCQCN on,
 * DCQCN's rate).
 *
 * Time is simulated: a manual clock that moves only when no device has
 * anything to do (every device is an infinitely fast CPU behind a NIC
 * of the given line rate), so the figures depend on the model, not on this
 * machine's load, and a run is reproducible.
 *
 * Per run: Jain's fairness index over the flows' goodput, the queue depth
 * arriving frames find (median, 99th percentile), the loss rate at the
 * bottleneck, its utilisation (wire bytes, and goodput), CE marks, CNPs,
 * rate cuts, retransmissions and timeouts.
 *
 *   bench_congestion [--ms M] [--warmup-ms W] [--flows N] [--line G] [--bottleneck G]
 *                    [--buffer KB] [--delay US] [--timeout T] [--paper]
 *                    [--trace FILE] [--pcap FILE] [--pcap-at MS] [--pcap-ms M]
 *                    [--dcqcn off|on|both]
 *                    [--drop P] [--seed S] [--sr]
 *
 * --paper uses the paper's reaction-point parameters (T = 55 us,
 * B = 10 MB, F = 5, R_AI = 40 Mb/s, R_HAI = 400 Mb/s) instead of mlx5's.
 * --trace writes the DCQCN run's per-flow rates every 100 us as CSV;
 * --pcap the frames the devices receive in --pcap-ms ms (2) from
 * --pcap-at ms (0: the start) of the DCQCN run (of the only run with --dcqcn off): data with CE
 * marks, ACKs, SACKs, NAKs, CNPs, stamped with the simulated time, for uroce-dump --plot. --drop
 * adds random loss to every frame either way (memlink's seeded faults, --seed), --sr turns
 * selective repeat on for every QP: with --flows 1 the loss-recovery pictures of
 * doc/loss-recovery.md.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rte_mbuf.h>

#include <uroce/capture.h>
#include <uroce/cc.h>
#include <uroce/clock.h>
#include <uroce/eal.h>
#include <uroce/verbs.h>

#include "uroce_device.h"
#include "uroce_memlink.h"

using namespace uroce;

namespace {

struct options {
    double ms = 100;
    double warmup_ms = 20;
    unsigned flows = 8;
    double line_gbps = 25;
    double bottleneck_gbps = 25;
    uint32_t buffer_kb = 400;
    double delay_us = 2;
    uint8_t timeout = 14;
    bool paper = false;
    double cnp_us = -1; /* -1: the default (mlx5's 4 us; the paper's 50 us with --paper) */
    uint64_t buffer_override = 0;
    std::string trace;
    std::string pcap; /* the DCQCN run's first pcap_ms of received frames */
    double pcap_at_ms = 0, pcap_ms = 2;
    bool run_off = true, run_on = true; /* --dcqcn off|on|both */
    double drop = 0;                    /* random loss, every frame either way */
    uint64_t seed = 1;
    bool sr = false; /* selective repeat on every QP */
};

constexpr uint32_t msg_size = 64 * 1024;
constexpr uint32_t in_flight = 8;
rte_mempool *pool;

struct node {
    memlink_port *port = nullptr;
    device *ctx = nullptr;
    pd *pd_ = nullptr;
    cq *cq_ = nullptr;
    std::vector<qp *> qps;
    std::vector<uint8_t> buf;
    mr *mr_ = nullptr;
    uint8_t mac[6] = {2, 0, 0, 0, 1, 0};
    uint32_t ip = 0;
};

struct flow_result {
    uint64_t bytes = 0;
};

struct run_result {
    bool dcqcn = false;
    std::vector<double> gbps; /* per flow, goodput */
    double jain = 0;
    double q_median_kb = 0, q_p99_kb = 0;
    double loss = 0;
    double util_wire = 0, util_goodput = 0;
    uint64_t marked = 0, cnps_sent = 0, cnps_rcvd = 0, rate_cuts = 0;
    uint64_t retransmits = 0, retrans_pkts = 0, timeouts = 0, probes = 0, spurious = 0;
    unsigned flows_failed = 0;                   /* retry counter exhausted */
    double rate_min_gbps = 0, rate_max_gbps = 0; /* the senders' pacing rates at the end */
};

void open_node(node &n, memlink_port *port, clock_source *clk, const cc_config &cc,
               size_t buf_bytes, unsigned max_qp) {
    device_config cfg;
    cfg.dev = port;
    cfg.pool = pool;
    cfg.gids[0] = gid::from_ipv4(n.ip);
    cfg.num_gids = 1;
    cfg.clock = clk;
    cfg.seed = n.ip;
    cfg.max_qp = max_qp;
    cfg.cc = cc;
    n.port = port;
    verbs_error err;
    n.ctx = open_device(cfg, &err);
    if (!n.ctx) {
        std::fprintf(stderr, "open_device: %s\n", verbs_error_str(err));
        std::exit(1);
    }
    n.pd_ = alloc_pd(n.ctx);
    n.cq_ = create_cq(n.ctx, 8192);
    n.buf.assign(buf_bytes, 0x5a);
    n.mr_ = reg_mr(n.pd_, n.buf.data(), n.buf.size(),
                   access_local_write | access_remote_write | access_remote_read);
}

qp *make_qp(node &n) {
    qp_init_attr ia;
    ia.send_cq = n.cq_;
    ia.recv_cq = n.cq_;
    ia.cap.max_send_wr = 64;
    ia.cap.max_recv_wr = 16;
    qp *q = create_qp(n.pd_, ia);
    if (!q) std::exit(1);
    n.qps.push_back(q);
    return q;
}

void connect(qp *q, const node &peer, uint32_t dqpn, uint8_t timeout, bool sr) {
    qp_attr at;
    at.qp_state = qp_state::init;
    at.qp_access_flags = access_remote_write;
    modify_qp(q, at, qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags);
    at = qp_attr{};
    at.qp_state = qp_state::rtr;
    at.path_mtu = mtu::mtu_4096;
    at.dest_qp_num = dqpn;
    at.max_dest_rd_atomic = 1;
    at.min_rnr_timer = 1;
    at.ah_attr.grh.dgid = gid::from_ipv4(peer.ip);
    std::memcpy(at.ah_attr.dmac, peer.mac, 6);
    at.selective_repeat = sr ? 1 : 0;
    if (modify_qp(q, at,
                  qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                      qp_attr_rq_psn | qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer |
                      (sr ? unsigned(qp_attr_selective_repeat) : 0u)) != verbs_error::ok)
        std::exit(1);
    at = qp_attr{};
    at.qp_state = qp_state::rts;
    at.timeout = timeout;
    at.retry_cnt = 7;
    at.rnr_retry = 7;
    at.max_rd_atomic = 1;
    if (modify_qp(q, at,
                  qp_attr_state | qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt |
                      qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic) != verbs_error::ok)
        std::exit(1);
}

double jain(const std::vector<double> &x) {
    double s = 0, s2 = 0;
    for (double v : x) {
        s += v;
        s2 += v * v;
    }
    return s2 > 0 ? s * s / (double(x.size()) * s2) : 0;
}

run_result run(const options &o, bool dcqcn) {
    manual_clock clk(1'000'000);
    memlink_config lc;
    lc.drop = o.drop;
    lc.seed = o.seed;
    memlink link(lc, &clk);
    cc_config cc;
    cc.ecn = true;
    cc.dcqcn = dcqcn;
    cc.rp.line_rate_mbps = uint64_t(o.line_gbps * 1000);
    if (o.paper) {
        cc.rp.rate_increase_ns = 55'000;
        cc.rp.byte_counter = 10'000'000;
        cc.rp.fast_recovery_steps = 5;
        cc.rp.ai_rate_mbps = 40;
        cc.rp.hai_rate_mbps = 400;
        cc.cnp_interval_ns = 50'000;
    }
    if (o.cnp_us >= 0) cc.cnp_interval_ns = uint64_t(o.cnp_us * 1000);
    const uint64_t delay_ns = uint64_t(o.delay_us * 1000);

    node rx;
    rx.ip = 0x0a000100;
    rx.mac[5] = 0xff;
    memlink_port *rx_port = link.add_port(rx.mac);
    bottleneck_config bc;
    bc.rate_mbps = uint64_t(o.bottleneck_gbps * 1000);
    bc.queue_bytes = o.buffer_kb * 1024;
    bc.delay_ns = delay_ns;
    rx_port->set_bottleneck(bc);
    open_node(rx, rx_port, &clk, cc, size_t(o.flows) * in_flight * msg_size, o.flows + 4);

    std::vector<std::unique_ptr<node>> tx;
    for (unsigned i = 0; i < o.flows; ++i) {
        auto n = std::make_unique<node>();
        n->ip = 0x0a000001 + i;
        n->mac[5] = uint8_t(i + 1);
        memlink_port *p = link.add_port(n->mac);
        bottleneck_config back; /* the way back: no queue, the same delay */
        back.delay_ns = delay_ns;
        back.ecn = false;
        p->set_bottleneck(back);
        open_node(*n, p, &clk, cc, msg_size, 4);
        tx.push_back(std::move(n));
    }
    for (unsigned i = 0; i < o.flows; ++i) {
        qp *s = make_qp(*tx[i]);
        qp *r = make_qp(rx);
        connect(s, rx, qp_num(r), o.timeout, o.sr);
        connect(r, *tx[i], qp_num(s), o.timeout, o.sr);
    }

    run_result r;
    std::vector<uint64_t> done(o.flows, 0), posted(o.flows, 0);
    std::vector<bool> failed(o.flows, false);
    auto post = [&](unsigned i) {
        node &n = *tx[i];
        sge g{reinterpret_cast<uint64_t>(n.buf.data()), msg_size, mr_lkey(n.mr_)};
        send_wr w;
        w.wr_id = i;
        w.sg_list = &g;
        w.num_sge = 1;
        w.opcode = wr_opcode::rdma_write;
        w.send_flags = send_signaled;
        uint64_t slot = posted[i] % in_flight;
        w.wr.rdma.remote_addr =
            reinterpret_cast<uint64_t>(rx.buf.data()) + (uint64_t(i) * in_flight + slot) * msg_size;
        w.wr.rdma.rkey = mr_rkey(rx.mr_);
        send_wr *bad;
        if (post_send(n.qps[0], &w, &bad) == verbs_error::ok) ++posted[i];
    };
    for (unsigned i = 0; i < o.flows; ++i)
        for (uint32_t k = 0; k < in_flight; ++k)
            post(i);

    FILE *trace = (dcqcn && !o.trace.empty()) ? std::fopen(o.trace.c_str(), "w") : nullptr;
    if (trace) {
        std::fprintf(trace, "t_us,queue_kb");
        for (unsigned i = 0; i < o.flows; ++i)
            std::fprintf(trace, ",rate%u_gbps", i);
        std::fprintf(trace, "\n");
    }

    const uint64_t t0 = clk.now_ns();
    const uint64_t t_measure = t0 + uint64_t(o.warmup_ms * 1e6);
    const uint64_t t_end = t_measure + uint64_t(o.ms * 1e6);
    const uint64_t step_ns = 100;
    bool measuring = false;
    std::vector<uint64_t> done_at_start(o.flows, 0);
    qp_counters base_tx{}, base_rx{};
    uint64_t next_trace = t0;
    auto sum_tx = [&] {
        qp_counters c{};
        for (auto &n : tx)
            qp_counters_add(c, device_qp_counters(n->ctx));
        return c;
    };
    bottleneck *bn = rx_port->bottleneck_model();

    std::unique_ptr<pcap_writer> cap;
    if ((dcqcn || !o.run_on) && !o.pcap.empty()) {
        std::string e;
        cap = pcap_writer::open(o.pcap, e);
        if (!cap) std::fprintf(stderr, "%s\n", e.c_str());
    }
    const uint64_t cap_begin = t0 + uint64_t(o.pcap_at_ms * 1e6);
    const uint64_t cap_end = cap_begin + uint64_t(o.pcap_ms * 1e6);
    auto capturing = [&] { return cap && clk.now_ns() >= cap_begin && clk.now_ns() < cap_end; };
    rte_mbuf *pk[64];
    unsigned turn = 0;
    while (clk.now_ns() < t_end) {
        if (!measuring && clk.now_ns() >= t_measure) {
            measuring = true;
            done_at_start = done;
            bn->reset_stats();
            base_tx = sum_tx();
            base_rx = device_qp_counters(rx.ctx);
        }
        if (trace && clk.now_ns() >= next_trace) {
            std::fprintf(trace, "%.1f,%.1f", double(clk.now_ns() - t0) / 1e3,
                         double(bn->backlog(clk.now_ns())) / 1024);
            for (auto &n : tx)
                std::fprintf(trace, ",%.3f", double(qp_cc_query(n->qps[0]).rate_mbps) / 1e3);
            std::fprintf(trace, "\n");
            next_trace += 100'000;
        }
        unsigned moved = 0;
        {
            uint16_t k = rx.port->rx_burst(pk, 64);
            if (capturing()) cap->write_burst_at(clk.now_ns(), pk, k);
            if (k) rx.ctx->rx_burst(pk, k);
            moved += k + rx.ctx->poll();
        }
        /* the senders take turns at going first: in a fixed order the first
         * would always find the room a departure left in a full queue */
        ++turn;
        for (unsigned f = 0; f < o.flows; ++f) {
            const unsigned i = (f + turn) % o.flows;
            node &n = *tx[i];
            uint16_t k = n.port->rx_burst(pk, 64);
            if (capturing()) cap->write_burst_at(clk.now_ns(), pk, k);
            if (k) n.ctx->rx_burst(pk, k);
            moved += k + n.ctx->poll();
            wc wcs[16];
            int c = poll_cq(n.cq_, 16, wcs);
            for (int j = 0; j < c; ++j) {
                if (wcs[j].status != wc_status::success) {
                    /* retry exceeded: the flow is dead (its QP in ERR) */
                    if (!failed[i]) ++r.flows_failed;
                    failed[i] = true;
                    continue;
                }
                ++done[i];
                post(i);
                ++moved;
            }
        }
        if (!moved) clk.advance(step_ns);
    }
    if (trace) std::fclose(trace);
    cap.reset();

    r.dcqcn = dcqcn;
    const double secs = o.ms / 1e3;
    double total = 0;
    for (unsigned i = 0; i < o.flows; ++i) {
        double g = double(done[i] - done_at_start[i]) * msg_size * 8 / secs / 1e9;
        r.gbps.push_back(g);
        total += g;
    }
    r.jain = jain(r.gbps);
    r.q_median_kb = double(bn->queue_quantile(0.5)) / 1024;
    r.q_p99_kb = double(bn->queue_quantile(0.99)) / 1024;
    const bottleneck_stats &bs = bn->stats();
    r.loss = bs.frames ? double(bs.dropped) / double(bs.frames) : 0;
    r.util_wire = double(bs.sent_bytes) * 8 / secs / (o.bottleneck_gbps * 1e9);
    r.util_goodput = total / o.bottleneck_gbps;
    r.marked = bs.marked;
    qp_counters ct = sum_tx(), cr = device_qp_counters(rx.ctx);
    r.cnps_sent = cr.cnps_sent - base_rx.cnps_sent;
    r.cnps_rcvd = ct.cnps_rcvd - base_tx.cnps_rcvd;
    r.rate_cuts = ct.rate_cuts - base_tx.rate_cuts;
    r.retransmits = ct.retransmits - base_tx.retransmits;
    r.retrans_pkts = ct.retrans_pkts - base_tx.retrans_pkts;
    r.timeouts = ct.timeouts - base_tx.timeouts;
    r.probes = ct.tlp_probes - base_tx.tlp_probes;
    r.spurious = ct.tlp_spurious - base_tx.tlp_spurious;
    r.rate_min_gbps = 1e9;
    for (auto &n : tx) {
        double g = double(qp_cc_query(n->qps[0]).rate_mbps) / 1e3;
        r.rate_min_gbps = std::min(r.rate_min_gbps, g);
        r.rate_max_gbps = std::max(r.rate_max_gbps, g);
    }
    for (auto &n : tx)
        close_device(n->ctx);
    close_device(rx.ctx);
    return r;
}

bool arg(int &i, int argc, char **argv, const char *name, std::string &out) {
    if (std::strcmp(argv[i], name) != 0 || i + 1 >= argc) return false;
    out = argv[++i];
    return true;
}

} // namespace

int main(int argc, char **argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string v;
        if (arg(i, argc, argv, "--ms", v))
            o.ms = std::stod(v);
        else if (arg(i, argc, argv, "--warmup-ms", v))
            o.warmup_ms = std::stod(v);
        else if (arg(i, argc, argv, "--flows", v))
            o.flows = unsigned(std::stoul(v));
        else if (arg(i, argc, argv, "--line", v))
            o.line_gbps = std::stod(v);
        else if (arg(i, argc, argv, "--bottleneck", v))
            o.bottleneck_gbps = std::stod(v);
        else if (arg(i, argc, argv, "--buffer", v))
            o.buffer_kb = uint32_t(std::stoul(v));
        else if (arg(i, argc, argv, "--delay", v))
            o.delay_us = std::stod(v);
        else if (arg(i, argc, argv, "--timeout", v))
            o.timeout = uint8_t(std::stoul(v));
        else if (arg(i, argc, argv, "--trace", v))
            o.trace = v;
        else if (arg(i, argc, argv, "--pcap", v))
            o.pcap = v;
        else if (arg(i, argc, argv, "--cnp-us", v))
            o.cnp_us = std::stod(v);
        else if (arg(i, argc, argv, "--pcap-at", v))
            o.pcap_at_ms = std::stod(v);
        else if (arg(i, argc, argv, "--pcap-ms", v))
            o.pcap_ms = std::stod(v);
        else if (arg(i, argc, argv, "--drop", v))
            o.drop = std::stod(v);
        else if (arg(i, argc, argv, "--seed", v))
            o.seed = std::stoull(v);
        else if (arg(i, argc, argv, "--dcqcn", v) && (v == "off" || v == "on" || v == "both")) {
            o.run_off = v != "on";
            o.run_on = v != "off";
        } else if (std::strcmp(argv[i], "--sr") == 0)
            o.sr = true;
        else if (std::strcmp(argv[i], "--paper") == 0)
            o.paper = true;
        else {
            std::fprintf(stderr,
                         "usage: %s [--ms M] [--warmup-ms W] [--flows N] [--line G] "
                         "[--bottleneck G] [--buffer KB] [--delay US] [--timeout T] [--paper] "
                         "[--cnp-us US] [--trace FILE] [--pcap FILE] [--pcap-at MS] [--pcap-ms M] "
                         "[--dcqcn off|on|both] [--drop P] [--seed S] [--sr]\n",
                         argv[0]);
            return 2;
        }
    }
    std::string err;
    eal_config ec;
    ec.telemetry = false;
    ec.log_level = "*:warning";
    auto eal = eal_session::start(ec, err);
    if (!eal) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 1;
    }
    pool = make_pktmbuf_pool("bench_cc", 32767, 4096 + 256, err);
    if (!pool) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 1;
    }
    std::printf("bench_congestion: %u flows of 64 KiB RC WRITEs (%u in flight each), MTU 4096\n"
                "  senders at %.0f Gb/s -> bottleneck %.0f Gb/s, buffer %u KB, ECN Kmin 5 KB "
                "Kmax 200 KB Pmax 1%%, delay %.1f us each way, random loss %.2f%% either way%s\n"
                "  %.0f ms measured after %.0f ms warm-up (simulated time), QP timeout %u, "
                "reaction point: %s\n\n",
                o.flows, in_flight, o.line_gbps, o.bottleneck_gbps, o.buffer_kb, o.delay_us,
                100 * o.drop, o.sr ? ", selective repeat" : "", o.ms, o.warmup_ms, o.timeout,
                o.paper ? "paper (T 55 us, B 10 MB, F 5, AI 40, HAI 400 Mb/s)"
                        : "mlx5 (T 300 us, B 32 KB, F 1, AI 5, HAI 50 Mb/s)");
    std::vector<run_result> runs;
    if (o.run_off) runs.push_back(run(o, false));
    if (o.run_on) runs.push_back(run(o, true));
    auto row = [&](const char *name, const char *fmt, auto field) {
        std::printf("| %-38s |", name);
        for (const run_result &r : runs) {
            char x[32];
            std::snprintf(x, sizeof(x), fmt, double(field(r)));
            std::printf(" %12s |", x);
        }
        std::printf("\n");
    };
    std::printf("| %-38s |", "");
    for (const run_result &r : runs)
        std::printf(" %12s |", r.dcqcn ? "DCQCN on" : "DCQCN off");
    std::printf("\n|%s|", std::string(40, '-').c_str());
    for (size_t i = 0; i < runs.size(); ++i)
        std::printf("%s|", std::string(14, '-').c_str());
    std::printf("\n");
    row("Jain's fairness index", "%.3f", [](const run_result &r) { return r.jain; });
    row("goodput per flow min (Gb/s)", "%.2f",
        [](const run_result &r) { return *std::min_element(r.gbps.begin(), r.gbps.end()); });
    row("goodput per flow max (Gb/s)", "%.2f",
        [](const run_result &r) { return *std::max_element(r.gbps.begin(), r.gbps.end()); });
    row("bottleneck queue median (KB)", "%.0f", [](const run_result &r) { return r.q_median_kb; });
    row("bottleneck queue p99 (KB)", "%.0f", [](const run_result &r) { return r.q_p99_kb; });
    row("loss rate at the bottleneck", "%.4f", [](const run_result &r) { return r.loss; });
    row("link utilisation (wire bytes)", "%.3f", [](const run_result &r) { return r.util_wire; });
    row("link utilisation (goodput)", "%.3f", [](const run_result &r) { return r.util_goodput; });
    row("CE marks", "%.0f", [](const run_result &r) { return r.marked; });
    row("CNPs sent", "%.0f", [](const run_result &r) { return r.cnps_sent; });
    row("rate cuts", "%.0f", [](const run_result &r) { return r.rate_cuts; });
    row("go-back-N retries", "%.0f", [](const run_result &r) { return r.retransmits; });
    row("packets re-sent", "%.0f", [](const run_result &r) { return r.retrans_pkts; });
    row("local ACK timeouts", "%.0f", [](const run_result &r) { return r.timeouts; });
    row("tail-loss probes", "%.0f", [](const run_result &r) { return r.probes; });
    row("  of them found spurious", "%.0f", [](const run_result &r) { return r.spurious; });
    row("flows failed (retry exceeded)", "%.0f",
        [](const run_result &r) { return r.flows_failed; });
    row("sender rates at the end, min (Gb/s)", "%.2f",
        [](const run_result &r) { return r.rate_min_gbps; });
    row("sender rates at the end, max (Gb/s)", "%.2f",
        [](const run_result &r) { return r.rate_max_gbps; });
    for (const run_result &r : runs) {
        std::printf("\nper-flow goodput (Gb/s), %s:", r.dcqcn ? "on " : "off");
        for (double g : r.gbps)
            std::printf(" %.2f", g);
    }
    std::printf("\n");
    return 0;
}

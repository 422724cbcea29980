/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-perf: perftest's bandwidth and latency tests on uroce.
 *
 *   uroce-perf [EAL options --] TEST [options] [server]     one side of a run
 *   uroce-perf [EAL options --] --loopback [TEST...] [options]
 *
 * TEST is send_bw, write_bw, read_bw, atomic_bw, send_lat, write_lat,
 * read_lat or atomic_lat. With a server address this side is the client,
 * without one the server, and either can be perftest's own ib_<TEST> on a
 * real RDMA device: the TCP exchange is perftest's (version, system data,
 * MTU, per-QP keys, barriers, reports; apps/common/perftest_oob.h) and so
 * are the QP attributes and the output tables.
 *
 * With -R (perftest's --rdma_cm) the QPs are connected by rdma_cm on the
 * wire (<uroce/cm.h>) and the exchange travels over an rdma_cm connection
 * instead of TCP, as perftest -R does (perf_rdma_cm.h).
 *
 * --loopback runs both ends in this process over a net_ring pair on one
 * core (no NIC, no hugepages), after measuring the bare ring's packet rate
 * as the ceiling, and prints a table per test (default: send_bw, write_bw
 * and read_bw at 64, 4096 and 65536 bytes).
 *
 * Exit status: 0 success, 1 the run failed, 2 the command line is wrong.
 */
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <rte_eth_ring.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "perf_endpoint.h"
#include "perf_rdma_cm.h"
#include "uroce_app_options.h"
#include "uroce_app_stack.h"

namespace uroce::perf {
namespace {

/* EAL memory without hugepages: two stacks' pools in --loopback. */
constexpr unsigned memory_mb = 1024;
/* uroce's max_inline_data (query_device), known before EAL starts. */
constexpr uint32_t max_inline = 512;

bool parse_limit(const char *v, std::optional<double> &out, std::string &err) {
    char *end = nullptr;
    const double d = std::strtod(v, &end);
    if (end == v || *end || !(d >= 0)) {
        err = app::quoted(v) + " is not a limit (a number, 0 or more)";
        return false;
    }
    out = d;
    return true;
}

/* perftest's verifier (print_full_bw_report): the run passes a limit if one
 * of the result lines it prints reaches it (is_bw_limit_passed |= ...). */
struct limit_check {
    std::optional<double> bw, msgrate;
    bool bw_met = false, msgrate_met = false;
    void saw(double bw_avg, double msg_rate_mpps) {
        bw_met = bw_met || (bw && bw_avg >= *bw);
        msgrate_met = msgrate_met || (msgrate && msg_rate_mpps >= *msgrate);
    }
    /* perftest's messages; empty when the run passes */
    std::string verdict() const {
        if (bw && !bw_met) return "BW result is below bw limit";
        if (msgrate && !msgrate_met) return "Msg rate  is below msg_rate limit";
        return {};
    }
};

/* uroce-perf polls without pause from its first QP to the linger after
 * its last test (control work runs on control_runner's thread meanwhile),
 * so its ACKs can wait for the next poll and leave with the answer the
 * test posts in between (device_config::respond_on_poll). */
app::stack_options perf_stack_defaults() {
    app::stack_options s;
    s.respond_on_poll = true;
    return s;
}

struct options {
    app::stack_options stack = perf_stack_defaults();
    std::vector<std::string> eal_args;
    std::vector<std::pair<verb, test_kind>> tests;
    perf_params p;
    std::vector<uint64_t> sizes;
    bool size_given = false;
    bool all_sizes = false;
    bool report_gbits = false;
    bool loopback = false;
    bool inline_given = false;  /* -I */
    bool cq_mod_given = false;  /* -Q, or -l */
    std::optional<uint8_t> tos; /* -T, with -R */
    int gidx = -1;
    uint16_t tcp_port = oob::default_port;
    std::string server;
    uint32_t timeout_s = 10;
    bool rdma_cm = false;  /* -R */
    bool counters = false; /* --counters: the stacks' counters at the end */
    /* -w, -y: perftest's verifier limits (in the printed units), and
     * whether a printed result line met them */
    struct limit_check limits;
    unsigned ring_slots = 0; /* --ring: the net_ring pair's slots (0: 512, at most the pool) */
};

bool parse_test(const std::string &name, verb &v, test_kind &k) {
    static const struct {
        const char *name;
        verb v;
        test_kind k;
    } tests[] = {
        {"send_bw", verb::send, test_kind::bw},   {"write_bw", verb::write, test_kind::bw},
        {"read_bw", verb::read, test_kind::bw},   {"atomic_bw", verb::atomic, test_kind::bw},
        {"send_lat", verb::send, test_kind::lat}, {"write_lat", verb::write, test_kind::lat},
        {"read_lat", verb::read, test_kind::lat}, {"atomic_lat", verb::atomic, test_kind::lat}};
    for (const auto &t : tests) {
        std::string n = t.name;
        if (name == n || name == "ib_" + n) {
            v = t.v;
            k = t.k;
            return true;
        }
    }
    return false;
}

constexpr const char *test_names =
    "send_bw, write_bw, read_bw, atomic_bw, send_lat, write_lat, read_lat, atomic_lat";

/* perftest's default -I (ctx_set_max_inline): the lat tests' SENDs
 * (DEF_INLINE_SEND_RC_UC 236, DEF_INLINE_SEND_UD 188) and WRITEs
 * (DEF_INLINE_WRITE 220) go inline, nothing else. */
uint32_t default_inline(verb op, test_kind kind, qp_type conn) {
    if (kind != test_kind::lat) return 0;
    if (op == verb::send) return conn == qp_type::ud ? 188 : 236;
    return op == verb::write ? 220 : 0;
}

/* The end of a run that printed its results: 1 if a -w/-y limit was not met. */
int limits_verdict(const options &o) {
    const std::string v = o.limits.verdict();
    if (v.empty()) return 0;
    std::fflush(stdout);
    std::fprintf(stderr, "Error: %s\n", v.c_str());
    return app::exit_failure;
}

/* perftest measures no BW peak (and says so first) in -D runs, above 20000
 * iterations, and on the receiving side of send_bw without -b. */
void warn_no_peak(const perf_params &p, test_kind kind, bool send_bw_server) {
    if (kind == test_kind::bw && !p.no_peak &&
        (p.duration_s > 0 || p.iters > peak_max_iters || send_bw_server || p.run_infinitely))
        std::printf(" WARNING: BW peak won't be measured in this run.\n");
}

/* The command line: the stack's and the tools' common options (one parser
 * for both apps, uroce_app_options.h), then perftest's own. Returns -1 to
 * go on, or the exit code. */
int parse_args(int argc, char **argv, options &o) {
    app::command_line cl(
        "uroce-perf",
        "Usage:\n"
        "  uroce-perf [EAL options --] TEST [options]            server side\n"
        "  uroce-perf [EAL options --] TEST [options] <server>   client side\n"
        "  uroce-perf [EAL options --] --loopback [TEST...] [options]\n"
        "                                both ends here, over a net_ring pair\n\n"
        "TEST: send_bw write_bw read_bw atomic_bw send_lat write_lat read_lat atomic_lat\n"
        "(ib_write_bw and so on too). perftest's tests on uroce: the other side can be\n"
        "perftest's own ib_<TEST> (same TCP exchange, QP attributes and output).\n");
    app::add_stack_options(cl, o.stack);
    cl.section("Options (perftest's)");
    app::tool_options t;
    app::add_tool_options(cl, t,
                          {1u << 23, 5, "message size (default 65536; lat 2)",
                           "iterations per QP (default 5000 bw, 1000 lat)",
                           "IB path MTU: 256, 512, 1024, 2048 or 4096 (default: the\n"
                           "largest the port carries)"});
    cl.add(app::flag_option("all", 'a', "all sizes 2..2^23", o.all_sizes));
    cl.add(app::number_option("duration", 'D', "sec", "run for a time instead of -n", 1, 3600,
                              [&o](long n) { o.p.duration_s = double(n); }));
    std::optional<long> margin;
    cl.add(app::number_option("margin", 'f', "sec",
                              "with -D, count only what completes between the first and\n"
                              "the last sec seconds (default 2 when -D is over 4, else 0)",
                              0, 1800, [&margin](long n) { margin = n; }));
    cl.add(app::number_option("qp", 'q', "n", "number of QPs (default 1)", 1, 16384,
                              [&o](long n) { o.p.num_qps = int(n); }));
    cl.add(app::number_option("tx-depth", 't', "n", "outstanding WRs per QP (default 128)", 1, 4096,
                              [&o](long n) { o.p.tx_depth = uint32_t(n); }));
    cl.add(app::number_option("qp-timeout", 'u', "n",
                              "local ACK timeout, 4.096 us x 2^n (default 14: 67 ms)", 0, 31,
                              [&o](long n) { o.p.qp_timeout = uint8_t(n); }));
    cl.add(app::number_option("outs", 'o', "n", "outstanding READs/atomics (default 16)", 1, 128,
                              [&o](long n) { o.p.out_reads = uint8_t(n); }));
    cl.add(app::number_option("gid-index", 'x', "idx",
                              "local GID index (default: the first IPv4 GID)", 0, 255,
                              [&o](long n) { o.gidx = int(n); }));
    bool cpu_freq = false;
    cl.add(app::flag_option("CPU-freq", 'F', "accepted (uroce measures with a monotonic clock)",
                            cpu_freq));
    cl.add(app::flag_option("report_gbits", 0, "bandwidth in Gb/s", o.report_gbits));
    cl.add(app::flag_option("counters", 0,
                            "print the counters at the end: --loopback both stacks', against\n"
                            "a peer the stack's and each QP's, after the linger",
                            o.counters));
    cl.add(app::number_option("ring", 0, "n",
                              "--loopback: slots of each net_ring direction, a power of two\n"
                              "(default 512, DPDK's fallback NIC ring size: beyond it frames\n"
                              "wait in the device's queue; a TX pool's 8192 lets every mbuf queue)",
                              64, 1 << 20, [&o](long n) { o.ring_slots = unsigned(n); }));
    cl.add({"connection", 'c', "type",
            "connection type: RC (default), UC (send and write tests)\n"
            "or UD (send tests; Q_Key 0x11111111, 40-byte GRH in front of\n"
            "each received message, messages up to the MTU)",
            [&o](const char *v, std::string &err) {
                if (std::strcmp(v, "RC") == 0)
                    o.p.conn = qp_type::rc;
                else if (std::strcmp(v, "UC") == 0)
                    o.p.conn = qp_type::uc;
                else if (std::strcmp(v, "UD") == 0)
                    o.p.conn = qp_type::ud;
                else {
                    err = app::quoted(v) + " is not RC, UC or UD (uroce has no DC, XRC or SRD)";
                    return false;
                }
                return true;
            }});
    std::optional<uint32_t> inline_size, rx_depth;
    cl.add(app::number_option("inline_size", 'I', "size",
                              "SENDs and WRITEs up to this size go inline (default: lat\n"
                              "tests 236 send, 188 UD send, 220 write; bw tests 0;\n"
                              "uroce's limit is 512)",
                              0, long(max_inline), [&](long n) { inline_size = uint32_t(n); }));
    cl.add(app::number_option("rx-depth", 'r', "dep",
                              "receive queue depth of SEND tests (default 512, at most -n;\n"
                              "UC and UD: -n up to 16000, so that no message finds the\n"
                              "queue empty)",
                              1, 65536, [&](long n) { rx_depth = uint32_t(n); }));
    cl.add(app::flag_option("bidirectional", 'b',
                            "bw tests both ways at once; each side prints the two\n"
                            "sides' sum (-b send_bw -D: its own SENDs and receives)",
                            o.p.duplex));
    cl.add(app::number_option("ib-port", 'i', "port", "accepted: uroce's device has port 1 only", 1,
                              1, [](long) {}));
    std::optional<uint32_t> cq_mod;
    cl.add(app::number_option("cq-mod", 'Q', "n",
                              "one signaled WR per n in bw tests (default 100; 1 above\n"
                              "8192 B, as perftest, unless -Q is given)",
                              1, 1024, [&](long n) { cq_mod = uint32_t(n); }));
    cl.add(app::number_option("post_list", 'l', "n",
                              "bw tests: post n linked WRs at a time (-n a multiple of\n"
                              "n; the CQ moderation becomes n, or -Q must divide it)",
                              1, 4096, [&o](long n) { o.p.post_list = uint32_t(n); }));
    cl.add(app::flag_option("noPeak", 'N', "measure no BW peak", o.p.no_peak));
    cl.add(app::number_option("sl", 'S', "sl",
                              "service level of the QPs' path (default 0; RoCE v2 frames\n"
                              "carry none without a VLAN: as rxe, it goes nowhere)",
                              0, 15, [&o](long n) { o.p.sl = uint8_t(n); }));
    cl.add(app::number_option("tclass", 0, "value",
                              "the GRH's traffic class: the IP header's DSCP and ECN bits\n"
                              "(uroce sets ECT(0) unless --no-ecn)",
                              0, 255, [&o](long n) { o.p.traffic_class = uint8_t(n); }));
    cl.add(app::flag_option("cpu_util", 0,
                            "with -D: the machine's CPU use over the measured window, a\n"
                            "column as perftest's (user / (user + idle) of /proc/stat)",
                            o.p.cpu_util));
    bool run_infinitely = false;
    cl.add(app::flag_option("run_infinitely", 0,
                            "bw tests against a peer: run until SIGINT/SIGTERM, a result\n"
                            "line every -D seconds (default 5), no peak",
                            run_infinitely));
    cl.add(app::number_option("tos", 'T', "value",
                              "-R: the TOS of the rdma_cm connections (0..255): their\n"
                              "path's traffic class, which the REQ carries to the server",
                              0, 255, [&o](long n) { o.tos = uint8_t(n); }));
    cl.add({"limit_bw", 'w', "value",
            "exit 1 (\"BW result is below bw limit\") unless a result line's\n"
            "average bandwidth, in the printed unit, reaches value",
            [&o](const char *v, std::string &err) { return parse_limit(v, o.limits.bw, err); }});
    cl.add(
        {"limit_msgrate", 'y', "value",
         "exit 1 unless a result line's message rate (Mpps) reaches value",
         [&o](const char *v, std::string &err) { return parse_limit(v, o.limits.msgrate, err); }});
    cl.add(app::flag_option("rdma_cm", 'R',
                            "connect the QPs with rdma_cm, and exchange over it instead of TCP",
                            o.rdma_cm));
    cl.section("uroce-perf's own");
    cl.add(app::flag_option("loopback", 0, "both ends in this process over a net_ring pair",
                            o.loopback));
    cl.epilogue(app::apps_epilogue(memory_mb));
    if (int rc = cl.finish(cl.parse(argc, argv)); rc >= 0) return rc;

    o.eal_args = cl.eal_args();
    o.tcp_port = t.tcp_port;
    o.timeout_s = t.timeout_s;
    if (t.path_mtu) o.p.path_mtu = *t.path_mtu;
    if (t.size) {
        o.sizes = {*t.size};
        o.size_given = true;
    }
    const auto &pos = cl.positional();
    for (size_t i = 0; i < pos.size(); i++) {
        verb tv;
        test_kind tk;
        if (parse_test(pos[i], tv, tk))
            o.tests.push_back({tv, tk});
        else if (o.server.empty() && !o.loopback && i == pos.size() - 1 && !o.tests.empty())
            o.server = pos[i];
        else
            return cl.usage_error(app::quoted(pos[i].c_str()) + " is not a test (" + test_names +
                                  ")");
    }
    if (o.loopback && o.tests.empty())
        o.tests = {
            {verb::send, test_kind::bw}, {verb::write, test_kind::bw}, {verb::read, test_kind::bw}};
    if (o.tests.empty()) return cl.usage_error(std::string("no test: give one of ") + test_names);
    if (o.loopback) {
        for (auto [op, kind] : o.tests)
            if (kind == test_kind::lat && o.stack.shards > 1)
                return cl.usage_error("--loopback latency tests run on one shard (no --shards)");
        if (o.p.num_qps < int(o.stack.shards))
            return cl.usage_error("--shards " + std::to_string(o.stack.shards) +
                                  " needs at least as many QPs (-q " +
                                  std::to_string(o.stack.shards) + ")");
    } else {
        if (o.tests.size() > 1) return cl.usage_error("one test per run against a peer");
        /* The QPs of a run against a peer live on the stack's thread (the
         * control runner hands it every verbs call): shard 0 only. */
        if (o.stack.shards > 1) return cl.usage_error("--shards is for --loopback runs");
        if (o.stack.ips.empty()) return cl.usage_error("no local address: give --ip ADDR[/LEN]");
        if (o.stack.vdev.empty() && o.stack.port_id < 0)
            return cl.usage_error("no port: give --vdev SPEC or --port-id N (or --loopback)");
    }
    const bool lat = o.tests[0].second == test_kind::lat;
    o.p.iters = t.iters ? *t.iters : lat ? 1000 : 5000;
    /* perftest goes on without the column */
    if (o.p.cpu_util && o.p.duration_s == 0)
        std::fprintf(stderr, " CPU Utilization works only with Duration mode.\n");
    /* perftest's checks and settings for --run_infinitely (force_dependecies):
     * a duration run without a margin or peak, -D the report interval
     * (DEF_DURATION, 5 s) */
    if (run_infinitely) {
        if (lat) return cl.usage_error("--run_infinitely is for bw tests");
        if (o.loopback) return cl.usage_error("--run_infinitely is for runs against a peer");
        if (o.all_sizes) return cl.usage_error("--run_infinitely runs one size (no -a)");
        if (o.p.duplex && o.tests[0].first == verb::send)
            return cl.usage_error("--run_infinitely does not run -b send_bw (perftest neither)");
        if (margin) return cl.usage_error("--run_infinitely reports every -D seconds (no -f)");
        o.p.run_infinitely = true;
        if (o.p.duration_s == 0) o.p.duration_s = 5;
    }
    /* perftest's margin (2 s by default) keeps the warm-up and the drain out
     * of a -D rate, and refuses -D <= 2 x margin; here the default applies
     * where perftest's would work (-D over 4), so short runs keep counting
     * the whole run as before */
    if (margin && o.p.duration_s == 0) return cl.usage_error("-f (--margin) needs -D");
    o.p.margin_s = margin               ? double(*margin)
                   : o.p.run_infinitely ? 0.0
                   : o.p.duration_s > 4 ? 2.0
                                        : 0.0;
    if (o.p.duration_s > 0 && o.p.duration_s <= 2 * o.p.margin_s)
        return cl.usage_error("-D must be longer than twice -f (--margin)");
    /* -c: perftest refuses UC for READ/atomic and UD for all but SEND. */
    const char *conn = o.p.conn == qp_type::ud ? "UD" : "UC";
    if (o.p.conn != qp_type::rc) {
        if (o.loopback)
            return cl.usage_error("--loopback runs RC only (no -c " + std::string(conn) + ")");
        const verb v = o.tests[0].first;
        if (o.p.conn == qp_type::uc && v != verb::send && v != verb::write)
            return cl.usage_error("-c UC runs SEND and WRITE tests only");
        if (o.p.conn == qp_type::ud && v != verb::send)
            return cl.usage_error("-c UD runs SEND tests only");
        /* perftest: "UC is not supported in librdmacm"; UD goes through SIDR */
        if (o.rdma_cm && o.p.conn == qp_type::uc)
            return cl.usage_error("-R runs RC and UD only (no -c UC)");
    }
    if (o.rdma_cm && o.loopback) return cl.usage_error("-R is for runs against a peer");
    if (o.p.duplex) {
        if (o.loopback) return cl.usage_error("-b is for runs against a peer");
        if (lat) return cl.usage_error("-b (bidirectional) is for bw tests");
        /* perftest: "Duration mode currently doesn't support running on all sizes" */
        if (o.all_sizes && o.p.duration_s > 0) return cl.usage_error("-b -D runs one size (no -a)");
    }
    o.inline_given = inline_size.has_value();
    o.p.inline_size =
        inline_size ? *inline_size : default_inline(o.tests[0].first, o.tests[0].second, o.p.conn);
    /* perftest's rx depth (force_dependecies): at most the iterations of a
     * SEND test; UC and UD by default all of them (up to 16000), since a
     * message that finds no receive there is lost, not retried; even. */
    if (rx_depth)
        o.p.rx_depth = *rx_depth;
    else if (o.p.conn != qp_type::rc)
        o.p.rx_depth = uint32_t(std::min<uint64_t>(o.p.iters, 16000));
    if (o.tests[0].first == verb::send) {
        o.p.rx_depth = uint32_t(std::min<uint64_t>(o.p.rx_depth, o.p.iters));
        if (o.p.rx_depth % 2 && o.p.duration_s == 0) o.p.rx_depth++;
    }
    /* -l (perftest's post_list): bw tests; -n a multiple of it; the CQ
     * moderation becomes it, or -Q must divide it */
    if (o.p.post_list > 1) {
        if (lat) return cl.usage_error("-l (post_list) is for bw tests");
        if (o.p.duration_s == 0 && o.p.iters % o.p.post_list)
            return cl.usage_error("-n must be a multiple of -l (post_list)");
        if (o.p.post_list > o.p.tx_depth)
            return cl.usage_error("-l (post_list) is more than -t (tx-depth)");
        if (!cq_mod)
            cq_mod = o.p.post_list;
        else if (o.p.post_list % *cq_mod)
            return cl.usage_error("-l (post_list) must be a multiple of -Q (cq-mod)");
    }
    if (cq_mod) o.p.cq_mod = *cq_mod;
    o.cq_mod_given = cq_mod.has_value();
    /* perftest: " TOS only valid for rdma_cm based QP and RawEth QP" */
    if (o.tos && !o.rdma_cm) return cl.usage_error("-T (tos) is for rdma_cm connections (-R)");
    /* With -R the CM makes the path (perftest sets the TOS with -T there) */
    if (o.rdma_cm && (o.p.sl || o.p.traffic_class))
        return cl.usage_error("-S and --tclass set the path of QPs uroce-perf connects itself;\n"
                              "with -R, rdma_cm sets it");
    if (o.all_sizes) {
        o.sizes.clear();
        for (uint64_t s = 2; s <= (1u << 23); s *= 2)
            o.sizes.push_back(s);
    } else if (!o.size_given) {
        o.sizes = o.loopback ? std::vector<uint64_t>{64, 4096, 65536}
                             : std::vector<uint64_t>{lat ? 2u : 65536u};
    }
    o.p.max_size = 0;
    for (uint64_t s : o.sizes)
        o.p.max_size = std::max(o.p.max_size, s);
    o.p.max_size = std::max<uint64_t>(o.p.max_size, 64);
    /* -q QPs on the device (its default table holds 1024), plus -R's
     * control QP and slack */
    o.stack.max_qp = std::max<uint32_t>(1024, uint32_t(o.p.num_qps) + 16);
    return -1;
}

/* ---------------------------------------------------------------- loopback */

/* Each loopback stack's TX pool: the apps' default, 8191 mbufs per shard,
 * whatever -q is. More QPs than that have frames in flight wait for mbufs
 * (dev tx_mbuf_waits), they do not fail. A pool sized from the windows
 * instead (-q x -t frames, 32767 mbufs at 4096 QPs) was worse: on one core
 * a frame waits behind every frame in flight, and 32767 of them at the
 * rate of thousands of QPs took longer than the ACK timeout (67 ms at
 * perftest's -u 14): 50,000 timeouts and go-back-N resends a second, a
 * third of the rate of 8191 mbufs, which had none (doc/performance.md). */
unsigned loopback_pool_mbufs(const options &o) {
    return 8191 * o.stack.shards; /* a power of two minus one: a ring holds it all */
}

/* Rounds of both stacks per step of the loopback's loop while a ring
 * holds a burst or more. */
constexpr unsigned drain_rounds = 64;

/* The bare net_ring pair's packet rate with 64-byte frames, per CPU-second
 * of this thread (so that a loaded machine's preemptions do not lower it):
 * the ceiling a one-core run of two stacks can approach (measured in the
 * same run). */
double ring_ceiling_mpps(ethdev_port &a, ethdev_port &b, rte_mempool *pool) {
    constexpr int burst = 32;
    rte_mbuf *tx[burst], *rx[burst];
    uint64_t moved = 0;
    const double cpu0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    const auto t0 = std::chrono::steady_clock::now();
    const auto end = t0 + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end) {
        if (rte_pktmbuf_alloc_bulk(pool, tx, burst) != 0) break;
        for (auto *m : tx) {
            m->data_len = m->pkt_len = 64;
        }
        uint16_t sent = a.tx_burst(tx, burst);
        if (sent < burst) rte_pktmbuf_free_bulk(tx + sent, burst - sent);
        uint16_t got = b.rx_burst(0, rx, burst);
        moved += got;
        rte_pktmbuf_free_bulk(rx, got);
    }
    const double cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    return cpu > 0 ? double(moved) / cpu / 1e6 : 0;
}

/* A shard's part of a loopback test on a worker lcore: its client runs the
 * bandwidth loop, then every shard keeps polling until all are done (frames
 * for this shard's QPs arrive through shard 0's queue: net_ring has no RSS). */
struct shard_job {
    endpoint *client = nullptr;
    std::function<void()> progress;
    uint64_t size = 0;
    bw_result r;
    std::string err;
    std::atomic<unsigned> *running = nullptr;
};

int shard_job_main(void *arg) {
    auto *j = static_cast<shard_job *>(arg);
    j->err = j->client->run_bw(j->size, j->r, [](double) {});
    j->running->fetch_sub(1);
    while (j->running->load() > 0)
        j->progress();
    return 0;
}

/* The whole run: the shards' results added up (their QPs ran side by side). */
void add_result(bw_result &sum, const bw_result &r) {
    sum.size = r.size;
    sum.iters += r.iters;
    sum.seconds = std::max(sum.seconds, r.seconds);
    sum.bw_peak_bytes_s += r.bw_peak_bytes_s;
    sum.bw_avg_bytes_s += r.bw_avg_bytes_s;
    sum.msg_rate_mpps += r.msg_rate_mpps;
    /* each shard's figure is the whole process's CPU time over its span */
    sum.cpu_seconds = std::max(sum.cpu_seconds, r.cpu_seconds);
}

/* Where the frames went: each shard's own frames, and those shard 0 read
 * from the one RX queue for the others (net_ring has no RSS). */
void print_fanout(const app::stack &a, const app::stack &b) {
    for (const app::stack *st : {&a, &b})
        for (unsigned k = 0; k < st->shard_count(); k++) {
            const shard_counters &f = *st->fanout_counters(k);
            std::printf(" %s shard %u: handled %lu frames, fanout out %lu in %lu ring full %lu\n",
                        st->name().c_str(), k, (unsigned long)st->eng(k).counters().rx_frames,
                        (unsigned long)f.fanout_out, (unsigned long)f.fanout_in,
                        (unsigned long)f.fanout_ring_full);
        }
}

/* --counters: what every QP of each side counted, summed (the stacks'
 * dumps at the end come after the QPs are gone). */
void print_qp_totals(const std::vector<std::unique_ptr<endpoint>> &clients,
                     const std::vector<std::unique_ptr<endpoint>> &servers) {
    for (const auto *side : {&clients, &servers}) {
        qp_counters t;
        for (const auto &e : *side)
            qp_counters_add(t, e->qp_totals());
        for (const counter_desc &d : qp_counter_table)
            if (uint64_t v = counter_value(t, d))
                std::fprintf(stderr, "  %s QPs %-22s %12lu  %s\n",
                             side == &clients ? "client" : "server", d.name, (unsigned long)v,
                             d.description);
    }
}

/* A latency test over the ring: the client endpoint runs perftest's
 * initiator loop, the server endpoint answers from the same thread (the
 * progress function); both stacks on one core, so one sample is the
 * software path of both stacks in turn, with no wire and no second core. */
int run_loopback_lat(const options &o, const perf_params &p, endpoint &client, endpoint &server,
                     uint64_t &lat_size, const std::string &serr) {
    const auto [op, kind] = std::pair{p.op, p.kind};
    print_lat_header(stdout, op, p, "uroce loopback");
    const std::vector<uint64_t> sizes =
        o.size_given || o.all_sizes ? o.sizes : std::vector<uint64_t>{2};
    for (uint64_t size : sizes) {
        if (op == verb::atomic) size = 8;
        client.clear_buffers();
        server.clear_buffers();
        server.lat_reset();
        lat_size = size;
        lat_result r;
        /* run_lat's initiator: the client of send/read/atomic, the server
         * role of write (perftest's server writes first). */
        std::string e = client.run_lat(size, op != verb::write, r);
        if (e.empty()) e = serr;
        if (!e.empty()) {
            std::fprintf(stderr, "uroce-perf: %s %lu B: %s\n", verb_title(op, kind),
                         (unsigned long)size, e.c_str());
            return 1;
        }
        print_lat_line(stdout, r);
        std::fflush(stdout);
        if (op == verb::atomic) break;
    }
    std::printf("------------------------------------------------------------------------------"
                "---------\n");
    return 0;
}

int run_loopback(options &o) {
    std::string err;
    const unsigned n_shards = o.stack.shards;
    /* With shards every shard sends on its own TX queue into the one ring
     * (multi-producer); the peer's single RX queue is read by its shard 0. */
    const unsigned flags = n_shards > 1 ? RING_F_SC_DEQ : RING_F_SP_ENQ | RING_F_SC_DEQ;
    /* Each ring has 512 slots (or the pool's mbufs, if fewer), DPDK's
     * fallback size for a NIC ring whose PMD states none
     * (RTE_ETH_DEV_FALLBACK_TX_RINGSIZE): a full ring holds frames back in
     * the device's queue (back-pressure), and fewer frames in flight keep
     * their mbufs in cache. One core runs both ends, so a frame waits for
     * the peer behind every frame queued before it: a deeper ring buys no
     * rate, only colder mbufs. With thousands of QPs the ring stays full:
     * a ring the size of the pool (8192 slots) made 64 B SEND at 256-4096
     * QPs 1.4-1.7 against 2.4-2.9 M msg per CPU-second with 2048 slots, and
     * 2048 slots 4.27-4.32 against 5.25-5.32 with 512 at 4096 QPs (Intel
     * Xeon; 1 QP, whose window keeps at most 128 frames queued, and 64 KiB
     * WRITEs unchanged; doc/performance.md, "Twelfth pass"). */
    const unsigned pool_mbufs = loopback_pool_mbufs(o);
    const unsigned ring_size = o.ring_slots ? rte_align32pow2(o.ring_slots)
                                            : std::min(512u, rte_align32pow2(pool_mbufs + 1));
    rte_ring *ab = rte_ring_create("uroce_perf_ab", ring_size, int(rte_socket_id()), flags);
    rte_ring *ba = rte_ring_create("uroce_perf_ba", ring_size, int(rte_socket_id()), flags);
    if (!ab || !ba) {
        std::fprintf(stderr, "uroce-perf: cannot create the net_ring pair's rings: %s\n",
                     rte_strerror(rte_errno));
        return 1;
    }
    std::vector<rte_ring *> tx_ab(n_shards, ab), tx_ba(n_shards, ba);
    int pa =
        rte_eth_from_rings("uroce_perf_a", &ba, 1, tx_ab.data(), n_shards, int(rte_socket_id()));
    int pb =
        rte_eth_from_rings("uroce_perf_b", &ab, 1, tx_ba.data(), n_shards, int(rte_socket_id()));
    if (pa < 0 || pb < 0) {
        std::fprintf(stderr, "uroce-perf: cannot create the net_ring pair: %s\n",
                     rte_strerror(rte_errno));
        return 1;
    }
    app::stack_options sa = o.stack, sb = o.stack;
    sa.port_id = pa;
    sb.port_id = pb;
    sa.ips = {"10.88.0.1/24"};
    sb.ips = {"10.88.0.2/24"};
    sa.mac = rte_ether_addr{{0x02, 0, 0, 0x88, 0, 1}};
    sb.mac = rte_ether_addr{{0x02, 0, 0, 0x88, 0, 2}};
    sa.name = "client";
    sb.name = "server";
    /* Lcore k polls shard k of both stacks (and runs its endpoints). */
    sa.run_shard_lcores = sb.run_shard_lcores = false;
    sb.pcap.clear();
    auto a = app::stack::create(sa, err);
    if (!a) {
        std::fprintf(stderr, "uroce-perf: client stack: %s\n", err.c_str());
        return 1;
    }
    auto b = app::stack::create(sb, err);
    if (!b) {
        std::fprintf(stderr, "uroce-perf: server stack: %s\n", err.c_str());
        return 1;
    }
    const gid ga = gid::from_ipv4(0x0a580001), gb = gid::from_ipv4(0x0a580002);
    std::optional<mac_addr> mac_a, mac_b;
    for (int i = 0; i < 100000 && !(mac_a && mac_b); i++) {
        a->poll();
        b->poll();
        if (!mac_b) mac_b = a->neighbours().resolve(gb);
        if (!mac_a) mac_a = b->neighbours().resolve(ga);
    }
    if (!mac_a || !mac_b) {
        std::fprintf(stderr,
                     "uroce-perf: the two stacks did not resolve each other over the ring (ARP)\n");
        return 1;
    }
    if (o.p.path_mtu > a->max_mtu()) o.p.path_mtu = a->max_mtu();

    if (n_shards == 1)
        std::printf("uroce-perf loopback: two stacks, one core, net_ring pair (%s)\n",
                    a->port().describe().c_str());
    else
        std::printf("uroce-perf loopback: two stacks of %u shards, one lcore per shard pair, "
                    "net_ring pair (%s)\n",
                    n_shards, a->port().describe().c_str());
    const double ceiling = ring_ceiling_mpps(a->port(), b->port(), a->port().pool());
    std::printf(" ceiling: bare net_ring pair, 64 B frames, no stack: %.2f Mpps per CPU-second\n",
                ceiling);

    if (std::any_of(o.tests.begin(), o.tests.end(),
                    [](const auto &t) { return t.second == test_kind::bw; }))
        warn_no_peak(o.p, test_kind::bw, false);
    int rc = 0;
    for (auto [op, kind] : o.tests) {
        perf_params p = o.p;
        p.op = op;
        p.kind = kind;
        if (!o.inline_given) p.inline_size = default_inline(op, kind, p.conn);
        /* Shard k's client and server endpoints hold its share of the QPs
         * and run on lcore k, which polls shard k of both stacks. */
        std::vector<perf_params> pk(n_shards, p);
        for (unsigned k = 0; k < n_shards; k++)
            pk[k].num_qps = p.num_qps / int(n_shards) + (int(k) < p.num_qps % int(n_shards));
        std::vector<std::unique_ptr<endpoint>> clients(n_shards), servers(n_shards);
        std::vector<std::string> serr(n_shards);
        std::vector<std::function<void()>> progress(n_shards);
        uint64_t lat_size = 0; /* the size a latency test runs at */
        for (unsigned k = 0; k < n_shards; k++) {
            progress[k] = [&, k] {
                /* One core runs both ends: each reads what the other sent
                 * this round, not one burst of it. A round sends up to 64
                 * frames per scheduled QP (the server an ACK per QP); with
                 * thousands of QPs, one burst a round let the rings'
                 * backlog, and each frame's wait in it, grow past the ACK
                 * timeout. Shard 0 alone reads the rings. */
                unsigned rounds = 0;
                do {
                    a->poll_shard(k);
                    b->poll_shard(k);
                    /* The server endpoint is the passive side: it reposts
                     * receives (bw), or answers each ping (lat). */
                    if (servers[k] && serr[k].empty())
                        serr[k] = kind == test_kind::lat ? servers[k]->lat_respond(lat_size)
                                                         : servers[k]->service();
                } while (
                    k == 0 &&
                    (rte_ring_count(ab) >= engine::burst || rte_ring_count(ba) >= engine::burst) &&
                    ++rounds < drain_rounds);
            };
            clients[k] = std::make_unique<endpoint>(*a, pk[k], progress[k], k);
            servers[k] = std::make_unique<endpoint>(*b, pk[k], progress[k], k);
        }
        for (unsigned k = 0; k < n_shards; k++) {
            endpoint &client = *clients[k], &server = *servers[k];
            for (endpoint *e : {&client, &server})
                if (std::string e2 = e->create(); !e2.empty()) {
                    std::fprintf(stderr, "uroce-perf: %s\n", e2.c_str());
                    return 1;
                }
            if (kind == test_kind::bw) {
                client.fill_pattern(1);
                server.fill_pattern(2);
            }
            if (std::string e = client.connect(server.local_keys(gb), *mac_b, a->gid_index_for(gb));
                !e.empty()) {
                std::fprintf(stderr, "uroce-perf: %s\n", e.c_str());
                return 1;
            }
            if (std::string e = server.connect(client.local_keys(ga), *mac_a, b->gid_index_for(ga));
                !e.empty()) {
                std::fprintf(stderr, "uroce-perf: %s\n", e.c_str());
                return 1;
            }
            if (op == verb::send)
                for (endpoint *e : {&server, &client})
                    if (e == &server || kind == test_kind::lat)
                        if (std::string e2 = e->post_receives(); !e2.empty()) {
                            std::fprintf(stderr, "uroce-perf: %s\n", e2.c_str());
                            return 1;
                        }
        }
        std::printf("\n");
        if (kind == test_kind::lat) {
            if (run_loopback_lat(o, p, *clients[0], *servers[0], lat_size, serr[0]) != 0) {
                rc = 1;
                break;
            }
            continue;
        }
        print_bw_header(stdout, op, p, "uroce loopback", o.report_gbits);
        for (uint64_t size : o.sizes) {
            if (op == verb::atomic && size != 8) size = 8;
            bw_result r;
            /* On a terminal only: logs and pipes get the results alone. */
            const bool tty = app::show_progress();
            auto on_progress = [&](double frac) {
                if (!tty) return;
                std::printf("\r  %s %lu B: %3.0f%%", verb_title(op, kind), (unsigned long)size,
                            frac * 100);
                std::fflush(stdout);
            };
            std::string e;
            if (n_shards == 1) {
                e = clients[0]->run_bw(size, r, on_progress);
            } else {
                /* Shards 1.. on the worker lcores, shard 0 here; the lcores
                 * touch only their own shards' devices until all are done. */
                std::atomic<unsigned> running{n_shards};
                std::vector<shard_job> jobs(n_shards);
                unsigned k = 1, lcore;
                RTE_LCORE_FOREACH_WORKER(lcore) {
                    if (k == n_shards) break;
                    jobs[k].client = clients[k].get();
                    jobs[k].progress = progress[k];
                    jobs[k].size = size;
                    jobs[k].running = &running;
                    if (rte_eal_remote_launch(shard_job_main, &jobs[k], lcore) != 0) {
                        std::fprintf(stderr, "uroce-perf: cannot start shard %u on lcore %u\n", k,
                                     lcore);
                        return 1;
                    }
                    k++;
                }
                e = clients[0]->run_bw(size, jobs[0].r, on_progress);
                running.fetch_sub(1);
                while (running.load() > 0)
                    progress[0]();
                rte_eal_mp_wait_lcore();
                for (unsigned j = 0; j < n_shards; j++) {
                    add_result(r, jobs[j].r);
                    if (e.empty()) e = jobs[j].err;
                }
            }
            if (tty) std::printf("\r%60s\r", "");
            for (unsigned k = 0; k < n_shards && e.empty(); k++) {
                if (!serr[k].empty()) e = serr[k];
                if (e.empty()) e = servers[k]->check_data(*clients[k], size);
            }
            if (!e.empty()) {
                std::fprintf(stderr, "uroce-perf: %s %lu B: %s\n", verb_title(op, kind),
                             (unsigned long)size, e.c_str());
                if (o.counters) print_qp_totals(clients, servers);
                rc = 1;
                break;
            }
            print_bw_line(stdout, r, o.report_gbits);
            o.limits.saw(bw_in_report_units(r.bw_avg_bytes_s, o.report_gbits), r.msg_rate_mpps);
            if (o.counters) print_qp_totals(clients, servers);
            /* Frames per message at this MTU, both directions' share of the ring ceiling. */
            const uint32_t pmtu = mtu_to_bytes(p.path_mtu);
            const double pkts = double((size + pmtu - 1) / pmtu);
            /* per CPU-second: what the stacks cost, whatever else the
             * machine ran meanwhile (the bare ring's rate is one too) */
            const double cpu_mpps = r.cpu_seconds > 0 ? double(r.iters) / r.cpu_seconds / 1e6 : 0;
            std::printf(
                "   per CPU-second: %.2f M msg/s, %.2f Gb/s; %.2f Mpps of payload packets = "
                "%.0f%% of the bare ring's %.2f Mpps (%.2f CPU-s in %.2f s)\n",
                cpu_mpps, cpu_mpps * double(size) * 8e-3, cpu_mpps * pkts,
                100.0 * cpu_mpps * pkts / ceiling, ceiling, r.cpu_seconds, r.seconds);
            std::fflush(stdout);
        }
        std::printf("------------------------------------------------------------------------------"
                    "---------\n");
        if (n_shards > 1) print_fanout(*a, *b);
        if (rc) break;
    }
    if (rc || o.counters) {
        a->print_counters(stderr);
        b->print_counters(stderr);
    }
    if (rc == 0) rc = limits_verdict(o);
    return rc;
}

/* ---------------------------------------------------------------- one side, against a peer */

int run_remote(options &o) {
    std::string err;
    auto st = app::stack::create(o.stack, err);
    if (!st) {
        std::fprintf(stderr, "uroce-perf: %s\n", err.c_str());
        return 1;
    }
    auto [op, kind] = o.tests[0];
    perf_params p = o.p;
    p.op = op;
    p.kind = kind;
    /* perftest (force_dependecies): no CQ moderation for messages over
     * MSG_SIZE_CQ_MOD_LIMIT, 8192 B, unless -Q asked for it; UD and -a keep
     * it */
    if (kind == test_kind::bw && !o.all_sizes && p.conn != qp_type::ud && o.sizes[0] > 8192) {
        if (!o.cq_mod_given)
            p.cq_mod = 1;
        else if (p.cq_mod > 1)
            std::printf("%s\nWarning: Large message requested and CQ moderation enabled\n"
                        "Warning: It can lead to inaccurate results\n",
                        "---------------------------------------------------------------------"
                        "------------------");
    }
    gid our_gid;
    if (o.gidx >= 0) {
        auto g = st->addrs().gid_at(size_t(o.gidx));
        if (!g) {
            std::fprintf(stderr, "uroce-perf: -x %d: no GID at that index (%zu GIDs)\n", o.gidx,
                         st->addrs().gid_count());
            return app::exit_usage;
        }
        our_gid = *g;
    } else {
        our_gid = st->addrs().gid_count() > 1 ? *st->addrs().gid_at(1) : *st->addrs().gid_at(0);
    }

    oob::perftest::config cfg;
    cfg.side = o.server.empty() ? oob::perftest::role::server : oob::perftest::role::client;
    cfg.test_verb = op;
    cfg.kind = kind;
    cfg.num_qps = p.num_qps;
    cfg.run_all = o.all_sizes;
    cfg.duplex = p.duplex;
    cfg.run_infinitely = p.run_infinitely;
    cfg.size = o.sizes[0];
    cfg.duration = p.duration_s > 0;
    cfg.mtu = int(o.p.path_mtu > st->max_mtu() ? st->max_mtu() : o.p.path_mtu);
    cfg.ud = p.conn == qp_type::ud;
    if (cfg.ud && cfg.size > mtu_to_bytes(mtu(cfg.mtu))) {
        /* perftest: a UD message is at most the MTU; larger sizes become it
         * (saying so with -a, whose sizes stop there). */
        cfg.size = mtu_to_bytes(mtu(cfg.mtu));
        for (uint64_t &sz : o.sizes)
            sz = std::min<uint64_t>(sz, cfg.size);
    }
    cfg.timeout = std::chrono::seconds(o.timeout_s);

    const bool server = cfg.side == oob::perftest::role::server;
    warn_no_peak(p, kind, op == verb::send && server && !p.duplex);
    app::control_runner ctl(*st);
    /* With -R everything runs on this thread (the exchange waits on our own
     * control QP, polling the stack); over TCP the exchange blocks on a
     * control thread, which hands the stack's work back to this one. */
    auto on_stack = [&](const std::function<std::string()> &fn) {
        return o.rdma_cm ? fn() : ctl.call_on_stack<std::string>(fn);
    };
    /* -R: the CM goes last, after every id (declared first, destroyed last). */
    std::unique_ptr<cm_service, void (*)(cm_service *)> cm(nullptr,
                                                           [](cm_service *c) { close_cm(c); });
    if (o.rdma_cm) {
        verbs_error ve = verbs_error::ok;
        cm.reset(open_cm(st->eng(), {}, &ve));
        if (!cm) {
            std::fprintf(stderr, "uroce-perf: cannot open the CM: %s\n", verbs_error_str(ve));
            return 1;
        }
    }
    std::unique_ptr<endpoint> ep;
    std::unique_ptr<data_connections> data; /* -R; before ep goes, its QPs go */
    control_channel *control_ = nullptr;    /* -R, while the exchange runs */
    sockaddr_storage server_addr{};
    if (o.rdma_cm && !o.server.empty() && !make_sockaddr(o.server, o.tcp_port, server_addr)) {
        std::fprintf(stderr, "uroce-perf: cannot resolve %s\n", o.server.c_str());
        return app::exit_usage;
    }
    if (o.rdma_cm && !o.server.empty() && o.gidx < 0) {
        /* -R over IPv6: our GID of the server's family */
        gid peer =
            server_addr.ss_family == AF_INET6
                ? gid::from_bytes(
                      reinterpret_cast<const sockaddr_in6 *>(&server_addr)->sin6_addr.s6_addr)
                : gid::from_ipv4(
                      ntohl(reinterpret_cast<const sockaddr_in *>(&server_addr)->sin_addr.s_addr));
        if (int gi = st->gid_index_for(peer); gi >= 0) our_gid = *st->addrs().gid_at(size_t(gi));
    }
    const int family = our_gid.is_ipv4_mapped() ? AF_INET : AF_INET6;
    bool header_done = false;
    /* --cpu_util -D: the column, and this side's last figure for the lines
     * it prints after the exchange */
    const bool util_column = p.cpu_util && p.duration_s > 0;
    double last_cpu_util = -1;
    oob::perftest::hooks h;
    h.create_local =
        [&](const oob::perftest::negotiated &n) -> oob::result<std::vector<oob::perftest::key>> {
        std::string e = on_stack([&] {
            p.path_mtu = mtu(n.mtu);
            /* The stock bw client walks the remote address through a
             * cycle_buffer-sized window for messages up to cycle_buffer / 2
             * (perftest_resources.h, increase_rem_addr), so each QP's region
             * must span the negotiated cycle_buffer, not just one message. */
            p.max_size = std::max<uint64_t>(p.max_size, n.cycle_buffer);
            ep = std::make_unique<endpoint>(*st, p, [&] {
                st->poll();
                app::maybe_print_counters(*st); /* SIGUSR1 */
            });
            return ep->create();
        });
        if (!e.empty()) return oob::make_error(oob::errc::callback, e);
        return ep->local_keys(our_gid);
    };
    h.connect_qps = [&](std::span<const oob::perftest::key> remote) -> oob::result<void> {
        std::string e = on_stack([&] {
            gid rg{remote[0].gid};
            if (rg.is_zero())
                return std::string("the peer sent no GID: RoCE needs one (perftest -x 1 on rxe)");
            auto mac = st->resolve(rg, std::chrono::seconds(o.timeout_s));
            if (!mac) return "no ARP/ND answer from " + rg.to_string();
            return ep->connect({remote.begin(), remote.end()}, *mac,
                               st->addrs().gid_index(our_gid));
        });
        if (!e.empty()) return oob::make_error(oob::errc::callback, e);
        return {};
    };
    h.prepare = [&](uint64_t) -> oob::result<void> {
        std::string e = on_stack([&] { return ep->post_receives(); });
        if (!e.empty()) return oob::make_error(oob::errc::callback, e);
        return {};
    };
    auto print_header = [&] {
        if (header_done) return;
        if (kind == test_kind::bw)
            print_bw_header(stdout, op, p, "uroce " + st->port().driver_name(), o.report_gbits);
        else
            print_lat_header(stdout, op, p, "uroce " + st->port().driver_name());
        header_done = true;
    };
    h.run = [&](uint64_t size) -> oob::result<oob::perftest::bw_report> {
        oob::perftest::bw_report rep;
        std::string e = on_stack([&]() -> std::string {
            print_header();
            const uint64_t sz = op == verb::atomic ? 8 : size;
            if (kind == test_kind::bw) {
                if (p.run_infinitely) {
                    /* print_bw_infinite_mode: a line per -D seconds until
                     * stopped, the end of such a run (no report after) */
                    auto line = [&](const bw_result &r) {
                        print_bw_line(stdout, r, o.report_gbits);
                        o.limits.saw(bw_in_report_units(r.bw_avg_bytes_s, o.report_gbits),
                                     r.msg_rate_mpps);
                        std::fflush(stdout);
                    };
                    bw_result unused;
                    return op == verb::send && server ? ep->serve_send_bw(sz, 0, unused, line)
                                                      : ep->run_bw_forever(sz, line);
                }
                bw_result r;
                std::string e2 = p.duplex && op == verb::send ? ep->run_bi_send(sz, server, r)
                                 : server && !p.duplex        ? ep->serve_send_bw(sz, p.iters, r)
                                                              : ep->run_bw(sz, r, [](double) {});
                if (!e2.empty()) return e2;
                last_cpu_util = r.cpu_util_pct;
                /* -b: the line is the two sides' sum, once the reports are
                 * exchanged (reports_exchanged); -b send_bw -D exchanges
                 * none, and prints its own (perftest's print_report_bw) */
                if (!p.duplex || (op == verb::send && p.duration_s > 0)) {
                    print_bw_line(stdout, r, o.report_gbits);
                    o.limits.saw(bw_in_report_units(r.bw_avg_bytes_s, o.report_gbits),
                                 r.msg_rate_mpps);
                }
                rep.size = r.size;
                rep.iters = r.iters;
                rep.bw_peak = bw_in_report_units(r.bw_peak_bytes_s, o.report_gbits);
                rep.bw_avg = bw_in_report_units(r.bw_avg_bytes_s, o.report_gbits);
                rep.msg_rate_avg = r.msg_rate_mpps;
                return {};
            }
            lat_result r;
            std::string e2 = ep->run_lat(sz, cfg.side == oob::perftest::role::client, r);
            if (!e2.empty()) return e2;
            if (r.iters) print_lat_line(stdout, r);
            return {};
        });
        std::fflush(stdout);
        if (!e.empty()) return oob::make_error(oob::errc::callback, e);
        return rep;
    };

    /* The stock write/read/atomic bw server does not measure: it prints the
     * client's figures from xchg_bw_reports, and so does ours. */
    if (p.duplex)
        h.reports_exchanged = [&](const oob::perftest::bw_report &mine,
                                  const oob::perftest::bw_report &peer) {
            /* print_full_bw_report(my_bw_rep, rem_bw_rep) */
            print_bw_line(stdout, mine.size, mine.iters, mine.bw_peak + peer.bw_peak,
                          mine.bw_avg + peer.bw_avg, mine.msg_rate_avg + peer.msg_rate_avg,
                          last_cpu_util);
            o.limits.saw(mine.bw_avg + peer.bw_avg, mine.msg_rate_avg + peer.msg_rate_avg);
            std::fflush(stdout);
        };
    auto print_peer_reports = [&](const oob::perftest::outcome &out) {
        if (kind != test_kind::bw || op == verb::send || !server || p.duplex) return;
        print_header();
        for (const auto &r : out.remote_reports) {
            /* a side that did not measure: perftest's calc_cpu_util gives 0 */
            print_bw_line(stdout, r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate_avg,
                          util_column ? 0.0 : -1.0);
            o.limits.saw(r.bw_avg, r.msg_rate_avg);
        }
    };
    if (o.rdma_cm) {
        /* create_rdma_cm_connection: the endpoint's QPs, each connected by
         * rdma_cm; READ and atomic tests offer out_reads both ways. */
        h.create_local = nullptr;
        h.connect_cm = [&](const oob::perftest::negotiated &n)
            -> oob::result<std::vector<oob::perftest::key>> {
            p.path_mtu = mtu(n.mtu);
            p.max_size = std::max<uint64_t>(p.max_size, n.cycle_buffer);
            ep = std::make_unique<endpoint>(*st, p, [&] { st->poll(); });
            if (std::string e = ep->create_resources(); !e.empty())
                return oob::make_error(oob::errc::callback, e);
            cm_conn_param cp;
            if (op == verb::read || op == verb::atomic)
                cp.responder_resources = cp.initiator_depth = p.out_reads;
            cp.retry_count = 7;
            cp.rnr_retry_count = 7;
            data = std::make_unique<data_connections>(*st, cm.get());
            const auto t = std::chrono::seconds(o.timeout_s);
            std::string e = cfg.side == oob::perftest::role::client
                                ? data->connect(reinterpret_cast<sockaddr *>(&server_addr), *ep,
                                                p.num_qps, cp, t, o.tos)
                                : data->accept(*control_, *ep, p.num_qps, cp, t);
            if (!e.empty()) return oob::make_error(oob::errc::callback, e);
            return ep->local_keys(our_gid);
        };
        h.connect_qps = [&](std::span<const oob::perftest::key> remote) -> oob::result<void> {
            ep->set_remote({remote.begin(), remote.end()});
            return {};
        };
    }
    /* perftest's server banner, before it waits for the client (with -R
     * once the rdma_cm listener is up: scripts wait for it). */
    auto waiting_banner = [] {
        std::printf("\n************************************\n"
                    "* Waiting for client to connect... *\n"
                    "************************************\n");
        std::fflush(stdout);
    };
    auto run_rdma_cm = [&]() -> std::string {
        std::string e;
        if (cfg.side == oob::perftest::role::client &&
            !st->wait_link_up(std::chrono::seconds(o.timeout_s)))
            return "the port's link did not come up within " + std::to_string(o.timeout_s) + " s";
        std::unique_ptr<control_channel> ch =
            cfg.side == oob::perftest::role::client
                ? control_channel::connect(*st, cm.get(),
                                           reinterpret_cast<sockaddr *>(&server_addr),
                                           std::chrono::seconds(o.timeout_s), e, o.tos)
                : control_channel::accept(*st, cm.get(), family, o.tcp_port, waiting_banner, e,
                                          p.conn == qp_type::ud);
        if (!ch) return e;
        control_channel &control = *ch;
        control_ = &control;
        oob::perftest::session s(std::move(ch), cfg);
        auto r = oob::perftest::run(s, h);
        if (r) print_peer_reports(*r);
        std::fflush(stdout);
        if (r) st->linger(); /* the QPs are still up: re-ACK a peer's last retransmissions */
        if (o.counters) st->print_counters(stderr); /* before the QPs go */
        /* destroy_ctx: every data connection, then the control one. */
        if (data) {
            std::string de = data->disconnect(std::chrono::seconds(o.timeout_s));
            if (!de.empty()) std::fprintf(stderr, "uroce-perf: %s\n", de.c_str());
        }
        data.reset(); /* its ids may be on the control connection's channel */
        control.disconnect(std::chrono::seconds(std::min<uint32_t>(o.timeout_s, 3)));
        return r ? std::string() : r.message();
    };
    std::string oob_err = o.rdma_cm ? run_rdma_cm() : ctl.run<std::string>([&]() -> std::string {
        if (cfg.side == oob::perftest::role::client) {
            auto r = oob::perftest::run_client(o.server, o.tcp_port, cfg, h);
            return r ? std::string() : r.message();
        }
        auto listener = oob::tcp_listener::listen("", o.tcp_port);
        if (!listener) return listener.message();
        waiting_banner();
        for (;;) {
            auto r = oob::perftest::run_server(*listener, cfg, h, std::chrono::milliseconds(200));
            if (r) {
                print_peer_reports(*r);
                return {};
            }
            if (r.code() != oob::errc::timeout ||
                r.message().find("client to connect") == std::string::npos)
                return r.message();
            if (app::stop_requested.load()) return "interrupted while waiting for a client";
        }
    });
    if (header_done)
        std::printf("------------------------------------------------------------------------------"
                    "---------\n");
    if (!oob_err.empty()) {
        std::fprintf(stderr, "uroce-perf: %s\n", oob_err.c_str());
        st->print_counters(stderr);
        if (cm) cm_print_counters(cm.get(), stderr);
        return 1;
    }
    std::fflush(stdout);
    if (!o.rdma_cm) {
        st->linger(); /* the QPs (ep) are still up: re-ACK a peer's last retransmissions */
        /* after the linger, so that what it answered is counted too; ep's
         * QPs are still there, so each QP's counters show */
        if (o.counters) st->print_counters(stderr);
    }
    return limits_verdict(o);
}

} // namespace
} // namespace uroce::perf

int main(int argc, char **argv) {
    using namespace uroce;
    perf::options o;
    /* The whole command line first: --help and usage errors before EAL. */
    if (int rc = perf::parse_args(argc, argv, o); rc >= 0) return rc;
    std::string err;
    auto eal = app::start_eal(o.eal_args, o.stack.shards, perf::memory_mb, err);
    if (!eal) {
        std::fprintf(stderr, "uroce-perf: %s\n", err.c_str());
        return app::exit_failure;
    }
    app::seed_psn_random();
    return o.loopback ? perf::run_loopback(o) : perf::run_remote(o);
}

/* SPDX-License-Identifier: BSD-3-Clause
 * One side of a perftest-style measurement: its QPs, buffer and CQ, and the
 * bandwidth and latency loops (perftest's run_iter_bw, run_iter_lat_send,
 * run_iter_lat_write, run_iter_lat; src/perftest_resources.c).
 *
 * The loops never block: every wait polls through `progress`, which drives
 * whatever stacks the run involves (one in a two-host run, both ends in the
 * loopback run on one core).
 */
#ifndef UROCE_PERF_ENDPOINT_H
#define UROCE_PERF_ENDPOINT_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "perf_stats.h"
#include "perftest_oob.h"
#include "uroce_app_stack.h"

namespace uroce::perf {

using oob::perftest::test_kind;
using oob::perftest::verb;

struct perf_params {
    verb op = verb::write;
    test_kind kind = test_kind::bw;
    int num_qps = 1;
    uint64_t size = 65536;
    uint64_t iters = 5000; /* -n */
    double duration_s = 0; /* -D: run this long instead of -n iterations */
    /* -f (perftest's --margin): with -D, only what completes between
     * margin_s and duration_s - margin_s counts, so warm-up (first touch of
     * every QP's buffers and queues) and the drain stay out of the rate */
    double margin_s = 0;
    mtu path_mtu = mtu::mtu_4096;
    uint32_t tx_depth = 128;     /* perftest's default -t */
    uint32_t rx_depth = 512;     /* perftest's default -r */
    uint32_t cq_mod = 100;       /* -Q (perftest's default): one signaled WR per this many */
    uint32_t post_list = 1;      /* -l: WRs per post_send in bw tests */
    bool no_peak = false;        /* -N */
    bool cpu_util = false;       /* --cpu_util (with -D) */
    bool run_infinitely = false; /* --run_infinitely: a line every duration_s, until stopped */
    uint8_t sl = 0;              /* -S */
    uint8_t traffic_class = 0;   /* --tclass: the GRH's (the IP header's DSCP and ECN bits) */
    uint8_t out_reads = 16;      /* max_rd_atomic for READ/atomic */
    uint8_t qp_timeout = 14;     /* -u: local ACK timeout, 4.096 us x 2^u */
    qp_type conn = qp_type::rc;  /* -c RC, UC (send/write) or UD (send) */
    uint32_t inline_size = 0;    /* -I: SENDs and WRITEs up to this size go inline */
    bool duplex = false;         /* -b: bw tests in both directions at once */
    /* bytes of each half of a QP's buffer (target, source): the largest
     * message of the run, and against perftest at least its cycle_buffer */
    uint64_t max_size = 65536;
};

struct bw_result {
    uint64_t size = 0;
    uint64_t iters = 0;
    double seconds = 0;
    double bw_peak_bytes_s = 0; /* bytes per second; printed in perftest's units */
    double bw_avg_bytes_s = 0;
    double msg_rate_mpps = 0; /* 1e6 messages per second */
    /* the CPU time the process spent over the same span: on a shared or
     * loaded machine iters / cpu_seconds is the figure that compares */
    double cpu_seconds = 0;
    /* --cpu_util with -D: the machine's CPU use over the measured window in
     * percent, perftest's figure (user / (user + idle) of /proc/stat's cpu
     * line); negative when not measured */
    double cpu_util_pct = -1;
};

/* /proc/stat's aggregate user and idle ticks (perftest's get_cpu_stats). */
struct cpu_ticks {
    long long user = 0, idle = 0;
};
cpu_ticks read_cpu_ticks();
/* perftest's calc_cpu_util: 0 when no tick passed. */
double cpu_util_between(const cpu_ticks &a, const cpu_ticks &b);

/* What the other side needs to reach this one (perftest's KEY message). */
oob::perftest::key to_key(uint32_t qpn, uint32_t psn, uint32_t rkey, uint64_t vaddr, const gid &g,
                          uint8_t out_reads);

/* perftest's UD: DEF_QKEY, and the GRH in front of every received message. */
inline constexpr uint32_t ud_qkey = 0x11111111;
inline constexpr uint32_t ud_grh_len = 40; /* UD_ADDITION */

class endpoint {
  public:
    using progress_fn = std::function<void()>;

    /* shard: which of the stack's shards (devices) holds the QPs; the
     * endpoint is then used only from that shard's lcore. */
    endpoint(app::stack &st, const perf_params &p, progress_fn progress, unsigned shard = 0);
    ~endpoint();

    /* Create PD, MR (num_qps x max_size, all remote access), CQ and the QPs, in INIT. */
    std::string create();
    /* -R: PD, MR and CQ only; each QP comes from rdma_cm (created on its
     * cm_id with qp_attrs() on protection_domain(), connected by the CM)
     * and is adopted: destroy_qp on the cm_id ends it, before the endpoint goes. */
    std::string create_resources();
    /* The attributes of the next QP (create_qp then adopt_qp, in order):
     * its CQ is the one for its index (each CQ serves qps_per_cq_ QPs). */
    qp_init_attr qp_attrs() const;
    const perf_params &params() const { return p_; }
    uroce::pd *protection_domain() const { return pd_; }
    void adopt_qp(qp *q);
    /* -R on UD: the peer of the QP adopted last, as SIDR gave it: an
     * address handle (the endpoint destroys it) and rdma_cm's Q_Key. */
    void adopt_ud_peer(ah *a, uint32_t qkey) {
        ahs_.push_back(a);
        remote_qkey_ = qkey;
    }
    /* -R: the peer's buffers (its keys); the QPs are connected already. */
    void set_remote(const std::vector<oob::perftest::key> &remote) { remote_ = remote; }
    /* This side's KEY for each QP (GID of the family of peer_family). */
    std::vector<oob::perftest::key> local_keys(const gid &our_gid) const;
    /* RTR and RTS against the peer's keys, with perftest's attributes
     * (timeout 14, retry 7, rnr_retry 7, hop limit 255). */
    std::string connect(const std::vector<oob::perftest::key> &remote, const mac_addr &peer_mac,
                        int sgid_index);
    /* SEND tests: receives posted before the ready handshake. */
    std::string post_receives();
    std::string post_receives(size_t qi); /* fill QP qi's receive queue */

    /* The measurements. Requester side of bw (the client, as in perftest;
     * with -b both sides, and the WRITEs, READs or atomics of each go to the
     * other's buffer). */
    std::string run_bw(uint64_t size, bw_result &out,
                       const std::function<void(double)> &on_progress);
    /* -b send_bw (perftest's run_iter_bi): SENDs as run_bw posts them while
     * the peer's arrive and their receives are reposted. With -n it ends when
     * this side's SENDs and the peer's n per QP have all completed; the rate
     * is this side's SENDs, from the first post to the last completion. With
     * -D it ends at its end, without draining (perftest's loop stops there
     * too, and so does its reposting), and counts SENDs and receives in the
     * window. The server sends from its first receive on, as perftest's
     * ("SERVER will not start to send packets before CLIENT start the test"). */
    std::string run_bi_send(uint64_t size, bool server, bw_result &out);
    /* --run_infinitely (perftest's run_iter_bw_infinitely): run_bw until a
     * stop request (SIGINT, SIGTERM: the run's normal end), handing report
     * each -D seconds' figures, without peak. */
    std::string run_bw_forever(uint64_t size, const std::function<void(const bw_result &)> &report);
    /* The responder of a SEND bw test counts receives until `iters` per QP
     * arrived (or stop) and measures them as perftest's receiver does. With
     * report (--run_infinitely: run_iter_bw_infinitely_server) it receives
     * until a stop request, however long the sender is silent, and hands
     * report each -D seconds' figures. */
    std::string serve_send_bw(uint64_t size, uint64_t iters, bw_result &out,
                              const std::function<void(const bw_result &)> &report = {});
    /* Non-blocking service of the passive side of a run on the same thread
     * (the loopback run): repost receives as SEND messages consume them. */
    std::string service();
    /* The passive side of a latency test driven from the same thread (the
     * loopback run), one non-blocking step: send_lat answers each receive
     * with a SEND, write_lat each landed tag with a WRITE of its own tag;
     * READ and atomic need nothing. lat_reset() before each size. */
    void lat_reset();
    std::string lat_respond(uint64_t size);
    /* Zeroes both halves of every QP's buffer. */
    void clear_buffers();
    /* Latency as perftest's client (client = true) or server; which side
     * moves first depends on the test, as in perftest (see the .cpp). */
    std::string run_lat(uint64_t size, bool client, lat_result &out);

    app::stack &stack() const { return st_; }
    /* The sum of this side's QPs' counters (--counters). */
    qp_counters qp_totals() const;

    /* Data check of a loopback run: both halves of every QP's buffer get a
     * pattern of their own (seed); after WRITE/SEND/READ from requester's
     * source half into this side's target half (or back, for READ) the
     * first size bytes of the two must be equal. Empty when they are. */
    void fill_pattern(uint8_t seed);
    std::string check_data(const endpoint &requester, uint64_t size) const;

  private:
    /* What the bw loop does besides posting its own WRs (run_bw, run_bi_send). */
    struct bw_mode {
        bool receive = false;            /* repost and count the peer's SENDs */
        bool wait_first_receive = false; /* post nothing before the first one */
        /* --run_infinitely: no end but a stop request; this gets every -D
         * seconds' figures */
        const std::function<void(const bw_result &)> *on_interval = nullptr;
    };
    std::string bw_loop(uint64_t size, bw_mode mode, bw_result &out,
                        const std::function<void(double)> &on_progress);
    /* Receive completions among n: counted per QP and reposted. */
    std::string take_receives(const wc *w, int n, uint64_t &received);
    /* The send WR of the test's verb from QP qi's source half (s its SGE). */
    void fill_wr(size_t qi, uint64_t size, bool signaled, uint64_t wr_id, send_wr &wr, sge &s);
    std::string post_one(size_t qi, uint64_t size, bool signaled, uint64_t wr_id);
    std::string poll_errors(const wc *w, int n);
    /* Up to max completions from the CQs, starting one further each call. */
    int poll_cqs(int max, wc *out);
    /* Per QP two halves: what the peer writes, reads and receives into
     * (advertised in the key), then what this side sends from, so that a
     * write_lat side never sees its own outgoing tag as the peer's. On UD
     * the receive half has room for the 40-byte GRH before the message. */
    uint64_t half() const { return p_.max_size + (p_.conn == qp_type::ud ? ud_grh_len : 0); }
    uint8_t *buf(size_t qi) { return buf_.data() + qi * 2 * half(); }
    uint8_t *src(size_t qi) { return buf(qi) + half(); }
    const uint8_t *buf(size_t qi) const { return buf_.data() + qi * 2 * half(); }
    const uint8_t *src(size_t qi) const { return buf(qi) + half(); }

    app::stack &st_;
    perf_params p_;
    progress_fn progress_;
    unsigned shard_ = 0;
    std::vector<uint8_t> buf_;
    pd *pd_ = nullptr;
    mr *mr_ = nullptr;
    std::vector<cq *> cqs_;
    size_t qps_per_cq_ = 1;
    size_t next_cq_ = 0;
    std::vector<qp *> qps_;
    bool owns_qps_ = true; /* false: adopted from rdma_cm, which destroys them */
    std::vector<uint32_t> psn_;
    std::vector<oob::perftest::key> remote_;
    std::vector<uint32_t> recv_posted_;
    /* Each QP's receive WR and its SGE, built once as perftest's rwr[] is:
     * a repost is one post_recv of it (prepare_receives). */
    std::vector<sge> recv_sges_;
    std::vector<recv_wr> recv_wrs_;
    void prepare_receives();
    std::vector<ah *> ahs_;     /* UD: one address handle per QP, as perftest */
    uint64_t lat_answered_ = 0; /* lat_respond: answers sent at this size */

    uint32_t remote_qkey_ = ud_qkey; /* UD: the peer's (-R: RDMA_UDP_QKEY from SIDR) */
};

/* perftest's tables. */
void print_bw_header(FILE *f, verb op, const perf_params &p, const std::string &device,
                     bool report_gbits);
void print_bw_line(FILE *f, const bw_result &r, bool report_gbits);
/* A result line from figures already in report units (a peer's xchg_bw_reports). */
void print_bw_line(FILE *f, uint64_t size, uint64_t iters, double peak, double avg,
                   double msg_rate_mpps, double cpu_util_pct = -1);
/* Bytes per second in the unit perftest prints: MB/sec (2^20 B/s) or Gb/sec. */
double bw_in_report_units(double bytes_per_s, bool report_gbits);
void print_lat_header(FILE *f, verb op, const perf_params &p, const std::string &device);
void print_lat_line(FILE *f, const lat_result &r);
const char *verb_title(verb op, test_kind k); /* "RDMA_Write BW Test" */

} // namespace uroce::perf

#endif

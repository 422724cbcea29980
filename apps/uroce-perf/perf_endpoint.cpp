/* SPDX-License-Identifier: BSD-3-Clause */
#include "perf_endpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace uroce::perf {

namespace {

using clock = std::chrono::steady_clock;

/* wr_id of a signaled WR: the QP index and how many WRs its completion covers. */
uint64_t make_wr_id(size_t qi, uint32_t covered) {
    return (uint64_t(qi) << 32) | covered;
}
size_t wr_qp(uint64_t id) {
    return size_t(id >> 32);
}
uint32_t wr_covered(uint64_t id) {
    return uint32_t(id);
}

constexpr uint64_t recv_tag = 1ull << 63;

/* A wait's time limit, read from the clock once every check_every polls:
 * steady_clock costs 55 ns in a KVM guest (kvm-clock; AMD EPYC,
 * doc/performance.md), as much as the rest of an idle poll, and the
 * latency loops wait by polling. The limit is seconds; 1024 polls take
 * well under a millisecond. */
class wait_limit {
  public:
    explicit wait_limit(clock::duration limit) : end_(clock::now() + limit) {}
    bool passed() { return (++polls_ & (check_every - 1)) == 0 && clock::now() > end_; }

  private:
    static constexpr unsigned check_every = 1024;
    clock::time_point end_;
    unsigned polls_ = 0;
};

/* r's average rates from `counted` messages of r.size over r.seconds. */
void set_rates(bw_result &r, double counted) {
    r.bw_avg_bytes_s = counted * double(r.size) / r.seconds;
    r.msg_rate_mpps = counted / r.seconds / 1e6;
}

/* --run_infinitely: each -D seconds' figures (perftest's
 * print_bw_infinite_mode), from a count that only grows; one for a
 * requester's completions and a send_bw server's receives alike. */
class interval_meter {
  public:
    interval_meter(double every_s, uint64_t size, clock::time_point t0)
        : every_(every_s), size_(size), t0_(t0) {}
    /* At now the count is `count`: once an interval is over, its figures go
     * to report and the next one starts. */
    void tick(clock::time_point now, uint64_t count,
              const std::function<void(const bw_result &)> &report) {
        if (now - t0_ < every_) return;
        bw_result r;
        r.size = size_;
        r.iters = count - count0_;
        r.seconds = std::chrono::duration<double>(now - t0_).count();
        set_rates(r, double(r.iters));
        report(r);
        t0_ = now;
        count0_ = count;
    }

  private:
    std::chrono::duration<double> every_;
    uint64_t size_;
    clock::time_point t0_;
    uint64_t count0_ = 0;
};

/* One edge of a measured span: when, the count so far, the process's CPU
 * time and, for --cpu_util, /proc/stat's ticks; perftest takes each edge
 * of its sample window the same way (catch_alarm's SAMPLE_STATE). */
struct window_edge {
    clock::time_point at{};
    uint64_t count = 0;
    double cpu_s = 0;
    cpu_ticks ticks{};

    static window_edge mark(clock::time_point at, uint64_t count, bool with_ticks) {
        return {at, count, cpu_seconds(CLOCK_PROCESS_CPUTIME_ID),
                with_ticks ? read_cpu_ticks() : cpu_ticks{}};
    }
};

/* out's count, time, CPU time and (with_ticks) CPU use from a to b; the
 * rates are the caller's (a send_bw server leaves its first receive out). */
void span_between(const window_edge &a, const window_edge &b, bool with_ticks, bw_result &out) {
    out.iters = b.count - a.count;
    out.seconds = std::chrono::duration<double>(b.at - a.at).count();
    out.cpu_seconds = b.cpu_s - a.cpu_s;
    if (with_ticks) out.cpu_util_pct = cpu_util_between(a.ticks, b.ticks);
}

} // namespace

oob::perftest::key to_key(uint32_t qpn, uint32_t psn, uint32_t rkey, uint64_t vaddr, const gid &g,
                          uint8_t out_reads) {
    oob::perftest::key k;
    k.qpn = qpn;
    k.psn = psn;
    k.rkey = rkey;
    k.vaddr = vaddr;
    k.gid = g.raw;
    k.out_reads = out_reads;
    return k;
}

endpoint::endpoint(app::stack &st, const perf_params &p, progress_fn progress, unsigned shard)
    : st_(st), p_(p), progress_(std::move(progress)), shard_(shard) {}

endpoint::~endpoint() {
    for (ah *a : ahs_)
        destroy_ah(a);
    if (owns_qps_)
        for (qp *q : qps_)
            destroy_qp(q);
    for (cq *c : cqs_)
        destroy_cq(c);
    if (mr_) dereg_mr(mr_);
    if (pd_) dealloc_pd(pd_);
}

std::string endpoint::create_resources() {
    verbs_error err;
    buf_.assign(size_t(p_.num_qps) * 2 * half(), 0);
    pd_ = alloc_pd(st_.ctx(shard_), &err);
    if (!pd_) return std::string("alloc_pd: ") + verbs_error_str(err);
    mr_ = reg_mr(
        pd_, buf_.data(), buf_.size(),
        access_local_write | access_remote_write | access_remote_read | access_remote_atomic, &err);
    if (!mr_) return std::string("reg_mr: ") + verbs_error_str(err);
    /* perftest sizes one CQ for every QP's WRs; at thousands of QPs that is
     * more than a CQ holds (max_cqe), so each CQ takes as many QPs as fit. */
    device_attr da;
    if (verbs_error e = query_device(st_.ctx(shard_), &da); e != verbs_error::ok)
        return std::string("query_device: ") + verbs_error_str(e);
    const uint64_t per_qp = uint64_t(p_.tx_depth) + p_.rx_depth;
    if (per_qp > da.max_cqe)
        return "-t " + std::to_string(p_.tx_depth) + " plus -r " + std::to_string(p_.rx_depth) +
               " is more than a CQ holds (" + std::to_string(da.max_cqe) + ")";
    qps_per_cq_ = size_t(std::min<uint64_t>(da.max_cqe / per_qp, uint64_t(p_.num_qps)));
    for (size_t left = size_t(p_.num_qps); left > 0;) {
        const size_t n = std::min(left, qps_per_cq_);
        cq *c = create_cq(st_.ctx(shard_), int(per_qp * n), nullptr, &err);
        if (!c) return std::string("create_cq: ") + verbs_error_str(err);
        cqs_.push_back(c);
        left -= n;
    }
    return {};
}

qp_init_attr endpoint::qp_attrs() const {
    qp_init_attr ia;
    ia.send_cq = ia.recv_cq = cqs_[std::min(qps_.size() / qps_per_cq_, cqs_.size() - 1)];
    ia.qp_type = p_.conn;
    ia.cap.max_send_wr = p_.tx_depth;
    ia.cap.max_recv_wr = p_.rx_depth;
    ia.cap.max_inline_data = p_.inline_size;
    return ia;
}

void endpoint::adopt_qp(qp *q) {
    owns_qps_ = false; /* their cm_ids destroy them */
    qps_.push_back(q);
    psn_.push_back(uint32_t(lrand48() & 0xffffff)); /* printed only: rdma_cm chose the PSNs */
    prepare_receives();
}

void endpoint::prepare_receives() {
    const size_t n = qps_.size();
    recv_posted_.assign(n, 0);
    recv_sges_.resize(n);
    recv_wrs_.resize(n);
    for (size_t i = 0; i < n; i++) {
        recv_sges_[i] = sge{uint64_t(uintptr_t(buf(i))), uint32_t(half()), mr_lkey(mr_)};
        recv_wr &wr = recv_wrs_[i];
        wr = recv_wr{};
        wr.wr_id = recv_tag | i;
        wr.sg_list = &recv_sges_[i];
        wr.num_sge = 1;
    }
}

std::string endpoint::create() {
    if (std::string e = create_resources(); !e.empty()) return e;
    verbs_error err;
    for (int i = 0; i < p_.num_qps; i++) {
        qp *q = create_qp(pd_, qp_attrs(), &err);
        if (!q) return std::string("create_qp: ") + verbs_error_str(err);
        qps_.push_back(q);
        /* ctx_modify_qp_to_init: UD gets the Q_Key, no access flags; UC
         * carries no READ or atomic */
        qp_connect_attr a;
        a.qkey = ud_qkey;
        a.access = p_.conn == qp_type::uc
                       ? unsigned(access_remote_write)
                       : access_remote_write | access_remote_read | access_remote_atomic;
        if (verbs_error e = modify_qp_to_init(q, a); e != verbs_error::ok)
            return std::string("modify QP to INIT: ") + verbs_error_str(e);
        psn_.push_back(uint32_t(lrand48() & 0xffffff));
    }
    prepare_receives();
    return {};
}

qp_counters endpoint::qp_totals() const {
    qp_counters t;
    for (const qp *q : qps_)
        qp_counters_add(t, qp_counters_of(q));
    return t;
}

void endpoint::fill_pattern(uint8_t seed) {
    for (size_t i = 0; i < buf_.size(); i++)
        buf_[i] = uint8_t(i * 7 + i / 251 + seed);
}

std::string endpoint::check_data(const endpoint &requester, uint64_t size) const {
    if (p_.op == verb::atomic) return {};
    for (size_t qi = 0; qi < qps_.size(); qi++)
        if (std::memcmp(buf(qi), requester.src(qi), size) != 0) {
            char msg[96];
            std::snprintf(msg, sizeof(msg), "data check: QP 0x%x: the %lu bytes differ",
                          qp_num(qps_[qi]), (unsigned long)size);
            return msg;
        }
    return {};
}

std::vector<oob::perftest::key> endpoint::local_keys(const gid &our_gid) const {
    std::vector<oob::perftest::key> keys;
    for (size_t i = 0; i < qps_.size(); i++)
        keys.push_back(to_key(qp_num(qps_[i]), psn_[i], mr_rkey(mr_), uint64_t(uintptr_t(buf(i))),
                              our_gid, p_.out_reads));
    return keys;
}

std::string endpoint::connect(const std::vector<oob::perftest::key> &remote,
                              const mac_addr &peer_mac, int sgid_index) {
    if (remote.size() != qps_.size())
        return "the peer has " + std::to_string(remote.size()) + " QPs, we have " +
               std::to_string(qps_.size());
    remote_ = remote;
    const bool ud = p_.conn == qp_type::ud;
    for (size_t i = 0; i < qps_.size(); i++) {
        /* ctx_connect / ctx_modify_qp_to_rtr in perftest_resources.c: UC
         * and UD leave out what only RC has, UD the path (its AH has it). */
        qp_connect_attr a;
        a.ah_attr.grh.dgid = gid{remote[i].gid};
        a.ah_attr.grh.sgid_index = uint8_t(sgid_index);
        /* perftest asks for 0xff; for RoCE the kernel uses the route's hop
         * limit instead (64 from rxe): keep the default, 64 */
        peer_mac.copy_to(a.ah_attr.dmac);
        a.ah_attr.sl = p_.sl;
        a.ah_attr.grh.traffic_class = p_.traffic_class;
        if (ud) {
            verbs_error err;
            ah *h = create_ah(pd_, a.ah_attr, &err);
            if (!h) return std::string("create_ah: ") + verbs_error_str(err);
            ahs_.push_back(h);
        }
        a.path_mtu = p_.path_mtu;
        a.dest_qp_num = remote[i].qpn;
        a.rq_psn = remote[i].psn;
        a.sq_psn = psn_[i];
        a.max_dest_rd_atomic = p_.out_reads;
        a.min_rnr_timer = 12;
        a.timeout = p_.qp_timeout;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = uint8_t(
            std::min<unsigned>(remote[i].out_reads ? remote[i].out_reads : 1, p_.out_reads));
        /* ctx_connect: connect_qp gives each type what it takes (UC and UD
         * leave out what only RC has, UD the path: its AH has it) */
        if (verbs_error e = connect_qp(qps_[i], a); e != verbs_error::ok)
            return std::string("modify QP to RTR and RTS: ") + verbs_error_str(e);
    }
    return {};
}

std::string endpoint::post_receives() {
    for (size_t i = 0; i < qps_.size(); i++)
        if (std::string e = post_receives(i); !e.empty()) return e;
    return {};
}

std::string endpoint::post_receives(size_t i) {
    recv_wr *bad;
    while (recv_posted_[i] < p_.rx_depth) {
        if (verbs_error e = post_recv(qps_[i], &recv_wrs_[i], &bad); e != verbs_error::ok)
            return std::string("post_recv: ") + verbs_error_str(e);
        recv_posted_[i]++;
    }
    return {};
}

int endpoint::poll_cqs(int max, wc *out) {
    int n = 0;
    for (size_t k = 0; k < cqs_.size() && n < max; k++) {
        cq *c = cqs_[(next_cq_ + k) % cqs_.size()];
        n += poll_cq(c, max - n, out + n);
    }
    next_cq_ = (next_cq_ + 1) % cqs_.size();
    return n;
}

void endpoint::fill_wr(size_t qi, uint64_t size, bool signaled, uint64_t wr_id, send_wr &wr,
                       sge &s) {
    /* READ and atomic results land in the source half, like perftest's local buffer. */
    s.addr = uint64_t(uintptr_t(src(qi)));
    s.length = uint32_t(size);
    s.lkey = mr_lkey(mr_);
    /* Field by field, not `wr = send_wr{}`: the temporary was built with
     * narrow stores and copied with wide loads, a store-forwarding stall
     * that took two thirds of this loop's samples at 64 B. */
    wr.wr_id = wr_id;
    wr.next = nullptr;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.imm_data = 0;
    std::memset(&wr.wr, 0, sizeof wr.wr);
    wr.send_flags = signaled ? unsigned(send_signaled) : 0u;
    /* perftest: inline when the message fits -I (SEND and WRITE only) */
    if ((p_.op == verb::send || p_.op == verb::write) && size <= p_.inline_size)
        wr.send_flags |= send_inline;
    switch (p_.op) {
    case verb::send:
        wr.opcode = wr_opcode::send;
        if (p_.conn == qp_type::ud) {
            wr.wr.ud.ah = ahs_[qi];
            wr.wr.ud.remote_qpn = remote_[qi].qpn;
            wr.wr.ud.remote_qkey = remote_qkey_;
        }
        break;
    case verb::write:
        wr.opcode = wr_opcode::rdma_write;
        wr.wr.rdma.remote_addr = remote_[qi].vaddr;
        wr.wr.rdma.rkey = remote_[qi].rkey;
        break;
    case verb::read:
        wr.opcode = wr_opcode::rdma_read;
        wr.wr.rdma.remote_addr = remote_[qi].vaddr;
        wr.wr.rdma.rkey = remote_[qi].rkey;
        break;
    case verb::atomic:
        wr.opcode = wr_opcode::atomic_fetch_and_add;
        s.length = 8;
        wr.wr.atomic.remote_addr = remote_[qi].vaddr;
        wr.wr.atomic.rkey = remote_[qi].rkey;
        wr.wr.atomic.compare_add = 1;
        break;
    }
}

std::string endpoint::post_one(size_t qi, uint64_t size, bool signaled, uint64_t wr_id) {
    send_wr wr;
    sge s;
    fill_wr(qi, size, signaled, wr_id, wr, s);
    send_wr *bad;
    if (verbs_error e = post_send(qps_[qi], &wr, &bad); e != verbs_error::ok)
        return std::string("post_send: ") + verbs_error_str(e);
    return {};
}

std::string endpoint::poll_errors(const wc *w, int n) {
    for (int i = 0; i < n; i++)
        if (w[i].status != wc_status::success)
            return std::string("completion with error: ") + wc_status_str(w[i].status) + " (" +
                   std::to_string(int(w[i].status)) + ")";
    return {};
}

std::string endpoint::take_receives(const wc *w, int n, uint64_t &received) {
    for (int i = 0; i < n; i++)
        if (w[i].wr_id & recv_tag) {
            recv_posted_[w[i].wr_id & ~recv_tag]--;
            received++;
        }
    /* Repost on the QPs that consumed receives, not on every QP. */
    for (int i = 0; i < n; i++)
        if (w[i].wr_id & recv_tag)
            if (std::string e = post_receives(size_t(w[i].wr_id & ~recv_tag)); !e.empty()) return e;
    return {};
}

std::string endpoint::run_bw(uint64_t size, bw_result &out,
                             const std::function<void(double)> &on_progress) {
    return bw_loop(size, bw_mode{}, out, on_progress);
}

std::string endpoint::run_bw_forever(uint64_t size,
                                     const std::function<void(const bw_result &)> &report) {
    bw_result out;
    return bw_loop(size, bw_mode{.on_interval = &report}, out, [](double) {});
}

std::string endpoint::run_bi_send(uint64_t size, bool server, bw_result &out) {
    return bw_loop(size, bw_mode{.receive = true, .wait_first_receive = server}, out,
                   [](double) {});
}

std::string endpoint::bw_loop(uint64_t size, bw_mode mode, bw_result &out,
                              const std::function<void(double)> &on_progress) {
    const size_t nq = qps_.size();
    wc wcs[32];
    uint64_t received = 0; /* the peer's SENDs (mode.receive) */
    if (mode.wait_first_receive) {
        wait_limit limit(std::chrono::seconds(10));
        while (received == 0) {
            progress_();
            const int n = poll_cqs(32, wcs);
            if (std::string e = poll_errors(wcs, n); !e.empty()) return e;
            if (std::string e = take_receives(wcs, n, received); !e.empty()) return e;
            if (received == 0 && limit.passed()) return "no message from the peer for 10 s";
            if (app::stop_requested.load()) return "interrupted";
        }
    }
    std::vector<uint64_t> posted(nq, 0), done(nq, 0), since_signal(nq, 0);
    /* --run_infinitely: a line every -D seconds until stopped */
    const bool forever = mode.on_interval != nullptr;
    const bool timed = p_.duration_s > 0 && !forever;
    const uint64_t per_qp = timed || forever ? UINT64_MAX : p_.iters;
    /* perftest keeps at most tx_depth WRs in flight per QP; READs and atomics
     * are further bounded by max_rd_atomic inside the transport. */
    const uint64_t depth = p_.tx_depth;
    const uint32_t cq_mod = std::min<uint32_t>(p_.cq_mod, p_.tx_depth);
    /* --cpu_util: /proc/stat at the window's edges (the run's, without -f) */
    const bool util = timed && p_.cpu_util;
    const window_edge start = window_edge::mark(clock::now(), 0, util);
    const auto t0 = start.at;
    auto last_report = t0;
    /* perftest measures no peak in -D runs nor above 20000 iterations. */
    peak_meter peak(!timed && !forever && !p_.no_peak && p_.iters <= peak_max_iters,
                    timed ? 0 : p_.iters * nq);
    auto since_t0 = [&t0](clock::time_point t) {
        return std::chrono::duration<double>(t - t0).count();
    };
    uint64_t total_done = 0;
    /* what a -D window counts: this side's completed WRs, and with -b SEND
     * the peer's messages received too (run_iter_bi counts both) */
    auto counted = [&] { return total_done + (mode.receive ? received : 0); };
    clock::time_point all_sent{}; /* -n: when the last of this side's WRs completed */
    interval_meter intervals(p_.duration_s, size, t0);
    bool stopping = false;
    /* -D -f: the sample window, [margin, duration - margin] (perftest's
     * SAMPLE_STATE); without -f the whole run */
    const bool windowed = timed && p_.margin_s > 0;
    bool sampling = !windowed, sampled = false;
    window_edge sample0 = start, sample1;
    /* The QPs that may have room: all at first, then those a completion
     * came for, so that a round costs what happened in it, not a scan of
     * every QP (thousands with -q 4096). */
    std::vector<size_t> ready(nq);
    std::vector<uint8_t> is_ready(nq, 1);
    for (size_t qi = 0; qi < nq; qi++)
        ready[qi] = qi;
    /* -l: each post_send takes a list of post_list WRs, linked (perftest's
     * post_list; -n is a multiple of it, and it of cq_mod, so every list
     * ends with a signaled WR) */
    const uint32_t list = p_.post_list;
    std::vector<send_wr> wrs(list);
    std::vector<sge> sges(list);
    for (;;) {
        for (size_t qi : ready) {
            is_ready[qi] = 0;
            /* As perftest: the QP's WRs are filled once per visit, each
             * post sets only its wr_id and whether it is signaled. */
            bool filled = false;
            unsigned flags = 0;
            while (!stopping && posted[qi] - done[qi] + list <= depth &&
                   posted[qi] + list <= per_qp) {
                if (!filled) {
                    for (uint32_t j = 0; j < list; j++) {
                        fill_wr(qi, size, false, 0, wrs[j], sges[j]);
                        wrs[j].next = j + 1 < list ? &wrs[j + 1] : nullptr;
                    }
                    flags = wrs[0].send_flags;
                    filled = true;
                }
                for (uint32_t j = 0; j < list; j++) {
                    since_signal[qi]++;
                    const bool sig = since_signal[qi] == cq_mod || posted[qi] + j + 1 == per_qp;
                    if (peak.enabled()) peak.posted(since_t0(clock::now()));
                    wrs[j].wr_id = make_wr_id(qi, uint32_t(since_signal[qi]));
                    wrs[j].send_flags = sig ? flags | unsigned(send_signaled) : flags;
                    if (sig) since_signal[qi] = 0;
                }
                send_wr *bad;
                if (verbs_error e = post_send(qps_[qi], wrs.data(), &bad); e != verbs_error::ok)
                    return std::string("post_send: ") + verbs_error_str(e);
                posted[qi] += list;
            }
        }
        ready.clear();
        progress_();
        int n = poll_cqs(32, wcs);
        if (std::string e = poll_errors(wcs, n); !e.empty()) return e;
        if (mode.receive)
            if (std::string e = take_receives(wcs, n, received); !e.empty()) return e;
        const auto now = clock::now();
        for (int i = 0; i < n; i++) {
            if (wcs[i].wr_id & recv_tag) continue;
            const size_t qi = wr_qp(wcs[i].wr_id);
            done[qi] += wr_covered(wcs[i].wr_id);
            if (!is_ready[qi]) {
                is_ready[qi] = 1;
                ready.push_back(qi);
            }
            total_done += wr_covered(wcs[i].wr_id);
            peak.completed(since_t0(now), wr_covered(wcs[i].wr_id));
            if (!timed && total_done == p_.iters * nq) all_sent = now;
        }
        if (forever) {
            if (app::stop_requested.load()) break; /* the end of such a run */
            intervals.tick(now, counted(), *mode.on_interval);
            continue;
        }
        if (now - last_report > std::chrono::milliseconds(200)) {
            last_report = now;
            double frac =
                timed ? since_t0(now) / p_.duration_s : double(total_done) / double(p_.iters * nq);
            on_progress(std::min(frac, 1.0));
            if (app::stop_requested.load()) return "interrupted";
        }
        if (windowed && !sampled) {
            const double at = since_t0(now);
            if (!sampling && at >= p_.margin_s) {
                sampling = true;
                sample0 = window_edge::mark(now, counted(), util);
            } else if (sampling && at >= p_.duration_s - p_.margin_s) {
                sampled = true;
                sample1 = window_edge::mark(now, counted(), util);
            }
        }
        if (timed) {
            /* the round's one clock read: a second (steady_clock, 25 ns in
             * a KVM guest) was 1.3% of a 64 B SEND run's samples, where
             * perftest's -D reads none (it stops on SIGALRM) */
            if (!stopping && since_t0(now) >= p_.duration_s) {
                stopping = true; /* post no more; drain what is in flight */
                /* With -f the window ends here at the latest (a stall may
                 * have run past its end). */
                if (windowed && !sampled) {
                    sample1 = window_edge::mark(now, counted(), util);
                    if (!sampling) sample0 = sample1;
                    sampled = true;
                }
            }
            /* -b SEND stops here, as run_iter_bi does: the peer stops
             * reposting at its own end, so a drain could wait on RNR NAKs
             * for good. What is still in flight completes or is flushed
             * when the QPs go. */
            if (stopping && mode.receive) break;
            for (size_t qi = 0; stopping && qi < nq; qi++)
                /* The unsignaled tail completes with the next signaled WR:
                 * post one, once the send queue has room for it (a full
                 * queue refuses it with ENOMEM; its signaled WRs free room). */
                if (since_signal[qi] && posted[qi] - done[qi] < depth) {
                    since_signal[qi]++;
                    std::string e =
                        post_one(qi, size, true, make_wr_id(qi, uint32_t(since_signal[qi])));
                    if (!e.empty()) return e;
                    since_signal[qi] = 0;
                    posted[qi]++;
                }
            bool drained = stopping;
            for (size_t qi = 0; qi < nq; qi++)
                drained = drained && done[qi] == posted[qi] && !since_signal[qi];
            if (drained) break;
        } else if (total_done == p_.iters * nq && (!mode.receive || received == p_.iters * nq)) {
            break;
        }
    }
    if (forever) return {}; /* its figures went to on_interval */
    out.size = size;
    if (windowed)
        span_between(sample0, sample1, util, out);
    else if (timed) /* the whole run with its drain: with thousands of QPs
                     * and one signaled WR per cq_mod, the completions of
                     * what was posted come seconds after the stop */
        span_between(start, window_edge::mark(clock::now(), counted(), util), util, out);
    else /* perftest's rate: from the first post to this side's last
          * completion (with -b SEND the peer's last message may come later) */
        span_between(start, window_edge::mark(all_sent, total_done, false), false, out);
    set_rates(out, double(out.iters));
    out.bw_peak_bytes_s = peak.best_bytes_per_s(size);
    return {};
}

std::string endpoint::serve_send_bw(uint64_t size, uint64_t iters, bw_result &out,
                                    const std::function<void(const bw_result &)> &report) {
    /* perftest's receiver (run_iter_bw_server) times its own receive
     * completions, from the first to the last, and prints that report. It
     * measures no peak (perftest forces noPeak on a send_bw server without
     * -b and prints 0): under loss a peak over a short window of the
     * receives, as uroce printed before (103 MB/s beside an average of 2.1),
     * only shows how fast the retransmitted messages that had piled up in
     * flight completed after a stall.
     * With -D it receives for -D seconds from its first receive and counts
     * what arrives between -f seconds after that and -f before the end
     * (set_on_first_rx_packet, catch_alarm's SAMPLE_STATE): a count of -n
     * would stop taking messages while the sender still sends. */
    const bool forever = bool(report);
    const bool timed = p_.duration_s > 0 && !forever;
    const uint64_t want = forever || timed ? UINT64_MAX : iters * qps_.size();
    uint64_t got = 0;
    wc wcs[32];
    auto last = clock::now();
    clock::time_point first{};
    const auto duration = std::chrono::duration<double>(p_.duration_s);
    interval_meter intervals(p_.duration_s, size, last);
    /* -D: the sample window, and the CPU time over it */
    const auto margin = std::chrono::duration<double>(p_.margin_s);
    bool sampling = false, sampled = false;
    window_edge sample0, sample1;
    while (got < want) {
        progress_();
        int n = poll_cqs(32, wcs);
        if (std::string e = poll_errors(wcs, n); !e.empty()) return e;
        if (n) {
            last = clock::now();
            uint64_t received = 0;
            if (std::string e = take_receives(wcs, n, received); !e.empty()) return e;
            if (received && got == 0) first = last;
            got += received;
        } else if (!forever && clock::now() - last > std::chrono::seconds(10)) {
            return "no message for 10 s (" + std::to_string(got) + " of " +
                   (timed ? std::string("a -D run") : std::to_string(want)) + " received)";
        }
        if (forever) {
            if (app::stop_requested.load()) return {}; /* the end of such a run */
            intervals.tick(n ? last : clock::now(), got, report);
            continue;
        }
        if (app::stop_requested.load()) return "interrupted";
        if (timed && got) {
            const auto now = n ? last : clock::now();
            if (!sampling && now - first >= margin) {
                sampling = true;
                sample0 = window_edge::mark(now, got, p_.cpu_util);
            }
            if (sampling && !sampled && now - first >= duration - margin) {
                sampled = true;
                sample1 = window_edge::mark(now, got, p_.cpu_util);
            }
            if (now - first >= duration) break;
        }
    }
    out.size = size;
    out.bw_peak_bytes_s = 0;
    if (timed) {
        span_between(sample0, sample1, p_.cpu_util, out);
        if (out.seconds > 0) set_rates(out, double(out.iters));
        return {};
    }
    out.iters = got;
    /* The first completion starts the clock, so it is not counted in the rate. */
    out.seconds = std::chrono::duration<double>(last - first).count();
    const double counted = double(got > 1 ? got - 1 : got);
    if (out.seconds > 0) set_rates(out, counted);
    return {};
}

std::string endpoint::service() {
    wc wcs[32];
    int n = poll_cqs(32, wcs);
    if (std::string e = poll_errors(wcs, n); !e.empty()) return e;
    uint64_t received = 0;
    return take_receives(wcs, n, received);
}

void endpoint::clear_buffers() {
    std::fill(buf_.begin(), buf_.end(), uint8_t(0));
}

void endpoint::lat_reset() {
    lat_answered_ = 0;
}

std::string endpoint::lat_respond(uint64_t size) {
    wc w[8];
    const int n = poll_cq(cqs_[0], 8, w); /* QP 0's */
    if (std::string e = poll_errors(w, n); !e.empty()) return e;
    if (p_.op == verb::send) {
        for (int i = 0; i < n; i++) {
            if (!(w[i].wr_id & recv_tag)) continue; /* our SEND's completion */
            recv_posted_[0]--;
            if (std::string e = post_receives(); !e.empty()) return e;
            if (std::string e = post_one(0, size, true, 0); !e.empty()) return e;
            lat_answered_++;
        }
    } else if (p_.op == verb::write) {
        /* The initiator's tag k lands in our last byte: answer with ours. */
        const size_t last = size ? size - 1 : 0;
        const uint8_t tag = uint8_t(lat_answered_ + 1);
        if (*static_cast<volatile uint8_t *>(buf(0) + last) == tag) {
            src(0)[last] = tag;
            if (std::string e = post_one(0, std::max<uint64_t>(size, 1), true, 0); !e.empty())
                return e;
            lat_answered_++;
        }
    }
    return {};
}

std::string endpoint::run_lat(uint64_t size, bool client, lat_result &out) {
    /* send_lat and write_lat ping-pong and report half the round trip;
     * read_lat and atomic_lat time each request to its completion
     * (perftest's run_iter_lat_send / _lat_write / run_iter_lat).
     * Who moves first is the stock tools' convention, and it must match:
     * run_iter_lat_send skips the client's first receive wait (the client
     * sends first), run_iter_lat_write skips the server's first poll (the
     * server writes first). With the write roles swapped both sides would
     * write at once and each compares the polled byte for equality with its
     * own count, so the slower side can miss a value and wait forever. */
    const bool initiator = p_.op == verb::write ? !client : client;
    wc w[8];
    auto wait_completion = [&](bool want_recv) -> std::string {
        wait_limit limit(std::chrono::seconds(10));
        for (;;) {
            progress_();
            int n = poll_cq(cqs_[0], 1, w); /* QP 0's */
            if (n == 1) {
                if (w[0].status != wc_status::success) return poll_errors(w, 1);
                if (bool(w[0].wr_id & recv_tag) == want_recv) {
                    if (want_recv) {
                        recv_posted_[0]--;
                        if (std::string e = post_receives(); !e.empty()) return e;
                    }
                    return {};
                }
                continue;
            }
            if (limit.passed()) return "no completion for 10 s: is the peer there?";
            if (app::stop_requested.load()) return "interrupted";
        }
    };
    volatile uint8_t *mine = buf(0) + (size ? size - 1 : 0);
    /* perftest times each iteration from its own post: tposted[i] is read
     * right before the i-th post, and the samples are tposted[i + 1] -
     * tposted[i] (print_report_lat). A responder posts only after the
     * peer's message arrived, so no wait for the peer's first message (the
     * TCP hand shake, the peer's start-up) is in any sample. */
    std::vector<clock::time_point> posted;
    posted.reserve(p_.iters);
    for (uint64_t it = 0; it < p_.iters; it++) {
        if (p_.op == verb::send) {
            if (initiator) {
                posted.push_back(clock::now());
                if (std::string e = post_one(0, size, true, 0); !e.empty()) return e;
                if (std::string e = wait_completion(false); !e.empty()) return e;
                if (std::string e = wait_completion(true); !e.empty()) return e;
            } else {
                if (std::string e = wait_completion(true); !e.empty()) return e;
                posted.push_back(clock::now());
                if (std::string e = post_one(0, size, true, 0); !e.empty()) return e;
                if (std::string e = wait_completion(false); !e.empty()) return e;
            }
        } else if (p_.op == verb::write) {
            /* Each side writes the iteration number's low byte into the
             * peer's last byte and waits for the peer's to land in its own. */
            const uint8_t tag = uint8_t(it + 1);
            auto wait_mem = [&]() -> std::string {
                wait_limit limit(std::chrono::seconds(10));
                while (*mine != tag) {
                    progress_();
                    if (limit.passed()) return "no write from the peer for 10 s";
                    if (app::stop_requested.load()) return "interrupted";
                }
                return {};
            };
            auto send_write = [&]() -> std::string {
                src(0)[size ? size - 1 : 0] = tag;
                posted.push_back(clock::now());
                if (std::string e = post_one(0, std::max<uint64_t>(size, 1), true, 0); !e.empty())
                    return e;
                return wait_completion(false);
            };
            if (initiator) {
                if (std::string e = send_write(); !e.empty()) return e;
                if (std::string e = wait_mem(); !e.empty()) return e;
            } else {
                if (std::string e = wait_mem(); !e.empty()) return e;
                if (std::string e = send_write(); !e.empty()) return e;
            }
        } else {
            if (!initiator) break; /* the READ/atomic target only keeps polling (see caller) */
            posted.push_back(clock::now());
            if (std::string e = post_one(0, size, true, 0); !e.empty()) return e;
            if (std::string e = wait_completion(false); !e.empty()) return e;
        }
    }
    out.size = size;
    out.iters = posted.empty() ? 0 : p_.iters;
    if (posted.size() < 2) return {};
    /* send_lat and write_lat: half the round trip, as perftest prints. */
    const double factor = (p_.op == verb::send || p_.op == verb::write) ? 2.0 : 1.0;
    std::vector<double> s;
    s.reserve(posted.size() - 1);
    for (size_t i = 0; i + 1 < posted.size(); i++)
        s.push_back(std::chrono::duration<double, std::micro>(posted[i + 1] - posted[i]).count() /
                    factor);
    compute_lat_stats(s, out);
    return {};
}

const char *verb_title(verb op, test_kind k) {
    static const char *bw[] = {"Send BW Test", "RDMA_Write BW Test", "RDMA_Read BW Test",
                               "Atomic FETCH_AND_ADD BW Test"};
    static const char *lat[] = {"Send Latency Test", "RDMA_Write Latency Test",
                                "RDMA_Read Latency Test", "Atomic FETCH_AND_ADD Latency Test"};
    return (k == test_kind::bw ? bw : lat)[int(op)];
}

static void print_banner(FILE *f, verb op, test_kind k, const perf_params &p,
                         const std::string &device) {
    const char *rule =
        "---------------------------------------------------------------------------------------\n";
    std::fprintf(f, "%s", rule);
    /* ctx_print_test_info: "RDMA_Write Bidirectional BW Test" with -b */
    static const char *names[] = {"Send", "RDMA_Write", "RDMA_Read", "Atomic FETCH_AND_ADD"};
    if (k == test_kind::bw)
        std::fprintf(f, "                    %s %s%sBW Test\n", names[int(op)],
                     p.duplex ? "Bidirectional " : "", p.post_list > 1 ? "Post List " : "");
    else
        std::fprintf(f, "                    %s\n", verb_title(op, k));
    std::fprintf(f, " Dual-port       : OFF\t\tDevice         : %s\n", device.c_str());
    std::fprintf(f, " Number of qps   : %d\t\tTransport type : IB\n", p.num_qps);
    std::fprintf(f, " Connection type : %s\t\tUsing SRQ      : OFF\n",
                 p.conn == qp_type::ud   ? "UD"
                 : p.conn == qp_type::uc ? "UC"
                                         : "RC");
    std::fprintf(f, " TX depth        : %u\n", k == test_kind::bw ? p.tx_depth : 1);
    if (k == test_kind::bw && p.post_list > 1)
        std::fprintf(f, " Post List       : %u\n", p.post_list);
    if (op == verb::send) std::fprintf(f, " RX depth        : %u\n", p.rx_depth);
    if (k == test_kind::bw)
        std::fprintf(f, " CQ Moderation   : %u\n", std::min(p.cq_mod, p.tx_depth));
    if (op == verb::read || op == verb::atomic)
        std::fprintf(f, " Outstand reads  : %u\n", p.out_reads);
    std::fprintf(f, " Mtu             : %u[B]\n", mtu_to_bytes(p.path_mtu));
    std::fprintf(f, " Link type       : Ethernet\n");
    std::fprintf(f, " Max inline data : %u[B]\n", p.inline_size);
    std::fprintf(f, "%s", rule);
}

void print_bw_header(FILE *f, verb op, const perf_params &p, const std::string &device,
                     bool report_gbits) {
    print_banner(f, op, test_kind::bw, p, device);
    std::fprintf(f, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]%s\n",
                 report_gbits ? "Gb/sec" : "MB/sec", report_gbits ? "Gb/sec" : "MB/sec",
                 p.cpu_util && p.duration_s > 0 ? "    CPU_Util[%]" : "");
}

double bw_in_report_units(double bytes_per_s, bool report_gbits) {
    /* perftest_resources.c print_report_bw: format_factor is 0x100000 for
     * "MB/sec" (so MiB/s) and 125000000 for "Gb/sec" (1e9 bit/s). */
    return bytes_per_s / (report_gbits ? 125e6 : double(1u << 20));
}

void print_bw_line(FILE *f, const bw_result &r, bool report_gbits) {
    print_bw_line(f, r.size, r.iters, bw_in_report_units(r.bw_peak_bytes_s, report_gbits),
                  bw_in_report_units(r.bw_avg_bytes_s, report_gbits), r.msg_rate_mpps,
                  r.cpu_util_pct);
}

void print_bw_line(FILE *f, uint64_t size, uint64_t iters, double peak, double avg,
                   double msg_rate_mpps, double cpu_util_pct) {
    std::fprintf(f, " %-10lu %-10lu       %-7.2f            %-7.2f\t\t   %-7.6f",
                 (unsigned long)size, (unsigned long)iters, peak, avg, msg_rate_mpps);
    if (cpu_util_pct >= 0) /* REPORT_EXT_CPU_UTIL */
        std::fprintf(f, "\t    %-3.2f", cpu_util_pct);
    std::fprintf(f, "\n");
}

cpu_ticks read_cpu_ticks() {
    /* "cpu  user nice system idle iowait ...": perftest reads the first
     * and the fourth number */
    cpu_ticks t;
    if (FILE *fp = std::fopen("/proc/stat", "r")) {
        long long nice = 0, system = 0;
        if (std::fscanf(fp, "cpu %lld %lld %lld %lld", &t.user, &nice, &system, &t.idle) != 4)
            t = {};
        std::fclose(fp);
    }
    return t;
}

double cpu_util_between(const cpu_ticks &a, const cpu_ticks &b) {
    const long long user = b.user - a.user, idle = b.idle - a.idle;
    return user + idle > 0 ? 100.0 * double(user) / double(user + idle) : 0.0;
}

void print_lat_header(FILE *f, verb op, const perf_params &p, const std::string &device) {
    print_banner(f, op, test_kind::lat, p, device);
    std::fprintf(
        f, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
           "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void print_lat_line(FILE *f, const lat_result &r) {
    std::fprintf(f,
                 " %-7lu %-10lu     %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
                 "\t%-7.2f\t\t%-7.2f  \t\t%-7.2f\n",
                 (unsigned long)r.size, (unsigned long)r.iters, r.t_min, r.t_max, r.t_typical,
                 r.t_avg, r.t_stdev, r.p99, r.p999);
}

} // namespace uroce::perf

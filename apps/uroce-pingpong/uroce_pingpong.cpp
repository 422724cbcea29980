/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-pingpong: rdma-core's ibv_rc_pingpong / ibv_uc_pingpong /
 * ibv_ud_pingpong / ibv_srq_pingpong on uroce (--uc, --ud, --srq).
 *
 * Same options, same TCP exchange (port 18515, the 52-byte
 * LID:QPN:PSN:GID message, the server's RTR/RTS before its reply, "done"),
 * same QP attributes and the same output, so either side can be the stock
 * tool running on Linux rxe or a hardware RoCE NIC (rc_pingpong.c,
 * uc_pingpong.c, ud_pingpong.c, srq_pingpong.c, pingpong.c in rdma-core's
 * libibverbs/examples).
 *
 *   uroce-pingpong [EAL options --] --vdev SPEC --ip ADDR [options] [server]
 *
 * Exit status: 0 success, 1 the run failed, 2 the command line is wrong.
 */
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include <rte_eal.h>

#include "pingpong_oob.h"
#include "uroce_app_options.h"
#include "uroce_app_stack.h"

namespace uroce::app {
namespace {

constexpr uint64_t recv_wrid = 1, send_wrid = 2; /* PINGPONG_RECV_WRID / PINGPONG_SEND_WRID */
constexpr uint32_t ud_qkey = 0x11111111;         /* ud_pingpong.c */
constexpr uint32_t grh_len = 40;                 /* UD receive buffers start with the GRH */

/* EAL memory without hugepages. */
constexpr unsigned memory_mb = 512;

struct options {
    stack_options stack;
    std::vector<std::string> eal_args;
    std::string server;
    uint16_t tcp_port = oob::default_port;
    uint32_t size = 4096;
    mtu path_mtu = mtu::mtu_1024; /* rc_pingpong's default, whatever the port can do */
    bool mtu_given = false;
    uint32_t rx_depth = 500;
    uint32_t iters = 1000;
    uint8_t sl = 0;
    int gidx = -1;
    bool validate = false;
    bool ud = false;
    bool uc = false;
    bool srq = false;    /* ibv_srq_pingpong: num_qp RC QPs share one SRQ */
    uint32_t num_qp = 1; /* srq_pingpong's -q (default 16) */
    bool rx_depth_given = false;
    uint32_t timeout_s = 10;
};

/* The command line: the stack's and the tools' common options (one parser
 * for both apps, uroce_app_options.h), then ibv_rc_pingpong's own. Returns
 * -1 to go on, or the exit code. */
int parse_args(int argc, char **argv, options &o) {
    command_line cl(
        "uroce-pingpong",
        "Usage:\n"
        "  uroce-pingpong [EAL options --] [options]          start a server and wait "
        "for connection\n"
        "  uroce-pingpong [EAL options --] [options] <host>   connect to server at "
        "<host>\n\n"
        "rdma-core's ibv_rc_pingpong on uroce (ibv_uc_pingpong with --uc, ibv_ud_pingpong\n"
        "with --ud, ibv_srq_pingpong with --srq): the same options, TCP exchange and\n"
        "output, so the other side can be the stock tool.\n");
    add_stack_options(cl, o.stack);
    cl.section("Options (ibv_rc_pingpong's)");
    tool_options t;
    add_tool_options(cl, t,
                     {1u << 30, 1, "size of message to exchange (default 4096, UD 1024)",
                      "number of exchanges (default 1000)",
                      "path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)"});
    cl.add(number_option("ib-port", 'i', "port", "use port <port> of the device (only 1)", 1, 1,
                         [](long) {}));
    cl.add(number_option("rx-depth", 'r', "dep",
                         "number of receives to post at a time (default 500)", 1, 65536,
                         [&o](long n) {
                             o.rx_depth = uint32_t(n);
                             o.rx_depth_given = true;
                         }));
    cl.add(number_option("sl", 'l', "sl", "service level value", 0, 15,
                         [&o](long n) { o.sl = uint8_t(n); }));
    bool events = false;
    cl.add(flag_option("events", 'e', "accepted; uroce polls", events));
    cl.add(number_option("gid-idx", 'g', "idx",
                         "local port gid index (1 is the first IPv4 address, as on rxe)", 0, 255,
                         [&o](long n) { o.gidx = int(n); }));
    cl.add(flag_option("chk", 'c', "validate received buffer", o.validate));
    cl.add(flag_option("ud", 0, "UD mode, as ibv_ud_pingpong", o.ud));
    cl.add(flag_option("uc", 0, "UC mode, as ibv_uc_pingpong", o.uc));
    cl.add(flag_option("srq", 0, "N RC QPs sharing one SRQ, as ibv_srq_pingpong", o.srq));
    bool num_qp_given = false;
    cl.add(number_option("num-qp", 'q', "num", "with --srq: number of QPs (default 16)", 1,
                         long(oob::pingpong::srq_slots - 1), [&](long n) {
                             o.num_qp = uint32_t(n);
                             num_qp_given = true;
                         }));
    auto unsupported = [](const char *what) {
        return [what](const char *, std::string &err) {
            err = std::string(what) + " is not supported by uroce";
            return false;
        };
    };
    cl.add({"odp", 'o', "", "on-demand paging: not supported", unsupported("ODP")});
    cl.add({"ts", 't', "", "completion timestamps: not supported", unsupported("timestamps")});
    cl.add({"dm", 'j', "", "device memory: not supported", unsupported("device memory")});
    cl.epilogue(apps_epilogue(memory_mb));
    if (int rc = cl.finish(cl.parse(argc, argv)); rc >= 0) return rc;

    o.eal_args = cl.eal_args();
    o.tcp_port = t.tcp_port;
    o.timeout_s = t.timeout_s;
    if (t.size) o.size = uint32_t(*t.size);
    if (t.iters) o.iters = uint32_t(*t.iters);
    if (t.path_mtu) {
        o.path_mtu = *t.path_mtu;
        o.mtu_given = true;
    }
    const auto &pos = cl.positional();
    if (pos.size() > 1) return cl.usage_error("one server address at most, got '" + pos[1] + "'");
    if (pos.size() == 1) o.server = pos[0];
    if (o.stack.ips.empty()) return cl.usage_error("no local address: give --ip ADDR[/LEN]");
    if (o.stack.vdev.empty() && o.stack.port_id < 0)
        return cl.usage_error("no port: give --vdev SPEC or --port-id N");
    /* What ibv_ud_pingpong really uses: rdma-core 44's binary starts with
     * size = 1024 although its usage text says 2048 (objdump of
     * ibverbs-utils 44.0-2; rxe's frames carry 1024 B). The receiver posts
     * size + 40 bytes, so a bigger default here overruns rxe's buffer and it
     * completes the receive with IBV_WC_LOC_QP_OP_ERR. */
    if (o.ud && !t.size) o.size = 1024;
    if (int(o.ud) + int(o.uc) + int(o.srq) > 1)
        return cl.usage_error("--ud, --uc and --srq are different tools: give one");
    if (num_qp_given && !o.srq) return cl.usage_error("-q/--num-qp is for --srq");
    if (o.srq) {
        if (!num_qp_given) o.num_qp = 16;
        /* srq_pingpong.c's own checks */
        if (o.num_qp > o.rx_depth)
            return cl.usage_error("rx_depth " + std::to_string(o.rx_depth) + " is too small for " +
                                  std::to_string(o.num_qp) +
                                  " QPs -- must have at least one receive per QP");
    }
    return -1;
}

class pingpong {
  public:
    pingpong(stack &st, const options &o) : st_(st), o_(o) {}

    int run() {
        if (int rc = setup()) return rc;
        std::vector<oob::pingpong::dest> local(qps_.size());
        for (size_t i = 0; i < qps_.size(); i++) {
            local[i].qpn = qp_num(qps_[i]);
            local[i].psn = uint32_t(lrand48() & 0xffffff);
            if (o_.gidx >= 0) local[i].gid = gid_.raw;
            std::printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", 0,
                        local[i].qpn, local[i].psn, gid_.to_string().c_str());
        }

        const auto timeout = std::chrono::seconds(o_.timeout_s);
        /* The TCP exchange blocks: it runs on a control thread while this
         * thread polls the stack (the peer resolves our MAC meanwhile). */
        control_runner ctl(st_);
        auto connect_on_stack = [&](std::span<const oob::pingpong::dest> rem) {
            return ctl.call_on_stack<std::string>([&] { return connect(local, rem); });
        };
        auto hook = [&](std::span<const oob::pingpong::dest> rem) -> oob::result<void> {
            std::string e = connect_on_stack(rem);
            if (!e.empty()) return oob::make_error(oob::errc::callback, e);
            return {};
        };
        std::vector<oob::pingpong::dest> remote;
        std::string err;
        if (o_.server.empty()) {
            auto listener = oob::tcp_listener::listen("", o_.tcp_port);
            if (!listener) return fail(listener.message());
            err = ctl.run<std::string>([&]() -> std::string {
                /* Wait for a client as long as it takes, in slices, so that SIGINT/SIGTERM end the
                 * wait. */
                oob::result<oob::tcp_socket> sock = oob::make_error(oob::errc::timeout, "");
                while (!(sock = listener->accept(std::chrono::milliseconds(100)))) {
                    if (sock.code() != oob::errc::timeout) return sock.message();
                    if (stop_requested.load()) return "interrupted while waiting for a client";
                }
                /* The server moves its QPs to RTR/RTS before it replies (pp_connect_ctx in
                 * rc_pingpong.c). */
                if (o_.srq) {
                    auto r = oob::pingpong::server_exchange_multi(
                        *sock, local, oob::pingpong::srq_slots, hook, timeout);
                    if (!r) return r.message();
                    remote = *r;
                    return {};
                }
                auto r = oob::pingpong::server_exchange(
                    *sock, local[0],
                    [&](const oob::pingpong::dest &rem) {
                        return hook({&rem, 1});
                    },
                    timeout);
                if (!r) return r.message();
                remote = {*r};
                return {};
            });
        } else {
            if (!st_.wait_link_up(timeout))
                return fail("the port's link did not come up within " +
                            std::to_string(o_.timeout_s) + " s");
            err = ctl.run<std::string>([&]() -> std::string {
                if (o_.srq) {
                    auto r = oob::pingpong::client_exchange_multi(
                        o_.server, o_.tcp_port, local, oob::pingpong::srq_slots, timeout);
                    if (!r) return r.message();
                    remote = *r;
                } else {
                    auto r =
                        oob::pingpong::client_exchange(o_.server, o_.tcp_port, local[0], timeout);
                    if (!r) return r.message();
                    remote = {*r};
                }
                return connect_on_stack(remote);
            });
        }
        if (!err.empty()) return fail(err);
        for (const auto &r : remote)
            std::printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", r.lid,
                        r.qpn, r.psn, gid{r.gid}.to_string().c_str());
        return exchange();
    }

  private:
    int fail(const std::string &msg) {
        std::fprintf(stderr, "uroce-pingpong: %s\n", msg.c_str());
        return 1;
    }

    qp_type type() const { return o_.ud ? qp_type::ud : o_.uc ? qp_type::uc : qp_type::rc; }

    int setup() {
        if (o_.gidx < 0) {
            /* Without -g the stock tool sends no GID and cannot do RoCE; we
             * pick our first IPv4 address's GID (index 1), like rxe's -g 1. */
            gid_ = st_.addrs().gid_count() > 1 ? *st_.addrs().gid_at(1) : *st_.addrs().gid_at(0);
        } else {
            auto g = st_.addrs().gid_at(size_t(o_.gidx));
            if (!g) return fail("no GID at index " + std::to_string(o_.gidx) + " (give --ip)");
            gid_ = *g;
        }
        if (o_.ud && mtu_to_bytes(st_.max_mtu()) < o_.size)
            return fail("requested size " + std::to_string(o_.size) +
                        " is larger than the port MTU " +
                        std::to_string(mtu_to_bytes(st_.max_mtu())));
        if (o_.mtu_given && o_.path_mtu > st_.max_mtu())
            return fail("-m " + std::to_string(mtu_to_bytes(o_.path_mtu)) +
                        " is above what the port carries (" +
                        std::to_string(mtu_to_bytes(st_.max_mtu())) + ")");
        buf_.assign(o_.size + (o_.ud ? grh_len : 0), fill());
        verbs_error err;
        pd_ = alloc_pd(st_.ctx(), &err);
        if (!pd_) return fail(std::string("alloc_pd: ") + verbs_error_str(err));
        mr_ = reg_mr(pd_, buf_.data(), buf_.size(), access_local_write, &err);
        if (!mr_) return fail(std::string("reg_mr: ") + verbs_error_str(err));
        /* srq_pingpong: rx_depth + num_qp entries; the others rx_depth + 1. */
        cq_ = create_cq(st_.ctx(), int(o_.rx_depth + (o_.srq ? o_.num_qp : 1)), nullptr, &err);
        if (!cq_) return fail(std::string("create_cq: ") + verbs_error_str(err));
        if (o_.srq) {
            srq_init_attr sa;
            sa.attr.max_wr = o_.rx_depth;
            sa.attr.max_sge = 1;
            srq_ = create_srq(pd_, sa, &err);
            if (!srq_) return fail(std::string("create_srq: ") + verbs_error_str(err));
        }
        for (uint32_t i = 0; i < o_.num_qp; i++) {
            qp_init_attr ia;
            ia.send_cq = cq_;
            ia.recv_cq = cq_;
            ia.srq = srq_;
            ia.cap.max_send_wr = 1;
            ia.cap.max_recv_wr = o_.rx_depth;
            ia.qp_type = type();
            qp *q = create_qp(pd_, ia, &err);
            if (!q) return fail(std::string("create_qp: ") + verbs_error_str(err));
            qps_.push_back(q);
            /* pp_init_ctx: no remote access; UD gets the tool's Q_Key */
            qp_connect_attr a;
            a.access = 0;
            a.qkey = ud_qkey;
            if (verbs_error e = modify_qp_to_init(q, a); e != verbs_error::ok)
                return fail(std::string("modify QP to INIT: ") + verbs_error_str(e));
        }
        if (o_.validate && !o_.server.empty())
            for (uint32_t i = 0; i < o_.size; i++)
                buf_[payload_offset() + i] = expected_byte(i);
        routs_ = post_recvs(o_.rx_depth);
        if (routs_ < o_.rx_depth)
            return fail("could only post " + std::to_string(routs_) + " receives");
        return 0;
    }

    size_t payload_offset() const { return o_.ud ? grh_len : 0; }

    /* Into the SRQ with --srq, else the one QP's receive queue. */
    uint32_t post_recvs(uint32_t n) {
        sge s{uint64_t(uintptr_t(buf_.data())), uint32_t(buf_.size()), mr_lkey(mr_)};
        recv_wr wr;
        wr.wr_id = recv_wrid;
        wr.sg_list = &s;
        wr.num_sge = 1;
        uint32_t i = 0;
        for (recv_wr *bad; i < n; i++)
            if ((srq_ ? post_srq_recv(srq_, &wr, &bad) : post_recv(qps_[0], &wr, &bad)) !=
                verbs_error::ok)
                break;
        return i;
    }

    /* pp_connect_ctx: resolve the peer's MAC, then RTR and RTS with the
     * tool's attributes, for each QP (srq_pingpong: QP i to the peer's i). */
    std::string connect(std::span<const oob::pingpong::dest> local,
                        std::span<const oob::pingpong::dest> remote) {
        if (remote.size() != qps_.size())
            return "the peer has " + std::to_string(remote.size()) + " QPs, we have " +
                   std::to_string(qps_.size());
        gid rgid{remote[0].gid};
        if (rgid.is_zero())
            return "the peer sent no GID: RoCE needs one (run the stock tool with -g, e.g. -g 1 on "
                   "rxe)";
        if (rgid.is_ipv4_mapped() != gid_.is_ipv4_mapped())
            return "the peer's GID " + rgid.to_string() + " is not in the family of ours (" +
                   gid_.to_string() + ")";
        auto mac = st_.resolve(rgid, std::chrono::seconds(o_.timeout_s));
        if (!mac)
            return "no ARP/ND answer from " + rgid.to_string() + " within " +
                   std::to_string(o_.timeout_s) + " s";
        ah_attr ah;
        /* srq_pingpong addresses every QP with the first address's GID. */
        ah.grh.dgid = rgid;
        ah.grh.sgid_index = uint8_t(st_.addrs().gid_index(gid_));
        /* ibv_rc_pingpong sets hop_limit 1, but for RoCE the kernel replaces
         * it with the route's hop limit (ib_resolve_unicast_gid_dmac), so rxe
         * sends TTL 64: keep the default, 64. */
        ah.sl = o_.sl;
        mac->copy_to(ah.dmac);
        if (o_.ud) {
            verbs_error err;
            ah_ = create_ah(pd_, ah, &err);
            if (!ah_) return std::string("create_ah: ") + verbs_error_str(err);
        }
        for (size_t i = 0; i < qps_.size(); i++) {
            /* pp_connect_ctx's attributes; connect_qp takes what the QP's
             * type takes (UD: the states and PSN; UC: no READ depth, no
             * retries: uc_pingpong moves to RTS with the PSN alone) */
            qp_connect_attr a;
            a.path_mtu = o_.path_mtu;
            a.dest_qp_num = remote[i].qpn;
            a.rq_psn = remote[i].psn;
            a.sq_psn = local[i].psn;
            a.ah_attr = ah;
            a.max_dest_rd_atomic = 1;
            a.min_rnr_timer = 12;
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            a.max_rd_atomic = 1;
            if (verbs_error e = connect_qp(qps_[i], a); e != verbs_error::ok)
                return std::string("modify QP to RTR and RTS: ") + verbs_error_str(e);
        }
        remote_qpn_ = remote[0].qpn;
        return {};
    }

    bool send(size_t qi) {
        sge s{uint64_t(uintptr_t(buf_.data() + payload_offset())), o_.size, mr_lkey(mr_)};
        send_wr wr;
        wr.wr_id = send_wrid;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = wr_opcode::send;
        wr.send_flags = send_signaled;
        if (o_.ud) {
            wr.wr.ud.ah = ah_;
            wr.wr.ud.remote_qpn = remote_qpn_;
            wr.wr.ud.remote_qkey = ud_qkey;
        }
        send_wr *bad;
        return post_send(qps_[qi], &wr, &bad) == verbs_error::ok;
    }

    int exchange() {
        /* Per QP what it still waits for; with --srq the counts are over all
         * QPs together, as in srq_pingpong.c. */
        std::vector<uint64_t> pending(qps_.size(), recv_wrid);
        if (!o_.server.empty())
            for (size_t qi = 0; qi < qps_.size(); qi++) {
                if (!send(qi)) return fail("couldn't post send");
                pending[qi] |= send_wrid;
            }
        uint32_t rcnt = 0, scnt = 0;
        const auto start = std::chrono::steady_clock::now();
        auto last_progress = start;
        const auto silence = std::chrono::seconds(o_.timeout_s);
        const uint32_t refill_at = uint32_t(qps_.size()); /* rc_pingpong: 1; srq: num_qp */
        std::vector<wc> wcs(o_.srq ? o_.rx_depth + o_.num_qp : 2);
        while (rcnt < o_.iters || scnt < o_.iters) {
            if (stop_requested.load(std::memory_order_relaxed)) return fail("interrupted");
            maybe_print_counters(st_);
            st_.poll();
            int ne = poll_cq(cq_, int(wcs.size()), wcs.data());
            if (ne == 0) {
                if (std::chrono::steady_clock::now() - last_progress > silence)
                    return fail("no completion for " + std::to_string(o_.timeout_s) + " s (sent " +
                                std::to_string(scnt) + ", received " + std::to_string(rcnt) +
                                " of " + std::to_string(o_.iters) + "): is the peer still there?");
                continue;
            }
            last_progress = std::chrono::steady_clock::now();
            for (int i = 0; i < ne; i++) {
                const wc &w = wcs[size_t(i)];
                if (w.status != wc_status::success) {
                    std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
                                 wc_status_str(w.status), int(w.status), int(w.wr_id));
                    return 1;
                }
                size_t qi = 0;
                while (qi < qps_.size() && qp_num(qps_[qi]) != w.qp_num)
                    qi++;
                if (qi == qps_.size()) return fail("completion for an unknown QP");
                if (w.wr_id == send_wrid) {
                    ++scnt;
                } else if (w.wr_id == recv_wrid) {
                    if (--routs_ <= refill_at) {
                        routs_ += post_recvs(o_.rx_depth - routs_);
                        if (routs_ < o_.rx_depth)
                            return fail("couldn't post receive (" + std::to_string(routs_) + ")");
                    }
                    ++rcnt;
                    if (o_.validate && o_.server.empty() && !check_buffer(rcnt)) return 1;
                } else {
                    return fail("completion for unknown wr_id " + std::to_string(w.wr_id));
                }
                pending[qi] &= ~w.wr_id;
                if (scnt < o_.iters && !pending[qi]) {
                    if (!send(qi)) return fail("couldn't post send");
                    pending[qi] = recv_wrid | send_wrid;
                }
            }
        }
        const double usec = double(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - start)
                                       .count());
        const long long bytes = (long long)o_.size * o_.iters * 2;
        std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1000000.,
                    bytes * 8. / usec);
        std::printf("%d iters in %.2f seconds = %.2f usec/iter\n", int(o_.iters), usec / 1000000.,
                    usec / o_.iters);
        std::fflush(stdout);
        st_.linger();
        return 0;
    }

    /* -c: the image rc_pingpong's validate_buf puts on the wire, so that
     * either side can be rdma-core's tool: the buffer is filled with 0x7b and
     * the client writes (i / page_size) % sizeof(char), that is 0, at every
     * page start (measured: rxe's first -c message is 00 7b 7b ...;
     * srq_pingpong fills its buffer with 0 instead, so its image is all 0). The
     * server echoes what it received. rdma-core's server checks the page
     * starts once, at the end, and only prints; uroce checks every byte of
     * every message and fails the run. */
    uint8_t expected_byte(uint32_t i) const { return i % page_size_ == 0 ? 0 : fill(); }
    /* What the tool fills its buffer with: 0x7b, srq_pingpong 0. */
    uint8_t fill() const { return o_.srq ? 0 : 0x7b; }
    bool check_buffer(uint32_t iter) {
        for (uint32_t i = 0; i < o_.size; i++)
            if (buf_[payload_offset() + i] != expected_byte(i)) {
                std::fprintf(stderr,
                             "uroce-pingpong: iteration %u: byte %u is 0x%02x, expected 0x%02x\n",
                             iter, i, buf_[payload_offset() + i], expected_byte(i));
                return false;
            }
        return true;
    }

    stack &st_;
    const options &o_;
    gid gid_;
    std::vector<uint8_t> buf_;
    pd *pd_ = nullptr;
    mr *mr_ = nullptr;
    cq *cq_ = nullptr;
    srq *srq_ = nullptr;
    std::vector<qp *> qps_;
    ah *ah_ = nullptr;
    uint32_t routs_ = 0;
    uint32_t remote_qpn_ = 0;
    const uint32_t page_size_ = uint32_t(sysconf(_SC_PAGESIZE));
};

} // namespace
} // namespace uroce::app

int main(int argc, char **argv) {
    using namespace uroce::app;
    options o;
    /* The whole command line first: --help and usage errors before EAL. */
    if (int rc = parse_args(argc, argv, o); rc >= 0) return rc;
    std::string err;
    auto eal = start_eal(o.eal_args, o.stack.shards, memory_mb, err);
    if (!eal) {
        std::fprintf(stderr, "uroce-pingpong: %s\n", err.c_str());
        return exit_failure;
    }
    seed_psn_random();
    auto st = stack::create(o.stack, err);
    if (!st) {
        std::fprintf(stderr, "uroce-pingpong: %s\n", err.c_str());
        return exit_failure;
    }
    int rc = pingpong(*st, o).run();
    st->print_counters(stderr);
    st.reset();
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-cmatose: rdma-core's ucmatose (librdmacm/examples/cmatose.c) and,
 * with --ud, udaddy (udaddy.c) on uroce's rdma_cm (<uroce/cm.h>), so that
 * either side can be the stock tool on Linux rxe or a RoCE NIC.
 *
 * ucmatose (RC, port space TCP, port 7471): the client resolves, routes
 * and connects -c ids at once (responder resources 1, initiator depth 1,
 * retry 5, RNR retry 0), each with -C receives of -S bytes posted first;
 * the server accepts -c requests (what each asked for). Once all are
 * ESTABLISHED the server SENDs -C messages on each connection and waits for
 * their completions, then for -C receives on each; the client waits for
 * its -C receives on each, then SENDs -C replies. The server disconnects
 * every connection; the client answers each DISCONNECTED with its own
 * rdma_disconnect (the DREP).
 *
 * udaddy (--ud: UD, port space UDP, port 7174, SIDR): the client's ids
 * send SIDR_REQs; the server accepts each with its QPN (SIDR_REP), the
 * client's ESTABLISHED carries the server's QPN, Q_Key and path. The
 * client SENDs -C messages WITH_IMM (the immediate: its QPN) on each; the
 * server receives them (each buffer -S + 40 bytes: the GRH first), answers
 * -C on each to the QPN in the immediate, and both count completions.
 *
 * Output, exit status: the stock tools' lines ("cmatose: starting server",
 * ..., "test complete", "return status 0"); 0 success, 1 the test failed,
 * 2 the command line is wrong. Unlike the stock tools, completions are
 * checked (a failed one fails the test) and --timeout bounds each wait.
 */
#include <arpa/inet.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <uroce/cm.h>

#include "uroce_app_options.h"
#include "uroce_app_stack.h"

namespace uroce::app {
namespace {

constexpr unsigned memory_mb = 512;
constexpr size_t grh_size = 40; /* a UD receive's first bytes: the GRH (IBTA 11.4.1.1) */

struct options {
    stack_options stack;
    std::vector<std::string> eal_args;
    bool ud = false;      /* --ud: udaddy */
    std::string dst, src; /* -s, -b */
    int connections = 1;  /* -c */
    int count = 10;       /* -C */
    int size = 100;       /* -S */
    uint16_t port = 0;    /* -p (cmatose), --port; 0: the tool's default */
    rdma_port_space ps = rdma_port_space::tcp;
    bool set_tos = false;
    uint8_t tos = 0;
    uint32_t timeout_s = 0; /* 0: wait for ever, as the stock tools */
    const char *name() const { return ud ? "udaddy" : "cmatose"; }
};

int parse_args(int argc, char **argv, options &o) {
    command_line cl(
        "uroce-cmatose",
        "Usage:\n"
        "  uroce-cmatose [EAL options --] [stack options] [-b addr] [-c n] [-C n] [-S n] [-p "
        "port]\n"
        "  uroce-cmatose [EAL options --] [stack options] -s addr [-b addr] [-c n] [-C n] [-S n]\n"
        "  uroce-cmatose --ud ... (udaddy: UD ids through SIDR)\n\n"
        "rdma-core's ucmatose (and udaddy with --ud) on uroce's rdma_cm: the same options,\n"
        "exchange and output, so the other side can be the stock tool.\n");
    add_stack_options(cl, o.stack);
    cl.section("Options (ucmatose's and udaddy's)");
    std::string ps_name, format;
    long ps_number = -1;
    cl.add(flag_option("ud", 0, "udaddy: UD ids (port space UDP, SIDR), port 7174", o.ud));
    cl.add({"server", 's', "addr", "the server's address: run as the client",
            [&o](const char *v, std::string &) {
                o.dst = v;
                return true;
            }});
    cl.add({"bind", 'b', "addr", "the address to bind to (server) or send from (client)",
            [&o](const char *v, std::string &) {
                o.src = v;
                return true;
            }});
    cl.add(number_option("connections", 'c', "n", "connections (default 1)", 1, 100000,
                         [&o](long n) { o.connections = int(n); }));
    cl.add(number_option("count", 'C', "n", "messages each way on each connection (default 10)", 0,
                         1 << 20, [&o](long n) { o.count = int(n); }));
    cl.add(number_option("size", 'S', "bytes", "message size (default 100)", 0, 1 << 30,
                         [&o](long n) { o.size = int(n); }));
    cl.add({"port", 'p', "n",
            "ucmatose: the port (default 7471); udaddy: the port space (0x111, UDP, its only one)",
            [&ps_number, &o](const char *v, std::string &err) {
                char *end = nullptr;
                const long n = std::strtol(v, &end, 0);
                if (!end || *end || n < 0 || n > 65535) {
                    err = std::string("-p ") + v + ": not a number";
                    return false;
                }
                ps_number = n;
                (void)o;
                return true;
            }});
    cl.add({"port-space", 'P', "ps", "tcp or ib (ucmatose); udp (udaddy)",
            [&ps_name](const char *v, std::string &) {
                ps_name = v;
                return true;
            }});
    cl.add({"format", 'f', "fmt", "address format: ip, ipv6 or name (numeric addresses only)",
            [&format](const char *v, std::string &) {
                format = v;
                return true;
            }});
    cl.add(number_option("tos", 't', "tos", "type of service (the traffic class)", 0, 255,
                         [&o](long n) {
                             o.set_tos = true;
                             o.tos = uint8_t(n);
                         }));
    cl.add({"migrate", 'm', "", "migrate to a new event channel: not supported",
            [](const char *, std::string &err) {
                err = "-m (rdma_migrate_id) is not supported by uroce's rdma_cm";
                return false;
            }});
    cl.add(number_option("timeout", 0, "sec",
                         "give up a wait after this long (default 0: wait for ever, as the tools)",
                         0, 86400, [&o](long n) { o.timeout_s = uint32_t(n); }));
    cl.epilogue(apps_epilogue(memory_mb));
    if (int rc = cl.finish(cl.parse(argc, argv)); rc >= 0) return rc;
    o.eal_args = cl.eal_args();
    if (!cl.positional().empty())
        return cl.usage_error("unexpected argument '" + cl.positional()[0] + "'");
    if (o.ud) {
        o.ps = rdma_port_space::udp;
        o.port = 7174;
        if (ps_number >= 0 && ps_number != int(rdma_port_space::udp))
            return cl.usage_error("-p " + std::to_string(ps_number) +
                                  ": udaddy's port space must be 0x111 (UDP; IPoIB is not here)");
        if (!ps_name.empty() && ps_name.compare(0, 3, "udp") != 0)
            return cl.usage_error("-P " + ps_name + ": only udp");
    } else {
        o.port = ps_number >= 0 ? uint16_t(ps_number) : 7471;
        if (!ps_name.empty() && ps_name.compare(0, 2, "ib") == 0)
            o.ps = rdma_port_space::ib;
        else if (!ps_name.empty() && ps_name.compare(0, 3, "tcp") != 0)
            return cl.usage_error("-P " + ps_name + ": tcp or ib");
    }
    if (!format.empty() && format.compare(0, 3, "gid") == 0)
        return cl.usage_error("-f gid: AF_IB addresses are not supported");
    sockaddr_storage probe;
    if (!o.dst.empty() && !parse_sockaddr(o.dst, 0, probe))
        return cl.usage_error("-s " + o.dst + ": not an IPv4 or IPv6 address");
    if (!o.src.empty() && !parse_sockaddr(o.src, 0, probe))
        return cl.usage_error("-b " + o.src + ": not an IPv4 or IPv6 address");
    if (o.stack.ips.empty()) return cl.usage_error("no local address: give --ip ADDR[/LEN]");
    if (o.stack.vdev.empty() && o.stack.port_id < 0)
        return cl.usage_error("no port: give --vdev SPEC or --port-id N");
    if (!o.size) o.count = 0; /* create_message: no size, no messages */
    return -1;
}

/* cmatest_node: one connection. */
struct node {
    cm_id *id = nullptr;
    bool connected = false;
    pd *pd_ = nullptr;
    cq *send_cq = nullptr, *recv_cq = nullptr; /* one CQ for both in udaddy */
    mr *mr_ = nullptr;
    std::vector<uint8_t> mem;
    /* udaddy */
    ah *ah_ = nullptr;
    ah_attr peer_path; /* the SIDR request's sender (server) */
    uint32_t remote_qpn = 0, remote_qkey = 0;
    int done = 0; /* completions counted by the current wait */
};

class test {
  public:
    test(stack &st, const options &o) : st_(st), o_(o), nodes_(size_t(o.connections)) {}
    ~test() {
        for (node &n : nodes_)
            destroy_node(n);
        if (ch_) destroy_event_channel(ch_);
        if (cm_) close_cm(cm_);
    }

    int run() {
        verbs_error err = verbs_error::ok;
        cm_ = open_cm(st_.eng(), {}, &err);
        if (!cm_) return fail("cannot open the CM", err);
        ch_ = create_event_channel(cm_, &err);
        if (!ch_) return fail("failed to create event channel", err);
        connects_left_ = o_.connections;
        if (!o_.dst.empty())
            for (node &n : nodes_)
                if (verbs_error e = create_id(ch_, &n.id, &n, o_.ps); e != verbs_error::ok)
                    return fail("rdma_create_id", e);
        const int ret = o_.dst.empty() ? run_server() : run_client();
        std::printf("test complete\n");
        std::printf("return status %d\n", ret);
        return ret ? exit_failure : exit_ok;
    }

    void print_counters(FILE *f) const {
        st_.print_counters(f);
        if (cm_) cm_print_counters(cm_, f);
    }

  private:
    int fail(const char *what, verbs_error e) {
        std::printf("%s: %s: %s\n", o_.name(), what, verbs_error_str(e));
        return -1;
    }

    /* One turn of the loop: the stack (and with it the CM), then the CM's
     * events. */
    void turn() {
        st_.poll();
        maybe_print_counters(st_);
        cm_event *ev = nullptr;
        while (get_event(ch_, &ev) == verbs_error::ok) {
            const int r = handle(*ev);
            ack_event(ev);
            if (r && !ret_) ret_ = r;
        }
    }

    /* Turns until done() (true), or an error / the timeout / a signal. */
    bool wait(const std::function<bool()> &done, const char *what) {
        const auto start = std::chrono::steady_clock::now();
        while (!done()) {
            if (stop_requested.load()) {
                std::printf("%s: interrupted while %s\n", o_.name(), what);
                return false;
            }
            if (o_.timeout_s &&
                std::chrono::steady_clock::now() - start > std::chrono::seconds(o_.timeout_s)) {
                std::printf("%s: no end to %s after %u s\n", o_.name(), what, o_.timeout_s);
                return false;
            }
            turn();
        }
        return true;
    }

    bool init_node(node &n) {
        verbs_error e = verbs_error::ok;
        n.pd_ = alloc_pd(n.id->verbs, &e);
        if (!n.pd_) return fail("unable to allocate PD", e), false;
        const int cqe = o_.count ? o_.count * (o_.ud ? 2 : 1) : (o_.ud ? 2 : 1);
        n.send_cq = create_cq(n.id->verbs, cqe, &n, &e);
        n.recv_cq = o_.ud ? n.send_cq : create_cq(n.id->verbs, cqe, &n, &e);
        if (!n.send_cq || !n.recv_cq) return fail("unable to create CQ", e), false;
        qp_init_attr ia;
        ia.cap.max_send_wr = uint32_t(o_.count ? o_.count : 1);
        ia.cap.max_recv_wr = uint32_t(o_.count ? o_.count : 1);
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        ia.qp_context = &n;
        ia.sq_sig_all = o_.ud ? 0 : 1;
        ia.send_cq = n.send_cq;
        ia.recv_cq = n.recv_cq;
        if ((e = create_qp(n.id, n.pd_, &ia)) != verbs_error::ok)
            return fail("unable to create QP", e), false;
        if (!o_.count) return true;
        n.mem.assign(size_t(o_.size) + (o_.ud ? grh_size : 0), 0);
        n.mr_ = reg_mr(n.pd_, n.mem.data(), n.mem.size(), access_local_write, &e);
        if (!n.mr_) return fail("failed to reg MR", e), false;
        return true;
    }

    /* udaddy's verify_test_params: a datagram fits in the MTU. */
    bool fits_mtu(const node &n) const {
        device_attr da;
        query_device(n.id->verbs, &da);
        if (!o_.ud || !o_.count || uint32_t(o_.size) <= mtu_to_bytes(da.max_mtu)) return true;
        std::printf("udaddy: message_size %d is larger than active mtu %u\n", o_.size,
                    mtu_to_bytes(da.max_mtu));
        return false;
    }

    bool post_recvs(node &n) {
        for (int i = 0; i < o_.count; i++) {
            sge s{uint64_t(uintptr_t(n.mem.data())), uint32_t(n.mem.size()), mr_lkey(n.mr_)};
            recv_wr wr;
            wr.wr_id = uint64_t(uintptr_t(&n));
            wr.sg_list = &s;
            wr.num_sge = 1;
            recv_wr *bad;
            if (post_recv(n.id->qp, &wr, &bad) != verbs_error::ok) {
                std::printf("failed to post receives: %d\n", -1);
                return false;
            }
        }
        return true;
    }

    bool post_sends(node &n, bool signaled) {
        if (!n.connected || !o_.count) return true;
        for (int i = 0; i < o_.count; i++) {
            sge s{uint64_t(uintptr_t(n.mem.data())), uint32_t(o_.size), mr_lkey(n.mr_)};
            send_wr wr;
            wr.wr_id = uint64_t(uintptr_t(&n));
            wr.sg_list = &s;
            wr.num_sge = 1;
            if (o_.ud) {
                wr.opcode = wr_opcode::send_with_imm;
                wr.imm_data = htonl(qp_num(n.id->qp));
                wr.wr.ud.ah = n.ah_;
                wr.wr.ud.remote_qpn = n.remote_qpn;
                wr.wr.ud.remote_qkey = n.remote_qkey;
            } else {
                wr.opcode = wr_opcode::send;
            }
            wr.send_flags = signaled ? unsigned(send_signaled) : 0u;
            send_wr *bad;
            if (post_send(n.id->qp, &wr, &bad) != verbs_error::ok) {
                std::printf("failed to post sends: %d\n", -1);
                return false;
            }
        }
        return true;
    }

    /* poll_cqs: count completions on each connected node until -C; a failed
     * one fails the test (the stock tools only count). udaddy's server
     * learns where to answer from its first receive (create_reply_ah). */
    bool poll_cqs(bool recv, const char *what) {
        for (node &n : nodes_)
            n.done = 0;
        bool bad = false;
        const bool ok = wait(
            [&] {
                bool all = true;
                for (node &n : nodes_) {
                    if (!n.connected || n.done >= o_.count) continue;
                    wc w[8];
                    const int got = poll_cq(recv ? n.recv_cq : n.send_cq, 8, w);
                    for (int i = 0; i < got; i++) {
                        if (w[i].status != wc_status::success) {
                            std::printf("%s: completion failed: %s\n", o_.name(),
                                        wc_status_str(w[i].status));
                            bad = true;
                        } else if (o_.ud && !n.ah_ && w[i].opcode == wc_opcode::recv) {
                            create_reply_ah(n, w[i]);
                        }
                    }
                    n.done += got;
                    all &= n.done >= o_.count;
                }
                return all || bad;
            },
            what);
        return ok && !bad;
    }

    void create_reply_ah(node &n, const wc &w) {
        n.remote_qpn = ntohl(w.imm_data);
        n.remote_qkey = rdma_udp_qkey; /* our QP's own Q_Key, as udaddy queries it */
        n.ah_ = create_ah(n.pd_, n.peer_path);
    }

    void connect_error() { connects_left_--; }

    node *node_of(const cm_id *id) {
        for (node &n : nodes_)
            if (n.id == id) return &n;
        return nullptr;
    }

    /* cma_handler */
    int handle(const cm_event &e) {
        node *n = node_of(e.id);
        switch (e.event) {
        case cm_event_type::addr_resolved:
            if (o_.set_tos) e.id->route.traffic_class = o_.tos;
            if (verbs_error r = resolve_route(e.id, 2000); r != verbs_error::ok) {
                std::printf("%s: resolve route failed: %s\n", o_.name(), verbs_error_str(r));
                connect_error();
                return -1;
            }
            return 0;
        case cm_event_type::route_resolved:
            return n ? route_handler(*n) : 0;
        case cm_event_type::connect_request:
            return connect_handler(e);
        case cm_event_type::established:
            if (!n) return 0;
            if (o_.ud) return resolved_handler(*n, e);
            n->connected = true;
            connects_left_--;
            disconnects_left_++;
            return 0;
        case cm_event_type::addr_error:
        case cm_event_type::route_error:
        case cm_event_type::connect_error:
        case cm_event_type::unreachable:
        case cm_event_type::rejected:
            std::printf("%s: event: %s, error: %d\n", o_.name(), cm_event_str(e.event), e.status);
            connect_error();
            return e.status ? e.status : -1;
        case cm_event_type::disconnected:
            (void)disconnect(e.id);
            disconnects_left_--;
            return 0;
        default:
            return 0;
        }
    }

    int route_handler(node &n) {
        if (!fits_mtu(n) || !init_node(n) || !post_recvs(n)) {
            connect_error();
            return -1;
        }
        cm_conn_param p;
        if (!o_.ud) {
            p.responder_resources = 1;
            p.initiator_depth = 1;
            p.retry_count = 5;
            p.rnr_retry_count = 0;
        }
        if (verbs_error e = connect(n.id, &p); e != verbs_error::ok) {
            std::printf("%s: failure connecting: %s\n", o_.name(), verbs_error_str(e));
            connect_error();
            return -1;
        }
        return 0;
    }

    int connect_handler(const cm_event &e) {
        if (conn_index_ == o_.connections) {
            std::printf("%s: failing connection request\n", o_.name());
            (void)reject(e.id, nullptr, 0);
            destroy_id(e.id);
            return -1;
        }
        node &n = nodes_[size_t(conn_index_++)];
        n.id = e.id;
        e.id->context = &n;
        if (o_.ud) n.peer_path = e.ud.ah_attr;
        cm_conn_param p;
        if (o_.ud) {
            p.qp_num = 0; /* set below, once the QP exists */
        } else {
            /* rdma_accept(id, NULL): what the request asked for */
            p.responder_resources = e.conn.responder_resources;
            p.initiator_depth = e.conn.initiator_depth;
        }
        if (!fits_mtu(n) || !init_node(n) || !post_recvs(n)) {
            connect_error();
            std::printf("%s: failing connection request\n", o_.name());
            (void)reject(e.id, nullptr, 0);
            return -1;
        }
        if (o_.ud) p.qp_num = qp_num(n.id->qp);
        if (verbs_error r = accept(n.id, &p); r != verbs_error::ok) {
            std::printf("%s: failure accepting: %s\n", o_.name(), verbs_error_str(r));
            connect_error();
            (void)reject(e.id, nullptr, 0);
            return -1;
        }
        if (o_.ud) {
            n.connected = true;
            connects_left_--;
        }
        return 0;
    }

    int resolved_handler(node &n, const cm_event &e) {
        n.remote_qpn = e.ud.qp_num;
        n.remote_qkey = e.ud.qkey;
        n.ah_ = create_ah(n.pd_, e.ud.ah_attr);
        if (!n.ah_) {
            std::printf("udaddy: failure creating address handle\n");
            connect_error();
            return -1;
        }
        n.connected = true;
        connects_left_--;
        return 0;
    }

    bool connect_events() {
        return wait([&] { return connects_left_ <= 0 || ret_; }, "connecting") && !ret_;
    }

    bool disconnect_events() {
        return wait([&] { return disconnects_left_ <= 0 || ret_; }, "disconnecting") && !ret_;
    }

    int run_server() {
        std::printf("%s: starting server\n", o_.name());
        cm_id *listen_id = nullptr;
        if (verbs_error e = create_id(ch_, &listen_id, this, o_.ps); e != verbs_error::ok)
            return fail("listen request failed", e);
        sockaddr_storage sin;
        parse_sockaddr(o_.src.empty() ? "0.0.0.0" : o_.src, o_.port, sin);
        int ret = 0;
        if (verbs_error e = bind_addr(listen_id, reinterpret_cast<sockaddr *>(&sin));
            e != verbs_error::ok) {
            ret = fail("bind address failed", e);
        } else if (verbs_error e2 = listen(listen_id, 0); e2 != verbs_error::ok) {
            ret = fail("failure trying to listen", e2);
        } else {
            ret = o_.ud ? serve_ud() : serve_rc();
        }
        destroy_id(listen_id);
        settle();
        return ret;
    }

    int serve_rc() {
        if (!connect_events()) return ret_ ? ret_ : -1;
        if (o_.count) {
            std::printf("initiating data transfers\n");
            for (node &n : nodes_)
                if (!post_sends(n, true)) return -1;
            std::printf("completing sends\n");
            if (!poll_cqs(false, "completing sends")) return -1;
            std::printf("receiving data transfers\n");
            if (!poll_cqs(true, "receiving data transfers")) return -1;
            std::printf("data transfers complete\n");
        }
        std::printf("cmatose: disconnecting\n");
        for (node &n : nodes_) {
            if (!n.connected) continue;
            n.connected = false;
            (void)disconnect(n.id);
        }
        const bool ok = disconnect_events();
        std::printf("disconnected\n");
        return ok ? 0 : (ret_ ? ret_ : -1);
    }

    int serve_ud() {
        /* udaddy's server goes on whatever connect_events gave it */
        (void)connect_events();
        if (o_.count) {
            std::printf("receiving data transfers\n");
            if (!poll_cqs(true, "receiving data transfers")) return -1;
            std::printf("sending replies\n");
            for (node &n : nodes_)
                if (!post_sends(n, true)) return -1;
            if (!poll_cqs(false, "sending replies")) return -1;
            std::printf("data transfers complete\n");
        }
        return 0;
    }

    int run_client() {
        std::printf("%s: starting client\n", o_.name());
        sockaddr_storage dst, src;
        parse_sockaddr(o_.dst, o_.port, dst);
        const bool have_src = !o_.src.empty() && parse_sockaddr(o_.src, 0, src);
        if (!st_.wait_link_up(std::chrono::seconds(10))) {
            std::printf("%s: the port's link is down\n", o_.name());
            return -1;
        }
        std::printf("%s: connecting\n", o_.name());
        for (node &n : nodes_)
            if (verbs_error e =
                    resolve_addr(n.id, have_src ? reinterpret_cast<sockaddr *>(&src) : nullptr,
                                 reinterpret_cast<sockaddr *>(&dst), 2000);
                e != verbs_error::ok) {
                connect_error();
                return fail("failure getting addr", e);
            }
        int ret = 0;
        if (!connect_events()) {
            ret = ret_ ? ret_ : -1;
        } else if (o_.count && o_.ud) {
            std::printf("initiating data transfers\n");
            for (node &n : nodes_)
                if (!post_sends(n, false)) ret = -1;
            std::printf("receiving data transfers\n");
            if (!ret && !poll_cqs(true, "receiving data transfers")) ret = -1;
            if (!ret) std::printf("data transfers complete\n");
        } else if (o_.count) {
            std::printf("receiving data transfers\n");
            if (!poll_cqs(true, "receiving data transfers")) {
                ret = -1;
            } else {
                std::printf("sending replies\n");
                for (node &n : nodes_)
                    if (!post_sends(n, true)) ret = -1;
                if (!ret) std::printf("data transfers complete\n");
            }
        }
        if (!o_.ud && !disconnect_events() && !ret) ret = ret_ ? ret_ : -1;
        settle();
        return ret;
    }

    /* The peer's last ACKs, DREPs and retries find live QPs before the
     * stack goes. */
    void settle() {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < until)
            turn();
    }

    void destroy_node(node &n) {
        if (!n.id) return;
        if (n.ah_) destroy_ah(n.ah_);
        if (n.id->qp) destroy_qp(n.id);
        if (n.send_cq) destroy_cq(n.send_cq);
        if (n.recv_cq && n.recv_cq != n.send_cq) destroy_cq(n.recv_cq);
        if (n.mr_) dereg_mr(n.mr_);
        if (n.pd_) dealloc_pd(n.pd_);
        destroy_id(n.id);
        n = node{};
    }

    stack &st_;
    const options &o_;
    cm_service *cm_ = nullptr;
    cm_event_channel *ch_ = nullptr;
    std::vector<node> nodes_;
    int conn_index_ = 0, connects_left_ = 0, disconnects_left_ = 0;
    int ret_ = 0; /* the first error an event handler returned */
};

} // namespace
} // namespace uroce::app

int main(int argc, char **argv) {
    using namespace uroce::app;
    options o;
    if (int rc = parse_args(argc, argv, o); rc >= 0) return rc;
    std::setvbuf(stdout, nullptr, _IOLBF, 0); /* progress lines reach a log as they happen */
    std::string err;
    auto eal = start_eal(o.eal_args, o.stack.shards, memory_mb, err);
    if (!eal) {
        std::fprintf(stderr, "uroce-cmatose: %s\n", err.c_str());
        return exit_failure;
    }
    seed_psn_random();
    auto st = stack::create(o.stack, err);
    if (!st) {
        std::fprintf(stderr, "uroce-cmatose: %s\n", err.c_str());
        return exit_failure;
    }
    int rc;
    {
        test t(*st, o);
        rc = t.run();
        std::fflush(stdout);
        if (rc != exit_ok) t.print_counters(stderr);
    }
    st.reset();
    return rc;
}

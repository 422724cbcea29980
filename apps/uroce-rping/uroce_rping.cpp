/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-rping: rdma-core's rping (librdmacm/examples/rping.c) on uroce's
 * rdma_cm (<uroce/cm.h>), so that either side can be the stock tool on
 * Linux rxe or a RoCE NIC.
 *
 * The protocol, as rping runs it over one RC connection to port 7174:
 *   client SENDs its source buffer's {addr, rkey, len}   (struct
 *          rping_rdma_info: be64 buf, be32 rkey, be32 size: 16 bytes)
 *   server RDMA READs len bytes of it into its own buffer, then SENDs a
 *          16-byte "go ahead" (its send buffer, never filled: zeros)
 *   client SENDs its sink buffer's {addr, rkey, len}
 *   server RDMA WRITEs strlen(data) + 1 bytes into it, then SENDs "go ahead"
 *   client checks the sink against the source (-V), prints it (-v): repeat.
 * Each ping's data is "rdma-ping-<n>: " followed by letters 'A'..'z' from a
 * start that moves by one per ping, NUL-terminated at size - 1. The
 * connection asks for responder resources 1, initiator depth 1, retry 7,
 * RNR retry 7; the QP has 16 send and 2 receive slots, the CQ 32.
 *
 *   uroce-rping [EAL options --] --vdev SPEC --ip ADDR -s [-vVd] [-S size] [-C count] [-a addr] [-p
 * port] uroce-rping [EAL options --] --vdev SPEC --ip ADDR -c [-vVd] [-S size] [-C count] -a addr
 * [-p port]
 *
 * Exit status: 0 success; 1 the run failed; 2 the command line is wrong;
 * 255 a CM error event (REJECTED, UNREACHABLE, ...), as rping's exit(-1).
 */
#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <uroce/cm.h>

#include "uroce_app_options.h"
#include "uroce_app_stack.h"

namespace uroce::app {
namespace {

constexpr uint16_t rping_port = 7174;
constexpr int rping_bufsize = 64 * 1024;
/* RPING_MIN_BUFSIZE: sizeof(stringify(INT_MAX)) + sizeof("rdma-ping-%d: ").
 * rping.c does not include <limits.h>, so INT_MAX stays a word:
 * sizeof("INT_MAX") + 15 = 23, as Debian's rping says ("valid range is 23
 * to 65536"; it refuses 65536 itself: at most RPING_BUFSIZE - 1). */
constexpr int rping_min_bufsize = 8 + 15;
constexpr int rping_sq_depth = 16;
constexpr int exit_cm_event = 255; /* rping's exit(-1) from its CM thread */
constexpr unsigned memory_mb = 512;

/* struct rping_rdma_info on the wire. */
struct rdma_info {
    std::array<uint8_t, 16> raw{};
    void set(uint64_t addr, uint32_t rkey, uint32_t size) {
        for (int i = 0; i < 8; i++)
            raw[size_t(i)] = uint8_t(addr >> (56 - 8 * i));
        for (int i = 0; i < 4; i++) {
            raw[size_t(8 + i)] = uint8_t(rkey >> (24 - 8 * i));
            raw[size_t(12 + i)] = uint8_t(size >> (24 - 8 * i));
        }
    }
    uint64_t addr() const {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | raw[size_t(i)];
        return v;
    }
    uint32_t u32(size_t off) const {
        return uint32_t(raw[off]) << 24 | uint32_t(raw[off + 1]) << 16 |
               uint32_t(raw[off + 2]) << 8 | raw[off + 3];
    }
    uint32_t rkey() const { return u32(8); }
    uint32_t size() const { return u32(12); }
};

struct options {
    stack_options stack;
    std::vector<std::string> eal_args;
    int server = -1; /* -s 1, -c 0 */
    std::string addr, source;
    uint16_t port = rping_port;
    int count = 0; /* 0: for ever */
    int size = 64;
    bool verbose = false, validate = false, debug = false, persistent = false;
    bool self_qp = false;   /* -q */
    uint32_t timeout_s = 0; /* 0: wait as long as it takes, as rping */
};

int parse_args(int argc, char **argv, options &o) {
    command_line cl("uroce-rping",
                    "Usage:\n"
                    "  uroce-rping [EAL options --] [stack options] -s [-vVd] [-S size] [-C count] "
                    "[-a addr] [-p port]\n"
                    "  uroce-rping [EAL options --] [stack options] -c [-vVd] [-S size] [-C count] "
                    "[-I addr] -a addr [-p port]\n\n"
                    "rdma-core's rping on uroce's rdma_cm: the same options, protocol and output,\n"
                    "so the other side can be the stock tool.\n");
    add_stack_options(cl, o.stack);
    cl.section("Options (rping's)");
    bool server = false, client = false;
    cl.add(flag_option("client", 'c', "client side", client));
    cl.add(flag_option("server", 's', "server side", server));
    cl.add({"addr", 'a', "addr", "address (the server's; a server binds to it, default any)",
            [&o](const char *v, std::string &) {
                o.addr = v;
                return true;
            }});
    cl.add({"source", 'I', "addr", "source address to bind to for client",
            [&o](const char *v, std::string &) {
                o.source = v;
                return true;
            }});
    cl.add(number_option("port", 'p', "port", "port (default 7174)", 0, 65535,
                         [&o](long n) { o.port = uint16_t(n); }));
    cl.add(number_option("count", 'C', "count", "ping count times (default 0: for ever)", 0,
                         2147483647L, [&o](long n) { o.count = int(n); }));
    cl.add({"size", 'S', "size",
            "ping data size (" + std::to_string(rping_min_bufsize) + " to " +
                std::to_string(rping_bufsize - 1) + ", default 64)",
            [&o](const char *v, std::string &err) {
                long n;
                if (!parse_number(v, 0, 1L << 31, n) || n < rping_min_bufsize ||
                    n > rping_bufsize - 1) {
                    /* rping's words, and its off-by-one bound */
                    err = "Invalid size " + std::string(v) + " (valid range is " +
                          std::to_string(rping_min_bufsize) + " to " +
                          std::to_string(rping_bufsize) + ")";
                    return false;
                }
                o.size = int(n);
                return true;
            }});
    cl.add(flag_option("verbose", 'v', "display ping data to stdout", o.verbose));
    cl.add(flag_option("validate", 'V', "validate ping data", o.validate));
    cl.add(flag_option("debug", 'd', "debug printfs", o.debug));
    cl.add(flag_option("persistent", 'P', "persistent server mode allowing multiple connections",
                       o.persistent));
    cl.add(flag_option("self-qp", 'q', "use self-created, self-modified QP", o.self_qp));
    cl.add(number_option("timeout", 0, "sec",
                         "give up after this long without progress (default 0: wait for ever, "
                         "as rping)",
                         0, 86400, [&o](long n) { o.timeout_s = uint32_t(n); }));
    cl.epilogue(apps_epilogue(memory_mb));
    if (int rc = cl.finish(cl.parse(argc, argv)); rc >= 0) return rc;
    o.eal_args = cl.eal_args();
    if (!cl.positional().empty())
        return cl.usage_error("unexpected argument '" + cl.positional()[0] + "'");
    if (server == client) return cl.usage_error("give one of -s (server) and -c (client)");
    o.server = server ? 1 : 0;
    if (client && o.addr.empty()) return cl.usage_error("the client needs the server's -a addr");
    sockaddr_storage probe;
    if (!o.addr.empty() && !parse_sockaddr(o.addr, 0, probe))
        return cl.usage_error("-a " + o.addr + ": not an IPv4 or IPv6 address");
    if (!o.source.empty() && !parse_sockaddr(o.source, 0, probe))
        return cl.usage_error("-I " + o.source + ": not an IPv4 or IPv6 address");
    if (o.persistent && !server) return cl.usage_error("-P is for the server (-s)");
    if (o.stack.ips.empty()) return cl.usage_error("no local address: give --ip ADDR[/LEN]");
    if (o.stack.vdev.empty() && o.stack.port_id < 0)
        return cl.usage_error("no port: give --vdev SPEC or --port-id N");
    return -1;
}

#define DEBUG_LOG(...)                                                                             \
    do {                                                                                           \
        if (o_.debug) std::printf(__VA_ARGS__);                                                    \
    } while (0)

/* rping's test_state: where one connection's ping loop is. */
enum class state {
    idle,
    connected,
    rdma_read_adv,
    rdma_read_complete,
    rdma_write_adv,
    rdma_write_complete,
    disconnected,
    error
};

constexpr uint64_t wr_send = 1, wr_rdma = 2, wr_recv = 3;

/* One connection: rping's struct rping_cb without the threads. Everything
 * runs in the stack's thread: CQ completions drive the ping loop. */
class connection {
  public:
    connection(const options &o, cm_id *id, bool server) : o_(o), id_(id), server_(server) {}
    ~connection() { release(); }

    cm_id *id() const { return id_; }
    state st() const { return state_; }
    bool finished() const {
        return state_ == state::disconnected || state_ == state::error || done_;
    }
    bool failed() const { return state_ == state::error; }
    int pings() const { return ping_; }

    /* rping_setup_qp + rping_setup_buffers + the first receive. */
    bool setup() {
        verbs_error err = verbs_error::ok;
        pd_ = alloc_pd(id_->verbs, &err);
        if (!pd_) return fail(std::string("ibv_alloc_pd failed: ") + verbs_error_str(err));
        cq_ = create_cq(id_->verbs, rping_sq_depth * 2, this, &err);
        if (!cq_) return fail(std::string("ibv_create_cq failed: ") + verbs_error_str(err));
        qp_init_attr ia;
        ia.cap.max_send_wr = rping_sq_depth;
        ia.cap.max_recv_wr = 2;
        ia.cap.max_recv_sge = 1;
        ia.cap.max_send_sge = 1;
        ia.qp_type = qp_type::rc;
        ia.send_cq = cq_;
        ia.recv_cq = cq_;
        if (o_.self_qp) {
            /* rping_create_qp -q: ibv_create_qp, INIT with remote READ and
             * WRITE; the rest from rdma_init_qp_attr (self_modify_qp) */
            own_qp_ = uroce::create_qp(pd_, ia, &err);
            if (!own_qp_) return fail(std::string("ibv_create_qp: ") + verbs_error_str(err));
            qp_connect_attr a;
            a.access = access_remote_read | access_remote_write;
            if (verbs_error e = modify_qp_to_init(own_qp_, a); e != verbs_error::ok)
                return fail(std::string("ibv_modify_qp: ") + verbs_error_str(e));
            qp_ = own_qp_;
        } else if (verbs_error e = create_qp(id_, pd_, &ia); e != verbs_error::ok) {
            return fail(std::string("rdma_create_qp: ") + verbs_error_str(e));
        } else {
            qp_ = id_->qp;
        }
        DEBUG_LOG("created pd %p\ncreated cq %p\ncreated qp %p\n", static_cast<void *>(pd_),
                  static_cast<void *>(cq_), static_cast<void *>(qp_));
        rdma_buf_.assign(size_t(o_.size), 0);
        recv_mr_ = reg_mr(pd_, recv_buf_.raw.data(), recv_buf_.raw.size(), access_local_write);
        send_mr_ = reg_mr(pd_, send_buf_.raw.data(), send_buf_.raw.size(), 0);
        const unsigned rdma_access = access_local_write | access_remote_read | access_remote_write;
        rdma_mr_ = reg_mr(pd_, rdma_buf_.data(), rdma_buf_.size(), rdma_access);
        if (!recv_mr_ || !send_mr_ || !rdma_mr_) return fail("reg_mr failed");
        if (!server_) {
            start_buf_.assign(size_t(o_.size), 0);
            start_mr_ = reg_mr(pd_, start_buf_.data(), start_buf_.size(), rdma_access);
            if (!start_mr_) return fail("start_buf reg_mr failed");
        }
        DEBUG_LOG("allocated & registered buffers...\n");
        if (!post_recv_info()) return fail("ibv_post_recv failed");
        return true;
    }

    /* CONNECT_REQUEST's answer (rdma_accept(child, NULL): librdmacm then
     * offers what the request asked for). */
    bool accept(const cm_event &req) {
        DEBUG_LOG("accepting client connection request\n");
        cm_conn_param p;
        p.responder_resources = req.conn.responder_resources;
        p.initiator_depth = req.conn.initiator_depth;
        if (o_.self_qp) { /* rping_self_modify_qp, then the QPN in the REP */
            if (!self_modify_qp()) return false;
            p.qp_num = qp_num(qp_);
        }
        if (verbs_error e = uroce::accept(id_, &p); e != verbs_error::ok)
            return fail(std::string("rdma_accept: ") + verbs_error_str(e));
        return true;
    }

    /* rping_connect_client. */
    bool connect() {
        cm_conn_param p;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        if (o_.self_qp) p.qp_num = qp_num(qp_);
        if (verbs_error e = uroce::connect(id_, &p); e != verbs_error::ok)
            return fail(std::string("rdma_connect: ") + verbs_error_str(e));
        return true;
    }

    /* -q, CONNECT_RESPONSE: our QP through INIT, RTR, RTS from
     * rdma_init_qp_attr, then rdma_establish (the RTU); rping then goes on
     * as on ESTABLISHED. */
    bool connect_response() {
        DEBUG_LOG("CONNECT_RESPONSE\n");
        if (!self_modify_qp()) return false;
        if (verbs_error e = uroce::establish(id_); e != verbs_error::ok)
            return fail(std::string("rdma_establish: ") + verbs_error_str(e));
        established();
        return true;
    }

    void established() {
        DEBUG_LOG("ESTABLISHED\n");
        if (server_) return; /* the server wakes up on the first receive */
        state_ = state::connected;
        DEBUG_LOG("rdma_connect successful\n");
        next_ping();
    }

    void disconnected() {
        std::fprintf(stderr, "%s DISCONNECT EVENT...\n", server_ ? "server" : "client");
        if (state_ != state::error) state_ = state::disconnected;
    }

    /* rping_disconnect: DREQ, the QP to ERR (its receives flush). */
    void disconnect() {
        if (disconnect_sent_) return;
        disconnect_sent_ = true;
        (void)uroce::disconnect(id_);
    }

    /* rping_cq_event_handler: every completion there is. false on error. */
    bool poll() {
        wc w[rping_sq_depth];
        int n = poll_cq(cq_, rping_sq_depth, w);
        for (int i = 0; i < n; i++) {
            if (w[i].status != wc_status::success) {
                if (w[i].status == wc_status::wr_flush_err) continue; /* rping: flushed */
                std::fprintf(stderr, "cq completion failed status %d\n", int(w[i].status));
                state_ = state::error;
                return false;
            }
            progress_ = true;
            switch (w[i].opcode) {
            case wc_opcode::send:
                DEBUG_LOG("send completion\n");
                break;
            case wc_opcode::rdma_write:
                DEBUG_LOG("rdma write completion\n");
                state_ = state::rdma_write_complete;
                if (!server_step()) return false;
                break;
            case wc_opcode::rdma_read:
                DEBUG_LOG("rdma read completion\n");
                state_ = state::rdma_read_complete;
                if (!server_step()) return false;
                break;
            case wc_opcode::recv:
                DEBUG_LOG("recv completion\n");
                if (!(server_ ? server_recv(w[i]) : client_recv(w[i]))) {
                    std::fprintf(stderr, "recv wc error: %d\n", -1);
                    state_ = state::error;
                    return false;
                }
                if (!post_recv_info()) {
                    std::fprintf(stderr, "post recv error: %d\n", -1);
                    state_ = state::error;
                    return false;
                }
                if (!(server_ ? server_step() : client_step())) return false;
                break;
            default:
                DEBUG_LOG("unknown!!!!! completion\n");
                state_ = state::error;
                return false;
            }
        }
        return true;
    }

    /* Whether anything completed since the last call (for --timeout). */
    bool take_progress() { return std::exchange(progress_, false); }

  private:
    /* rping_self_modify_qp */
    bool self_modify_qp() {
        for (qp_state s : {qp_state::init, qp_state::rtr, qp_state::rts}) {
            qp_attr at;
            at.qp_state = s;
            unsigned mask = 0;
            verbs_error e = init_qp_attr(id_, &at, &mask);
            if (e == verbs_error::ok) e = modify_qp(qp_, at, mask);
            if (e != verbs_error::ok)
                return fail(std::string("rdma_init_qp_attr / ibv_modify_qp: ") +
                            verbs_error_str(e));
        }
        return true;
    }

    bool fail(const std::string &msg) {
        std::fprintf(stderr, "%s\n", msg.c_str());
        state_ = state::error;
        return false;
    }

    bool post_recv_info() {
        sge s{uint64_t(uintptr_t(recv_buf_.raw.data())), uint32_t(recv_buf_.raw.size()),
              mr_lkey(recv_mr_)};
        recv_wr wr;
        wr.wr_id = wr_recv;
        wr.sg_list = &s;
        wr.num_sge = 1;
        recv_wr *bad;
        return post_recv(qp_, &wr, &bad) == verbs_error::ok;
    }

    bool post_send_info() {
        sge s{uint64_t(uintptr_t(send_buf_.raw.data())), uint32_t(send_buf_.raw.size()),
              mr_lkey(send_mr_)};
        send_wr wr;
        wr.wr_id = wr_send;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = wr_opcode::send;
        wr.send_flags = send_signaled;
        send_wr *bad;
        if (post_send(qp_, &wr, &bad) == verbs_error::ok) return true;
        std::fprintf(stderr, "post send error %d\n", -1);
        state_ = state::error;
        return false;
    }

    bool post_rdma(wr_opcode op, uint32_t len) {
        sge s{uint64_t(uintptr_t(rdma_buf_.data())), len, mr_lkey(rdma_mr_)};
        send_wr wr;
        wr.wr_id = wr_rdma;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = send_signaled;
        wr.wr.rdma.remote_addr = remote_addr_;
        wr.wr.rdma.rkey = remote_rkey_;
        send_wr *bad;
        if (post_send(qp_, &wr, &bad) == verbs_error::ok) return true;
        std::fprintf(stderr, "post send error %d\n", -1);
        state_ = state::error;
        return false;
    }

    /* rping_format_send: the buffer the peer may READ or WRITE. */
    void format_send(const std::vector<char> &buf, mr *m) {
        send_buf_.set(uint64_t(uintptr_t(buf.data())), mr_rkey(m), uint32_t(o_.size));
        DEBUG_LOG("RDMA addr %" PRIx64 " rkey %x len %d\n", send_buf_.addr(), send_buf_.rkey(),
                  int(send_buf_.size()));
    }

    bool server_recv(const wc &w) {
        if (w.byte_len != recv_buf_.raw.size()) {
            std::fprintf(stderr, "Received bogus data, size %u\n", w.byte_len);
            return false;
        }
        remote_rkey_ = recv_buf_.rkey();
        remote_addr_ = recv_buf_.addr();
        remote_len_ = recv_buf_.size();
        DEBUG_LOG("Received rkey %x addr %" PRIx64 " len %d from peer\n", remote_rkey_,
                  remote_addr_, int(remote_len_));
        if (state_ <= state::connected || state_ == state::rdma_write_complete)
            state_ = state::rdma_read_adv;
        else
            state_ = state::rdma_write_adv;
        return true;
    }

    bool client_recv(const wc &w) {
        if (w.byte_len != recv_buf_.raw.size()) {
            std::fprintf(stderr, "Received bogus data, size %u\n", w.byte_len);
            return false;
        }
        state_ =
            state_ == state::rdma_read_adv ? state::rdma_write_adv : state::rdma_write_complete;
        return true;
    }

    /* rping_test_server, one step per event. */
    bool server_step() {
        switch (state_) {
        case state::rdma_read_adv:
            DEBUG_LOG("server received sink adv\n");
            /* rping READs remote_len bytes into its own buffer of -S bytes:
             * a client with a larger -S would overrun it (rxe fails the READ
             * with a local length error); say so instead. */
            if (remote_len_ > rdma_buf_.size())
                return fail("the client's buffer (" + std::to_string(remote_len_) +
                            " bytes) is larger than ours (-S " + std::to_string(o_.size) + ")");
            if (!post_rdma(wr_opcode::rdma_read, remote_len_)) return false;
            DEBUG_LOG("server posted rdma read req \n");
            return true;
        case state::rdma_read_complete:
            DEBUG_LOG("server received read complete\n");
            if (o_.verbose) std::printf("server ping data: %s\n", c_str(rdma_buf_).c_str());
            if (!post_send_info()) return false;
            DEBUG_LOG("server posted go ahead\n");
            return true;
        case state::rdma_write_adv: {
            DEBUG_LOG("server received sink adv\n");
            /* strlen(rdma_buf) + 1: the ping string and its NUL. */
            const size_t len = c_str(rdma_buf_).size() + 1;
            if (!post_rdma(
                    wr_opcode::rdma_write,
                    uint32_t(std::min(len, std::min<size_t>(remote_len_, rdma_buf_.size())))))
                return false;
            return true;
        }
        case state::rdma_write_complete:
            DEBUG_LOG("server rdma write complete \n");
            if (!post_send_info()) return false;
            DEBUG_LOG("server posted go ahead\n");
            return true;
        default:
            return true;
        }
    }

    /* rping_test_client, one step per event. */
    bool client_step() {
        switch (state_) {
        case state::rdma_write_adv:
            format_send(rdma_buf_, rdma_mr_);
            return post_send_info();
        case state::rdma_write_complete:
            if (o_.validate &&
                std::memcmp(start_buf_.data(), rdma_buf_.data(), start_buf_.size())) {
                std::fprintf(stderr, "data mismatch!\n");
                state_ = state::error;
                return false;
            }
            if (o_.verbose) std::printf("ping data: %s\n", c_str(rdma_buf_).c_str());
            ++ping_;
            next_ping();
            return state_ != state::error;
        default:
            return true;
        }
    }

    /* The next ping's data and its SEND, or the end of the count. */
    void next_ping() {
        if (o_.count && ping_ >= o_.count) {
            done_ = true;
            return;
        }
        state_ = state::rdma_read_adv;
        const size_t size = start_buf_.size();
        int cc = std::snprintf(start_buf_.data(), size, "rdma-ping-%d: ", ping_);
        unsigned char c = static_cast<unsigned char>(start_);
        for (size_t i = size_t(cc); i < size; i++) {
            start_buf_[i] = char(c);
            c++;
            if (c > 122) c = 65;
        }
        if (++start_ > 122) start_ = 65;
        start_buf_[size - 1] = 0;
        format_send(start_buf_, start_mr_);
        (void)post_send_info();
    }

    static std::string c_str(const std::vector<char> &b) {
        return std::string(b.data(), strnlen(b.data(), b.size()));
    }

    void release() {
        if (id_ && id_->qp) destroy_qp(id_);
        if (own_qp_) uroce::destroy_qp(own_qp_);
        own_qp_ = qp_ = nullptr;
        for (mr *m : {recv_mr_, send_mr_, rdma_mr_, start_mr_})
            if (m) dereg_mr(m);
        if (cq_) destroy_cq(cq_);
        if (pd_) dealloc_pd(pd_);
        if (id_) destroy_id(id_);
        id_ = nullptr;
    }

    const options &o_;
    cm_id *id_;
    bool server_;
    state state_ = state::idle;
    pd *pd_ = nullptr;
    cq *cq_ = nullptr;
    qp *qp_ = nullptr;     /* the id's (rdma_create_qp) or, with -q, ours */
    qp *own_qp_ = nullptr; /* -q */
    mr *recv_mr_ = nullptr, *send_mr_ = nullptr, *rdma_mr_ = nullptr, *start_mr_ = nullptr;
    rdma_info recv_buf_, send_buf_;
    std::vector<char> rdma_buf_, start_buf_;
    uint32_t remote_rkey_ = 0, remote_len_ = 0;
    uint64_t remote_addr_ = 0;
    int ping_ = 0;
    int start_ = 65;
    bool done_ = false, disconnect_sent_ = false, progress_ = false;
};

class rping {
  public:
    rping(stack &st, const options &o) : st_(st), o_(o) {}
    ~rping() {
        conns_.clear();
        if (listen_id_) destroy_id(listen_id_);
        if (ch_) destroy_event_channel(ch_);
        if (cm_) close_cm(cm_);
    }

    int run() {
        verbs_error err = verbs_error::ok;
        cm_ = open_cm(st_.eng(), {}, &err);
        if (!cm_) return fail(std::string("cannot open the CM: ") + verbs_error_str(err));
        ch_ = create_event_channel(cm_, &err);
        if (!ch_) return fail(std::string("rdma_create_event_channel: ") + verbs_error_str(err));
        cm_id *id = nullptr;
        if (verbs_error e = create_id(ch_, &id, nullptr, rdma_port_space::tcp);
            e != verbs_error::ok)
            return fail(std::string("rdma_create_id: ") + verbs_error_str(e));
        DEBUG_LOG("created cm_id %p\n", static_cast<void *>(id));
        return o_.server ? run_server(id) : run_client(id);
    }

    /* The stack's counters and the CM's (every MAD by kind, refusals by reason). */
    void print_counters(FILE *f) const {
        st_.print_counters(f);
        if (cm_) cm_print_counters(cm_, f);
    }

  private:
    int fail(const std::string &msg) {
        std::fprintf(stderr, "uroce-rping: %s\n", msg.c_str());
        return exit_failure;
    }

    /* One turn of the loop: the stack, the CM's events, every connection's
     * completions. false when a CM error event ended the run (rping exits
     * from its CM thread). */
    bool turn() {
        st_.poll();
        maybe_print_counters(st_);
        cm_event *ev = nullptr;
        while (get_event(ch_, &ev) == verbs_error::ok) {
            bool ok = handle(*ev);
            ack_event(ev);
            if (!ok) return false;
        }
        for (auto &c : conns_) {
            if (!c->poll()) c->disconnect();
            if (c->take_progress()) last_progress_ = std::chrono::steady_clock::now();
        }
        return true;
    }

    connection *find(cm_id *id) {
        for (auto &c : conns_)
            if (c->id() == id) return c.get();
        return nullptr;
    }

    /* rping_cma_event_handler. */
    bool handle(const cm_event &e) {
        DEBUG_LOG("cma_event type %s cma_id %p (%s)\n", cm_event_str(e.event),
                  static_cast<void *>(e.id), e.id == listen_id_ ? "parent" : "child");
        last_progress_ = std::chrono::steady_clock::now();
        switch (e.event) {
        case cm_event_type::addr_resolved:
            if (verbs_error r = resolve_route(e.id, 2000); r != verbs_error::ok) {
                std::fprintf(stderr, "rdma_resolve_route: %s\n", verbs_error_str(r));
                resolve_failed_ = true;
            }
            return true;
        case cm_event_type::route_resolved:
            route_resolved_ = true;
            return true;
        case cm_event_type::connect_request:
            on_connect_request(e);
            return true;
        case cm_event_type::established:
            if (connection *c = find(e.id)) c->established();
            return true;
        case cm_event_type::connect_response:
            if (connection *c = find(e.id))
                if (!c->connect_response()) c->disconnect();
            return true;
        case cm_event_type::addr_error:
        case cm_event_type::route_error:
        case cm_event_type::connect_error:
        case cm_event_type::unreachable:
        case cm_event_type::rejected:
            std::fprintf(stderr, "cma event %s, error %d\n", cm_event_str(e.event), e.status);
            return false;
        case cm_event_type::disconnected:
            if (connection *c = find(e.id)) c->disconnected();
            return true;
        case cm_event_type::device_removal:
            std::fprintf(stderr, "cma detected device removal!!!!\n");
            return false;
        default:
            std::fprintf(stderr, "unhandled event: %s, ignoring\n", cm_event_str(e.event));
            return true;
        }
    }

    void on_connect_request(const cm_event &e) {
        DEBUG_LOG("child cma %p\n", static_cast<void *>(e.id));
        /* rping without -P serves one connection; rping -P one per request. */
        if (!o_.persistent && served_ > 0) {
            (void)reject(e.id, nullptr, 0);
            destroy_id(e.id);
            return;
        }
        ++served_;
        auto c = std::make_unique<connection>(o_, e.id, true);
        if (!c->setup() || !c->accept(e)) {
            std::fprintf(stderr, "connect error %d\n", -1);
            conns_.push_back(std::move(c));
            conns_.back()->disconnect();
            return;
        }
        conns_.push_back(std::move(c));
    }

    bool timed_out() const {
        return o_.timeout_s && std::chrono::steady_clock::now() - last_progress_ >
                                   std::chrono::seconds(o_.timeout_s);
    }

    int run_server(cm_id *id) {
        listen_id_ = id;
        sockaddr_storage sin;
        if (!parse_sockaddr(o_.addr.empty() ? "0.0.0.0" : o_.addr, o_.port, sin))
            return fail("bad address " + o_.addr);
        if (verbs_error e = bind_addr(id, reinterpret_cast<sockaddr *>(&sin));
            e != verbs_error::ok) {
            std::fprintf(stderr, "rdma_bind_addr: %s\n", verbs_error_str(e));
            return exit_failure;
        }
        DEBUG_LOG("rdma_bind_addr successful\n");
        DEBUG_LOG("rdma_listen\n");
        std::fflush(stdout);
        if (verbs_error e = listen(id, 3); e != verbs_error::ok) {
            std::fprintf(stderr, "rdma_listen: %s\n", verbs_error_str(e));
            return exit_failure;
        }
        last_progress_ = std::chrono::steady_clock::now();
        int rc = exit_ok;
        for (;;) {
            if (stop_requested.load()) return fail("interrupted");
            if (!turn()) return exit_cm_event;
            /* A finished connection: disconnect (answering the client's
             * DREQ), then free it once DISCONNECTED came. */
            for (auto it = conns_.begin(); it != conns_.end();) {
                connection &c = **it;
                if (c.failed()) {
                    std::fprintf(stderr, "rping server failed: %d\n", -1);
                    rc = exit_failure;
                }
                if (c.finished()) {
                    c.disconnect();
                    it = conns_.erase(it);
                    ++ended_;
                } else {
                    ++it;
                }
            }
            if (!o_.persistent && ended_ > 0) break;
            if (!conns_.empty() && timed_out())
                return fail("no progress for " + std::to_string(o_.timeout_s) + " s");
        }
        drain(std::chrono::milliseconds(300));
        return rc;
    }

    int run_client(cm_id *id) {
        sockaddr_storage dst, src;
        parse_sockaddr(o_.addr, o_.port, dst);
        const bool have_src = !o_.source.empty() && parse_sockaddr(o_.source, 0, src);
        if (!st_.wait_link_up(std::chrono::seconds(10))) return fail("the port's link is down");
        if (verbs_error e =
                resolve_addr(id, have_src ? reinterpret_cast<sockaddr *>(&src) : nullptr,
                             reinterpret_cast<sockaddr *>(&dst), 2000);
            e != verbs_error::ok) {
            std::fprintf(stderr, "rdma_resolve_addr: %s\n", verbs_error_str(e));
            return exit_failure;
        }
        last_progress_ = std::chrono::steady_clock::now();
        while (!route_resolved_) {
            if (stop_requested.load()) return fail("interrupted");
            if (!turn()) return exit_cm_event;
            if (resolve_failed_) {
                std::fprintf(stderr, "waiting for addr/route resolution state %d\n", 10);
                return exit_failure;
            }
        }
        DEBUG_LOG("rdma_resolve_addr - rdma_resolve_route successful\n");
        conns_.push_back(std::make_unique<connection>(o_, id, false));
        connection &c = *conns_.back();
        if (!c.setup()) return exit_failure;
        if (!c.connect()) {
            std::fprintf(stderr, "connect error %d\n", -1);
            return exit_failure;
        }
        while (!c.finished()) {
            if (stop_requested.load()) return fail("interrupted");
            if (!turn()) return exit_cm_event;
            if (timed_out())
                return fail("no progress for " + std::to_string(o_.timeout_s) + " s (ping " +
                            std::to_string(c.pings()) + ")");
        }
        int rc = exit_ok;
        if (c.failed()) {
            std::fprintf(stderr, "rping client failed: %d\n", -1);
            rc = exit_failure;
        }
        /* rping_disconnect, then its CM thread reports DISCONNECTED. */
        c.disconnect();
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (c.st() != state::disconnected && std::chrono::steady_clock::now() < until)
            if (!turn()) break;
        drain(std::chrono::milliseconds(300));
        return rc;
    }

    /* A little more polling before the stack goes: the peer's last ACKs
     * and the DREP find a live QP1. */
    void drain(std::chrono::milliseconds d) {
        const auto until = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < until)
            turn();
    }

    stack &st_;
    const options &o_;
    cm_service *cm_ = nullptr;
    cm_event_channel *ch_ = nullptr;
    cm_id *listen_id_ = nullptr;
    std::vector<std::unique_ptr<connection>> conns_;
    bool route_resolved_ = false, resolve_failed_ = false;
    int served_ = 0, ended_ = 0;
    std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
};

} // namespace
} // namespace uroce::app

int main(int argc, char **argv) {
    using namespace uroce::app;
    options o;
    if (int rc = parse_args(argc, argv, o); rc >= 0) return rc;
    /* one line at a time: stderr's DISCONNECT line never lands inside a
     * ping line of a log that holds both */
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::string err;
    auto eal = start_eal(o.eal_args, o.stack.shards, memory_mb, err);
    if (!eal) {
        std::fprintf(stderr, "uroce-rping: %s\n", err.c_str());
        return exit_failure;
    }
    seed_psn_random();
    auto st = stack::create(o.stack, err);
    if (!st) {
        std::fprintf(stderr, "uroce-rping: %s\n", err.c_str());
        return exit_failure;
    }
    int rc;
    {
        rping r(*st, o);
        rc = r.run();
        std::fflush(stdout);
        if (rc != exit_ok || o.debug) r.print_counters(stderr);
    }
    st.reset();
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * test/compat: verbs of compat's libibverbs.so.1 (and librdmacm.so.1) that
 * the stock tools do not reach, through rdma-core's own headers, as an
 * application compiled against them calls them.
 *
 * (the memif socket in a fresh directory under /tmp).
 *
 * ibv_create_cq_ex: two processes (fork) on a net_memif pair, one RC QP
 * each; the client sends SENDs with immediate data and RDMA WRITEs with
 * immediate, the server polls its receive CQ, an ibv_cq_ex, with
 * ibv_start_poll / ibv_next_poll / ibv_end_poll and checks every read_*
 * field against what was sent; the refused creations (timestamps, parent
 * domain) fail with EOPNOTSUPP. librdmacm: a destroyed id and event
 * channel are refused with EINVAL, not dereferenced; a thread that meets
 * a channel another thread has just destroyed waits, as a read(2) begun
 * before the close would; rdma_create_qp owns only the CQs it makes.
 */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "compat_two_process.h"

namespace {

using namespace compat_test;

constexpr int n_msgs = 64;
constexpr uint32_t msg_len = 100;

struct endpoint {
    uint32_t qpn;
    uint32_t rkey;
    uint64_t addr;
    ibv_gid gid;
};

/* One side: server receives on an ibv_cq_ex, client sends. */
int run_side(bool server, int to_peer, int from_peer) {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list || n < 1) return std::fprintf(stderr, "no device\n"), 1;
    ibv_context *ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!ctx) return std::fprintf(stderr, "ibv_open_device: errno %d\n", errno), 1;
    ibv_pd *pd = ibv_alloc_pd(ctx);
    static char buf[n_msgs * msg_len];
    std::memset(buf, 0, sizeof(buf));
    ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    CHECK(pd && mr);

    if (server) {
        /* What the CQ cannot report is refused, as a device without it. */
        ibv_cq_init_attr_ex bad{};
        bad.cqe = 16;
        bad.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
        errno = 0;
        CHECK(ibv_create_cq_ex(ctx, &bad) == nullptr && errno == EOPNOTSUPP);
        bad.wc_flags = IBV_WC_STANDARD_FLAGS;
        bad.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
        bad.parent_domain = pd;
        errno = 0;
        CHECK(ibv_create_cq_ex(ctx, &bad) == nullptr && errno == EOPNOTSUPP);
    }
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 2 * n_msgs;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
    ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
    CHECK(cqx != nullptr);
    if (!cqx) return 1;
    ibv_cq *cq = ibv_cq_ex_to_cq(cqx);
    CHECK(cq->cqe == 2 * n_msgs && cq->context == ctx);

    ibv_qp_init_attr qa{};
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = 2 * n_msgs;
    qa.cap.max_recv_wr = 2 * n_msgs;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(pd, &qa);
    CHECK(qp != nullptr);
    if (!qp) return 1;

    endpoint me{}, peer{};
    me.qpn = qp->qp_num;
    me.rkey = mr->rkey;
    me.addr = reinterpret_cast<uintptr_t>(buf);
    CHECK(ibv_query_gid(ctx, 1, 1, &me.gid) == 0);
    CHECK(qp_to_init(qp, IBV_ACCESS_REMOTE_WRITE));
    if (server) {
        /* Receives first (a WRITE with immediate consumes one too). */
        for (int i = 0; i < 2 * n_msgs; i++) {
            ibv_sge s{reinterpret_cast<uintptr_t>(buf + (i % n_msgs) * msg_len), msg_len, mr->lkey};
            ibv_recv_wr wr{};
            ibv_recv_wr *badr = nullptr;
            wr.wr_id = 1000 + uint64_t(i);
            wr.sg_list = &s;
            wr.num_sge = 1;
            CHECK(ibv_post_recv(qp, &wr, &badr) == 0);
        }
    }
    CHECK(write_all(to_peer, &me, sizeof(me)) && read_all(from_peer, &peer, sizeof(peer)));
    CHECK(qp_to_rts(qp, peer.qpn, peer.gid, 1));
    char ready = 'r';
    CHECK(write_all(to_peer, &ready, 1) && read_all(from_peer, &ready, 1));

    if (!server) {
        /* n SENDs with immediate i, then n WRITEs with immediate 0x10000 + i
         * (of i + 1 bytes) to the server's buffer. */
        for (int i = 0; i < 2 * n_msgs; i++) {
            const bool write_imm = i >= n_msgs;
            const int k = i % n_msgs;
            std::memset(buf + k * msg_len, 'a' + k % 26, msg_len);
            ibv_sge s{reinterpret_cast<uintptr_t>(buf + k * msg_len),
                      write_imm ? uint32_t(k + 1) : msg_len, mr->lkey};
            ibv_send_wr wr{};
            ibv_send_wr *badw = nullptr;
            wr.wr_id = uint64_t(i);
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = write_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.imm_data = htonl(write_imm ? 0x10000u + uint32_t(k) : uint32_t(k));
            wr.wr.rdma.remote_addr = peer.addr + uint64_t(k) * msg_len;
            wr.wr.rdma.rkey = peer.rkey;
            CHECK(ibv_post_send(qp, &wr, &badw) == 0);
            /* Each send completes before the next (the CQ is the client's
             * only one, polled the ex way too). */
            ibv_poll_cq_attr pa{};
            int r;
            while ((r = ibv_start_poll(cqx, &pa)) == ENOENT) {
            }
            CHECK(r == 0);
            if (r == 0) {
                if (cqx->status != IBV_WC_SUCCESS)
                    std::fprintf(stderr, "client: completion %d: %s\n", i,
                                 ibv_wc_status_str(cqx->status));
                CHECK(cqx->status == IBV_WC_SUCCESS && cqx->wr_id == uint64_t(i));
                CHECK(ibv_wc_read_opcode(cqx) == (write_imm ? IBV_WC_RDMA_WRITE : IBV_WC_SEND));
                CHECK(ibv_next_poll(cqx) == ENOENT);
                ibv_end_poll(cqx);
            }
        }
    } else {
        int got = 0;
        ibv_poll_cq_attr pa{};
        while (got < 2 * n_msgs) {
            int r = ibv_start_poll(cqx, &pa);
            if (r == ENOENT) continue;
            CHECK(r == 0);
            if (r) break;
            do {
                const bool write_imm = got >= n_msgs;
                const int k = got % n_msgs;
                if (cqx->status != IBV_WC_SUCCESS)
                    std::fprintf(stderr, "server: completion %d: %s\n", got,
                                 ibv_wc_status_str(cqx->status));
                CHECK(cqx->status == IBV_WC_SUCCESS);
                CHECK(cqx->wr_id == 1000 + uint64_t(got));
                CHECK(ibv_wc_read_opcode(cqx) ==
                      (write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV));
                CHECK(ibv_wc_read_byte_len(cqx) == (write_imm ? uint32_t(k + 1) : msg_len));
                CHECK(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM);
                CHECK(ntohl(ibv_wc_read_imm_data(cqx)) ==
                      (write_imm ? 0x10000u + uint32_t(k) : uint32_t(k)));
                CHECK(ibv_wc_read_qp_num(cqx) == qp->qp_num);
                CHECK(ibv_wc_read_vendor_err(cqx) == 0);
                CHECK(ibv_wc_read_sl(cqx) == 0 && ibv_wc_read_slid(cqx) == 0);
                CHECK(ibv_wc_read_dlid_path_bits(cqx) == 0);
                got++;
            } while (got < 2 * n_msgs && ibv_next_poll(cqx) == 0);
            ibv_end_poll(cqx);
        }
        CHECK(got == 2 * n_msgs);
        /* The data: the last SENDs and the WRITEs landed (each slot's first
         * byte is its letter either way). */
        for (int k = 0; k < n_msgs; k++)
            CHECK(buf[k * msg_len] == char('a' + k % 26));
    }
    CHECK(write_all(to_peer, &ready, 1) && read_all(from_peer, &ready, 1));
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    return failures ? 1 : 0;
}

/* librdmacm: a handle the application destroyed is refused (perftest
 * 4.5-0.17 retries a REJECTED connection on its destroyed ids). The
 * pointers are only passed, never dereferenced, by the library. */
int stale_handles() {
    rdma_event_channel *ch = rdma_create_event_channel();
    CHECK(ch != nullptr);
    if (!ch) return 1;
    rdma_cm_id *id = nullptr;
    CHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    rdma_cm_id *other = nullptr;
    CHECK(rdma_create_id(ch, &other, nullptr, RDMA_PS_TCP) == 0);
    CHECK(rdma_destroy_id(id) == 0);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(18999);
    inet_pton(AF_INET, "10.79.0.2", &dst.sin_addr);
    errno = 0;
    CHECK(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&dst), 100) == -1 &&
          errno == EINVAL);
    errno = 0;
    CHECK(rdma_destroy_id(id) == -1 && errno == EINVAL);
    /* A pointer that never was an id. */
    errno = 0;
    CHECK(rdma_resolve_route(reinterpret_cast<rdma_cm_id *>(&dst), 100) == -1 && errno == EINVAL);
    CHECK(rdma_destroy_id(other) == 0);
    rdma_destroy_event_channel(ch);
    rdma_cm_id *late = nullptr;
    errno = 0;
    CHECK(rdma_create_id(ch, &late, nullptr, RDMA_PS_TCP) == -1 && errno == EINVAL);
    return failures ? 1 : 0;
}

void no_op(int) {}

/* librdmacm: a thread waits in rdma_get_cm_event on a channel that another
 * thread destroys, as rping's CM thread does at exit. The waiter stays
 * blocked (librdmacm's read(2) of a closed fd), but it must not hold the
 * library's id table: the next call that takes it (rdma_create_id here;
 * at exit, the hook that destroys the process's ids) would hang, and
 * alarm() fails the test. A signal wakes the waiter's poll(2) after the
 * destroy, deterministically; in rping an event did, one run in twenty. */
int channel_destroyed_under_a_waiter() {
    struct sigaction sa {};
    sa.sa_handler = no_op; /* no SA_RESTART: poll(2) returns EINTR */
    sigaction(SIGUSR1, &sa, nullptr);
    rdma_event_channel *ch = rdma_create_event_channel();
    CHECK(ch != nullptr);
    if (!ch) return 1;
    std::thread waiter([ch] {
        rdma_cm_event *ev = nullptr;
        if (rdma_get_cm_event(ch, &ev) == 0) rdma_ack_cm_event(ev);
    });
    const pthread_t waiter_thread = waiter.native_handle();
    waiter.detach();
    usleep(20 * 1000); /* the waiter in poll(2) */
    rdma_destroy_event_channel(ch);
    pthread_kill(waiter_thread, SIGUSR1);
    usleep(20 * 1000); /* the waiter back at the channel, finding it gone */
    rdma_event_channel *after = rdma_create_event_channel();
    rdma_cm_id *id = nullptr;
    CHECK(after && rdma_create_id(after, &id, nullptr, RDMA_PS_TCP) == 0);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(after);
    return failures ? 1 : 0;
}

/* librdmacm: a thread comes to rdma_get_cm_event just after another thread
 * destroyed the channel: rping's CM thread acknowledges the DISCONNECTED
 * that ends the run and comes back while the main thread destroys the
 * channel. It waits, as it would have had it come first; an error made
 * rping exit() from that thread, and the exit's teardown ran under the
 * main thread (SIGSEGV, one compat_rping run in forty). The thread that
 * destroyed the channel gets EINVAL, as for any stale handle. */
int get_event_just_after_another_threads_destroy() {
    rdma_event_channel *ch = rdma_create_event_channel();
    CHECK(ch != nullptr);
    if (!ch) return 1;
    rdma_destroy_event_channel(ch);
    rdma_cm_event *ev = nullptr;
    errno = 0;
    CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EINVAL);
    /* shared: the detached thread may write it after this function returns */
    auto returned = std::make_shared<std::atomic<bool>>(false);
    std::thread late([ch, returned] {
        rdma_cm_event *e = nullptr;
        rdma_get_cm_event(ch, &e);
        *returned = true;
    });
    late.detach();
    usleep(50 * 1000); /* an error comes back at once */
    CHECK(!returned->load());
    return failures ? 1 : 0;
}

/* librdmacm: an event is taken off a channel by one thread while another
 * destroys the id it names. Either the destroy comes first and the event
 * is dropped, or the event is handed over and rdma_destroy_id waits for
 * its acknowledgement (librdmacm's events_completed). Before, the event
 * made a new handle for the destroyed id, freed once the event was
 * acknowledged: the exit hook that destroys the process's ids then read
 * freed memory (a crash with MALLOC_PERTURB_). */
int id_destroyed_under_its_event(const char *self_ip) {
    sockaddr_in self{};
    self.sin_family = AF_INET;
    inet_pton(AF_INET, self_ip, &self.sin_addr);
    constexpr int rounds = 40;
    for (int round = 0; round < rounds; round++) {
        rdma_event_channel *ch = rdma_create_event_channel();
        CHECK(ch != nullptr);
        if (!ch) return 1;
        rdma_cm_id *id = nullptr;
        CHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
        std::thread waiter([ch] {
            rdma_cm_event *ev = nullptr;
            if (rdma_get_cm_event(ch, &ev) == 0) rdma_ack_cm_event(ev);
        });
        /* ADDR_RESOLVED for the local address, pushed at once: the waiter
         * and the destroy race for it, at a different offset each round. */
        CHECK(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&self), 100) == 0);
        usleep(round * 25);
        CHECK(rdma_destroy_id(id) == 0);
        /* A waiter whose event was dropped stays blocked on the destroyed
         * channel, as in channel_destroyed_under_a_waiter. */
        rdma_destroy_event_channel(ch);
        waiter.detach();
    }
    return failures ? 1 : 0;
}

/* librdmacm: rdma_create_qp makes the CQs the attributes lack, each with a
 * completion channel, and records those, and only those, in the id;
 * rdma_destroy_qp destroys them and leaves the application's own CQ alone.
 * A creation that fails undoes the CQs it made (librdmacm's
 * rdma_create_qp_ex, ucma_destroy_cqs). Before, the id recorded the
 * application's CQ too and rdma_destroy_qp destroyed it, and a failed
 * creation left its CQ and channel behind. */
int create_qp_owns_only_the_cqs_it_makes() {
    rdma_event_channel *ch = rdma_create_event_channel();
    CHECK(ch != nullptr);
    if (!ch) return 1;
    rdma_cm_id *id = nullptr;
    CHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    if (!id) return 1;
    CHECK(id->verbs != nullptr);
    ibv_cq *mine = ibv_create_cq(id->verbs, 16, nullptr, nullptr, 0);
    CHECK(mine != nullptr);
    ibv_qp_init_attr a{};
    a.recv_cq = mine;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.qp_type = IBV_QPT_RC;
    ibv_qp_init_attr too_many_sges = a;
    too_many_sges.cap.max_send_sge = 1u << 20;
    CHECK(rdma_create_qp(id, nullptr, &too_many_sges) == -1);
    CHECK(!id->qp && !id->send_cq && !id->send_cq_channel);
    CHECK(rdma_create_qp(id, nullptr, &a) == 0);
    CHECK(id->qp && id->send_cq && id->send_cq_channel);
    CHECK(!id->recv_cq && !id->recv_cq_channel);
    if (id->qp) CHECK(id->qp->send_cq == id->send_cq && id->qp->recv_cq == mine);
    rdma_destroy_qp(id);
    CHECK(!id->qp && !id->send_cq && !id->send_cq_channel);
    CHECK(ibv_destroy_cq(mine) == 0); /* still the application's */
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    return failures ? 1 : 0;
}

} // namespace

int main() {
    /* Both processes end, whatever a failure leaves waiting. */
    alarm(40);
    char tmpl[] = "/tmp/uroce-compat-verbs-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    const std::string dir = tmpl;
    int s2c[2], c2s[2];
    if (pipe(s2c) || pipe(c2s)) return 1;
    const pid_t child = fork();
    if (child == 0) {
        set_env(dir, false, "10.79.0");
        /* The server's memif socket first. */
        usleep(300 * 1000);
        const int rc = run_side(false, c2s[1], s2c[0]);
        _exit(rc);
    }
    set_env(dir, true, "10.79.0");
    /* librdmacm's context (kept to exit) starts the stack: one EAL per
     * process, so this goes first, and run_side's context shares it. */
    int rc = stale_handles();
    if (channel_destroyed_under_a_waiter()) rc = 1;
    if (get_event_just_after_another_threads_destroy()) rc = 1;
    if (id_destroyed_under_its_event("10.79.0.1")) rc = 1;
    if (create_qp_owns_only_the_cqs_it_makes()) rc = 1;
    if (run_side(true, s2c[1], c2s[0])) rc = 1;
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "client side failed (status %d)\n", status);
        rc = 1;
    }
    unlink((dir + "/memif.sock").c_str());
    rmdir(dir.c_str());
    std::printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}

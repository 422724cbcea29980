/* SPDX-License-Identifier: BSD-3-Clause
 * test/compat: ibv_modify_srq's limit, the asynchronous events it and an
 * SRQ QP's move to ERR raise (ibv_get_async_event on the context's
 * async_fd, readable by poll(2)), and ibv_resize_cq with completions
 * pending, through rdma-core's headers as an application calls them, on
 * compat's libibverbs.so.1. Only portable verbs: the same program runs on
 * rxe (tools/interop, doc/compat.md), whose sizes it does not assume
 * (rxe rounds max_wr and cqe up to 2^k - 1).
 *
 * Two processes (fork) on a net_memif pair, one RC QP each. The server's QP
 * takes its receives from an SRQ holding 8, armed at 5 (and refused a limit
 * above max_wr, a max_wr of 0); the client sends 4 SENDs. The server then
 * gets IBV_EVENT_SRQ_LIMIT_REACHED naming the SRQ (the SRQ went from 8 to 4
 * WQEs; the limit reads 0 after), resizes its receive CQ while the 4
 * completions wait in it (EINVAL below 4 and above max_cqe), polls them in
 * order, and moves its QP to ERR: IBV_EVENT_QP_LAST_WQE_REACHED naming it.
 * It holds that event unacknowledged and destroys the QP while another
 * thread acknowledges it 200 ms later: ibv_destroy_qp returns only after
 * the ack (rdma-core waits for every event it handed out about the QP; an
 * ack after the free would write freed memory).
 */
#include <infiniband/verbs.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "compat_two_process.h"

namespace {

using namespace compat_test;

constexpr int n_sends = 4;
constexpr uint32_t srq_wqes = 8, srq_limit = 5;
constexpr uint32_t msg_len = 64;

/* A call that does not return within 3 s: where its thread waits
 * (/proc wchan: a futex is rdma-core waiting for events to be acked, any
 * other name the kernel). */
pid_t watched_tid;
std::atomic<bool> watch_done{false};
std::thread watcher;
void watch_start() {
    watched_tid = pid_t(syscall(SYS_gettid));
    watch_done = false;
    watcher = std::thread([] {
        for (int i = 0; i < 30 && !watch_done; i++)
            usleep(100 * 1000);
        if (watch_done) return;
        char path[64], wchan[128] = {};
        std::snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", int(watched_tid));
        if (FILE *f = std::fopen(path, "r")) {
            if (!std::fgets(wchan, sizeof(wchan), f)) wchan[0] = 0;
            std::fclose(f);
        }
        std::fprintf(stderr, "still waiting after 3 s, in %s\n", wchan);
    });
}
void watch_stop() {
    watch_done = true;
    watcher.join();
}

/* Where a run got to, on stderr (a hang on rxe is then placed). */
void step(bool server, const char *what) {
    std::fprintf(stderr, "%s: %s\n", server ? "server" : "client", what);
}

struct endpoint {
    uint32_t qpn;
    ibv_gid gid;
};

/* The next async event, the fd first polled readable (5 s at most). */
bool next_async_event(ibv_context *ctx, ibv_async_event *ev) {
    pollfd p{ctx->async_fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1 || !(p.revents & POLLIN)) {
        std::fprintf(stderr, "no async event within 5 s\n");
        return false;
    }
    return ibv_get_async_event(ctx, ev) == 0;
}

/* The next event that is not about the port (PORT_ACTIVE comes first). */
bool next_object_event(ibv_context *ctx, ibv_async_event *ev) {
    for (;;) {
        if (!next_async_event(ctx, ev)) return false;
        if (ev->event_type != IBV_EVENT_PORT_ACTIVE && ev->event_type != IBV_EVENT_PORT_ERR)
            return true;
        ibv_ack_async_event(ev);
    }
}

int run_side(bool server, int to_peer, int from_peer, int gid_index) {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list || n < 1) return std::fprintf(stderr, "no device\n"), 1;
    const char *want = std::getenv("IBV_DEVICE");
    int pick = 0;
    for (int i = 0; want && i < n; i++)
        if (std::strcmp(ibv_get_device_name(list[i]), want) == 0) pick = i;
    ibv_context *ctx = ibv_open_device(list[pick]);
    ibv_free_device_list(list);
    if (!ctx) return std::fprintf(stderr, "ibv_open_device: errno %d\n", errno), 1;
    ibv_device_attr da{};
    CHECK(ibv_query_device(ctx, &da) == 0);
    ibv_pd *pd = ibv_alloc_pd(ctx);
    static char buf[srq_wqes * msg_len];
    ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(pd && mr);
    ibv_cq *scq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    ibv_cq *rcq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    CHECK(scq && rcq);
    if (!scq || !rcq) return 1;

    ibv_srq *srq = nullptr;
    ibv_async_event last_wqe{}; /* held unacknowledged until the QP's destroy */
    bool holding = false;
    if (server) {
        ibv_srq_init_attr sa{};
        sa.attr.max_wr = srq_wqes * 2;
        sa.attr.max_sge = 1;
        srq = ibv_create_srq(pd, &sa);
        CHECK(srq != nullptr);
        if (!srq) return 1;
        for (uint32_t i = 0; i < srq_wqes; i++) {
            ibv_sge s{reinterpret_cast<uintptr_t>(buf + i * msg_len), msg_len, mr->lkey};
            ibv_recv_wr wr{};
            ibv_recv_wr *bad = nullptr;
            wr.wr_id = 100 + i;
            wr.sg_list = &s;
            wr.num_sge = 1;
            CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0);
        }
        ibv_srq_attr q{};
        CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr >= srq_wqes * 2 && q.srq_limit == 0);
        /* refused, as rxe refuses them: a limit above max_wr, max_wr 0 */
        ibv_srq_attr m{};
        m.srq_limit = q.max_wr + 1;
        CHECK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT) == EINVAL);
        m = {};
        m.max_wr = 0;
        CHECK(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR) == EINVAL);
        m = {};
        m.srq_limit = srq_limit;
        CHECK(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT) == 0);
        CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == srq_limit);
    }

    ibv_qp_init_attr qa{};
    qa.send_cq = scq;
    qa.recv_cq = rcq;
    qa.srq = srq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = 16;
    qa.cap.max_recv_wr = server ? 0 : 16;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(pd, &qa);
    CHECK(qp != nullptr);
    if (!qp) return 1;

    endpoint me{}, peer{};
    me.qpn = qp->qp_num;
    CHECK(ibv_query_gid(ctx, 1, gid_index, &me.gid) == 0);
    CHECK(write_all(to_peer, &me, sizeof(me)) && read_all(from_peer, &peer, sizeof(peer)));
    CHECK(qp_to_init(qp, 0) && qp_to_rts(qp, peer.qpn, peer.gid, gid_index));
    char token = 'r';
    CHECK(write_all(to_peer, &token, 1) && read_all(from_peer, &token, 1));

    if (!server) {
        for (int i = 0; i < n_sends; i++) {
            std::memset(buf, 'a' + i, msg_len);
            ibv_sge s{reinterpret_cast<uintptr_t>(buf), msg_len, mr->lkey};
            ibv_send_wr wr{};
            ibv_send_wr *bad = nullptr;
            wr.wr_id = uint64_t(i);
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND;
            wr.send_flags = IBV_SEND_SIGNALED;
            CHECK(ibv_post_send(qp, &wr, &bad) == 0);
            ibv_wc wc{};
            int r;
            while ((r = ibv_poll_cq(scq, 1, &wc)) == 0) {
            }
            CHECK(r == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == uint64_t(i));
        }
        /* all ACKed: the server's receive CQ holds the 4 completions */
        CHECK(write_all(to_peer, &token, 1));
    } else {
        CHECK(read_all(from_peer, &token, 1));
        step(server, "sends done; waiting for IBV_EVENT_SRQ_LIMIT_REACHED");
        /* 8 -> 4 WQEs: below the limit of 5, once */
        ibv_async_event ev{};
        CHECK(next_object_event(ctx, &ev));
        CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
        CHECK(ev.element.srq == srq);
        ibv_ack_async_event(&ev);
        CHECK(srq->events_completed == 1);
        ibv_srq_attr q{};
        CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 0);

        step(server, "resizing the receive CQ");
        /* resize with the 4 completions waiting (none polled yet) */
        CHECK(ibv_resize_cq(rcq, n_sends - 1) == EINVAL);
        CHECK(ibv_resize_cq(rcq, int(da.max_cqe) + 1) == EINVAL);
        CHECK(ibv_resize_cq(rcq, 64) == 0);
        CHECK(rcq->cqe >= 64);
        CHECK(ibv_resize_cq(rcq, n_sends) == 0);
        CHECK(rcq->cqe >= n_sends);
        int got = 0;
        for (int tries = 0; got < n_sends && tries < 1000000; tries++) {
            ibv_wc wc{};
            const int r = ibv_poll_cq(rcq, 1, &wc);
            CHECK(r >= 0);
            if (r != 1) continue;
            CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
            CHECK(wc.wr_id == 100 + uint64_t(got)); /* the SRQ's order, kept */
            CHECK(wc.byte_len == msg_len && buf[got * msg_len] == char('a' + got));
            got++;
        }
        CHECK(got == n_sends);
        ibv_wc extra{};
        CHECK(ibv_poll_cq(rcq, 1, &extra) == 0);

        step(server, "QP to ERR; waiting for IBV_EVENT_QP_LAST_WQE_REACHED");
        /* an SRQ QP that enters ERR: Last WQE Reached, naming it */
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
        CHECK(next_object_event(ctx, &last_wqe));
        CHECK(last_wqe.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
        CHECK(last_wqe.element.qp == qp);
        holding = last_wqe.event_type == IBV_EVENT_QP_LAST_WQE_REACHED;
    }
    CHECK(write_all(to_peer, &token, 1) && read_all(from_peer, &token, 1));
    /* Nothing more is due; anything late is named and acked (rdma-core's
     * ibv_destroy_qp waits for every event the kernel reported on the QP). */
    for (;;) {
        pollfd p{ctx->async_fd, POLLIN, 0};
        ibv_async_event late{};
        if (poll(&p, 1, 1000) != 1 || ibv_get_async_event(ctx, &late)) break;
        std::fprintf(stderr, "%s: unexpected late event %s\n", server ? "server" : "client",
                     ibv_event_type_str(late.event_type));
        if (late.event_type != IBV_EVENT_PORT_ACTIVE) CHECK(!"late event");
        ibv_ack_async_event(&late);
    }
    std::atomic<bool> acked{false};
    std::thread acker;
    if (holding) {
        step(server, "destroying the QP, its event acknowledged 200 ms later");
        acker = std::thread([&] {
            usleep(200 * 1000);
            CHECK(qp->events_completed == 0);
            acked = true; /* before the ack: destroy may return right after it */
            ibv_ack_async_event(&last_wqe);
        });
    } else {
        step(server, "destroying the QP");
    }
    CHECK(ibv_destroy_qp(qp) == 0);
    if (holding) {
        CHECK(acked.load()); /* it waited for the ack */
        acker.join();
    }
    if (srq) {
        /* An event nobody read goes with its object (rdma-core: the kernel
         * drops it from the async queue), and so does its readiness: after
         * the destroy the fd polls readable only for a real event, and a
         * blocking ibv_get_async_event would wait for one. Before
         * 2026-12-04 the fd kept the dropped event's count (one spurious
         * wake-up, and -1/EAGAIN from a blocking ibv_get_async_event). */
        step(server, "an unread Last WQE Reached dropped with its QP");
        ibv_qp *gone = ibv_create_qp(pd, &qa);
        CHECK(gone != nullptr);
        if (gone) {
            ibv_qp_attr a{};
            a.qp_state = IBV_QPS_ERR;
            CHECK(qp_to_init(gone, 0) && ibv_modify_qp(gone, &a, IBV_QP_STATE) == 0);
            pollfd p{ctx->async_fd, POLLIN, 0};
            const bool queued = poll(&p, 1, 2000) == 1;
            CHECK(ibv_destroy_qp(gone) == 0);
            if (queued) {
                /* Whatever the fd still says is readable is a real event
                 * (the peer's exit may bring PORT_ERR), none about the
                 * destroyed QP; non-blocking, so a stale count shows as
                 * -1/EAGAIN instead of a wait. */
                const int fl = fcntl(ctx->async_fd, F_GETFL);
                fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
                for (p.revents = 0; poll(&p, 1, 300) == 1; p.revents = 0) {
                    ibv_async_event left{};
                    CHECK(ibv_get_async_event(ctx, &left) == 0);
                    if (failures) break;
                    CHECK(left.event_type == IBV_EVENT_PORT_ERR ||
                          left.event_type == IBV_EVENT_PORT_ACTIVE);
                    ibv_ack_async_event(&left);
                }
                fcntl(ctx->async_fd, F_SETFL, fl);
            } else {
                std::fprintf(stderr, "no event for a QP moved from INIT to ERR: not checked\n");
            }
        }
        step(server, "destroying the SRQ");
        watch_start();
        CHECK(ibv_destroy_srq(srq) == 0);
        watch_stop();
    }
    step(server, "destroying the CQs");
    CHECK(ibv_destroy_cq(scq) == 0);
    CHECK(ibv_destroy_cq(rcq) == 0);
    step(server, "destroying the MR, PD, context");
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    step(server, "done");
    return failures ? 1 : 0;
}

} // namespace

/* No argument: both sides here, on compat's uroce0 over net_memif.
 * "server GIDX PORT" / "client GIDX HOST PORT" are not offered: the rxe
 * run pairs two processes on one rxe device through pipes the same way
 * (UROCE_SRQ_EVENTS_GID: the GID index to use there). */
int main() {
    alarm(60);
    const char *gid_env = std::getenv("UROCE_SRQ_EVENTS_GID");
    const int gid_index = gid_env ? std::atoi(gid_env) : 1;
    const bool on_uroce = !std::getenv("IBV_DEVICE");
    std::string dir;
    if (on_uroce) {
        char tmpl[] = "/tmp/uroce-compat-srq-XXXXXX";
        if (!mkdtemp(tmpl)) return 1;
        dir = tmpl;
    }
    int s2c[2], c2s[2];
    if (pipe(s2c) || pipe(c2s)) return 1;
    const pid_t child = fork();
    if (child == 0) {
        if (on_uroce) {
            set_env(dir, false, "10.81.0");
            usleep(300 * 1000); /* the server's memif socket first */
        }
        _exit(run_side(false, c2s[1], s2c[0], gid_index));
    }
    if (on_uroce) set_env(dir, true, "10.81.0");
    int rc = run_side(true, s2c[1], c2s[0], gid_index);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "client side failed (status %d)\n", status);
        rc = 1;
    }
    if (on_uroce) {
        unlink((dir + "/memif.sock").c_str());
        rmdir(dir.c_str());
    }
    std::printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce verbs: a libibverbs-shaped API over the userspace RoCEv2 transport.
 *
 * The names follow libibverbs without the ibv_ prefix (ibv_post_send ->
 * uroce::post_send, struct ibv_send_wr -> uroce::send_wr, IBV_WC_SUCCESS ->
 * wc_status::success, IBV_ACCESS_REMOTE_WRITE -> access_remote_write, ...),
 * and every enum keeps the numeric value of its ibverbs twin (rdma-core
 * libibverbs/verbs.h), so values can cross a wire or a log unchanged. Code
 * written against ibverbs still needs the differences below; unmodified
 * binaries are the business of compat/ (a drop-in libibverbs).
 *
 * Differences from libibverbs, all deliberate:
 *  - errors are typed (verbs_error, whose values are the errno ibverbs would
 *    return) instead of errno / -1;
 *  - there is no kernel: an engine (<uroce/engine.h>) drives the device's
 *    progress from the owner's loop, on the same thread that posts and polls
 *    (run-to-completion, one thread per device; other threads go through a
 *    work channel, <uroce/work_channel.h>);
 *  - an address handle carries the destination MAC (the caller resolves it,
 *    e.g. with <uroce/neigh.h>);
 *  - the opened device is uroce::device (ibv_context's role); open_device()
 *    takes its driver, mbuf pool and GID table in device_config.
 */
#ifndef UROCE_VERBS_H
#define UROCE_VERBS_H

#include <uroce/export.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <uroce/cc.h>
#include <uroce/counters.h>
#include <uroce/gid.h>

struct rte_mempool;

namespace uroce {

class device;
struct pd;
struct mr;
struct cq;
struct qp;
struct srq;
struct ah;
class netdev;
class clock_source;

/* ---------------------------------------------------------------- errors */

/* What ibverbs would put in errno; ok is 0. */
enum class verbs_error : int {
    ok = 0,
    perm = EPERM,
    noent = ENOENT,
    again = EAGAIN,
    nomem = ENOMEM,
    busy = EBUSY,
    inval = EINVAL,
    notsup = EOPNOTSUPP,
};
UROCE_API const char *verbs_error_str(verbs_error e);

/* ---------------------------------------------------------------- enums (ibverbs values) */

enum class wc_status : uint8_t {
    success = 0,
    loc_len_err = 1,
    loc_qp_op_err = 2,
    loc_eec_op_err = 3,
    loc_prot_err = 4,
    wr_flush_err = 5,
    mw_bind_err = 6,
    bad_resp_err = 7,
    loc_access_err = 8,
    rem_inv_req_err = 9,
    rem_access_err = 10,
    rem_op_err = 11,
    retry_exc_err = 12,
    rnr_retry_exc_err = 13,
    loc_rdd_viol_err = 14,
    rem_inv_rd_req_err = 15,
    rem_abort_err = 16,
    inv_eecn_err = 17,
    inv_eec_state_err = 18,
    fatal_err = 19,
    resp_timeout_err = 20,
    general_err = 21,
};
UROCE_API const char *wc_status_str(wc_status s); /* ibv_wc_status_str's strings */

enum class wc_opcode : uint16_t {
    send = 0,
    rdma_write = 1,
    rdma_read = 2,
    comp_swap = 3,
    fetch_add = 4,
    bind_mw = 5,
    local_inv = 6,
    recv = 128,
    recv_rdma_with_imm = 129,
};

enum class wr_opcode : uint8_t {
    rdma_write = 0,
    rdma_write_with_imm = 1,
    send = 2,
    send_with_imm = 3,
    rdma_read = 4,
    atomic_cmp_and_swp = 5,
    atomic_fetch_and_add = 6,
    local_inv = 7,
    bind_mw = 8,
    send_with_inv = 9,
};

/* The completion opcode of a send-queue WR (ibv_wc_opcode for each
 * ibv_wr_opcode, as rdma-core's providers report them): every SEND flavour
 * completes as send, WRITE with or without immediate as rdma_write. */
constexpr wc_opcode wc_opcode_for(wr_opcode op) {
    switch (op) {
    case wr_opcode::rdma_write:
    case wr_opcode::rdma_write_with_imm:
        return wc_opcode::rdma_write;
    case wr_opcode::rdma_read:
        return wc_opcode::rdma_read;
    case wr_opcode::atomic_cmp_and_swp:
        return wc_opcode::comp_swap;
    case wr_opcode::atomic_fetch_and_add:
        return wc_opcode::fetch_add;
    case wr_opcode::local_inv:
        return wc_opcode::local_inv;
    case wr_opcode::bind_mw:
        return wc_opcode::bind_mw;
    case wr_opcode::send:
    case wr_opcode::send_with_imm:
    case wr_opcode::send_with_inv:
        break;
    }
    return wc_opcode::send;
}

/* ibv_send_flags */
enum send_flags : unsigned {
    send_fence = 1u << 0,
    send_signaled = 1u << 1,
    send_solicited = 1u << 2,
    send_inline = 1u << 3,
};

/* ibv_access_flags, and one of uroce's own (no ibverbs twin; a bit that
 * ibverbs leaves unused). */
enum access_flags : unsigned {
    access_local_write = 1u << 0,
    access_remote_write = 1u << 1,
    access_remote_read = 1u << 2,
    access_remote_atomic = 1u << 3,
    /* The peer may invalidate this MR's key with SEND with Invalidate
     * (IBTA 9.4.4, 10.6.6). In ibverbs only memory windows and
     * fast-registration MRs can be remotely invalidated; uroce has neither,
     * so an MR opts in with this flag. A SEND with Invalidate naming any
     * other key is refused: the receive completes with rem_inv_req_err,
     * the requester gets an Invalid Request NAK, the QP goes to ERR, and
     * the QP counter inv_rkey_refused counts it (doc/security.md). */
    access_remote_invalidate = 1u << 30,
};

/* ibv_wc_flags */
enum wc_flags : unsigned {
    wc_grh = 1u << 0,
    wc_with_imm = 1u << 1,
    wc_with_inv = 1u << 3,
};

enum class qp_state : uint8_t { reset = 0, init = 1, rtr = 2, rts = 3, sqd = 4, sqe = 5, err = 6 };
UROCE_API const char *qp_state_str(qp_state s);

enum class qp_type : uint8_t { rc = 2, uc = 3, ud = 4 };

enum class mtu : uint8_t { mtu_256 = 1, mtu_512 = 2, mtu_1024 = 3, mtu_2048 = 4, mtu_4096 = 5 };
static inline constexpr uint32_t mtu_to_bytes(mtu m) {
    return 128u << unsigned(m);
}
static inline constexpr bool mtu_valid(mtu m) {
    return unsigned(m) >= 1 && unsigned(m) <= 5;
}

/* ibv_qp_attr_mask */
enum qp_attr_mask : unsigned {
    qp_attr_state = 1u << 0,
    qp_attr_cur_state = 1u << 1,
    qp_attr_en_sqd_async_notify = 1u << 2,
    qp_attr_access_flags = 1u << 3,
    qp_attr_pkey_index = 1u << 4,
    qp_attr_port = 1u << 5,
    qp_attr_qkey = 1u << 6,
    qp_attr_av = 1u << 7,
    qp_attr_path_mtu = 1u << 8,
    qp_attr_timeout = 1u << 9,
    qp_attr_retry_cnt = 1u << 10,
    qp_attr_rnr_retry = 1u << 11,
    qp_attr_rq_psn = 1u << 12,
    qp_attr_max_qp_rd_atomic = 1u << 13,
    qp_attr_alt_path = 1u << 14,
    qp_attr_min_rnr_timer = 1u << 15,
    qp_attr_sq_psn = 1u << 16,
    qp_attr_max_dest_rd_atomic = 1u << 17,
    qp_attr_path_mig_state = 1u << 18,
    qp_attr_cap = 1u << 19,
    qp_attr_dest_qpn = 1u << 20,
    /* uroce's own (no ibverbs bit): selective repeat with a uroce peer,
     * RC, INIT -> RTR. Both applications must set it (doc/loss-recovery.md);
     * toward rxe or a NIC it stays off: standard go-back-N. */
    qp_attr_selective_repeat = 1u << 30,
};

/* ---------------------------------------------------------------- work requests and completions */

struct sge {
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

struct send_wr {
    uint64_t wr_id = 0;
    send_wr *next = nullptr;
    sge *sg_list = nullptr;
    int num_sge = 0;
    wr_opcode opcode = wr_opcode::send;
    unsigned send_flags = 0;
    union {
        uint32_t imm_data; /* network byte order, as in ibv_send_wr */
        uint32_t invalidate_rkey;
    };
    union {
        struct {
            uint64_t remote_addr;
            uint32_t rkey;
        } rdma;
        struct {
            uint64_t remote_addr;
            uint64_t compare_add;
            uint64_t swap;
            uint32_t rkey;
        } atomic;
        struct {
            struct ah *ah;
            uint32_t remote_qpn;
            uint32_t remote_qkey;
        } ud;
    } wr;
    send_wr() : imm_data(0), wr{} {}
};

struct recv_wr {
    uint64_t wr_id = 0;
    recv_wr *next = nullptr;
    sge *sg_list = nullptr;
    int num_sge = 0;
};

struct wc {
    uint64_t wr_id = 0;
    wc_status status = wc_status::success;
    wc_opcode opcode = wc_opcode::send;
    uint32_t vendor_err = 0;
    uint32_t byte_len = 0;
    union {
        uint32_t imm_data; /* network byte order */
        uint32_t invalidated_rkey;
    };
    uint32_t qp_num = 0;
    uint32_t src_qp = 0; /* UD: the sender's QPN (from DETH) */
    unsigned wc_flags = 0;
    uint16_t pkey_index = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t dlid_path_bits = 0;
    wc() : imm_data(0) {}
};

/* ---------------------------------------------------------------- attributes */

/* ibv_global_route */
struct global_route {
    gid dgid;
    uint32_t flow_label = 0;
    uint8_t sgid_index = 0;
    /* The IPv4 TTL / IPv6 hop limit of the frames: 64 (0 means 64 too), as
     * the kernel's routes. rxe never sends the application's value: for RoCE
     * the kernel replaces it with the route's hop limit. uroce sends what is
     * set here, on purpose, so code ported from ibv_rc_pingpong (which sets
     * 1, so TTL-1 frames) should leave the default. */
    uint8_t hop_limit = 64;
    uint8_t traffic_class = 0;
};

/* ibv_ah_attr plus the resolved destination MAC (RoCE has no LIDs). */
struct ah_attr {
    global_route grh;
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint8_t src_path_bits = 0;
    uint8_t static_rate = 0;
    uint8_t is_global = 1; /* RoCE always carries the GRH (as IP) */
    uint8_t port_num = 1;
    uint8_t dmac[6] = {};
};

struct qp_cap {
    uint32_t max_send_wr = 0;
    uint32_t max_recv_wr = 0;
    uint32_t max_send_sge = 1;
    uint32_t max_recv_sge = 1;
    uint32_t max_inline_data = 0;
};

struct qp_init_attr {
    void *qp_context = nullptr;
    cq *send_cq = nullptr;
    cq *recv_cq = nullptr;
    uroce::srq *srq = nullptr;
    qp_cap cap;
    uroce::qp_type qp_type = uroce::qp_type::rc;
    int sq_sig_all = 0;
};

struct qp_attr {
    uroce::qp_state qp_state = uroce::qp_state::reset;
    uroce::qp_state cur_qp_state = uroce::qp_state::reset;
    mtu path_mtu = mtu::mtu_1024;
    uint32_t qkey = 0;
    uint32_t rq_psn = 0;
    uint32_t sq_psn = 0;
    uint32_t dest_qp_num = 0;
    unsigned qp_access_flags = 0;
    qp_cap cap;
    uroce::ah_attr ah_attr;
    uint16_t pkey_index = 0;
    uint8_t en_sqd_async_notify = 0;
    uint8_t sq_draining = 0;
    uint8_t max_rd_atomic = 0;
    uint8_t max_dest_rd_atomic = 0;
    uint8_t min_rnr_timer = 0;
    uint8_t port_num = 1;
    uint8_t timeout = 0;
    uint8_t retry_cnt = 0;
    uint8_t rnr_retry = 0;
    uint8_t selective_repeat = 0; /* 1: IRN-style selective repeat (qp_attr_selective_repeat) */
};

struct srq_attr {
    uint32_t max_wr = 0;
    uint32_t max_sge = 1;
    uint32_t srq_limit = 0;
};
struct srq_init_attr {
    void *srq_context = nullptr;
    srq_attr attr;
};
/* ibv_srq_attr_mask */
enum srq_attr_mask : unsigned {
    srq_attr_max_wr = 1u << 0,
    srq_attr_limit = 1u << 1,
};

/* ---------------------------------------------------------------- asynchronous events */

/* ibv_event_type: the values of rdma-core's enum. The device raises
 * srq_limit_reached, qp_last_wqe_reached, qp_fatal, qp_req_err,
 * qp_access_err and cq_err (when: below at get_async_event); port events are the
 * port's owner's business (compat/ raises port_active / port_err). */
enum class event_type : uint8_t {
    cq_err = 0,
    qp_fatal = 1,
    qp_req_err = 2,
    qp_access_err = 3,
    comm_est = 4,
    sq_drained = 5,
    path_mig = 6,
    path_mig_err = 7,
    device_fatal = 8,
    port_active = 9,
    port_err = 10,
    lid_change = 11,
    pkey_change = 12,
    sm_change = 13,
    srq_err = 14,
    srq_limit_reached = 15,
    qp_last_wqe_reached = 16,
    client_reregister = 17,
    gid_change = 18,
};

/* ibv_async_event: the affected object (one of qp, srq, cq; or the port). */
struct async_event {
    event_type type = event_type::device_fatal;
    uroce::qp *qp = nullptr;
    uroce::srq *srq = nullptr;
    uroce::cq *cq = nullptr;
    uint8_t port_num = 0;
};

/* ibv_device_attr, the fields that mean something here. */
struct device_attr {
    uint32_t max_mr_size = 0;
    uint32_t max_qp = 0;
    uint32_t max_qp_wr = 0;
    uint32_t max_sge = 0;
    uint32_t max_cq = 0;
    uint32_t max_cqe = 0;
    uint32_t max_mr = 0;
    uint32_t max_pd = 0;
    uint32_t max_qp_rd_atom = 0;
    uint32_t max_qp_init_rd_atom = 0;
    uint32_t max_srq_wr = 0;
    uint32_t max_inline_data = 0;
    uint32_t max_msg_sz = 0;
    mtu max_mtu = mtu::mtu_4096;
};

/* ---------------------------------------------------------------- device */

/* The first QPN a device hands out by default, as rxe (RXE_MIN_QP_INDEX... 0x11). */
inline constexpr uint32_t default_first_qpn = 0x11;

/* Everything a device needs to exist; <uroce/netdev.h> is the driver side. */
struct device_config {
    netdev *dev = nullptr;       /* the NIC (or memlink port) to send through */
    rte_mempool *pool = nullptr; /* pktmbuf pool for TX; data room >= max frame */
    gid gids[4];                 /* GID table: index 0..num_gids-1 */
    unsigned num_gids = 0;
    clock_source *clock = nullptr; /* nullptr: the TSC */
    /* The secret behind memory keys (doc/security.md): 0, the default, draws
     * one from getrandom(). Any other value makes keys reproducible, and
     * predictable to whoever knows it: for tests only. */
    uint64_t seed = 0;
    uint32_t max_qp = 1024;
    uint32_t max_mr = 4096; /* below 2^16: each slot then has >= 2^16 key generations */
    mtu max_mtu = mtu::mtu_4096;
    /* The QPNs this device hands out: first_qpn, first_qpn + 1, ..., at
     * most max_qp of them, all below 2^24 (the BTH's QPN field). QP0 and QP1
     * are the special QPs (IBTA 3.5.3), so first_qpn >= 2; rxe starts at
     * 0x11, and so does the default. Devices that share a port take
     * disjoint ranges (shard_qpn_range() in <uroce/shard.h>). */
    uint32_t first_qpn = default_first_qpn;
    /* Where the QPN sequence starts in that range. true (the default): at an
     * unpredictable QPN (then first_qpn + max_qp - 1 wraps to first_qpn), so
     * a restarted process does not hand its new QPs the QPNs a stale peer
     * may still be retransmitting to, and an off-path sender cannot guess
     * QPN + PSN; drawn from `seed` when it is set (reproducible tests), else
     * from the OS's random source. false: at first_qpn (0x11 by default, as
     * rxe), for golden captures and tests that expect those numbers. */
    bool random_first_qpn = true;
    /* RC: after a few RTTs without a response, resend the last unacknowledged
     * packet with AckReq (a tail-loss probe, doc/loss-recovery.md) instead of
     * waiting out the local ACK timeout. Spec-conforming toward any peer;
     * false leaves only the timeout, as rxe. */
    bool tail_loss_probe = true;
    /* ECN marking, CNPs and DCQCN (<uroce/cc.h>, doc/congestion.md). */
    cc_config cc;
    /* When the ACKs, NAKs and READ/atomic responses that received frames
     * call for leave. false, the default: at the end of rx_burst, before
     * the application can see the receive's completion, as a NIC answers
     * without its host. true: in the next poll(), in one burst with what
     * the application posted in between (its answer to the message), not
     * a port crossing ahead of it: over memif, 2 B send_lat 0.06 us less
     * (doc/performance.md, "Thirteenth pass"). The owner must then keep
     * polling while a peer may still wait for an ACK (app::stack::linger
     * does): an application that stops, or blocks elsewhere, right after
     * its last receive would leave that ACK unsent and the peer's request
     * to fail its retries. For loops that poll without pause; the drop-in
     * libraries leave it false. */
    bool respond_on_poll = false;
};

/* Open a device (ibv_open_device). The device owns every object created on it. */
UROCE_API device *open_device(const device_config &cfg, verbs_error *err = nullptr);
UROCE_API verbs_error close_device(device *ctx);
UROCE_API verbs_error query_device(device *ctx, device_attr *attr);
UROCE_API verbs_error query_gid(device *ctx, uint8_t port_num, int index, gid *out);

/* ---------------------------------------------------------------- control path */

UROCE_API pd *alloc_pd(device *ctx, verbs_error *err = nullptr);
UROCE_API verbs_error dealloc_pd(pd *p);

/* Register [addr, addr+length) with access_flags (access_local_write, ...).
 * Remote write or atomic access requires local write, as in ibv_reg_mr. */
UROCE_API mr *reg_mr(pd *p, void *addr, size_t length, unsigned access, verbs_error *err = nullptr);
UROCE_API verbs_error dereg_mr(mr *m);
UROCE_API uint32_t mr_lkey(const mr *m);
UROCE_API uint32_t mr_rkey(const mr *m);

UROCE_API cq *create_cq(device *ctx, int cqe, void *cq_context = nullptr,
                        verbs_error *err = nullptr);
UROCE_API verbs_error destroy_cq(cq *c);
/* Up to num completions into wc[]; returns how many (>= 0), like ibv_poll_cq. */
UROCE_API int poll_cq(cq *c, int num, wc *wc);
/* ibv_resize_cq: room for cqe completions from now on; those not yet polled
 * stay, in order. inval (as rxe_cq_chk_attr) when cqe < 1, above the
 * device's max_cqe, or below the number of completions the CQ holds. */
UROCE_API verbs_error resize_cq(cq *c, int cqe);
/* The CQ's capacity (ibv_cq.cqe), and the completions it holds unpolled. */
UROCE_API uint32_t cq_size(const cq *c);
UROCE_API uint32_t cq_count(const cq *c);

UROCE_API srq *create_srq(pd *p, const srq_init_attr &attr, verbs_error *err = nullptr);
UROCE_API verbs_error destroy_srq(srq *s);
UROCE_API verbs_error post_srq_recv(srq *s, recv_wr *wr, recv_wr **bad_wr);
/* ibv_modify_srq, with rxe's checks (rxe_srq_chk_attr), all inval:
 *  srq_attr_limit arms the limit (0 disarms): once the SRQ holds fewer than
 *    srq_limit receive WQEs after the responder takes one, the device raises
 *    srq_limit_reached once and disarms (limit back to 0), as rxe's
 *    get_srq_wqe (IBTA 10.2.9.5, 11.6.3.1). A limit above max_wr;
 *  srq_attr_max_wr resizes the ring, posted WQEs kept in order. A size of 0,
 *    above the device's max_srq_wr, below the armed limit or below the WQEs
 *    the SRQ holds. */
UROCE_API verbs_error modify_srq(srq *s, const srq_attr &attr, unsigned attr_mask);
UROCE_API verbs_error query_srq(srq *s, srq_attr *attr);

UROCE_API ah *create_ah(pd *p, const ah_attr &attr, verbs_error *err = nullptr);
UROCE_API verbs_error destroy_ah(ah *a);

UROCE_API qp *create_qp(pd *p, const qp_init_attr &attr, verbs_error *err = nullptr);
/* The GSI QP, QP1 (IBTA 3.5.3, 13.5.1: a UD QP with the well-known QPN 1 and
 * Q_Key 0x80010000): where the CM's MADs arrive. One per device; attr's
 * qp_type must be ud. Its Q_Key cannot be changed: a datagram to QP1 with
 * any other Q_Key is dropped and counted (ud_qkey_drops), as rxe does; it
 * sends from source QP 1 with P_Key 0xFFFF. busy: the device has one. */
UROCE_API qp *create_gsi_qp(pd *p, const qp_init_attr &attr, verbs_error *err = nullptr);
/* Validates the transition and attributes as ib_modify_qp_is_ok() does. */
UROCE_API verbs_error modify_qp(qp *q, const qp_attr &attr, unsigned attr_mask);
UROCE_API verbs_error query_qp(qp *q, qp_attr *attr, unsigned attr_mask, qp_init_attr *init_attr);
UROCE_API verbs_error destroy_qp(qp *q);
UROCE_API uint32_t qp_num(const qp *q);

/* ---------------------------------------------------------------- bringing a QP up */

/* What a QP needs to go RESET -> INIT -> RTR -> RTS: the peer's numbers,
 * the path and the transport's limits. The one place that knows which
 * attribute each transition takes (rdma_cm's accept and connect, apps that
 * trade QPNs out of band). */
struct qp_connect_attr {
    uint32_t dest_qp_num = 0; /* the peer's QPN (RC/UC) */
    uint32_t sq_psn = 0;      /* our first PSN */
    uint32_t rq_psn = 0;      /* the peer's first PSN */
    mtu path_mtu = mtu::mtu_1024;
    uroce::ah_attr ah_attr; /* the path to the peer (dgid, sgid_index, dmac, flow label) */
    unsigned access = access_local_write | access_remote_write | access_remote_read |
                      access_remote_atomic; /* INIT (RC/UC) */
    uint32_t qkey = 0;                      /* INIT (UD) */
    uint8_t max_rd_atomic = 1;              /* RTS: READ/atomic we may have outstanding */
    uint8_t max_dest_rd_atomic = 1;         /* RTR: ... the peer may have at us */
    uint8_t min_rnr_timer = 12;             /* RTR: 0.64 ms */
    uint8_t timeout = 14;                   /* RTS: local ACK timeout, 4.096 us * 2^14 */
    uint8_t retry_cnt = 7;
    uint8_t rnr_retry = 7; /* 7: retry for ever */
};
/* Each transition alone (the CM does RTR and RTS when the handshake says),
 * with the attributes the QP's type takes. */
UROCE_API verbs_error modify_qp_to_init(qp *q, const qp_connect_attr &a);
UROCE_API verbs_error modify_qp_to_rtr(qp *q, const qp_connect_attr &a);
UROCE_API verbs_error modify_qp_to_rts(qp *q, const qp_connect_attr &a);
/* From RESET or INIT all the way to RTS. */
UROCE_API verbs_error connect_qp(qp *q, const qp_connect_attr &a);

/* ---------------------------------------------------------------- asynchronous events */

/* The device's asynchronous events, oldest first (ibv_get_async_event
 * without the blocking: poll it from the loop that drives the device).
 * false: none queued. The device raises
 *  - srq_limit_reached (srq): an armed SRQ fell below its limit (modify_srq);
 *  - cq_err (cq): a completion was lost to a full CQ (counted in
 *    cq_overflows too), once per lost completion, as rxe_cq_post;
 *  - qp_last_wqe_reached (qp): a QP attached to an SRQ entered ERR, by
 *    modify_qp or by the transport; it takes no more WQEs from the SRQ
 *    (IBTA 11.6.3.1; rxe raises it when the ERR QP's receive side is
 *    flushed, rxe_resp.c flush_recv_queue);
 *  - qp_req_err / qp_access_err / qp_fatal (qp): the responder took an RC QP
 *    to ERR on a request it NAKed as invalid / a remote access error / a
 *    remote operational error (IBTA 9.9.3.1, 11.6.3.1: the work queue errors
 *    the responder detects; a NIC raises them, rxe raises none), whether or
 *    not a receive completion reports it too. The requester's errors (retry
 *    exceeded, a NAK received, a local protection error) raise no event:
 *    its completions report them, as on rxe and NICs.
 * The queue holds async_event_queue_cap events; an event raised while it is
 * full is dropped and counted (async_event_overflows). Destroying a QP, SRQ
 * or CQ drops its queued events. */
inline constexpr unsigned async_event_queue_cap = 64;
UROCE_API bool get_async_event(device *d, async_event *ev);

/* ---------------------------------------------------------------- counters (<uroce/counters.h>) */

/* The device's own counters: frames in and out, and every drop by reason. */
UROCE_API const dev_counters &device_counters(const device *d);
/* The sum of every QP's counters, destroyed QPs included. */
UROCE_API qp_counters device_qp_counters(const device *d);
/* One QP's counters. */
UROCE_API const qp_counters &qp_counters_of(const qp *q);
/* Each live QP of the device, in QPN order (control path: a walk of the QP table). */
UROCE_API void for_each_qp(const device *d, const std::function<void(const qp *)> &fn);

/* ---------------------------------------------------------------- data path */

UROCE_API verbs_error post_send(qp *q, send_wr *wr, send_wr **bad_wr);
UROCE_API verbs_error post_recv(qp *q, recv_wr *wr, recv_wr **bad_wr);

} // namespace uroce

#endif

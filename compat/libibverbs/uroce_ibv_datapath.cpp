/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the data path behind ibv_post_send, ibv_post_recv,
 * ibv_post_srq_recv and ibv_poll_cq (inline functions of <infiniband/verbs.h>
 * that call through ibv_context.ops), and the new post send API
 * (ibv_qp_ex's wr_* functions, which perftest uses by default).
 *
 * Thread mode: a QP's sends go through its send CQ's work channel and its
 * receives through its receive CQ's; the progress thread hands them to the
 * device. Inline mode: straight into uroce under the stack lock, and
 * ibv_poll_cq runs the stack's loop once before it polls.
 */
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <sched.h>
#include <type_traits>

#include "uroce_ibv_ops.h"
#include "uroce_ibv_runtime.h"

using namespace uroce;
using namespace uroce::compat;

/* The SGE and the receive WR have the same layout in both APIs: they pass
 * through without a copy. */
static_assert(sizeof(ibv_sge) == sizeof(uroce::sge));
static_assert(offsetof(ibv_sge, addr) == offsetof(uroce::sge, addr));
static_assert(offsetof(ibv_sge, length) == offsetof(uroce::sge, length));
static_assert(offsetof(ibv_sge, lkey) == offsetof(uroce::sge, lkey));
static_assert(sizeof(ibv_recv_wr) == sizeof(uroce::recv_wr));
static_assert(offsetof(ibv_recv_wr, next) == offsetof(uroce::recv_wr, next));
static_assert(offsetof(ibv_recv_wr, sg_list) == offsetof(uroce::recv_wr, sg_list));
static_assert(offsetof(ibv_recv_wr, num_sge) == offsetof(uroce::recv_wr, num_sge));

namespace {

constexpr int chunk = 32; /* WRs converted per step (on the stack) */

/* Room on the stack for N objects that are written before they are read
 * (uroce::poll_cq copies each completion it returns whole; to_uroce_wr
 * writes every field), without value-initializing all N on every call:
 * `uroce::wc u[chunk]` zeroed 1.5 KiB per ibv_poll_cq and `send_wr
 * u[chunk]` 2.3 KiB per ibv_post_send, most of both functions' time under
 * a stock ib_send_bw. T is an implicit-lifetime type (trivially copyable
 * and destructible), so the storage provides its objects. */
template <typename T, int N> class scratch {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

  public:
    T *data() { return std::launder(reinterpret_cast<T *>(raw_)); }
    T &operator[](int i) { return data()[i]; }

  private:
    alignas(T) unsigned char raw_[sizeof(T) * N];
};

bool to_uroce_wr(const ibv_send_wr &w, uroce::send_wr &u) {
    if (w.opcode > IBV_WR_SEND_WITH_INV || w.opcode == IBV_WR_LOCAL_INV ||
        w.opcode == IBV_WR_BIND_MW)
        return false;
    std::memset(&u.wr, 0, sizeof u.wr); /* the union's bytes the opcode leaves */
    u.wr_id = w.wr_id;
    u.next = nullptr;
    u.sg_list = reinterpret_cast<uroce::sge *>(w.sg_list);
    u.num_sge = w.num_sge;
    u.opcode = uroce::wr_opcode(w.opcode);
    u.send_flags =
        w.send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
    u.imm_data = w.imm_data;
    switch (w.opcode) {
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        u.wr.atomic.remote_addr = w.wr.atomic.remote_addr;
        u.wr.atomic.compare_add = w.wr.atomic.compare_add;
        u.wr.atomic.swap = w.wr.atomic.swap;
        u.wr.atomic.rkey = w.wr.atomic.rkey;
        break;
    default:
        u.wr.rdma.remote_addr = w.wr.rdma.remote_addr;
        u.wr.rdma.rkey = w.wr.rdma.rkey;
        break;
    }
    return true;
}

/* Post a chain of uroce WRs; *bad_index: the first one not taken. */
int post_uroce_sends(compat_qp *q, uroce::send_wr *first, int *bad_index) {
    runtime &rt = *to_ctx(q->qpx.qp_base.context)->rt;
    uroce::send_wr *bad = nullptr;
    verbs_error e;
    if (rt.mode() == progress_mode::thread) {
        compat_cq *c = q->send_cq;
        c->post_lock.lock();
        e = c->ch->post_send(q->uqp, first, &bad);
        c->post_lock.unlock();
        rt.kick();
    } else {
        runtime::guard g(rt);
        e = uroce::post_send(q->uqp, first, &bad);
    }
    if (e == verbs_error::ok) return 0;
    int i = 0;
    for (uroce::send_wr *w = first; w && w != bad; w = w->next)
        i++;
    *bad_index = i;
    return to_errno(e);
}

void to_ibv_wc(const uroce::wc &u, ibv_wc &w) {
    w.wr_id = u.wr_id;
    w.status = ibv_wc_status(u.status);
    w.opcode = ibv_wc_opcode(u.opcode);
    w.vendor_err = u.vendor_err;
    w.byte_len = u.byte_len;
    w.imm_data = u.imm_data;
    w.qp_num = u.qp_num;
    w.src_qp = u.src_qp;
    w.wc_flags = u.wc_flags;
    w.pkey_index = u.pkey_index;
    w.slid = u.slid;
    w.sl = u.sl;
    w.dlid_path_bits = u.dlid_path_bits;
}

} // namespace

namespace uroce::compat {

int op_post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr) {
    compat_qp *q = to_qp(qp);
    while (wr) {
        scratch<uroce::send_wr, chunk> u;
        ibv_send_wr *orig[chunk];
        int n = 0;
        for (ibv_send_wr *w = wr; w && n < chunk; w = w->next, n++) {
            orig[n] = w;
            if (!to_uroce_wr(*w, u[n])) {
                *bad_wr = w;
                return unsupported("this send opcode (local invalidate, memory window "
                                   "bind, TSO, atomic write)",
                                   EINVAL);
            }
            if (w->opcode <= IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_SEND_WITH_INV) {
                if (q->type == IBV_QPT_UD) {
                    if (!w->wr.ud.ah) {
                        *bad_wr = w;
                        return EINVAL;
                    }
                    u[n].wr.ud.ah = to_ah(w->wr.ud.ah)->uah;
                    u[n].wr.ud.remote_qpn = w->wr.ud.remote_qpn;
                    u[n].wr.ud.remote_qkey = w->wr.ud.remote_qkey;
                }
            }
            if (n) u[n - 1].next = &u[n];
        }
        int bad = 0;
        const int err = post_uroce_sends(q, u.data(), &bad);
        if (err) {
            *bad_wr = orig[bad];
            return err;
        }
        wr = orig[n - 1]->next;
    }
    return 0;
}

int op_post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) {
    compat_qp *q = to_qp(qp);
    runtime &rt = *to_ctx(qp->context)->rt;
    auto *u = reinterpret_cast<uroce::recv_wr *>(wr);
    uroce::recv_wr *bad = nullptr;
    verbs_error e;
    if (rt.mode() == progress_mode::thread) {
        compat_cq *c = q->recv_cq;
        c->post_lock.lock();
        e = c->ch->post_recv(q->uqp, u, &bad);
        c->post_lock.unlock();
        rt.kick();
    } else {
        runtime::guard g(rt);
        e = uroce::post_recv(q->uqp, u, &bad);
    }
    if (e == verbs_error::ok) return 0;
    *bad_wr = reinterpret_cast<ibv_recv_wr *>(bad);
    return to_errno(e);
}

int op_post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) {
    /* SRQ receives are no work-channel operation: under the lock, in both modes. */
    runtime &rt = *to_ctx(srq->context)->rt;
    uroce::recv_wr *bad = nullptr;
    runtime::guard g(rt);
    const verbs_error e =
        uroce::post_srq_recv(to_srq(srq)->usrq, reinterpret_cast<uroce::recv_wr *>(wr), &bad);
    if (e == verbs_error::ok) return 0;
    *bad_wr = reinterpret_cast<ibv_recv_wr *>(bad);
    return to_errno(e);
}

int op_poll_cq(ibv_cq *cq, int num, ibv_wc *wc) {
    compat_cq *c = to_cq(cq);
    runtime &rt = *to_ctx(cq->context)->rt;
    int total = 0;
    scratch<uroce::wc, chunk> u;
    if (rt.mode() == progress_mode::thread) {
        for (int pass = 0; pass < 2; pass++) {
            c->poll_lock.lock();
            while (total < num) {
                const int got = c->ch->poll(std::min(num - total, chunk), u.data());
                for (int i = 0; i < got; i++)
                    to_ibv_wc(u[i], wc[total + i]);
                total += got;
                if (got < chunk) break;
            }
            c->poll_lock.unlock();
            /* Nothing: if the progress thread naps or waits for a CPU, do
             * its work (once) and look again. */
            if (total || pass || !rt.help_drive()) break;
        }
        bool yield = false;
        c->poll_lock.lock();
        if (total)
            c->empty_polls = 0;
        else if (++c->empty_polls >= runtime::idle_spins_before_yield) {
            c->empty_polls = 0;
            yield = true;
        }
        c->poll_lock.unlock();
        /* Let another thread have this CPU now and then: the progress
         * thread if it shares it, or the peer's threads when it runs on
         * this machine. Without it, ibv_rc_pingpong between two thread-mode
         * processes on 2 loaded CPUs took 1-2.4 ms per iteration in three
         * runs of five (24-240 us with it). */
        if (yield) sched_yield();
        return total;
    }
    runtime::guard g(rt);
    rt.drive_locked();
    while (total < num) {
        const int got = uroce::poll_cq(c->ucq, std::min(num - total, chunk), u.data());
        if (got <= 0) break;
        for (int i = 0; i < got; i++)
            to_ibv_wc(u[i], wc[total + i]);
        total += got;
        if (got < chunk) break;
    }
    c->taken += uint64_t(total);
    return total;
}

/* ---------------------------------------------------------------- ibv_cq_ex polling */

namespace {

compat_cq *cx(ibv_cq_ex *c) {
    return reinterpret_cast<compat_cq *>(c);
}

/* ibv_start_poll / ibv_next_poll: the next completion becomes the current
 * one (status and wr_id in the CQ, the rest through read_*); ENOENT when
 * there is none. One ibv_poll_cq of one entry each, so both progress
 * modes behave as ibv_poll_cq does. */
int cq_ex_next(ibv_cq_ex *c) {
    compat_cq *q = cx(c);
    if (op_poll_cq(&q->cq, 1, &q->cur) != 1) return ENOENT;
    c->status = q->cur.status;
    c->wr_id = q->cur.wr_id;
    return 0;
}

int cq_ex_start_poll(ibv_cq_ex *c, ibv_poll_cq_attr *attr) {
    /* comp_mask must be 0 (rdma-core: no attribute is defined). */
    if (attr && attr->comp_mask) return EINVAL;
    return cq_ex_next(c);
}

void cq_ex_end_poll(ibv_cq_ex *) {}

ibv_wc_opcode cq_ex_opcode(ibv_cq_ex *c) {
    return cx(c)->cur.opcode;
}
uint32_t cq_ex_vendor_err(ibv_cq_ex *c) {
    return cx(c)->cur.vendor_err;
}
uint32_t cq_ex_byte_len(ibv_cq_ex *c) {
    return cx(c)->cur.byte_len;
}
__be32 cq_ex_imm_data(ibv_cq_ex *c) {
    return cx(c)->cur.imm_data;
}
uint32_t cq_ex_qp_num(ibv_cq_ex *c) {
    return cx(c)->cur.qp_num;
}
uint32_t cq_ex_src_qp(ibv_cq_ex *c) {
    return cx(c)->cur.src_qp;
}
unsigned cq_ex_wc_flags(ibv_cq_ex *c) {
    return cx(c)->cur.wc_flags;
}
uint32_t cq_ex_slid(ibv_cq_ex *c) {
    return cx(c)->cur.slid;
}
uint8_t cq_ex_sl(ibv_cq_ex *c) {
    return cx(c)->cur.sl;
}
uint8_t cq_ex_dlid_path_bits(ibv_cq_ex *c) {
    return cx(c)->cur.dlid_path_bits;
}

} // namespace

void init_cq_ex_ops(ibv_cq_ex *c) {
    c->comp_mask = 0;
    c->start_poll = cq_ex_start_poll;
    c->next_poll = cq_ex_next;
    c->end_poll = cq_ex_end_poll;
    c->read_opcode = cq_ex_opcode;
    c->read_vendor_err = cq_ex_vendor_err;
    c->read_byte_len = cq_ex_byte_len;
    c->read_imm_data = cq_ex_imm_data;
    c->read_qp_num = cq_ex_qp_num;
    c->read_src_qp = cq_ex_src_qp;
    c->read_wc_flags = cq_ex_wc_flags;
    c->read_slid = cq_ex_slid;
    c->read_sl = cq_ex_sl;
    c->read_dlid_path_bits = cq_ex_dlid_path_bits;
    /* Timestamps, CVLAN, flow tag, TM: refused at creation, left NULL. */
}

} // namespace uroce::compat

/* ---------------------------------------------------------------- the new post send API */

namespace {

compat_qp *qx(ibv_qp_ex *q) {
    return reinterpret_cast<compat_qp *>(q);
}

/* A new WR at the end of the batch, from wr_id and wr_flags. */
uroce::send_wr *next_wr(ibv_qp_ex *q, uroce::wr_opcode op) {
    compat_qp *c = qx(q);
    if (c->batch.size() == c->batch.capacity()) {
        c->batch_error = ENOMEM;
        return nullptr;
    }
    c->batch.emplace_back();
    uroce::send_wr &w = c->batch.back();
    w.wr_id = q->wr_id;
    w.opcode = op;
    w.send_flags =
        q->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
    w.sg_list = &c->batch_sges[(c->batch.size() - 1) * c->max_send_sge];
    w.num_sge = 0;
    return &w;
}

uroce::send_wr *last_wr(ibv_qp_ex *q) {
    compat_qp *c = qx(q);
    return c->batch.empty() ? nullptr : &c->batch.back();
}

void wr_rdma(ibv_qp_ex *q, uroce::wr_opcode op, uint32_t rkey, uint64_t addr) {
    if (uroce::send_wr *w = next_wr(q, op)) {
        w->wr.rdma.remote_addr = addr;
        w->wr.rdma.rkey = rkey;
    }
}

void wr_rdma_write(ibv_qp_ex *q, uint32_t rkey, uint64_t addr) {
    wr_rdma(q, uroce::wr_opcode::rdma_write, rkey, addr);
}
void wr_rdma_write_imm(ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm) {
    wr_rdma(q, uroce::wr_opcode::rdma_write_with_imm, rkey, addr);
    if (uroce::send_wr *w = last_wr(q)) w->imm_data = imm;
}
void wr_rdma_read(ibv_qp_ex *q, uint32_t rkey, uint64_t addr) {
    wr_rdma(q, uroce::wr_opcode::rdma_read, rkey, addr);
}
void wr_atomic(ibv_qp_ex *q, uroce::wr_opcode op, uint32_t rkey, uint64_t addr, uint64_t cmp_add,
               uint64_t swap) {
    if (uroce::send_wr *w = next_wr(q, op)) {
        w->wr.atomic.remote_addr = addr;
        w->wr.atomic.compare_add = cmp_add;
        w->wr.atomic.swap = swap;
        w->wr.atomic.rkey = rkey;
    }
}
void wr_atomic_cmp_swp(ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t cmp, uint64_t swap) {
    wr_atomic(q, uroce::wr_opcode::atomic_cmp_and_swp, rkey, addr, cmp, swap);
}
void wr_atomic_fetch_add(ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add) {
    wr_atomic(q, uroce::wr_opcode::atomic_fetch_and_add, rkey, addr, add, 0);
}
void wr_send(ibv_qp_ex *q) {
    next_wr(q, uroce::wr_opcode::send);
}
void wr_send_imm(ibv_qp_ex *q, __be32 imm) {
    if (uroce::send_wr *w = next_wr(q, uroce::wr_opcode::send_with_imm)) w->imm_data = imm;
}
void wr_send_inv(ibv_qp_ex *q, uint32_t rkey) {
    if (uroce::send_wr *w = next_wr(q, uroce::wr_opcode::send_with_inv)) w->invalidate_rkey = rkey;
}
void wr_unsupported(ibv_qp_ex *q) {
    qx(q)->batch_error = unsupported("this ibv_wr_* operation", EOPNOTSUPP);
}
void wr_bind_mw(ibv_qp_ex *q, ibv_mw *, uint32_t, const ibv_mw_bind_info *) {
    wr_unsupported(q);
}
void wr_local_inv(ibv_qp_ex *q, uint32_t) {
    wr_unsupported(q);
}
void wr_send_tso(ibv_qp_ex *q, void *, uint16_t, uint16_t) {
    wr_unsupported(q);
}
void wr_set_xrc_srqn(ibv_qp_ex *q, uint32_t) {
    wr_unsupported(q);
}
void wr_atomic_write(ibv_qp_ex *q, uint32_t, uint64_t, const void *) {
    wr_unsupported(q);
}
void wr_set_ud_addr(ibv_qp_ex *q, ibv_ah *ah, uint32_t qpn, uint32_t qkey) {
    if (uroce::send_wr *w = last_wr(q)) {
        w->wr.ud.ah = ah ? to_ah(ah)->uah : nullptr;
        w->wr.ud.remote_qpn = qpn;
        w->wr.ud.remote_qkey = qkey;
    }
}
void wr_set_sge(ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length) {
    if (uroce::send_wr *w = last_wr(q)) {
        w->sg_list[0] = {addr, length, lkey};
        w->num_sge = 1;
    }
}
void wr_set_sge_list(ibv_qp_ex *q, size_t n, const ibv_sge *list) {
    uroce::send_wr *w = last_wr(q);
    if (!w) return;
    if (n > qx(q)->max_send_sge) {
        qx(q)->batch_error = EINVAL;
        return;
    }
    for (size_t i = 0; i < n; i++)
        w->sg_list[i] = {list[i].addr, list[i].length, list[i].lkey};
    w->num_sge = int(n);
}
void wr_set_inline_data_list(ibv_qp_ex *q, size_t n, const ibv_data_buf *bufs) {
    compat_qp *c = qx(q);
    uroce::send_wr *w = last_wr(q);
    if (!w) return;
    uint8_t *room = c->batch_inline.data() + (c->batch.size() - 1) * c->max_inline;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (len + bufs[i].length > c->max_inline) {
            c->batch_error = EINVAL;
            return;
        }
        std::memcpy(room + len, bufs[i].addr, bufs[i].length);
        len += bufs[i].length;
    }
    w->sg_list[0] = {uint64_t(uintptr_t(room)), uint32_t(len), 0};
    w->num_sge = 1;
    w->send_flags |= uroce::send_inline;
}
void wr_set_inline_data(ibv_qp_ex *q, void *addr, size_t length) {
    ibv_data_buf b{addr, length};
    wr_set_inline_data_list(q, 1, &b);
}
void wr_start(ibv_qp_ex *q) {
    qx(q)->batch.clear();
    qx(q)->batch_error = 0;
}
void wr_abort(ibv_qp_ex *q) {
    qx(q)->batch.clear();
    qx(q)->batch_error = 0;
}
int wr_complete(ibv_qp_ex *q) {
    compat_qp *c = qx(q);
    int err = c->batch_error;
    if (!err && !c->batch.empty()) {
        for (size_t i = 0; i + 1 < c->batch.size(); i++)
            c->batch[i].next = &c->batch[i + 1];
        c->batch.back().next = nullptr;
        int bad = 0;
        err = post_uroce_sends(c, c->batch.data(), &bad);
    }
    c->batch.clear();
    c->batch_error = 0;
    return err;
}

} // namespace

namespace uroce::compat {

void init_qp_ex_ops(ibv_qp_ex *q) {
    q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    q->wr_atomic_fetch_add = wr_atomic_fetch_add;
    q->wr_bind_mw = wr_bind_mw;
    q->wr_local_inv = wr_local_inv;
    q->wr_rdma_read = wr_rdma_read;
    q->wr_rdma_write = wr_rdma_write;
    q->wr_rdma_write_imm = wr_rdma_write_imm;
    q->wr_send = wr_send;
    q->wr_send_imm = wr_send_imm;
    q->wr_send_inv = wr_send_inv;
    q->wr_send_tso = wr_send_tso;
    q->wr_set_ud_addr = wr_set_ud_addr;
    q->wr_set_xrc_srqn = wr_set_xrc_srqn;
    q->wr_set_inline_data = wr_set_inline_data;
    q->wr_set_inline_data_list = wr_set_inline_data_list;
    q->wr_set_sge = wr_set_sge;
    q->wr_set_sge_list = wr_set_sge_list;
    q->wr_start = wr_start;
    q->wr_complete = wr_complete;
    q->wr_abort = wr_abort;
    q->wr_atomic_write = wr_atomic_write;
}

} // namespace uroce::compat

extern "C" ibv_qp_ex *ibv_qp_to_qp_ex(ibv_qp *qp) {
    return &to_qp(qp)->qpx;
}

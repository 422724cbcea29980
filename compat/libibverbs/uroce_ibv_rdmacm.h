/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: what compat's own librdmacm.so.1 needs from the
 * library that owns the process's stack (exported under
 * UROCE_COMPAT_PRIVATE in libibverbs.map; nothing else links them).
 *
 * The rdma_cm runs in the stack's thread (<uroce/cm.h>, "Threading"): here
 * that is whoever holds the stack lock, so librdmacm makes every CM call
 * between rdmacm_lock and rdmacm_unlock (the progress thread, or inline
 * mode's drivers, poll the engine, and with it the CM, under that lock).
 */
#ifndef UROCE_IBV_RDMACM_H
#define UROCE_IBV_RDMACM_H

#include <infiniband/verbs.h>

#include <uroce/verbs.h>

namespace uroce {
class engine;
}

namespace uroce::compat {

class runtime;

/* The context's runtime (an ibv_context of this library). */
runtime *rdmacm_runtime(ibv_context *ctx);
void rdmacm_lock(ibv_context *ctx);
void rdmacm_unlock(ibv_context *ctx);
/* The engine the CM is opened on (the lock held to use it). */
uroce::engine *rdmacm_engine(ibv_context *ctx);

/* Makes the uroce QP of an ibv_qp (called with the stack lock held):
 * nullptr with *err on failure. */
using qp_maker = uroce::qp *(*)(uroce::pd *pd, uroce::qp_init_attr *attr, void *arg,
                                uroce::verbs_error *err);
/* ibv_create_qp, the QP itself made by make (rdma_create_qp: the CM's
 * create_qp, which also moves it to INIT, or RTS for UD); nullptr with
 * errno set. */
ibv_qp *rdmacm_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr, qp_maker make, void *arg);
/* fn(qp) runs, the lock held, when ibv_destroy_qp destroys a QP that
 * rdmacm_create_qp made: librdmacm takes it from its id, if the
 * application did not use rdma_destroy_qp. */
void rdmacm_set_qp_release_hook(ibv_context *ctx, void (*fn)(uroce::qp *));

/* fn(arg) runs, the lock held, when the stack stops (the last
 * ibv_close_device, or exit): librdmacm closes its CM there. */
void rdmacm_add_stop_hook(ibv_context *ctx, void (*fn)(void *), void *arg);
/* fn(arg) runs, the lock held, when the stack stops but before its
 * linger: librdmacm destroys the ids the application left, as the kernel
 * does when a process's rdma_cm file closes (their DREQs and REJs go out
 * during the linger). */
void rdmacm_add_leave_hook(ibv_context *ctx, void (*fn)(void *), void *arg);

} // namespace uroce::compat

#endif

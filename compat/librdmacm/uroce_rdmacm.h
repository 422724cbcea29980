/* SPDX-License-Identifier: BSD-3-Clause
 * compat/librdmacm: the objects behind librdmacm's handles, and the one CM
 * of the process (doc/compat.md, "librdmacm").
 *
 * Each handle embeds the rdma-core struct the application sees as its
 * first member (struct rdma_cm_id, ...) and holds the <uroce/cm.h> object
 * it stands for. The CM is opened on the stack of compat's
 * libibverbs.so.1 (its engine) with the first event channel or id, on
 * the ibv_context this library opens, which is every id's `verbs`.
 * Every <uroce/cm.h> call but get_event / ack_event runs with the stack
 * lock held (the CM's thread is whoever holds it: uroce_ibv_rdmacm.h).
 */
#ifndef UROCE_RDMACM_H
#define UROCE_RDMACM_H

#include <rdma/rdma_cma.h>

#include <uroce/cm.h>

namespace uroce::compat::rdmacm {

struct channel {
    rdma_event_channel ch; /* ch.fd: the CM channel's eventfd */
    uroce::cm_event_channel *uch = nullptr;
};

struct id {
    rdma_cm_id id;
    uroce::cm_id *uid = nullptr;
    channel *chan = nullptr;
    /* The PD rdma_create_qp allocated (none given, the id had none); the
     * CQs it made are the id's send_cq / recv_cq (destroy_own_cqs). */
    bool own_pd = false;
    /* Events naming it handed to the application and not yet acknowledged
     * (ids_mu): rdma_destroy_id waits for them. */
    unsigned events_out = 0;
};

struct event {
    rdma_cm_event ev;
    uroce::cm_event *uev = nullptr;
    /* The wrappers it counted in (events_out), released by the ack. */
    id *named = nullptr;
    id *listener = nullptr;
};

/* The CM and the context, opened on first use; nullptr with errno set
 * (and the reason on stderr) when the stack cannot start. */
uroce::cm_service *cm();
ibv_context *context();

/* Holds the stack lock (the CM's thread) for its scope. */
class guard {
  public:
    guard();
    ~guard();
    guard(const guard &) = delete;
    guard &operator=(const guard &) = delete;
};

/* The handle behind a live id / channel of this library; nullptr, errno
 * EINVAL and one stderr line naming `call` for any other pointer (one
 * destroyed already, or never made here). */
id *live_id(rdma_cm_id *i, const char *call);
/* raced: given, and c was destroyed by another thread a moment ago, it is
 * set (no stderr line, errno untouched): rdma_get_cm_event waits then. */
channel *live_channel(rdma_event_channel *c, const char *call, bool *raced = nullptr);

/* errno from the CM's error, -1 (librdmacm's convention); 0 for ok. */
int fail(uroce::verbs_error e);
/* One stderr line per unsupported call, errno = e, -1. */
int unsupported(const char *what, int e = ENOSYS);

} // namespace uroce::compat::rdmacm

#endif

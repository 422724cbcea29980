/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the functions behind ibv_context.ops and the
 * verbs_context extension, shared between the files that define them and
 * uroce_ibv_device.cpp, which fills the tables.
 */
#ifndef UROCE_IBV_OPS_H
#define UROCE_IBV_OPS_H

#include <infiniband/verbs.h>

#include <uroce/verbs.h>

namespace uroce::compat {

/* uroce_ibv_datapath.cpp */
int op_post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
int op_post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int op_post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int op_poll_cq(ibv_cq *cq, int num, ibv_wc *wc);
/* The ibv_cq_ex poll functions (start_poll, next_poll, read_*...). */
void init_cq_ex_ops(ibv_cq_ex *cqx);
void init_qp_ex_ops(ibv_qp_ex *qpx);

/* uroce_ibv_events.cpp */
int op_req_notify_cq(ibv_cq *cq, int solicited_only);

/* uroce_ibv_verbs.cpp */
ibv_qp *op_create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr);
ibv_cq_ex *op_create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr);
ibv_mw *op_alloc_mw(ibv_pd *pd, ibv_mw_type type);
int op_bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *bind);
int op_dealloc_mw(ibv_mw *mw);

/* uroce_ibv_device.cpp */
int op_query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr, size_t attr_len);
int op_query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
                       ibv_device_attr_ex *attr, size_t attr_size);

/* Conversions (uroce_ibv_verbs.cpp). */
uroce::qp_attr to_uroce(const ibv_qp_attr &a);
void from_uroce(const uroce::qp_attr &u, ibv_qp_attr &a);
int to_errno(verbs_error e);
/* One message per unsupported feature, then errno = e; returns e. */
int unsupported(const char *what, int e = EOPNOTSUPP);

} // namespace uroce::compat

#endif

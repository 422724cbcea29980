/* SPDX-License-Identifier: BSD-3-Clause
 * Bringing a QP up (verbs.h qp_connect_attr): RESET -> INIT -> RTR -> RTS
 * with the attributes each transition takes for the QP's type (IBTA
 * 11.2.5.3 table 91; ib_modify_qp_is_ok's required masks), as rdma_cm's
 * rdma_init_qp_attr fills them for rdma_accept and rdma_connect.
 */
#include "uroce_qp.h"

namespace uroce {

verbs_error modify_qp_to_init(qp *q, const qp_connect_attr &a) {
    if (!q) return verbs_error::inval;
    qp_attr at;
    at.qp_state = qp_state::init;
    at.pkey_index = 0;
    at.port_num = 1;
    unsigned mask = qp_attr_state | qp_attr_pkey_index | qp_attr_port;
    if (q->type == qp_type::ud) {
        at.qkey = a.qkey;
        mask |= qp_attr_qkey;
    } else {
        at.qp_access_flags = a.access;
        mask |= qp_attr_access_flags;
    }
    return qp_modify(q, at, mask);
}

verbs_error modify_qp_to_rtr(qp *q, const qp_connect_attr &a) {
    if (!q) return verbs_error::inval;
    qp_attr at;
    at.qp_state = qp_state::rtr;
    unsigned mask = qp_attr_state;
    if (q->type != qp_type::ud) {
        at.path_mtu = a.path_mtu;
        at.dest_qp_num = a.dest_qp_num;
        at.rq_psn = a.rq_psn;
        at.ah_attr = a.ah_attr;
        mask |= qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn;
        if (q->type == qp_type::rc) {
            at.max_dest_rd_atomic = a.max_dest_rd_atomic;
            at.min_rnr_timer = a.min_rnr_timer;
            mask |= qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer;
        }
    }
    return qp_modify(q, at, mask);
}

verbs_error modify_qp_to_rts(qp *q, const qp_connect_attr &a) {
    if (!q) return verbs_error::inval;
    qp_attr at;
    at.qp_state = qp_state::rts;
    at.sq_psn = a.sq_psn;
    unsigned mask = qp_attr_state | qp_attr_sq_psn;
    if (q->type == qp_type::rc) {
        at.timeout = a.timeout;
        at.retry_cnt = a.retry_cnt;
        at.rnr_retry = a.rnr_retry;
        at.max_rd_atomic = a.max_rd_atomic;
        mask |= qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic;
    }
    return qp_modify(q, at, mask);
}

verbs_error connect_qp(qp *q, const qp_connect_attr &a) {
    if (!q) return verbs_error::inval;
    if (q->state == qp_state::reset)
        if (verbs_error e = modify_qp_to_init(q, a); e != verbs_error::ok) return e;
    if (q->state != qp_state::init) return verbs_error::inval;
    if (verbs_error e = modify_qp_to_rtr(q, a); e != verbs_error::ok) return e;
    return modify_qp_to_rts(q, a);
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * compat/librdmacm: rdma_getaddrinfo, the device list, rdma_event_str,
 * options, and what uroce does not do (rsockets, multicast, ECE, ...):
 * those fail with ENOSYS and a line on stderr, so the tools that import
 * them load and fail cleanly if they call them.
 */
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "uroce_rdmacm.h"

using namespace uroce::compat::rdmacm;

namespace {

void free_list(rdma_addrinfo *ai) {
    while (ai) {
        rdma_addrinfo *next = ai->ai_next;
        std::free(ai->ai_src_addr);
        std::free(ai->ai_dst_addr);
        std::free(ai);
        ai = next;
    }
}

sockaddr *copy_addr(const sockaddr *a, socklen_t len) {
    auto *c = static_cast<sockaddr *>(std::malloc(len));
    if (c) std::memcpy(c, a, len);
    return c;
}

} // namespace

extern "C" {

int rdma_getaddrinfo(const char *node, const char *service, const rdma_addrinfo *hints,
                     rdma_addrinfo **res) {
    /* The kernel's resolver for the names (uroce's addresses are numeric
     * anyway: the kernel does not know them), as librdmacm without ib_acm. */
    addrinfo h{};
    h.ai_socktype = SOCK_STREAM; /* one entry per address */
    const int flags = hints ? hints->ai_flags : 0;
    if (flags & RAI_PASSIVE) h.ai_flags |= AI_PASSIVE;
    if (flags & RAI_NUMERICHOST) h.ai_flags |= AI_NUMERICHOST;
    h.ai_family = hints && (flags & RAI_FAMILY) ? hints->ai_family : AF_UNSPEC;
    if (hints && hints->ai_family) h.ai_family = hints->ai_family;
    addrinfo *list = nullptr;
    const int r = getaddrinfo(node, service, &h, &list);
    if (r) {
        errno = r == EAI_SYSTEM ? errno : ENOENT;
        return r;
    }
    rdma_addrinfo *head = nullptr, **tail = &head;
    for (addrinfo *a = list; a; a = a->ai_next) {
        if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
        auto *ra = static_cast<rdma_addrinfo *>(std::calloc(1, sizeof(rdma_addrinfo)));
        if (!ra) break;
        ra->ai_flags = flags;
        ra->ai_family = a->ai_family;
        ra->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
        ra->ai_qp_type = hints && hints->ai_qp_type         ? hints->ai_qp_type
                         : ra->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                            : IBV_QPT_RC;
        if (flags & RAI_PASSIVE) {
            ra->ai_src_addr = copy_addr(a->ai_addr, a->ai_addrlen);
            ra->ai_src_len = a->ai_addrlen;
        } else {
            ra->ai_dst_addr = copy_addr(a->ai_addr, a->ai_addrlen);
            ra->ai_dst_len = a->ai_addrlen;
            if (hints && hints->ai_src_addr && hints->ai_src_len) {
                ra->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
                ra->ai_src_len = hints->ai_src_len;
            }
        }
        *tail = ra;
        tail = &ra->ai_next;
    }
    freeaddrinfo(list);
    if (!head) {
        errno = ENOENT;
        return EAI_NONAME;
    }
    *res = head;
    return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo *res) {
    free_list(res);
}

ibv_context **rdma_get_devices(int *num_devices) {
    ibv_context *c = context();
    auto **list = static_cast<ibv_context **>(std::calloc(2, sizeof(ibv_context *)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    list[0] = c;
    if (num_devices) *num_devices = c ? 1 : 0;
    return list;
}

void rdma_free_devices(ibv_context **list) {
    std::free(list);
}

const char *rdma_event_str(rdma_cm_event_type event) {
    if (unsigned(event) > unsigned(RDMA_CM_EVENT_TIMEWAIT_EXIT)) return "UNKNOWN EVENT";
    return uroce::cm_event_str(uroce::cm_event_type(event));
}

int rdma_set_option(rdma_cm_id *i, int level, int optname, void *optval, size_t optlen) {
    id *w = live_id(i, __func__);
    if (!w) return -1;
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == 1) {
        guard g;
        w->uid->route.traffic_class = *static_cast<uint8_t *>(optval);
        return 0;
    }
    /* Address reuse and v6-only binding: uroce's ports are its own, never
     * shared with a kernel socket; nothing to change. */
    if (level == RDMA_OPTION_ID &&
        (optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY))
        return 0;
    return unsupported("rdma_set_option beyond TOS, REUSEADDR and AFONLY", ENOSYS);
}

uint16_t rdma_get_src_port(rdma_cm_id *i) {
    if (!live_id(i, __func__)) return 0;
    const sockaddr *a = &i->route.addr.src_addr;
    return a->sa_family == AF_INET6 ? i->route.addr.src_sin6.sin6_port
                                    : i->route.addr.src_sin.sin_port;
}

uint16_t rdma_get_dst_port(rdma_cm_id *i) {
    if (!live_id(i, __func__)) return 0;
    const sockaddr *a = &i->route.addr.dst_addr;
    return a->sa_family == AF_INET6 ? i->route.addr.dst_sin6.sin6_port
                                    : i->route.addr.dst_sin.sin_port;
}

/* ---------------------------------------------------------------- not supported */

int rdma_migrate_id(rdma_cm_id *, rdma_event_channel *) {
    return unsupported("rdma_migrate_id");
}
int rdma_init_qp_attr(rdma_cm_id *i, ibv_qp_attr *qp_attr, int *qp_attr_mask) {
    if (!i || !qp_attr || !qp_attr_mask) return fail(uroce::verbs_error::inval);
    /* the CM's answer (<uroce/cm.h> init_qp_attr); the masks and states
     * have libibverbs' values */
    uroce::qp_attr u;
    u.qp_state = uroce::qp_state(qp_attr->qp_state);
    unsigned mask = 0;
    {
        guard g;
        if (const uroce::verbs_error e =
                uroce::init_qp_attr(reinterpret_cast<id *>(i)->uid, &u, &mask);
            e != uroce::verbs_error::ok)
            return fail(e);
    }
    qp_attr->qp_access_flags = int(u.qp_access_flags);
    qp_attr->pkey_index = u.pkey_index;
    qp_attr->port_num = u.port_num;
    qp_attr->qkey = u.qkey;
    qp_attr->path_mtu = ibv_mtu(u.path_mtu);
    qp_attr->dest_qp_num = u.dest_qp_num;
    qp_attr->rq_psn = u.rq_psn;
    qp_attr->sq_psn = u.sq_psn;
    qp_attr->max_dest_rd_atomic = u.max_dest_rd_atomic;
    qp_attr->max_rd_atomic = u.max_rd_atomic;
    qp_attr->min_rnr_timer = u.min_rnr_timer;
    qp_attr->timeout = u.timeout;
    qp_attr->retry_cnt = u.retry_cnt;
    qp_attr->rnr_retry = u.rnr_retry;
    std::memset(&qp_attr->ah_attr, 0, sizeof(qp_attr->ah_attr));
    std::memcpy(qp_attr->ah_attr.grh.dgid.raw, u.ah_attr.grh.dgid.raw.data(), 16);
    qp_attr->ah_attr.grh.flow_label = u.ah_attr.grh.flow_label;
    qp_attr->ah_attr.grh.sgid_index = u.ah_attr.grh.sgid_index;
    qp_attr->ah_attr.grh.hop_limit = u.ah_attr.grh.hop_limit;
    qp_attr->ah_attr.grh.traffic_class = u.ah_attr.grh.traffic_class;
    qp_attr->ah_attr.is_global = 1;
    qp_attr->ah_attr.port_num = u.ah_attr.port_num;
    *qp_attr_mask = int(mask);
    return 0;
}
int rdma_establish(rdma_cm_id *i) {
    if (!i) return fail(uroce::verbs_error::inval);
    guard g;
    return fail(uroce::establish(reinterpret_cast<id *>(i)->uid));
}
int rdma_notify(rdma_cm_id *, ibv_event_type) {
    return unsupported("rdma_notify");
}
int rdma_join_multicast(rdma_cm_id *, sockaddr *, void *) {
    return unsupported("multicast (rdma_join_multicast)");
}
int rdma_join_multicast_ex(rdma_cm_id *, rdma_cm_join_mc_attr_ex *, void *) {
    return unsupported("multicast (rdma_join_multicast_ex)");
}
int rdma_leave_multicast(rdma_cm_id *, sockaddr *) {
    return unsupported("multicast (rdma_leave_multicast)");
}
int rdma_create_ep(rdma_cm_id **, rdma_addrinfo *, ibv_pd *, ibv_qp_init_attr *) {
    return unsupported("rdma_create_ep (synchronous ids)");
}
void rdma_destroy_ep(rdma_cm_id *) {
    unsupported("rdma_destroy_ep (synchronous ids)");
}
int rdma_get_request(rdma_cm_id *, rdma_cm_id **) {
    return unsupported("rdma_get_request (synchronous ids)");
}
int rdma_create_srq(rdma_cm_id *, ibv_pd *, ibv_srq_init_attr *) {
    return unsupported("rdma_create_srq");
}
int rdma_create_srq_ex(rdma_cm_id *, ibv_srq_init_attr_ex *) {
    return unsupported("rdma_create_srq_ex");
}
void rdma_destroy_srq(rdma_cm_id *) {
    unsupported("rdma_destroy_srq");
}
int rdma_set_local_ece(rdma_cm_id *, ibv_ece *) {
    return unsupported("ECE (rdma_set_local_ece)", EOPNOTSUPP);
}
int rdma_get_remote_ece(rdma_cm_id *, ibv_ece *) {
    return unsupported("ECE (rdma_get_remote_ece)", EOPNOTSUPP);
}
int rdma_reject_ece(rdma_cm_id *, const void *, uint8_t) {
    return unsupported("ECE (rdma_reject_ece)", EOPNOTSUPP);
}

} // extern "C"

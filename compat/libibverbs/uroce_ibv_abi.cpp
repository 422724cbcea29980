/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the rest of libibverbs.so.1's exported ABI.
 *
 *  - Helpers every application may call (ibv_wc_status_str, the rate
 *    conversions, fork support, sysfs reading), implemented.
 *  - Verbs uroce0 does not support (multicast, ECE, importing objects of
 *    another process): the errno libibverbs returns for a device without
 *    them, and one message on stderr naming the feature.
 *  - IBVERBS_PRIVATE_34: the provider interface of rdma-core 44. uroce
 *    loads no provider, but stock binaries link provider libraries
 *    (perftest: libmlx5.so.1, libefa.so.1) that are bound at load time
 *    (BIND_NOW) against these symbols: without them the binary does not
 *    start. Each one fails with EOPNOTSUPP and says so if it is ever called.
 *    The list is what `objdump -T` shows those libraries import
 *    (doc/compat.md, "Keeping step with rdma-core").
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "uroce_ibv_ops.h"

using namespace uroce::compat;

extern "C" {

/* ---------------------------------------------------------------- strings */

const char *ibv_wc_status_str(enum ibv_wc_status status) {
    return uroce::wc_status_str(uroce::wc_status(status));
}

const char *ibv_node_type_str(enum ibv_node_type node_type) {
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

const char *ibv_port_state_str(enum ibv_port_state port_state) {
    static const char *const names[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                        "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    return unsigned(port_state) < 6 ? names[port_state] : "unknown";
}

const char *ibv_event_type_str(enum ibv_event_type event) {
    static const char *const names[] = {"CQ error",
                                        "local work queue catastrophic error",
                                        "invalid request local work queue error",
                                        "local access violation work queue error",
                                        "communication established",
                                        "send queue drained",
                                        "path migrated",
                                        "path migration request error",
                                        "local catastrophic error",
                                        "port active",
                                        "port error",
                                        "LID change",
                                        "P_Key change",
                                        "SM change",
                                        "SRQ catastrophic error",
                                        "SRQ limit reached",
                                        "last WQE reached",
                                        "client reregistration",
                                        "GID table change",
                                        "WQ fatal"};
    return unsigned(event) < sizeof(names) / sizeof(names[0]) ? names[event] : "unknown";
}

/* ---------------------------------------------------------------- rates (IBTA 9.11.1 static rate)
 */

namespace {
struct rate_row {
    ibv_rate rate;
    int mult; /* of 2.5 Gb/s */
    int mbps;
};
constexpr rate_row rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 5, 14062},
    {IBV_RATE_56_GBPS, 22, 56250},    {IBV_RATE_112_GBPS, 45, 112500},
    {IBV_RATE_168_GBPS, 67, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};
} // namespace

int ibv_rate_to_mult(enum ibv_rate rate) {
    for (const rate_row &r : rates)
        if (r.rate == rate) return r.mult;
    return rate == IBV_RATE_MAX ? 0 : -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
    for (const rate_row &r : rates)
        if (r.mult == mult) return r.rate;
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
    for (const rate_row &r : rates)
        if (r.rate == rate) return r.mbps;
    return rate == IBV_RATE_MAX ? 0 : -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const rate_row &r : rates)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

/* ---------------------------------------------------------------- fork: nothing to protect
 * (no kernel pins the pages: uroce reads and writes them from this process) */

int ibv_fork_init(void) {
    return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void *, size_t) {
    return 0;
}
int ibv_dofork_range(void *, size_t) {
    return 0;
}

/* ---------------------------------------------------------------- sysfs */

const char *ibv_get_sysfs_path(void) {
    const char *env = getenv("SYSFS_PATH");
    return env && *env ? env : "/sys";
}

/* Reads dir/file as rdma-core does (a trailing newline dropped); uroce0's
 * paths do not exist, so for it this fails, which callers expect. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size) {
    char path[512];
    if (std::snprintf(path, sizeof(path), "%s/%s", dir, file) >= int(sizeof(path))) return -1;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t len = read(fd, buf, size);
    close(fd);
    if (len <= 0) return -1;
    if (buf[len - 1] == '\n')
        buf[--len] = '\0';
    else if (size_t(len) < size)
        buf[len] = '\0';
    else
        return -1;
    return int(len);
}

/* ---------------------------------------------------------------- not supported by uroce0 */

int ibv_attach_mcast(ibv_qp *, const ibv_gid *, uint16_t) {
    return unsupported("multicast (ibv_attach_mcast)");
}
int ibv_detach_mcast(ibv_qp *, const ibv_gid *, uint16_t) {
    return unsupported("multicast (ibv_detach_mcast)");
}
int ibv_set_ece(ibv_qp *, ibv_ece *) {
    return unsupported("enhanced connection establishment (ibv_set_ece)");
}
int ibv_query_ece(ibv_qp *, ibv_ece *) {
    return unsupported("enhanced connection establishment (ibv_query_ece)");
}
int ibv_resolve_eth_l2_from_gid(ibv_context *, ibv_ah_attr *, uint8_t[6], uint16_t *) {
    return unsupported("ibv_resolve_eth_l2_from_gid (the kernel's neighbour table)");
}
ibv_context *ibv_import_device(int) {
    unsupported("importing objects of another process (ibv_import_device)");
    return nullptr;
}
ibv_pd *ibv_import_pd(ibv_context *, uint32_t) {
    unsupported("importing objects of another process (ibv_import_pd)");
    return nullptr;
}
void ibv_unimport_pd(ibv_pd *) {}
ibv_mr *ibv_import_mr(ibv_pd *, uint32_t) {
    unsupported("importing objects of another process (ibv_import_mr)");
    return nullptr;
}
void ibv_unimport_mr(ibv_mr *) {}
ibv_dm *ibv_import_dm(ibv_context *, uint32_t) {
    unsupported("device memory (ibv_import_dm)");
    return nullptr;
}
void ibv_unimport_dm(ibv_dm *) {}

/* Kernel uverbs structure conversions (librdmacm calls them on what the
 * kernel's rdma_ucm returned): there is no kernel here. */
void ibv_copy_qp_attr_from_kern(void *, const void *) {
    unsupported("ibv_copy_qp_attr_from_kern (kernel rdma_ucm structures)", ENOSYS);
}
void ibv_copy_ah_attr_from_kern(void *, const void *) {
    unsupported("ibv_copy_ah_attr_from_kern (kernel rdma_ucm structures)", ENOSYS);
}
void ibv_copy_path_rec_from_kern(void *, const void *) {
    unsupported("ibv_copy_path_rec_from_kern (kernel rdma_ucm structures)", ENOSYS);
}
void ibv_copy_path_rec_to_kern(void *, const void *) {
    unsupported("ibv_copy_path_rec_to_kern (kernel rdma_ucm structures)", ENOSYS);
}

/* ---------------------------------------------------------------- IBVERBS_PRIVATE_34 */

/* A provider's flag (rdma-core driver.h); read by providers only. */
bool verbs_allow_disassociate_destroy = false;

#define UROCE_IBV_PRIVATE(X)                                                                       \
    X(__ioctl_final_num_attrs)                                                                     \
    X(ibv_cmd_create_cq)                                                                           \
    X(ibv_cmd_create_qp)                                                                           \
    X(ibv_cmd_poll_cq)                                                                             \
    X(ibv_cmd_post_recv)                                                                           \
    X(ibv_cmd_post_send)                                                                           \
    X(ibv_cmd_post_srq_recv)                                                                       \
    X(ibv_cmd_req_notify_cq)                                                                       \
    X(ibv_read_ibdev_sysfs_file)                                                                   \
    X(__verbs_log)                                                                                 \
    X(_verbs_init_and_alloc_context)                                                               \
    X(execute_ioctl)                                                                               \
    X(ibv_cmd_advise_mr)                                                                           \
    X(ibv_cmd_alloc_dm)                                                                            \
    X(ibv_cmd_alloc_mw)                                                                            \
    X(ibv_cmd_alloc_pd)                                                                            \
    X(ibv_cmd_attach_mcast)                                                                        \
    X(ibv_cmd_close_xrcd)                                                                          \
    X(ibv_cmd_create_ah)                                                                           \
    X(ibv_cmd_create_counters)                                                                     \
    X(ibv_cmd_create_cq_ex)                                                                        \
    X(ibv_cmd_create_flow)                                                                         \
    X(ibv_cmd_create_flow_action_esp)                                                              \
    X(ibv_cmd_create_qp_ex)                                                                        \
    X(ibv_cmd_create_qp_ex2)                                                                       \
    X(ibv_cmd_create_rwq_ind_table)                                                                \
    X(ibv_cmd_create_srq)                                                                          \
    X(ibv_cmd_create_srq_ex)                                                                       \
    X(ibv_cmd_create_wq)                                                                           \
    X(ibv_cmd_dealloc_mw)                                                                          \
    X(ibv_cmd_dealloc_pd)                                                                          \
    X(ibv_cmd_dereg_mr)                                                                            \
    X(ibv_cmd_destroy_ah)                                                                          \
    X(ibv_cmd_destroy_counters)                                                                    \
    X(ibv_cmd_destroy_cq)                                                                          \
    X(ibv_cmd_destroy_flow)                                                                        \
    X(ibv_cmd_destroy_flow_action)                                                                 \
    X(ibv_cmd_destroy_qp)                                                                          \
    X(ibv_cmd_destroy_rwq_ind_table)                                                               \
    X(ibv_cmd_destroy_srq)                                                                         \
    X(ibv_cmd_destroy_wq)                                                                          \
    X(ibv_cmd_detach_mcast)                                                                        \
    X(ibv_cmd_free_dm)                                                                             \
    X(ibv_cmd_get_context)                                                                         \
    X(ibv_cmd_modify_cq)                                                                           \
    X(ibv_cmd_modify_flow_action_esp)                                                              \
    X(ibv_cmd_modify_qp)                                                                           \
    X(ibv_cmd_modify_qp_ex)                                                                        \
    X(ibv_cmd_modify_srq)                                                                          \
    X(ibv_cmd_modify_wq)                                                                           \
    X(ibv_cmd_open_qp)                                                                             \
    X(ibv_cmd_open_xrcd)                                                                           \
    X(ibv_cmd_query_context)                                                                       \
    X(ibv_cmd_query_device_any)                                                                    \
    X(ibv_cmd_query_mr)                                                                            \
    X(ibv_cmd_query_port)                                                                          \
    X(ibv_cmd_query_qp)                                                                            \
    X(ibv_cmd_query_srq)                                                                           \
    X(ibv_cmd_read_counters)                                                                       \
    X(ibv_cmd_reg_dm_mr)                                                                           \
    X(ibv_cmd_reg_dmabuf_mr)                                                                       \
    X(ibv_cmd_reg_mr)                                                                              \
    X(ibv_cmd_rereg_mr)                                                                            \
    X(ibv_cmd_resize_cq)                                                                           \
    X(verbs_init_cq)                                                                               \
    X(verbs_open_device)                                                                           \
    X(verbs_set_ops)                                                                               \
    X(verbs_uninit_context)

#define UROCE_X(name)                                                                              \
    int name(void) {                                                                               \
        return unsupported("the provider interface (" #name ")");                                  \
    }

/* Called by every provider library's constructor when it is loaded
 * (DPDK's mlx4/mlx5 PMDs load libmlx4/libmlx5 as EAL plugins): there is
 * no provider to register, quietly. */
void verbs_register_driver_34(const void *) {}
UROCE_IBV_PRIVATE(UROCE_X)
#undef UROCE_X

} // extern "C"

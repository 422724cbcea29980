/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the device uroce0. Listing it, opening and closing
 * it, and what ibv_devinfo asks about it: device, port and GID table
 * (laid out as rxe's: index 0 the IPv6 link-local address from the MAC,
 * index 1 the first IPv4-mapped address, all RoCE v2).
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_byteorder.h>

#include "uroce_ibv_ops.h"
#include "uroce_ibv_runtime.h"

using namespace uroce;
using namespace uroce::compat;

namespace {

ibv_device uroce_device = [] {
    ibv_device d{};
    d.node_type = IBV_NODE_CA;
    d.transport_type = IBV_TRANSPORT_IB; /* as rxe: InfiniBand transport, Ethernet link layer */
    std::snprintf(d.name, sizeof(d.name), "uroce0");
    std::snprintf(d.dev_name, sizeof(d.dev_name), "uverbs-uroce0");
    /* No sysfs: uroce0 is no kernel device (ibv_read_sysfs_file there fails). */
    std::snprintf(d.dev_path, sizeof(d.dev_path), "/sys/class/infiniband_verbs/uverbs-uroce0");
    std::snprintf(d.ibdev_path, sizeof(d.ibdev_path), "/sys/class/infiniband/uroce0");
    return d;
}();

/* The node GUID from the port's MAC (modified EUI-64, as rxe), big endian. */
__be64 guid_from_mac(const uint8_t *m) {
    uint64_t g = (uint64_t(m[0] ^ 2) << 56) | (uint64_t(m[1]) << 48) | (uint64_t(m[2]) << 40) |
                 (uint64_t(0xff) << 32) | (uint64_t(0xfe) << 24) | (uint64_t(m[3]) << 16) |
                 (uint64_t(m[4]) << 8) | uint64_t(m[5]);
    return rte_cpu_to_be_64(g);
}

runtime *rt_of(ibv_context *c) {
    return to_ctx(c)->rt;
}

void fill_device_attr(runtime &rt, ibv_device_attr &a) {
    std::memset(&a, 0, sizeof(a));
    device_attr u;
    uroce::query_device(rt.dev(), &u);
    std::snprintf(a.fw_ver, sizeof(a.fw_ver), "uroce %s", UROCE_COMPAT_VERSION);
    a.node_guid = guid_from_mac(rt.st().port().mac());
    a.sys_image_guid = a.node_guid;
    a.max_mr_size = u.max_mr_size ? u.max_mr_size : UINT64_MAX;
    a.page_size_cap = 0xfffff000;
    a.vendor_id = 0;
    a.vendor_part_id = 0;
    a.hw_ver = 0;
    a.max_qp = int(u.max_qp);
    a.max_qp_wr = int(u.max_qp_wr);
    a.device_cap_flags =
        IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID;
    a.max_sge = int(u.max_sge);
    a.max_sge_rd = int(u.max_sge);
    a.max_cq = int(u.max_cq);
    a.max_cqe = int(u.max_cqe);
    a.max_mr = int(u.max_mr);
    a.max_pd = int(u.max_pd);
    a.max_qp_rd_atom = int(u.max_qp_rd_atom);
    a.max_qp_init_rd_atom = int(u.max_qp_init_rd_atom);
    a.max_res_rd_atom = int(u.max_qp_rd_atom * u.max_qp);
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_srq = int(u.max_qp);
    a.max_srq_wr = int(u.max_srq_wr);
    a.max_srq_sge = int(u.max_sge);
    a.max_ah = int(u.max_qp);
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
}

void fill_port_attr(runtime &rt, ibv_port_attr &a) {
    std::memset(&a, 0, sizeof(a));
    const bool up = rt.st().port().link_up();
    /* ACTIVE once the DPDK port runs: a memif link is up only while its
     * peer process is attached, which a server waits for after asking. */
    a.state = IBV_PORT_ACTIVE;
    a.phys_state = up ? 5 /* LinkUp */ : 2 /* Polling */;
    a.max_mtu = ibv_mtu(rt.st().max_mtu());
    a.active_mtu = a.max_mtu;
    a.gid_tbl_len = int(std::min<size_t>(rt.st().addrs().gid_count(), 4));
    a.port_cap_flags = 0;
    device_attr u;
    uroce::query_device(rt.dev(), &u);
    a.max_msg_sz = u.max_msg_sz;
    a.pkey_tbl_len = 1;
    a.max_vl_num = 1;
    a.active_width = 2;  /* 4X */
    a.active_speed = 32; /* EDR (25 Gb/s a lane, 4X: 100 Gb/s), nominal: the link is a DPDK port */
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
}

} // namespace

namespace uroce::compat {

int op_query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr, size_t attr_len) {
    if (port != 1) return EINVAL;
    runtime &rt = *rt_of(ctx);
    ibv_port_attr full;
    {
        runtime::guard g(rt);
        fill_port_attr(rt, full);
    }
    std::memset(attr, 0, attr_len);
    std::memcpy(attr, &full, std::min(attr_len, sizeof(full)));
    return 0;
}

int op_query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
                       ibv_device_attr_ex *attr, size_t attr_size) {
    if (input && input->comp_mask) return EINVAL;
    runtime &rt = *rt_of(ctx);
    ibv_device_attr_ex full;
    std::memset(&full, 0, sizeof(full));
    {
        runtime::guard g(rt);
        fill_device_attr(rt, full.orig_attr);
    }
    full.phys_port_cnt_ex = 1;
    std::memset(attr, 0, attr_size);
    std::memcpy(attr, &full, std::min(attr_size, sizeof(full)));
    return 0;
}

} // namespace uroce::compat

extern "C" {

ibv_device **ibv_get_device_list(int *num_devices) {
    if (num_devices) *num_devices = 0;
    if (!runtime::config_ok()) return nullptr;
    auto **list = static_cast<ibv_device **>(std::calloc(2, sizeof(ibv_device *)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    list[0] = &uroce_device;
    if (num_devices) *num_devices = 1;
    return list;
}

void ibv_free_device_list(ibv_device **list) {
    std::free(list);
}

const char *ibv_get_device_name(ibv_device *device) {
    return device ? device->name : nullptr;
}

int ibv_get_device_index(ibv_device *device) {
    return device == &uroce_device ? 0 : -1;
}

__be64 ibv_get_device_guid(ibv_device *device) {
    if (device != &uroce_device) return 0;
    /* Known without starting the stack only when the MAC is configured. */
    if (const char *m = std::getenv("UROCE_MAC")) {
        rte_ether_addr a{};
        if (rte_ether_unformat_addr(m, &a) == 0) return guid_from_mac(a.addr_bytes);
    }
    return 0;
}

ibv_context *ibv_open_device(ibv_device *device) {
    if (device != &uroce_device) {
        errno = ENODEV;
        return nullptr;
    }
    runtime *rt = runtime::acquire();
    if (!rt) return nullptr; /* reported, errno set */
    auto *c = new (std::nothrow) compat_context();
    if (!c) {
        runtime::release(rt);
        errno = ENOMEM;
        return nullptr;
    }
    std::memset(&c->vctx, 0, sizeof(c->vctx));
    c->rt = rt;
    c->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    verbs_context &v = c->vctx;
    ibv_context &ctx = v.context;
    ctx.device = device;
    ctx.cmd_fd = -1;
    ctx.async_fd = c->async_fd;
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    v.sz = sizeof(verbs_context);
    ctx.ops.poll_cq = op_poll_cq;
    ctx.ops.req_notify_cq = op_req_notify_cq;
    ctx.ops.post_srq_recv = op_post_srq_recv;
    ctx.ops.post_send = op_post_send;
    ctx.ops.post_recv = op_post_recv;
    ctx.ops.alloc_mw = op_alloc_mw;
    ctx.ops.bind_mw = op_bind_mw;
    ctx.ops.dealloc_mw = op_dealloc_mw;
    v.query_port = op_query_port;
    v.query_device_ex = op_query_device_ex;
    v.create_qp_ex = op_create_qp_ex;
    v.create_cq_ex = op_create_cq_ex;
    {
        runtime::guard g(*rt);
        rt->add_context_locked(c);
    }
    return &ctx;
}

int ibv_close_device(ibv_context *context) {
    compat_context *c = to_ctx(context);
    runtime *rt = c->rt;
    {
        runtime::guard g(*rt);
        rt->remove_context_locked(c);
    }
    if (c->async_fd >= 0) close(c->async_fd);
    pthread_mutex_destroy(&context->mutex);
    delete c;
    runtime::release(rt);
    return 0;
}

int ibv_query_device(ibv_context *context, ibv_device_attr *attr) {
    runtime &rt = *rt_of(context);
    runtime::guard g(rt);
    fill_device_attr(rt, *attr);
    return 0;
}

/* The pre-1.1-layout entry point behind the ibv_query_port macro's
 * fallback; the macro itself calls verbs_context::query_port. */
#undef ibv_query_port
int ibv_query_port(ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr) {
    return op_query_port(context, port_num, reinterpret_cast<ibv_port_attr *>(attr),
                         offsetof(ibv_port_attr, link_layer) + 1);
}

int ibv_query_gid(ibv_context *context, uint8_t port_num, int index, ibv_gid *gid) {
    runtime &rt = *rt_of(context);
    if (port_num != 1 || index < 0 || index >= 4) {
        errno = EINVAL;
        return -1;
    }
    runtime::guard g(rt);
    auto e = rt.st().addrs().gid_at(size_t(index));
    if (!e) {
        /* An empty slot reads as zeros, as sysfs shows it. */
        std::memset(gid, 0, sizeof(*gid));
        return 0;
    }
    std::memcpy(gid->raw, e->raw.data(), 16);
    return 0;
}

/* rdma-core's private (driver.h) enum ibv_gid_type_sysfs: 0 IB/RoCE v1, 1 RoCE v2. */
int ibv_query_gid_type(ibv_context *context, uint8_t port_num, unsigned int index,
                       unsigned int *type) {
    runtime &rt = *rt_of(context);
    runtime::guard g(rt);
    if (port_num != 1 || index >= std::min<size_t>(rt.st().addrs().gid_count(), 4)) {
        errno = EINVAL;
        return -1;
    }
    *type = 1;
    return 0;
}

int _ibv_query_gid_ex(ibv_context *context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry *entry, uint32_t flags, size_t entry_size) {
    if (flags || port_num != 1) return EINVAL;
    runtime &rt = *rt_of(context);
    runtime::guard g(rt);
    auto e = gid_index < 4 ? rt.st().addrs().gid_at(gid_index) : std::nullopt;
    if (!e) return ENODATA;
    ibv_gid_entry full{};
    std::memcpy(full.gid.raw, e->raw.data(), 16);
    full.gid_index = gid_index;
    full.port_num = port_num;
    full.gid_type = IBV_GID_TYPE_ROCE_V2;
    full.ndev_ifindex = 0;
    std::memset(entry, 0, entry_size);
    std::memcpy(entry, &full, std::min(entry_size, sizeof(full)));
    return 0;
}

ssize_t _ibv_query_gid_table(ibv_context *context, ibv_gid_entry *entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
    if (flags) return -EINVAL;
    size_t n = 0;
    for (uint32_t i = 0; i < 4 && n < max_entries; i++) {
        auto *e = reinterpret_cast<ibv_gid_entry *>(reinterpret_cast<uint8_t *>(entries) +
                                                    n * entry_size);
        if (_ibv_query_gid_ex(context, 1, i, e, 0, entry_size) == 0) n++;
    }
    return ssize_t(n);
}

int ibv_query_pkey(ibv_context *, uint8_t port_num, int index, __be16 *pkey) {
    if (port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = rte_cpu_to_be_16(0xffff); /* the default P_Key, the only one RoCE uses */
    return 0;
}

int ibv_get_pkey_index(ibv_context *, uint8_t port_num, __be16 pkey) {
    if (port_num != 1) return -EINVAL;
    return (rte_be_to_cpu_16(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}

} // extern "C"

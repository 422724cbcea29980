/* SPDX-License-Identifier: BSD-3-Clause
 * Packet mbuf pools without hugepages, laid out back to back.
 *
 * Why: without hugepages (uroce's embedded default) a mempool that keeps
 * IOVA-contiguous objects, as rte_pktmbuf_pool_create's does, may not let
 * an object of a page or less cross a 4 KiB page (rte_mempool_get_page_size
 * returns the system page, and the default populate moves such an object to
 * the next page). A 2 KiB mbuf (net_ring's port pool, 2304-byte elements)
 * then takes a page of its own, and every mbuf header sits at the same
 * offset of its page: all of them in the same few L1 and L2 sets. Measured
 * on the project's VM (doc/performance.md): uroce-perf's bare net_ring
 * reference, which only allocates, sends, receives and frees mbufs, made
 * 41 Mpps per CPU-second on such a pool and 153-159 on this one (and on
 * hugepages); the pool takes 14 MiB instead of 24. The software PMDs that
 * packed_pool_allowed() admits never use an mbuf's IOVA.
 */
#include "uroce_packed_pool.h"

#include <cstring>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

namespace uroce {

bool packed_pool_allowed() {
    if (rte_eal_has_hugepages()) return false;
    uint16_t port;
    RTE_ETH_FOREACH_DEV(port) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(port, &info) != 0 || !info.device) return false;
        const rte_bus *bus = rte_dev_bus(info.device);
        if (!bus || std::strcmp(rte_bus_name(bus), "vdev") != 0) return false;
    }
    return true;
}

rte_mempool *packed_pktmbuf_pool_create(const std::string &name, unsigned n, unsigned cache_size,
                                        uint16_t data_room_size, int socket_id) {
    rte_mempool *mp = rte_mempool_create_empty(
        name.c_str(), n, unsigned(sizeof(rte_mbuf)) + data_room_size, cache_size,
        sizeof(rte_pktmbuf_pool_private), socket_id, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    if (!mp) return nullptr;
    if (int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr); rc != 0) {
        rte_mempool_free(mp);
        rte_errno = -rc;
        return nullptr;
    }
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = data_room_size;
    rte_pktmbuf_pool_init(mp, &priv);
    if (int rc = rte_mempool_populate_default(mp); rc < 0 || unsigned(rc) < n) {
        rte_mempool_free(mp);
        rte_errno = rc < 0 ? -rc : ENOMEM;
        return nullptr;
    }
    rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
    return mp;
}

rte_mempool *pktmbuf_pool_create(const std::string &name, unsigned n, unsigned cache_size,
                                 uint16_t data_room_size, int socket_id) {
    if (packed_pool_allowed())
        if (rte_mempool *mp =
                packed_pktmbuf_pool_create(name, n, cache_size, data_room_size, socket_id))
            return mp;
    return rte_pktmbuf_pool_create(name.c_str(), n, cache_size, 0, data_room_size, socket_id);
}

} // namespace uroce

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
 *
 * Its memory is the process's own (an anonymous private mapping), not
 * EAL's: DPDK zeroes a memzone as it frees it (malloc_elem_free), and
 * EAL's no-huge memory is a shared memfd whose pages the zeroing faults in
 * one by one where the pool's init never wrote (the data rooms). Each app
 * spent 0.12 s at exit per pool doing that; unmapping takes nothing
 * (doc/performance.md, "The bare ring without hugepages"). The pages are
 * the system's 4 KiB ones: with transparent huge pages the pool took longer
 * to start (a 2 MiB page is zeroed whole) and a 4 KiB WRITE lost 1-3%.
 */
#include "uroce_packed_pool.h"

#include <cerrno>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

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

namespace {

/* The pool's free callback: its chunk is the whole mapping. */
void unmap_chunk(rte_mempool_memhdr *chunk, void *) {
    munmap(chunk->addr, chunk->len);
}

/* Every object of mp, back to back, in a mapping of its own that
 * rte_mempool_free unmaps. The objects count, or a negative errno. Nothing
 * else is allocated: an app that leaves its pool to the process's exit, as
 * EAL's memory is left, leaks nothing a leak checker would name. */
int populate_anonymous(rte_mempool *mp) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t obj = size_t(mp->header_size) + mp->elt_size + mp->trailer_size;
    const size_t len = (obj * mp->size + page - 1) & ~(page - 1);
    void *base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return -errno;
    /* RTE_BAD_IOVA: the region is not EAL's, and no admitted PMD asks
     * (DPDK marks the pool RTE_MEMPOOL_F_NON_IO) */
    const int rc = rte_mempool_populate_iova(mp, static_cast<char *>(base), RTE_BAD_IOVA, len,
                                             unmap_chunk, nullptr);
    /* 0 or an error: the chunk was not taken, and the pool will not unmap it */
    if (rc <= 0) munmap(base, len);
    return rc;
}

} // namespace

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
    if (int rc = populate_anonymous(mp); rc < 0 || unsigned(rc) < n) {
        rte_mempool_free(mp);
        rte_errno = rc < 0 ? -rc : ENOMEM; /* fewer objects than asked: the region went with it */
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

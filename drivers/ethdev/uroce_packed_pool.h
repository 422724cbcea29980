/* SPDX-License-Identifier: BSD-3-Clause
 * Packet mbuf pools laid out back to back when EAL has no hugepages
 * (drivers/ethdev/uroce_packed_pool.cpp).
 */
#ifndef UROCE_PACKED_POOL_H
#define UROCE_PACKED_POOL_H

#include <cstdint>
#include <string>

struct rte_mempool;

namespace uroce {

/* Whether pktmbuf pools may drop IOVA contiguity: EAL runs without
 * hugepages and every ethdev port is a software vdev (memif, ring,
 * af_packet, pcap, tap copy frames with the CPU; a PCI NIC would DMA into
 * an mbuf that crosses two 4 KiB pages of unrelated physical addresses). */
bool packed_pool_allowed();

/* rte_pktmbuf_pool_create's pool (the platform's best mempool ops, every
 * mbuf initialized alike) with RTE_MEMPOOL_F_NO_IOVA_CONTIG, so that its
 * objects sit back to back, in an anonymous mapping of the pool's own that
 * rte_mempool_free unmaps (no IOVA: RTE_MEMPOOL_F_NON_IO). nullptr with
 * rte_errno set on failure. */
rte_mempool *packed_pktmbuf_pool_create(const std::string &name, unsigned n, unsigned cache_size,
                                        uint16_t data_room_size, int socket_id);

/* The pool every uroce pktmbuf pool is: the packed one where
 * packed_pool_allowed(), else (or if that fails) rte_pktmbuf_pool_create's.
 * nullptr with rte_errno set (the ordinary pool's reason) on failure. */
rte_mempool *pktmbuf_pool_create(const std::string &name, unsigned n, unsigned cache_size,
                                 uint16_t data_room_size, int socket_id);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * drivers/ethdev/uroce_packed_pool.cpp: without hugepages, 2 KiB mbufs sit
 * back to back (their headers spread over the cache's sets) instead of one
 * to a 4 KiB page, and they are ordinary pktmbufs; make_pktmbuf_pool and
 * the ports take such pools when every port is a vdev.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <sys/mman.h>

#include <cerrno>

#include <rte_eal.h>
#include <rte_memory.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "eal_env.h"
#include "uroce_packed_pool.h"
#include <uroce/eal.h>
#include <uroce/ethdev.h>

namespace uroce {
namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new test::eal_env("512"));

constexpr unsigned n_mbufs = 1023;
constexpr uint16_t room = 2048 + RTE_PKTMBUF_HEADROOM;

/* Every mbuf of the pool, taken out (and given back by the caller). */
std::vector<rte_mbuf *> take_all(rte_mempool *mp) {
    std::vector<rte_mbuf *> all;
    while (rte_mbuf *m = rte_pktmbuf_alloc(mp))
        all.push_back(m);
    return all;
}

/* How many different offsets within a 4 KiB page the mbuf headers have
 * (cache-line aligned: at most 64). */
size_t page_offsets(const std::vector<rte_mbuf *> &mbufs) {
    std::set<uintptr_t> offs;
    for (rte_mbuf *m : mbufs)
        offs.insert(uintptr_t(m) % 4096);
    return offs.size();
}

TEST(packed_pool, without_hugepages_and_with_vdev_ports_only_it_is_allowed) {
    ASSERT_FALSE(rte_eal_has_hugepages());
    EXPECT_TRUE(packed_pool_allowed());
}

TEST(packed_pool, two_kib_mbufs_sit_back_to_back_and_work_as_pktmbufs) {
    rte_mempool *mp = packed_pktmbuf_pool_create("packed_test", n_mbufs, 0, room, SOCKET_ID_ANY);
    ASSERT_NE(mp, nullptr) << rte_strerror(rte_errno);
    EXPECT_EQ(rte_pktmbuf_data_room_size(mp), room);
    EXPECT_EQ(rte_pktmbuf_priv_size(mp), 0u);

    std::vector<rte_mbuf *> all = take_all(mp);
    ASSERT_EQ(all.size(), n_mbufs);
    /* Back to back: about elt_size apart, the whole pool in less than one
     * page per mbuf, the headers at many offsets of their pages. */
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    const size_t span = uintptr_t(*hi) - uintptr_t(*lo);
    const size_t obj = mp->header_size + mp->elt_size + mp->trailer_size;
    EXPECT_LT(obj, 4096u);
    EXPECT_LE(span, size_t(n_mbufs) * obj);
    EXPECT_GE(page_offsets(all), 32u);
    for (rte_mbuf *m : all) {
        EXPECT_EQ(m->pool, mp);
        EXPECT_EQ(rte_pktmbuf_headroom(m), RTE_PKTMBUF_HEADROOM);
        EXPECT_EQ(m->buf_len, room);
        EXPECT_EQ(m->nb_segs, 1);
        EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
        char *d = rte_pktmbuf_append(m, 2048);
        ASSERT_NE(d, nullptr);
        std::fill(d, d + 2048, char(0x5a)); /* ASan: within the object */
    }
    for (rte_mbuf *m : all)
        rte_pktmbuf_free(m);
    EXPECT_EQ(rte_mempool_avail_count(mp), n_mbufs);
    rte_mempool_free(mp);
}

/* Whether the page at p is mapped in this process (msync fails with ENOMEM
 * on a page that is not). */
bool mapped(const void *p) {
    void *page = reinterpret_cast<void *>(uintptr_t(p) & ~uintptr_t(4095));
    return msync(page, 4096, MS_ASYNC) == 0 || errno != ENOMEM;
}

/* Why: DPDK zeroes EAL memory as it frees it, faulting in every page of the
 * data rooms that the pool's init never wrote (0.12 s an app at exit). The
 * pool's memory is a mapping of its own, not EAL's, and freeing the pool
 * unmaps it at once. */
TEST(packed_pool, its_memory_is_its_own_and_goes_with_the_pool) {
    rte_mempool *mp = packed_pktmbuf_pool_create("packed_own", n_mbufs, 0, room, SOCKET_ID_ANY);
    ASSERT_NE(mp, nullptr) << rte_strerror(rte_errno);
    EXPECT_TRUE(mp->flags & RTE_MEMPOOL_F_NON_IO); /* no IOVA: for software PMDs only */
    std::vector<rte_mbuf *> all = take_all(mp);
    ASSERT_EQ(all.size(), n_mbufs);
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    const void *first = *lo;
    const void *last = static_cast<const char *>((*hi)->buf_addr) + (*hi)->buf_len - 1;
    EXPECT_EQ(rte_mem_virt2memseg(first, nullptr), nullptr) << "in EAL's memory";
    EXPECT_TRUE(mapped(first));
    EXPECT_TRUE(mapped(last));
    for (rte_mbuf *m : all)
        rte_pktmbuf_free(m);
    rte_mempool_free(mp);
    EXPECT_FALSE(mapped(first));
    EXPECT_FALSE(mapped(last));
}

/* Why: DPDK's own pool puts each 2 KiB mbuf in a page of its own here, every
 * header at the same offset. If DPDK stops doing that, the packed pool is no
 * longer needed. */
TEST(packed_pool, dpdk_default_pool_gives_each_small_mbuf_a_page_without_hugepages) {
    rte_mempool *mp =
        rte_pktmbuf_pool_create("dpdk_default_test", n_mbufs, 0, 0, room, SOCKET_ID_ANY);
    ASSERT_NE(mp, nullptr);
    std::vector<rte_mbuf *> all = take_all(mp);
    ASSERT_EQ(all.size(), n_mbufs);
    EXPECT_EQ(page_offsets(all), 1u);
    for (rte_mbuf *m : all)
        rte_pktmbuf_free(m);
    rte_mempool_free(mp);
}

TEST(packed_pool, make_pktmbuf_pool_and_a_ring_port_take_it) {
    std::string err;
    rte_mempool *mp = make_pktmbuf_pool("packed_make", n_mbufs, 2048, err);
    ASSERT_NE(mp, nullptr) << err;
    EXPECT_TRUE(mp->flags & RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    EXPECT_GE(page_offsets(take_all(mp)), 32u);
    rte_mempool_free(mp); /* the mbufs taken go with it */

    rte_ring *r =
        rte_ring_create("packed_ring", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ASSERT_NE(r, nullptr);
    const int id = rte_eth_from_rings("packed_port", &r, 1, &r, 1, SOCKET_ID_ANY);
    ASSERT_GE(id, 0);
    ethdev_config cfg;
    cfg.port_id = uint16_t(id);
    auto port = ethdev_port::open(cfg, err);
    ASSERT_TRUE(port) << err;
    EXPECT_TRUE(port->pool()->flags & RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    port.reset();
    rte_ring_free(r);
}

} // namespace
} // namespace uroce

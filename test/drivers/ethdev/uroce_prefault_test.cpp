/* SPDX-License-Identifier: BSD-3-Clause
 * drivers/ethdev/uroce_prefault.cpp: the shared memfd mappings named by a
 * prefix are faulted in (every page present in this process's page table,
 * /proc/self/pagemap bit 63), nothing else is, and no byte changes.
 */
#include "uroce_prefault.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

namespace {

const size_t page = size_t(sysconf(_SC_PAGESIZE));

/* A memfd of `len` bytes named `name`, mapped shared (or private). */
struct memfd_map {
    int fd = -1;
    uint8_t *p = nullptr;
    size_t len = 0;
    memfd_map(const char *name, size_t n, int flags = MAP_SHARED) : len(n) {
        fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, off_t(n)) != 0) return;
        void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, flags, fd, 0);
        p = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
    }
    ~memfd_map() {
        if (p) munmap(p, len);
        if (fd >= 0) close(fd);
    }
};

/* Pages of [p, p + len) present in this process's page table. */
size_t present_pages(const uint8_t *p, size_t len) {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SIZE_MAX;
    size_t present = 0;
    for (size_t off = 0; off < len; off += page) {
        uint64_t entry = 0;
        const off_t at = off_t((uintptr_t(p) + off) / page * sizeof(entry));
        if (pread(fd, &entry, sizeof(entry), at) != ssize_t(sizeof(entry))) {
            present = SIZE_MAX;
            break;
        }
        present += (entry >> 63) & 1;
    }
    close(fd);
    return present;
}

TEST(prefault_test, the_named_shared_memfds_are_faulted_in_and_nothing_else) {
    const size_t len = 256 * page;
    memfd_map a("uroce_prefault_test_0", len);
    memfd_map b("uroce_prefault_test_1", 3 * page);
    memfd_map other("uroce_other_region_0", 8 * page);
    memfd_map priv("uroce_prefault_test_2", 8 * page, MAP_PRIVATE);
    ASSERT_TRUE(a.p && b.p && other.p && priv.p);
    /* a pattern on a few pages, which must survive */
    for (size_t off = 0; off < len; off += 37 * page)
        std::memset(a.p + off, 0xa5, 64);
    ASSERT_LT(present_pages(a.p, len), len / page);
    ASSERT_EQ(present_pages(other.p, other.len), 0u);

    const uroce::prefault_result r = uroce::prefault_shared_mappings("/memfd:uroce_prefault_test_");

    EXPECT_EQ(r.mappings, 2u);
    EXPECT_EQ(r.bytes, len + 3 * page);
    EXPECT_EQ(present_pages(a.p, len), len / page);
    EXPECT_EQ(present_pages(b.p, b.len), b.len / page);
    EXPECT_EQ(present_pages(other.p, other.len), 0u) << "another name's region was touched";
    EXPECT_EQ(present_pages(priv.p, priv.len), 0u) << "a private mapping was touched";
    for (size_t off = 0; off < len; off += page) {
        const uint8_t want = off % (37 * page) == 0 ? 0xa5 : 0;
        EXPECT_EQ(a.p[off], want) << "page " << off / page;
        EXPECT_EQ(a.p[off + page - 1], 0) << "page " << off / page;
    }
}

TEST(prefault_test, no_match_touches_nothing) {
    memfd_map a("uroce_prefault_none_0", 4 * page);
    ASSERT_TRUE(a.p);
    const uroce::prefault_result r =
        uroce::prefault_shared_mappings("/memfd:memif_region_that_is_not_here");
    EXPECT_EQ(r.mappings, 0u);
    EXPECT_EQ(r.bytes, 0u);
    EXPECT_EQ(present_pages(a.p, a.len), 0u);
}

/* net_af_packet's path: a packet socket's RX ring, mapped as "socket:[ino]". */
TEST(prefault_test, a_packet_socket_ring_is_found_by_its_path) {
    const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) GTEST_SKIP() << "no AF_PACKET socket (needs CAP_NET_RAW)";
    tpacket_req req{};
    req.tp_block_size = unsigned(4 * page);
    req.tp_block_nr = 4;
    req.tp_frame_size = unsigned(2 * page);
    req.tp_frame_nr = req.tp_block_size / req.tp_frame_size * req.tp_block_nr;
    ASSERT_EQ(setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)), 0);
    const size_t len = size_t(req.tp_block_size) * req.tp_block_nr;
    void *ring = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(ring, MAP_FAILED);

    const uroce::prefault_result r = uroce::prefault_shared_mappings("socket:[");

    EXPECT_EQ(r.mappings, 1u);
    EXPECT_EQ(r.bytes, len);
    EXPECT_EQ(present_pages(static_cast<uint8_t *>(ring), len), len / page);
    munmap(ring, len);
    close(fd);
}

TEST(prefault_test, a_range_not_page_aligned_covers_its_pages) {
    memfd_map a("uroce_prefault_range_0", 16 * page);
    ASSERT_TRUE(a.p);
    /* from the middle of page 2 to the middle of page 5: pages 2..5 */
    uroce::prefault_range(a.p + 2 * page + 100, 3 * page);
    EXPECT_EQ(present_pages(a.p, 2 * page), 0u);
    EXPECT_EQ(present_pages(a.p + 2 * page, 4 * page), 4u);
    EXPECT_EQ(present_pages(a.p + 6 * page, 10 * page), 0u);
    uroce::prefault_range(a.p, 0); /* nothing, no crash */
    EXPECT_EQ(present_pages(a.p, 2 * page), 0u);
}

} // namespace

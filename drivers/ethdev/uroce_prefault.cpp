/* SPDX-License-Identifier: BSD-3-Clause
 * Faulting in the memory a PMD shares with its peer: net_memif's region
 * (the other process), net_af_packet's socket rings (the kernel).
 *
 * Why: DPDK's memif (copy mode) puts its rings and packet buffers in a
 * memfd region that the client creates and both processes map. Nothing
 * touches a buffer before its first frame, so for the first pass over the
 * rings (1024 slots each way: 512 send_lat iterations, a SEND and an ACK
 * each) every 4 KiB page costs its first toucher in each process a fault on
 * the data path. Measured on this project's VMs (a shadow-paged guest: the
 * hypervisor fills its own page table on a process's first access even
 * when the guest's entry exists): 2 B send_lat with perftest's default 1000
 * iterations had t_typical 35 us instead of 1.6, every one of the first 512
 * iterations slow. MADV_POPULATE_WRITE alone halved that; populating and
 * then reading each page from the process removed it. af_packet's rings
 * (512 frames of 10 KiB each way, doc/dpdk-ports.md) are the same kind of
 * memory: the kernel writes a received frame there, and the process's first
 * read of each frame's page faults the same way.
 */
#include "uroce_prefault.h"

#include <uroce/ethdev.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace uroce {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 <asm-generic/mman-common.h> */
#endif

void prefault_range(void *addr, size_t len) {
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = uintptr_t(addr) & ~(page - 1);
    const uintptr_t end = (uintptr_t(addr) + len + page - 1) & ~(page - 1);
    if (begin >= end) return;
    /* The guest kernel's side: pages allocated and mapped writable and
     * dirty, so a later write does not fault either. EINVAL on kernels
     * before 5.14: the reads below still fault them in (for reading). */
    (void)madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_WRITE);
    /* This process's own access, which is what a shadow-paged hypervisor
     * needs to fill its entry. A read: the peer may be writing the page. */
    unsigned char sink = 0;
    for (uintptr_t p = begin; p < end; p += page)
        sink ^= *reinterpret_cast<const volatile unsigned char *>(p);
    asm volatile("" : : "r"(sink));
}

prefault_result prefault_shared_mappings(std::string_view path_prefix) {
    prefault_result r;
    FILE *maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return r;
    char line[4096];
    while (std::fgets(line, sizeof(line), maps)) {
        /* start-end perms offset dev inode path */
        uintptr_t start = 0, end = 0;
        char perms[8] = {};
        int path_at = 0;
        if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &start, &end, perms,
                        &path_at) < 3 ||
            path_at == 0)
            continue;
        /* shared and readable: a private or unreadable mapping is not a region */
        if (perms[0] != 'r' || perms[3] != 's') continue;
        if (std::string_view(line + path_at).substr(0, path_prefix.size()) != path_prefix) continue;
        prefault_range(reinterpret_cast<void *>(start), end - start);
        r.bytes += end - start;
        r.mappings++;
    }
    std::fclose(maps);
    return r;
}

size_t ethdev_port::prefault_shared_memory() const {
    /* A process with several such ports faults in all of their regions at
     * each call, which costs a read a page the second time. */
    if (driver_name_ == "net_memif") /* memfd_create("memif_region_<n>"), rte_eth_memif.c */
        return prefault_shared_mappings("/memfd:memif_region_").bytes;
    if (driver_name_ == "net_af_packet") /* the PACKET_RX_RING/TX_RING mmap of its sockets */
        return prefault_shared_mappings("socket:[").bytes;
    return 0;
}

} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Faulting in the memory net_memif shares between the two processes.
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
 * then reading each page from the process removed it.
 */
#include "uroce_prefault.h"

#include <uroce/ethdev.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

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

prefault_result prefault_memfd_mappings(std::string_view name_prefix) {
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
        std::string_view path(line + path_at);
        constexpr std::string_view memfd = "/memfd:";
        if (path.substr(0, memfd.size()) != memfd) continue;
        path.remove_prefix(memfd.size());
        if (path.substr(0, name_prefix.size()) != name_prefix) continue;
        prefault_range(reinterpret_cast<void *>(start), end - start);
        r.bytes += end - start;
        r.mappings++;
    }
    std::fclose(maps);
    return r;
}

size_t ethdev_port::prefault_shared_memory() const {
    /* DPDK 22.11 names memif's regions "memif_region_<n>" (memfd_create in
     * rte_eth_memif.c); a process with several memif ports faults in all of
     * them, which costs a read a page the second time. */
    if (driver_name_ != "net_memif") return 0;
    return prefault_memfd_mappings("memif_region_").bytes;
}

} // namespace uroce

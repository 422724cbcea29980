/* SPDX-License-Identifier: BSD-3-Clause
 * Faulting in memory a PMD shares with its peer, before the data path
 * touches it (ethdev_port::prefault_shared_memory, doc/performance.md).
 */
#ifndef UROCE_PREFAULT_H
#define UROCE_PREFAULT_H

#include <cstddef>
#include <string_view>

namespace uroce {

/* Bytes and mappings faulted in by one call. */
struct prefault_result {
    size_t bytes = 0;
    unsigned mappings = 0;
};

/* Every readable shared mapping of this process whose path in
 * /proc/self/maps begins with path_prefix ("/memfd:<name> (deleted)" for a
 * memfd, "socket:[<inode>]" for a packet socket's ring): each page
 * populated for writing (MADV_POPULATE_WRITE, Linux 5.14; skipped where the
 * kernel lacks it or the mapping is not pageable memory) and then read
 * once. Neither changes a byte, so it is safe while the peer (a process or
 * the kernel) reads and writes the same memory. */
prefault_result prefault_shared_mappings(std::string_view path_prefix);

/* One range, as above: populate for writing, then read one byte a page. */
void prefault_range(void *addr, size_t len);

} // namespace uroce

#endif

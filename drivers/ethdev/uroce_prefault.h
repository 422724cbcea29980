/* SPDX-License-Identifier: BSD-3-Clause
 * Faulting in memory another process shares with us, before the data path
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

/* Every shared mapping of this process whose file is a memfd named
 * <name_prefix>... (/proc/self/maps: "/memfd:<name> (deleted)"): each page
 * populated for writing (MADV_POPULATE_WRITE, Linux 5.14; skipped where the
 * kernel lacks it) and then read once. Neither changes a byte, so it is safe
 * while the peer process reads and writes the same memory. */
prefault_result prefault_memfd_mappings(std::string_view name_prefix);

/* One range, as above: populate for writing, then read one byte a page. */
void prefault_range(void *addr, size_t len);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * test/compat: what the two-process verbs programs share (compat_verbs,
 * compat_srq_events): a CHECK that counts failures and keeps going, the
 * environment that puts each process on its side of a net_memif pair, and
 * whole reads and writes on the pipe they exchange QPNs and GIDs over.
 * Plain C++ over rdma-core's headers: the programs also build against the
 * system libibverbs, to run on rxe (doc/compat.md).
 */
#ifndef UROCE_COMPAT_TWO_PROCESS_H
#define UROCE_COMPAT_TWO_PROCESS_H

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace compat_test {

inline int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s (errno %d)\n", __FILE__, __LINE__,       \
                         #cond, errno);                                                            \
            if (++compat_test::failures > 10) _exit(1);                                            \
        }                                                                                          \
    } while (0)

/* UROCE_EAL and UROCE_IP for one side of the memif pair whose socket is in
 * dir: the server on lcore 0 at subnet.1, the client on lcore 1 at
 * subnet.2 (subnet: the first three octets, one per program so that runs
 * in parallel do not meet). */
inline void set_env(const std::string &dir, bool server, const char *subnet) {
    const std::string eal = std::string("--no-huge -m 512 --no-pci --no-shconf "
                                        "--log-level=lib.eal:error --log-level=pmd.net.memif:error "
                                        "-l ") +
                            (server ? "0" : "1") +
                            " --vdev net_memif0,role=" + (server ? "server" : "client") +
                            ",socket=" + dir + "/memif.sock";
    setenv("UROCE_EAL", eal.c_str(), 1);
    setenv("UROCE_IP", (std::string(subnet) + (server ? ".1/24" : ".2/24")).c_str(), 1);
}

inline bool write_all(int fd, const void *p, size_t n) {
    return write(fd, p, n) == ssize_t(n);
}
inline bool read_all(int fd, void *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = read(fd, static_cast<char *>(p) + got, n - got);
        if (r <= 0) return false;
        got += size_t(r);
    }
    return true;
}

} // namespace compat_test

#endif

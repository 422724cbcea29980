/* SPDX-License-Identifier: BSD-3-Clause
 * test/compat: what the two-process verbs programs share (compat_verbs,
 * compat_srq_events): a CHECK that counts failures and keeps going, the
 * environment that puts each process on its side of a net_memif pair,
 * whole reads and writes on the pipe they exchange QPNs and GIDs over, and
 * the RC QP's way to RTS.
 * Plain C++ over rdma-core's headers: the programs also build against the
 * system libibverbs, to run on rxe (doc/compat.md).
 */
#ifndef UROCE_COMPAT_TWO_PROCESS_H
#define UROCE_COMPAT_TWO_PROCESS_H

#include <infiniband/verbs.h>
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

/* RESET -> INIT on port 1 with the given remote access. */
inline bool qp_to_init(ibv_qp *qp, unsigned access) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = access;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0;
}

/* INIT -> RTR -> RTS towards the peer's QP at its GID (RoCEv2, MTU 1024,
 * PSNs 0, one READ/atomic each way, retries as ibv_rc_pingpong's). */
inline bool qp_to_rts(ibv_qp *qp, uint32_t dest_qpn, const ibv_gid &dgid, int sgid_index) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = uint8_t(sgid_index);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return false;
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

} // namespace compat_test

#endif

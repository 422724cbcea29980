/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rxe-linger.so: an LD_PRELOAD shim for rdma-core's tools in the rxe VM.
 *
 * It holds the tool's first ibv_destroy_qp() until the harness says that
 * uroce, the other end, has exited (the file named by UROCE_LINGER_RELEASE
 * exists), or until UROCE_LINGER_MAX seconds (default 30) have passed.
 * Nothing else changes: the tool has finished its test and its report when
 * it destroys its QPs.
 *
 * Why: rxe counts a frame in rcvd_pkts only after it found a valid QP for it
 * (rxe_recv.c: hdr_check, then the ICRC check, then the counter). A tool that
 * destroys its QP while uroce still has frames on the wire, such as go-back-N
 * retransmissions in flight or the retransmission of a request whose ACK
 * netem dropped, makes rxe discard those frames uncounted. The harness
 * compares rcvd_pkts with uroce's capture frame for frame, so the QP must
 * outlive uroce's last frame. With a live QP, the lost-ACK case also ends as
 * the IBTA intends (the duplicate is re-ACKed, IBTA 9.9.2) rather than in
 * uroce's retry-exceeded error.
 *
 * Built by uroce-interop with the host's cc; the VM runs the same Debian
 * release, so the same glibc. The reference symbol is resolved with
 * dlsym(RTLD_NEXT), which returns the default version (IBVERBS_1.1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct ibv_qp;
int ibv_destroy_qp(struct ibv_qp *qp);

static void linger_once(void) {
    static int done;
    if (done) return; /* -q N: the QPs finished together, wait once */
    done = 1;
    const char *release = getenv("UROCE_LINGER_RELEASE");
    if (!release || !*release) return;
    const char *max_env = getenv("UROCE_LINGER_MAX");
    double max_s = max_env ? atof(max_env) : 30.0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const struct timespec step = {0, 20 * 1000 * 1000};
    for (;;) {
        if (access(release, F_OK) == 0) return;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (waited >= max_s) {
            fprintf(stderr, "rxe-linger: %s did not appear in %.0f s; destroying the QP anyway\n",
                    release, max_s);
            return;
        }
        nanosleep(&step, NULL);
    }
}

int ibv_destroy_qp(struct ibv_qp *qp) {
    static int (*real_destroy)(struct ibv_qp *);
    if (!real_destroy) {
        real_destroy = (int (*)(struct ibv_qp *))dlsym(RTLD_NEXT, "ibv_destroy_qp");
        if (!real_destroy) {
            fprintf(stderr, "rxe-linger: no ibv_destroy_qp after this library: %s\n", dlerror());
            abort();
        }
    }
    linger_once();
    return real_destroy(qp);
}

/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion control: ECN on what a device sends, the notification point
 * (CNPs back to a sender whose frames arrive CE-marked, RoCEv2 Annex
 * A17.9.3) and the reaction point (DCQCN per QP: Zhu et al., "Congestion
 * Control for Large-Scale RDMA Deployments", SIGCOMM 2015).
 *
 * Every default below says where it comes from (doc/congestion.md has the
 * table and the reasons): "paper" is the SIGCOMM 2015 DCQCN paper, "mlx5"
 * is the ConnectX firmware default (mlxconfig ROCE_CC_* / RPG_* names).
 */
#ifndef UROCE_CC_H
#define UROCE_CC_H

#include <uroce/export.h>

#include <cstdint>

namespace uroce {

/* The reaction point's parameters. Rates in Mb/s, times in ns. */
struct dcqcn_params {
    /* Most a QP may send: the NIC's line rate (mlx5 RPG_MAX_RATE = 0 means
     * the port's speed; a software stack has no fixed one, so it is set
     * here). 0 with dcqcn off: no pacing at all. */
    uint64_t line_rate_mbps = 0;
    /* mlx5 RPG_MIN_RATE = 1 Mb/s: the floor of a cut. */
    uint64_t min_rate_mbps = 1;
    /* g, the gain of the alpha average: paper 1/256 (mlx5 DCE_TCP_G = 1019
     * of 1024 is g = 5/1024; the paper's value is kept, as the issue asks). */
    double g = 1.0 / 256;
    /* alpha's start (mlx5 INITIAL_ALPHA_VALUE = 1023 of 1024, i.e. ~1: the
     * first cut halves the rate, as in the paper). */
    double initial_alpha = 1.0;
    /* The alpha timer: alpha decays by (1 - g) every this long without a
     * CNP. Paper: 55 us (its K, "larger than the CNP interval"). */
    uint64_t alpha_update_ns = 55000;
    /* The rate-increase timer T: mlx5 RPG_TIME_RESET = 300 us (paper 55 us). */
    uint64_t rate_increase_ns = 300000;
    /* The byte counter B: mlx5 RPG_BYTE_RESET = 32767 bytes (paper 10 MB). */
    uint64_t byte_counter = 32767;
    /* F, the fast-recovery steps before additive increase: mlx5
     * RPG_THRESHOLD = 1 (paper 5). */
    uint32_t fast_recovery_steps = 1;
    /* R_AI: mlx5 RPG_AI_RATE = 5 Mb/s (paper 40 Mb/s at 40 Gb/s). */
    uint64_t ai_rate_mbps = 5;
    /* R_HAI: mlx5 RPG_HAI_RATE = 50 Mb/s (paper 10 x R_AI). */
    uint64_t hai_rate_mbps = 50;
    /* A cut never takes the rate below this percentage of what it was:
     * mlx5 RPG_MIN_DEC_FAC = 50 (so at the default it never binds: a cut
     * with alpha <= 1 keeps at least half). */
    uint32_t min_dec_factor_pct = 50;
    /* At most one cut per this period, however many CNPs arrive: mlx5
     * RATE_REDUCE_MONITOR_PERIOD = 4 us. */
    uint64_t rate_reduce_period_ns = 4000;
    /* The pacer's burst: how many bytes may leave back to back after an
     * idle spell (the token bucket's depth), four 4 KB-MTU frames. It must
     * also cover what the rate allows between two turns of the requester
     * (rate x poll interval: 16 KB is 1.3 us at 100 Gb/s), or a slow poll
     * loses the credit and the QP sends below its rate. */
    uint32_t burst_bytes = 16384;
};

struct cc_config {
    /* ECN on what the device sends: true marks RoCE frames ECT(0) (the IP
     * ECN bits 10, as mlx5 sends them), false sends them Not-ECT (00). The
     * ECN bits of an address vector's traffic_class are replaced either way;
     * its DSCP is kept. The ICRC masks the whole TOS / traffic class
     * (Annex A17.3.3), so a switch may rewrite them. */
    bool ecn = true;
    /* Notification point: a CE-marked RoCE frame for an RC/UC QP sends a CNP
     * to the peer QP, at most one per QP per cnp_interval_ns. mlx5
     * MIN_TIME_BETWEEN_CNPS = 4 us (default in the firmware tables; a
     * ConnectX-5 dump shows 2; the paper's NP used 50 us). */
    bool cnp = true;
    uint64_t cnp_interval_ns = 4000;
    /* CNPs leave with this DSCP (mlx5 CNP_DSCP = 48, CS6: the ConnectX-4
     * capture's TOS 0xC2) and ECT(0) when ecn is on. */
    uint8_t cnp_dscp = 48;
    /* Reaction point: DCQCN rate control of each RC/UC requester. Off by
     * default: it needs dcqcn.line_rate_mbps, which a software stack cannot
     * know. With it off, a non-zero line_rate_mbps still paces at that rate. */
    bool dcqcn = false;
    dcqcn_params rp;
};

/* A QP's reaction-point state, for telemetry. */
struct qp_cc_info {
    bool paced = false;       /* a rate limit applies (dcqcn, or a line rate) */
    bool dcqcn = false;       /* DCQCN drives the rate */
    uint64_t rate_mbps = 0;   /* current rate RC (0: unpaced) */
    uint64_t target_mbps = 0; /* target rate RT */
    uint64_t lowest_mbps = 0; /* the lowest RC since the QP was created */
    double alpha = 0;         /* congestion estimate */
};

struct qp;
UROCE_API qp_cc_info qp_cc_query(const qp *q);

} // namespace uroce

#endif

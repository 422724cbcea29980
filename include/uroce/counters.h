/* SPDX-License-Identifier: BSD-3-Clause
 * Transport counters: every drop, NAK, retransmission, timeout and RNR is
 * counted per QP and per device (the device sums what its QPs count plus
 * what happens before a packet reaches a QP). Plain uint64_t: one thread
 * owns a device, so no atomics.
 */
#ifndef UROCE_COUNTERS_H
#define UROCE_COUNTERS_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>

namespace uroce {

/* X(name, description) */
#define UROCE_QP_COUNTERS(X)                                                                       \
    X(tx_pkts, "packets sent")                                                                     \
    X(tx_bytes, "payload bytes sent")                                                              \
    X(rx_pkts, "packets accepted")                                                                 \
    X(rx_bytes, "payload bytes received")                                                          \
    X(tx_acks, "ACKs sent")                                                                        \
    X(rx_acks, "ACKs received")                                                                    \
    X(retransmits, "go-back-N retransmissions started")                                            \
    X(retrans_pkts, "packets re-sent")                                                             \
    X(timeouts, "local ACK timeouts")                                                              \
    X(retry_exceeded, "retry counter exhausted")                                                   \
    X(retry_unsent_waits, "ACK timeouts not counted as retries: the retry under way had sent "     \
                          "nothing yet (no TX mbuf)")                                              \
    X(retry_pokes, "ACK timeouts answered by asking again for the oldest request alone, not "      \
                   "counted as a retry: responses came since the last one")                        \
    X(rnr_naks_sent, "RNR NAKs sent")                                                              \
    X(rnr_naks_rcvd, "RNR NAKs received")                                                          \
    X(rnr_exceeded, "RNR retry counter exhausted")                                                 \
    X(seq_naks_sent, "PSN sequence error NAKs sent")                                               \
    X(seq_naks_rcvd, "PSN sequence error NAKs received")                                           \
    X(inv_req_naks_sent, "invalid request NAKs sent")                                              \
    X(access_naks_sent, "remote access error NAKs sent")                                           \
    X(op_naks_sent, "remote operational error NAKs sent")                                          \
    X(fatal_naks_rcvd, "fatal NAKs received")                                                      \
    X(dup_requests, "duplicate requests (re-ACKed / replayed)")                                    \
    X(dup_reads, "duplicate READs re-read")                                                        \
    X(dup_atomics, "duplicate atomics replayed")                                                   \
    X(out_of_seq, "out-of-sequence requests dropped")                                              \
    X(dup_responses, "stale or duplicate responses dropped")                                       \
    X(out_of_seq_responses,                                                                        \
      "READ responses past a gap dropped (the retry for the gap asks again)")                      \
    X(rerequests_saved, "gaps in responses not asked again: an earlier retry's re-request, still " \
                        "queued at the responder, covers them")                                    \
    X(bad_responses, "responses that match no outstanding request")                                \
    X(opcode_seq_errors, "opcode sequence errors")                                                 \
    X(uc_dropped, "UC packets dropped: after a PSN gap, or of a refused message (R_Key, access, "  \
                  "length, no receive WQE)")                                                       \
    X(ud_qkey_drops, "UD packets dropped on Q_Key mismatch")                                       \
    X(ud_no_wqe_drops, "UD packets dropped, no receive WQE")                                       \
    X(state_drops, "packets dropped: QP not in a receiving state")                                 \
    X(bad_rkey, "remote requests naming an unknown, stale or invalidated R_Key")                   \
    X(rkey_violations, "remote requests refused on the R_Key's PD, access rights or range")        \
    X(inv_rkey_refused, "SEND with Invalidate refused: key not remotely invalidatable")            \
    X(rd_atomic_refused, "READ/atomic requests refused: max_dest_rd_atomic already outstanding")   \
    X(rd_atomic_evicted, "queued READ/atomic replays dropped to make room for a new request")      \
    X(ce_marks_rcvd, "frames received with the IP ECN field at CE (congestion on the way)")        \
    X(cnps_sent, "congestion notification packets sent to the peer QP")                            \
    X(ce_no_cnp, "CE marks not answered: CNP within cnp_interval, UD, no path, CNPs off, no mbuf") \
    X(cnps_rcvd, "congestion notification packets received")                                       \
    X(rate_cuts, "DCQCN rate cuts")                                                                \
    X(completions, "work completions written")                                                     \
    X(error_completions, "work completions with an error status")                                  \
    X(tlp_probes, "tail-loss probes: unacknowledged packets re-sent with AckReq after RTTs of "    \
                  "silence (not retries)")                                                         \
    X(tlp_recoveries, "forward progress after a tail-loss probe, before the ACK timeout")          \
    X(tlp_spurious,                                                                                \
      "tail-loss probes found spurious: the probed PSN was ACKed sooner than an RTT "              \
      "after the probe (the original's answer); the probe timeout backs off")                      \
    X(tlp_deferred,                                                                                \
      "tail-loss probes put off an SRTT: the device went unpolled for most of the silence (its "   \
      "responses unread, a peer on the same core not run)")                                        \
    X(sr_placed, "selective repeat: WRITE packets placed ahead of the expected PSN")               \
    X(sr_held_back, "selective repeat: packets ahead of the expected PSN not placed (SEND, READ, " \
                    "atomic, immediate; resent when the SACK shows them missing)")                 \
    X(sr_refused, "selective repeat: out-of-order packets refused (R_Key, access, length, "        \
                  "beyond the window, or a selective-repeat opcode on a QP without it)")           \
    X(sacks_sent, "selective repeat: SACKs sent")                                                  \
    X(sacks_rcvd, "selective repeat: SACKs received")                                              \
    X(sack_refused, "selective repeat: SACKs refused (QP without it, or for PSNs never sent)")     \
    X(sack_resends, "selective repeat: packets re-sent because a SACK showed them missing")

#define UROCE_DEV_COUNTERS(X)                                                                      \
    X(rx_pkts, "frames handed to rx_burst")                                                        \
    X(rx_parse_errors, "frames that are not well-formed RoCEv2")                                   \
    X(rx_icrc_errors, "frames with a bad ICRC")                                                    \
    X(rx_cnp_ignored, "congestion notification packets for a QP without DCQCN (ignored)")          \
    X(rx_not_ours, "frames for another MAC or IP")                                                 \
    X(rx_no_qp, "frames for an unknown QPN")                                                       \
    X(rx_wrong_transport, "frames whose transport does not match the QP type")                     \
    X(rx_bad_pkey, "frames with a P_Key not in the table")                                         \
    X(rx_ip_csum_errors, "frames with a bad IPv4 header checksum")                                 \
    X(rx_bad_src, "frames whose addresses do not match the connected QP's path")                   \
    X(tx_pkts, "frames handed to the driver")                                                      \
    X(tx_drops, "frames dropped before the port: longer than its max frame length")                \
    X(tx_stalls, "flushes the port took only part of (the rest kept, sent later)")                 \
    X(tx_deferred_turns, "scheduler rounds cut short: TX queue full (back-pressure)")              \
    X(tx_alloc_fail, "mbuf allocation failures")                                                   \
    X(tx_mbuf_waits, "QP turns that stopped for want of an mbuf (the QP resumes on a later poll)") \
    X(cq_overflows, "completions lost to a full CQ")                                               \
    X(timer_fires, "timers fired")                                                                 \
    X(rx_icrc_fused, "frames whose ICRC was checked while their payload was placed")               \
    X(rx_icrc_fused_errors,                                                                        \
      "of those, bad ones: placed bytes left to the resend, nothing committed")                    \
    /* new counters go last: dev_counters' layout then only grows (doc/abi.md) */                  \
    X(async_event_overflows, "asynchronous events lost to a full event queue")                     \
    X(rx_icrc_ahead,                                                                               \
      "frames whose ICRC was folded while the frame before them was placed (one pass for both)")

struct qp_counters {
#define UROCE_X(n, d) uint64_t n = 0;
    UROCE_QP_COUNTERS(UROCE_X)
#undef UROCE_X
};

struct dev_counters {
#define UROCE_X(n, d) uint64_t n = 0;
    UROCE_DEV_COUNTERS(UROCE_X)
#undef UROCE_X
};

struct counter_desc {
    const char *name;
    const char *description;
    size_t offset;
};

inline constexpr counter_desc qp_counter_table[] = {
#define UROCE_X(n, d) {#n, d, offsetof(qp_counters, n)},
    UROCE_QP_COUNTERS(UROCE_X)
#undef UROCE_X
};
inline constexpr counter_desc dev_counter_table[] = {
#define UROCE_X(n, d) {#n, d, offsetof(dev_counters, n)},
    UROCE_DEV_COUNTERS(UROCE_X)
#undef UROCE_X
};

template <class C> static inline uint64_t counter_value(const C &c, const counter_desc &d) {
    return *reinterpret_cast<const uint64_t *>(reinterpret_cast<const char *>(&c) + d.offset);
}

static inline void qp_counters_add(qp_counters &to, const qp_counters &from) {
#define UROCE_X(n, d) to.n += from.n;
    UROCE_QP_COUNTERS(UROCE_X)
#undef UROCE_X
}

} // namespace uroce

#endif

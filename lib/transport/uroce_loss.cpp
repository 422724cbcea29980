/* SPDX-License-Identifier: BSD-3-Clause
 * Loss recovery beyond the spec's minimum, for every peer (rxe and hardware
 * included): a per-QP RTT estimate and a tail-loss probe.
 *
 * Why: go-back-N recovers a loss from the responder's PSN sequence error
 * NAK, which only a later packet can trigger. When the last packets of a
 * burst are lost (a tail loss), or the ACK or NAK is, nothing follows and
 * only the local ACK timeout recovers: 67 ms at timeout 14, against RTTs of
 * microseconds. The in-flight cap (update_window) comes with it. The probe (as TCP's, RFC 8985
 * section 7) resends, after a few RTTs without progress, the last packet sent, with AckReq:
 *   - it was lost: it fills the hole and is ACKed;
 *   - earlier ones were lost: it is out of sequence and draws the PSN
 *     sequence error NAK that starts the usual go-back-N retry;
 *   - only the response was lost: it is a duplicate, which the responder
 *     re-ACKs without executing it again (IBTA 9.9.2, C9-105; READs and
 *     atomics are replayed from their resources, C9-111/C9-114).
 * All three are ordinary requester behaviour (a resend of an unacknowledged
 * PSN), so the peer needs nothing new. A probe is not a retry: retry_cnt is
 * spent as before, once per loss round (a NAK) or per timeout, and the
 * local ACK timeout stays the hard limit for giving up. A later probe in
 * the same silent period also resends the oldest unacknowledged packet: it
 * recovers a lost NAK (the responder NAKs once per gap) and a go-back-N
 * retry whose first packet was lost again (NAKs start no second retry).
 */
#include "uroce_device.h"
#include "uroce_psn.h"
#include "uroce_qp.h"
#include "uroce_wr_opcode.h"

namespace uroce {

/* Probe delay bounds. The floor keeps scheduling jitter of a software
 * responder (rxe in softirq, a busy poller) from looking like loss; without
 * an RTT sample the first probe waits 1 ms (RFC 8985 says 1 s for the
 * Internet; RoCE paths are data-centre paths), or a quarter of the ACK
 * timeout if that is shorter. */
inline constexpr uint64_t probe_min_ns = 20'000;
inline constexpr uint64_t probe_initial_ns = 1'000'000;
inline constexpr uint8_t probe_max = 3; /* per silent period; then the timeout */
/* Back-off after spurious probes: the PTO doubles per step, at most
 * 2^backoff_max, and one step is given back after calm_samples RTT samples
 * without a spurious probe (a jittery peer stays backed off; a path whose
 * jitter was a passing burst returns to the measured PTO). */
inline constexpr uint8_t backoff_max = 4;
inline constexpr uint8_t calm_samples = 16;

void loss_reset(qp *q) {
    q->loss = decltype(q->loss){};
    q->dev->timers().cancel(q->probe_timer);
}

uint64_t loss_probe_delay_ns(const qp *q) {
    const uint64_t ack_timeout = local_ack_timeout_ns(q->attr.timeout);
    uint64_t pto;
    if (q->loss.srtt_ns == 0) {
        pto = probe_initial_ns;
        if (ack_timeout && ack_timeout / 4 < pto) pto = ack_timeout / 4;
    } else {
        /* RFC 8985 7.2: 2 x SRTT; and the variance as in RFC 6298's RTO */
        pto = 2 * q->loss.srtt_ns;
        uint64_t v = q->loss.srtt_ns + 4 * q->loss.rttvar_ns;
        if (v > pto) pto = v;
    }
    if (pto < probe_min_ns) pto = probe_min_ns;
    /* back off: each probe in a silent period waits twice as long, and a
     * QP whose probes proved spurious waits 2^backoff as long */
    pto <<= q->loss.probes + q->loss.backoff;
    /* a probe is only useful before the timeout */
    if (ack_timeout && pto > ack_timeout / 2) pto = ack_timeout / 2;
    return pto;
}

/* (Re)start the silence the timer measures: a PTO from now. */
static void rearm_probe(qp *q, uint64_t now) {
    q->loss.probe_ref_psn = q->loss.ackreq_psn;
    q->loss.probe_ref_max = q->req.max_psn_sent;
    q->dev->timers().arm(q->probe_timer, now, loss_probe_delay_ns(q));
}
static void rearm_probe(qp *q) {
    rearm_probe(q, q->dev->now_ns());
}

static void arm_probe(qp *q, uint64_t now) {
    if (q->loss.probes >= probe_max || !q->dev->config().tail_loss_probe) {
        q->dev->timers().cancel(q->probe_timer);
        return;
    }
    q->loss.gap_waited = false; /* a new silence: one deferral for it */
    rearm_probe(q, now);
}
static void arm_probe(qp *q) {
    arm_probe(q, q->dev->now_ns());
}

void loss_on_send(qp *q, uint32_t psn, bool ack_req, bool resend) {
    auto &l = q->loss;
    /* one store per packet: what the firing timer compares (a response is
     * due only for AckReq packets, IBTA 9.7.6.1.2) */
    if (ack_req) l.ackreq_psn = psn;
    if (resend && !l.in_probe) {
        /* another resend (go-back-N, SACK) draws duplicate ACKs of its own:
         * they say nothing about the probe */
        l.probe_pending = l.probe_watch = false;
        /* and until the completer passes them, a probe is not judged: the
         * answer to a resend sent just before the probe comes back sooner
         * than an RTT after it */
        if (!l.other_resends || psn_diff(psn, l.other_resend_hi) > 0) l.other_resend_hi = psn;
        l.other_resends = true;
    }
    if (resend) {
        /* Karn: an ACK can no longer tell which send it answers */
        if (l.rtt_timing && psn_diff(psn, l.rtt_psn) <= 0) l.rtt_timing = false;
    } else if (ack_req && !l.rtt_timing) {
        l.rtt_timing = true;
        l.rtt_psn = psn;
        l.rtt_start_ns = q->dev->now_ns();
        l.rtt_comp_psn = q->comp.psn;
    }
    /* Armed once per silent period, not per packet: a send while it runs
     * leaves it (every response re-arms it, loss_on_response), which keeps
     * a clock read and a timer-wheel move off each packet (16% of a 64 B
     * SEND's cycles when it was re-armed per send). The probe may then
     * come up to one PTO after the first unanswered send rather than the
     * last: in a burst without responses that is what it is for. */
    if (l.probes == 0 && !q->probe_timer.armed()) arm_probe(q);
}

/* The in-flight cap: two bandwidth-delay products (delivery rate x the
 * minimum RTT), within [min_unacked_psns, max_unacked_psns]. A window
 * larger than the path holds only queues, and go-back-N pays for every
 * packet in flight behind a loss: at 1% loss a 128-packet window resends
 * about as much as it delivers. */
static void update_window(qp *q, uint32_t delivered, uint64_t r) {
    auto &l = q->loss;
    /* with the probe off, the QP keeps the fixed window, as rxe: a window-
     * limited sender stalls after every window, and each stall behind a
     * lost packet is a tail loss that only the timeout would recover */
    if (r == 0 || delivered == 0 || !q->dev->config().tail_loss_probe) return;
    uint64_t rate = uint64_t(delivered) * 1'000'000'000ull / r;
    l.delivery_pps -= l.delivery_pps / 8; /* decays: a slower path shows within a few RTTs */
    if (rate > l.delivery_pps) l.delivery_pps = rate;
    uint64_t w = 2 * l.delivery_pps * l.min_rtt_ns / 1'000'000'000ull + 1;
    if (w < min_unacked_psns) w = min_unacked_psns;
    if (w > max_unacked_psns) w = max_unacked_psns;
    l.window = uint32_t(w);
}

static void rtt_sample(qp *q, uint64_t r) {
    auto &l = q->loss;
    if (l.min_rtt_ns == 0 || r < l.min_rtt_ns) l.min_rtt_ns = r;
    if (l.backoff && ++l.calm >= calm_samples) {
        --l.backoff;
        l.calm = 0;
    }
    if (l.srtt_ns == 0 || l.rtt_seeded) {
        /* RFC 6298 2.2; the QP's own first sample replaces a seed outright */
        l.rtt_seeded = false;
        l.srtt_ns = r ? r : 1;
        l.rttvar_ns = r / 2;
        return;
    }
    /* RFC 6298 2.3: beta 1/4, alpha 1/8 */
    uint64_t err = r > l.srtt_ns ? r - l.srtt_ns : l.srtt_ns - r;
    l.rttvar_ns = l.rttvar_ns - l.rttvar_ns / 4 + err / 4;
    l.srtt_ns = l.srtt_ns - l.srtt_ns / 8 + r / 8;
    if (l.srtt_ns == 0) l.srtt_ns = 1;
}

/* Until its first response a QP knows nothing of its path, and its probe
 * waits probe_initial_ns (1 ms), a data-centre guess. A QP connected by the
 * CM has had a round trip with the same peer just before, the handshake
 * (REQ -> REP, or REP -> RTU), which shows the peer's pace: rxe under TCG
 * answered 100 REQs at once in 35-630 ms, and the 1000 SENDs that followed
 * in 15-160 ms, so 1 ms probes resent about 4 packets per QP for nothing.
 * TCP's first RTT sample likewise comes from its handshake (Linux times
 * the SYN and SYN-ACK), QUIC's from its handshake packets (RFC 9002 5).
 * Taken as that first sample (RFC 6298 2.2), not as min_rtt_ns: the answer
 * may have waited for the peer's application (accept), and the minimum
 * judges probes spurious and sizes the window. It only stands in until the
 * QP's own first sample, which replaces it (rather than being averaged
 * into it at RFC 6298's 1/8), so a handshake slowed by the peer's accept
 * does not hold the probe back for the next few dozen round trips. */
void loss_seed_rtt(qp *q, uint64_t rtt_ns) {
    auto &l = q->loss;
    if (rtt_ns == 0 || l.srtt_ns != 0) return;
    l.srtt_ns = rtt_ns;
    l.rttvar_ns = rtt_ns / 2;
    l.rtt_seeded = true;
}

/* The PTO doubles, and stays so for calm_samples RTT samples. */
static void probe_was_spurious(qp *q) {
    auto &l = q->loss;
    l.probe_watch = false;
    ++q->cnt.tlp_spurious;
    if (l.backoff < backoff_max) ++l.backoff;
    l.calm = 0;
}

void loss_on_progress(qp *q, uint64_t now) {
    auto &l = q->loss;
    if (l.rtt_timing && psn_diff(q->comp.psn, l.rtt_psn) > 0) {
        l.rtt_timing = false;
        const uint64_t r = now - l.rtt_start_ns;
        rtt_sample(q, r);
        update_window(q, uint32_t(psn_diff(q->comp.psn, l.rtt_comp_psn)), r);
    }
    /* Only a silent period with a single probe packet is judged: with more
     * (a second probe, or the oldest resent with it) their duplicates'
     * ACKs and the first probe's late answer tell nothing about the last. */
    if (l.other_resends && psn_diff(q->comp.psn, l.other_resend_hi) > 0) l.other_resends = false;
    if (l.probe_pending && psn_diff(q->comp.psn, l.probe_psn) > 0 && l.probe_pkts == 1) {
        l.probe_pending = false;
        /* The probed PSN acknowledged sooner than the path's minimum RTT
         * after the probe: the answer is the original's, the probe was
         * spurious (RFC 8985 leaves this to DSACK; a responder's duplicate
         * ACK is not told apart from its first here, the time is). */
        if (l.min_rtt_ns && now - l.probe_ns < l.min_rtt_ns)
            probe_was_spurious(q);
        else
            l.probe_watch = true; /* unless its duplicate's ACK follows */
    }
    l.probe_pending = false;
    if (l.probes) ++q->cnt.tlp_recoveries;
    l.probes = 0;
    l.probe_pkts = 0;
    if (comp_outstanding(q))
        arm_probe(q, now);
    else
        q->dev->timers().cancel(q->probe_timer);
}

/* A response below the completer's PSN. After a probe's PSN was
 * acknowledged, an ACK at or past it that moves nothing is the answer to a
 * duplicate: the probe's (IBTA 9.7.5.1.1 / C9-105: the responder re-ACKs
 * a duplicate; rxe with its latest PSN), so the original had arrived and
 * the probe was spurious, however late the original's answer came (a
 * jittery peer: rxe under emulation answers in microseconds or in
 * milliseconds). */
void loss_on_dup_response(qp *q, uint32_t psn) {
    auto &l = q->loss;
    if (!l.probe_watch || psn_diff(psn, l.probe_psn) < 0) return;
    probe_was_spurious(q);
}

void loss_on_response(qp *q) {
    /* the responder is alive and answering: no probe while responses flow */
    if (q->probe_timer.armed()) arm_probe(q);
}

/* No probe while a READ is the oldest outstanding WQE: its responses come
 * as a stream at the responder's pace (a long READ from a slow responder
 * is silence that is not loss), a gap in them the completer sees itself (a
 * response past comp.psn), and a probe would queue duplicate READs behind
 * that stream; the ACK timeout, restarted by every response, covers it. */
static bool oldest_is_read(const qp *q) {
    if (q->sq_comp == q->sq_head) return false;
    return wr_opcode_lookup(sq_at(q, q->sq_comp).opcode).has(wr_flag::read);
}

/* Whether the silence the timer measured was, for more than its lateness,
 * time the device was not polled. The timer counts wall time, but only a
 * polling device receives: while nothing polls (the thread descheduled, an
 * application busy elsewhere, the other stack's turn when both run on one
 * core), responses wait unread in the port's queue, and a peer on the same
 * core (a loopback, a one-core benchmark) does not even answer. So the
 * gaps between polls longer than half the PTO are not silence: if, without
 * them, less than a PTO has passed since the timer was armed, nothing is
 * late yet. Measured with uroce-perf --loopback send_bw -s 64 (one core,
 * nothing lost): each of ~300 probes at 1 QP fired at a poll that came
 * 22-25 us after the one before (PTO 20 us, SRTT 3 us, the window full:
 * the gap held the whole PTO); at 16 QPs (PTO 100-400 us) half fired more
 * than 3.6 ms past their deadline (a scheduler's time slice), and most of
 * the rest after polls 75-250 us apart inside the silence (SRTT ~50 us),
 * their ACK read one or two polls after the probe. The wait between two
 * polls is part of every RTT sample (a response is read at a later poll
 * than its request was sent), so the SRTT, and half of any PTO (>= 2 x
 * SRTT), covers the usual one; a longer gap is the device not listening. */
static_assert(probe_min_ns / 2 >= timer_wheel::gap_log_min_ticks << timer_wheel::tick_shift,
              "the timer wheel logs every gap longer than half the smallest PTO");
static bool poll_gap_hid_silence(const qp *q) {
    const uint64_t now = q->dev->now_ns();
    const uint64_t pto = loss_probe_delay_ns(q);
    /* armed a PTO before its deadline: the PTO it was armed with (RTT
     * samples and probes re-arm it; a back-off step taken on a duplicate
     * ACK only lengthens it, which makes the silence look longer) */
    const uint64_t due = q->probe_timer.due_tick << timer_wheel::tick_shift;
    const uint64_t armed = due > pto ? due - pto : 0;
    /* a gap outside the RTT's measured spread, and at least half the PTO */
    uint64_t long_gap = q->loss.srtt_ns + 4 * q->loss.rttvar_ns;
    if (long_gap < pto / 2) long_gap = pto / 2;
    const uint64_t unpolled = q->dev->timers().unpolled_ns(armed, long_gap);
    return now - armed < pto + unpolled;
}

/* Whether the silence the timer measured is one a response should have
 * ended. The timer is armed at the first send of a silent period, not per
 * send; the responder answers only packets with AckReq (the last of each
 * message, every ack_req_interval-th). So when it fires:
 *   - an AckReq packet sent after it was armed has had less than a PTO:
 *     wait a PTO more (a paced requester sends a 64 KiB message's AckReq
 *     once per message, which at a few Gb/s is longer than the PTO);
 *   - every AckReq packet acknowledged and the requester still sending
 *     (new packets went out since the timer was armed): the next AckReq
 *     packet is on its way; nothing is late.
 * Otherwise (an AckReq packet unanswered for a PTO, or a requester that sent
 * nothing new for a PTO, whatever holds it) the probe goes. (A guess at
 * "still sending" from work left and an open window deferred probes that
 * selective repeat at 5% loss needed: 0.2 -> 0.03 of lossless.) Deferring costs at
 * most one PTO on a real tail loss; a loss in the middle of a stream is
 * found by the sequence NAK the next packet draws anyway. */
static bool probe_due(const qp *q) {
    const auto &l = q->loss;
    /* Only a paced requester defers: unpaced, AckReq packets leave as fast
     * as the window lets them, and deferring cost selective repeat on
     * bench_transport's memlink (no delay, both stacks on one core) most of
     * its goodput at 5% loss (0.2 -> 0.03 of lossless, ACK timeouts; not
     * understood yet) */
    if (!q->cc.paced) return true;
    /* the requester put new packets on the wire since the timer was armed:
     * it is not stalled, so a later AckReq packet is coming (a stalled one,
     * whatever holds it, gets its probe) */
    const bool sent_new = psn_diff(q->req.max_psn_sent, l.probe_ref_max) > 0;
    if (!sent_new) return true;
    const bool ackreq_new = l.ackreq_psn != l.probe_ref_psn;
    const bool ackreq_answered = psn_diff(q->comp.psn, l.ackreq_psn) > 0;
    return !(ackreq_new || ackreq_answered);
}

void loss_probe_timeout(void *arg) {
    qp *q = static_cast<qp *>(arg);
    ++q->dev->cnt().timer_fires;
    if (q->type != qp_type::rc || (q->state != qp_state::rts && q->state != qp_state::sqd)) return;
    if (q->req.rnr_wait || q->req.need_retry || !comp_outstanding(q) || oldest_is_read(q)) return;
    /* the last packet sent; nothing to probe before the first */
    if (psn_diff(q->req.psn, q->comp.psn) <= 0) return;
    const uint32_t last = psn_sub(q->req.psn, 1);
    /* Less than a PTO of the silence was polled: wait one SRTT more, the
     * time an answer takes once the peer on this core gets its turns and
     * the port's queue is read, then probe. Once per silence, so a device
     * that polls less often than every half PTO still probes. (Waiting a
     * whole PTO more cost selective repeat at 5% loss on bench_transport a
     * third of its goodput on this loaded 2-vCPU machine, where most
     * silences hold a scheduler gap: 17.5 -> 11.1 Gbit/s; one SRTT is as
     * before, 17.5 -> 16.7, within the run-to-run spread.) */
    if (!q->loss.gap_waited && poll_gap_hid_silence(q)) {
        ++q->cnt.tlp_deferred;
        q->loss.gap_waited = true;
        const uint64_t wait = q->loss.srtt_ns ? q->loss.srtt_ns : loss_probe_delay_ns(q);
        q->dev->timers().arm(q->probe_timer, q->dev->now_ns(), wait);
        return;
    }
    if (q->loss.probes == 0 && !q->comp.retry_guard && !probe_due(q)) {
        rearm_probe(q);
        return;
    }
    bool sent = false;
    q->loss.in_probe = true;
    if (q->loss.probes > 0 || q->comp.retry_guard) {
        /* second probe, or a retry that made no progress: the oldest too */
        if (q->comp.psn != last && req_resend_psn(q, q->comp.psn)) {
            ++q->cnt.tlp_probes;
            ++q->loss.probe_pkts;
            sent = true;
        }
    }
    if (req_resend_psn(q, last)) {
        ++q->cnt.tlp_probes;
        ++q->loss.probe_pkts;
        sent = true;
    }
    q->loss.in_probe = false;
    if (!sent) return;
    /* judged only if no other resend is in flight (ended by the completer);
     * not on a selective-repeat QP: there a third of the probes on
     * bench_transport at 1% loss were judged spurious and the back-off cost
     * goodput (5% loss: 0.2 -> 0.1 of lossless, ACK timeouts); its SACK
     * resends and SACKs are not yet told apart from the probe's answer */
    q->loss.probe_pending = !q->loss.other_resends && !q->attr.selective_repeat;
    q->loss.probe_watch = false;
    q->loss.probe_psn = last;
    q->loss.probe_ns = q->dev->now_ns();
    ++q->loss.probes;
    arm_probe(q);
    q->dev->schedule(q); /* flush the probe with the next turn */
}

} // namespace uroce

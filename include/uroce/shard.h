/* SPDX-License-Identifier: BSD-3-Clause
 * Shards: several lcores serve one port, each with its own engine, device
 * and port queues, and the QPs of the port split between them.
 *
 * A QP belongs to exactly one device, and a device is single-threaded. The
 * RoCEv2 UDP source port is chosen by the sender (rxe hashes the QPNs into
 * the range of IBTA Annex A17.2.3), so RSS on the UDP 5-tuple keeps each
 * flow on one RX queue but cannot know which lcore owns the destination
 * QPN. So:
 *
 *   - each shard's device takes its QPNs from its own slice of the QPN
 *     space (shard_qpn_range() below), and
 *     the owner of a received frame is one shift of the BTH destination QPN;
 *   - each shard reads its own RX queue (RSS spreads flows over the queues
 *     where the PMD can; one queue read by shard 0 where it cannot) and
 *     hands frames for another shard's QPs to that shard's inbox, an
 *     rte_ring (multi-producer, single-consumer, burst enqueue);
 *   - ARP, ND and ICMP go to shard 0, which owns the neighbour code
 *     (address handles carry the resolved MAC: the other shards never need it);
 *   - frames nobody serves (not IP, other UDP ports, runts) stay with the
 *     shard that received them: its engine counts and frees them.
 *
 * Frames of one flow take one path (one RX queue, then one inbox), so a
 * QP's frames stay in order (reordered PSNs would look like loss to the
 * responder: sequence-error NAKs and retransmissions).
 *
 *   lcore i:  while (!stop) { sh.rx_burst(frames of RX queue i); sh.poll(); }
 *
 * No frame is dropped silently: an inbox that is full counts fanout_ring_full
 * on the sending shard, and the frame is freed (the peer retransmits it).
 */
#ifndef UROCE_SHARD_H
#define UROCE_SHARD_H

#include <uroce/export.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rte_mbuf.h>

#include <uroce/engine.h>
#include <uroce/hdr.h>
#include <uroce/verbs.h>

struct rte_ring;

namespace uroce {

/* Which shard owns a QPN: the BTH's 24-bit destination QPN carries the shard
 * index in its top 8 bits, so a received frame's owner is one shift away
 * (no table, no division). Shard 0 of 1 keeps rxe's QPNs (0x11, 0x12, ...);
 * QP0/QP1 and QPNs naming no shard belong to shard 0, which counts them as
 * unknown like any other QPN it does not have. */
inline constexpr unsigned qpn_shard_shift = 16;
inline constexpr uint32_t qpn_shard_span = 1u << qpn_shard_shift; /* QPNs per shard */
inline constexpr unsigned max_shards = 1u << (24 - qpn_shard_shift);
static inline unsigned qpn_shard(uint32_t qpn, unsigned shard_count) {
    const unsigned s = (qpn & 0xffffffu) >> qpn_shard_shift;
    return s < shard_count ? s : 0;
}

/* Give shard `index`'s device its slice of the QPN space: QPNs from
 * index * qpn_shard_span + default_first_qpn (0x11, 0x10011, ...), and at
 * most what the slice holds (max_qp is lowered to fit). False if there is no
 * such shard. One device alone keeps the default range instead. */
static inline bool shard_qpn_range(device_config &dc, unsigned index) {
    if (index >= max_shards) return false;
    dc.first_qpn = uint32_t(index) * qpn_shard_span + default_first_qpn;
    if (dc.max_qp > qpn_shard_span - default_first_qpn)
        dc.max_qp = qpn_shard_span - default_first_qpn;
    return true;
}

/* The shard that serves a received frame: RoCEv2 by its BTH destination
 * QPN, neighbour traffic on shard 0, everything else where it arrived
 * (self) to be counted there. A RoCEv2 frame too short for a BTH also stays
 * (the parser counts it). Reads the first segment only, like classify_frame. */
static inline unsigned frame_shard(const rte_mbuf *m, unsigned shard_count, unsigned self) {
    uint32_t udp_off = 0;
    switch (classify_frame(m, udp_off)) {
    case frame_class::roce: {
        const uint32_t bth_off = udp_off + uint32_t(sizeof(udp_hdr));
        if (m->data_len < bth_off + 8) return self;
        /* BTH bytes 5..7: the destination QPN (IBTA 9.2) */
        const uint8_t *q = rte_pktmbuf_mtod(m, const uint8_t *) + bth_off + 5;
        return qpn_shard(uint32_t(q[0]) << 16 | uint32_t(q[1]) << 8 | q[2], shard_count);
    }
    case frame_class::neighbour:
        return 0;
    default:
        return self;
    }
}

struct shard_counters {
    uint64_t fanout_out = 0;       /* frames received here, handed to their owner shard */
    uint64_t fanout_in = 0;        /* frames other shards handed to this one */
    uint64_t fanout_ring_full = 0; /* frames for another shard whose inbox was full: freed */
};

/* The shards' inboxes: one rte_ring per shard, any shard may enqueue, only
 * its owner dequeues. Created once by the control thread before the lcores
 * start; frames still queued at destruction are freed. */
class shard_group {
  public:
    static constexpr unsigned default_ring_size = 1024;

    /* name prefixes the rings' names (unique per process); nullptr with err set. */
    UROCE_API static std::unique_ptr<shard_group> create(const std::string &name, unsigned count,
                                                         std::string &err,
                                                         unsigned ring_size = default_ring_size);
    UROCE_API ~shard_group();
    shard_group(const shard_group &) = delete;
    shard_group &operator=(const shard_group &) = delete;

    unsigned count() const { return unsigned(inboxes_.size()); }
    rte_ring *inbox(unsigned i) const { return inboxes_[i]; }

  private:
    shard_group() = default;
    std::vector<rte_ring *> inboxes_;
};

/* One shard's side of the fan-out, in front of its engine. Used only from
 * the shard's lcore. */
class shard {
  public:
    shard(shard_group &group, unsigned index, engine &eng)
        : group_(group), index_(index), eng_(eng) {}

    /* Frames this shard received from its port queue: its own go to its
     * engine, the others to their owners' inboxes. Every mbuf is consumed. */
    UROCE_API void rx_burst(rte_mbuf **pkts, uint16_t n);
    /* Frames other shards handed over, then the engine's progress. Returns
     * frames taken from the inbox plus frames sent: 0 means idle. */
    UROCE_API unsigned poll();

    unsigned index() const { return index_; }
    engine &eng() const { return eng_; }
    const shard_counters &counters() const { return cnt_; }

  private:
    void hand_over(rte_mbuf **pkts, const uint16_t *owner, uint16_t n);

    shard_group &group_;
    const unsigned index_;
    engine &eng_;
    shard_counters cnt_;
};

} // namespace uroce

#endif

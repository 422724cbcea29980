/* SPDX-License-Identifier: BSD-3-Clause
 * Packet building and payload movement for the transport's fast path.
 *
 * TX: the Eth/IP/UDP part of every frame of a QP (or UD address handle) is a
 * template computed once; per packet it is copied with a constant-size
 * memcpy for its shape, and only lengths, IP id, the IPv4 checksum (from the
 * template's partial sum, or by the NIC with csum_offload), BTH and
 * extension headers are written. The payload is gathered from the work
 * request's SGEs straight into the mbuf (the one copy) and CRC'd in the
 * same pass (lib/icrc masks the variant fields in registers), or, for a
 * frame too short to gain from fusing, CRC'd whole at the TX flush with the
 * other frames of the burst (pkt_build's icrc_due): copy and CRC touch each
 * byte once from memory. The mbuf's header is only stored to, never read
 * (tx_mbuf_alloc), since it is cold when it leaves the pool.
 *
 * RX: the ICRC is checked over the whole frame first, then the payload is
 * copied once, again from L1; or, where the payload's place is fixed by
 * trusted state and nothing is committed before the verdict, checked while
 * the payload is copied (pkt_icrc_begin, doc/security.md "Fused receive").
 */
#ifndef UROCE_PKT_H
#define UROCE_PKT_H

#include <cstdint>

#include <uroce/build.h>
#include <uroce/icrc.h>
#include <uroce/parse.h>
#include <uroce/verbs.h>

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

/* The template's length is one of four shapes; pkt_build copies each with a
 * constant-size memcpy (a few vector moves, not rep movs). */
inline constexpr uint8_t hdr_len_v4 = sizeof(eth_hdr) + sizeof(ipv4_hdr) + sizeof(udp_hdr); /* 42 */
inline constexpr uint8_t hdr_len_v4_vlan = hdr_len_v4 + sizeof(vlan_hdr);                   /* 46 */
inline constexpr uint8_t hdr_len_v6 = sizeof(eth_hdr) + sizeof(ipv6_hdr) + sizeof(udp_hdr); /* 62 */
inline constexpr uint8_t hdr_len_v6_vlan = hdr_len_v6 + sizeof(vlan_hdr);                   /* 66 */

struct hdr_template {
    alignas(16) uint8_t bytes[hdr_len_v6_vlan] = {};
    uint8_t l2_len = 0;
    uint8_t l3_len = 0;
    uint8_t len = 0; /* l2 + l3 + udp: one of the hdr_len_* shapes */
    uint8_t ip_version = 4;
    bool csum_offload = false;
    /* IPv4: the one's-complement sum of the header with total length, id and
     * checksum 0 (RFC 1071, folded to 16 bits, not inverted). Per packet only
     * total length and id are added (ipv4_csum_finish). */
    uint16_t ip_csum_base = 0;
};

void make_hdr_template(hdr_template &t, const roce_path &path, bool csum_offload);

/* One's-complement sum of the 16-bit big-endian words of an IPv4 header
 * (20 bytes), folded to 16 bits, not inverted. */
uint16_t ipv4_csum_partial(const ipv4_hdr *ip);

/* The IPv4 header checksum from the template's partial sum plus the two
 * fields that change per packet (RFC 1624's incremental update with 0 as
 * the old value of both). Equals a full RFC 1071 recomputation for every
 * input: base is non-zero (version/IHL 0x45 is in it), so the folded sum is
 * in [1, 0xffff] like the full one's and the checksum is 0x0000, never
 * 0xffff, when the sum is 0xffff (RFC 1624 section 3). */
inline uint16_t ipv4_csum_finish(uint16_t base, uint16_t total_length, uint16_t id) {
    uint32_t s = uint32_t(base) + total_length + id; /* <= 0x2fffd */
    s = (s & 0xffff) + (s >> 16);                    /* <= 0x10001 */
    s = (s & 0xffff) + (s >> 16);                    /* <= 0xffff */
    return uint16_t(~s);
}

/* Where a packet's payload comes from: an SGE list at a byte offset, or a
 * flat buffer (inline data, atomic results, read responses from one MR). */
struct payload_src {
    const sge *sg = nullptr;
    uint32_t num_sge = 0;
    uint64_t offset = 0;
    const uint8_t *flat = nullptr;
};

/* What building a frame needs to know of an mbuf pool, read from the
 * pool's private area (rte_pktmbuf_pool_private, which sits after the
 * per-lcore caches, a dependent load from the pool's header per read). */
struct tx_pool_geometry {
    bool pinned = false;    /* pinned external buffers (pkt_build allocates those whole) */
    uint16_t data_room = 0; /* rte_pktmbuf_data_room_size */
    uint32_t data_off = 0;  /* the first data byte after the mbuf: its private area, headroom */
    static tx_pool_geometry of(rte_mempool *pool);
};

/* The mbufs a device builds its frames in, taken from the pool eight at a
 * time. One rte_mbuf_raw_alloc per frame paid for the lcore's cache lookup
 * (a thread-local read through __tls_get_addr from this shared library)
 * and then waited on the mbuf's cold lines at its first stores (perf
 * annotate: two fifths of pkt_build). From a stash the next mbuf's header line
 * and first data lines are prefetched for writing while the current frame
 * is built. Eight, not more: a stash of 32 delayed the reuse of the mbuf
 * just freed (the mempool cache is LIFO, so it is the warmest) by 32
 * frames, and 4 KiB WRITEs measured 1.5% slower; with 8 neither SEND nor
 * WRITE lost (doc/performance.md). The stash holds at most `size` mbufs
 * out of the pool, and at most 1/256 of a small pool (one at a time from a
 * pool of 511 or fewer, so that a test that takes every mbuf finds them
 * there); they go back when it is destroyed. One thread, the device's. */
class tx_mbuf_stash {
  public:
    static constexpr unsigned size = 8;
    explicit tx_mbuf_stash(rte_mempool *pool);
    ~tx_mbuf_stash();
    tx_mbuf_stash(const tx_mbuf_stash &) = delete;
    tx_mbuf_stash &operator=(const tx_mbuf_stash &) = delete;
    rte_mempool *pool() const { return pool_; }
    const tx_pool_geometry &geometry() const { return geo_; }
    /* An mbuf as rte_mbuf_raw_alloc returns it, or nullptr when the pool is
     * empty (uroce_pkt.cpp). Never asked of a pool of pinned external
     * buffers: pkt_build takes those through rte_pktmbuf_alloc. */
    inline rte_mbuf *take();

  private:
    bool refill();
    rte_mempool *pool_;
    tx_pool_geometry geo_; /* the pool's, read once */
    uint16_t batch_;       /* mbufs per refill */
    uint16_t next_ = 0, end_ = 0;
    rte_mbuf *m_[size];
};

/* Allocate an mbuf and build a whole frame. Returns nullptr when the pool is
 * empty. ip_id is the IPv4 identification to use.
 *
 * With icrc_due, a frame whose ICRC is not fused into its payload copy is
 * left without it (*icrc_due = true): the caller computes it later with
 * pkt_icrc_fill, together with other frames' (device::tx_flush). A lone
 * small-frame ICRC is one latency-bound dependency chain (bench_icrc: 16.8 ns
 * for a 104 B frame); a burst of independent ones overlaps in the core
 * (6.4 ns each), and by then the header's narrow stores have left the store
 * buffer, so the CRC's vector loads do not wait on them. */
rte_mbuf *pkt_build(rte_mempool *pool, const hdr_template &t, const bth_fields &b,
                    const ext_fields &x, const payload_src *src, uint32_t payload_len,
                    uint16_t ip_id, bool *icrc_due = nullptr);

/* pkt_build with the frame's mbuf from a stash. */
rte_mbuf *pkt_build(tx_mbuf_stash &stash, const hdr_template &t, const bth_fields &b,
                    const ext_fields &x, const payload_src *src, uint32_t payload_len,
                    uint16_t ip_id, bool *icrc_due = nullptr);

/* The ICRC of a one-segment frame built by pkt_build with *icrc_due, into
 * its last four bytes (the L3 header starts at m->l2_len). */
void pkt_icrc_fill(rte_mbuf *m);

/* ICRC of a parsed frame held in m (any segmentation), compared with the
 * stored one. */
bool pkt_icrc_ok(const roce_packet &p, const rte_mbuf *m);

/* Copy len payload bytes starting at payload offset off of packet p (in m) to dst. */
void pkt_copy_payload(const roce_packet &p, const rte_mbuf *m, uint32_t off, uint8_t *dst,
                      uint32_t len);

/* ---- The ICRC checked while the payload is placed (doc/security.md,
 * "Fused receive"). */

/* Whether frame p's ICRC check is deferred (icrc_check_begin: settled by the
 * payload copy or icrc_check_settle): a one-segment frame that carries a
 * payload to place and is long enough to gain (icrc_fuse_min), when fusing
 * is on. Every other frame is checked whole (pkt_icrc_ok). */
bool pkt_icrc_defers(const roce_packet &p, const rte_mbuf *m);

/* Begins frame p's deferred ICRC check in c (pkt_icrc_defers is true). */
void pkt_icrc_begin(const roce_packet &p, icrc_check &c);

} // namespace uroce

#endif

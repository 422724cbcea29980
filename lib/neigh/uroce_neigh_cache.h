/* SPDX-License-Identifier: BSD-3-Clause
 * The neighbour cache (internal to lib/neigh): one entry per next hop, IPv4
 * by ARP and IPv6 by ND, with the RFC 4861 reachability state machine, its
 * timers and the solicitations that resolve and re-verify entries. Knows
 * the frames only through uroce_neigh_frame.h (it builds ARP requests and
 * NS); what arrives on the wire is the protocols' job (uroce_neigh_proto.h,
 * which learns through the protected interface below).
 *
 * RFC 4861 7.3 (NUD: states 7.3.2, upper-layer confirmation 7.3.1, DELAY /
 * PROBE 7.3.3), 7.2.2 (sending solicitations), 6.3.2 (randomised
 * ReachableTime), section 10 (timer constants); RFC 826 and RFC 1122 2.3.2
 * (ARP cache, unicast poll, keeping the latest packet of an unresolved
 * destination).
 *
 * Fixed-size: the entries and the hash index are allocated once, in the
 * constructor; no allocation afterwards.
 */
#ifndef UROCE_NEIGH_CACHE_H
#define UROCE_NEIGH_CACHE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>

#include <uroce/local_addr.h>
#include <uroce/neigh.h>
#include "uroce_neigh_frame.h"

struct rte_mbuf;

namespace uroce {

class neigh_cache {
  public:
    neigh_cache(const neigh_config &cfg, const local_addr_table &addrs);
    ~neigh_cache();
    neigh_cache(const neigh_cache &) = delete;
    neigh_cache &operator=(const neigh_cache &) = delete;

    local_addr_table &addrs() { return addrs_; }
    const local_addr_table &addrs() const { return addrs_; }
    const neigh_config &config() const { return cfg_; }
    const neigh_counters &counters() const { return ctr_; }
    uint64_t now() const { return now_; }

    /* neigh's resolution interface (uroce_neigh.h documents each). */
    std::optional<mac_addr> resolve(const gid &next_hop);
    bool send_or_hold(rte_mbuf *m, const gid &next_hop, rte_mbuf **tx_out, uint16_t &n_tx);
    void confirm(const gid &ip);
    bool add_static(const gid &ip, const mac_addr &mac);
    bool remove(const gid &ip);
    void flush();
    std::optional<neigh_entry_view> lookup(const gid &ip) const;
    size_t size() const { return n_entries_; }
    void visit(void (*fn)(void *ctx, const neigh_entry_view &v), void *ctx) const;
    void dump(FILE *f) const;

  protected:
    /* ---- timers: poll() runs them in this order, around the protocols'
     * own (announcements, MLD). Each is one comparison when nothing is due. */
    void advance(uint64_t now_ns) {
        if (now_ns > now_) now_ = now_ns;
    }
    /* First requests of new resolutions go out at once, not at the next scan. */
    void tx_new_requests(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
        if (n_urgent_) send_urgent(tx_out, n_tx, tx_cap);
    }
    /* Parked frames of entries resolved since. */
    void tx_released(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
        if (held_pending_) send_held(tx_out, n_tx, tx_cap);
    }
    /* State timers: retransmissions, probes, ageing. */
    void run_timers(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
        if (now_ >= next_scan_ && now_ >= scan_not_before_) scan(tx_out, n_tx, tx_cap);
    }

    /* ---- entries, for the protocols' learning (RFC 826 merge, RFC 4861
     * 7.2.3 / 7.2.5) */
    struct entry {
        gid ip;
        mac_addr mac;
        neigh_state state = neigh_state::none;
        uint8_t probes = 0;    /* solicitations sent in this state */
        bool queued = false;   /* on the urgent list */
        uint32_t next = 0;     /* hash chain / free list */
        uint64_t deadline = 0; /* state timer */
        uint64_t updated = 0;  /* last confirmation / learning */
        rte_mbuf *held = nullptr;
    };

    entry *find(const gid &ip);
    const entry *find(const gid &ip) const;
    /* Enter state s and start its timer (RFC 4861 7.3.2 / appendix C). */
    void set_state(entry *e, neigh_state s);
    /* Record a MAC learned from the wire; fires events. */
    void set_mac(entry *e, const mac_addr &mac, neigh_state s);
    /* A new entry from a received frame (never evicts; no event). */
    void learn_new(const gid &ip, const mac_addr &mac, neigh_state s);

    /* ---- for frames the protocols originate */
    neigh_frame::origin tx_origin() const { return {cfg_.pool, cfg_.vlan_tci, addrs_.mac()}; }
    /* Counts a frame that could not be built (no pool, pool empty). */
    rte_mbuf *count_alloc(rte_mbuf *m) {
        if (!m) ctr_.tx_alloc_fail++;
        return m;
    }

    neigh_config cfg_;
    local_addr_table addrs_;
    neigh_counters ctr_;
    uint64_t now_ = 0;

  private:
    static constexpr uint32_t nil = UINT32_MAX;
    static constexpr uint32_t urgent_cap = 64;

    static neigh_entry_view view(const entry &e) {
        return {e.ip, e.mac, e.state, e.probes, e.deadline, e.updated};
    }

    uint32_t bucket_of(const gid &ip) const;
    entry *create(const gid &ip, bool may_evict);
    void destroy(entry *e);
    void arm(entry *e, uint64_t deadline);
    uint64_t reachable_deadline();
    void fire(neigh_event ev, const entry *e);
    void fail(entry *e);
    void drop_held(entry *e);

    rte_mbuf *build_request(entry *e, bool unicast);
    void emit_due(entry *e, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    void send_urgent(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    void send_held(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    void scan(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);

    std::unique_ptr<entry[]> entries_;
    std::unique_ptr<uint32_t[]> buckets_;
    uint32_t bucket_mask_ = 0;
    uint32_t free_head_ = nil;
    uint32_t n_entries_ = 0;
    std::array<uint32_t, urgent_cap> urgent_{};
    uint32_t n_urgent_ = 0;
    bool held_pending_ = false;       /* some resolved entry has a parked frame */
    uint64_t next_scan_ = UINT64_MAX; /* earliest deadline (lower bound) */
    uint64_t scan_not_before_ = 0;    /* timer_granularity_ns rate limit */
    uint64_t rng_;
};

} // namespace uroce

#endif

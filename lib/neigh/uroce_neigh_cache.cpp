/* SPDX-License-Identifier: BSD-3-Clause
 * The neighbour cache and its NUD states: lookup, learning, resolution,
 * ageing, and the solicitations that resolve (broadcast ARP / multicast NS)
 * and re-verify (unicast probes) entries. RFC 4861 7.3 (7.3.1 upper-layer
 * confirmation, 7.3.2 states, 7.3.3 DELAY/PROBE), 7.2.2 (sending NS), 6.3.2
 * (randomised ReachableTime), section 10 (constants); RFC 826, RFC 1122
 * 2.3.2.1 (unicast poll) and 2.3.2.2 (keep the latest packet).
 * Design: doc/neigh.md, "Cache and timers".
 */
#include "uroce_neigh_cache.h"

#include <algorithm>

#include <rte_mbuf.h>

#include "uroce_ip_addr.h"

namespace uroce {

const char *neigh_state_name(neigh_state s) {
    switch (s) {
    case neigh_state::none:
        return "NONE";
    case neigh_state::incomplete:
        return "INCOMPLETE";
    case neigh_state::reachable:
        return "REACHABLE";
    case neigh_state::stale:
        return "STALE";
    case neigh_state::delay:
        return "DELAY";
    case neigh_state::probe:
        return "PROBE";
    case neigh_state::failed:
        return "FAILED";
    case neigh_state::permanent:
        return "PERMANENT";
    }
    return "?";
}

/* ================================================================ storage */

neigh_cache::neigh_cache(const neigh_config &cfg, const local_addr_table &addrs)
    : cfg_(cfg), addrs_(addrs), rng_(cfg.seed ? cfg.seed : 1) {
    if (cfg_.max_entries == 0) cfg_.max_entries = 1;
    if (cfg_.max_entries > (1u << 24)) cfg_.max_entries = 1u << 24;
    entries_ = std::make_unique<entry[]>(cfg_.max_entries);
    uint32_t nb = 1;
    while (nb < 2 * cfg_.max_entries)
        nb <<= 1;
    buckets_ = std::make_unique<uint32_t[]>(nb);
    std::fill_n(buckets_.get(), nb, nil);
    bucket_mask_ = nb - 1;
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        entries_[i].next = i + 1 < cfg_.max_entries ? i + 1 : nil;
    free_head_ = 0;
}

neigh_cache::~neigh_cache() {
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        if (entries_[i].held) rte_pktmbuf_free(entries_[i].held);
}

uint32_t neigh_cache::bucket_of(const gid &ip) const {
    uint64_t a = load_be64(ip.raw.data()), b = load_be64(ip.raw.data() + 8);
    uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return uint32_t(h) & bucket_mask_;
}

neigh_cache::entry *neigh_cache::find(const gid &ip) {
    for (uint32_t i = buckets_[bucket_of(ip)]; i != nil; i = entries_[i].next)
        if (entries_[i].ip == ip) return &entries_[i];
    return nullptr;
}

const neigh_cache::entry *neigh_cache::find(const gid &ip) const {
    return const_cast<neigh_cache *>(this)->find(ip);
}

neigh_cache::entry *neigh_cache::create(const gid &ip, bool may_evict) {
    if (free_head_ == nil) {
        /* Reclaim only what carries no information worth keeping: a FAILED
         * hold-down first, else the STALE entry updated longest ago. Learning
         * never evicts (may_evict=false), so unsolicited traffic cannot flush
         * the entries our QPs use. */
        entry *victim = nullptr;
        if (may_evict) {
            for (uint32_t i = 0; i < cfg_.max_entries; i++) {
                entry &c = entries_[i];
                if (c.state == neigh_state::failed) {
                    victim = &c;
                    break;
                }
                if (c.state == neigh_state::stale && (!victim || c.updated < victim->updated))
                    victim = &c;
            }
        }
        if (!victim) {
            ctr_.cache_full++;
            return nullptr;
        }
        ctr_.evictions++;
        destroy(victim);
    }
    uint32_t idx = free_head_;
    entry &e = entries_[idx];
    free_head_ = e.next;
    e = entry{};
    e.ip = ip;
    e.updated = now_;
    uint32_t &head = buckets_[bucket_of(ip)];
    e.next = head;
    head = idx;
    ctr_.entries = ++n_entries_;
    return &e;
}

void neigh_cache::destroy(entry *e) {
    drop_held(e);
    uint32_t idx = uint32_t(e - entries_.get());
    uint32_t *link = &buckets_[bucket_of(e->ip)];
    while (*link != idx)
        link = &entries_[*link].next;
    *link = e->next;
    e->state = neigh_state::none;
    e->queued = false;
    e->next = free_head_;
    free_head_ = idx;
    ctr_.entries = --n_entries_;
}

void neigh_cache::drop_held(entry *e) {
    if (e->held) {
        rte_pktmbuf_free(e->held);
        e->held = nullptr;
        ctr_.held_dropped++;
    }
}

/* ================================================================ states */

void neigh_cache::arm(entry *e, uint64_t deadline) {
    e->deadline = deadline;
    if (deadline < next_scan_) next_scan_ = deadline;
}

uint64_t neigh_cache::reachable_deadline() {
    uint64_t base = cfg_.reachable_time_ns;
    if (!cfg_.randomize_reachable || base < 2) return now_ + base;
    /* RFC 4861 6.3.2: ReachableTime = BaseReachableTime x uniform[0.5, 1.5),
     * so that entries learned together do not expire (and re-probe) together. */
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return now_ + base / 2 + rng_ % base;
}

/* Enter state s and start its timer (RFC 4861 7.3.2 / appendix C). */
void neigh_cache::set_state(entry *e, neigh_state s) {
    e->state = s;
    e->probes = 0;
    switch (s) {
    case neigh_state::incomplete:
        arm(e, now_);
        break; /* first request right away */
    case neigh_state::reachable:
        arm(e, reachable_deadline());
        break;
    case neigh_state::stale:
        arm(e, now_ + cfg_.stale_gc_ns);
        break;
    case neigh_state::delay:
        arm(e, now_ + cfg_.delay_first_probe_ns);
        break;
    case neigh_state::probe:
        arm(e, now_);
        break;
    case neigh_state::failed:
        arm(e, now_ + cfg_.failed_hold_ns);
        break;
    case neigh_state::permanent:
    case neigh_state::none:
        e->deadline = 0;
        break;
    }
}

void neigh_cache::fire(neigh_event ev, const entry *e) {
    if (cfg_.event_cb)
        cfg_.event_cb(cfg_.event_ctx, ev, e->ip, ev == neigh_event::failed ? nullptr : &e->mac);
}

void neigh_cache::set_mac(entry *e, const mac_addr &mac, neigh_state s) {
    bool resolving = e->state == neigh_state::incomplete || e->state == neigh_state::failed;
    bool changed = !resolving && e->mac != mac;
    e->mac = mac;
    e->updated = now_;
    /* Re-entering STALE/DELAY/PROBE with the same MAC keeps the running
     * timer; REACHABLE is always re-armed (it is a fresh confirmation). */
    if (s != e->state || s == neigh_state::reachable || resolving) set_state(e, s);
    if (resolving) {
        ctr_.resolutions++;
        if (e->held) held_pending_ = true;
        fire(neigh_event::resolved, e);
    } else if (changed) {
        ctr_.learned_changed++;
        fire(neigh_event::changed, e);
    }
}

/* An entry created from a received frame (nobody waits on it: no event).
 * Learning never evicts: unsolicited traffic must not push out entries
 * that QPs resolved. */
void neigh_cache::learn_new(const gid &ip, const mac_addr &mac, neigh_state s) {
    entry *e = create(ip, false);
    if (!e) return;
    ctr_.learned_new++;
    e->mac = mac;
    e->updated = now_;
    set_state(e, s);
}

void neigh_cache::fail(entry *e) {
    drop_held(e);
    set_state(e, neigh_state::failed);
    fire(neigh_event::failed, e);
}

/* ================================================================ resolution */

std::optional<mac_addr> neigh_cache::resolve(const gid &ip) {
    ctr_.resolve_calls++;
    const uint8_t *a = ip.raw.data();
    if (ip.is_ipv4_mapped()) {
        uint32_t v4 = ip.ipv4();
        if (v4 == 0xffffffffu) return mac_addr::broadcast();
        if ((v4 >> 28) == 0xe) return ipv4_multicast_mac(v4);
        if (!ipv4_is_host_unicast(v4)) {
            ctr_.resolve_invalid++;
            return std::nullopt;
        }
        if (addrs_.is_local_ipv4(v4)) return addrs_.mac();
    } else {
        if (ipv6_is_multicast(a)) return ipv6_multicast_mac(a);
        if (ipv6_is_unspecified(a) || ipv6_is_loopback(a)) {
            ctr_.resolve_invalid++;
            return std::nullopt;
        }
        if (addrs_.is_local_ipv6(a)) return addrs_.mac();
    }
    entry *e = find(ip);
    if (e) {
        switch (e->state) {
        case neigh_state::stale:
            /* RFC 4861 7.3.3: first use of a STALE entry starts DELAY; the
             * cached MAC is used meanwhile. ARP has no such rule, but the
             * same re-verification keeps IPv4 entries honest (as Linux does). */
            set_state(e, neigh_state::delay);
            [[fallthrough]];
        case neigh_state::reachable:
        case neigh_state::delay:
        case neigh_state::probe:
        case neigh_state::permanent:
            ctr_.cache_hits++;
            return e->mac;
        case neigh_state::incomplete:
            ctr_.resolve_pending++;
            return std::nullopt;
        case neigh_state::failed:
            ctr_.resolve_failed++;
            return std::nullopt;
        case neigh_state::none:
            break;
        }
        return std::nullopt;
    }
    ctr_.cache_misses++;
    e = create(ip, true);
    if (!e) return std::nullopt;
    set_state(e, neigh_state::incomplete);
    if (n_urgent_ < urgent_cap) {
        urgent_[n_urgent_++] = uint32_t(e - entries_.get());
        e->queued = true;
    }
    return std::nullopt;
}

bool neigh_cache::send_or_hold(rte_mbuf *m, const gid &nh, rte_mbuf **tx_out, uint16_t &n_tx) {
    auto mac = resolve(nh);
    if (mac) {
        mac->copy_to(rte_pktmbuf_mtod(m, uint8_t *));
        tx_out[n_tx++] = m;
        return true;
    }
    entry *e = find(nh);
    if (e && e->state == neigh_state::incomplete) {
        drop_held(e); /* keep the latest (RFC 1122 2.3.2.2) */
        e->held = m;
        ctr_.held_frames++;
        return false;
    }
    rte_pktmbuf_free(m);
    ctr_.held_dropped++;
    return false;
}

void neigh_cache::confirm(const gid &ip) {
    entry *e = find(ip);
    if (!e) return;
    switch (e->state) {
    case neigh_state::reachable:
    case neigh_state::stale:
    case neigh_state::delay:
    case neigh_state::probe:
        ctr_.confirmations++;
        e->updated = now_;
        set_state(e, neigh_state::reachable);
        break;
    default:
        break;
    }
}

bool neigh_cache::add_static(const gid &ip, const mac_addr &mac) {
    if (!mac.is_valid_unicast()) return false;
    entry *e = find(ip);
    if (!e) e = create(ip, true);
    if (!e) return false;
    bool resolving = e->state == neigh_state::incomplete;
    e->mac = mac;
    e->updated = now_;
    set_state(e, neigh_state::permanent);
    if (resolving) {
        ctr_.resolutions++;
        if (e->held) held_pending_ = true;
        fire(neigh_event::resolved, e);
    }
    return true;
}

bool neigh_cache::remove(const gid &ip) {
    entry *e = find(ip);
    if (!e) return false;
    destroy(e);
    return true;
}

void neigh_cache::flush() {
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        if (entries_[i].state != neigh_state::none && entries_[i].state != neigh_state::permanent)
            destroy(&entries_[i]);
    n_urgent_ = 0;
}

std::optional<neigh_entry_view> neigh_cache::lookup(const gid &ip) const {
    const entry *e = find(ip);
    if (!e) return std::nullopt;
    return view(*e);
}

void neigh_cache::dump(FILE *f) const {
    for (uint32_t i = 0; i < cfg_.max_entries; i++) {
        if (entries_[i].state == neigh_state::none) continue;
        neigh_entry_view v = view(entries_[i]);
        std::fprintf(f, "%s lladdr %s %s probes %u\n", v.ip.to_string().c_str(),
                     v.state == neigh_state::incomplete ? "(none)" : v.mac.to_string().c_str(),
                     neigh_state_name(v.state), v.probes);
    }
}

void neigh_cache::visit(void (*fn)(void *ctx, const neigh_entry_view &v), void *ctx) const {
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        if (entries_[i].state != neigh_state::none) fn(ctx, view(entries_[i]));
}

/* ================================================================ timers and solicitations */

rte_mbuf *neigh_cache::build_request(entry *e, bool unicast) {
    if (e->ip.is_ipv4_mapped()) {
        uint32_t target = e->ip.ipv4();
        auto src = addrs_.ipv4_source_for(target);
        if (!src) {
            ctr_.no_source_address++;
            return nullptr;
        }
        /* RFC 826: request broadcast; a PROBE (RFC 4861 7.3.3 applied to ARP,
         * RFC 1122 2.3.2.1 "unicast poll") goes to the cached MAC. */
        rte_mbuf *m = count_alloc(neigh_frame::build_arp_request(
            tx_origin(), unicast ? e->mac : mac_addr::broadcast(), *src, target));
        if (m) ctr_.arp_tx_request++;
        return m;
    }
    /* RFC 4861 7.2.2: multicast to the target's solicited-node group (its
     * Ethernet mapping per RFC 2464 7), or unicast to the cached address
     * when probing (7.3.3); our link-layer address always included (the
     * source is never :: here). */
    const uint8_t *target = e->ip.raw.data();
    gid dst = unicast ? e->ip : ipv6_solicited_node(target);
    rte_mbuf *m =
        count_alloc(neigh_frame::build_nd(tx_origin(), icmpv6_type_neighbor_solicit,
                                          unicast ? e->mac : ipv6_multicast_mac(dst.raw.data()),
                                          addrs_.ipv6_source_for(target), dst, e->ip, 0));
    if (m) ctr_.nd_tx_ns++;
    return m;
}

void neigh_cache::emit_due(entry *e, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    bool unicast;
    uint8_t max;
    if (e->state == neigh_state::incomplete) {
        unicast = false;
        max = cfg_.max_multicast_solicit;
    } else {
        unicast = true;
        max = cfg_.max_unicast_solicit;
    }
    if (e->probes >= max) {
        if (e->state == neigh_state::incomplete) {
            /* RFC 4861 7.3.3 / RFC 1122 2.3.2.1: unanswered: give up. */
            ctr_.resolution_timeouts++;
            fail(e);
        } else {
            /* PROBE unanswered: the neighbour is gone; delete the entry
             * (RFC 4861 7.3.3) so the next use starts a fresh resolution. */
            ctr_.probe_failures++;
            drop_held(e);
            fire(neigh_event::failed, e);
            destroy(e);
        }
        return;
    }
    if (n_tx >= tx_cap) {
        ctr_.tx_deferred++;
        arm(e, now_);
        return;
    }
    rte_mbuf *m = build_request(e, unicast);
    if (m) tx_out[n_tx++] = m;
    /* A failed allocation still counts as an attempt, so resolution ends. */
    e->probes++;
    arm(e, now_ + cfg_.retrans_time_ns);
}

void neigh_cache::scan(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    ctr_.timer_scans++;
    scan_not_before_ = now_ + cfg_.timer_granularity_ns;
    next_scan_ = UINT64_MAX;
    for (uint32_t i = 0; i < cfg_.max_entries; i++) {
        entry *e = &entries_[i];
        if (e->state == neigh_state::none || e->state == neigh_state::permanent) continue;
        if (e->deadline > now_) {
            if (e->deadline < next_scan_) next_scan_ = e->deadline;
            continue;
        }
        switch (e->state) {
        case neigh_state::incomplete:
        case neigh_state::probe:
            emit_due(e, tx_out, n_tx, tx_cap);
            break;
        case neigh_state::delay:
            /* 7.3.3: no confirmation within DELAY_FIRST_PROBE_TIME: PROBE. */
            set_state(e, neigh_state::probe);
            emit_due(e, tx_out, n_tx, tx_cap);
            break;
        case neigh_state::reachable:
            /* 7.3.3: ReachableTime without confirmation: STALE (still usable). */
            ctr_.reachable_timeouts++;
            set_state(e, neigh_state::stale);
            break;
        case neigh_state::stale:
            ctr_.stale_gc++;
            destroy(e);
            break;
        case neigh_state::failed:
            destroy(e);
            break;
        default:
            break;
        }
    }
}

void neigh_cache::send_urgent(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    uint32_t keep = 0;
    for (uint32_t i = 0; i < n_urgent_; i++) {
        entry *e = &entries_[urgent_[i]];
        if (!e->queued) continue;
        if (e->state != neigh_state::incomplete || e->probes != 0) {
            e->queued = false;
            continue;
        }
        if (n_tx >= tx_cap) {
            urgent_[keep++] = urgent_[i];
            continue;
        }
        e->queued = false;
        emit_due(e, tx_out, n_tx, tx_cap);
    }
    n_urgent_ = keep;
}

void neigh_cache::send_held(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    held_pending_ = false;
    for (uint32_t i = 0; i < cfg_.max_entries; i++) {
        entry *e = &entries_[i];
        if (!e->held) continue;
        if (e->state == neigh_state::incomplete) continue;
        if (e->state == neigh_state::none || e->state == neigh_state::failed) {
            drop_held(e);
            continue;
        }
        if (n_tx >= tx_cap) {
            held_pending_ = true;
            break;
        }
        e->mac.copy_to(rte_pktmbuf_mtod(e->held, uint8_t *));
        tx_out[n_tx++] = e->held;
        e->held = nullptr;
        ctr_.held_sent++;
    }
}

} // namespace uroce

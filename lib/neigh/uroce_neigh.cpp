/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour subsystem: ARP/ND cache, ARP/ICMP/ICMPv6 responder (the address
 * table is in uroce_local_addr.cpp).
 * Design and RFC mapping: doc/neigh.md.
 */
#include "uroce_neigh.h"

#include <algorithm>
#include <cinttypes>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace uroce {

/* ================================================================ names */

namespace {
constexpr const char *drop_names[] = {
#define UROCE_X(name, desc) #name,
    UROCE_NEIGH_DROPS(UROCE_X)
#undef UROCE_X
};
constexpr const char *drop_descs[] = {
#define UROCE_X(name, desc) desc,
    UROCE_NEIGH_DROPS(UROCE_X)
#undef UROCE_X
};
constexpr const char *counter_names[] = {
#define UROCE_X(name, desc) #name,
    UROCE_NEIGH_COUNTERS(UROCE_X)
#undef UROCE_X
};
constexpr const char *counter_descs[] = {
#define UROCE_X(name, desc) desc,
    UROCE_NEIGH_COUNTERS(UROCE_X)
#undef UROCE_X
};
static_assert(std::size(drop_names) == size_t(neigh_drop::count));
static_assert(sizeof(neigh_counters) == std::size(counter_names) * sizeof(uint64_t));
} // namespace

const char *neigh_drop_name(neigh_drop d) {
    return size_t(d) < std::size(drop_names) ? drop_names[size_t(d)] : "?";
}

const char *neigh_drop_description(neigh_drop d) {
    return size_t(d) < std::size(drop_descs) ? drop_descs[size_t(d)] : "?";
}

const char *const *neigh_counter_names(size_t &n) {
    n = std::size(counter_names);
    return counter_names;
}

const char *const *neigh_counter_descriptions(size_t &n) {
    n = std::size(counter_descs);
    return counter_descs;
}

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

/* ================================================================ checksums */

namespace {

uint16_t fold(uint64_t s) {
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}

} // namespace

/* rte_raw_cksum_mbuf() in DPDK 22.11 truncates each segment's unfolded sum to
 * 16 bits before the odd-offset byte swap, losing carries on chains; this
 * folds first (RFC 1071 2(B): byte-swapped sums stay valid when folded). */
uint16_t neigh::mbuf_sum(const rte_mbuf *m, uint32_t off, uint32_t len) {
    uint64_t sum = 0;
    uint32_t done = 0;
    for (const rte_mbuf *seg = m; seg && len; seg = seg->next) {
        uint32_t sl = seg->data_len;
        if (off >= sl) {
            off -= sl;
            continue;
        }
        uint32_t n = std::min(sl - off, len);
        uint16_t s =
            fold(__rte_raw_cksum(rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n, 0));
        if (done & 1) s = bswap16(s);
        sum += s;
        done += n;
        len -= n;
        off = 0;
    }
    return fold(sum);
}

uint32_t neigh::ipv6_pseudo_sum(const uint8_t *src, const uint8_t *dst, uint32_t len, uint8_t nh) {
    const uint8_t tail[8] = {
        uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len), 0, 0, 0, nh};
    uint32_t s = __rte_raw_cksum(src, 16, 0);
    s = __rte_raw_cksum(dst, 16, s);
    return __rte_raw_cksum(tail, sizeof(tail), s);
}

/* ================================================================ cache */

neigh::neigh(const neigh_config &cfg, const local_addr_table &addrs)
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
    if (cfg_.announce_on_start) announce_left_ = cfg_.announce_count; /* first poll() sends */
    if (cfg_.mld && cfg_.mld_robustness) {
        mld_left_ = cfg_.mld_robustness; /* join reports from the first poll() */
        mld_next_ = 0;
    }
}

neigh::~neigh() {
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        if (entries_[i].held) rte_pktmbuf_free(entries_[i].held);
}

uint32_t neigh::bucket_of(const gid &ip) const {
    uint64_t a = load_be64(ip.raw.data()), b = load_be64(ip.raw.data() + 8);
    uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return uint32_t(h) & bucket_mask_;
}

neigh::entry *neigh::find(const gid &ip) {
    for (uint32_t i = buckets_[bucket_of(ip)]; i != nil; i = entries_[i].next)
        if (entries_[i].ip == ip) return &entries_[i];
    return nullptr;
}

const neigh::entry *neigh::find(const gid &ip) const {
    return const_cast<neigh *>(this)->find(ip);
}

neigh::entry *neigh::create(const gid &ip, bool may_evict) {
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

void neigh::destroy(entry *e) {
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

void neigh::drop_held(entry *e) {
    if (e->held) {
        rte_pktmbuf_free(e->held);
        e->held = nullptr;
        ctr_.held_dropped++;
    }
}

void neigh::arm(entry *e, uint64_t deadline) {
    e->deadline = deadline;
    if (deadline < next_scan_) next_scan_ = deadline;
}

uint64_t neigh::reachable_deadline() {
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
void neigh::set_state(entry *e, neigh_state s) {
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

void neigh::fire(neigh_event ev, const entry *e) {
    if (cfg_.event_cb)
        cfg_.event_cb(cfg_.event_ctx, ev, e->ip, ev == neigh_event::failed ? nullptr : &e->mac);
}

void neigh::set_mac(entry *e, const mac_addr &mac, neigh_state s) {
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
void neigh::learn_new(const gid &ip, const mac_addr &mac, neigh_state s) {
    entry *e = create(ip, false);
    if (!e) return;
    ctr_.learned_new++;
    e->mac = mac;
    e->updated = now_;
    set_state(e, s);
}

/* Another station claims one of our addresses: count, drop, and tell the
 * engine (at most once per second, so a misconfigured peer cannot flood
 * its log). RFC 5227 2.4 / RFC 4862 5.4.4 leave the reaction to the host;
 * we keep the address and keep defending it. */
neigh::verdict neigh::conflict(const gid &ours, const mac_addr &theirs) {
    ctr_.address_conflicts++;
    if (cfg_.event_cb && (!conflict_reported_ || now_ >= last_conflict_event_ + 1'000'000'000ull)) {
        conflict_reported_ = true;
        last_conflict_event_ = now_;
        cfg_.event_cb(cfg_.event_ctx, neigh_event::address_conflict, ours, &theirs);
    }
    return drop(neigh_drop::address_conflict);
}

void neigh::fail(entry *e) {
    drop_held(e);
    set_state(e, neigh_state::failed);
    fire(neigh_event::failed, e);
}

std::optional<mac_addr> neigh::resolve(const gid &ip) {
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

bool neigh::send_or_hold(rte_mbuf *m, const gid &nh, rte_mbuf **tx_out, uint16_t &n_tx) {
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

void neigh::confirm(const gid &ip) {
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

bool neigh::add_static(const gid &ip, const mac_addr &mac) {
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

bool neigh::remove(const gid &ip) {
    entry *e = find(ip);
    if (!e) return false;
    destroy(e);
    return true;
}

void neigh::flush() {
    for (uint32_t i = 0; i < cfg_.max_entries; i++)
        if (entries_[i].state != neigh_state::none && entries_[i].state != neigh_state::permanent)
            destroy(&entries_[i]);
    n_urgent_ = 0;
}

std::optional<neigh_entry_view> neigh::lookup(const gid &ip) const {
    const entry *e = find(ip);
    if (!e) return std::nullopt;
    return view(*e);
}

void neigh::dump(FILE *f) const {
    for_each([&](const neigh_entry_view &v) {
        std::fprintf(f, "%s lladdr %s %s probes %u\n", v.ip.to_string().c_str(),
                     v.state == neigh_state::incomplete ? "(none)" : v.mac.to_string().c_str(),
                     neigh_state_name(v.state), v.probes);
    });
}

uint64_t neigh::drops_total() const {
    uint64_t t = 0;
    for (uint64_t d : drops_)
        t += d;
    return t;
}

void neigh::dump_counters(FILE *f) const {
    size_t n;
    const char *const *names = neigh_counter_names(n);
    const uint64_t *v = reinterpret_cast<const uint64_t *>(&ctr_);
    for (size_t i = 0; i < n; i++)
        if (v[i]) std::fprintf(f, "neigh.%s %" PRIu64 "\n", names[i], v[i]);
    for (size_t i = 0; i < drops_.size(); i++)
        if (drops_[i])
            std::fprintf(f, "neigh.drop.%s %" PRIu64 "\n", neigh_drop_name(neigh_drop(i)),
                         drops_[i]);
}

/* ================================================================ tx helpers */

namespace {

/* Make m a single segment of exactly len bytes whose bytes past content
 * are zero, for replies rebuilt in place (ARP, NA): the request's trailer
 * (Ethernet padding, options) must not leak into the reply. */
bool reshape(rte_mbuf *m, uint32_t content, uint32_t len) {
    if (m->nb_segs > 1) {
        rte_pktmbuf_free(m->next);
        m->next = nullptr;
        m->nb_segs = 1;
        m->pkt_len = m->data_len;
    }
    if (uint32_t(m->buf_len) - m->data_off < len) return false;
    if (len > content)
        std::memset(rte_pktmbuf_mtod_offset(m, uint8_t *, content), 0, len - content);
    m->data_len = uint16_t(len);
    m->pkt_len = len;
    return true;
}

/* rte_raw_cksum() sums native (little-endian) words, so its result is in
 * memory order: store it as is, not through store_be16 (RFC 1071 2(B)). */
void store_csum(uint8_t *field, uint16_t sum) {
    uint16_t c = uint16_t(~sum);
    std::memcpy(field, &c, 2);
}

/* Cut Ethernet padding / trailing garbage so the reply is exactly the
 * request's IP datagram (the trailer is beyond the IP length). */
bool trim_to(rte_mbuf *m, uint32_t len) {
    if (m->pkt_len <= len) return true;
    return rte_pktmbuf_trim(m, uint16_t(m->pkt_len - len)) == 0;
}

/* Pad to the 60-byte Ethernet minimum; many PMDs pad in hardware, not all
 * virtual ones do. */
void pad_min(rte_mbuf *m) {
    if (m->pkt_len >= eth_min_frame_len) return;
    uint16_t add = uint16_t(eth_min_frame_len - m->pkt_len);
    char *p = rte_pktmbuf_append(m, add);
    if (p) std::memset(p, 0, add);
}

/* Turn an rx mbuf into a tx one: offload flags from rx are meaningless on
 * tx, except a hardware-stripped VLAN tag, which must go back on. */
void prepare_tx(rte_mbuf *m) {
    bool vlan = m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED;
    /* EXTERNAL/INDIRECT describe the buffer, not an offload: clearing them
     * would make rte_pktmbuf_free() skip the external free callback or the
     * direct mbuf's reference (zero-copy PMDs, clones). */
    m->ol_flags = (m->ol_flags & (RTE_MBUF_F_EXTERNAL | RTE_MBUF_F_INDIRECT)) |
                  (vlan ? RTE_MBUF_F_TX_VLAN : 0);
    pad_min(m);
}

/* Replies are written in place; a first segment whose data someone else
 * also references (a clone kept for capture, refcnt > 1) must not be. */
bool data_shared(const rte_mbuf *m) {
    if (rte_mbuf_refcnt_read(m) > 1) return true;
    if (m->ol_flags & RTE_MBUF_F_INDIRECT)
        return rte_mbuf_refcnt_read(rte_mbuf_from_indirect(const_cast<rte_mbuf *>(m))) > 1;
    if (m->ol_flags & RTE_MBUF_F_EXTERNAL) return rte_mbuf_ext_refcnt_read(m->shinfo) > 1;
    return false;
}

size_t write_l2(uint8_t *p, const mac_addr &dst, const mac_addr &src, uint16_t et,
                const std::optional<uint16_t> &vlan) {
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    dst.copy_to(eth->dst);
    src.copy_to(eth->src);
    if (vlan) {
        eth->set_ether_type(ether_type_vlan);
        auto *v = reinterpret_cast<vlan_hdr *>(p + sizeof(eth_hdr));
        v->set_tci(*vlan);
        v->set_ether_type(et);
        return sizeof(eth_hdr) + sizeof(vlan_hdr);
    }
    eth->set_ether_type(et);
    return sizeof(eth_hdr);
}

struct nd_options {
    const uint8_t *lladdr = nullptr; /* SLLA (NS) or TLLA (NA) */
    bool valid = true;
};

/* RFC 4861 7.1.1 / 7.1.2: every option must have a non-zero length and fit;
 * unknown options are skipped (4.6). The link-layer address option for
 * Ethernet is exactly 8 octets (RFC 2464 8). */
nd_options parse_nd_options(const uint8_t *opt, size_t len, uint8_t want_type) {
    nd_options r;
    size_t off = 0;
    while (off < len) {
        if (len - off < 2) return {nullptr, false};
        auto *h = reinterpret_cast<const nd_opt_hdr *>(opt + off);
        size_t olen = h->length_bytes();
        if (olen == 0 || olen > len - off) return {nullptr, false};
        if (h->type == want_type) {
            if (olen != sizeof(nd_opt_lladdr)) return {nullptr, false};
            r.lladdr = reinterpret_cast<const nd_opt_lladdr *>(h)->addr;
        }
        off += olen;
    }
    return r;
}

} // namespace

/* A zeroed frame of len bytes (plus the configured 802.1Q tag) from the
 * pool, with its Ethernet header written; p/l2 point at it. */
rte_mbuf *neigh::alloc_frame(uint32_t l3_len, const mac_addr &dst, uint16_t et, uint8_t *&p,
                             size_t &l2) {
    if (!cfg_.pool) {
        ctr_.tx_alloc_fail++;
        return nullptr;
    }
    rte_mbuf *m = rte_pktmbuf_alloc(cfg_.pool);
    if (!m) {
        ctr_.tx_alloc_fail++;
        return nullptr;
    }
    l2 = sizeof(eth_hdr) + (cfg_.vlan_tci ? sizeof(vlan_hdr) : 0);
    uint32_t len = uint32_t(std::max(l2 + l3_len, eth_min_frame_len));
    p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, uint16_t(len)));
    if (!p) {
        rte_pktmbuf_free(m);
        ctr_.tx_alloc_fail++;
        return nullptr;
    }
    std::memset(p, 0, len);
    write_l2(p, dst, addrs_.mac(), et, cfg_.vlan_tci);
    return m;
}

/* An ARP request (tha left zero: unknown, and ignored by receivers). */
rte_mbuf *neigh::build_arp_request(const mac_addr &dst, uint32_t spa, uint32_t tpa) {
    uint8_t *p;
    size_t l2;
    rte_mbuf *m = alloc_frame(sizeof(arp_hdr), dst, ether_type_arp, p, l2);
    if (!m) return nullptr;
    auto *a = reinterpret_cast<arp_hdr *>(p + l2);
    a->set_hrd(arp_hrd_ethernet);
    a->set_pro(ether_type_ipv4);
    a->hln = 6;
    a->pln = 4;
    a->set_op(arp_op_request);
    addrs_.mac().copy_to(a->sha);
    a->set_sender_ip(spa);
    a->set_target_ip(tpa);
    return m;
}

/* An NS or NA (same 24-byte body) with our MAC in a source/target
 * link-layer option, hop limit 255 (RFC 4861 4.3, 4.4). */
rte_mbuf *neigh::build_nd(uint8_t type, const mac_addr &dst_mac, const gid &src, const gid &dst,
                          const gid &target, uint32_t na_flags) {
    constexpr uint32_t icmp_len = sizeof(nd_ns) + sizeof(nd_opt_lladdr);
    uint8_t *p;
    size_t l2;
    rte_mbuf *m =
        alloc_frame(uint32_t(sizeof(ipv6_hdr) + icmp_len), dst_mac, ether_type_ipv6, p, l2);
    if (!m) return nullptr;
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(icmp_len));
    ip6->next_header = ip_proto_icmpv6;
    ip6->hop_limit = nd_hop_limit;
    std::memcpy(ip6->src, src.raw.data(), 16);
    std::memcpy(ip6->dst, dst.raw.data(), 16);
    auto *na = reinterpret_cast<nd_na *>(ip6 + 1); /* NS: flags word is "reserved", zero */
    na->h.type = type;
    store_be32(na->flags_be, na_flags);
    std::memcpy(na->target, target.raw.data(), 16);
    auto *opt = reinterpret_cast<nd_opt_lladdr *>(na + 1);
    opt->type = type == icmpv6_type_neighbor_solicit ? nd_opt_source_lladdr : nd_opt_target_lladdr;
    opt->len = 1;
    addrs_.mac().copy_to(opt->addr);
    uint32_t s = ipv6_pseudo_sum(ip6->src, ip6->dst, icmp_len, ip_proto_icmpv6) +
                 rte_raw_cksum(na, icmp_len);
    store_csum(na->h.checksum_be, fold(s));
    return m;
}

rte_mbuf *neigh::build_request(entry *e, bool unicast) {
    if (e->ip.is_ipv4_mapped()) {
        uint32_t target = e->ip.ipv4();
        auto src = addrs_.ipv4_source_for(target);
        if (!src) {
            ctr_.no_source_address++;
            return nullptr;
        }
        /* RFC 826: request broadcast; a PROBE (RFC 4861 7.3.3 applied to ARP,
         * RFC 1122 2.3.2.1 "unicast poll") goes to the cached MAC. */
        rte_mbuf *m = build_arp_request(unicast ? e->mac : mac_addr::broadcast(), *src, target);
        if (m) ctr_.arp_tx_request++;
        return m;
    }
    /* RFC 4861 7.2.2: multicast to the target's solicited-node group (its
     * Ethernet mapping per RFC 2464 7), or unicast to the cached address
     * when probing (7.3.3); our link-layer address always included (the
     * source is never :: here). */
    const uint8_t *target = e->ip.raw.data();
    gid dst = unicast ? e->ip : ipv6_solicited_node(target);
    rte_mbuf *m = build_nd(icmpv6_type_neighbor_solicit,
                           unicast ? e->mac : ipv6_multicast_mac(dst.raw.data()),
                           addrs_.ipv6_source_for(target), dst, e->ip, 0);
    if (m) ctr_.nd_tx_ns++;
    return m;
}

void neigh::announce() {
    announce_left_ = cfg_.announce_count;
    announce_next_ = now_;
    if (cfg_.mld && cfg_.mld_robustness) {
        mld_left_ = cfg_.mld_robustness;
        mld_next_ = now_;
    }
}

/* ---------------------------------------------------------------- MLD */

/* The groups we are in besides ff02::1 (never reported, RFC 3810 6): the
 * solicited-node group of every IPv6 address, link-local included, once. */
size_t neigh::mld_groups(gid *out) const {
    size_t n = 0;
    for (size_t i = 0; i <= addrs_.num_ipv6(); i++) {
        const gid &a = i == 0 ? addrs_.link_local() : addrs_.ipv6_at(i - 1).addr;
        gid g = ipv6_solicited_node(a.raw.data());
        if (std::find(out, out + n, g) == out + n) out[n++] = g;
    }
    return n;
}

/* An MLD frame: IPv6 from our link-local address (RFC 3810 5.2.13), hop
 * limit 1, Hop-by-Hop header with Router Alert (RFC 2711), then icmp_len
 * bytes of ICMPv6 for the caller to fill (and checksum). */
rte_mbuf *neigh::build_mld(const gid &dst, uint32_t icmp_len, uint8_t *&icmp) {
    uint8_t *p;
    size_t l2;
    rte_mbuf *m = alloc_frame(uint32_t(sizeof(ipv6_hdr) + sizeof(ipv6_hbh_hdr) + icmp_len),
                              ipv6_multicast_mac(dst.raw.data()), ether_type_ipv6, p, l2);
    if (!m) return nullptr;
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(sizeof(ipv6_hbh_hdr) + icmp_len));
    ip6->next_header = ipv6_nh_hop_by_hop;
    ip6->hop_limit = 1;
    std::memcpy(ip6->src, addrs_.link_local().raw.data(), 16);
    std::memcpy(ip6->dst, dst.raw.data(), 16);
    auto *hbh = reinterpret_cast<ipv6_hbh_hdr *>(ip6 + 1);
    hbh->next_header = ip_proto_icmpv6;
    hbh->hdr_ext_len = 0;
    /* Router Alert (type 5, length 2, value 0 = MLD), then PadN of 2. */
    const uint8_t opts[6] = {ipv6_opt_router_alert, 2, 0, uint8_t(router_alert_mld), 1, 0};
    std::memcpy(hbh->options, opts, sizeof(opts));
    icmp = reinterpret_cast<uint8_t *>(hbh + 1);
    return m;
}

/* One report of all our groups: MLDv2 (one frame, RFC 3810 5.2) or, while
 * an MLDv1 querier is present, one MLDv1 report per group sent to the group
 * (RFC 2710 3, RFC 3810 8.2.1). All or nothing: false if tx_out is short. */
bool neigh::emit_mld(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap, uint8_t record_type) {
    std::array<gid, local_addr_table::max_ipv6 + 1> groups;
    size_t n = mld_groups(groups.data());
    bool v1 = now_ < mldv1_until_;
    size_t need = v1 ? n : 1;
    if (size_t(tx_cap - n_tx) < need) {
        ctr_.tx_deferred++;
        return false;
    }
    gid src = addrs_.link_local();
    if (v1) {
        for (size_t i = 0; i < n; i++) {
            uint8_t *icmp;
            rte_mbuf *m = build_mld(groups[i], sizeof(mld_hdr), icmp);
            if (!m) continue;
            auto *r = reinterpret_cast<mld_hdr *>(icmp);
            r->h.type = icmpv6_type_mldv1_report;
            std::memcpy(r->mcast_addr, groups[i].raw.data(), 16);
            uint32_t s = ipv6_pseudo_sum(src.raw.data(), groups[i].raw.data(), sizeof(mld_hdr),
                                         ip_proto_icmpv6) +
                         rte_raw_cksum(r, sizeof(mld_hdr));
            store_csum(r->h.checksum_be, fold(s));
            tx_out[n_tx++] = m;
            ctr_.mld_tx_report++;
        }
        return true;
    }
    uint32_t icmp_len = uint32_t(sizeof(mldv2_report_hdr) + n * sizeof(mldv2_record));
    gid dst = ipv6_all_mldv2_routers();
    uint8_t *icmp;
    rte_mbuf *m = build_mld(dst, icmp_len, icmp);
    if (!m) return true; /* counted as tx_alloc_fail; retried on the next schedule */
    auto *r = reinterpret_cast<mldv2_report_hdr *>(icmp);
    r->h.type = icmpv6_type_mldv2_report;
    r->set_num_records(uint16_t(n));
    auto *rec = reinterpret_cast<mldv2_record *>(r + 1);
    for (size_t i = 0; i < n; i++) {
        rec[i].type = record_type; /* EXCLUDE with no sources = listening to all */
        std::memcpy(rec[i].mcast_addr, groups[i].raw.data(), 16);
    }
    uint32_t s = ipv6_pseudo_sum(src.raw.data(), dst.raw.data(), icmp_len, ip_proto_icmpv6) +
                 rte_raw_cksum(r, icmp_len);
    store_csum(r->h.checksum_be, fold(s));
    tx_out[n_tx++] = m;
    ctr_.mld_tx_report++;
    return true;
}

/* RFC 5227 2.3 ARP Announcement for every IPv4 address (an ARP request
 * with sender IP = target IP = ours, broadcast) and RFC 4861 7.2.6
 * unsolicited NA for every IPv6 address incl. link-local (to ff02::1,
 * S=0, O=1). Neighbours that cached us (e.g. with an older MAC, before a
 * restart) update at once instead of after their entries time out. */
void neigh::emit_announcements(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    size_t need = addrs_.num_ipv4() + 1 + addrs_.num_ipv6();
    if (size_t(tx_cap - n_tx) < need) {
        ctr_.tx_deferred++;
        return; /* all of one round or nothing; next poll */
    }
    for (size_t i = 0; i < addrs_.num_ipv4(); i++) {
        uint32_t a = addrs_.ipv4_at(i).addr;
        if (rte_mbuf *m = build_arp_request(mac_addr::broadcast(), a, a)) {
            tx_out[n_tx++] = m;
            ctr_.arp_tx_announce++;
        }
    }
    gid all = ipv6_all_nodes();
    mac_addr all_mac = ipv6_multicast_mac(all.raw.data());
    for (size_t i = 0; i <= addrs_.num_ipv6(); i++) {
        const gid &t = i == 0 ? addrs_.link_local() : addrs_.ipv6_at(i - 1).addr;
        if (rte_mbuf *m =
                build_nd(icmpv6_type_neighbor_advert, all_mac, t, all, t, nd_na::flag_override)) {
            tx_out[n_tx++] = m;
            ctr_.nd_tx_unsolicited_na++;
        }
    }
    announce_left_--;
    announce_next_ = now_ + cfg_.announce_interval_ns;
}

/* ================================================================ rx */

bool neigh::is_neigh_frame(const rte_mbuf *m) {
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = m->data_len;
    if (len < sizeof(eth_hdr)) return false;
    size_t l2 = sizeof(eth_hdr);
    uint16_t et = reinterpret_cast<const eth_hdr *>(p)->ether_type();
    if (et == ether_type_vlan) {
        if (len < l2 + sizeof(vlan_hdr)) return false;
        et = reinterpret_cast<const vlan_hdr *>(p + l2)->ether_type();
        l2 += sizeof(vlan_hdr);
    }
    switch (et) {
    case ether_type_arp:
        return true;
    case ether_type_ipv4:
        return len >= l2 + sizeof(ipv4_hdr) &&
               reinterpret_cast<const ipv4_hdr *>(p + l2)->protocol == ip_proto_icmp;
    case ether_type_ipv6: {
        if (len < l2 + sizeof(ipv6_hdr)) return false;
        uint8_t nh = reinterpret_cast<const ipv6_hdr *>(p + l2)->next_header;
        /* MLD queries arrive behind a Hop-by-Hop header (RFC 3810 5). */
        if (nh == ipv6_nh_hop_by_hop && len >= l2 + sizeof(ipv6_hdr) + sizeof(ipv6_hbh_hdr))
            nh = reinterpret_cast<const ipv6_hbh_hdr *>(p + l2 + sizeof(ipv6_hdr))->next_header;
        return nh == ip_proto_icmpv6;
    }
    default:
        return false;
    }
}

void neigh::process_burst(rte_mbuf **in, uint16_t n, rte_mbuf **tx_out, uint16_t &n_tx) {
    constexpr uint16_t free_cap = 64;
    rte_mbuf *to_free[free_cap];
    uint16_t n_free = 0;
    const mac_addr &me = addrs_.mac();

    for (uint16_t i = 0; i < n; i++) {
        rte_mbuf *m = in[i];
        ctr_.rx_frames++;
        verdict v = verdict::drop;
        do {
            if (data_shared(m)) {
                /* Rare (capture clones): work on a private copy. */
                rte_mbuf *c = cfg_.pool ? rte_pktmbuf_copy(m, cfg_.pool, 0, UINT32_MAX) : nullptr;
                if (!c) {
                    v = drop(neigh_drop::no_room);
                    break;
                }
                ctr_.rx_shared_copied++;
                rte_pktmbuf_free(m);
                m = c;
            }
            uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
            uint32_t dlen = m->data_len;
            if (dlen < sizeof(eth_hdr)) {
                v = drop(m->pkt_len < sizeof(eth_hdr) ? neigh_drop::truncated
                                                      : neigh_drop::headers_split);
                break;
            }
            auto *eth = reinterpret_cast<eth_hdr *>(p);
            uint16_t et = eth->ether_type();
            size_t l2 = sizeof(eth_hdr);
            if (et == ether_type_vlan) {
                if (dlen < l2 + sizeof(vlan_hdr)) {
                    v = drop(neigh_drop::truncated);
                    break;
                }
                et = reinterpret_cast<vlan_hdr *>(p + l2)->ether_type();
                l2 += sizeof(vlan_hdr);
            }
            mac_addr dst = mac_addr::from_bytes(eth->dst), src = mac_addr::from_bytes(eth->src);
            /* Unicast frames for another station reach us on promiscuous
             * ports and af_packet; group frames are filtered by L3 below. */
            if (!dst.is_multicast() && dst != me) {
                v = drop(neigh_drop::not_for_us);
                break;
            }
            /* RFC 1122 3.3.6 / IEEE 802: a group address is never a source;
             * our own MAC as source is a reflected frame or a MAC clash. */
            if (!src.is_valid_unicast() || src == me) {
                v = drop(neigh_drop::bad_source);
                break;
            }
            switch (et) {
            case ether_type_arp:
                v = handle_arp(m, p, l2);
                break;
            case ether_type_ipv4:
                v = handle_ipv4(m, l2);
                break;
            case ether_type_ipv6:
                v = handle_ipv6(m, l2);
                break;
            default:
                v = drop(neigh_drop::unsupported_ethertype);
                break;
            }
        } while (false);

        if (v == verdict::reply) {
            prepare_tx(m);
            tx_out[n_tx++] = m;
        } else {
            if (n_free == free_cap) {
                rte_pktmbuf_free_bulk(to_free, n_free);
                n_free = 0;
            }
            to_free[n_free++] = m;
        }
    }
    if (n_free) rte_pktmbuf_free_bulk(to_free, n_free);
}

neigh::verdict neigh::handle_arp(rte_mbuf *m, uint8_t *p, size_t l2) {
    ctr_.rx_arp++;
    if (m->data_len < l2 + sizeof(arp_hdr))
        return drop(m->pkt_len < l2 + sizeof(arp_hdr) ? neigh_drop::truncated
                                                      : neigh_drop::headers_split);
    auto *a = reinterpret_cast<arp_hdr *>(p + l2);
    /* RFC 826 "Packet Reception": only (ar$hrd, ar$pro) we speak. */
    if (!a->is_ether_ipv4()) return drop(neigh_drop::bad_arp);
    uint16_t op = a->op();
    if (op != arp_op_request && op != arp_op_reply) return drop(neigh_drop::bad_arp);
    (op == arp_op_request ? ctr_.arp_rx_request : ctr_.arp_rx_reply)++;

    const mac_addr &me = addrs_.mac();
    mac_addr sha = mac_addr::from_bytes(a->sha);
    if (!sha.is_valid_unicast() || sha == me) return drop(neigh_drop::bad_source);
    uint32_t spa = a->sender_ip(), tpa = a->target_ip();
    bool tpa_ours = addrs_.is_local_ipv4(tpa);
    bool learned = false;

    if (spa == 0) {
        /* RFC 5227 2.1.1 probe: the sender has no address yet; never learn
         * from it. A probe for our address is answered (defence, 2.4) the
         * way Linux does: unicast to the prober, target IP 0.0.0.0. */
        ctr_.arp_rx_probe++;
    } else {
        if (addrs_.is_local_ipv4(spa)) {
            /* Someone else uses our address (RFC 5227 2.4): never learn it. */
            return conflict(gid::from_ipv4(spa), sha);
        }
        if (!ipv4_is_host_unicast(spa)) return drop(neigh_drop::bad_source);
        bool gratuitous = spa == tpa;
        if (gratuitous) ctr_.arp_rx_gratuitous++;
        /* RFC 826 merge: update the sender if known; add it only when the
         * frame is for us (or arp_accept and gratuitous). */
        gid ip = gid::from_ipv4(spa);
        entry *e = find(ip);
        /* A reply unicast to us is a confirmation (REACHABLE); anything
         * else is unconfirmed hearsay (STALE), as in Linux's arp_process. */
        bool confirmed = op == arp_op_reply && tpa_ours &&
                         std::memcmp(reinterpret_cast<eth_hdr *>(p)->dst, me.b.data(), 6) == 0;
        if (e) {
            if (e->state != neigh_state::permanent) {
                neigh_state s = confirmed ? neigh_state::reachable
                                : (e->state == neigh_state::incomplete ||
                                   e->state == neigh_state::failed || e->mac != sha)
                                    ? neigh_state::stale
                                    : e->state;
                set_mac(e, sha, s);
            }
            learned = true;
        } else if (tpa_ours || (gratuitous && cfg_.arp_accept)) {
            learn_new(ip, sha, confirmed ? neigh_state::reachable : neigh_state::stale);
            learned = true;
        }
    }

    if (!tpa_ours) return learned ? verdict::consumed : drop(neigh_drop::not_for_us);
    if (op == arp_op_reply) return verdict::consumed;

    /* RFC 826: swap sender/target, put our addresses in the sender fields,
     * opcode reply, send to the requester's hardware address. */
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, a->sha, 6);
    me.copy_to(eth->src);
    a->set_op(arp_op_reply);
    std::memcpy(a->tha, a->sha, 6);
    std::memcpy(a->tpa, a->spa, 4);
    me.copy_to(a->sha);
    a->set_sender_ip(tpa);
    if (!reshape(m, uint32_t(l2 + sizeof(arp_hdr)),
                 uint32_t(std::max(l2 + sizeof(arp_hdr), eth_min_frame_len))))
        return drop(neigh_drop::no_room);
    ctr_.arp_tx_reply++;
    return verdict::reply;
}

neigh::verdict neigh::handle_ipv4(rte_mbuf *m, size_t l2) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    uint32_t dlen = m->data_len;
    if (dlen < l2 + sizeof(ipv4_hdr))
        return drop(m->pkt_len < l2 + sizeof(ipv4_hdr) ? neigh_drop::truncated
                                                       : neigh_drop::headers_split);
    auto *ip = reinterpret_cast<ipv4_hdr *>(p + l2);
    size_t hl = ip->header_length();
    if (ip->version() != 4 || hl < sizeof(ipv4_hdr)) return drop(neigh_drop::bad_ip_header);
    if (dlen < l2 + hl)
        return drop(m->pkt_len < l2 + hl ? neigh_drop::truncated : neigh_drop::headers_split);
    uint32_t tl = ip->total_length();
    if (tl < hl) return drop(neigh_drop::bad_ip_header);
    if (l2 + tl > m->pkt_len) return drop(neigh_drop::truncated);
    /* RFC 1122 3.2.1.2: silently discard a datagram with a bad header checksum. */
    if (rte_raw_cksum(ip, hl) != 0xffff) return drop(neigh_drop::bad_ip_checksum);
    if (ip->protocol != ip_proto_icmp) return drop(neigh_drop::unsupported_type);
    ctr_.rx_icmp++;
    /* No reassembly here: RoCE never fragments and a fragmented ping is the
     * only user (ping -s beyond the MTU); counted, not answered. */
    if (ip->is_fragment()) return drop(neigh_drop::ip_fragment);
    uint32_t dst = ip->dst_addr(), src = ip->src_addr();
    /* RFC 1122 3.2.2.6: echo to a broadcast/multicast address MAY be
     * ignored; we do (only our unicast addresses are answered). */
    if (!addrs_.is_local_ipv4(dst)) return drop(neigh_drop::not_for_us);
    /* RFC 1122 3.2.1.3: a source that is not a host address is discarded. */
    if (!ipv4_is_host_unicast(src)) return drop(neigh_drop::bad_source);
    uint32_t icmp_len = tl - uint32_t(hl);
    if (icmp_len < sizeof(icmp_hdr)) return drop(neigh_drop::truncated);
    if (dlen < l2 + hl + sizeof(icmp_hdr)) return drop(neigh_drop::headers_split);
    /* RFC 792: checksum over the whole ICMP message (payload may be chained). */
    if (mbuf_sum(m, uint32_t(l2 + hl), icmp_len) != 0xffff)
        return drop(neigh_drop::bad_icmp_checksum);
    auto *icmp = reinterpret_cast<icmp_hdr *>(p + l2 + hl);
    if (icmp->type != icmp_type_echo_request) return drop(neigh_drop::unsupported_type);
    ctr_.icmp_rx_echo_request++;

    if (!trim_to(m, uint32_t(l2 + tl))) return drop(neigh_drop::no_room);
    if (hl > sizeof(ipv4_hdr)) {
        /* Options are not echoed (RFC 1122 3.2.2.6 only SHOULDs record-route
         * and timestamp; a reversed source route we would not honour):
         * slide L2 + the fixed header over them. */
        size_t optlen = hl - sizeof(ipv4_hdr);
        std::memmove(p + optlen, p, l2 + sizeof(ipv4_hdr));
        rte_pktmbuf_adj(m, uint16_t(optlen));
        p = rte_pktmbuf_mtod(m, uint8_t *);
        ip = reinterpret_cast<ipv4_hdr *>(p + l2);
        ip->version_ihl = 0x45;
        tl -= uint32_t(optlen);
        ip->set_total_length(uint16_t(tl));
        hl = sizeof(ipv4_hdr);
        icmp = reinterpret_cast<icmp_hdr *>(p + l2 + hl);
    }
    /* RFC 792 echo reply: addresses reversed, type 0, data (id, seq and
     * payload) returned unchanged. TOS kept (RFC 1349 5.1). */
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, eth->src, 6);
    addrs_.mac().copy_to(eth->src);
    ip->set_src_addr(dst);
    ip->set_dst_addr(src);
    ip->ttl = cfg_.ttl;
    ip->set_id(ip_id_++);
    ip->set_frag(0);
    ip->set_checksum(0);
    store_csum(ip->checksum_be, rte_raw_cksum(ip, hl));
    icmp->type = icmp_type_echo_reply;
    icmp->code = 0;
    icmp->set_checksum(0);
    store_csum(icmp->checksum_be, mbuf_sum(m, uint32_t(l2 + hl), icmp_len));
    ctr_.icmp_tx_echo_reply++;
    return verdict::reply;
}

neigh::verdict neigh::handle_ipv6(rte_mbuf *m, size_t l2) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    uint32_t dlen = m->data_len;
    if (dlen < l2 + sizeof(ipv6_hdr))
        return drop(m->pkt_len < l2 + sizeof(ipv6_hdr) ? neigh_drop::truncated
                                                       : neigh_drop::headers_split);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    if (ip6->version() != 6) return drop(neigh_drop::bad_ip_header);
    uint32_t plen = ip6->payload_length();
    if (l2 + sizeof(ipv6_hdr) + plen > m->pkt_len) return drop(neigh_drop::truncated);
    if (ip6->next_header == ipv6_nh_hop_by_hop) {
        /* MLD messages carry a Hop-by-Hop Router Alert (RFC 3810 5); other
         * ICMPv6 behind extension headers is not served. */
        uint32_t hbh_off = uint32_t(l2 + sizeof(ipv6_hdr));
        if (plen < sizeof(ipv6_hbh_hdr) || dlen < hbh_off + sizeof(ipv6_hbh_hdr))
            return drop(plen < sizeof(ipv6_hbh_hdr) ? neigh_drop::truncated
                                                    : neigh_drop::headers_split);
        auto *hbh = reinterpret_cast<const ipv6_hbh_hdr *>(p + hbh_off);
        uint32_t hl = uint32_t(hbh->length_bytes());
        if (hbh->next_header != ip_proto_icmpv6) return drop(neigh_drop::unsupported_ext_hdr);
        if (plen < hl + sizeof(icmpv6_hdr)) return drop(neigh_drop::truncated);
        uint32_t icmp_off = hbh_off + hl, icmp_len = plen - hl;
        if (dlen < icmp_off + sizeof(icmpv6_hdr)) return drop(neigh_drop::headers_split);
        uint8_t type = p[icmp_off];
        if (type != icmpv6_type_mld_query && type != icmpv6_type_mldv1_report &&
            type != icmpv6_type_mld_done && type != icmpv6_type_mldv2_report)
            return drop(neigh_drop::unsupported_ext_hdr);
        ctr_.rx_icmpv6++;
        if (ipv6_is_multicast(ip6->src)) return drop(neigh_drop::bad_source);
        uint32_t s = ipv6_pseudo_sum(ip6->src, ip6->dst, icmp_len, ip_proto_icmpv6) +
                     mbuf_sum(m, icmp_off, icmp_len);
        if (fold(s) != 0xffff) return drop(neigh_drop::bad_icmp_checksum);
        return handle_mld(m, l2, icmp_off, icmp_len);
    }
    if (ip6->next_header != ip_proto_icmpv6) {
        switch (ip6->next_header) {
        case 43:
        case 44:
        case 50:
        case 51:
        case 60:
        case 135:
        case 139:
        case 140:
            /* Hop-by-hop (MLD reports carry Router Alert), routing, fragment,
             * ESP/AH, destination options: RFC 8200 4 chain not walked. */
            return drop(neigh_drop::unsupported_ext_hdr);
        default:
            return drop(neigh_drop::unsupported_type);
        }
    }
    ctr_.rx_icmpv6++;
    if (ipv6_is_multicast(ip6->src)) return drop(neigh_drop::bad_source); /* RFC 4291 2.7 */
    if (plen < sizeof(icmpv6_hdr)) return drop(neigh_drop::truncated);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    if (dlen < icmp_off + sizeof(icmpv6_hdr)) return drop(neigh_drop::headers_split);
    /* RFC 4443 2.3: checksum over the pseudo-header (RFC 8200 8.1) and the message. */
    uint32_t s =
        ipv6_pseudo_sum(ip6->src, ip6->dst, plen, ip_proto_icmpv6) + mbuf_sum(m, icmp_off, plen);
    if (fold(s) != 0xffff) return drop(neigh_drop::bad_icmp_checksum);

    auto *ih = reinterpret_cast<icmpv6_hdr *>(p + icmp_off);
    switch (ih->type) {
    case icmpv6_type_neighbor_solicit:
        return handle_ns(m, l2, plen);
    case icmpv6_type_neighbor_advert:
        return handle_na(m, l2, plen);
    case icmpv6_type_echo_request:
        break;
    default:
        return drop(neigh_drop::unsupported_type);
    }

    bool mcast = ipv6_is_multicast(ip6->dst);
    if (mcast) {
        /* RFC 4443 4.2: echo to a multicast group we are in SHOULD be answered. */
        if (!cfg_.icmpv6_multicast_echo ||
            !(std::memcmp(ip6->dst, ipv6_all_nodes().raw.data(), 16) == 0 ||
              addrs_.is_our_solicited_node(ip6->dst)))
            return drop(neigh_drop::not_for_us);
    } else if (!addrs_.is_local_ipv6(ip6->dst)) {
        return drop(neigh_drop::not_for_us);
    }
    if (ipv6_is_unspecified(ip6->src)) return drop(neigh_drop::bad_source);
    if (plen < sizeof(icmpv6_echo)) return drop(neigh_drop::truncated);
    if (dlen < icmp_off + sizeof(icmpv6_echo)) return drop(neigh_drop::headers_split);
    ctr_.icmpv6_rx_echo_request++;
    if (!trim_to(m, icmp_off + plen)) return drop(neigh_drop::no_room);

    /* RFC 4443 4.2: reply to the requester; identifier, sequence and data
     * unchanged. For a multicast request, the source MUST be a unicast
     * address of the receiving interface. */
    gid new_src = mcast ? addrs_.ipv6_source_for(ip6->src) : gid::from_bytes(ip6->dst);
    std::memcpy(ip6->dst, ip6->src, 16);
    std::memcpy(ip6->src, new_src.raw.data(), 16);
    ip6->hop_limit = cfg_.ttl;
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    std::memcpy(eth->dst, eth->src, 6);
    addrs_.mac().copy_to(eth->src);
    ih->type = icmpv6_type_echo_reply;
    ih->code = 0;
    ih->set_checksum(0);
    s = ipv6_pseudo_sum(ip6->src, ip6->dst, plen, ip_proto_icmpv6) + mbuf_sum(m, icmp_off, plen);
    store_csum(ih->checksum_be, fold(s));
    ctr_.icmpv6_tx_echo_reply++;
    return verdict::reply;
}

neigh::verdict neigh::handle_mld(rte_mbuf *m, size_t l2, uint32_t icmp_off, uint32_t icmp_len) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    if (p[icmp_off] != icmpv6_type_mld_query) {
        ctr_.mld_rx_other++; /* other listeners' reports: hosts ignore them (RFC 3810 6) */
        return verdict::consumed;
    }
    /* RFC 3810 5.1.14 / RFC 2710 3: queries come from a link-local source
     * with hop limit 1; anything else is discarded. */
    if (ip6->hop_limit != 1 || !ipv6_is_link_local(ip6->src)) return drop(neigh_drop::bad_mld);
    if (icmp_len < sizeof(mld_hdr) || (icmp_len > sizeof(mld_hdr) && icmp_len < 28))
        return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + sizeof(mld_hdr)) return drop(neigh_drop::headers_split);
    auto *q = reinterpret_cast<const mld_hdr *>(p + icmp_off);
    ctr_.mld_rx_query++;
    if (icmp_len == sizeof(mld_hdr)) {
        /* RFC 3810 8.2.1: an MLDv1 querier is present; answer in MLDv1 for
         * the Older Version Querier Present Timeout (9.12: robustness x
         * query interval + query response interval = 260 s by default). */
        ctr_.mld_rx_query_v1++;
        mldv1_until_ =
            now_ + uint64_t(cfg_.mld_robustness ? cfg_.mld_robustness : 2) * 125'000'000'000ull +
            10'000'000'000ull;
    }
    /* General query (::) or a group-specific one for one of our groups:
     * answer with the current state on the next poll(). (RFC 3810 6.2 asks
     * for a random delay up to Maximum Response Delay; one host answering
     * at once is harmless.) */
    if (!ipv6_is_unspecified(q->mcast_addr)) {
        std::array<gid, local_addr_table::max_ipv6 + 1> groups;
        size_t n = mld_groups(groups.data());
        gid g = gid::from_bytes(q->mcast_addr);
        if (std::find(groups.begin(), groups.begin() + n, g) == groups.begin() + n)
            return verdict::consumed;
    }
    if (cfg_.mld) mld_respond_ = true;
    return verdict::consumed;
}

neigh::verdict neigh::handle_ns(rte_mbuf *m, size_t l2, uint32_t icmp_len) {
    ctr_.nd_rx_ns++;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    /* RFC 4861 7.1.1 validity checks. */
    if (ip6->hop_limit != nd_hop_limit) return drop(neigh_drop::bad_hop_limit);
    if (icmp_len < sizeof(nd_ns)) return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + icmp_len) return drop(neigh_drop::headers_split);
    auto *ns = reinterpret_cast<nd_ns *>(p + icmp_off);
    if (ns->h.code != 0 || ipv6_is_multicast(ns->target)) return drop(neigh_drop::bad_nd);
    nd_options o = parse_nd_options(p + icmp_off + sizeof(nd_ns), icmp_len - sizeof(nd_ns),
                                    nd_opt_source_lladdr);
    if (!o.valid) return drop(neigh_drop::bad_nd);
    bool dad = ipv6_is_unspecified(ip6->src);
    if (dad && (!ipv6_is_solicited_node(ip6->dst) || o.lladdr)) return drop(neigh_drop::bad_nd);
    if (o.lladdr && !mac_addr::from_bytes(o.lladdr).is_valid_unicast())
        return drop(neigh_drop::bad_nd);

    /* 7.2.3: answer only for a target assigned to this interface. */
    if (!addrs_.is_local_ipv6(ns->target)) return drop(neigh_drop::not_for_us);
    if (!dad && addrs_.is_local_ipv6(ip6->src))
        return conflict(gid::from_bytes(ip6->src),
                        o.lladdr ? mac_addr::from_bytes(o.lladdr)
                                 : mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src));

    mac_addr reply_mac;
    gid reply_dst;
    if (dad) {
        /* RFC 4862 5.4.3: our (non-tentative) address is being probed: the
         * NS is processed per RFC 4861 7.2.4, which for a :: source means
         * S=0 and multicast to all-nodes, so the prober sees the duplicate. */
        ctr_.nd_rx_ns_dad++;
        reply_dst = ipv6_all_nodes();
        reply_mac = ipv6_multicast_mac(reply_dst.raw.data());
    } else {
        reply_dst = gid::from_bytes(ip6->src);
        /* 7.2.3: learn the sender from its SLLA: new entry STALE; a changed
         * address replaces the cached one and goes STALE. */
        if (o.lladdr) {
            mac_addr slla = mac_addr::from_bytes(o.lladdr);
            entry *e = find(reply_dst);
            if (!e) {
                learn_new(reply_dst, slla, neigh_state::stale);
            } else if (e->state != neigh_state::permanent) {
                bool fresh = e->state == neigh_state::incomplete || e->state == neigh_state::failed;
                if (fresh || e->mac != slla) set_mac(e, slla, neigh_state::stale);
            }
            reply_mac = slla;
        } else {
            /* No SLLA on a unicast NS (a reachability probe, 7.2.2): answer
             * the Ethernet source rather than soliciting the solicitor. */
            reply_mac = mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src);
        }
    }

    /* 7.2.4: NA with target = the solicited target, source = that address,
     * O=1 (not anycast), S=1 unless DAD, R=0 (not a router), TLLA = our MAC. */
    gid target = gid::from_bytes(ns->target);
    uint32_t na_len = sizeof(nd_na) + sizeof(nd_opt_lladdr);
    if (!reshape(m, icmp_off + na_len, icmp_off + na_len)) return drop(neigh_drop::no_room);
    p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *eth = reinterpret_cast<eth_hdr *>(p);
    reply_mac.copy_to(eth->dst);
    addrs_.mac().copy_to(eth->src);
    ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    ip6->set_vtc_flow(0, 0);
    ip6->set_payload_length(uint16_t(na_len));
    ip6->next_header = ip_proto_icmpv6;
    ip6->hop_limit = nd_hop_limit;
    std::memcpy(ip6->src, target.raw.data(), 16);
    std::memcpy(ip6->dst, reply_dst.raw.data(), 16);
    auto *na = reinterpret_cast<nd_na *>(p + icmp_off);
    na->h.type = icmpv6_type_neighbor_advert;
    na->h.code = 0;
    na->set_flags(false, !dad, true);
    std::memcpy(na->target, target.raw.data(), 16);
    auto *opt = reinterpret_cast<nd_opt_lladdr *>(na + 1);
    opt->type = nd_opt_target_lladdr;
    opt->len = 1;
    addrs_.mac().copy_to(opt->addr);
    na->h.set_checksum(0);
    uint32_t s =
        ipv6_pseudo_sum(ip6->src, ip6->dst, na_len, ip_proto_icmpv6) + rte_raw_cksum(na, na_len);
    store_csum(na->h.checksum_be, fold(s));
    ctr_.nd_tx_na++;
    return verdict::reply;
}

neigh::verdict neigh::handle_na(rte_mbuf *m, size_t l2, uint32_t icmp_len) {
    ctr_.nd_rx_na++;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    auto *ip6 = reinterpret_cast<ipv6_hdr *>(p + l2);
    uint32_t icmp_off = uint32_t(l2 + sizeof(ipv6_hdr));
    /* RFC 4861 7.1.2 validity checks. */
    if (ip6->hop_limit != nd_hop_limit) return drop(neigh_drop::bad_hop_limit);
    if (icmp_len < sizeof(nd_na)) return drop(neigh_drop::truncated);
    if (m->data_len < icmp_off + icmp_len) return drop(neigh_drop::headers_split);
    auto *na = reinterpret_cast<nd_na *>(p + icmp_off);
    if (na->h.code != 0 || ipv6_is_multicast(na->target)) return drop(neigh_drop::bad_nd);
    if (ipv6_is_multicast(ip6->dst) && na->solicited()) return drop(neigh_drop::bad_nd);
    nd_options o = parse_nd_options(p + icmp_off + sizeof(nd_na), icmp_len - sizeof(nd_na),
                                    nd_opt_target_lladdr);
    if (!o.valid) return drop(neigh_drop::bad_nd);
    if (o.lladdr && !mac_addr::from_bytes(o.lladdr).is_valid_unicast())
        return drop(neigh_drop::bad_nd);

    gid target = gid::from_bytes(na->target);
    if (addrs_.is_local_ipv6(na->target)) {
        /* RFC 4862 5.4.4: another node advertises one of our addresses. */
        return conflict(target, o.lladdr
                                    ? mac_addr::from_bytes(o.lladdr)
                                    : mac_addr::from_bytes(reinterpret_cast<eth_hdr *>(p)->src));
    }
    /* 7.2.5: no entry -> silently discard (no entry is created by an NA). */
    entry *e = find(target);
    if (!e) {
        ctr_.nd_rx_na_ignored++;
        return verdict::consumed;
    }
    if (e->state == neigh_state::permanent) return verdict::consumed;
    if (e->state == neigh_state::incomplete || e->state == neigh_state::failed) {
        if (!o.lladdr) return verdict::consumed; /* nothing to learn */
        set_mac(e, mac_addr::from_bytes(o.lladdr),
                na->solicited() ? neigh_state::reachable : neigh_state::stale);
        return verdict::consumed;
    }
    mac_addr tlla = o.lladdr ? mac_addr::from_bytes(o.lladdr) : e->mac;
    bool differs = tlla != e->mac;
    if (!na->override_flag() && differs) {
        /* O=0 and a different address: keep the cached one, but a REACHABLE
         * entry becomes STALE (it may be out of date). */
        if (e->state == neigh_state::reachable) set_state(e, neigh_state::stale);
        return verdict::consumed;
    }
    neigh_state s = na->solicited() ? neigh_state::reachable
                    : differs       ? neigh_state::stale
                                    : e->state;
    set_mac(e, tlla, s);
    return verdict::consumed;
}

/* ================================================================ timers */

void neigh::emit_due(entry *e, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
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

void neigh::scan(rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
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

void neigh::poll(uint64_t now_ns, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    if (now_ns > now_) now_ = now_ns;

    /* First requests of new resolutions go out at once, not at the next scan. */
    if (n_urgent_) {
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

    if (held_pending_) {
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

    if (mld_respond_ && emit_mld(tx_out, n_tx, tx_cap, mld_rec_mode_is_exclude))
        mld_respond_ = false;
    if (now_ >= mld_next_) {
        bool change = mld_left_ > 0;
        if (emit_mld(tx_out, n_tx, tx_cap,
                     change ? mld_rec_change_to_exclude : mld_rec_mode_is_exclude)) {
            if (change) mld_left_--;
            mld_next_ = mld_left_             ? now_ + cfg_.mld_unsolicited_interval_ns
                        : cfg_.mld_refresh_ns ? now_ + cfg_.mld_refresh_ns
                                              : UINT64_MAX;
        }
    }
    if (announce_left_ && now_ >= announce_next_) emit_announcements(tx_out, n_tx, tx_cap);

    if (now_ >= next_scan_ && now_ >= scan_not_before_) scan(tx_out, n_tx, tx_cap);
}

} // namespace uroce

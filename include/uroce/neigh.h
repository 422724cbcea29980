/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour subsystem, public API: the ARP + IPv6 ND neighbour cache and the
 * responder for ARP, ICMP echo, ICMPv6 echo, NS/NA and MLD, behind class
 * neigh; its configuration, events and counters. The port's own addresses
 * (mac_addr, local_addr_table) are in uroce_local_addr.h, included here.
 * Everything else in lib/neigh is internal (see doc/neigh.md, "Files").
 *
 * Driver-independent: it works on rte_mbufs handed in by the poll-mode engine
 * and hands back frames to transmit. Single-threaded by design (one instance
 * per lcore/port, run to completion): no locks, and no heap allocation after
 * construction; mbufs for requests come from the configured mempool.
 *
 * How the engine drives it (see doc/neigh.md):
 *   - process_burst(): every ARP / IPv4-ICMP / IPv6-ICMPv6 frame received;
 *     replies come back in tx_out, everything else is freed and counted.
 *   - resolve(next_hop): MAC for an address handle; nullopt while the request
 *     is in flight (the answer arrives through a later resolve() or the
 *     event callback).
 *   - poll(now): on every loop iteration; sends queued requests, retransmits,
 *     ages entries. Cheap when nothing is due (one comparison).
 */
#ifndef UROCE_NEIGH_H
#define UROCE_NEIGH_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <type_traits>

#include <uroce/gid.h>
#include <uroce/local_addr.h>

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

class neigh_proto; /* the implementation (internal: uroce_neigh_proto.h) */

/* ================================================================ counters */

/* Every event and every drop has a counter. X(name, description), the
 * shape of lib/transport's counter tables; names and descriptions are
 * exported for telemetry / print_counters through neigh_counter_names()
 * and neigh_counter_descriptions(). */
#define UROCE_NEIGH_COUNTERS(X)                                                                    \
    X(rx_frames, "frames handed to process_burst")                                                 \
    X(rx_arp, "ARP frames received")                                                               \
    X(rx_icmp, "IPv4 ICMP frames received")                                                        \
    X(rx_icmpv6, "IPv6 ICMPv6 frames received (echo and ND)")                                      \
    X(rx_shared_copied, "frames with shared data (clone, refcnt > 1) answered from a copy")        \
    X(arp_rx_request, "ARP requests received")                                                     \
    X(arp_rx_reply, "ARP replies received")                                                        \
    X(arp_rx_gratuitous, "gratuitous ARPs received (sender IP == target IP, RFC 5227)")            \
    X(arp_rx_probe, "ARP probes received (sender IP 0.0.0.0, RFC 5227)")                           \
    X(arp_tx_reply, "ARP replies sent")                                                            \
    X(arp_tx_request, "ARP requests sent (resolution and probes)")                                 \
    X(arp_tx_announce, "ARP announcements sent (RFC 5227 2.3)")                                    \
    X(icmp_rx_echo_request, "ICMP echo requests received for us")                                  \
    X(icmp_tx_echo_reply, "ICMP echo replies sent")                                                \
    X(icmpv6_rx_echo_request, "ICMPv6 echo requests received for us")                              \
    X(icmpv6_tx_echo_reply, "ICMPv6 echo replies sent")                                            \
    X(nd_rx_ns, "neighbor solicitations received")                                                 \
    X(nd_rx_ns_dad, "DAD solicitations (from ::) for our addresses (RFC 4862 5.4.3)")              \
    X(nd_rx_na, "neighbor advertisements received")                                                \
    X(nd_rx_na_ignored, "advertisements for addresses not in the cache (RFC 4861 7.2.5)")          \
    X(nd_tx_na, "solicited neighbor advertisements sent")                                          \
    X(nd_tx_ns, "neighbor solicitations sent (resolution and probes)")                             \
    X(nd_tx_unsolicited_na, "unsolicited advertisements sent (RFC 4861 7.2.6)")                    \
    X(mld_tx_report, "MLD reports sent (frames)")                                                  \
    X(mld_rx_query, "MLD queries received (v1 and v2)")                                            \
    X(mld_rx_query_v1, "MLDv1 queries received (switch to MLDv1 reports)")                         \
    X(mld_rx_other, "MLD reports/dones of other nodes (ignored)")                                  \
    X(address_conflicts, "frames from another node claiming one of our addresses")                 \
    X(resolve_calls, "resolve() calls")                                                            \
    X(cache_hits, "resolve() answered from the cache")                                             \
    X(cache_misses, "resolve() started a resolution")                                              \
    X(resolve_pending, "resolve() on an entry still INCOMPLETE")                                   \
    X(resolve_failed, "resolve() on a FAILED entry (hold-down)")                                   \
    X(resolve_invalid, "resolve() of an unspecified or unusable address")                          \
    X(resolutions, "INCOMPLETE entries that got a MAC")                                            \
    X(resolution_timeouts, "resolutions given up after max_multicast_solicit requests")            \
    X(reachable_timeouts, "REACHABLE entries aged to STALE")                                       \
    X(stale_gc, "unused STALE entries deleted")                                                    \
    X(probe_failures, "entries deleted after unanswered unicast probes")                           \
    X(confirmations, "confirm() calls that refreshed an entry")                                    \
    X(learned_new, "entries created from received frames")                                         \
    X(learned_changed, "cached MACs replaced by a different one")                                  \
    X(cache_full, "entries not created: cache full")                                               \
    X(evictions, "STALE/FAILED entries evicted for a new resolution")                              \
    X(entries, "entries in use (gauge)")                                                           \
    X(held_frames, "frames parked on an INCOMPLETE entry")                                         \
    X(held_sent, "parked frames sent after resolution")                                            \
    X(held_dropped, "parked frames freed: replaced, failed or removed")                            \
    X(no_source_address, "requests not sent: no local address of that family")                     \
    X(tx_alloc_fail, "requests not built: no mempool or mempool empty")                            \
    X(tx_deferred, "requests or announcements postponed: poll()'s tx array full")                  \
    X(timer_scans, "full table scans for timers")

/* Why a frame was dropped. */
#define UROCE_NEIGH_DROPS(X)                                                                       \
    X(truncated, "shorter than its headers or lengths claim")                                      \
    X(headers_split, "headers not contiguous in the first mbuf segment")                           \
    X(unsupported_ethertype, "not ARP/IPv4/IPv6, or stacked VLAN tags")                            \
    X(not_for_us, "destination MAC, IP or ND target is not ours")                                  \
    X(bad_arp, "not Ethernet/IPv4 ARP, or an unknown opcode")                                      \
    X(bad_source, "multicast, zero or our own source MAC, or a non-host source IP")                \
    X(bad_ip_header, "IP version, IHL or length fields invalid")                                   \
    X(bad_ip_checksum, "IPv4 header checksum wrong")                                               \
    X(bad_icmp_checksum, "ICMP or ICMPv6 (with pseudo-header) checksum wrong")                     \
    X(ip_fragment, "IP fragments (no reassembly)")                                                 \
    X(unsupported_type, "ICMP/ICMPv6 types or IP protocols we do not answer")                      \
    X(unsupported_ext_hdr, "IPv6 extension headers before ICMPv6 (MLD, ...)")                      \
    X(bad_nd, "ND validation failed (RFC 4861 7.1: code, options, target, S flag)")                \
    X(bad_hop_limit, "ND with hop limit != 255 (RFC 4861 7.1)")                                    \
    X(bad_mld, "MLD query with hop limit != 1 or a non-link-local source (RFC 3810 5.1.14)")       \
    X(address_conflict, "frame claims one of our addresses")                                       \
    X(no_room, "reply does not fit the mbuf, or no mbuf to copy a shared frame")

struct neigh_counters {
#define UROCE_X(name, desc) uint64_t name = 0;
    UROCE_NEIGH_COUNTERS(UROCE_X)
#undef UROCE_X
};

enum class neigh_drop : uint8_t {
#define UROCE_X(name, desc) name,
    UROCE_NEIGH_DROPS(UROCE_X)
#undef UROCE_X
        count
};
UROCE_API const char *neigh_drop_name(neigh_drop d);
UROCE_API const char *neigh_drop_description(neigh_drop d);
/* Counter names / descriptions in the declaration order of neigh_counters;
 * the i-th counter is reinterpret_cast<const uint64_t *>(&counters)[i]. */
UROCE_API const char *const *neigh_counter_names(size_t &n);
UROCE_API const char *const *neigh_counter_descriptions(size_t &n);

/* ================================================================ cache */

/* RFC 4861 7.3.2 states, plus PERMANENT (static entries) and FAILED
 * (hold-down after an unanswered resolution, so a caller polling resolve()
 * in a loop does not turn into a broadcast storm; Linux has NUD_FAILED too). */
enum class neigh_state : uint8_t {
    none,
    incomplete,
    reachable,
    stale,
    delay,
    probe,
    failed,
    permanent
};
UROCE_API const char *neigh_state_name(neigh_state s);

enum class neigh_event : uint8_t {
    resolved,         /* INCOMPLETE entry got a MAC */
    changed,          /* a known neighbour's MAC changed */
    failed,           /* resolution timed out, or PROBE went unanswered (entry removed) */
    address_conflict, /* another station claims our address ip, from MAC mac (at most 1/s) */
};
/* mac is null for failed. Called from process_burst()/poll() on the engine's lcore. */
using neigh_event_cb = void (*)(void *ctx, neigh_event ev, const gid &ip, const mac_addr *mac);

struct neigh_config {
    /* Neighbour cache capacity (IPv4 and IPv6 together); preallocated. */
    uint32_t max_entries = 1024;

    /* Timers, in ns of the clock the engine passes to poll(). Defaults are
     * the RFC 4861 section 10 constants (also Linux's neigh defaults). */
    uint64_t reachable_time_ns = 30'000'000'000ull;   /* REACHABLE_TIME */
    bool randomize_reachable = true;                  /* x[0.5, 1.5), RFC 4861 6.3.2 */
    uint64_t retrans_time_ns = 1'000'000'000ull;      /* RETRANS_TIMER */
    uint64_t delay_first_probe_ns = 5'000'000'000ull; /* DELAY_FIRST_PROBE_TIME */
    uint8_t max_multicast_solicit = 3;                /* MAX_MULTICAST_SOLICIT */
    uint8_t max_unicast_solicit = 3;                  /* MAX_UNICAST_SOLICIT */
    uint64_t stale_gc_ns =
        60'000'000'000ull; /* unused STALE kept this long (Linux gc_stale_time) */
    uint64_t failed_hold_ns = 1'000'000'000ull;    /* FAILED hold-down before a new attempt */
    uint64_t timer_granularity_ns = 10'000'000ull; /* at most one full table scan per this */

    /* RFC 826 only adds entries for frames addressed to us; Linux's
     * arp_accept=1 also creates entries from gratuitous ARP. */
    bool arp_accept = false;
    /* RFC 1122 3.2.2.6: a host MAY ignore echo requests to broadcast/multicast.
     * IPv4: ignored. IPv6: RFC 4443 4.2 says SHOULD answer; on by default. */
    bool icmpv6_multicast_echo = true;
    /* TTL / hop limit of echo replies (RFC 1700 / RFC 4861 CurHopLimit default 64). */
    uint8_t ttl = 64;
    /* 802.1Q tag for frames we originate (requests); replies keep the request's tag. */
    std::optional<uint16_t> vlan_tci;

    /* Announce our addresses on the first poll(): RFC 5227 2.3 ARP
     * Announcements (ANNOUNCE_NUM 2, ANNOUNCE_INTERVAL 2 s) and RFC 4861
     * 7.2.6 unsolicited NAs, so peers that cached an older MAC of ours
     * (a restart on another NIC) update at once. */
    bool announce_on_start = true;
    uint8_t announce_count = 2;
    uint64_t announce_interval_ns = 2'000'000'000ull;

    /* MLD (RFC 3810): report the solicited-node groups of our addresses
     * (RFC 4861 7.2.1: a node MUST join them) so that MLD-snooping switches
     * forward Neighbor Solicitations to us. Robustness-many state-change
     * reports at start (and after announce()), current-state reports in
     * answer to queries (MLDv1 reports while an MLDv1 querier is present,
     * RFC 3810 8.2.1), and an unsolicited refresh every mld_refresh_ns (not
     * in RFC 3810: a safety net for engines that do not pass queries, which
     * arrive behind a Hop-by-Hop header; keep it below the switch's listener
     * timeout, 260 s by default).
     * Off by default for now: the engine's classify_frame() does not yet hand
     * over IPv6 Hop-by-Hop frames (queries), and its tests count every frame
     * we send as ARP/ICMP or RoCE. Turn on once it does (neigh_responder and
     * the kernel test run with it on). */
    bool mld = false;
    uint8_t mld_robustness = 2; /* [Robustness Variable] 9.1 */
    uint64_t mld_unsolicited_interval_ns =
        1'000'000'000ull;                        /* [Unsolicited Report Interval] 9.11 */
    uint64_t mld_refresh_ns = 60'000'000'000ull; /* 0: off */

    /* Mempool for requests (ARP request, NS). Without it resolution only
     * learns passively (requests are counted as tx_alloc_fail). */
    rte_mempool *pool = nullptr;
    neigh_event_cb event_cb = nullptr;
    void *event_ctx = nullptr;
    /* Seed for reachable-time randomization (tests use a fixed one). */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
};

/* A read-only view of one cache entry. */
struct neigh_entry_view {
    gid ip;
    mac_addr mac;
    neigh_state state;
    uint8_t probes;
    uint64_t deadline_ns; /* next timer; 0 for PERMANENT */
    uint64_t updated_ns;  /* last confirmation / learning */
};

class neigh {
  public:
    UROCE_API neigh(const neigh_config &cfg, const local_addr_table &addrs);
    UROCE_API ~neigh();
    neigh(const neigh &) = delete;
    neigh &operator=(const neigh &) = delete;

    /* The address table may be changed between bursts (not during). */
    UROCE_API local_addr_table &addrs();
    UROCE_API const local_addr_table &addrs() const;
    UROCE_API const neigh_config &config() const;

    /* ---- receive path */

    /* Handle n received ARP / IPv4-ICMP / IPv6-ICMPv6 frames (others are
     * counted as unsupported and freed). Every input mbuf is consumed:
     * either turned into a reply in place and appended to tx_out[n_tx++], or
     * freed. tx_out must have room for n more. Uses the time of the last
     * poll() for cache timestamps. */
    UROCE_API void process_burst(rte_mbuf **in, uint16_t n, rte_mbuf **tx_out, uint16_t &n_tx);

    /* The classification the engine needs (ARP, IPv4 ICMP, IPv6 ICMPv6
     * including ND; one 802.1Q tag allowed): true if process_burst() should
     * get this frame. Looks at the first segment only; O(1). */
    UROCE_API static bool is_neigh_frame(const rte_mbuf *m);

    /* ---- resolution */

    /* MAC of a next hop (IPv4-mapped gid: ARP, else ND). Known (REACHABLE,
     * STALE, DELAY, PROBE, PERMANENT): returned, a STALE one is re-verified
     * in the background (RFC 4861 7.3.3). Unknown: an INCOMPLETE entry is
     * created and the request goes out on the next poll(); nullopt until the
     * answer arrives. Multicast/broadcast map to their group MAC and our own
     * addresses to our MAC, without a cache entry. */
    UROCE_API std::optional<mac_addr> resolve(const gid &next_hop);
    std::optional<mac_addr> resolve_ipv4(uint32_t addr_host) {
        return resolve(gid::from_ipv4(addr_host));
    }

    /* resolve(), and if unresolved park frame m (whose Ethernet destination
     * is filled in on resolution) on the entry: RFC 1122 2.3.2.2 asks to
     * keep at least the latest packet. One frame per entry; an older one is
     * freed. Returns true when m was appended to tx_out (resolved now),
     * false when parked or dropped (then counted). Parked frames are sent
     * from poll(). */
    UROCE_API bool send_or_hold(rte_mbuf *m, const gid &next_hop, rte_mbuf **tx_out,
                                uint16_t &n_tx);

    /* Upper-layer reachability confirmation (RFC 4861 7.3.1): the transport
     * got an ACK from this peer, so the entry is REACHABLE without probing. */
    UROCE_API void confirm(const gid &ip);

    /* Static entry (never expires, never overwritten by learning). */
    UROCE_API bool add_static(const gid &ip, const mac_addr &mac);
    UROCE_API bool remove(const gid &ip);
    UROCE_API void flush(); /* all dynamic entries */

    UROCE_API std::optional<neigh_entry_view> lookup(const gid &ip) const;
    UROCE_API size_t size() const;
    /* fn(const neigh_entry_view &) for every entry, in table order. */
    template <typename Fn> void for_each(Fn &&fn) const {
        using F = std::remove_reference_t<Fn>;
        visit([](void *ctx, const neigh_entry_view &v) { (*static_cast<F *>(ctx))(v); },
              const_cast<void *>(static_cast<const void *>(std::addressof(fn))));
    }
    UROCE_API void dump(FILE *f) const; /* like `ip neigh` */

    /* ---- timers */

    /* Advance time (monotonic ns), send pending requests and parked frames,
     * retransmit, expire. Appends at most tx_cap - n_tx frames to tx_out. */
    UROCE_API void poll(uint64_t now_ns, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap);
    UROCE_API uint64_t now() const;

    /* (Re)announce all addresses, e.g. after the address table or the MAC
     * changed (RFC 4861 7.2.6): announce_count rounds from the next poll(),
     * and the MLD state-change reports for the (new) solicited-node groups. */
    UROCE_API void announce();

    UROCE_API const neigh_counters &counters() const;
    UROCE_API uint64_t drops(neigh_drop d) const;
    UROCE_API uint64_t drops_total() const;
    UROCE_API void dump_counters(FILE *f) const; /* non-zero counters and drops */

  private:
    /* Exported: the inline for_each() above calls it from the user's code. */
    UROCE_API void visit(void (*fn)(void *ctx, const neigh_entry_view &v), void *ctx) const;

    /* All state lives in the implementation, allocated once by the
     * constructor (like the cache table itself): nothing per packet. */
    std::unique_ptr<neigh_proto> p_;
};

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * Unit tests for lib/neigh: address/GID table, ARP/ND cache and timers, and
 * the ARP / ICMP / ICMPv6 / NS-NA responder. Requests and the exact expected
 * replies are built by scapy (gen_frames.py -> neigh_frames.h); checksums are
 * also re-verified with a naive RFC 1071 sum written here, independent of
 * DPDK's and of the code under test.
 */
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "neigh_frames.h"
#include "uroce_ip_addr.h"
#include "uroce_neigh.h"

using namespace uroce;
namespace nf = neigh_frames;
using bytes = std::vector<uint8_t>;

namespace {

rte_mempool *g_pool;

class eal_env : public ::testing::Environment {
  public:
    void SetUp() override {
        static const char *argv[] = {
            "uroce_neigh_test", "--no-huge",      "-m", "256", "--no-pci",
            "--no-shconf",      "--no-telemetry", "-l", "0",   "--log-level=*:warning"};
        int argc = int(std::size(argv));
        ASSERT_GE(rte_eal_init(argc, const_cast<char **>(argv)), 0);
        g_pool = rte_pktmbuf_pool_create("neigh_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                         SOCKET_ID_ANY);
        ASSERT_NE(g_pool, nullptr);
    }
};

const mac_addr ME{{0x02, 0, 0, 0, 0, 0x01}};
const mac_addr PEER{{0x02, 0, 0, 0, 0, 0x02}};
const mac_addr PEER2{{0x02, 0, 0, 0, 0, 0x03}};
const mac_addr PEER_NEW{{0x02, 0, 0, 0, 0, 0x22}};
const uint64_t S = 1'000'000'000ull;

gid G(const char *s) {
    auto g = gid::parse(s);
    EXPECT_TRUE(g.has_value()) << s;
    return g.value_or(gid{});
}

/* ---- independent checksum (RFC 1071, big-endian words, naive) */
uint32_t be_sum(const uint8_t *p, size_t n, uint32_t s = 0) {
    for (size_t i = 0; i + 1 < n; i += 2)
        s += uint32_t(p[i]) << 8 | p[i + 1];
    if (n & 1) s += uint32_t(p[n - 1]) << 8;
    return s;
}
uint16_t be_fold(uint32_t s) {
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}
/* The frame's IPv4 header and ICMP checksums verify (sum == 0xffff). */
void expect_ipv4_icmp_checksums_ok(const bytes &f, size_t l2 = 14) {
    size_t hl = (f[l2] & 0xf) * 4;
    size_t tl = size_t(f[l2 + 2]) << 8 | f[l2 + 3];
    EXPECT_EQ(be_fold(be_sum(&f[l2], hl)), 0xffff) << "IPv4 header checksum";
    EXPECT_EQ(be_fold(be_sum(&f[l2 + hl], tl - hl)), 0xffff) << "ICMP checksum";
}
/* ICMPv6 checksum over the RFC 8200 8.1 pseudo-header; ext = bytes of
 * extension headers (MLD's Hop-by-Hop) between IPv6 and ICMPv6. */
void expect_icmpv6_checksum_ok(const bytes &f, size_t l2 = 14, size_t ext = 0) {
    const uint8_t *ip = &f[l2];
    uint32_t plen = (uint32_t(ip[4]) << 8 | ip[5]) - uint32_t(ext);
    uint32_t s = be_sum(ip + 8, 32); /* src, dst */
    s += plen >> 16;                 /* upper-layer length, 32 bits */
    s += plen & 0xffff;
    s += 58; /* zero, next header */
    s = be_sum(ip + 40 + ext, plen, s);
    EXPECT_EQ(be_fold(s), 0xffff) << "ICMPv6 checksum";
}

rte_mbuf *mk(const bytes &b) {
    rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
    EXPECT_NE(m, nullptr);
    char *p = rte_pktmbuf_append(m, uint16_t(b.size()));
    if (b.size()) memcpy(p, b.data(), b.size());
    return m;
}
/* A chain: first segment first_len bytes, then seg_len-byte segments. */
rte_mbuf *mk_chain(const bytes &b, size_t first_len, size_t seg_len) {
    rte_mbuf *head = mk(bytes(b.begin(), b.begin() + std::min(first_len, b.size())));
    for (size_t off = first_len; off < b.size(); off += seg_len) {
        size_t n = std::min(seg_len, b.size() - off);
        rte_mbuf *s = mk(bytes(b.begin() + off, b.begin() + off + n));
        EXPECT_EQ(rte_pktmbuf_chain(head, s), 0);
    }
    return head;
}
/* An mbuf whose data lives in a heap buffer of exactly the frame's size
 * (no headroom, no tailroom): under ASan any read past the frame faults,
 * which DPDK's own pool memory would not show. */
void free_ext(void *addr, void *opaque) {
    std::free(addr);
    delete static_cast<rte_mbuf_ext_shared_info *>(opaque);
}
rte_mbuf *mk_exact(const bytes &b) {
    rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
    size_t len = std::max<size_t>(b.size(), 1);
    void *buf = std::malloc(len);
    if (b.size()) memcpy(buf, b.data(), b.size());
    auto *sh = new rte_mbuf_ext_shared_info{};
    sh->free_cb = free_ext;
    sh->fcb_opaque = sh;
    rte_mbuf_ext_refcnt_set(sh, 1);
    rte_pktmbuf_attach_extbuf(m, buf, rte_mem_virt2iova(buf), uint16_t(len), sh);
    m->data_off = 0;
    m->data_len = uint16_t(b.size());
    m->pkt_len = uint32_t(b.size());
    return m;
}

bytes to_bytes(const rte_mbuf *m) {
    bytes b(m->pkt_len);
    const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, b.data());
    if (p != b.data()) memcpy(b.data(), p, m->pkt_len);
    return b;
}

std::string hex(const bytes &b) {
    std::string s;
    char buf[4];
    for (size_t i = 0; i < b.size(); i++) {
        snprintf(buf, sizeof(buf), "%02x", b[i]);
        s += buf;
        if (i % 16 == 15)
            s += "\n";
        else
            s += " ";
    }
    return s;
}
#define EXPECT_FRAME(got, want) EXPECT_EQ(hex(got), hex(want))

struct event_log {
    struct ev {
        neigh_event e;
        gid ip;
        std::optional<mac_addr> mac;
    };
    std::vector<ev> v;
    static void cb(void *ctx, neigh_event e, const gid &ip, const mac_addr *mac) {
        static_cast<event_log *>(ctx)->v.push_back(
            {e, ip, mac ? std::optional(*mac) : std::nullopt});
    }
};

class NeighTest : public ::testing::Test {
  protected:
    local_addr_table addrs;
    neigh_config cfg;
    std::unique_ptr<neigh> n;
    event_log events;
    unsigned avail_before = 0;

    void SetUp() override {
        avail_before = rte_mempool_avail_count(g_pool);
        addrs.set_mac(ME);
        ASSERT_TRUE(addrs.add("10.99.0.1/24"));
        ASSERT_TRUE(addrs.add("fd00:99::1/64"));
        cfg.pool = g_pool;
        cfg.randomize_reachable = false;
        cfg.timer_granularity_ns = 0;
        cfg.announce_on_start = false; /* tests count poll() output exactly */
        cfg.mld = false;
        cfg.event_cb = event_log::cb;
        cfg.event_ctx = &events;
        make();
    }
    void make() { n = std::make_unique<neigh>(cfg, addrs); }
    void TearDown() override {
        n.reset();
        EXPECT_EQ(rte_mempool_avail_count(g_pool), avail_before) << "mbuf leak";
    }

    std::vector<bytes> collect(rte_mbuf **out, uint16_t k) {
        std::vector<bytes> r;
        for (uint16_t i = 0; i < k; i++) {
            r.push_back(to_bytes(out[i]));
            rte_pktmbuf_free(out[i]);
        }
        return r;
    }
    std::vector<bytes> rx(rte_mbuf *m) {
        rte_mbuf *out[4];
        uint16_t k = 0;
        n->process_burst(&m, 1, out, k);
        EXPECT_LE(k, 1);
        return collect(out, k);
    }
    std::vector<bytes> rx(const bytes &b) { return rx(mk(b)); }
    std::vector<bytes> poll(uint64_t now) {
        rte_mbuf *out[64];
        uint16_t k = 0;
        n->poll(now, out, k, 64);
        return collect(out, k);
    }
    neigh_state state(const char *ip) {
        auto v = n->lookup(G(ip));
        return v ? v->state : neigh_state::none;
    }
    void expect_dropped(const bytes &f, neigh_drop why) {
        uint64_t before = n->drops(why);
        auto out = rx(f);
        EXPECT_TRUE(out.empty());
        EXPECT_EQ(n->drops(why), before + 1) << "expected drop " << neigh_drop_name(why);
    }
};

} // namespace

/* ================================================================ address table */

TEST(LocalAddrTable, GidTableLikeRxe) {
    local_addr_table t;
    t.set_mac(ME);
    ASSERT_TRUE(t.add("10.99.0.1/24"));
    ASSERT_TRUE(t.add("fd00:99::1/64"));
    ASSERT_TRUE(t.add("10.98.0.1"));
    ASSERT_EQ(t.gid_count(), 4u);
    EXPECT_EQ(t.gid_at(0)->to_string(), "fe80::ff:fe00:1"); /* EUI-64, U/L bit flipped */
    EXPECT_EQ(t.gid_at(1)->to_string(), "::ffff:10.99.0.1");
    EXPECT_EQ(t.gid_at(2)->to_string(), "::ffff:10.98.0.1");
    EXPECT_EQ(t.gid_at(3)->to_string(), "fd00:99::1");
    EXPECT_FALSE(t.gid_at(4));
    EXPECT_EQ(t.gid_index(G("10.98.0.1")), 2);
    EXPECT_EQ(t.gid_index(G("10.98.0.2")), -1);
    t.set_mac(*mac_addr::parse("00:11:22:33:44:55"));
    EXPECT_EQ(t.gid_at(0)->to_string(), "fe80::211:22ff:fe33:4455");
    EXPECT_TRUE(t.remove(G("10.99.0.1")));
    EXPECT_EQ(t.gid_at(1)->to_string(), "::ffff:10.98.0.1");
    EXPECT_EQ(t.gid_count(), 3u);
}

TEST(LocalAddrTable, ParseAndReject) {
    local_addr_table t;
    t.set_mac(ME);
    EXPECT_FALSE(t.add("10.99.0.1/33"));
    EXPECT_FALSE(t.add("10.99.0.1/"));
    EXPECT_FALSE(t.add("10.99.0.1/2x"));
    EXPECT_FALSE(t.add("224.0.0.1"));
    EXPECT_FALSE(t.add("127.0.0.1"));
    EXPECT_FALSE(t.add("0.0.0.0"));
    EXPECT_FALSE(t.add("255.255.255.255"));
    EXPECT_FALSE(t.add("ff02::1"));
    EXPECT_FALSE(t.add("::"));
    EXPECT_FALSE(t.add("::1"));
    EXPECT_FALSE(t.add("fe80::1")); /* link-local is derived from the MAC */
    EXPECT_FALSE(t.add("bogus"));
    EXPECT_TRUE(t.add("10.99.0.1/24"));
    EXPECT_FALSE(t.add("10.99.0.1/16")); /* duplicate */
    EXPECT_TRUE(t.add("fd00:99::1/64"));
    EXPECT_FALSE(t.add("fd00:99::1/129"));
    EXPECT_TRUE(t.add("::ffff:10.97.0.1/120")); /* IPv6 notation of a mapped IPv4: /120 = /24 */
    EXPECT_EQ(t.ipv4_at(1).prefix_len, 24);
    EXPECT_TRUE(t.is_local_ipv4(0x0a630001));
    EXPECT_TRUE(t.is_local(G("fe80::ff:fe00:1")));
    EXPECT_TRUE(t.is_our_solicited_node(G("ff02::1:ff00:1").raw.data()));
    EXPECT_FALSE(t.is_our_solicited_node(G("ff02::1:ff00:2").raw.data()));
    /* source selection */
    EXPECT_EQ(*t.ipv4_source_for(0x0a610005), 0x0a610001u);
    EXPECT_EQ(*t.ipv4_source_for(0x08080808), 0x0a630001u);
    EXPECT_EQ(t.ipv6_source_for(G("fe80::5").raw.data()).to_string(), "fe80::ff:fe00:1");
    EXPECT_EQ(t.ipv6_source_for(G("fd00:99::5").raw.data()).to_string(), "fd00:99::1");
}

TEST(MacAddr, ParseFormat) {
    auto m = mac_addr::parse("02:AB:cd:0:1:ff");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->to_string(), "02:ab:cd:00:01:ff");
    EXPECT_TRUE(mac_addr::parse("02-00-00-00-00-01"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00:01:02"));
    EXPECT_FALSE(mac_addr::parse("02:00:00:00:00:1x"));
    EXPECT_FALSE(mac_addr::parse("020:00:00:00:00:01"));
    EXPECT_TRUE(mac_addr::broadcast().is_multicast());
    EXPECT_EQ(ipv6_link_local_from_mac(ME).to_string(), "fe80::ff:fe00:1");
    EXPECT_EQ(ipv6_solicited_node(G("fd00::12:3456").raw.data()).to_string(), "ff02::1:ff12:3456");
}

TEST(NeighNames, CountersAndDrops) {
    size_t k;
    const char *const *names = neigh_counter_names(k);
    EXPECT_EQ(k * sizeof(uint64_t), sizeof(neigh_counters));
    EXPECT_STREQ(names[0], "rx_frames");
    EXPECT_STREQ(neigh_drop_name(neigh_drop::bad_icmp_checksum), "bad_icmp_checksum");
    size_t kd;
    const char *const *descs = neigh_counter_descriptions(kd);
    EXPECT_EQ(kd, k);
    for (size_t i = 0; i < kd; i++)
        EXPECT_GT(strlen(descs[i]), 5u) << names[i];
    for (size_t i = 0; i < size_t(neigh_drop::count); i++)
        EXPECT_GT(strlen(neigh_drop_description(neigh_drop(i))), 5u)
            << neigh_drop_name(neigh_drop(i));
    EXPECT_STREQ(neigh_drop_name(neigh_drop::count), "?");
    EXPECT_STREQ(neigh_state_name(neigh_state::reachable), "REACHABLE");
}

/* ================================================================ ARP */

TEST_F(NeighTest, ArpRequestReplyExact) {
    auto out = rx(nf::arp_request);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_reply_expected); /* 60 bytes, zero padding: no junk echoed */
    EXPECT_EQ(n->counters().arp_rx_request, 1u);
    EXPECT_EQ(n->counters().arp_tx_reply, 1u);
    /* RFC 826 merge: the requester is learned (STALE: unconfirmed) */
    auto v = n->lookup(G("10.99.0.2"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(v->mac, PEER);
    EXPECT_EQ(n->counters().learned_new, 1u);
    EXPECT_TRUE(events.v.empty()); /* nobody was waiting for it */
}

TEST_F(NeighTest, ArpVlanTagKept) {
    auto out = rx(nf::arp_request_vlan);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_reply_vlan_expected);
}

TEST_F(NeighTest, HardwareStrippedVlanGoesBackOn) {
    rte_mbuf *m = mk(nf::arp_request);
    m->ol_flags |= RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED;
    m->vlan_tci = 0x6005;
    rte_mbuf *out[1];
    uint16_t k = 0;
    n->process_burst(&m, 1, out, k);
    ASSERT_EQ(k, 1);
    EXPECT_EQ(out[0]->ol_flags & (RTE_MBUF_F_TX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED),
              RTE_MBUF_F_TX_VLAN);
    EXPECT_EQ(out[0]->vlan_tci, 0x6005);
    EXPECT_FRAME(to_bytes(out[0]), nf::arp_reply_expected);
    rte_pktmbuf_free(out[0]);
}

TEST_F(NeighTest, RequestsCarryConfiguredVlan) {
    cfg.vlan_tci = uint16_t(3 << 13 | 5); /* PCP 3 (the usual RoCE priority), VID 5 */
    make();
    n->resolve(G("10.99.0.2"));
    n->resolve(G("fd00:99::2"));
    auto out = poll(0);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_FRAME(out[0], nf::arp_request_vlan_expected_out);
    EXPECT_FRAME(out[1], nf::ns_vlan_expected_out);
    expect_icmpv6_checksum_ok(out[1], 18);
}

TEST_F(NeighTest, AnnouncementsOnStart) {
    cfg.announce_on_start = true;
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_FRAME(out[0], nf::arp_announce_expected_out); /* RFC 5227 2.3 */
    EXPECT_FRAME(out[1], nf::una_ll_expected_out);       /* RFC 4861 7.2.6 */
    EXPECT_FRAME(out[2], nf::una_expected_out);
    expect_icmpv6_checksum_ok(out[1]);
    expect_icmpv6_checksum_ok(out[2]);
    EXPECT_TRUE(poll(S).empty());
    EXPECT_EQ(poll(2 * S).size(), 3u); /* ANNOUNCE_NUM 2, ANNOUNCE_INTERVAL 2 s */
    EXPECT_TRUE(poll(10 * S).empty());
    EXPECT_EQ(n->counters().arp_tx_announce, 2u);
    EXPECT_EQ(n->counters().nd_tx_unsolicited_na, 4u);
    /* explicit re-announce; a tx array too small for a whole round waits */
    n->announce();
    rte_mbuf *o[3];
    uint16_t k = 0;
    n->poll(11 * S, o, k, 2);
    EXPECT_EQ(k, 0);
    n->poll(11 * S + 1, o, k, 3);
    EXPECT_EQ(k, 3);
    rte_pktmbuf_free_bulk(o, k);
}

TEST_F(NeighTest, ArpProbeAnsweredNotLearned) {
    auto out = rx(nf::arp_probe);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_probe_reply_expected);
    EXPECT_EQ(n->counters().arp_rx_probe, 1u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, ArpNotForUs) {
    expect_dropped(nf::arp_request_other, neigh_drop::not_for_us);
    EXPECT_EQ(n->size(), 0u); /* RFC 826: not for us and unknown -> not added */
}

TEST_F(NeighTest, GratuitousArpLearning) {
    /* Unknown sender, arp_accept off (RFC 826 / Linux default): not added. */
    auto out = rx(nf::garp_peer2);
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(n->counters().arp_rx_gratuitous, 1u);
    EXPECT_EQ(n->size(), 0u);

    /* Known sender: the merge updates its MAC (RFC 826) -> STALE, event "changed". */
    rx(nf::arp_request); /* learns 10.99.0.2 = PEER */
    ASSERT_EQ(n->lookup(G("10.99.0.2"))->mac, PEER);
    out = rx(nf::garp_peer_new_mac);
    EXPECT_TRUE(out.empty());
    auto v = n->lookup(G("10.99.0.2"));
    EXPECT_EQ(v->mac, PEER_NEW);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(n->counters().learned_changed, 1u);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::changed);
    EXPECT_EQ(*events.v[0].mac, PEER_NEW);
}

TEST_F(NeighTest, GratuitousArpAcceptCreates) {
    cfg.arp_accept = true;
    make();
    rx(nf::garp_peer2);
    auto v = n->lookup(G("10.99.0.3"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->mac, PEER2);
    EXPECT_EQ(v->state, neigh_state::stale);
}

TEST_F(NeighTest, ArpConflictAndMalformed) {
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(n->counters().address_conflicts, 1u);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::address_conflict);
    EXPECT_EQ(events.v[0].ip, G("10.99.0.1"));
    EXPECT_EQ(*events.v[0].mac, PEER);
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(events.v.size(), 1u); /* rate-limited: 1 event/s */
    poll(2 * S);
    expect_dropped(nf::garp_claims_ours, neigh_drop::address_conflict);
    EXPECT_EQ(events.v.size(), 2u);
    events.v.clear();
    expect_dropped(nf::arp_bad_hrd, neigh_drop::bad_arp);
    expect_dropped(nf::arp_bad_op, neigh_drop::bad_arp);
    bytes t(nf::arp_request.begin(), nf::arp_request.begin() + 40);
    expect_dropped(t, neigh_drop::truncated);
    expect_dropped(bytes(nf::arp_request.begin(), nf::arp_request.begin() + 10),
                   neigh_drop::truncated);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, ResolveArp) {
    EXPECT_FALSE(n->resolve(G("10.99.0.2")));
    EXPECT_EQ(n->counters().cache_misses, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::incomplete);
    auto out = poll(100);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_request_expected_out);
    EXPECT_FALSE(n->resolve(G("10.99.0.2"))); /* still pending: no second request */
    EXPECT_EQ(n->counters().resolve_pending, 1u);
    EXPECT_TRUE(poll(200).empty());

    EXPECT_TRUE(rx(nf::arp_reply_to_us).empty());
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::resolved);
    EXPECT_EQ(events.v[0].ip, G("10.99.0.2"));
    EXPECT_EQ(*events.v[0].mac, PEER);
    auto mac = n->resolve(G("10.99.0.2"));
    ASSERT_TRUE(mac);
    EXPECT_EQ(*mac, PEER);
    EXPECT_EQ(n->counters().cache_hits, 1u);
    EXPECT_EQ(n->counters().resolutions, 1u);
}

TEST_F(NeighTest, ResolveTimeoutAndRetransmit) {
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002));
    EXPECT_EQ(poll(0).size(), 1u);     /* t=0: first request */
    EXPECT_EQ(poll(S / 2).size(), 0u); /* not yet */
    EXPECT_EQ(poll(S).size(), 1u);     /* RETRANS_TIMER */
    EXPECT_EQ(poll(2 * S).size(), 1u); /* 3rd = MAX_MULTICAST_SOLICIT */
    EXPECT_EQ(n->counters().arp_tx_request, 3u);
    EXPECT_EQ(poll(3 * S).size(), 0u); /* gives up */
    EXPECT_EQ(n->counters().resolution_timeouts, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::failed);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::failed);
    EXPECT_FALSE(events.v[0].mac);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002)); /* hold-down: no storm */
    EXPECT_EQ(n->counters().resolve_failed, 1u);
    EXPECT_EQ(poll(3 * S + S / 2).size(), 0u);
    poll(4 * S); /* failed_hold over: entry removed */
    EXPECT_EQ(n->size(), 0u);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630002)); /* a fresh attempt */
    EXPECT_EQ(poll(4 * S + 1).size(), 1u);
}

TEST_F(NeighTest, CacheTimeoutsReachableStaleDelayProbe) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    ASSERT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(30 * S - 1);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(30 * S); /* REACHABLE_TIME */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_EQ(n->counters().reachable_timeouts, 1u);
    /* use: the stale MAC is returned and DELAY starts (RFC 4861 7.3.3) */
    EXPECT_EQ(*n->resolve(G("10.99.0.2")), PEER);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::delay);
    EXPECT_TRUE(poll(34 * S).empty());
    auto out = poll(35 * S); /* DELAY_FIRST_PROBE_TIME: unicast probe */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::arp_unicast_probe_expected_out);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::probe);
    EXPECT_EQ(poll(36 * S).size(), 1u);
    EXPECT_EQ(poll(37 * S).size(), 1u);
    EXPECT_TRUE(poll(38 * S).empty()); /* MAX_UNICAST_SOLICIT unanswered: deleted */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(n->counters().probe_failures, 1u);
    ASSERT_FALSE(events.v.empty());
    EXPECT_EQ(events.v.back().e, neigh_event::failed);
}

TEST_F(NeighTest, ProbeAnsweredAndStaleGc) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    poll(30 * S);
    n->resolve(G("10.99.0.2"));
    poll(35 * S); /* probe sent */
    rx(nf::arp_reply_to_us);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    /* unused stale entries are collected after stale_gc */
    poll(65 * S); /* reachable expires at 35+30 */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    poll(125 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(n->counters().stale_gc, 1u);
}

TEST_F(NeighTest, ConfirmKeepsReachable) {
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    poll(20 * S);
    n->confirm(G("10.99.0.2"));
    poll(30 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
    poll(50 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_EQ(n->counters().confirmations, 1u);
}

TEST_F(NeighTest, RandomizedReachableTime) {
    cfg.randomize_reachable = true;
    make();
    n->resolve(G("10.99.0.2"));
    poll(0);
    rx(nf::arp_reply_to_us);
    auto v = n->lookup(G("10.99.0.2"));
    EXPECT_GE(v->deadline_ns, 15 * S);
    EXPECT_LT(v->deadline_ns, 45 * S);
}

TEST_F(NeighTest, ResolveSpecialAddresses) {
    EXPECT_EQ(*n->resolve(G("255.255.255.255")), mac_addr::broadcast());
    EXPECT_EQ(n->resolve(G("224.0.0.251"))->to_string(), "01:00:5e:00:00:fb");
    EXPECT_EQ(n->resolve(G("239.255.1.2"))->to_string(), "01:00:5e:7f:01:02");
    EXPECT_EQ(n->resolve(G("ff02::1:ff00:2"))->to_string(), "33:33:ff:00:00:02");
    EXPECT_EQ(*n->resolve(G("10.99.0.1")), ME);
    EXPECT_EQ(*n->resolve(G("fe80::ff:fe00:1")), ME);
    EXPECT_FALSE(n->resolve(G("0.0.0.0")));
    EXPECT_FALSE(n->resolve(G("::")));
    EXPECT_FALSE(n->resolve(G("127.0.0.1")));
    EXPECT_EQ(n->counters().resolve_invalid, 3u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, StaticEntries) {
    EXPECT_TRUE(n->add_static(G("10.99.0.2"), PEER));
    EXPECT_EQ(*n->resolve(G("10.99.0.2")), PEER);
    rx(nf::garp_peer_new_mac); /* learning never overrides a static entry */
    EXPECT_EQ(n->lookup(G("10.99.0.2"))->mac, PEER);
    poll(1000 * S);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::permanent);
    n->flush();
    EXPECT_EQ(n->size(), 1u);
    EXPECT_TRUE(n->remove(G("10.99.0.2")));
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, CacheFullAndEviction) {
    cfg.max_entries = 4;
    make();
    for (int i = 2; i <= 5; i++)
        n->resolve_ipv4(0x0a630000 + i);
    EXPECT_EQ(n->size(), 4u);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630006)); /* all INCOMPLETE: nothing evictable */
    EXPECT_EQ(n->counters().cache_full, 1u);
    poll(0);
    /* learning when full is skipped, never evicts */
    rx(nf::garp_peer2);
    /* a STALE entry is evictable by resolve() */
    ASSERT_TRUE(n->remove(G("10.99.0.2")));
    rx(nf::arp_request); /* 10.99.0.2 learned STALE */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::stale);
    EXPECT_FALSE(n->resolve_ipv4(0x0a630007));
    EXPECT_EQ(n->counters().evictions, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::none);
    EXPECT_EQ(state("10.99.0.7"), neigh_state::incomplete);
}

TEST_F(NeighTest, ManyEntriesHashChains) {
    cfg.max_entries = 3000;
    make();
    for (uint32_t i = 0; i < 3000; i++)
        n->resolve_ipv4(0x0b000000 + i * 7919);
    EXPECT_EQ(n->size(), 3000u);
    for (uint32_t i = 0; i < 3000; i += 3)
        ASSERT_TRUE(n->remove(gid::from_ipv4(0x0b000000 + i * 7919)));
    for (uint32_t i = 0; i < 3000; i++)
        ASSERT_EQ(bool(n->lookup(gid::from_ipv4(0x0b000000 + i * 7919))), i % 3 != 0) << i;
    n->flush();
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, SendOrHoldReleasedOnResolution) {
    rte_mbuf *out[8];
    uint16_t k = 0;
    bytes frame(nf::icmp_echo.begin(), nf::icmp_echo.end());
    EXPECT_FALSE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k));
    EXPECT_FALSE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k)); /* replaces the older one */
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->counters().held_dropped, 1u);
    auto o = poll(0);
    ASSERT_EQ(o.size(), 1u); /* just the ARP request */
    rx(nf::arp_reply_to_us);
    o = poll(1);
    ASSERT_EQ(o.size(), 1u);
    EXPECT_EQ(mac_addr::from_bytes(o[0].data()), PEER);
    EXPECT_EQ(n->counters().held_sent, 1u);
    EXPECT_TRUE(n->send_or_hold(mk(frame), G("10.99.0.2"), out, k));
    ASSERT_EQ(k, 1);
    rte_pktmbuf_free(out[0]);
}

TEST_F(NeighTest, HeldFrameFreedOnFailure) {
    rte_mbuf *out[8];
    uint16_t k = 0;
    n->send_or_hold(mk(nf::icmp_echo), G("10.99.0.2"), out, k);
    for (uint64_t t = 0; t <= 3; t++)
        poll(t * S);
    EXPECT_EQ(n->counters().held_dropped, 1u);
    EXPECT_EQ(state("10.99.0.2"), neigh_state::failed);
}

TEST_F(NeighTest, TxCapDefersRequests) {
    n->resolve_ipv4(0x0a630002);
    n->resolve_ipv4(0x0a630003);
    rte_mbuf *out[2];
    uint16_t k = 0;
    n->poll(0, out, k, 1);
    EXPECT_EQ(k, 1);
    n->poll(1, out, k, 2);
    EXPECT_EQ(k, 2);
    rte_pktmbuf_free_bulk(out, k);
}

TEST_F(NeighTest, NoPoolNoRequests) {
    cfg.pool = nullptr;
    make();
    n->resolve_ipv4(0x0a630002);
    EXPECT_TRUE(poll(0).empty());
    EXPECT_EQ(n->counters().tx_alloc_fail, 1u);
    rx(nf::arp_reply_to_us); /* passive learning still resolves */
    EXPECT_EQ(state("10.99.0.2"), neigh_state::reachable);
}

/* ================================================================ ICMP */

TEST_F(NeighTest, IcmpEchoReplyExact) {
    auto out = rx(nf::icmp_echo);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
    EXPECT_EQ(n->counters().icmp_rx_echo_request, 1u);
    EXPECT_EQ(n->counters().icmp_tx_echo_reply, 1u);
    EXPECT_EQ(n->size(), 0u); /* ICMP does not populate the cache */
}

TEST_F(NeighTest, IcmpEchoOddLength) {
    auto out = rx(nf::icmp_echo_odd);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_odd_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoEthernetPaddingNotEchoed) {
    auto out = rx(nf::icmp_echo_small);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_small_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoIpOptionsStripped) {
    auto out = rx(nf::icmp_echo_options);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_options_reply_expected);
    expect_ipv4_icmp_checksums_ok(out[0]);
}

TEST_F(NeighTest, IcmpEchoChainedOddSegments) {
    for (size_t seg : {1, 3, 7, 16}) {
        make();
        auto out = rx(mk_chain(nf::icmp_echo, 43, seg));
        ASSERT_EQ(out.size(), 1u) << seg;
        EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
        expect_ipv4_icmp_checksums_ok(out[0]);
    }
    /* headers split across segments: counted, not parsed */
    expect_dropped(bytes(), neigh_drop::truncated);
    rte_mbuf *m = mk_chain(nf::icmp_echo, 30, 64);
    rte_mbuf *out[2];
    uint16_t k = 0;
    n->process_burst(&m, 1, out, k);
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->drops(neigh_drop::headers_split), 1u);
}

TEST_F(NeighTest, IcmpDrops) {
    expect_dropped(nf::icmp_echo_bad_icmp_csum, neigh_drop::bad_icmp_checksum);
    expect_dropped(nf::icmp_echo_bad_ip_csum, neigh_drop::bad_ip_checksum);
    expect_dropped(nf::icmp_echo_fragment, neigh_drop::ip_fragment);
    expect_dropped(nf::icmp_echo_not_us, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_echo_broadcast, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_echo_other_mac, neigh_drop::not_for_us);
    expect_dropped(nf::icmp_dest_unreach, neigh_drop::unsupported_type);
    expect_dropped(nf::udp_to_us, neigh_drop::unsupported_type);
    bytes t(nf::icmp_echo.begin(), nf::icmp_echo.end() - 1); /* IP length beyond frame */
    expect_dropped(t, neigh_drop::truncated);
    bytes v = nf::icmp_echo;
    v[14] = 0x55; /* version 5 */
    expect_dropped(v, neigh_drop::bad_ip_header);
    bytes src_mc = nf::icmp_echo;
    src_mc[6] = 0x03; /* group bit in the source MAC */
    expect_dropped(src_mc, neigh_drop::bad_source);
    bytes et = nf::icmp_echo;
    et[12] = 0x88;
    et[13] = 0xb5;
    expect_dropped(et, neigh_drop::unsupported_ethertype);
    EXPECT_EQ(n->counters().icmp_tx_echo_reply, 0u);
}

/* ================================================================ ICMPv6 */

TEST_F(NeighTest, Icmpv6EchoReplyExact) {
    auto out = rx(nf::icmp6_echo);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    out = rx(nf::icmp6_echo_ll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_ll_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().icmpv6_tx_echo_reply, 2u);
}

TEST_F(NeighTest, Icmpv6EchoAllNodesRepliesFromUnicast) {
    auto out = rx(nf::icmp6_echo_allnodes);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_allnodes_reply_expected);
    expect_icmpv6_checksum_ok(out[0]);
    cfg.icmpv6_multicast_echo = false;
    make();
    expect_dropped(nf::icmp6_echo_allnodes, neigh_drop::not_for_us);
}

TEST_F(NeighTest, Icmpv6EchoChained) {
    auto out = rx(mk_chain(nf::icmp6_echo, 63, 5));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp6_echo_reply_expected);
}

TEST_F(NeighTest, Icmpv6Drops) {
    expect_dropped(nf::icmp6_echo_bad_csum, neigh_drop::bad_icmp_checksum);
    expect_dropped(nf::icmp6_echo_not_us, neigh_drop::not_for_us);
    expect_dropped(nf::icmp6_echo_hbh, neigh_drop::unsupported_ext_hdr);
    expect_dropped(nf::router_solicit, neigh_drop::unsupported_type);
    bytes t(nf::icmp6_echo.begin(), nf::icmp6_echo.end() - 3);
    expect_dropped(t, neigh_drop::truncated);
}

/* ================================================================ ND */

TEST_F(NeighTest, NsToNaExact) {
    auto out = rx(nf::ns);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected); /* S=1 O=1 R=0, TLLA = our MAC */
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().nd_rx_ns, 1u);
    EXPECT_EQ(n->counters().nd_tx_na, 1u);
    /* RFC 4861 7.2.3: sender learned from its SLLA as STALE */
    auto v = n->lookup(G("fd00:99::2"));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, neigh_state::stale);
    EXPECT_EQ(v->mac, PEER);
}

TEST_F(NeighTest, NsForLinkLocal) {
    auto out = rx(nf::ns_ll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_ll_expected);
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(state("fe80::ff:fe00:2"), neigh_state::stale);
}

TEST_F(NeighTest, NsUnicastWithoutSlla) {
    auto out = rx(nf::ns_unicast_nosll);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected); /* answered to the Ethernet source */
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, NsDadDefended) {
    auto out = rx(nf::ns_dad);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_dad_expected); /* to ff02::1, S=0 (RFC 4861 7.2.4) */
    expect_icmpv6_checksum_ok(out[0]);
    EXPECT_EQ(n->counters().nd_rx_ns_dad, 1u);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, NsInvalid) {
    expect_dropped(nf::ns_hop64, neigh_drop::bad_hop_limit);
    expect_dropped(nf::ns_optlen0, neigh_drop::bad_nd);
    expect_dropped(nf::ns_other_target, neigh_drop::not_for_us);
    expect_dropped(nf::ns_dad_with_sll, neigh_drop::bad_nd);
    bytes bad = nf::ns;
    bad.back() ^= 1; /* checksum no longer matches */
    expect_dropped(bad, neigh_drop::bad_icmp_checksum);
    EXPECT_EQ(n->size(), 0u);
}

TEST_F(NeighTest, ResolveNdAndNaRules) {
    EXPECT_FALSE(n->resolve(G("fd00:99::2")));
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::ns_expected_out);
    expect_icmpv6_checksum_ok(out[0]);

    EXPECT_TRUE(rx(nf::na_from_peer).empty());
    EXPECT_EQ(state("fd00:99::2"), neigh_state::reachable);
    EXPECT_EQ(*n->resolve(G("fd00:99::2")), PEER);
    ASSERT_EQ(events.v.size(), 1u);
    EXPECT_EQ(events.v[0].e, neigh_event::resolved);

    /* O=0 with a different MAC: not applied; REACHABLE -> STALE (7.2.5) */
    rx(nf::na_unsolicited_no_override);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::stale);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER);
    /* O=1, S=0, different MAC: applied, STALE, event changed */
    rx(nf::na_unsolicited_override_new);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER_NEW);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::stale);
    ASSERT_EQ(events.v.size(), 2u);
    EXPECT_EQ(events.v[1].e, neigh_event::changed);
    /* solicited NA confirms */
    rx(nf::na_from_peer);
    EXPECT_EQ(state("fd00:99::2"), neigh_state::reachable);
    EXPECT_EQ(n->lookup(G("fd00:99::2"))->mac, PEER);

    expect_dropped(nf::na_mcast_solicited, neigh_drop::bad_nd);
    expect_dropped(nf::na_claims_ours, neigh_drop::address_conflict);
    ASSERT_FALSE(events.v.empty());
    EXPECT_EQ(events.v.back().e, neigh_event::address_conflict);
    EXPECT_EQ(events.v.back().ip, G("fd00:99::1"));
    EXPECT_EQ(*events.v.back().mac, PEER);
}

TEST_F(NeighTest, NdProbeIsUnicast) {
    n->resolve(G("fd00:99::2"));
    poll(0);
    rx(nf::na_from_peer);
    poll(30 * S);
    n->resolve(G("fd00:99::2"));
    auto out = poll(35 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::ns_unicast_probe_expected_out);
    expect_icmpv6_checksum_ok(out[0]);
}

TEST_F(NeighTest, NaWithoutEntryIgnored) {
    EXPECT_TRUE(rx(nf::na_from_peer).empty());
    EXPECT_EQ(n->counters().nd_rx_na_ignored, 1u);
    EXPECT_EQ(n->size(), 0u); /* NA never creates entries */
    EXPECT_EQ(n->drops_total(), 0u);
}

/* ================================================================ MLD */

TEST_F(NeighTest, MldJoinRetransmitAndRefresh) {
    cfg.mld = true;
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    /* one record: the link-local and fd00:99::1 share ff02::1:ff00:1 */
    EXPECT_FRAME(out[0], nf::mld_join_expected_out);
    expect_icmpv6_checksum_ok(out[0], 14, 8); /* behind the 8-byte Hop-by-Hop header */
    EXPECT_TRUE(poll(S / 2).empty());
    out = poll(S); /* [Robustness Variable] 2, [Unsolicited Report Interval] 1 s */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_join_expected_out);
    EXPECT_TRUE(poll(30 * S).empty());
    out = poll(61 * S); /* refresh: current state */
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    EXPECT_EQ(n->counters().mld_tx_report, 3u);
}

TEST_F(NeighTest, MldGroupsFollowAddresses) {
    cfg.mld = true;
    ASSERT_TRUE(addrs.add("fd00:99::1:2345/64"));
    make();
    auto out = poll(0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_join_two_groups_expected_out);
}

TEST_F(NeighTest, MldQueriesAnswered) {
    cfg.mld = true;
    cfg.mld_refresh_ns = 0;
    make();
    poll(0);
    poll(S); /* the two joins */
    EXPECT_TRUE(rx(nf::mldv2_query).empty());
    EXPECT_EQ(n->counters().mld_rx_query, 1u);
    auto out = poll(2 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    /* group-specific: ours answered, another group's not */
    rx(nf::mldv2_query_other_group);
    EXPECT_TRUE(poll(3 * S).empty());
    rx(nf::mldv2_query_our_group);
    EXPECT_EQ(poll(4 * S).size(), 1u);
    /* an MLDv1 querier: answer in MLDv1, one report per group, to the group */
    rx(nf::mldv1_query);
    out = poll(5 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mldv1_report_expected_out);
    EXPECT_EQ(n->counters().mld_rx_query_v1, 1u);
    /* still MLDv1 mode for the next queries, until 260 s without v1 queries */
    rx(nf::mldv2_query);
    out = poll(6 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mldv1_report_expected_out);
    rx(nf::mldv2_query);
    out = poll(5 * S + 261 * S);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::mld_current_expected_out);
    EXPECT_EQ(n->drops_total(), 0u);
}

TEST_F(NeighTest, MldInvalidAndForeign) {
    cfg.mld = true;
    make();
    poll(0);
    expect_dropped(nf::mldv2_query_hop64, neigh_drop::bad_mld);
    expect_dropped(nf::mldv2_query_global_src, neigh_drop::bad_mld);
    EXPECT_TRUE(rx(nf::mldv2_report_other).empty());
    EXPECT_EQ(n->counters().mld_rx_other, 1u);
    bytes bad = nf::mldv2_query;
    bad.back() ^= 0x40;
    expect_dropped(bad, neigh_drop::bad_icmp_checksum);
    EXPECT_EQ(n->counters().mld_rx_query, 0u);
}

TEST_F(NeighTest, MldOffSendsNothing) {
    cfg.mld = false;
    make();
    EXPECT_TRUE(poll(0).empty());
    rx(nf::mldv2_query);
    EXPECT_TRUE(poll(S).empty());
}

/* ================================================================ bursts and robustness */

TEST_F(NeighTest, EngineClassification) {
    for (const bytes *f : {&nf::arp_request, &nf::arp_request_vlan, &nf::icmp_echo, &nf::icmp6_echo,
                           &nf::ns, &nf::na_from_peer, &nf::router_solicit}) {
        rte_mbuf *m = mk(*f);
        EXPECT_TRUE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    /* MLD behind a Hop-by-Hop header is ours too (echo behind one is then
     * counted as unsupported_ext_hdr) */
    for (const bytes *f : {&nf::mldv2_query, &nf::mldv1_query, &nf::icmp6_echo_hbh}) {
        rte_mbuf *m = mk(*f);
        EXPECT_TRUE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    /* UDP (RoCEv2 goes to the transport), runts */
    for (const bytes *f : {&nf::udp_to_us}) {
        rte_mbuf *m = mk(*f);
        EXPECT_FALSE(neigh::is_neigh_frame(m));
        rte_pktmbuf_free(m);
    }
    rte_mbuf *m = mk(bytes(nf::icmp_echo.begin(), nf::icmp_echo.begin() + 20));
    EXPECT_FALSE(neigh::is_neigh_frame(m));
    rte_pktmbuf_free(m);
}

TEST_F(NeighTest, MixedBurstKeepsOrder) {
    const bytes *in[] = {&nf::arp_request,  &nf::icmp_echo_bad_icmp_csum,
                         &nf::icmp_echo,    &nf::udp_to_us,
                         &nf::icmp6_echo,   &nf::ns,
                         &nf::na_from_peer, &nf::ns_dad};
    const bytes *want[] = {&nf::arp_reply_expected, &nf::icmp_echo_reply_expected,
                           &nf::icmp6_echo_reply_expected, &nf::na_expected, &nf::na_dad_expected};
    rte_mbuf *m[8], *out[8];
    for (int i = 0; i < 8; i++)
        m[i] = mk(*in[i]);
    uint16_t k = 0;
    n->process_burst(m, 8, out, k);
    ASSERT_EQ(k, 5);
    auto got = collect(out, k);
    for (int i = 0; i < 5; i++)
        EXPECT_FRAME(got[i], *want[i]);
    EXPECT_EQ(n->counters().rx_frames, 8u);
    EXPECT_EQ(n->drops_total(), 2u);
}

TEST_F(NeighTest, BigBurstFreesInBulk) {
    std::vector<rte_mbuf *> m(200), out(200);
    for (auto &x : m)
        x = mk(nf::icmp_echo_not_us);
    uint16_t k = 0;
    n->process_burst(m.data(), 200, out.data(), k);
    EXPECT_EQ(k, 0);
    EXPECT_EQ(n->drops(neigh_drop::not_for_us), 200u);
}

/* Every frame, every truncation, and random corruption: never a crash or a
 * leak, and every frame is either answered, consumed or counted as a drop. */
TEST_F(NeighTest, MalformedNeverCrashes) {
    const bytes *all[] = {&nf::arp_request,
                          &nf::arp_request_vlan,
                          &nf::arp_reply_to_us,
                          &nf::garp_peer2,
                          &nf::icmp_echo,
                          &nf::icmp_echo_options,
                          &nf::icmp_echo_small,
                          &nf::icmp6_echo,
                          &nf::icmp6_echo_allnodes,
                          &nf::ns,
                          &nf::ns_dad,
                          &nf::na_from_peer,
                          &nf::na_unsolicited_override_new,
                          &nf::icmp6_echo_hbh,
                          &nf::mldv2_query,
                          &nf::mldv1_query,
                          &nf::mldv2_report_other};
    std::mt19937 rng(12345);
    uint64_t replies = 0, inputs = 0;
    for (const bytes *f : all) {
        for (size_t len = 0; len <= f->size(); len++) {
            replies += rx(bytes(f->begin(), f->begin() + len)).size();
            inputs++;
        }
        for (int r = 0; r < 300; r++) {
            bytes b = *f;
            int flips = 1 + int(rng() % 4);
            for (int i = 0; i < flips; i++)
                b[rng() % b.size()] = uint8_t(rng());
            if (rng() % 3 == 0) b.resize(rng() % (b.size() + 1));
            replies += rx(b).size();
            inputs++;
        }
        n->resolve(G("fd00:99::2"));
        n->resolve(G("10.99.0.2"));
        for (auto &x : poll(n->now() + S))
            (void)x;
    }
    EXPECT_EQ(n->counters().rx_frames, inputs);
    EXPECT_LE(replies + n->drops_total(), inputs);
    EXPECT_GT(n->drops(neigh_drop::truncated), 0u);
    EXPECT_GT(n->drops(neigh_drop::bad_icmp_checksum), 0u);
    /* replies were all well-formed enough to carry our MAC as the source */
}

/* A frame still referenced elsewhere (refcnt 2, e.g. kept for capture) is
 * answered from a copy; the shared original is untouched. */
TEST_F(NeighTest, SharedMbufNotWrittenInPlace) {
    rte_mbuf *m = mk(nf::icmp_echo);
    rte_mbuf_refcnt_update(m, 1);
    auto out = rx(m);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    EXPECT_EQ(n->counters().rx_shared_copied, 1u);
    EXPECT_FRAME(to_bytes(m), nf::icmp_echo);
    EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
    rte_pktmbuf_free(m);
    /* a clone (indirect mbuf) of a still-held frame */
    rte_mbuf *orig = mk(nf::ns);
    rte_mbuf *clone = rte_pktmbuf_clone(orig, g_pool);
    ASSERT_NE(clone, nullptr);
    out = rx(clone);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected);
    EXPECT_FRAME(to_bytes(orig), nf::ns);
    rte_pktmbuf_free(orig);
}

/* The same sweep with every frame in an exactly-sized heap buffer (see
 * mk_exact): bounds are enforced by ASan in the sanitizer build. Replies
 * that need room past the request are dropped as no_room, never written. */
TEST_F(NeighTest, MalformedExactBuffers) {
    const bytes *all[] = {&nf::arp_request,    &nf::arp_request_vlan,    &nf::arp_probe,
                          &nf::icmp_echo,      &nf::icmp_echo_options,   &nf::icmp_echo_small,
                          &nf::icmp6_echo,     &nf::icmp6_echo_allnodes, &nf::ns,
                          &nf::ns_dad,         &nf::ns_unicast_nosll,    &nf::na_from_peer,
                          &nf::icmp6_echo_hbh, &nf::mldv2_query,         &nf::mldv1_query};
    std::mt19937 rng(777);
    n->resolve(G("fd00:99::2"));
    n->resolve(G("10.99.0.2"));
    poll(0);
    for (const bytes *f : all) {
        for (size_t len = 0; len <= f->size(); len++)
            rx(mk_exact(bytes(f->begin(), f->begin() + len)));
        for (int r = 0; r < 200; r++) {
            bytes b = *f;
            for (int i = 0; i < 3; i++)
                b[rng() % b.size()] = uint8_t(rng());
            rx(mk_exact(b));
        }
    }
    /* full-size requests are still answered from an exact buffer when the
     * reply is no longer than the request (fresh instance: IP id 0) */
    EXPECT_GT(n->drops(neigh_drop::truncated), 0u);
    make();
    auto out = rx(mk_exact(nf::icmp_echo));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::icmp_echo_reply_expected);
    out = rx(mk_exact(nf::ns));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FRAME(out[0], nf::na_expected);
}

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new eal_env);
    return RUN_ALL_TESTS();
}

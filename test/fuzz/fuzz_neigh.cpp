/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the neighbour code's receive path, neigh::process_burst
 * (ARP, IPv4 ICMP echo, ICMPv6 echo, NS/NA, MLD queries; any other frame
 * is counted and freed), with its cache and timers driven by resolve() and
 * poll() in between.
 *
 * Per input, a fresh neigh with MAC 02:00:00:00:00:01, 10.99.0.1/24 and
 * fd00:99::1/64 (the addresses of test/neigh's scapy frames, which seed
 * it). The first input byte picks the configuration (arp_accept, MLD,
 * a VLAN tag for our requests, ICMPv6 multicast echo, announcements);
 * then records [flags][len lo][len hi][len bytes of a frame], each frame
 * handed to process_burst alone. Flags: bits 0-2 let 10^(bits) ms pass
 * and poll() (timers, requests, announcements); bit 3 resolves 10.99.0.2,
 * bit 4 fd00:99::2 (INCOMPLETE entries, so replies and NAs have something
 * to complete); bit 5 parks a frame on the entry (send_or_hold); bit 6
 * hands the frame in shared (refcnt 2: answered from a copy); bit 7 splits
 * it into two segments after its first 14..45 bytes.
 *
 * Oracle (besides ASan/UBSan): every input mbuf is consumed (at most one
 * reply each; tx_out never grows by more than the burst); every frame it
 * sends comes from our MAC, and its IPv4 header, ICMP and ICMPv6 checksums
 * verify (an independent RFC 1071 sum here); an ARP reply names our MAC and
 * one of our addresses; a shared input is not modified; destroying the neigh
 * gives every mbuf back to the pool.
 */
#include <vector>

#include "fuzz_common.h"
#include <uroce/neigh.h>

namespace uroce::fuzz {
namespace {

const mac_addr me{{0x02, 0, 0, 0, 0, 0x01}};

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

/* A frame the neigh sends: well-formed as far as we can tell from here. */
void check_sent(rte_mbuf *m) {
    std::vector<uint8_t> f(rte_pktmbuf_pkt_len(m));
    const void *p = rte_pktmbuf_read(m, 0, uint32_t(f.size()), f.data());
    FUZZ_REQUIRE(p != nullptr || f.empty());
    if (p && p != f.data()) std::memcpy(f.data(), p, f.size());
    FUZZ_REQUIRE(f.size() >= 14);
    FUZZ_REQUIRE(std::memcmp(&f[6], me.b.data(), 6) == 0);
    size_t l2 = 14;
    uint16_t et = uint16_t(f[12] << 8 | f[13]);
    if (et == 0x8100) {
        FUZZ_REQUIRE(f.size() >= 18);
        et = uint16_t(f[16] << 8 | f[17]);
        l2 = 18;
    }
    if (et == 0x0806) {
        FUZZ_REQUIRE(f.size() >= l2 + 28);
        FUZZ_REQUIRE(std::memcmp(&f[l2 + 8], me.b.data(), 6) == 0); /* sender MAC */
        uint32_t spa = uint32_t(f[l2 + 14]) << 24 | f[l2 + 15] << 16 | f[l2 + 16] << 8 | f[l2 + 17];
        FUZZ_REQUIRE(spa == 0x0a630001 || spa == 0);
    } else if (et == 0x0800) {
        FUZZ_REQUIRE(f.size() >= l2 + 20);
        const uint8_t *ip = &f[l2];
        size_t hl = size_t(ip[0] & 0xf) * 4;
        size_t tl = size_t(ip[2]) << 8 | ip[3];
        FUZZ_REQUIRE(ip[0] >> 4 == 4 && hl >= 20 && tl >= hl && l2 + tl <= f.size());
        FUZZ_REQUIRE(be_fold(be_sum(ip, hl)) == 0xffff);
        if (ip[9] == 1) FUZZ_REQUIRE(be_fold(be_sum(ip + hl, tl - hl)) == 0xffff);
    } else if (et == 0x86dd) {
        FUZZ_REQUIRE(f.size() >= l2 + 40);
        const uint8_t *ip = &f[l2];
        size_t plen = size_t(ip[4]) << 8 | ip[5];
        FUZZ_REQUIRE(l2 + 40 + plen <= f.size());
        size_t off = 40;
        uint8_t nh = ip[6];
        if (nh == 0) { /* MLD reports: Hop-by-Hop first */
            FUZZ_REQUIRE(plen >= 8);
            nh = ip[40];
            off += size_t(ip[41] + 1) * 8;
            FUZZ_REQUIRE(off <= 40 + plen);
        }
        FUZZ_REQUIRE(nh == 58);
        uint32_t icmp_len = uint32_t(40 + plen - off);
        uint32_t s = be_sum(ip + 8, 32);
        s += icmp_len >> 16;
        s += icmp_len & 0xffff;
        s += 58;
        s = be_sum(ip + off, icmp_len, s);
        FUZZ_REQUIRE(be_fold(s) == 0xffff);
    } else {
        std::fprintf(stderr, "fuzz_neigh: sent a frame of EtherType %04x\n", et);
        std::abort();
    }
}

void run(const uint8_t *data, size_t size) {
    byte_reader in(data, size);
    const uint8_t c = in.u8();
    local_addr_table addrs;
    addrs.set_mac(me);
    FUZZ_REQUIRE(addrs.add("10.99.0.1/24"));
    FUZZ_REQUIRE(addrs.add("fd00:99::1/64"));
    neigh_config cfg;
    cfg.max_entries = 16;
    cfg.pool = eal_pool();
    cfg.randomize_reachable = c & 1;
    cfg.arp_accept = c & 2;
    cfg.mld = c & 4;
    if (c & 8) cfg.vlan_tci = 0x6005;
    cfg.icmpv6_multicast_echo = !(c & 16);
    cfg.announce_on_start = c & 32;
    cfg.timer_granularity_ns = c & 64 ? 0 : 10'000'000;
    cfg.seed = 1;
    neigh nb(cfg, addrs);

    uint64_t now = 1'000'000'000;
    rte_mbuf *out[64];
    auto poll = [&] {
        uint16_t n_tx = 0;
        nb.poll(now, out, n_tx, 64);
        FUZZ_REQUIRE(n_tx <= 64);
        for (uint16_t i = 0; i < n_tx; i++) {
            check_sent(out[i]);
            rte_pktmbuf_free(out[i]);
        }
    };
    poll();
    uint64_t handed = 0;
    for (int records = 0; !in.empty() && records < 64; records++) {
        const uint8_t flags = in.u8();
        size_t len = in.u16();
        const uint8_t *frame = in.take(len);
        if (flags & 7) {
            uint64_t step = 1'000'000;
            for (int i = 1; i < (flags & 7); i++)
                step *= 10;
            now += step;
            poll();
        }
        if (flags & 8) (void)nb.resolve_ipv4(0x0a630002);
        if (flags & 16) (void)nb.resolve(*gid::parse("fd00:99::2"));
        if (flags & 32) {
            uint16_t n_tx = 0;
            /* a frame of ours (the caller fills the source MAC; the neigh
             * the destination once resolved): IPv4, ICMP echo reply, checksummed */
            uint8_t held[14 + 28] = {};
            std::memcpy(held + 6, me.b.data(), 6);
            held[12] = 0x08;
            static const uint8_t ip[28] = {0x45, 0,  0, 28, 0,  0,  0, 0, 64, 1, 0x66, 0x19,
                                           10,   99, 0, 1,  10, 99, 0, 2, 0,  0, 0xff, 0xff};
            std::memcpy(held + 14, ip, sizeof ip);
            rte_mbuf *h = mbuf_of(held, sizeof held);
            if (nb.send_or_hold(h, gid::from_ipv4(0x0a630002), out, n_tx)) {
                FUZZ_REQUIRE(n_tx == 1);
                rte_pktmbuf_free(out[0]);
            } else {
                FUZZ_REQUIRE(n_tx == 0);
            }
        }
        rte_mbuf *m =
            flags & 128 ? split_mbuf(frame, len, 14 + size_t(flags & 31)) : mbuf_of(frame, len);
        if (!m) continue;
        /* a shared frame: the neigh must answer from a copy */
        std::vector<uint8_t> before;
        if (flags & 64) {
            /* a reference on every segment, as a capture clone holds them
             * (rte_pktmbuf_free drops one per segment) */
            for (rte_mbuf *s = m; s; s = s->next)
                rte_mbuf_refcnt_update(s, 1);
            before.assign(rte_pktmbuf_mtod(m, uint8_t *),
                          rte_pktmbuf_mtod(m, uint8_t *) + m->data_len);
        }
        (void)neigh::is_neigh_frame(m);
        uint16_t n_tx = 0;
        rte_mbuf *burst[1] = {m};
        nb.process_burst(burst, 1, out, n_tx);
        handed++;
        FUZZ_REQUIRE(n_tx <= 1);
        FUZZ_REQUIRE(nb.counters().rx_frames == handed);
        for (uint16_t i = 0; i < n_tx; i++) {
            check_sent(out[i]);
            rte_pktmbuf_free(out[i]);
        }
        if (flags & 64) {
            for (rte_mbuf *s = m; s; s = s->next)
                FUZZ_REQUIRE(rte_mbuf_refcnt_read(s) == 1);
            FUZZ_REQUIRE(m->data_len == before.size());
            FUZZ_REQUIRE(before.empty() || std::memcmp(rte_pktmbuf_mtod(m, uint8_t *),
                                                       before.data(), before.size()) == 0);
            rte_pktmbuf_free(m);
        }
    }
    poll();
    (void)nb.drops_total();
}

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce::fuzz;
    if (size > 65536) return 0;
    rte_mempool *pool = eal_pool();
    const unsigned avail0 = rte_mempool_avail_count(pool);
    run(data, size);
    if (rte_mempool_avail_count(pool) != avail0) {
        std::fprintf(stderr, "fuzz_neigh: %d mbufs leaked\n",
                     int(avail0) - int(rte_mempool_avail_count(pool)));
        std::abort();
    }
    return 0;
}

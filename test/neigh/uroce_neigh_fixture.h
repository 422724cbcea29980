/* SPDX-License-Identifier: BSD-3-Clause
 * Shared by the lib/neigh unit tests (one binary per lib/neigh source, each
 * with uroce_neigh_test_main.cpp): EAL and the mbuf pool, frames in and out
 * of mbufs (contiguous, chained, exactly sized), an RFC 1071 checksum
 * written here independently of DPDK's and of the code under test, and the
 * NeighTest fixture (a neigh with 10.99.0.1/24 and fd00:99::1/64, an event
 * log, and an mbuf-leak check after every test). Requests and the exact
 * expected replies come from scapy (gen_frames.py -> neigh_frames.h).
 */
#ifndef UROCE_NEIGH_FIXTURE_H
#define UROCE_NEIGH_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "neigh_frames.h"
#include <uroce/neigh.h>

namespace uroce::neigh_test {

namespace nf = neigh_frames;
using bytes = std::vector<uint8_t>;

inline rte_mempool *g_pool;

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

inline const mac_addr ME{{0x02, 0, 0, 0, 0, 0x01}};
inline const mac_addr PEER{{0x02, 0, 0, 0, 0, 0x02}};
inline const mac_addr PEER2{{0x02, 0, 0, 0, 0, 0x03}};
inline const mac_addr PEER_NEW{{0x02, 0, 0, 0, 0, 0x22}};
inline const uint64_t S = 1'000'000'000ull;

inline gid G(const char *s) {
    auto g = gid::parse(s);
    EXPECT_TRUE(g.has_value()) << s;
    return g.value_or(gid{});
}

/* ---- independent checksum (RFC 1071, big-endian words, naive) */
inline uint32_t be_sum(const uint8_t *p, size_t n, uint32_t s = 0) {
    for (size_t i = 0; i + 1 < n; i += 2)
        s += uint32_t(p[i]) << 8 | p[i + 1];
    if (n & 1) s += uint32_t(p[n - 1]) << 8;
    return s;
}
inline uint16_t be_fold(uint32_t s) {
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}
/* The frame's IPv4 header and ICMP checksums verify (sum == 0xffff). */
inline void expect_ipv4_icmp_checksums_ok(const bytes &f, size_t l2 = 14) {
    size_t hl = (f[l2] & 0xf) * 4;
    size_t tl = size_t(f[l2 + 2]) << 8 | f[l2 + 3];
    EXPECT_EQ(be_fold(be_sum(&f[l2], hl)), 0xffff) << "IPv4 header checksum";
    EXPECT_EQ(be_fold(be_sum(&f[l2 + hl], tl - hl)), 0xffff) << "ICMP checksum";
}
/* ICMPv6 checksum over the RFC 8200 8.1 pseudo-header; ext = bytes of
 * extension headers (MLD's Hop-by-Hop) between IPv6 and ICMPv6. */
inline void expect_icmpv6_checksum_ok(const bytes &f, size_t l2 = 14, size_t ext = 0) {
    const uint8_t *ip = &f[l2];
    uint32_t plen = (uint32_t(ip[4]) << 8 | ip[5]) - uint32_t(ext);
    uint32_t s = be_sum(ip + 8, 32); /* src, dst */
    s += plen >> 16;                 /* upper-layer length, 32 bits */
    s += plen & 0xffff;
    s += 58; /* zero, next header */
    s = be_sum(ip + 40 + ext, plen, s);
    EXPECT_EQ(be_fold(s), 0xffff) << "ICMPv6 checksum";
}

inline rte_mbuf *mk(const bytes &b) {
    rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
    EXPECT_NE(m, nullptr);
    char *p = rte_pktmbuf_append(m, uint16_t(b.size()));
    if (b.size()) memcpy(p, b.data(), b.size());
    return m;
}
/* A chain: first segment first_len bytes, then seg_len-byte segments. */
inline rte_mbuf *mk_chain(const bytes &b, size_t first_len, size_t seg_len) {
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
inline void free_ext(void *addr, void *opaque) {
    std::free(addr);
    delete static_cast<rte_mbuf_ext_shared_info *>(opaque);
}
inline rte_mbuf *mk_exact(const bytes &b) {
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

inline bytes to_bytes(const rte_mbuf *m) {
    bytes b(m->pkt_len);
    const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, b.data());
    if (p != b.data()) memcpy(b.data(), p, m->pkt_len);
    return b;
}

inline std::string hex(const bytes &b) {
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

} // namespace uroce::neigh_test

#endif

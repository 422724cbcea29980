/* SPDX-License-Identifier: BSD-3-Clause
 * Tests for the RoCEv2 ICRC (lib/icrc/uroce_icrc.h): published vectors,
 * an IPv6 vector, every RoCE packet of the golden rxe captures, a naive
 * reference on random IPv4 (all IHLs) / IPv6 packets, the incremental API,
 * and rte_mbuf chains with random segmentation.
 */
#include <gtest/gtest.h>
#include <zlib.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <random>
#include <string>
#include <vector>

#include <uroce/crc32.h>
#include <uroce/icrc.h>

#ifndef UROCE_ICRC_GOLDEN_DIR
#error "UROCE_ICRC_GOLDEN_DIR must point at test/golden"
#endif

namespace uroce {
namespace {

using bytes = std::vector<uint8_t>;

bytes from_hex(const std::string &s) {
    bytes out;
    int hi = -1;
    for (char c : s) {
        int v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else
            continue; /* spaces, separators */
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(static_cast<uint8_t>(hi << 4 | v));
            hi = -1;
        }
    }
    return out;
}

/* Naive reference, straight from the definition (IBTA A17.3.3): prefix of
 * 8 x 0xFF, masked copy of IP/UDP/BTH, the rest, zlib crc32. Masks only the
 * bytes that are present (for runts). */
uint32_t icrc_reference(const uint8_t *ip, size_t len) {
    bytes m(8, 0xFF);
    m.insert(m.end(), ip, ip + len);
    uint8_t *h = m.data() + 8;
    auto set = [&](size_t off, uint8_t mask) {
        if (off < len) h[off] |= mask;
    };
    size_t l4;
    if (len && (ip[0] >> 4) == 6) {
        set(0, 0x0F);
        set(1, 0xFF);
        set(2, 0xFF);
        set(3, 0xFF);
        set(7, 0xFF);
        l4 = 40;
    } else {
        const size_t ihl = len ? std::max<size_t>(ip[0] & 0x0F, 5) : 5;
        set(1, 0xFF);
        set(8, 0xFF);
        set(10, 0xFF);
        set(11, 0xFF);
        l4 = 4 * ihl;
    }
    set(l4 + 6, 0xFF);
    set(l4 + 7, 0xFF);
    set(l4 + 8 + 4, 0xFF);
    return static_cast<uint32_t>(crc32(0, m.data(), static_cast<uInt>(m.size())));
}

/* Runs a body once per supported engine, restoring the active one. */
template <typename F> void for_each_path(F &&body) {
    const crc32_path saved = crc32_active_path();
    for (crc32_path p :
         {crc32_path::scalar, crc32_path::clmul, crc32_path::vclmul, crc32_path::vclmul512}) {
        if (!crc32_set_path(p)) continue;
        SCOPED_TRACE(crc32_path_name(p));
        body();
    }
    crc32_set_path(saved);
}

TEST(icrc, seed_is_register_after_eight_ff) {
    const uint8_t ff[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    EXPECT_EQ(crc32_update_scalar(~0u, ff, 8), icrc_seed);
    EXPECT_EQ(icrc_seed, 0xdebb20e3u);
}

/* Vector 1: scapy test/contrib/roce.uts "RoCE layer", IPv4 UC SEND_ONLY,
 * IP header through ICRC (also in test/golden/published-vectors.pcap). */
TEST(icrc, vector1_scapy_uc_send_only) {
    const bytes pkt =
        from_hex("45010040 04784000 4011b4d5 c0a80007 c0a80007 c00012b7 002c0000"
                 "2460ffff 000000d3 00cf1710 4630818b e28935d9 0e9a9550 5401be88 5e500000"
                 "78f353f3");
    ASSERT_EQ(pkt.size(), 0x40u);
    const size_t len = pkt.size() - 4;
    EXPECT_EQ(icrc_read_wire(pkt.data() + len), 0xf353f378u);
    for_each_path([&] { EXPECT_EQ(icrc_compute(pkt.data(), len), 0xf353f378u); });
    EXPECT_EQ(icrc_reference(pkt.data(), len), 0xf353f378u);
}

/* Vector 2: a CNP captured on a ConnectX-4 Lx (same .uts), full frame.
 * TOS 0xC2 and BECN set: both masked. */
TEST(icrc, vector2_connectx4_cnp) {
    const bytes frame = from_hex("e41d2dab2bc2 7cfe90643b32 0800"
                                 "45c2003c718c40004011 9161 0a001101 0a001201"
                                 "0000 12b7 0028 0000"
                                 "81 00 ffff 40 000118 00 000000"
                                 "00000000000000000000000000000000"
                                 "82fd002a");
    const uint8_t *ip = frame.data() + 14;
    const size_t len = frame.size() - 14 - 4;
    EXPECT_EQ(icrc_read_wire(ip + len), 0x2a00fd82u);
    for_each_path([&] { EXPECT_EQ(icrc_compute(ip, len), 0x2a00fd82u); });
}

/* IPv6 RC SEND_ONLY (TC 0x5a, flow label 0xabcde, hop limit 64, FECN set,
 * 13 payload bytes + 3 pad). Built with scapy 2.5 (IPv6/UDP/BTH/Raw); scapy's
 * BTH.compute_icrc only supports IPv4, so the ICRC was computed independently
 * in Python with zlib.crc32 over 8 x 0xFF + the packet with TC, flow label,
 * hop limit, UDP checksum and BTH byte 4 set to ones -- the fields rxe_icrc.c
 * masks for IPv6 (priority=0xf, flow_lbl[]=0xff, hop_limit=0xff). */
TEST(icrc, vector3_ipv6_rc_send_only) {
    const bytes pkt =
        from_hex("65aabcde00281140fe80000000000000505400fffe123456fe80000000000000505400fffe654321"
                 "c12312b70028739d"
                 "04f0ffff800001238000abcd"
                 "4142434445464748494a4b4c4d000000"
                 "0e672da4");
    ASSERT_EQ(pkt.size(), 80u);
    const size_t len = pkt.size() - 4;
    EXPECT_EQ(icrc_read_wire(pkt.data() + len), 0xa42d670eu);
    for_each_path([&] { EXPECT_EQ(icrc_compute(pkt.data(), len), 0xa42d670eu); });
    EXPECT_EQ(icrc_reference(pkt.data(), len), 0xa42d670eu);
}

/* IPv4 with a Record Route option (IHL 7), RC RDMA_WRITE_ONLY with RETH,
 * BECN set; ICRC computed by scapy 2.5's own BTH.compute_icrc (which copies
 * the whole IP header, options included). */
TEST(icrc, vector4_ipv4_options_scapy) {
    const bytes pkt = from_hex("47020058123440003f1102520a0000010a000002070704010203040"
                               "0d00d12b7003c3d47"
                               "0a60ffff4000001180123456"
                               "00000000deadbeef1122334400000012"
                               "000102030405060708090a0b0c0d0e0f10110000"
                               "7e3f23e7");
    ASSERT_EQ(pkt.size(), 88u);
    const size_t len = pkt.size() - 4;
    EXPECT_EQ(icrc_read_wire(pkt.data() + len), 0xe7233f7eu);
    for_each_path([&] { EXPECT_EQ(icrc_compute(pkt.data(), len), 0xe7233f7eu); });
}

TEST(icrc, wire_helpers_little_endian) {
    uint8_t b[4];
    icrc_write_wire(b, 0xf353f378u);
    EXPECT_EQ(b[0], 0x78);
    EXPECT_EQ(b[1], 0xf3);
    EXPECT_EQ(b[2], 0x53);
    EXPECT_EQ(b[3], 0xf3);
    EXPECT_EQ(icrc_read_wire(b), 0xf353f378u);
}

/* --- golden captures --- */

struct roce_frame {
    std::string where;
    bytes data;
    size_t l3;   /* IP header offset */
    size_t icrc; /* ICRC field offset */
};

/* Minimal classic-pcap reader (Ethernet link type, optional 802.1Q). Keeps
 * UDP/4791 frames; the IP length (not the frame length, which may include
 * Ethernet padding) places the ICRC. */
std::vector<roce_frame> load_roce_frames(const std::string &path) {
    std::vector<roce_frame> out;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return out;
    uint8_t gh[24];
    if (std::fread(gh, 1, 24, f) != 24) {
        std::fclose(f);
        return out;
    }
    const bool swapped = gh[0] == 0xa1; /* a1b2c3d4 / a1b23c4d written big-endian */
    auto u32 = [&](const uint8_t *p) {
        return swapped ? (uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3])
                       : (uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]);
    };
    auto be16 = [](const uint8_t *p) { return static_cast<size_t>(p[0] << 8 | p[1]); };
    unsigned idx = 0;
    uint8_t rh[16];
    while (std::fread(rh, 1, 16, f) == 16) {
        const uint32_t caplen = u32(rh + 8);
        bytes d(caplen);
        if (std::fread(d.data(), 1, caplen, f) != caplen) break;
        idx++;
        if (d.size() < 14) continue;
        size_t off = 12;
        size_t et = be16(&d[off]);
        off += 2;
        while ((et == 0x8100 || et == 0x88a8) && d.size() >= off + 4) {
            et = be16(&d[off + 2]);
            off += 4;
        }
        const size_t l3 = off;
        size_t l4, ip_end;
        if (et == 0x0800 && d.size() >= l3 + 20 && d[l3 + 9] == 17) {
            l4 = l3 + 4 * (d[l3] & 0x0F);
            ip_end = l3 + be16(&d[l3 + 2]);
        } else if (et == 0x86DD && d.size() >= l3 + 40 && d[l3 + 6] == 17) {
            l4 = l3 + 40;
            ip_end = l3 + 40 + be16(&d[l3 + 4]);
        } else {
            continue;
        }
        if (d.size() < l4 + 8 || be16(&d[l4 + 2]) != 4791 || ip_end > d.size() ||
            ip_end < l4 + 8 + 12 + 4)
            continue;
        out.push_back({path + " frame " + std::to_string(idx), std::move(d), l3, ip_end - 4});
    }
    std::fclose(f);
    return out;
}

std::vector<roce_frame> all_golden_frames() {
    std::vector<roce_frame> all;
    const std::string dir = UROCE_ICRC_GOLDEN_DIR;
    DIR *d = opendir(dir.c_str());
    if (!d) return all;
    std::vector<std::string> names;
    while (dirent *e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".pcap") == 0) names.push_back(n);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto &n : names) {
        auto v = load_roce_frames(dir + "/" + n);
        all.insert(all.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
    }
    return all;
}

/* Every RoCE packet in the rxe captures carries a correct ICRC. */
TEST(icrc, golden_captures_all_match) {
    const auto frames = all_golden_frames();
    ASSERT_GE(frames.size(), 691u) << "golden captures missing in " << UROCE_ICRC_GOLDEN_DIR;
    for_each_path([&] {
        for (const auto &fr : frames) {
            const uint8_t *ip = fr.data.data() + fr.l3;
            const size_t len = fr.icrc - fr.l3;
            ASSERT_EQ(icrc_compute(ip, len), icrc_read_wire(fr.data.data() + fr.icrc)) << fr.where;
        }
    });
}

/* --- random packets against the naive reference --- */

bytes random_packet(std::mt19937_64 &rng, bool v6, unsigned ihl, size_t payload) {
    const size_t ip_len = v6 ? 40 : 4 * ihl;
    bytes p(ip_len + 8 + 12 + payload);
    for (auto &b : p)
        b = static_cast<uint8_t>(rng());
    p[0] = v6 ? static_cast<uint8_t>(0x60 | (p[0] & 0x0F)) : static_cast<uint8_t>(0x40 | ihl);
    return p;
}

TEST(icrc, random_packets_vs_reference) {
    std::mt19937_64 rng(2024);
    for_each_path([&] {
        for (int i = 0; i < 3000; i++) {
            const bool v6 = rng() & 1;
            const unsigned ihl = 5 + static_cast<unsigned>(rng() % 11);
            const size_t payload = (i % 3 == 0) ? rng() % 4200 : rng() % 200;
            const bytes p = random_packet(rng, v6, ihl, payload);
            ASSERT_EQ(icrc_compute(p.data(), p.size()), icrc_reference(p.data(), p.size()))
                << (v6 ? "v6" : "v4") << " ihl " << ihl << " len " << p.size();
        }
    });
}

/* Every length around the one-call/two-call boundary and the 16-byte phases,
 * and runts shorter than the headers (defined but meaningless values). */
/* --- a deferred check: icrc_check_begin, _copy, _place, _settle --- */

/* A received frame's check, folded in random pieces: its own payload copied
 * out (icrc_check_copy) and, as the next frame of a burst, while another
 * buffer is placed (icrc_check_place, which folds at most up to the end of
 * the payload). The verdict is good on the intact frame, bad with any one
 * byte flipped that the ICRC covers, and every copy is exact. */
TEST(icrc_check, copy_place_and_settle) {
    std::mt19937_64 rng(515);
    for_each_path([&] {
        for (int i = 0; i < 400; i++) {
            const bool v6 = rng() & 1;
            const size_t payload = 1 + rng() % 4200, pad = rng() % 4;
            bytes f = random_packet(rng, v6, 5, payload + pad);
            const size_t hdr = (v6 ? 40 : 20) + 8 + 12;
            const uint32_t crc = icrc_compute(f.data(), f.size());
            f.resize(f.size() + 4); /* the ICRC field */
            icrc_write_wire(f.data() + f.size() - 4, crc);
            const int flip =
                int(rng() % 3) - 1; /* -1: intact; 0: in the payload; 1: in the pad or ICRC */
            if (flip == 0) f[hdr + rng() % payload] ^= 0x20;
            if (flip == 1) f[hdr + payload + rng() % (pad + 4)] ^= 0x01;

            icrc_check c;
            icrc_check_begin(c, f.data(), hdr, uint32_t(payload), uint32_t(pad));
            ASSERT_TRUE(c.pending);
            bytes placed_src(3000), placed(3000), own(payload);
            for (auto &b : placed_src)
                b = static_cast<uint8_t>(rng());
            /* first as the next frame: placements of random sizes fold it */
            size_t at = 0;
            const size_t ahead = rng() % (payload + 1);
            while (c.done < ahead) {
                const uint32_t n = uint32_t(1 + rng() % 1500);
                const uint32_t before = c.done;
                if (at + n > placed.size()) at = 0; /* n <= 1500: fits from 0 */
                icrc_check_place(c, placed.data() + at, placed_src.data() + at, n);
                ASSERT_EQ(std::memcmp(placed.data() + at, placed_src.data() + at, n), 0);
                ASSERT_EQ(c.done, std::min<uint32_t>(before + n, uint32_t(payload)));
                at += n;
            }
            /* then as the frame being received: its payload copied out in pieces */
            uint32_t off = 0;
            while (off < payload) {
                const uint32_t n = uint32_t(1 + rng() % (payload - off));
                icrc_check_copy(c, off, own.data() + off, n);
                off += n;
            }
            ASSERT_EQ(std::memcmp(own.data(), f.data() + hdr, payload), 0);
            ASSERT_EQ(icrc_check_settle(c), flip < 0) << "payload " << payload << " flip " << flip;
            ASSERT_FALSE(c.pending);
            ASSERT_EQ(icrc_check_settle(c), flip < 0); /* settled once, same verdict */
        }
    });
}

TEST(icrc, all_lengths_and_runts) {
    std::mt19937_64 rng(77);
    for_each_path([&] {
        for (bool v6 : {false, true}) {
            for (unsigned ihl : {5u, 6u, 15u}) {
                if (v6 && ihl != 5) continue;
                const bytes full = random_packet(rng, v6, ihl, 400);
                for (size_t len = 0; len <= full.size(); len++) {
                    /* An exact-size heap copy: ASan catches any over-read. */
                    uint8_t *p = new uint8_t[len ? len : 1];
                    std::memcpy(p, full.data(), len);
                    const uint32_t got = icrc_compute(p, len);
                    delete[] p;
                    ASSERT_EQ(got, icrc_reference(full.data(), len))
                        << "v6 " << v6 << " ihl " << ihl << " len " << len;
                }
            }
        }
    });
}

TEST(icrc, masked_fields_do_not_matter_others_do) {
    std::mt19937_64 rng(3);
    for (bool v6 : {false, true}) {
        bytes p = random_packet(rng, v6, 5, 100);
        const uint32_t base = icrc_compute(p.data(), p.size());
        const std::vector<std::pair<size_t, uint8_t>> masked =
            v6 ? std::vector<std::pair<size_t, uint8_t>>{{0, 0x0F},  {1, 0xFF}, {2, 0xFF},
                                                         {3, 0xFF},  {7, 0xFF}, {46, 0xFF},
                                                         {47, 0xFF}, {52, 0xFF}}
               : std::vector<std::pair<size_t, uint8_t>>{{1, 0xFF},  {8, 0xFF},  {10, 0xFF},
                                                         {11, 0xFF}, {26, 0xFF}, {27, 0xFF},
                                                         {32, 0xFF}};
        for (auto [off, m] : masked) {
            bytes q = p;
            q[off] ^= m;
            EXPECT_EQ(icrc_compute(q.data(), q.size()), base) << "v6 " << v6 << " off " << off;
        }
        /* Flipping any unmasked bit changes the ICRC. Byte 0 (version/IHL)
         * is left alone except for one IHL bit on IPv4 (IHL 5 -> 4, which the
         * masking treats as 5). */
        for (size_t off = 0; off < p.size(); off++) {
            uint8_t m = 0xFF;
            for (auto [mo, mm] : masked)
                if (mo == off) m = static_cast<uint8_t>(~mm);
            if (off == 0) m = v6 ? 0 : 0x01;
            if (!m) continue;
            bytes q = p;
            q[off] ^= m;
            EXPECT_NE(icrc_compute(q.data(), q.size()), base) << "v6 " << v6 << " off " << off;
        }
    }
}

TEST(icrc, incremental_matches_one_shot) {
    std::mt19937_64 rng(11);
    for_each_path([&] {
        for (int i = 0; i < 500; i++) {
            const bool v6 = rng() & 1;
            const unsigned ihl = 5 + static_cast<unsigned>(rng() % 11);
            const bytes p = random_packet(rng, v6, ihl, rng() % 3000);
            const size_t hdr = (v6 ? 40 : 4 * ihl) + 20;
            const size_t first = hdr + rng() % (p.size() - hdr + 1);
            icrc_state s = icrc_begin(p.data(), first);
            size_t pos = first;
            while (pos < p.size()) {
                const size_t n = std::min<size_t>(p.size() - pos, 1 + rng() % 700);
                icrc_update(s, p.data() + pos, n);
                pos += n;
            }
            ASSERT_EQ(icrc_finish(s), icrc_compute(p.data(), p.size()))
                << "len " << p.size() << " first " << first;
        }
    });
}

/* --- rte_mbuf chains --- */

rte_mempool *g_pool = nullptr;

/* EAL can be initialised once per process (never again, even after
 * rte_eal_cleanup), so it lives in a global environment with fixed
 * arguments -- never gtest's argv. */
class eal_environment : public ::testing::Environment {
  public:
    void SetUp() override {
        const char *args[] = {"uroce_icrc_test", "--no-huge", "-m", "256", "--no-pci",
                              "--no-shconf", "--no-telemetry", "-l", "0", "--log-level=*:warning",
                              /* DPDK's x86 default (256) would keep vpclmulqdq-avx512 out of
                               * for_each_path. */
                              "--force-max-simd-bitwidth=512"};
        std::vector<char *> argv;
        for (const char *a : args)
            argv.push_back(const_cast<char *>(a));
        if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
            std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
            return;
        }
        g_pool = rte_pktmbuf_pool_create("icrc_test_pool", 8191, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                         SOCKET_ID_ANY);
        if (!g_pool) std::fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
    }
    void TearDown() override {
        if (g_pool) rte_mempool_free(g_pool);
        g_pool = nullptr;
        rte_eal_cleanup();
    }
};

[[maybe_unused]] ::testing::Environment *const g_eal_env =
    ::testing::AddGlobalTestEnvironment(new eal_environment);

/* Splits 'frame' into a chain of segments of random sizes (1..max_seg). */
rte_mbuf *make_chain(const bytes &frame, std::mt19937_64 &rng, size_t max_seg) {
    rte_mbuf *head = nullptr;
    size_t pos = 0;
    do {
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        if (!m) {
            rte_pktmbuf_free(head);
            return nullptr;
        }
        const size_t seg = std::min<size_t>(1 + rng() % max_seg, rte_pktmbuf_tailroom(m));
        const size_t n = std::min<size_t>(frame.size() - pos, seg);
        char *dst = rte_pktmbuf_append(m, static_cast<uint16_t>(n));
        if (!dst) {
            rte_pktmbuf_free(m);
            rte_pktmbuf_free(head);
            return nullptr;
        }
        std::memcpy(dst, frame.data() + pos, n);
        pos += n;
        if (!head)
            head = m;
        else if (rte_pktmbuf_chain(head, m) != 0) {
            rte_pktmbuf_free(m);
            rte_pktmbuf_free(head);
            return nullptr;
        }
    } while (pos < frame.size());
    return head;
}

TEST(icrc_mbuf, random_chains_match_linear) {
    ASSERT_NE(g_pool, nullptr) << "EAL/mempool not initialised";
    std::mt19937_64 rng(31337);
    for (int i = 0; i < 2000; i++) {
        const bool v6 = rng() & 1;
        const unsigned ihl = (rng() % 4) ? 5 : 5 + static_cast<unsigned>(rng() % 11);
        const size_t l3 = (rng() % 3) ? 14 : rng() % 40; /* Ethernet, or any prefix */
        bytes frame(l3);
        for (auto &b : frame)
            b = static_cast<uint8_t>(rng());
        bytes ip = random_packet(rng, v6, ihl, rng() % 4500);
        frame.insert(frame.end(), ip.begin(), ip.end());
        frame.insert(frame.end(), {0x11, 0x22, 0x33, 0x44}); /* ICRC field (not covered) */
        const size_t max_seg = (i % 4 == 0) ? 7 : (i % 4 == 1) ? 64 : (i % 4 == 2) ? 512 : 2048;
        rte_mbuf *m = make_chain(frame, rng, max_seg);
        ASSERT_NE(m, nullptr);
        const uint32_t icrc_off = static_cast<uint32_t>(frame.size() - 4);
        ASSERT_EQ(m->pkt_len, frame.size());
        const uint32_t want = icrc_compute(ip.data(), ip.size());
        EXPECT_EQ(icrc_compute_mbuf(m, static_cast<uint32_t>(l3), icrc_off), want)
            << "v6 " << v6 << " ihl " << ihl << " len " << frame.size() << " segs " << m->nb_segs;
        rte_pktmbuf_free(m);
    }
}

TEST(icrc_mbuf, golden_frames_single_and_chained) {
    ASSERT_NE(g_pool, nullptr) << "EAL/mempool not initialised";
    std::mt19937_64 rng(8);
    const auto frames = all_golden_frames();
    ASSERT_FALSE(frames.empty());
    for (const auto &fr : frames) {
        /* The frame as captured (Ethernet padding, if any, after the ICRC). */
        for (size_t max_seg : {size_t(4096), size_t(16 + rng() % 100)}) {
            rte_mbuf *m = make_chain(fr.data, rng, max_seg);
            ASSERT_NE(m, nullptr);
            EXPECT_EQ(
                icrc_compute_mbuf(m, static_cast<uint32_t>(fr.l3), static_cast<uint32_t>(fr.icrc)),
                icrc_read_wire(fr.data.data() + fr.icrc))
                << fr.where << " segs " << m->nb_segs;
            rte_pktmbuf_free(m);
        }
    }
}

TEST(icrc_mbuf, offsets_are_clamped) {
    ASSERT_NE(g_pool, nullptr);
    std::mt19937_64 rng(1);
    bytes frame = random_packet(rng, false, 5, 30);
    rte_mbuf *m = make_chain(frame, rng, 16);
    ASSERT_NE(m, nullptr);
    /* icrc_offset beyond pkt_len: clamped to pkt_len (covers everything). */
    EXPECT_EQ(icrc_compute_mbuf(m, 0, 100000), icrc_compute(frame.data(), frame.size()));
    /* l3 beyond the ICRC: empty span, the seed only. */
    EXPECT_EQ(icrc_compute_mbuf(m, 50, 10), ~icrc_seed);
    rte_pktmbuf_free(m);
}

} // namespace
} // namespace uroce

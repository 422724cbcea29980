/* SPDX-License-Identifier: BSD-3-Clause
 * The capture writer's files read back with libpcap and with tshark.
 */
#include <gtest/gtest.h>

#include <pcap/pcap.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "eal_env.h"
#include "pcap_frames.h"
#include <uroce/capture.h>

namespace uroce {
namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new test::eal_env("128"));

std::string temp_path(const char *name) {
    return std::string(::testing::TempDir()) + "/uroce_" + std::to_string(getpid()) + "_" + name;
}

TEST(pcap_writer, golden_frames_round_trip_from_buffers_and_mbuf_chains) {
    std::string err;
    auto golden = test::read_pcap_frames(test::golden_path("rc_pingpong.pcap"), err);
    ASSERT_FALSE(golden.empty()) << err;
    rte_mempool *pool =
        rte_pktmbuf_pool_create("pcapw", 512, 0, 0, 512 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);

    std::string path = temp_path("w.pcap");
    auto w = pcap_writer::open(path, err);
    ASSERT_NE(w, nullptr) << err;
    for (size_t i = 0; i < golden.size(); i++) {
        const auto &f = golden[i].bytes;
        if (i % 2 == 0) {
            w->write(f.data(), uint32_t(f.size()));
            continue;
        }
        /* 512-byte segments: a 1082-byte frame becomes a 3-segment chain. */
        rte_mbuf *head = nullptr;
        for (size_t off = 0; off < f.size(); off += 512) {
            rte_mbuf *seg = rte_pktmbuf_alloc(pool);
            ASSERT_NE(seg, nullptr);
            size_t chunk = std::min<size_t>(512, f.size() - off);
            std::memcpy(rte_pktmbuf_append(seg, uint16_t(chunk)), f.data() + off, chunk);
            if (!head)
                head = seg;
            else
                ASSERT_EQ(rte_pktmbuf_chain(head, seg), 0);
        }
        w->write(head);
        rte_pktmbuf_free(head);
    }
    EXPECT_EQ(w->frames(), golden.size());
    w.reset();

    auto back = test::read_pcap_frames(path, err);
    ASSERT_EQ(back.size(), golden.size()) << err;
    for (size_t i = 0; i < golden.size(); i++)
        EXPECT_EQ(back[i].bytes, golden[i].bytes) << "frame " << i + 1;

    /* tshark, an independent reader, decodes the RoCE packets in it. */
    if (std::system("command -v tshark >/dev/null 2>&1") == 0) {
        std::string cmd = "tshark -r " + path + " -Y infiniband 2>/dev/null | wc -l";
        FILE *p = popen(cmd.c_str(), "r");
        ASSERT_NE(p, nullptr);
        unsigned lines = 0;
        ASSERT_EQ(fscanf(p, "%u", &lines), 1);
        pclose(p);
        EXPECT_EQ(lines, 289u); /* the capture's RoCE packets */
    }
    unlink(path.c_str());
    rte_mempool_free(pool);
}

TEST(pcap_writer, snaplen_truncates_and_counts) {
    std::string err, path = temp_path("s.pcap");
    auto w = pcap_writer::open(path, err, 128);
    ASSERT_NE(w, nullptr) << err;
    std::vector<uint8_t> big(1000, 0xab);
    w->write(big.data(), uint32_t(big.size()));
    EXPECT_EQ(w->truncated(), 1u);
    w.reset();
    auto back = test::read_pcap_frames(path, err);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].bytes.size(), 128u);
    unlink(path.c_str());
}

TEST(pcap_writer, write_at_records_the_callers_time_in_nanoseconds) {
    rte_mempool *pool =
        rte_pktmbuf_pool_create("pcapt", 64, 0, 0, 256 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
    std::string err, path = temp_path("t.pcap");
    auto w = pcap_writer::open(path, err);
    ASSERT_NE(w, nullptr) << err;
    /* simulated time: 1 s + 5 ns, then 3 s + 999999999 ns */
    const uint64_t at[] = {1'000'000'005ull, 3'999'999'999ull};
    for (uint64_t t : at) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memset(rte_pktmbuf_append(m, 60), 0x11, 60);
        w->write_burst_at(t, &m, 1);
        rte_pktmbuf_free(m);
    }
    w.reset();
    char eb[PCAP_ERRBUF_SIZE];
    pcap_t *p =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, eb);
    ASSERT_NE(p, nullptr) << eb;
    struct pcap_pkthdr *h;
    const u_char *d;
    for (uint64_t t : at) {
        ASSERT_EQ(pcap_next_ex(p, &h, &d), 1);
        EXPECT_EQ(uint64_t(h->ts.tv_sec) * 1000000000ull + uint64_t(h->ts.tv_usec), t);
        EXPECT_EQ(h->len, 60u);
    }
    pcap_close(p);
    unlink(path.c_str());
    rte_mempool_free(pool);
}

TEST(pcap_writer, unwritable_path_is_a_clear_error) {
    std::string err;
    EXPECT_EQ(pcap_writer::open("/nonexistent-dir/x.pcap", err), nullptr);
    EXPECT_NE(err.find("/nonexistent-dir/x.pcap"), std::string::npos) << err;
}

} // namespace
} // namespace uroce

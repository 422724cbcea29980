/* SPDX-License-Identifier: BSD-3-Clause
 * The per-QP memory on transparent huge pages: blocks aligned, disjoint and
 * reused by size class; arrays value-initialized even in reused blocks;
 * large blocks mapped on a huge-page boundary; the chunks advised for huge
 * pages (the kernel's VmFlags say so), and not with UROCE_HUGEMEM=0 (meson
 * runs this test both ways); QPs, their rings and CQ rings taken from it;
 * several threads at once.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "uroce_cq.h"
#include "uroce_hugemem.h"
#include "uroce_qp.h"

using namespace uroce;

namespace {

bool sanitizer_heap() {
    return hugemem_get_stats().sanitizer_heap;
}

/* UROCE_HUGEMEM=0: the chunks are not advised */
bool huge_pages_off() {
    const char *e = std::getenv("UROCE_HUGEMEM");
    return e && std::string(e) == "0";
}

/* The VmFlags line of the mapping that holds p, from /proc/self/smaps. */
std::string vm_flags_of(const void *p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = a >= lo && a < hi;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return {};
}

TEST(hugemem_test, blocks_are_aligned_disjoint_and_hold_their_bytes) {
    std::mt19937 rng(7);
    struct block {
        uint8_t *p;
        size_t n;
        uint8_t tag;
    };
    std::vector<block> blocks;
    for (int i = 0; i < 2000; ++i) {
        /* every class, and a few sizes past the largest */
        size_t n = size_t(1) << (rng() % 19);
        n += rng() % n;
        if (i % 97 == 0) n = (size_t(300) << 10) + rng() % (size_t(3) << 20);
        auto *p = static_cast<uint8_t *>(hugemem_alloc(n));
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % hugemem_align, 0u) << n;
        const auto tag = uint8_t(i);
        std::memset(p, tag, n);
        blocks.push_back({p, n, tag});
        if (rng() % 3 == 0) { /* free one at random, so that blocks are reused */
            const size_t k = rng() % blocks.size();
            hugemem_free(blocks[k].p, blocks[k].n);
            blocks.erase(blocks.begin() + ptrdiff_t(k));
        }
    }
    std::sort(blocks.begin(), blocks.end(),
              [](const block &a, const block &b) { return a.p < b.p; });
    for (size_t i = 0; i < blocks.size(); ++i) {
        const block &b = blocks[i];
        if (i + 1 < blocks.size()) {
            ASSERT_LE(b.p + b.n, blocks[i + 1].p) << "blocks overlap";
        }
        for (size_t k = 0; k < b.n; k += 61)
            ASSERT_EQ(b.p[k], b.tag) << "a block was overwritten";
        ASSERT_EQ(b.p[b.n - 1], b.tag);
    }
    for (const block &b : blocks)
        hugemem_free(b.p, b.n);
}

TEST(hugemem_test, a_freed_block_is_reused_and_in_use_bytes_return) {
    if (sanitizer_heap()) GTEST_SKIP() << "ASan build: blocks come from the heap";
    const size_t before = hugemem_get_stats().in_use_bytes;
    void *a = hugemem_alloc(3200);
    EXPECT_EQ(hugemem_get_stats().in_use_bytes, before + 4096); /* its power-of-two class */
    hugemem_free(a, 3200);
    void *b = hugemem_alloc(4000); /* the same class: the block just freed */
    EXPECT_EQ(a, b);
    hugemem_free(b, 4000);
    void *large = hugemem_alloc(size_t(3) << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % (size_t(2) << 20), 0u)
        << "a large block starts on a huge page";
    EXPECT_EQ(hugemem_get_stats().in_use_bytes, before + (size_t(3) << 20));
    hugemem_free(large, size_t(3) << 20);
    EXPECT_EQ(hugemem_get_stats().in_use_bytes, before);
}

TEST(hugemem_test, arrays_are_value_initialized_in_a_reused_block) {
    {
        auto dirty = make_hugemem_array<uint64_t>(100);
        std::fill_n(dirty.get(), 100, ~uint64_t(0));
    }
    auto clean = make_hugemem_array<uint64_t>(100);
    EXPECT_TRUE(std::all_of(clean.get(), clean.get() + 100, [](uint64_t v) { return v == 0; }));
    auto wqes = make_hugemem_array<send_wqe>(8);
    EXPECT_EQ(wqes[7].num_sge, 0u);
}

TEST(hugemem_test, an_impossible_size_throws_instead_of_wrapping) {
    /* n * sizeof(T) would wrap to a small block that n elements overrun */
    EXPECT_THROW(make_hugemem_array<uint64_t>(SIZE_MAX / 4), std::bad_array_new_length);
    if (sanitizer_heap()) return; /* ASan stops the process on such a heap request */
    EXPECT_THROW(hugemem_alloc(SIZE_MAX - 100), std::bad_alloc);
    EXPECT_THROW(hugemem_alloc(size_t(1) << 62), std::bad_alloc);
}

TEST(hugemem_test, chunks_are_advised_for_huge_pages) {
    if (sanitizer_heap()) GTEST_SKIP() << "ASan build: blocks come from the heap";
    if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
        GTEST_SKIP() << "this kernel has no transparent huge pages";
    void *small = hugemem_alloc(64);
    void *large = hugemem_alloc(size_t(5) << 20);
    /* "hg": MADV_HUGEPAGE (Documentation/filesystems/proc.rst); with
     * UROCE_HUGEMEM=0 (the second run of this test) not */
    const bool advised = !huge_pages_off();
    EXPECT_EQ(vm_flags_of(small).find(" hg") != std::string::npos, advised) << vm_flags_of(small);
    EXPECT_EQ(vm_flags_of(large).find(" hg") != std::string::npos, advised) << vm_flags_of(large);
    hugemem_free(small, 64);
    hugemem_free(large, size_t(5) << 20);
}

TEST(hugemem_test, qps_and_their_rings_and_cq_rings_live_there) {
    if (sanitizer_heap()) GTEST_SKIP() << "ASan build: blocks come from the heap";
    const size_t before = hugemem_get_stats().in_use_bytes;
    auto q = std::make_unique<qp>();
    EXPECT_GE(hugemem_get_stats().in_use_bytes, before + sizeof(qp));
    const size_t with_qp = hugemem_get_stats().in_use_bytes;
    q->rq.init(512, 1);
    EXPECT_EQ(hugemem_get_stats().in_use_bytes, with_qp + 512 * 2 * sizeof(sge));
    cq c;
    cq_resize(&c, 1000);
    EXPECT_EQ(hugemem_get_stats().in_use_bytes,
              with_qp + 512 * 2 * sizeof(sge) + std::bit_ceil(1024 * sizeof(wc)));
    if (!huge_pages_off()) {
        EXPECT_NE(vm_flags_of(q.get()).find(" hg"), std::string::npos);
        EXPECT_NE(vm_flags_of(c.ring.get()).find(" hg"), std::string::npos);
    }
    c.ring.reset();
    q.reset();
    EXPECT_EQ(hugemem_get_stats().in_use_bytes, before);
}

TEST(hugemem_test, threads_allocate_and_free_at_once) {
    constexpr int threads = 4, rounds = 5000;
    std::vector<std::thread> ts;
    std::vector<int> bad(threads, 0);
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([t, &bad] {
            std::mt19937 rng{unsigned(t)};
            std::vector<std::pair<uint8_t *, size_t>> mine;
            for (int i = 0; i < rounds; ++i) {
                const size_t n = 64 + rng() % 20000;
                auto *p = static_cast<uint8_t *>(hugemem_alloc(n));
                std::memset(p, t + 1, n);
                mine.emplace_back(p, n);
                if (mine.size() > 50) {
                    auto [q, m] = mine.front();
                    bad[size_t(t)] += q[0] != t + 1 || q[m - 1] != t + 1;
                    hugemem_free(q, m);
                    mine.erase(mine.begin());
                }
            }
            for (auto [q, m] : mine) {
                bad[size_t(t)] += q[0] != t + 1 || q[m - 1] != t + 1;
                hugemem_free(q, m);
            }
        });
    for (auto &t : ts)
        t.join();
    for (int t = 0; t < threads; ++t)
        EXPECT_EQ(bad[size_t(t)], 0) << "thread " << t << " found its blocks overwritten";
}

} // namespace

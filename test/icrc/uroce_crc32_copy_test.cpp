/* SPDX-License-Identifier: BSD-3-Clause
 * Tests for the one-pass copy and CRC (crc32_copy_update, lib/icrc/
 * uroce_crc32_copy.cpp and the io_copy instantiations of the SIMD engines):
 * for every engine the CPU has, every length 0..2048 with random source and
 * destination alignments, the destination equals memcpy's and the register
 * equals crc32_update's; no byte outside [dst, dst+len) is written (canary
 * margins, ASan-poisoned margins and guard pages); chaining over random
 * segments; and the dispatch. The same for the CRC of one buffer with the
 * copy of another (crc32_update_place, the io_place instantiations), with
 * the three buffers each at its own random alignment.
 */
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <uroce/crc32.h>
#include <uroce/icrc.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UROCE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UROCE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define UROCE_POISON(p, n) ((void)(p), (void)(n))
#define UROCE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace uroce {
namespace {

constexpr crc32_path all_paths[] = {crc32_path::scalar, crc32_path::clmul, crc32_path::vclmul,
                                    crc32_path::vclmul512};

using copy_fn = uint32_t (*)(uint32_t, void *, const void *, size_t);

copy_fn copy_fn_of(crc32_path p) {
    switch (p) {
    case crc32_path::clmul:
        return crc32_copy_update_clmul;
    case crc32_path::vclmul:
        return crc32_copy_update_vclmul;
    case crc32_path::vclmul512:
        return crc32_copy_update_vclmul512;
    default:
        return crc32_copy_update_scalar;
    }
}

class crc32_copy_test : public ::testing::TestWithParam<crc32_path> {
  protected:
    void SetUp() override {
        if (!crc32_path_supported(GetParam()))
            GTEST_SKIP() << "CPU/OS lacks the " << crc32_path_name(GetParam()) << " path";
        fn = copy_fn_of(GetParam());
    }
    copy_fn fn = nullptr;
};

std::string path_param_name(const ::testing::TestParamInfo<crc32_path> &info) {
    std::string s = crc32_path_name(info.param);
    for (char &c : s)
        if (c == '-') c = '_';
    return s;
}

constexpr uint8_t canary = 0xA5;

/* Splits [0, len) into 1..max_pieces random pieces, as a payload is split
 * over SGEs or mbuf segments, and calls piece(reg, at, n) for each in
 * order, chaining the register from ~0; returns the last register. */
template <class F>
uint32_t chain_pieces(std::mt19937_64 &rng, size_t len, int max_pieces, int &pieces, F piece) {
    pieces = 1 + static_cast<int>(rng() % unsigned(max_pieces));
    uint32_t reg = ~0u;
    size_t at = 0;
    for (int k = 0; k < pieces; k++) {
        const size_t n = k + 1 == pieces ? len - at : rng() % (len - at + 1);
        reg = piece(reg, at, n);
        at += n;
    }
    return reg;
}

/* dst holds the len bytes of src at doff, and the canary everywhere else. */
::testing::AssertionResult copied_exactly(const std::vector<uint8_t> &dst, size_t doff,
                                          const uint8_t *src, size_t len) {
    if (std::memcmp(dst.data() + doff, src, len) != 0)
        return ::testing::AssertionFailure() << "the copy differs (len " << len << ")";
    for (size_t i = 0; i < dst.size(); i++)
        if ((i < doff || i >= doff + len) && dst[i] != canary)
            return ::testing::AssertionFailure() << "byte " << i << " outside the copy written";
    return ::testing::AssertionSuccess();
}

/* Every length 0..2048; source and destination each at a random offset
 * 0..63 of their own heap block. The destination block is filled with a
 * canary: afterwards [dst, dst+len) must equal the source and every other
 * byte must still be the canary. The margins of both blocks are ASan-
 * poisoned too, so a stray access aborts the ASan build. Random register;
 * the reference is the scalar crc32_update over the source. */
TEST_P(crc32_copy_test, all_lengths_random_alignments) {
    std::mt19937_64 rng(0xF05E ^ static_cast<unsigned>(GetParam()));
    constexpr size_t max_len = 2048;
    constexpr size_t total = 64 + max_len + 64;
    std::vector<uint8_t> data(max_len);
    for (auto &b : data)
        b = static_cast<uint8_t>(rng());
    uint8_t *sblock = static_cast<uint8_t *>(std::malloc(total));
    uint8_t *dblock = static_cast<uint8_t *>(std::malloc(total));
    ASSERT_NE(sblock, nullptr);
    ASSERT_NE(dblock, nullptr);
    for (size_t len = 0; len <= max_len; len++) {
        const size_t soff = rng() % 64, doff = rng() % 64;
        uint8_t *s = sblock + soff, *d = dblock + doff;
        std::memcpy(s, data.data(), len);
        std::memset(dblock, canary, total);
        UROCE_POISON(sblock, soff);
        UROCE_POISON(s + len, total - soff - len);
        UROCE_POISON(dblock, doff);
        UROCE_POISON(d + len, total - doff - len);
        const uint32_t reg = static_cast<uint32_t>(rng());
        const uint32_t got = fn(reg, d, s, len);
        UROCE_UNPOISON(sblock, total);
        UROCE_UNPOISON(dblock, total);
        ASSERT_EQ(got, crc32_update_scalar(reg, data.data(), len))
            << "len " << len << " src+" << soff << " dst+" << doff;
        ASSERT_EQ(std::memcmp(d, data.data(), len), 0) << "len " << len;
        for (size_t i = 0; i < total; i++) {
            if (i < doff || i >= doff + len) {
                ASSERT_EQ(dblock[i], canary) << "len " << len << " wrote byte " << i;
            }
        }
    }
    std::free(sblock);
    std::free(dblock);
}

/* Tight heap blocks of exactly len bytes for both ends (ASan checks both
 * edges exactly, without the 8-byte granularity of poisoning). */
TEST_P(crc32_copy_test, exact_size_allocations) {
    std::mt19937 rng(11);
    for (size_t len = 0; len <= 600; len++) {
        std::vector<uint8_t> v(len);
        for (auto &b : v)
            b = static_cast<uint8_t>(rng());
        uint8_t *s = len ? new uint8_t[len] : nullptr;
        uint8_t *d = len ? new uint8_t[len] : nullptr;
        if (len) std::memcpy(s, v.data(), len);
        const uint32_t got = fn(~0u, d, s, len);
        const bool same = len == 0 || std::memcmp(d, v.data(), len) == 0;
        delete[] s;
        delete[] d;
        ASSERT_EQ(got, crc32_update_scalar(~0u, v.data(), len)) << "len " << len;
        ASSERT_TRUE(same) << "len " << len;
    }
}

/* Split into 1..12 random pieces (as a packet's payload is split over SGEs
 * or mbuf segments), each copied to its own place in the destination and
 * chained through the register: the one-shot CRC and an exact copy. */
TEST_P(crc32_copy_test, random_segmentation_chains) {
    std::mt19937_64 rng(4321 + static_cast<unsigned>(GetParam()));
    std::vector<uint8_t> src(9000 + 64), dst(9000 + 64);
    for (auto &b : src)
        b = static_cast<uint8_t>(rng());
    for (int iter = 0; iter < 400; iter++) {
        const size_t len = rng() % 9001;
        const size_t soff = rng() % 64, doff = rng() % 64;
        std::fill(dst.begin(), dst.end(), canary);
        const uint32_t want = crc32_update_scalar(~0u, src.data() + soff, len);
        int pieces;
        const uint32_t reg =
            chain_pieces(rng, len, 12, pieces, [&](uint32_t r, size_t at, size_t n) {
                return fn(r, dst.data() + doff + at, src.data() + soff + at, n);
            });
        ASSERT_EQ(reg, want) << "len " << len << " pieces " << pieces;
        ASSERT_TRUE(copied_exactly(dst, doff, src.data() + soff, len));
    }
}

INSTANTIATE_TEST_SUITE_P(paths, crc32_copy_test, ::testing::ValuesIn(all_paths), path_param_name);

/* Guard pages on both sides of the source and of the destination: the zmm
 * engine's masked loads and stores start before the data with the bytes
 * before it masked out, which ASan does not see but the MMU does. Every
 * engine, 0..300 bytes, the source and the destination each flush against
 * the start or the end of its page. */
TEST(crc32_copy, guard_pages) {
    const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *map = mmap(nullptr, 5 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    uint8_t *const base = static_cast<uint8_t *>(map);
    for (size_t i : {0, 2, 4})
        ASSERT_EQ(mprotect(base + i * pg, pg, PROT_NONE), 0);
    uint8_t *const spage = base + pg, *const dpage = base + 3 * pg;
    std::mt19937_64 rng(98);
    for (size_t n = 0; n <= 300; n++) {
        for (uint8_t *s : {spage, spage + pg - n}) {
            for (size_t i = 0; i < n; i++)
                s[i] = static_cast<uint8_t>(rng());
            const uint32_t want = crc32_update_scalar(0x12345678u, s, n);
            for (uint8_t *d : {dpage, dpage + pg - n}) {
                for (crc32_path path : all_paths) {
                    if (!crc32_path_supported(path)) continue;
                    std::memset(dpage, canary, pg);
                    ASSERT_EQ(copy_fn_of(path)(0x12345678u, d, s, n), want)
                        << crc32_path_name(path) << " n " << n;
                    ASSERT_EQ(std::memcmp(d, s, n), 0) << crc32_path_name(path) << " n " << n;
                    for (size_t i = 0; i < pg; i++) {
                        if (dpage + i < d || dpage + i >= d + n) {
                            ASSERT_EQ(dpage[i], canary) << crc32_path_name(path) << " n " << n;
                        }
                    }
                }
            }
        }
    }
    munmap(map, 5 * pg);
}

using place_fn = uint32_t (*)(uint32_t, const void *, void *, const void *, size_t);

place_fn place_fn_of(crc32_path p) {
    switch (p) {
    case crc32_path::clmul:
        return crc32_update_place_clmul;
    case crc32_path::vclmul:
        return crc32_update_place_vclmul;
    case crc32_path::vclmul512:
        return crc32_update_place_vclmul512;
    default:
        return crc32_update_place_scalar;
    }
}

class crc32_place_test : public ::testing::TestWithParam<crc32_path> {
  protected:
    void SetUp() override {
        if (!crc32_path_supported(GetParam()))
            GTEST_SKIP() << "CPU/OS lacks the " << crc32_path_name(GetParam()) << " path";
        fn = place_fn_of(GetParam());
    }
    place_fn fn = nullptr;
};

/* Every length 0..2048; the CRC's data, the copy's source and its
 * destination each at a random offset 0..63 of its own heap block, with
 * ASan-poisoned margins; the destination block filled with a canary. The
 * register must be the scalar crc32_update's over the data, [dst, dst+len)
 * the source's bytes, every other destination byte the canary. */
TEST_P(crc32_place_test, all_lengths_random_alignments) {
    std::mt19937_64 rng(0x91ACE ^ static_cast<unsigned>(GetParam()));
    constexpr size_t max_len = 2048;
    constexpr size_t total = 64 + max_len + 64;
    std::vector<uint8_t> data(max_len), copy(max_len);
    for (auto &b : data)
        b = static_cast<uint8_t>(rng());
    for (auto &b : copy)
        b = static_cast<uint8_t>(rng());
    uint8_t *ablock = static_cast<uint8_t *>(std::malloc(total));
    uint8_t *sblock = static_cast<uint8_t *>(std::malloc(total));
    uint8_t *dblock = static_cast<uint8_t *>(std::malloc(total));
    ASSERT_NE(ablock, nullptr);
    ASSERT_NE(sblock, nullptr);
    ASSERT_NE(dblock, nullptr);
    for (size_t len = 0; len <= max_len; len++) {
        const size_t aoff = rng() % 64, soff = rng() % 64, doff = rng() % 64;
        uint8_t *a = ablock + aoff, *s = sblock + soff, *d = dblock + doff;
        std::memcpy(a, data.data(), len);
        std::memcpy(s, copy.data(), len);
        std::memset(dblock, canary, total);
        for (auto [block, off] : {std::pair{ablock, aoff}, {sblock, soff}, {dblock, doff}}) {
            UROCE_POISON(block, off);
            UROCE_POISON(block + off + len, total - off - len);
        }
        const uint32_t reg = static_cast<uint32_t>(rng());
        const uint32_t got = fn(reg, a, d, s, len);
        for (uint8_t *block : {ablock, sblock, dblock})
            UROCE_UNPOISON(block, total);
        ASSERT_EQ(got, crc32_update_scalar(reg, data.data(), len))
            << "len " << len << " data+" << aoff << " src+" << soff << " dst+" << doff;
        ASSERT_EQ(std::memcmp(d, copy.data(), len), 0) << "len " << len;
        ASSERT_EQ(std::memcmp(a, data.data(), len), 0) << "len " << len; /* data only read */
        for (size_t i = 0; i < total; i++) {
            if (i < doff || i >= doff + len) {
                ASSERT_EQ(dblock[i], canary) << "len " << len << " wrote byte " << i;
            }
        }
    }
    std::free(ablock);
    std::free(sblock);
    std::free(dblock);
}

/* Split into random pieces chained through the register, as a payload's
 * placement is split over SGEs: the one-shot CRC and an exact copy. */
TEST_P(crc32_place_test, random_segmentation_chains) {
    std::mt19937_64 rng(777 + static_cast<unsigned>(GetParam()));
    std::vector<uint8_t> data(9000 + 64), src(9000 + 64), dst(9000 + 64);
    for (auto &b : data)
        b = static_cast<uint8_t>(rng());
    for (auto &b : src)
        b = static_cast<uint8_t>(rng());
    for (int iter = 0; iter < 300; iter++) {
        const size_t len = rng() % 9001;
        const size_t aoff = rng() % 64, soff = rng() % 64, doff = rng() % 64;
        std::fill(dst.begin(), dst.end(), canary);
        const uint32_t want = crc32_update_scalar(~0u, data.data() + aoff, len);
        int pieces;
        const uint32_t reg =
            chain_pieces(rng, len, 8, pieces, [&](uint32_t r, size_t at, size_t n) {
                return fn(r, data.data() + aoff + at, dst.data() + doff + at,
                          src.data() + soff + at, n);
            });
        ASSERT_EQ(reg, want) << "len " << len << " pieces " << pieces;
        ASSERT_TRUE(copied_exactly(dst, doff, src.data() + soff, len));
    }
}

INSTANTIATE_TEST_SUITE_P(paths, crc32_place_test, ::testing::ValuesIn(all_paths), path_param_name);

/* Guard pages around the data, the source and the destination, each flush
 * against the start or the end of its page: the zmm engine's masked loads
 * of the source start before it with those bytes masked out, which ASan
 * does not see but the MMU does. Every engine, 0..300 bytes. */
TEST(crc32_place, guard_pages) {
    const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *map = mmap(nullptr, 7 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    uint8_t *const base = static_cast<uint8_t *>(map);
    for (size_t i : {0, 2, 4, 6})
        ASSERT_EQ(mprotect(base + i * pg, pg, PROT_NONE), 0);
    uint8_t *const apage = base + pg, *const spage = base + 3 * pg, *const dpage = base + 5 * pg;
    std::mt19937_64 rng(99);
    for (size_t n = 0; n <= 300; n++) {
        for (bool at_end : {false, true}) {
            uint8_t *a = at_end ? apage + pg - n : apage;
            uint8_t *s = at_end ? spage : spage + pg - n;
            for (size_t i = 0; i < n; i++) {
                a[i] = static_cast<uint8_t>(rng());
                s[i] = static_cast<uint8_t>(rng());
            }
            const uint32_t want = crc32_update_scalar(0x2468ace0u, a, n);
            for (uint8_t *d : {dpage, dpage + pg - n}) {
                for (crc32_path path : all_paths) {
                    if (!crc32_path_supported(path)) continue;
                    std::memset(dpage, canary, pg);
                    ASSERT_EQ(place_fn_of(path)(0x2468ace0u, a, d, s, n), want)
                        << crc32_path_name(path) << " n " << n;
                    ASSERT_EQ(std::memcmp(d, s, n), 0) << crc32_path_name(path) << " n " << n;
                    for (size_t i = 0; i < pg; i++) {
                        if (dpage + i < d || dpage + i >= d + n) {
                            ASSERT_EQ(dpage[i], canary) << crc32_path_name(path) << " n " << n;
                        }
                    }
                }
            }
        }
    }
    munmap(map, 7 * pg);
}

/* The dispatched form follows the active path, and icrc_check_place folds
 * the pending check's payload while it copies, up to its end and no
 * further. */
TEST(crc32_place_dispatch, follows_active_path) {
    const crc32_path saved = crc32_active_path();
    std::vector<uint8_t> data(5000), src(5000), dst(5000);
    std::mt19937 rng(6);
    for (auto &b : data)
        b = static_cast<uint8_t>(rng());
    for (auto &b : src)
        b = static_cast<uint8_t>(rng());
    for (crc32_path p : all_paths) {
        if (!crc32_set_path(p)) continue;
        for (size_t len : {0, 1, 15, 16, 64, 255, 256, 1000, 1024, 4096, 5000}) {
            std::fill(dst.begin(), dst.end(), 0);
            ASSERT_EQ(crc32_update_place(~0u, data.data(), dst.data(), src.data(), len),
                      crc32_update(~0u, data.data(), len))
                << crc32_path_name(p) << " " << len;
            ASSERT_EQ(std::memcmp(dst.data(), src.data(), len), 0);
        }
    }
    EXPECT_TRUE(crc32_set_path(saved));
}

/* The dispatched form follows the active path (crc32_set_path), and the
 * ICRC helper is the same update. */
TEST(crc32_copy_dispatch, follows_active_path) {
    const crc32_path saved = crc32_active_path();
    std::vector<uint8_t> src(5000), dst(5000);
    std::mt19937 rng(5);
    for (auto &b : src)
        b = static_cast<uint8_t>(rng());
    for (crc32_path p : all_paths) {
        if (!crc32_set_path(p)) continue;
        for (size_t len : {0, 1, 3, 15, 16, 63, 64, 65, 255, 256, 1000, 1024, 4096, 5000}) {
            std::fill(dst.begin(), dst.end(), 0);
            ASSERT_EQ(crc32_copy_update(~0u, dst.data(), src.data(), len),
                      crc32_update(~0u, src.data(), len))
                << crc32_path_name(p) << " " << len;
            ASSERT_EQ(std::memcmp(dst.data(), src.data(), len), 0);
            icrc_state a{icrc_seed}, b{icrc_seed};
            icrc_copy_update(a, dst.data(), src.data(), len);
            icrc_update(b, src.data(), len);
            ASSERT_EQ(icrc_finish(a), icrc_finish(b));
        }
    }
    EXPECT_TRUE(crc32_set_path(saved));
}

/* Run again by meson per UROCE_CRC32_PATH value: the fused form uses the
 * path the constructor chose. */
TEST(crc32_copy_dispatch, env_path_used) {
    const char *s = "123456789";
    char d[9];
    EXPECT_EQ(~crc32_copy_update(~0u, d, s, 9), 0xcbf43926u);
    EXPECT_EQ(std::memcmp(d, s, 9), 0);
    if (const char *env = std::getenv("UROCE_CRC32_PATH"); env && *env) {
        for (crc32_path p : all_paths) {
            if (std::strcmp(env, crc32_path_name(p)) == 0 && crc32_path_supported(p)) {
                EXPECT_EQ(crc32_active_path(), p);
            }
        }
    }
}

} // namespace
} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * Tests for the reflected CRC-32 engines (lib/icrc/uroce_crc32.h):
 * every engine the CPU has, every length 0..2048, random alignments and
 * random segmentations, against zlib and against each other; the folding
 * constants against an independent derivation; the dispatch and the
 * UROCE_CRC32_PATH override.
 */
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "crc32_clmul_engine.h"
#include "crc32_fold_consts.h"
#include "crc32_internal.h"
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

using update_fn = uint32_t (*)(uint32_t, const void *, size_t);

update_fn fn_of(crc32_path p) {
    switch (p) {
    case crc32_path::clmul:
        return crc32_update_clmul;
    case crc32_path::vclmul:
        return crc32_update_vclmul;
    case crc32_path::vclmul512:
        return crc32_update_vclmul512;
    default:
        return crc32_update_scalar;
    }
}

uint32_t zlib_crc(uint32_t prev, const uint8_t *p, size_t n) {
    /* zlib takes uInt lengths; our test inputs are small. */
    return static_cast<uint32_t>(crc32(prev, p, static_cast<uInt>(n)));
}

class crc32_path_test : public ::testing::TestWithParam<crc32_path> {
  protected:
    void SetUp() override {
        if (!crc32_path_supported(GetParam()))
            GTEST_SKIP() << "CPU/OS lacks the " << crc32_path_name(GetParam()) << " path";
        fn = fn_of(GetParam());
    }
    update_fn fn = nullptr;
};

std::string path_param_name(const ::testing::TestParamInfo<crc32_path> &info) {
    std::string s = crc32_path_name(info.param);
    for (char &c : s)
        if (c == '-') c = '_';
    return s;
}

TEST_P(crc32_path_test, check_value_123456789) {
    const char *s = "123456789";
    EXPECT_EQ(fn(~0u, s, 9) ^ ~0u, 0xcbf43926u);
}

TEST_P(crc32_path_test, empty_input_keeps_register) {
    const uint8_t b = 0;
    EXPECT_EQ(fn(0x12345678u, &b, 0), 0x12345678u);
    EXPECT_EQ(fn(0x12345678u, nullptr, 0), 0x12345678u);
}

/* Every length 0..2048, the source placed at a random offset 0..63 inside
 * a heap block; the bytes around [p, p+len) are ASan-poisoned, so an
 * over-read past the end (or before the start, at 8-byte granularity) aborts
 * the ASan build. Random register too. */
TEST_P(crc32_path_test, all_lengths_random_alignment_vs_zlib) {
    std::mt19937_64 rng(0xC0FFEE ^ static_cast<unsigned>(GetParam()));
    constexpr size_t max_len = 2048;
    std::vector<uint8_t> src(max_len);
    for (auto &b : src)
        b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len <= max_len; len++) {
        const size_t off = rng() % 64;
        const size_t total = 64 + max_len + 64;
        uint8_t *block = static_cast<uint8_t *>(std::malloc(total));
        ASSERT_NE(block, nullptr);
        uint8_t *p = block + off;
        std::memcpy(p, src.data(), len);
        UROCE_POISON(block, off);
        UROCE_POISON(p + len, total - off - len);
        const uint32_t prev = static_cast<uint32_t>(rng());
        const uint32_t got = ~fn(~prev, p, len);
        UROCE_UNPOISON(block, total);
        std::free(block);
        ASSERT_EQ(got, zlib_crc(prev, src.data(), len)) << "len " << len << " offset " << off;
    }
}

/* Tight heap blocks of exactly len bytes (ASan checks both ends exactly). */
TEST_P(crc32_path_test, exact_size_allocations) {
    std::mt19937 rng(7);
    for (size_t len = 0; len <= 600; len++) {
        std::vector<uint8_t> v(len);
        for (auto &b : v)
            b = static_cast<uint8_t>(rng());
        uint8_t *p = len ? new uint8_t[len] : nullptr;
        if (len) std::memcpy(p, v.data(), len);
        const uint32_t got = fn(~0u, p, len) ^ ~0u;
        delete[] p;
        ASSERT_EQ(got, zlib_crc(0, v.data(), len)) << "len " << len;
    }
}

/* The same data split into 1..12 random pieces, chained through the raw
 * register, must give the one-shot value (and zlib's). */
TEST_P(crc32_path_test, random_segmentation_chains) {
    std::mt19937_64 rng(1234 + static_cast<unsigned>(GetParam()));
    std::vector<uint8_t> buf(2048 + 64);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len <= 2048; len += 1 + (len < 300 ? 0 : rng() % 7)) {
        const size_t off = rng() % 64;
        const uint8_t *p = buf.data() + off;
        const uint32_t want = zlib_crc(0, p, len);
        for (int trial = 0; trial < 4; trial++) {
            const int pieces = 1 + static_cast<int>(rng() % 12);
            std::vector<size_t> cuts{0, len};
            for (int i = 1; i < pieces; i++)
                cuts.push_back(len ? rng() % (len + 1) : 0);
            std::sort(cuts.begin(), cuts.end());
            uint32_t reg = ~0u;
            for (size_t i = 0; i + 1 < cuts.size(); i++)
                reg = fn(reg, p + cuts[i], cuts[i + 1] - cuts[i]);
            ASSERT_EQ(reg ^ ~0u, want) << "len " << len << " pieces " << pieces;
        }
    }
}

/* Large and odd sizes through the main loops (several iterations, every
 * leftover count). */
TEST_P(crc32_path_test, long_inputs) {
    std::mt19937_64 rng(99);
    std::vector<uint8_t> buf(70000 + 8);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t len : {4095u, 4096u, 4097u, 9000u, 9001u, 16383u, 65536u, 69999u}) {
        const size_t off = rng() % 8;
        ASSERT_EQ(fn(~0u, buf.data() + off, len) ^ ~0u, zlib_crc(0, buf.data() + off, len)) << len;
    }
}

/* Special bit patterns: all zeros, all ones, single bits (catches a wrong
 * constant for one lane or one distance that random data might hide in a
 * single test, because each bit exercises one column of the fold). */
TEST_P(crc32_path_test, single_bit_inputs) {
    for (size_t len : {16u, 31u, 64u, 100u, 272u, 300u, 513u, 1024u, 1100u, 2000u}) {
        std::vector<uint8_t> v(len, 0);
        ASSERT_EQ(fn(~0u, v.data(), len) ^ ~0u, zlib_crc(0, v.data(), len));
        std::fill(v.begin(), v.end(), 0xFF);
        ASSERT_EQ(fn(~0u, v.data(), len) ^ ~0u, zlib_crc(0, v.data(), len));
        std::fill(v.begin(), v.end(), 0);
        for (size_t bit = 0; bit < 8 * len; bit += (len > 300 ? 7 : 1)) {
            v[bit / 8] = static_cast<uint8_t>(1u << (bit % 8));
            ASSERT_EQ(fn(0, v.data(), len), zlib_crc(0, v.data(), len) ^
                                                zlib_crc(0, std::vector<uint8_t>(len).data(), len))
                << "len " << len << " bit " << bit;
            v[bit / 8] = 0;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(paths, crc32_path_test, ::testing::ValuesIn(all_paths), path_param_name);

/* All supported engines agree with each other on random data/registers. */
TEST(crc32, engines_agree) {
    std::mt19937_64 rng(42);
    std::vector<uint8_t> buf(5000);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (int i = 0; i < 3000; i++) {
        const size_t off = rng() % 64;
        const size_t len = rng() % (buf.size() - off);
        const uint32_t reg = static_cast<uint32_t>(rng());
        const uint32_t ref = crc32_update_scalar(reg, buf.data() + off, len);
        for (crc32_path p : all_paths) {
            if (crc32_path_supported(p)) {
                ASSERT_EQ(fn_of(p)(reg, buf.data() + off, len), ref)
                    << crc32_path_name(p) << " len " << len;
            }
        }
        ASSERT_EQ(crc32_update(reg, buf.data() + off, len), ref);
    }
}

/* Both encodings of the 128-bit engine (the dispatcher picks the VEX one
 * when AVX is usable), including after dirty-upper AVX state. */
TEST(crc32, clmul_sse_and_vex_flavours) {
    if (!crc32_path_supported(crc32_path::clmul)) GTEST_SKIP() << "CPU lacks pclmulqdq";
    std::mt19937_64 rng(4242);
    std::vector<uint8_t> buf(3000);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len <= 2100; len++) {
        const size_t off = rng() % 64;
        const uint32_t reg = static_cast<uint32_t>(rng());
        const uint32_t ref = crc32_update_scalar(reg, buf.data() + off, len);
        ASSERT_EQ(crc32_detail::crc32_update_clmul_sse(reg, buf.data() + off, len), ref) << len;
        if (crc32_detail::cpu_has_avx()) {
            ASSERT_EQ(crc32_detail::crc32_update_clmul_vex(reg, buf.data() + off, len), ref) << len;
        }
    }
}

/* The masked update (ICRC header masking in registers): every engine against
 * "OR into a copy, then zlib", n = 16..256, random masks and alignments. */
TEST(crc32, masked_update_all_engines) {
    std::mt19937_64 rng(515);
    std::vector<uint8_t> data(512), mask(512), tmp(256);
    for (size_t n = 16; n <= 256; n++) {
        for (int t = 0; t < 3; t++) {
            for (auto &b : data)
                b = static_cast<uint8_t>(rng());
            for (auto &b : mask)
                b = (rng() % 5 == 0) ? static_cast<uint8_t>(rng()) : 0;
            const size_t od = rng() % 64, om = rng() % 64;
            for (size_t i = 0; i < n; i++)
                tmp[i] = data[od + i] | mask[om + i];
            const uint32_t reg = static_cast<uint32_t>(rng());
            const uint32_t want = ~zlib_crc(~reg, tmp.data(), n);
            const uint8_t *p = data.data() + od, *m = mask.data() + om;
            ASSERT_EQ(crc32_detail::crc32_update_masked_scalar(reg, p, m, n), want) << n;
            ASSERT_EQ(crc32_detail::crc32_update_masked(reg, p, m, n), want) << n;
            if (crc32_path_supported(crc32_path::clmul)) {
                ASSERT_EQ(crc32_detail::crc32_update_masked_clmul_sse(reg, p, m, n), want) << n;
                if (crc32_detail::cpu_has_avx()) {
                    ASSERT_EQ(crc32_detail::crc32_update_masked_clmul_vex(reg, p, m, n), want) << n;
                }
            }
            if (crc32_path_supported(crc32_path::vclmul)) {
                ASSERT_EQ(crc32_detail::crc32_update_masked_vclmul(reg, p, m, n), want) << n;
            }
            if (crc32_path_supported(crc32_path::vclmul512)) {
                ASSERT_EQ(crc32_detail::crc32_update_masked_vclmul512(reg, p, m, n), want) << n;
            }
            /* The ICRC's entries: the same with the register fixed at the seed. */
            const uint32_t want_icrc = ~zlib_crc(~icrc_seed, tmp.data(), n);
            ASSERT_EQ(crc32_detail::icrc_masked_scalar(p, m, n), want_icrc) << n;
            ASSERT_EQ(crc32_detail::icrc_masked(p, m, n), want_icrc) << n;
            if (crc32_path_supported(crc32_path::clmul)) {
                ASSERT_EQ(crc32_detail::icrc_masked_clmul_sse(p, m, n), want_icrc) << n;
                if (crc32_detail::cpu_has_avx()) {
                    ASSERT_EQ(crc32_detail::icrc_masked_clmul_vex(p, m, n), want_icrc) << n;
                }
            }
            if (crc32_path_supported(crc32_path::vclmul)) {
                ASSERT_EQ(crc32_detail::icrc_masked_vclmul(p, m, n), want_icrc) << n;
            }
            if (crc32_path_supported(crc32_path::vclmul512)) {
                ASSERT_EQ(crc32_detail::icrc_masked_vclmul512(p, m, n), want_icrc) << n;
            }
        }
    }
}

/* The masked update on exact-size heap blocks (data and mask), so that ASan
 * checks both ends: the zmm form reads up to 64 bytes with a masked load
 * that starts before the data. */
TEST(crc32, masked_update_exact_size) {
    std::mt19937_64 rng(516);
    for (size_t n = 16; n <= 256; n++) {
        uint8_t *d = new uint8_t[n], *m = new uint8_t[n];
        std::vector<uint8_t> tmp(n);
        for (size_t i = 0; i < n; i++) {
            d[i] = static_cast<uint8_t>(rng());
            m[i] = (rng() % 4 == 0) ? static_cast<uint8_t>(rng()) : 0;
            tmp[i] = d[i] | m[i];
        }
        const uint32_t reg = static_cast<uint32_t>(rng());
        const uint32_t want = ~zlib_crc(~reg, tmp.data(), n);
        const uint32_t got = crc32_detail::crc32_update_masked(reg, d, m, n);
        const uint32_t got512 = crc32_path_supported(crc32_path::vclmul512)
                                    ? crc32_detail::crc32_update_masked_vclmul512(reg, d, m, n)
                                    : want;
        const uint32_t want_icrc = ~zlib_crc(~icrc_seed, tmp.data(), n);
        const uint32_t got_icrc = crc32_detail::icrc_masked(d, m, n);
        const uint32_t got_icrc512 = crc32_path_supported(crc32_path::vclmul512)
                                         ? crc32_detail::icrc_masked_vclmul512(d, m, n)
                                         : want_icrc;
        const bool ymm = crc32_path_supported(crc32_path::vclmul);
        const uint32_t got256 = ymm ? crc32_detail::crc32_update_masked_vclmul(reg, d, m, n) : want;
        const uint32_t got_icrc256 = ymm ? crc32_detail::icrc_masked_vclmul(d, m, n) : want_icrc;
        delete[] d;
        delete[] m;
        ASSERT_EQ(got, want) << n;
        ASSERT_EQ(got512, want) << n;
        ASSERT_EQ(got_icrc, want_icrc) << n;
        ASSERT_EQ(got_icrc512, want_icrc) << n;
        ASSERT_EQ(got256, want) << n;
        ASSERT_EQ(got_icrc256, want_icrc) << n;
    }
}

/* Guard pages: the input right after (and right before) an inaccessible
 * page. ASan does not see the zmm engine's masked loads (the ones that start
 * before the data, with the bytes before it masked out); the hardware does:
 * a load that touched the guard page would fault. Every engine, masked and
 * plain, 0..300 bytes at both edges. */
TEST(crc32, guard_pages) {
    const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *map = mmap(nullptr, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    uint8_t *const base = static_cast<uint8_t *>(map);
    ASSERT_EQ(mprotect(base, pg, PROT_NONE), 0);
    ASSERT_EQ(mprotect(base + 2 * pg, pg, PROT_NONE), 0);
    uint8_t *const page = base + pg;
    std::mt19937_64 rng(99);
    std::vector<uint8_t> tmp(300);
    for (size_t n = 0; n <= 300; n++) {
        for (uint8_t *p : {page, page + pg - n}) {
            for (size_t i = 0; i < n; i++)
                p[i] = static_cast<uint8_t>(rng());
            const uint32_t want = crc32_update_scalar(0x12345678u, p, n);
            for (crc32_path path : all_paths) {
                if (crc32_path_supported(path)) {
                    ASSERT_EQ(fn_of(path)(0x12345678u, p, n), want)
                        << crc32_path_name(path) << " n " << n;
                }
            }
            if (n < 16 || n > 256) continue;
            /* The masked form, the mask at the other edge of the page (no
             * overlap: n <= 256). */
            uint8_t *m = p == page ? page + pg - n : page;
            for (size_t i = 0; i < n; i++)
                m[i] = (rng() % 4 == 0) ? static_cast<uint8_t>(rng()) : 0;
            for (size_t i = 0; i < n; i++)
                tmp[i] = p[i] | m[i];
            const uint32_t wantm = crc32_update_scalar(7u, tmp.data(), n);
            ASSERT_EQ(crc32_detail::crc32_update_masked(7u, p, m, n), wantm) << n;
            if (crc32_path_supported(crc32_path::vclmul)) {
                ASSERT_EQ(crc32_detail::crc32_update_masked_vclmul(7u, p, m, n), wantm) << n;
                ASSERT_EQ(crc32_detail::icrc_masked_vclmul(p, m, n),
                          crc32_update_scalar(icrc_seed, tmp.data(), n))
                    << n;
            }
            if (crc32_path_supported(crc32_path::vclmul512)) {
                ASSERT_EQ(crc32_detail::crc32_update_masked_vclmul512(7u, p, m, n), wantm) << n;
                ASSERT_EQ(crc32_detail::icrc_masked_vclmul512(p, m, n),
                          crc32_update_scalar(icrc_seed, tmp.data(), n))
                    << n;
            }
        }
    }
    munmap(map, 3 * pg);
}

TEST(crc32, ieee_wrapper_matches_zlib) {
    const uint8_t msg[] = "The quick brown fox jumps over the lazy dog";
    const size_t n = sizeof(msg) - 1;
    EXPECT_EQ(crc32_ieee(0, msg, n), 0x414fa339u);
    EXPECT_EQ(crc32_ieee(crc32_ieee(0, msg, 10), msg + 10, n - 10), 0x414fa339u);
    EXPECT_EQ(crc32_ieee(0xdeadbeef, msg, n), zlib_crc(0xdeadbeef, msg, n));
}

TEST(crc32, zeros_and_combine) {
    std::mt19937_64 rng(5);
    std::vector<uint8_t> zero(5000, 0), buf(5000);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t n : {0u, 1u, 3u, 7u, 8u, 15u, 16u, 100u, 1023u, 4999u}) {
        const uint32_t reg = static_cast<uint32_t>(rng());
        EXPECT_EQ(crc32_zeros(reg, n), crc32_update_scalar(reg, zero.data(), n)) << n;
        const size_t a = rng() % 5000, b = std::min<size_t>(n, 5000 - a);
        const uint32_t ca = zlib_crc(0, buf.data(), a), cb = zlib_crc(0, buf.data() + a, b);
        EXPECT_EQ(crc32_ieee_combine(ca, cb, b), zlib_crc(0, buf.data(), a + b));
        EXPECT_EQ(crc32_ieee_combine(ca, cb, b),
                  static_cast<uint32_t>(crc32_combine(ca, cb, static_cast<z_off_t>(b))));
    }
    /* Huge lengths: only against zlib's own combine. */
    EXPECT_EQ(crc32_ieee_combine(0x12345678u, 0x9abcdef0u, 1ull << 33),
              static_cast<uint32_t>(
                  crc32_combine(0x12345678u, 0x9abcdef0u, static_cast<z_off_t>(1ull << 33))));
}

/* The compile-time constants against an independent route: x^(8k) mod P in
 * reflected form is the register after feeding k zero bytes to the register
 * holding the polynomial "1" (bit 31), computed by the (zlib-checked) table
 * engine. */
uint32_t xpow8k_reflected(unsigned k) {
    static const std::vector<uint8_t> zeros(4096, 0);
    return crc32_update_scalar(0x80000000u, zeros.data(), k);
}

TEST(crc32_constants, fold_table_matches_zero_byte_crc) {
    using namespace crc32_detail;
    for (unsigned d = 1; d <= fold_max_dist; d++) {
        const fold_pair &k = fold_table[fold_index(d)];
        /* lo = rev33(x^(128d+32) mod P) = rev32(...) << 1. */
        EXPECT_EQ(k.lo, uint64_t(xpow8k_reflected(16 * d + 4)) << 1) << "d=" << d;
        EXPECT_EQ(k.hi, uint64_t(xpow8k_reflected(16 * d - 4)) << 1) << "d=" << d;
    }
    for (unsigned l = 0; l < 4; l++) {
        const unsigned d = 3 - l; /* blocks before the last one */
        EXPECT_EQ(piece_table.a[l].lo, uint64_t(xpow8k_reflected(16 * d + 16)) << 1) << l;
        EXPECT_EQ(piece_table.b[l].lo, uint64_t(xpow8k_reflected(16 * d + 12)) << 1) << l;
        EXPECT_EQ(piece_table.a[l].hi, uint64_t(xpow8k_reflected(16 * d + 8)) << 1) << l;
        EXPECT_EQ(piece_table.b[l].hi, uint64_t(xpow8k_reflected(16 * d + 4)) << 1) << l;
    }
    for (unsigned n = 0; n <= zmm_direct_max; n++)
        EXPECT_EQ(reg_shift_table[n], uint64_t(xpow8k_reflected(n)) << 1) << n;
    EXPECT_EQ(k_x128, uint64_t(xpow8k_reflected(16)) << 1);
    EXPECT_EQ(k_x96, uint64_t(xpow8k_reflected(12)) << 1);
    EXPECT_EQ(k_x64, uint64_t(xpow8k_reflected(8)) << 1);
    /* rev33(P) is the reflected polynomial with its x^32 term as bit 0. */
    EXPECT_EQ(k_poly, (uint64_t(0xEDB88320u) << 1) | 1u);
    /* rev33(floor(x^64/P)): the well-known reflected Barrett constant. */
    EXPECT_EQ(k_mu, 0x1F7011641ull);
}

/* The two 64 -> 32 bit final reductions (Barrett by two multiplies, and the
 * slicing-by-4 table step the engines use) agree on random 64-bit values
 * and on every single bit. */
__attribute__((target("pclmul,sse4.1"))) uint32_t barrett_of(uint64_t z) {
    return crc32_detail::barrett64(_mm_cvtsi64_si128(static_cast<long long>(z)));
}
__attribute__((target("pclmul,sse4.1"))) uint32_t tables_of(uint64_t z) {
    return crc32_detail::reduce64_tables(_mm_cvtsi64_si128(static_cast<long long>(z)));
}

TEST(crc32_constants, final_reductions_agree) {
    if (!crc32_path_supported(crc32_path::clmul)) GTEST_SKIP() << "CPU lacks pclmulqdq";
    std::mt19937_64 rng(64);
    for (int i = 0; i < 100000; i++) {
        const uint64_t z = rng();
        ASSERT_EQ(tables_of(z), barrett_of(z)) << std::hex << z;
    }
    for (unsigned b = 0; b < 64; b++)
        ASSERT_EQ(tables_of(uint64_t(1) << b), barrett_of(uint64_t(1) << b)) << b;
    /* Z = x^(63-b) for bit b: the register is x^(63-b) mod P (reflected). */
    for (unsigned b = 32; b < 64; b++)
        ASSERT_EQ(tables_of(uint64_t(1) << b), 1u << (b - 32)) << b;
}

TEST(crc32_dispatch, names_and_support) {
    EXPECT_STREQ(crc32_path_name(crc32_path::scalar), "scalar");
    EXPECT_STREQ(crc32_path_name(crc32_path::clmul), "pclmulqdq");
    EXPECT_STREQ(crc32_path_name(crc32_path::vclmul), "vpclmulqdq-avx2");
    EXPECT_STREQ(crc32_path_name(crc32_path::vclmul512), "vpclmulqdq-avx512");
    EXPECT_TRUE(crc32_path_supported(crc32_path::scalar));
    EXPECT_TRUE(crc32_path_supported(crc32_best_path()));
    /* vclmul512 implies vclmul implies clmul. */
    if (crc32_path_supported(crc32_path::vclmul512)) {
        EXPECT_TRUE(crc32_path_supported(crc32_path::vclmul));
    }
    if (crc32_path_supported(crc32_path::vclmul)) {
        EXPECT_TRUE(crc32_path_supported(crc32_path::clmul));
    }
}

TEST(crc32_dispatch, set_path_switches_engine) {
    const crc32_path saved = crc32_active_path();
    const char *s = "123456789";
    for (crc32_path p : all_paths) {
        if (!crc32_path_supported(p)) {
            EXPECT_FALSE(crc32_set_path(p));
            continue;
        }
        ASSERT_TRUE(crc32_set_path(p));
        EXPECT_EQ(crc32_active_path(), p);
        EXPECT_EQ(crc32_ieee(0, s, 9), 0xcbf43926u);
    }
    EXPECT_TRUE(crc32_set_path(saved));
}

/* Run by meson a second time per path with UROCE_CRC32_PATH set: the
 * constructor must have honoured it (or fallen back to the best path if the
 * CPU lacks it, or the name is unknown). Without the variable, the best path
 * must be active. */
TEST(crc32_dispatch, env_override_honoured) {
    const char *env = std::getenv("UROCE_CRC32_PATH");
    if (!env || !*env) {
        EXPECT_EQ(crc32_active_path(), crc32_best_path());
        return;
    }
    bool matched = false;
    for (crc32_path p : all_paths) {
        if (std::strcmp(env, crc32_path_name(p)) != 0) continue;
        matched = true;
        if (crc32_path_supported(p)) {
            EXPECT_EQ(crc32_active_path(), p) << env;
        } else {
            EXPECT_EQ(crc32_active_path(), crc32_best_path()) << env;
        }
    }
    if (!matched) {
        /* Unknown value: warned about, best path kept. */
        EXPECT_EQ(crc32_active_path(), crc32_best_path()) << env;
    }
    const char *s = "123456789";
    EXPECT_EQ(crc32_ieee(0, s, 9), 0xcbf43926u);
}

} // namespace
} // namespace uroce

/* SPDX-License-Identifier: BSD-3-Clause
 * The vpclmulqdq-avx512 path against DPDK's max SIMD bitwidth
 * (doc/icrc.md, "Dispatch"): before rte_eal_init there is no limit; once EAL
 * is up, the first call long enough for zmm code re-reads the limit, and the
 * path stays only if it is 512 or more.
 *
 * Usage: uroce_crc32_simd_limit_test [gtest flags] [BITS]
 * BITS, if given, goes to EAL as --force-max-simd-bitwidth=BITS; without it
 * EAL keeps DPDK's default (256 on x86). UROCE_TEST_FIRST_CALL=copy or
 * place makes that operation the first long call after EAL (each operation
 * has its own probe). EAL runs once per process, so meson runs this binary
 * once per case.
 */
#include <gtest/gtest.h>
#include <zlib.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <uroce/crc32.h>
#include "crc32_internal.h"

/* DPDK 22.11 <rte_vect.h>: experimental, and without extern "C". */
extern "C" uint16_t rte_vect_get_max_simd_bitwidth(void);
extern "C" int rte_vect_set_max_simd_bitwidth(uint16_t bitwidth);

namespace uroce {
namespace {

/* Set by main() before and after rte_eal_init. */
crc32_path g_active_before_eal = crc32_path::scalar;
unsigned g_limit_before_eal = ~0u;
bool g_eal_up = false;
const char *g_forced_bits = nullptr; /* the BITS argument, if any */

/* Whether the ICRC's header call (crc32_detail::icrc_masked) goes to the
 * zmm engine: it must follow the limit like crc32_update. */
bool icrc_header_uses_zmm() {
    return crc32_detail::g_icrc_masked_fn.load() == &crc32_detail::icrc_masked_vclmul512;
}

bool cpu_has_zmm_path() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
           __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2");
}

/* What UROCE_CRC32_PATH asks for, if anything. */
const char *env_path() {
    const char *e = std::getenv("UROCE_CRC32_PATH");
    return e && *e ? e : nullptr;
}

bool env_is(crc32_path p) {
    return env_path() && std::strcmp(env_path(), crc32_path_name(p)) == 0;
}

/* One long update through the dispatcher (triggers the re-check), checked
 * against zlib. */
void long_call_matches_zlib() {
    std::mt19937_64 rng(77);
    std::vector<uint8_t> buf(4096 + 3);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    EXPECT_EQ(crc32_update(~0u, buf.data() + 3, 4096) ^ ~0u,
              static_cast<uint32_t>(crc32(0, buf.data() + 3, 4096)));
}

/* The first long call after EAL, through the operation UROCE_TEST_FIRST_CALL
 * names (copy: crc32_copy_update, place: crc32_update_place, else
 * crc32_update): each operation has its own probe, and whichever is called
 * first must re-read the limit. Checked against zlib and memcpy. */
void first_long_call_matches_zlib() {
    const char *first = std::getenv("UROCE_TEST_FIRST_CALL");
    const std::string op = first ? first : "";
    if (op != "copy" && op != "place") return long_call_matches_zlib();
    std::mt19937_64 rng(78);
    std::vector<uint8_t> data(4096 + 3), src(4096 + 5), dst(4096 + 7, 0);
    for (auto *v : {&data, &src})
        for (auto &b : *v)
            b = static_cast<uint8_t>(rng());
    if (op == "copy") {
        EXPECT_EQ(crc32_copy_update(~0u, dst.data() + 7, src.data() + 5, 4096) ^ ~0u,
                  static_cast<uint32_t>(crc32(0, src.data() + 5, 4096)));
    } else {
        EXPECT_EQ(crc32_update_place(~0u, data.data() + 3, dst.data() + 7, src.data() + 5, 4096) ^
                      ~0u,
                  static_cast<uint32_t>(crc32(0, data.data() + 3, 4096)));
    }
    EXPECT_EQ(std::memcmp(dst.data() + 7, src.data() + 5, 4096), 0);
}

class simd_limit : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!cpu_has_zmm_path())
            GTEST_SKIP()
                << "CPU/OS lacks AVX-512F/BW/VL/VBMI + VPCLMULQDQ: no vpclmulqdq-avx512 path";
        if (!g_eal_up) GTEST_SKIP() << "rte_eal_init failed";
        if (env_path() && !env_is(crc32_path::vclmul512))
            GTEST_SKIP() << "UROCE_CRC32_PATH=" << env_path() << " forces another path";
    }
};

TEST_F(simd_limit, no_limit_before_eal) {
    EXPECT_EQ(g_limit_before_eal, 0u);
    EXPECT_EQ(g_active_before_eal, crc32_path::vclmul512);
}

TEST_F(simd_limit, honoured_after_eal) {
    const unsigned limit = rte_vect_get_max_simd_bitwidth();
    if (g_forced_bits) {
        EXPECT_EQ(limit, static_cast<unsigned>(std::atoi(g_forced_bits)));
    }
    const bool allowed = limit >= 512;
    first_long_call_matches_zlib(); /* the first long call re-reads the limit */
    EXPECT_EQ(crc32_active_path(), allowed ? crc32_path::vclmul512 : crc32_path::vclmul)
        << "limit " << limit;
    EXPECT_EQ(crc32_path_supported(crc32_path::vclmul512), allowed);
    EXPECT_EQ(crc32_best_path(), allowed ? crc32_path::vclmul512 : crc32_path::vclmul);
    EXPECT_EQ(icrc_header_uses_zmm(), allowed) << "limit " << limit;
    const crc32_path saved = crc32_active_path();
    EXPECT_EQ(crc32_set_path(crc32_path::vclmul512), allowed);
    ASSERT_TRUE(crc32_set_path(saved));
    long_call_matches_zlib();
    /* The engine itself still works when called directly (the limit is
     * DPDK's policy, not a CPU limit). */
    const char *s = "123456789";
    EXPECT_EQ(crc32_update_vclmul512(~0u, s, 9) ^ ~0u, 0xcbf43926u);
}

/* Changing the limit at run time, then crc32_refresh_path(): a forced path
 * gives way to the best allowed one while the limit is below it, and comes
 * back when it is raised again. Only possible when EAL was not given
 * --force-max-simd-bitwidth (else DPDK refuses the change). */
TEST_F(simd_limit, refresh_after_runtime_change) {
    const unsigned limit = rte_vect_get_max_simd_bitwidth();
    const crc32_path saved = crc32_active_path();
    if (rte_vect_set_max_simd_bitwidth(512) != 0)
        GTEST_SKIP() << "limit forced to " << limit << " on the EAL command line";
    EXPECT_EQ(crc32_refresh_path(), saved); /* nothing asked for zmm yet */
    ASSERT_TRUE(crc32_set_path(crc32_path::vclmul512));
    long_call_matches_zlib();
    ASSERT_EQ(rte_vect_set_max_simd_bitwidth(256), 0);
    EXPECT_EQ(crc32_refresh_path(), crc32_path::vclmul);
    EXPECT_EQ(crc32_active_path(), crc32_path::vclmul);
    EXPECT_FALSE(crc32_path_supported(crc32_path::vclmul512));
    EXPECT_FALSE(icrc_header_uses_zmm());
    long_call_matches_zlib();
    ASSERT_EQ(rte_vect_set_max_simd_bitwidth(512), 0);
    EXPECT_EQ(crc32_refresh_path(), crc32_path::vclmul512);
    EXPECT_TRUE(icrc_header_uses_zmm());
    long_call_matches_zlib();
    ASSERT_EQ(rte_vect_set_max_simd_bitwidth(static_cast<uint16_t>(limit)), 0);
    ASSERT_TRUE(crc32_set_path(saved));
}

} // namespace
} // namespace uroce

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (argc > 1) uroce::g_forced_bits = argv[1];
    uroce::g_active_before_eal = uroce::crc32_active_path();
    uroce::g_limit_before_eal = rte_vect_get_max_simd_bitwidth();

    std::string force;
    std::vector<const char *> args = {"uroce_crc32_simd_limit_test",
                                      "--no-huge",
                                      "-m",
                                      "64",
                                      "--no-pci",
                                      "--no-shconf",
                                      "--no-telemetry",
                                      "-l",
                                      "0",
                                      "--log-level=*:warning"};
    if (uroce::g_forced_bits) {
        force = std::string("--force-max-simd-bitwidth=") + uroce::g_forced_bits;
        args.push_back(force.c_str());
    }
    std::vector<char *> eal_argv;
    for (const char *a : args)
        eal_argv.push_back(const_cast<char *>(a));
    if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) >= 0)
        uroce::g_eal_up = true;
    else
        std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    const int rc = RUN_ALL_TESTS();
    if (uroce::g_eal_up) rte_eal_cleanup();
    return rc;
}

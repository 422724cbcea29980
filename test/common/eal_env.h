/* SPDX-License-Identifier: BSD-3-Clause
 * Test helper: DPDK EAL, initialised once per test binary.
 *
 * EAL cannot be initialised twice in a process (not even after
 * rte_eal_cleanup), so each binary registers this environment once, with a
 * fixed argv that runs here without hugepages, never gtest's argv.
 */
#ifndef UROCE_TEST_EAL_ENV_H
#define UROCE_TEST_EAL_ENV_H

#include <gtest/gtest.h>

#include <iterator>

#include <rte_eal.h>
#include <rte_errno.h>

namespace uroce::test {

class eal_env : public ::testing::Environment {
  public:
    explicit eal_env(const char *memory_mb = "256") : memory_mb_(memory_mb) {}
    void SetUp() override {
        const char *argv[] = {
            "uroce_test",  "--no-huge",      "-m", memory_mb_, "--no-pci",
            "--no-shconf", "--no-telemetry", "-l", "0",        "--log-level=*:warning"};
        ASSERT_GE(rte_eal_init(int(std::size(argv)), const_cast<char **>(argv)), 0)
            << "rte_eal_init: " << rte_strerror(rte_errno);
    }

  private:
    const char *memory_mb_;
};

} // namespace uroce::test

#endif

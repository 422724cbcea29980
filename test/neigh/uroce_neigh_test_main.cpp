/* SPDX-License-Identifier: BSD-3-Clause
 * main() of the lib/neigh tests that need DPDK: EAL and the mbuf pool once. */
#include "uroce_neigh_fixture.h"

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new uroce::neigh_test::eal_env);
    return RUN_ALL_TESTS();
}

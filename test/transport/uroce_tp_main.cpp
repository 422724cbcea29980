/* SPDX-License-Identifier: BSD-3-Clause
 * main() of the transport tests: EAL once, with a fixed argv. */
#include "uroce_tp_fixture.h"

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new uroce::test::eal_env);
    return RUN_ALL_TESTS();
}

/* SPDX-License-Identifier: BSD-3-Clause
 * tsc_clock's cycles-to-nanoseconds conversion (uroce_clock.cpp): the
 * multiply-and-shift stays within 1 ns plus 2^-44 relative of the exact
 * 128-bit quotient, for TSC rates from 1 GHz to 5 GHz and spans from one
 * cycle to a year, and never runs backwards.
 */
#include <gtest/gtest.h>

#include <initializer_list>

#include <uroce/clock.h>

using namespace uroce;

namespace {

uint64_t exact_ns(uint64_t cycles, uint64_t hz) {
    return uint64_t((unsigned __int128)cycles * 1000000000ull / hz);
}

TEST(tsc_clock, multiply_and_shift_matches_the_exact_quotient) {
    for (uint64_t hz :
         {1000000000ull, 2100000000ull, 2399987000ull, 3700000000ull, 4999999999ull}) {
        const uint64_t mult = tsc_clock::ns_mult(hz);
        for (uint64_t cycles : std::initializer_list<uint64_t>{0ull, 1ull, 999ull, 123456789ull, hz,
                                                               3600 * hz, 365 * 86400 * hz}) {
            const uint64_t want = exact_ns(cycles, hz);
            const uint64_t got = tsc_clock::cycles_to_ns(cycles, mult);
            const uint64_t tol = 1 + (want >> 44);
            EXPECT_LE(got > want ? got - want : want - got, tol)
                << "hz " << hz << " cycles " << cycles << ": " << got << " vs " << want;
        }
    }
}

TEST(tsc_clock, never_runs_backwards) {
    const uint64_t mult = tsc_clock::ns_mult(2399987000ull);
    uint64_t prev = 0;
    for (uint64_t c = 0; c < 2'000'000; c += 7) {
        const uint64_t ns = tsc_clock::cycles_to_ns(c, mult);
        ASSERT_GE(ns, prev) << c;
        prev = ns;
    }
}

/* 1 GHz: one cycle is one nanosecond, exactly */
static_assert(tsc_clock::ns_mult(1000000000ull) == 1ull << 48);
static_assert(tsc_clock::cycles_to_ns(1000000000ull, tsc_clock::ns_mult(1000000000ull)) ==
              1000000000ull);

} // namespace

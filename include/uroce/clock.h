/* SPDX-License-Identifier: BSD-3-Clause
 * Time source for the transport's timers: the TSC in production, a manual
 * clock in tests (deterministic timeouts without sleeping).
 */
#ifndef UROCE_CLOCK_H
#define UROCE_CLOCK_H

#include <uroce/export.h>

#include <cstdint>

namespace uroce {

class UROCE_API clock_source {
  public:
    virtual ~clock_source() = default;
    virtual uint64_t now_ns() = 0;
};

/* rte_rdtsc() scaled by rte_get_tsc_hz() (EAL must be initialised). */
class UROCE_API tsc_clock final : public clock_source {
  public:
    tsc_clock();
    uint64_t now_ns() override;

    /* Cycles to nanoseconds as a multiply and a shift (Linux's clocksource
     * mult/shift), not a 128-bit division: the transport reads the clock
     * for every timer it arms, and __udivti3 was 2-4% of a 64 B SEND's
     * cycles. ns_mult(hz) is 10^9 / hz in 16.48 fixed point (48 fraction
     * bits: with 32, the truncated multiplier was off by up to 1e-9, 3 us
     * an hour at 3.7 GHz); the result is within 1 ns + 2^-44 relative of
     * the exact quotient, and the product fits 128 bits for any 64-bit
     * cycle count from a TSC of 1 MHz or more. */
    static constexpr uint64_t ns_mult(uint64_t hz) {
        return uint64_t(((unsigned __int128)1000000000ull << 48) / hz);
    }
    static constexpr uint64_t cycles_to_ns(uint64_t cycles, uint64_t mult) {
        return uint64_t(((unsigned __int128)cycles * mult) >> 48);
    }

  private:
    uint64_t mult_; /* ns_mult(rte_get_tsc_hz()) */
    uint64_t start_;
};

/* Time moves only when the test says so. */
class UROCE_API manual_clock final : public clock_source {
  public:
    explicit manual_clock(uint64_t start_ns = 0) : now_(start_ns) {}
    uint64_t now_ns() override { return now_; }
    void advance(uint64_t ns) { now_ += ns; }
    void set(uint64_t ns) { now_ = ns; }

  private:
    uint64_t now_;
};

/* The process-wide TSC clock used when a device gets no clock. */
UROCE_API clock_source *default_clock();

} // namespace uroce

#endif

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

  private:
    uint64_t hz_;
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

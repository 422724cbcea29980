/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/clock.h>

#include <rte_cycles.h>

namespace uroce {

tsc_clock::tsc_clock()
    : mult_(ns_mult(rte_get_tsc_hz() ? rte_get_tsc_hz() : 1000000000ull)), start_(rte_rdtsc()) {}

uint64_t tsc_clock::now_ns() {
    return cycles_to_ns(rte_rdtsc() - start_, mult_);
}

clock_source *default_clock() {
    static tsc_clock c;
    return &c;
}

} // namespace uroce

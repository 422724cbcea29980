/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/clock.h>

#include <rte_cycles.h>

namespace uroce {

tsc_clock::tsc_clock() : hz_(rte_get_tsc_hz()), start_(rte_rdtsc()) {
    if (hz_ == 0) hz_ = 1000000000ull;
}

uint64_t tsc_clock::now_ns() {
    uint64_t c = rte_rdtsc() - start_;
    return uint64_t((unsigned __int128)c * 1000000000ull / hz_);
}

clock_source *default_clock() {
    static tsc_clock c;
    return &c;
}

} // namespace uroce

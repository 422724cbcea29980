/* SPDX-License-Identifier: BSD-3-Clause
 * The transport's on/off switches from the environment, read once by their
 * users at start-up: UROCE_HUGEMEM (uroce_hugemem.cpp) and UROCE_SQ_STREAM
 * (device::sq_stream). Only "0" and "1" say anything; any other value, or
 * none, leaves the default.
 */
#ifndef UROCE_ENV_H
#define UROCE_ENV_H

#include <cstdlib>
#include <optional>

namespace uroce {

static inline std::optional<bool> env_switch(const char *name) {
    const char *e = std::getenv(name);
    if (!e || !e[0] || e[1]) return std::nullopt;
    if (e[0] == '0') return false;
    if (e[0] == '1') return true;
    return std::nullopt;
}

} // namespace uroce

#endif

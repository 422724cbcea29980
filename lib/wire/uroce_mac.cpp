/* SPDX-License-Identifier: BSD-3-Clause
 * The MAC address's text form: "02:00:00:00:00:01" out, ':' or '-' separated
 * hex octets in.
 */
#include <uroce/mac.h>

#include <cstdio>

namespace uroce {

std::string mac_addr::to_string() const {
    char buf[18];
    std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                  b[5]);
    return buf;
}

std::optional<mac_addr> mac_addr::parse(std::string_view text) {
    mac_addr m;
    size_t pos = 0;
    for (int i = 0; i < 6; i++) {
        if (i > 0) {
            if (pos >= text.size() || (text[pos] != ':' && text[pos] != '-')) return std::nullopt;
            pos++;
        }
        int v = 0, digits = 0;
        while (pos < text.size() && digits < 2) {
            char c = text[pos];
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) break;
            v = v * 16 + d;
            digits++;
            pos++;
        }
        if (digits == 0) return std::nullopt;
        m.b[i] = uint8_t(v);
    }
    if (pos != text.size()) return std::nullopt;
    return m;
}

} // namespace uroce

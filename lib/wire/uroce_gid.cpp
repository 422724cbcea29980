/* SPDX-License-Identifier: BSD-3-Clause
 * GID text forms: RFC 5952 (via inet_ntop/inet_pton) and ibv_rc_pingpong's hex.
 */
#include <uroce/gid.h>

#include <arpa/inet.h>

namespace uroce {

std::string gid::to_string() const {
    char buf[INET6_ADDRSTRLEN];
    /* glibc prints IPv4-mapped addresses as ::ffff:a.b.c.d, the form rxe shows. */
    if (!inet_ntop(AF_INET6, raw.data(), buf, sizeof(buf))) return {};
    return buf;
}

std::optional<gid> gid::parse(std::string_view text) {
    char buf[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof(buf)) return std::nullopt;
    text.copy(buf, text.size());
    buf[text.size()] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) == 1) return from_ipv4(ntohl(v4.s_addr));
    gid g;
    if (inet_pton(AF_INET6, buf, g.raw.data()) == 1) return g;
    return std::nullopt;
}

std::string gid::to_wire_hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(32, '0');
    for (size_t i = 0; i < 16; i++) {
        s[2 * i] = digits[raw[i] >> 4];
        s[2 * i + 1] = digits[raw[i] & 0xf];
    }
    return s;
}

std::optional<gid> gid::from_wire_hex(std::string_view hex) {
    if (hex.size() != 32) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    gid g;
    for (size_t i = 0; i < 16; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        g.raw[i] = uint8_t(hi << 4 | lo);
    }
    return g;
}

} // namespace uroce

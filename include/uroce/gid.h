/* SPDX-License-Identifier: BSD-3-Clause
 * GIDs for RoCEv2: a 128-bit IPv6 address, or an IPv4 address carried as an
 * IPv4-mapped IPv6 address ::ffff:a.b.c.d (IBTA Annex A17.4.5.1; this is how
 * rxe and hardware RoCE NICs fill GID index 1 for an IPv4 netdev address).
 */
#ifndef UROCE_GID_H
#define UROCE_GID_H

#include <uroce/export.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <uroce/byteorder.h>

namespace uroce {

struct UROCE_API gid {
    std::array<uint8_t, 16> raw{}; /* network order, as on the wire and in ibv_gid */

    static constexpr std::array<uint8_t, 12> v4_mapped_prefix{0, 0, 0, 0, 0,    0,
                                                              0, 0, 0, 0, 0xff, 0xff};

    /* ::ffff:a.b.c.d from an IPv4 address in host order. */
    static gid from_ipv4(uint32_t addr_host) {
        gid g;
        std::memcpy(g.raw.data(), v4_mapped_prefix.data(), v4_mapped_prefix.size());
        store_be32(g.raw.data() + 12, addr_host);
        return g;
    }
    static gid from_bytes(const uint8_t *bytes16) {
        gid g;
        std::memcpy(g.raw.data(), bytes16, 16);
        return g;
    }
    bool is_ipv4_mapped() const {
        return std::memcmp(raw.data(), v4_mapped_prefix.data(), v4_mapped_prefix.size()) == 0;
    }
    /* Host-order IPv4 address; meaningful only when is_ipv4_mapped(). */
    uint32_t ipv4() const { return load_be32(raw.data() + 12); }
    /* The interface id (low 64 bits); ibv_rc_pingpong adds a GRH only when it is non-zero. */
    uint64_t interface_id() const { return load_be64(raw.data() + 8); }
    bool is_zero() const {
        for (uint8_t b : raw)
            if (b) return false;
        return true;
    }

    /* "::ffff:10.0.0.1" for IPv4-mapped GIDs, RFC 5952 text for the others. */
    std::string to_string() const;
    /* Accepts dotted IPv4 ("10.0.0.1", mapped), IPv6 text ("fe80::1", "::ffff:10.0.0.1"). */
    static std::optional<gid> parse(std::string_view text);
    /* The 32-hex-digit form ibv_rc_pingpong exchanges (gid_to_wire_gid: raw bytes in order). */
    std::string to_wire_hex() const;
    static std::optional<gid> from_wire_hex(std::string_view hex32);

    friend bool operator==(const gid &, const gid &) = default;
};
static_assert(sizeof(gid) == 16);

} // namespace uroce

#endif

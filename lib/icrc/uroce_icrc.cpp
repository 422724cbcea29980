/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: RoCEv2 Invariant CRC (IBTA Annex A17; Linux rxe_icrc.c semantics).
 *
 * Hot path (icrc_begin): the variant header fields must read as all ones.
 * Rather than patching a copy, the PCLMULQDQ engine ORs a constexpr mask into
 * each 16-byte block as it loads it (crc32_update_masked_clmul): masked
 * fields become ones, every other byte is ORed with zero. Packets of up to
 * 256 bytes from the IP header take one such call; longer ones a masked call
 * over the headers (rounded up to whole 16-byte blocks) and a plain
 * crc32_update over the rest, in place. Without PCLMULQDQ the same mask is
 * applied to a small stack copy of the headers.
 */
#include <uroce/icrc.h>
#include "crc32_fold_consts.h"
#include "crc32_internal.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>

namespace uroce {
namespace {

using crc32_detail::poly_reflected;

/* Header field offsets (IBTA A17.3.3 masked fields; RFC 791, RFC 8200, RFC 768,
 * IBTA 9.2 BTH). Kept local on purpose: lib/wire is a separate component. */
constexpr unsigned ipv4_tos_off = 1; /* DSCP + ECN */
constexpr unsigned ipv4_ttl_off = 8;
constexpr unsigned ipv4_csum_off = 10; /* 2 bytes */
constexpr unsigned ipv6_hdr_len = 40;
constexpr unsigned ipv6_hop_limit_off =
    7; /* bytes 0 (low nibble) .. 3: traffic class + flow label */
constexpr unsigned udp_hdr_len = 8;
constexpr unsigned udp_csum_off = 6; /* 2 bytes */
constexpr unsigned bth_len = 12;
constexpr unsigned bth_resv8a_off = 4; /* FECN, BECN, resv6 */

constexpr unsigned buf_max = 256;                        /* one-call packets; mask table width */
constexpr unsigned hdr_max = 60 + udp_hdr_len + bth_len; /* IPv4 IHL=15 */
static_assert(hdr_max + 16 <= buf_max, "the buffer must hold the largest header");
static_assert(icrc_fuse_min == buf_max + 1, "icrc_fuse_min: the first length icrc_begin splits");

/* One mask per header layout: IPv4 with IHL 5..15 (index IHL-5), IPv6 (index 11). */
constexpr unsigned n_layouts = 12;
constexpr unsigned ipv6_layout = 11;

struct alignas(16) mask_set {
    uint8_t m[n_layouts][buf_max];
    uint8_t hdr_len[n_layouts];
};

constexpr mask_set make_masks() {
    mask_set s{};
    for (unsigned ihl = 5; ihl <= 15; ihl++) {
        uint8_t *m = s.m[ihl - 5];
        const unsigned ip_len = ihl * 4;
        m[ipv4_tos_off] = 0xFF;
        m[ipv4_ttl_off] = 0xFF;
        m[ipv4_csum_off] = m[ipv4_csum_off + 1] = 0xFF;
        m[ip_len + udp_csum_off] = m[ip_len + udp_csum_off + 1] = 0xFF;
        m[ip_len + udp_hdr_len + bth_resv8a_off] = 0xFF;
        s.hdr_len[ihl - 5] = static_cast<uint8_t>(ip_len + udp_hdr_len + bth_len);
    }
    uint8_t *m = s.m[ipv6_layout];
    m[0] = 0x0F;               /* low nibble of byte 0: traffic class bits 7..4 */
    m[1] = m[2] = m[3] = 0xFF; /* traffic class bits 3..0, flow label */
    m[ipv6_hop_limit_off] = 0xFF;
    m[ipv6_hdr_len + udp_csum_off] = m[ipv6_hdr_len + udp_csum_off + 1] = 0xFF;
    m[ipv6_hdr_len + udp_hdr_len + bth_resv8a_off] = 0xFF;
    s.hdr_len[ipv6_layout] = ipv6_hdr_len + udp_hdr_len + bth_len;
    return s;
}

alignas(64) constexpr mask_set masks = make_masks();

/* Raw register after 8 x 0xFF from ~0: the ICRC seed. */
constexpr uint32_t seed_from_prefix() {
    uint32_t reg = ~0u;
    for (int i = 0; i < 8; i++) {
        reg ^= 0xFFu;
        for (int b = 0; b < 8; b++)
            reg = (reg >> 1) ^ ((reg & 1u) ? poly_reflected : 0u);
    }
    return reg;
}
static_assert(seed_from_prefix() == icrc_seed, "ICRC seed must be the register after 8 x 0xFF");

inline unsigned layout_of(const uint8_t *ip) {
    if ((ip[0] >> 4) == 6) return ipv6_layout;
    const unsigned ihl = ip[0] & 0x0Fu;
    return ihl < 5 ? 0 : ihl - 5; /* IHL < 5 is malformed; mask as if 5 */
}

/* Runts and other odd cases: byte-wise, correct but not fast. */
[[gnu::noinline]] uint32_t begin_slow(const uint8_t *src, size_t len, const uint8_t *mask) {
    uint8_t buf[buf_max] = {};
    const size_t n = std::min<size_t>(len, buf_max);
    for (size_t i = 0; i < n; i++)
        buf[i] = src[i] | mask[i];
    uint32_t reg = crc32_update(icrc_seed, buf, n);
    if (len > n) reg = crc32_update(reg, src + n, len - n);
    return reg;
}

} // namespace

namespace {

/* The layout is passed as a constant on the two hot paths, so that the mask
 * address does not depend on the packet's first byte: the mask loads can
 * then issue before that byte arrives (a predicted branch, not a data
 * dependency). */
[[gnu::always_inline]] inline icrc_state begin_layout(const uint8_t *src, size_t len,
                                                      unsigned layout) {
    const uint8_t *mask = masks.m[layout];
    const unsigned hdr = masks.hdr_len[layout];
    if (len < hdr) [[unlikely]]
        return {begin_slow(src, len, mask)};

    /* Masked bytes: the whole packet if it is short, else the headers
     * rounded up to whole 16-byte blocks (48, 64 or 80 bytes). */
    const size_t n0 = len <= buf_max ? len : (hdr + 15u) & ~15u;
    uint32_t reg = crc32_detail::icrc_masked(src, mask, n0);
    if (len > n0) reg = crc32_update(reg, src + n0, len - n0);
    return {reg};
}

/* icrc_begin's body, inlined into icrc_compute as well: a frame's ICRC is
 * then one call into the library and one into the engine. */
[[gnu::always_inline]] inline icrc_state begin(const void *ip_hdr, size_t len) {
    const uint8_t *src = static_cast<const uint8_t *>(ip_hdr);
    if (len == 0) [[unlikely]]
        return {icrc_seed};
    if (src[0] == 0x45) [[likely]] /* IPv4 without options */
        return begin_layout(src, len, 0);
    if ((src[0] >> 4) == 6) return begin_layout(src, len, ipv6_layout);
    return begin_layout(src, len, layout_of(src));
}

} // namespace

icrc_state icrc_begin(const void *ip_hdr, size_t len) {
    return begin(ip_hdr, len);
}

namespace {

bool fused_from_env() {
    const char *e = std::getenv("UROCE_FUSED_COPY");
    return !(e && e[0] == '0' && e[1] == 0);
}

std::atomic<bool> g_fused_copy{fused_from_env()};

} // namespace

bool icrc_fused_copy() {
    return g_fused_copy.load(std::memory_order_relaxed);
}

void icrc_set_fused_copy(bool on) {
    g_fused_copy.store(on, std::memory_order_relaxed);
}

uint32_t icrc_compute(const void *ip_hdr, size_t len) {
    return icrc_finish(begin(ip_hdr, len));
}

void icrc_check_begin(icrc_check &c, const void *ip_hdr, size_t hdr_len, uint32_t payload_len,
                      uint32_t tail_len) {
    const uint8_t *ip = static_cast<const uint8_t *>(ip_hdr);
    c.payload = ip + hdr_len;
    c.payload_len = payload_len;
    c.done = 0;
    c.tail_len = tail_len;
    c.wire = icrc_read_wire(c.payload + payload_len + tail_len);
    c.st = icrc_begin(ip, hdr_len);
    c.pending = true;
    c.ok = false;
}

bool icrc_check_settle(icrc_check &c) {
    if (!c.pending) return c.ok;
    /* payload bytes not copied (a drop, or a partial copy), then the pad */
    if (c.done < c.payload_len) icrc_update(c.st, c.payload + c.done, c.payload_len - c.done);
    icrc_update(c.st, c.payload + c.payload_len, c.tail_len);
    c.done = c.payload_len;
    c.pending = false;
    c.ok = icrc_finish(c.st) == c.wire;
    return c.ok;
}

uint32_t icrc_compute_mbuf(const struct rte_mbuf *m, uint32_t l3_offset, uint32_t icrc_offset) {
    icrc_offset = std::min(icrc_offset, m->pkt_len);
    l3_offset = std::min(l3_offset, icrc_offset);
    uint32_t remaining = icrc_offset - l3_offset;

    /* Find the segment holding the IP header. */
    const struct rte_mbuf *seg = m;
    uint32_t off = l3_offset;
    while (seg && off >= seg->data_len) {
        off -= seg->data_len;
        seg = seg->next;
    }
    if (!seg || remaining == 0) return icrc_finish(icrc_state{icrc_seed});

    icrc_state st;
    const uint8_t *ip = rte_pktmbuf_mtod_offset(seg, const uint8_t *, off);
    const uint32_t avail = seg->data_len - off; /* > 0 */
    const uint32_t need = std::min<uint32_t>(remaining, masks.hdr_len[layout_of(ip)]);
    if (avail >= need) {
        const uint32_t n = std::min(avail, remaining);
        st = icrc_begin(ip, n);
        remaining -= n;
        off += n;
    } else {
        /* Headers straddle segments (rare): gather them first. */
        uint8_t hdr[buf_max];
        const uint32_t want = std::min<uint32_t>(remaining, buf_max);
        uint32_t got = 0;
        while (got < want && seg) {
            const uint32_t a = std::min<uint32_t>(seg->data_len - off, want - got);
            std::memcpy(hdr + got, rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), a);
            got += a;
            off += a;
            if (off == seg->data_len) {
                seg = seg->next;
                off = 0;
            }
        }
        st = icrc_begin(hdr, got);
        remaining -= got;
    }
    /* The rest, segment by segment. */
    while (remaining && seg) {
        if (off >= seg->data_len) {
            seg = seg->next;
            off = 0;
            continue;
        }
        const uint32_t a = std::min<uint32_t>(seg->data_len - off, remaining);
        icrc_update(st, rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), a);
        remaining -= a;
        off += a;
    }
    return icrc_finish(st);
}

} // namespace uroce

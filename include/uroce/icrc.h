/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: the RoCEv2 Invariant CRC (ICRC).
 *
 * Definition (IBTA Annex A17 "RoCEv2", section A17.3.3; same as Linux
 * drivers/infiniband/sw/rxe/rxe_icrc.c): CRC-32 (IEEE 802.3, as zlib) over
 *   1. 8 bytes of 0xFF (stand-in for the masked LRH of native InfiniBand),
 *   2. the IP header with the variant fields set to all ones
 *        IPv4: TOS (DSCP+ECN), TTL, header checksum
 *        IPv6: traffic class, flow label, hop limit,
 *   3. the UDP header with the checksum set to 0xFFFF,
 *   4. the BTH with byte 4 (FECN, BECN, resv6) set to 0xFF,
 *   5. everything after the BTH (extension headers, payload, pad) up to but
 *      not including the 4-byte ICRC field.
 * The ICRC is stored least-significant byte first (little-endian).
 *
 * The 8 x 0xFF prefix is folded into a constant seed: the raw CRC register
 * after those 8 bytes from ~0 is 0xdebb20e3.
 */
#ifndef UROCE_ICRC_H
#define UROCE_ICRC_H

#include <uroce/export.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <uroce/crc32.h>

struct rte_mbuf;

namespace uroce {

/* Raw register after 8 x 0xFF from ~0 (checked at compile time in uroce_icrc.cpp). */
inline constexpr uint32_t icrc_seed = 0xdebb20e3u;

/* ICRC value (final-inverted, zlib convention) of a contiguous packet.
 * ip_hdr: start of the IPv4/IPv6 header (version from its first nibble);
 * len: bytes from there up to (excluding) the ICRC field.
 * Compare with icrc_read_wire(ip_hdr + len). */
UROCE_API uint32_t icrc_compute(const void *ip_hdr, size_t len);

/* Incremental form, for packets in several pieces. */
struct icrc_state {
    uint32_t reg;
};

/* Masks IP/UDP/BTH in a small stack copy (the payload is never copied) and
 * continues over the rest of the contiguous_len bytes. contiguous_len must
 * cover IP+UDP+BTH (40 bytes for IPv4 without options, 60 for IPv6); if it
 * does not (a runt), only the bytes present are used, masked as far as they
 * go -- the result is then just some value that will not match. An unknown
 * IP version is treated as IPv4. */
UROCE_API icrc_state icrc_begin(const void *ip_hdr, size_t contiguous_len);

static inline void icrc_update(icrc_state &s, const void *p, size_t n) {
    s.reg = crc32_update(s.reg, p, n);
}

/* The payload's copy and its part of the ICRC in one pass (crc32_copy_update):
 * copies n bytes from src to dst (no overlap) and continues the ICRC over
 * them, in the order the ICRC covers them (headers first, IBTA A17.3.3). */
static inline void icrc_copy_update(icrc_state &s, void *dst, const void *src, size_t n) {
    s.reg = crc32_copy_update(s.reg, dst, src, n);
}

static inline uint32_t icrc_finish(const icrc_state &s) {
    return ~s.reg;
}

/* Whether the transport fuses its payload copies with the ICRC
 * (icrc_copy_update on send, and on receive where doc/security.md allows
 * it). On by default; UROCE_FUSED_COPY=0 in the environment turns it off at
 * start-up, icrc_set_fused_copy at run time (benchmarks compare the two in
 * one run). Both settings give the same frames and the same results. */
UROCE_API bool icrc_fused_copy();
/* Frames of up to this many bytes from the IP header to the ICRC take one
 * masked CRC call (icrc_compute); splitting them into headers and a fused
 * payload costs more than the copy it saves (measured, doc/icrc.md), so the
 * transport fuses only longer ones. */
inline constexpr size_t icrc_fuse_min = 257;
UROCE_API void icrc_set_fused_copy(bool on);

/* A received frame's ICRC, checked while its payload is copied out of it (the
 * receive side of the fused copy). icrc_check_begin folds the masked headers
 * and remembers where the payload is; icrc_check_copy copies payload bytes
 * and folds them in the same pass, in order; icrc_check_settle folds what was
 * not copied (the rest of the payload, the pad), compares with the stored
 * ICRC and returns the verdict. The verdict is unknown until then: whoever
 * defers the check must not act on the frame before settling it (the
 * transport's rules: doc/security.md, "Fused receive"). */
struct icrc_check {
    const uint8_t *payload = nullptr; /* in the frame */
    uint32_t payload_len = 0;
    uint32_t done = 0;     /* payload bytes folded so far, from the start */
    uint32_t tail_len = 0; /* bytes between the payload and the ICRC (the pad) */
    uint32_t wire = 0;     /* the ICRC stored in the frame */
    icrc_state st{icrc_seed};
    bool pending = false; /* begun and not settled */
    bool ok = true;       /* the verdict, once settled */
};

/* ip_hdr .. ip_hdr + hdr_len: IP header up to the payload (contiguous);
 * then payload_len payload bytes, tail_len pad bytes and the 4-byte ICRC
 * field, all contiguous. */
UROCE_API void icrc_check_begin(icrc_check &c, const void *ip_hdr, size_t hdr_len,
                                uint32_t payload_len, uint32_t tail_len);

/* Copy payload bytes [off, off + n) to dst. Folded in the same pass when
 * they continue the bytes folded so far; a gap before them is folded first
 * (CRC only); bytes folded before are copied plainly. */
static inline void icrc_check_copy(icrc_check &c, uint32_t off, void *dst, uint32_t n) {
    if (c.pending && off >= c.done) {
        if (off > c.done) [[unlikely]] {
            icrc_update(c.st, c.payload + c.done, off - c.done);
            c.done = off;
        }
        icrc_copy_update(c.st, dst, c.payload + off, n);
        c.done += n;
        return;
    }
    std::memcpy(dst, c.payload + off, n);
}

/* Copy n bytes from src (a frame already trusted, or one whose own check
 * cannot fold them) to dst, folding up to n more payload bytes of the frame
 * pending in ahead (the next one) in the same pass: the copy runs in the
 * slots the CRC's multiplies leave idle (crc32_update_place). Nothing is
 * decided about ahead's frame here, only its CRC advanced. */
static inline void icrc_check_place(icrc_check &ahead, void *dst, const void *src, uint32_t n) {
    if (ahead.pending && ahead.done < ahead.payload_len) {
        const uint32_t left = ahead.payload_len - ahead.done;
        const uint32_t k = n < left ? n : left;
        ahead.st.reg = crc32_update_place(ahead.st.reg, ahead.payload + ahead.done, dst, src, k);
        ahead.done += k;
        if (k < n)
            std::memcpy(static_cast<uint8_t *>(dst) + k, static_cast<const uint8_t *>(src) + k,
                        n - k);
        return;
    }
    std::memcpy(dst, src, n);
}

/* The verdict: true if the frame's ICRC is good. Folds the rest on the first
 * call; later calls return the same verdict. */
UROCE_API bool icrc_check_settle(icrc_check &c);

/* Over an rte_mbuf chain: l3_offset = offset of the IP header from the start
 * of the packet, icrc_offset = offset of the ICRC field (pkt_len - 4 for a
 * well-formed packet). Walks the segments; copies at most the headers, and
 * only if they straddle a segment boundary. Offsets beyond pkt_len are
 * clamped. */
UROCE_API uint32_t icrc_compute_mbuf(const struct rte_mbuf *m, uint32_t l3_offset,
                                     uint32_t icrc_offset);

/* The ICRC as stored on the wire (little-endian). */
static inline uint32_t icrc_read_wire(const void *icrc_field) {
    uint32_t v;
    std::memcpy(&v, icrc_field, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* Store an ICRC value in wire order. */
static inline void icrc_write_wire(void *icrc_field, uint32_t icrc) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    icrc = __builtin_bswap32(icrc);
#endif
    std::memcpy(icrc_field, &icrc, sizeof(icrc));
}

} // namespace uroce

#endif

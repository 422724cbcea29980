/* SPDX-License-Identifier: BSD-3-Clause
 * The BTH opcode table: constexpr data, as rxe_opcode.c keeps it.
 *
 * For every RC, UC and UD opcode (IBTA 9.2.1 table 36, values as in Linux
 * include/rdma/ib_pack.h) and the RoCEv2 CNP (Annex A17.9.3): its name, the
 * extension headers it carries and their offsets after the BTH, whether it
 * carries payload, its position in a message (first/middle/last/only) and
 * whether it is a request or a response. The parser, the builder, the
 * transport and uroce-dump all read this one table.
 */
#ifndef UROCE_OPCODE_H
#define UROCE_OPCODE_H

#include <uroce/export.h>

#include <array>
#include <cstdint>

#include <uroce/hdr.h>

namespace uroce {

enum class ib_opcode : uint8_t {
    /* RC, IBTA 9.2.1: transport bits 7:5 = 000 */
    rc_send_first = 0x00,
    rc_send_middle = 0x01,
    rc_send_last = 0x02,
    rc_send_last_imm = 0x03,
    rc_send_only = 0x04,
    rc_send_only_imm = 0x05,
    rc_rdma_write_first = 0x06,
    rc_rdma_write_middle = 0x07,
    rc_rdma_write_last = 0x08,
    rc_rdma_write_last_imm = 0x09,
    rc_rdma_write_only = 0x0a,
    rc_rdma_write_only_imm = 0x0b,
    rc_rdma_read_request = 0x0c,
    rc_rdma_read_response_first = 0x0d,
    rc_rdma_read_response_middle = 0x0e,
    rc_rdma_read_response_last = 0x0f,
    rc_rdma_read_response_only = 0x10,
    rc_acknowledge = 0x11,
    rc_atomic_acknowledge = 0x12,
    rc_compare_swap = 0x13,
    rc_fetch_add = 0x14,
    rc_send_last_inv = 0x16,
    rc_send_only_inv = 0x17,
    rc_flush = 0x1c,
    rc_atomic_write = 0x1d,
    /* UC: 001 */
    uc_send_first = 0x20,
    uc_send_middle = 0x21,
    uc_send_last = 0x22,
    uc_send_last_imm = 0x23,
    uc_send_only = 0x24,
    uc_send_only_imm = 0x25,
    uc_rdma_write_first = 0x26,
    uc_rdma_write_middle = 0x27,
    uc_rdma_write_last = 0x28,
    uc_rdma_write_last_imm = 0x29,
    uc_rdma_write_only = 0x2a,
    uc_rdma_write_only_imm = 0x2b,
    /* UD: 011 */
    ud_send_only = 0x64,
    ud_send_only_imm = 0x65,
    /* RoCEv2 congestion notification, Annex A17.9.3 */
    cnp = 0x81,
    /* uroce's selective repeat between uroce peers (doc/loss-recovery.md),
     * in the manufacturer-specific range 0xC0-0xFF (IBTA 9.2.1 table 36):
     * RDMA WRITE packets that each carry a RETH with their own address and
     * place in the message, and a SACK. Only a QP with
     * qp_attr::selective_repeat sends or accepts them. */
    sr_rdma_write_first = 0xc0,
    sr_rdma_write_middle = 0xc1,
    sr_rdma_write_last = 0xc2,
    sr_rdma_write_only = 0xc3,
    sr_sack = 0xc4,
};

static inline constexpr uint8_t to_u8(ib_opcode op) {
    return static_cast<uint8_t>(op);
}

/* Transport service, from BTH opcode bits 7:5 (IBTA 9.2.1). */
enum class ib_transport : uint8_t { rc = 0, uc = 1, rd = 2, ud = 3, cnp = 4, xrc = 5, none = 7 };

/* What an opcode carries and means; one bit each (rxe_opcode.h's rxe_hdr_mask). */
namespace op_flag {
inline constexpr uint32_t reth = 1u << 0;
inline constexpr uint32_t aeth = 1u << 1;
inline constexpr uint32_t atomic_eth = 1u << 2;
inline constexpr uint32_t atomic_ack_eth = 1u << 3;
inline constexpr uint32_t immdt = 1u << 4;
inline constexpr uint32_t ieth = 1u << 5;
inline constexpr uint32_t deth = 1u << 6;
inline constexpr uint32_t feth = 1u << 7;
inline constexpr uint32_t cnp_body = 1u << 8;
inline constexpr uint32_t payload = 1u << 9;   /* may carry payload bytes */
inline constexpr uint32_t request = 1u << 10;  /* requester -> responder */
inline constexpr uint32_t response = 1u << 11; /* responder -> requester */
inline constexpr uint32_t send = 1u << 12;
inline constexpr uint32_t write = 1u << 13;
inline constexpr uint32_t read = 1u << 14;
inline constexpr uint32_t atomic = 1u << 15;
inline constexpr uint32_t ack = 1u << 16;
inline constexpr uint32_t flush = 1u << 17;
inline constexpr uint32_t atomic_write = 1u << 18;
inline constexpr uint32_t first = 1u << 19; /* starts a message */
inline constexpr uint32_t middle = 1u << 20;
inline constexpr uint32_t last = 1u << 21;     /* ends a message */
inline constexpr uint32_t sack_eth = 1u << 22; /* uroce SACK bitmap */
inline constexpr uint32_t vendor = 1u << 23;   /* manufacturer-specific (uroce selective repeat) */
inline constexpr uint32_t valid = 1u << 31;
inline constexpr uint32_t only = first | last;
} // namespace op_flag

/* Extension headers, in the order they follow the BTH on the wire
 * (IBTA 9.2 figure 42; FETH precedes RETH as in rxe_opcode.c). */
enum class ext_hdr : uint8_t {
    deth,
    feth,
    reth,
    atomic_eth,
    aeth,
    atomic_ack_eth,
    immdt,
    ieth,
    cnp_body,
    sack_eth,
    count
};

struct opcode_info {
    const char *name = nullptr; /* IBTA-style, e.g. "RC SEND_ONLY" */
    uint32_t flags = 0;
    ib_transport transport = ib_transport::none;
    uint8_t ext_len = 0; /* bytes of extension headers after the BTH */
    /* offset of each extension header from the end of the BTH; absent ones read 0xff */
    std::array<uint8_t, size_t(ext_hdr::count)> ext_offset{0xff, 0xff, 0xff, 0xff, 0xff,
                                                           0xff, 0xff, 0xff, 0xff, 0xff};

    constexpr bool is_valid() const { return flags & op_flag::valid; }
    constexpr bool has(uint32_t f) const { return (flags & f) == f; }
    constexpr bool has_any(uint32_t f) const { return (flags & f) != 0; }
    constexpr uint8_t offset(ext_hdr h) const { return ext_offset[size_t(h)]; }
};

namespace detail {

inline constexpr struct {
    ext_hdr hdr;
    uint32_t flag;
    uint8_t size;
} ext_layout[] = {
    {ext_hdr::deth, op_flag::deth, sizeof(deth)},
    {ext_hdr::feth, op_flag::feth, sizeof(feth)},
    {ext_hdr::reth, op_flag::reth, sizeof(reth)},
    {ext_hdr::atomic_eth, op_flag::atomic_eth, sizeof(atomic_eth)},
    {ext_hdr::aeth, op_flag::aeth, sizeof(aeth)},
    {ext_hdr::atomic_ack_eth, op_flag::atomic_ack_eth, sizeof(atomic_ack_eth)},
    {ext_hdr::immdt, op_flag::immdt, sizeof(immdt)},
    {ext_hdr::ieth, op_flag::ieth, sizeof(ieth)},
    {ext_hdr::cnp_body, op_flag::cnp_body, sizeof(cnp_body)},
    {ext_hdr::sack_eth, op_flag::sack_eth, sizeof(sack_eth)},
};

constexpr opcode_info make_op(const char *name, ib_transport t, uint32_t flags) {
    opcode_info info;
    info.name = name;
    info.transport = t;
    info.flags = flags | op_flag::valid;
    uint8_t off = 0;
    for (const auto &e : ext_layout) {
        if (flags & e.flag) {
            info.ext_offset[size_t(e.hdr)] = off;
            off = uint8_t(off + e.size);
        }
    }
    info.ext_len = off;
    return info;
}

constexpr std::array<opcode_info, 256> make_opcode_table() {
    namespace f = op_flag;
    constexpr auto rc = ib_transport::rc;
    constexpr auto uc = ib_transport::uc;
    constexpr auto ud = ib_transport::ud;
    constexpr uint32_t req = f::request;
    constexpr uint32_t rsp = f::response;
    std::array<opcode_info, 256> t{};
    auto set = [&t](ib_opcode op, const opcode_info &i) { t[to_u8(op)] = i; };

    /* RC requests: IBTA 9.2.1 table 36 */
    set(ib_opcode::rc_send_first,
        make_op("RC SEND_FIRST", rc, req | f::send | f::payload | f::first));
    set(ib_opcode::rc_send_middle,
        make_op("RC SEND_MIDDLE", rc, req | f::send | f::payload | f::middle));
    set(ib_opcode::rc_send_last, make_op("RC SEND_LAST", rc, req | f::send | f::payload | f::last));
    set(ib_opcode::rc_send_last_imm, make_op("RC SEND_LAST_WITH_IMMEDIATE", rc,
                                             req | f::send | f::payload | f::last | f::immdt));
    set(ib_opcode::rc_send_only, make_op("RC SEND_ONLY", rc, req | f::send | f::payload | f::only));
    set(ib_opcode::rc_send_only_imm, make_op("RC SEND_ONLY_WITH_IMMEDIATE", rc,
                                             req | f::send | f::payload | f::only | f::immdt));
    set(ib_opcode::rc_rdma_write_first,
        make_op("RC RDMA_WRITE_FIRST", rc, req | f::write | f::payload | f::first | f::reth));
    set(ib_opcode::rc_rdma_write_middle,
        make_op("RC RDMA_WRITE_MIDDLE", rc, req | f::write | f::payload | f::middle));
    set(ib_opcode::rc_rdma_write_last,
        make_op("RC RDMA_WRITE_LAST", rc, req | f::write | f::payload | f::last));
    set(ib_opcode::rc_rdma_write_last_imm,
        make_op("RC RDMA_WRITE_LAST_WITH_IMMEDIATE", rc,
                req | f::write | f::payload | f::last | f::immdt));
    set(ib_opcode::rc_rdma_write_only,
        make_op("RC RDMA_WRITE_ONLY", rc, req | f::write | f::payload | f::only | f::reth));
    set(ib_opcode::rc_rdma_write_only_imm,
        make_op("RC RDMA_WRITE_ONLY_WITH_IMMEDIATE", rc,
                req | f::write | f::payload | f::only | f::reth | f::immdt));
    set(ib_opcode::rc_rdma_read_request,
        make_op("RC RDMA_READ_REQUEST", rc, req | f::read | f::only | f::reth));
    set(ib_opcode::rc_compare_swap,
        make_op("RC COMPARE_SWAP", rc, req | f::atomic | f::only | f::atomic_eth));
    set(ib_opcode::rc_fetch_add,
        make_op("RC FETCH_ADD", rc, req | f::atomic | f::only | f::atomic_eth));
    set(ib_opcode::rc_send_last_inv, make_op("RC SEND_LAST_WITH_INVALIDATE", rc,
                                             req | f::send | f::payload | f::last | f::ieth));
    set(ib_opcode::rc_send_only_inv, make_op("RC SEND_ONLY_WITH_INVALIDATE", rc,
                                             req | f::send | f::payload | f::only | f::ieth));
    set(ib_opcode::rc_flush, make_op("RC FLUSH", rc, req | f::flush | f::only | f::feth | f::reth));
    set(ib_opcode::rc_atomic_write,
        make_op("RC ATOMIC_WRITE", rc, req | f::atomic_write | f::payload | f::only | f::reth));
    /* RC responses */
    set(ib_opcode::rc_rdma_read_response_first,
        make_op("RC RDMA_READ_RESPONSE_FIRST", rc,
                rsp | f::read | f::payload | f::first | f::aeth));
    set(ib_opcode::rc_rdma_read_response_middle,
        make_op("RC RDMA_READ_RESPONSE_MIDDLE", rc, rsp | f::read | f::payload | f::middle));
    set(ib_opcode::rc_rdma_read_response_last,
        make_op("RC RDMA_READ_RESPONSE_LAST", rc, rsp | f::read | f::payload | f::last | f::aeth));
    set(ib_opcode::rc_rdma_read_response_only,
        make_op("RC RDMA_READ_RESPONSE_ONLY", rc, rsp | f::read | f::payload | f::only | f::aeth));
    set(ib_opcode::rc_acknowledge, make_op("RC ACKNOWLEDGE", rc, rsp | f::ack | f::only | f::aeth));
    set(ib_opcode::rc_atomic_acknowledge,
        make_op("RC ATOMIC_ACKNOWLEDGE", rc,
                rsp | f::atomic | f::only | f::aeth | f::atomic_ack_eth));

    /* UC: sends and writes only (IBTA 9.8.3) */
    set(ib_opcode::uc_send_first,
        make_op("UC SEND_FIRST", uc, req | f::send | f::payload | f::first));
    set(ib_opcode::uc_send_middle,
        make_op("UC SEND_MIDDLE", uc, req | f::send | f::payload | f::middle));
    set(ib_opcode::uc_send_last, make_op("UC SEND_LAST", uc, req | f::send | f::payload | f::last));
    set(ib_opcode::uc_send_last_imm, make_op("UC SEND_LAST_WITH_IMMEDIATE", uc,
                                             req | f::send | f::payload | f::last | f::immdt));
    set(ib_opcode::uc_send_only, make_op("UC SEND_ONLY", uc, req | f::send | f::payload | f::only));
    set(ib_opcode::uc_send_only_imm, make_op("UC SEND_ONLY_WITH_IMMEDIATE", uc,
                                             req | f::send | f::payload | f::only | f::immdt));
    set(ib_opcode::uc_rdma_write_first,
        make_op("UC RDMA_WRITE_FIRST", uc, req | f::write | f::payload | f::first | f::reth));
    set(ib_opcode::uc_rdma_write_middle,
        make_op("UC RDMA_WRITE_MIDDLE", uc, req | f::write | f::payload | f::middle));
    set(ib_opcode::uc_rdma_write_last,
        make_op("UC RDMA_WRITE_LAST", uc, req | f::write | f::payload | f::last));
    set(ib_opcode::uc_rdma_write_last_imm,
        make_op("UC RDMA_WRITE_LAST_WITH_IMMEDIATE", uc,
                req | f::write | f::payload | f::last | f::immdt));
    set(ib_opcode::uc_rdma_write_only,
        make_op("UC RDMA_WRITE_ONLY", uc, req | f::write | f::payload | f::only | f::reth));
    set(ib_opcode::uc_rdma_write_only_imm,
        make_op("UC RDMA_WRITE_ONLY_WITH_IMMEDIATE", uc,
                req | f::write | f::payload | f::only | f::reth | f::immdt));

    /* UD: single-packet sends with DETH (IBTA 9.8.4) */
    set(ib_opcode::ud_send_only,
        make_op("UD SEND_ONLY", ud, req | f::send | f::payload | f::only | f::deth));
    set(ib_opcode::ud_send_only_imm,
        make_op("UD SEND_ONLY_WITH_IMMEDIATE", ud,
                req | f::send | f::payload | f::only | f::deth | f::immdt));

    /* CNP: BECN-marked notification to the sender's QP, 16 reserved bytes (Annex A17.9.3) */
    set(ib_opcode::cnp, make_op("CNP", ib_transport::cnp, f::only | f::cnp_body));

    /* uroce selective repeat (RC only; doc/loss-recovery.md "Wire format"):
     * every packet's RETH names where its payload goes (VA) and the R_Key;
     * its DMA Length field is the SR placement word (hdr.h sr_place) */
    constexpr uint32_t v = f::vendor;
    constexpr uint32_t srw = v | req | f::write | f::payload | f::reth;
    set(ib_opcode::sr_rdma_write_first, make_op("RC SR_RDMA_WRITE_FIRST", rc, srw | f::first));
    set(ib_opcode::sr_rdma_write_middle, make_op("RC SR_RDMA_WRITE_MIDDLE", rc, srw | f::middle));
    set(ib_opcode::sr_rdma_write_last, make_op("RC SR_RDMA_WRITE_LAST", rc, srw | f::last));
    set(ib_opcode::sr_rdma_write_only, make_op("RC SR_RDMA_WRITE_ONLY", rc, srw | f::only));
    /* an ACK (AETH, PSN = the last PSN received in order) plus the bitmap
     * of what arrived after the gap */
    set(ib_opcode::sr_sack,
        make_op("RC SR_SACK", rc, v | rsp | f::ack | f::only | f::aeth | f::sack_eth));
    return t;
}

} // namespace detail

inline constexpr std::array<opcode_info, 256> opcode_table = detail::make_opcode_table();

static inline constexpr const opcode_info &opcode_lookup(uint8_t op) {
    return opcode_table[op];
}
static inline constexpr const opcode_info &opcode_lookup(ib_opcode op) {
    return opcode_table[to_u8(op)];
}

/* Name for logs and uroce-dump; unknown opcodes read "UNKNOWN". */
static inline constexpr const char *opcode_name(uint8_t op) {
    return opcode_table[op].is_valid() ? opcode_table[op].name : "UNKNOWN";
}

/* Sanity of the table itself, checked at compile time. */
static_assert(opcode_lookup(ib_opcode::rc_rdma_write_only_imm).offset(ext_hdr::reth) == 0);
static_assert(opcode_lookup(ib_opcode::rc_rdma_write_only_imm).offset(ext_hdr::immdt) == 16);
static_assert(opcode_lookup(ib_opcode::rc_atomic_acknowledge).offset(ext_hdr::atomic_ack_eth) == 4);
static_assert(opcode_lookup(ib_opcode::ud_send_only_imm).offset(ext_hdr::immdt) == 8);
static_assert(opcode_lookup(ib_opcode::rc_flush).offset(ext_hdr::reth) == 4);
static_assert(opcode_lookup(ib_opcode::rc_compare_swap).ext_len == 28);
static_assert(opcode_lookup(ib_opcode::cnp).ext_len == 16);
static_assert(!opcode_lookup(uint8_t(0x15)).is_valid());
static_assert(opcode_lookup(ib_opcode::sr_rdma_write_middle).ext_len == 16);
static_assert(opcode_lookup(ib_opcode::sr_sack).offset(ext_hdr::sack_eth) == 4);
static_assert(opcode_lookup(ib_opcode::sr_sack).ext_len == 20);

} // namespace uroce

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * The send work-request opcode table: constexpr data, as rxe_opcode.c keeps
 * rxe_wr_opcode_info (and as lib/wire/uroce_opcode.h keeps the BTH opcodes).
 *
 * For every wr_opcode: its name, the QP types that may post it, and what it
 * is (a SEND, a WRITE, a READ, an atomic; whether it carries immediate data
 * or an rkey to invalidate; whether it names remote memory; whether its
 * result is written into local memory). post_send's validation, the
 * requester and the completer all read this one table instead of comparing
 * opcodes. Transport rules: IBTA 9.8.3 (UC: SEND and RDMA WRITE only),
 * 9.8.4 (UD: SEND only); RC takes every operation implemented here.
 *
 * Internal to lib/transport (the verbs API keeps wr_opcode and
 * wc_opcode_for() in uroce_verbs.h).
 */
#ifndef UROCE_WR_OPCODE_H
#define UROCE_WR_OPCODE_H

#include <array>
#include <cstdint>

#include <uroce/verbs.h>

namespace uroce {

/* What a work request is and does; one bit each (rxe_opcode.h's WR_*_MASK). */
namespace wr_flag {
inline constexpr uint32_t send = 1u << 0;
inline constexpr uint32_t write = 1u << 1;
inline constexpr uint32_t read = 1u << 2;
inline constexpr uint32_t atomic = 1u << 3;
inline constexpr uint32_t has_imm = 1u << 4;    /* carries ImmDt */
inline constexpr uint32_t has_inv = 1u << 5;    /* carries an IETH (rkey to invalidate) */
inline constexpr uint32_t needs_rkey = 1u << 6; /* names remote memory: RETH or AtomicETH */
/* Its result lands in local memory (READ data, the atomic's original
 * value), so its SGEs need local write access. */
inline constexpr uint32_t writes_local = 1u << 7;
inline constexpr uint32_t local = 1u << 8; /* a local operation: no packet (LOCAL_INV, BIND_MW) */
inline constexpr uint32_t valid = 1u << 31;
/* Counted against max_rd_atomic and waited for by a fence (IBTA 10.8.3.3);
 * cannot be acknowledged implicitly (IBTA 9.7.5.1.1). */
inline constexpr uint32_t read_or_atomic = read | atomic;
} // namespace wr_flag

/* Bit of a QP type in wr_opcode_info::qp_types. */
static inline constexpr uint32_t qp_type_bit(qp_type t) {
    return 1u << unsigned(t);
}

struct wr_opcode_info {
    const char *name = nullptr; /* ibverbs-style, e.g. "RDMA_WRITE_WITH_IMM" */
    uint32_t qp_types = 0;      /* qp_type_bit() of every QP type that may post it */
    uint32_t flags = 0;

    constexpr bool is_valid() const { return flags & wr_flag::valid; }
    constexpr bool has(uint32_t f) const { return (flags & f) == f; }
    constexpr bool has_any(uint32_t f) const { return (flags & f) != 0; }
    constexpr bool allowed_on(qp_type t) const { return qp_types & qp_type_bit(t); }
};

namespace detail {

inline constexpr size_t wr_opcode_count = size_t(wr_opcode::send_with_inv) + 1;

constexpr std::array<wr_opcode_info, wr_opcode_count> make_wr_opcode_table() {
    namespace f = wr_flag;
    constexpr uint32_t rc = qp_type_bit(qp_type::rc);
    constexpr uint32_t uc = qp_type_bit(qp_type::uc);
    constexpr uint32_t ud = qp_type_bit(qp_type::ud);
    std::array<wr_opcode_info, wr_opcode_count> t{};
    auto set = [&t](wr_opcode op, const char *name, uint32_t types, uint32_t flags) {
        t[size_t(op)] = wr_opcode_info{name, types, flags | f::valid};
    };
    set(wr_opcode::rdma_write, "RDMA_WRITE", rc | uc, f::write | f::needs_rkey);
    set(wr_opcode::rdma_write_with_imm, "RDMA_WRITE_WITH_IMM", rc | uc,
        f::write | f::needs_rkey | f::has_imm);
    set(wr_opcode::send, "SEND", rc | uc | ud, f::send);
    set(wr_opcode::send_with_imm, "SEND_WITH_IMM", rc | uc | ud, f::send | f::has_imm);
    set(wr_opcode::rdma_read, "RDMA_READ", rc, f::read | f::needs_rkey | f::writes_local);
    set(wr_opcode::atomic_cmp_and_swp, "ATOMIC_CMP_AND_SWP", rc,
        f::atomic | f::needs_rkey | f::writes_local);
    set(wr_opcode::atomic_fetch_and_add, "ATOMIC_FETCH_AND_ADD", rc,
        f::atomic | f::needs_rkey | f::writes_local);
    /* Memory windows and local invalidation are not implemented: no QP
     * type may post them (doc/transport.md, "Not done"). */
    set(wr_opcode::local_inv, "LOCAL_INV", 0, f::local);
    set(wr_opcode::bind_mw, "BIND_MW", 0, f::local);
    /* IBTA 9.4.4: SEND with Invalidate exists on RC only. */
    set(wr_opcode::send_with_inv, "SEND_WITH_INV", rc, f::send | f::has_inv);
    return t;
}

inline constexpr wr_opcode_info wr_opcode_invalid{};

} // namespace detail

inline constexpr std::array<wr_opcode_info, detail::wr_opcode_count> wr_opcode_table =
    detail::make_wr_opcode_table();

/* An opcode outside the enum (a caller's cast) reads as invalid: allowed
 * on no QP type, no flags. */
static inline constexpr const wr_opcode_info &wr_opcode_lookup(wr_opcode op) {
    return size_t(op) < wr_opcode_table.size() ? wr_opcode_table[size_t(op)]
                                               : detail::wr_opcode_invalid;
}

/* Sanity of the table itself, checked at compile time. */
static_assert(wr_opcode_lookup(wr_opcode::send).allowed_on(qp_type::ud));
static_assert(!wr_opcode_lookup(wr_opcode::rdma_write).allowed_on(qp_type::ud));
static_assert(!wr_opcode_lookup(wr_opcode::rdma_read).allowed_on(qp_type::uc));
static_assert(wr_opcode_lookup(wr_opcode::atomic_fetch_and_add).has(wr_flag::atomic));
static_assert(!wr_opcode_lookup(wr_opcode(0xff)).is_valid());

} // namespace uroce

#endif

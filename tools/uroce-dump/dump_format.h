/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: one text line per frame, and the tab-separated --fields form.
 */
#ifndef UROCE_DUMP_FORMAT_H
#define UROCE_DUMP_FORMAT_H

#include <cstdint>
#include <string>

#include "dump_analyze.h"

namespace uroce::dump {

/* ACK credit code (AETH syndrome bits 4:0) to credits, IBTA 9.7.7.2 table 46
 * (rdmavt credit_table); -1 for code 31, "invalid credit count" (unlimited). */
int32_t aeth_credits(uint8_t code);
/* RNR NAK timer code to the minimum wait in nanoseconds, IBTA 9.7.5.2.8
 * table 48; code 0 is the longest (655.36 ms). */
uint64_t rnr_timer_ns(uint8_t code);
/* NAK code names, IBTA 9.7.5.2.4: "PSN-seq-error" ... ; nullptr if reserved. */
const char *nak_code_name(uint8_t code);
/* The AETH syndrome in words: "ACK credits=16", "ACK credits=unlimited",
 * "RNR-NAK timer=0.64ms", "NAK PSN-seq-error", "reserved-syndrome 0x45". */
std::string aeth_syndrome_text(uint8_t syndrome);

/* "10.77.0.12", "fe80::1" (inet_ntop) for the report's IP version. */
std::string ip_text(const uint8_t *addr, uint8_t version);
std::string mac_text(const uint8_t *mac);

struct format_options {
    bool show_macs = false; /* -e: prefix src/dst MACs */
};

/* One tshark-like line, without a newline:
 *   "    3 0.000123 10.77.0.12 -> 10.77.0.11 sport 53121 RC SEND_FIRST QP=0x000011 ..."
 * time is already formatted by the caller (relative seconds). */
std::string format_line(const frame_report &r, const std::string &time, const format_options &o);

/* The extension headers and ICRC part of a parsed packet's line (tests). */
std::string format_roce_fields(const frame_report &r);

/* Tab-separated columns in the order of the tshark -T fields command below,
 * or "" for frames that are not RoCE packets parsing as captured:
 *   frame.number infiniband.bth.opcode .se .m .a .padcnt .p_key .destqp .psn
 *   infiniband.reth.va .reth.r_key .reth.dmalen .aeth.syndrome .aeth.msn
 *   infiniband.deth.q_key .deth.srcqp .atomiceth.swapdt .atomiceth.cmpdt
 *   infiniband.atomicacketh.origremdt infiniband.invariant.crc
 * Numbers are printed as tshark prints them (hex where tshark does), so the
 * two outputs compare as strings. */
std::string format_fields(const frame_report &r);
extern const char *const fields_header;

} // namespace uroce::dump

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: what one captured frame is, and what is wrong with it.
 *
 * The analyzer turns a captured record into a frame_report: its addresses,
 * whether it is a RoCEv2 packet, the parsed view (lib/wire's parse_frame),
 * the ICRC verdict and, for --check, the name of the first error found.
 * Formatting (dump_format.h) and flow statistics (dump_flows.h) read only
 * the report, so they can be tested without a capture file.
 */
#ifndef UROCE_DUMP_ANALYZE_H
#define UROCE_DUMP_ANALYZE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <uroce/parse.h>

namespace uroce::dump {

/* Link types uroce-dump reads. Non-Ethernet records get a synthetic Ethernet
 * header (zero MACs), so lib/wire's parse_frame serves all of them. */
enum class link_kind : uint8_t { ethernet, linux_sll, linux_sll2, raw_ip };

/* libpcap DLT_* value to link_kind; false when uroce-dump cannot read it. */
bool link_kind_from_dlt(int dlt, link_kind &out);

enum class frame_class : uint8_t {
    roce,     /* UDP to port 4791, or a frame that is RoCE once one corrupt field is restored */
    other_ip, /* IPv4/IPv6 that is not RoCE (TCP, other UDP, ICMP...) */
    arp,
    other_l2, /* any other EtherType, or a frame too short for its link header */
};

/* Addresses and ports found by a light walk over L2/L3/L4 that trusts only
 * what it needs (independent of the parser, which is strict). */
struct frame_addrs {
    uint16_t ether_type = 0; /* after VLAN tags */
    uint8_t vlan_count = 0;
    bool has_mac = false; /* false for synthetic Ethernet headers */
    uint8_t src_mac[6] = {};
    uint8_t dst_mac[6] = {};
    uint8_t ip_version = 0; /* 0: no IP header */
    uint8_t src_ip[16] = {};
    uint8_t dst_ip[16] = {};
    uint16_t l3_offset = 0;
    uint8_t l4_proto = 0;
    bool has_ports = false;
    bool fragment = false; /* IPv4 non-first fragment: no L4 header */
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint32_t l4_payload_len = 0; /* bytes after the TCP/UDP header, from the IP length */
    uint8_t tcp_flags = 0;
};

/* The numbers flows and the summary need, copied out of the packet so they
 * outlive the frame bytes. */
struct roce_summary {
    uint8_t opcode = 0;
    uint32_t dest_qp = 0;
    uint32_t psn = 0;
    uint32_t payload_len = 0;
    uint32_t frame_len = 0;
    bool has_aeth = false;
    uint8_t syndrome = 0;
    uint32_t msn = 0;
    bool has_reth = false;
    uint32_t dma_length = 0;
    bool has_deth = false;
    uint32_t src_qp = 0;
};

struct frame_report {
    uint64_t number = 0; /* 1-based, as tshark numbers frames */
    uint32_t caplen = 0;
    uint32_t wire_len = 0;
    frame_class cls = frame_class::other_l2;
    frame_addrs addrs;

    /* RoCE only. */
    bool snapped = false;  /* caplen < wire length: headers shown, nothing verified */
    bool parsed = false;   /* pkt is a valid parse of frame (or of the repaired copy) */
    bool repaired = false; /* pkt parsed only after restoring repair_field */
    roce_packet pkt;       /* points into the analyzer's buffers; valid until the next frame */
    parse_error perr = parse_error::ok;
    bool icrc_checked = false;
    bool icrc_ok = false;
    uint32_t icrc_stored = 0; /* as the CRC value (wire bytes read little-endian) */
    uint32_t icrc_expected = 0;
    roce_summary roce; /* parsed packets; snapped ones as far as captured */
    /* BTH fields read from the raw bytes when the strict parse failed, for context. */
    bool raw_bth = false;
    uint8_t raw_opcode = 0;
    uint32_t raw_qp = 0;
    uint32_t raw_psn = 0;

    /* --check verdict: empty when the packet is fine, else an error name
     * (parse_error names, "bad-icrc", or one of the extra checks below). */
    std::string error;
    std::string detail; /* human-readable specifics for the error */
};

/* Extra consistency checks beyond parser + ICRC. The ICRC masks some header
 * bytes on purpose (TOS, TTL, IPv4 checksum, UDP checksum, BTH byte 4), so a
 * corrupt byte there is invisible to it; these catch what can be caught. */
inline constexpr const char *err_ipv4_checksum = "bad-ipv4-checksum";
inline constexpr const char *err_udp_checksum = "bad-udp-checksum";
inline constexpr const char *err_bth_reserved = "bth-reserved-bits";
inline constexpr const char *err_l2_mismatch = "l2-addr-mismatch";

struct analyze_options {
    /* Only the parser and the ICRC decide (no checksum/reserved-bit/L2 checks). */
    bool lenient = false;
};

class analyzer {
  public:
    analyzer(link_kind link, analyze_options opts) : link_(link), opts_(opts) {}

    /* Analyze one record; the report (and its pkt pointers) stay valid until the next call. */
    const frame_report &analyze(uint64_t number, const uint8_t *data, uint32_t caplen,
                                uint32_t wire_len);

  private:
    void analyze_roce(const uint8_t *f, size_t len);
    bool try_repairs(const uint8_t *f, size_t len);
    void read_raw_bth(const uint8_t *f, size_t len);
    void run_extra_checks(const uint8_t *f);

    link_kind link_;
    analyze_options opts_;
    std::vector<uint8_t> eth_buf_;    /* synthetic Ethernet frame for non-Ethernet links */
    std::vector<uint8_t> repair_buf_; /* a frame with one field restored */
    frame_report rep_;
};

/* The L2/L3/L4 walk used by the analyzer (exposed for tests). false when the
 * frame has no recognizable IP header; addrs still holds what was found. */
bool walk_frame(const uint8_t *f, size_t len, frame_addrs &addrs);

/* RFC 1071 one's-complement sum helpers for the extra checks. */
bool ipv4_header_checksum_ok(const uint8_t *ip, size_t hlen);
/* Verifies a non-zero UDP checksum over the IPv4/IPv6 pseudo-header; a zero
 * checksum (what RoCEv2 senders send) is "not present" and passes. */
bool udp_checksum_ok(const roce_packet &p);

} // namespace uroce::dump

#endif

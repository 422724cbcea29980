/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --plot OUT.svg: a picture of each QP's traffic, as tcptrace and
 * Wireshark's TCP stream graphs draw TCP.
 *
 * For every data flow (a --flows row carrying requests, or RDMA READ response
 * data), two panels on one time axis shared by all flows:
 *   - time-sequence: PSN over time (24-bit PSNs unwrapped, IBTA 9.7.1, drawn
 *     relative to the flow's first PSN). Data packets are dots;
 *     a packet at or behind the highest PSN already sent is a retransmission
 *     (the --flows rule: go-back-N resends and late arrivals after a gap).
 *     From the other direction: ACKs at the PSN they acknowledge, NAKs by
 *     AETH syndrome (PSN sequence error at the expected PSN, RNR NAK at the
 *     refused PSN, any other NAK code; IBTA 9.7.5.2), and CNPs (opcode 0x81,
 *     sent by the notification point to the data sender, which PSN does not
 *     place) as marks along the top edge.
 *   - throughput: payload bytes per time bin in bits per second, resent
 *     bytes stacked in their own colour.
 *
 * Pairing the directions. A responder's packets carry the requester's QPN,
 * not the responder's, so an ACK stream is tied to the request flow of the
 * reverse address pair whose sent PSN range holds its PSNs (bound once, on
 * its first AETH packet; random initial PSNs make a false match unlikely).
 * A CNP names the data sender's QPN: the QPN the sender's ACKs come back to
 * (RC), its DETH source QP (UD), or the QPN its READ requests were sent to
 * (READ response data). A CNP no drawn flow claims is counted in a note.
 *
 * Size. At most plot_options::max_flows flows are drawn (the busiest by
 * payload bytes, a note names how many are left out); marks that fall on
 * the same pixel as one of their kind are drawn once, and each kind is cut
 * to max_marks per panel by even sampling beyond that, with a note, so a
 * capture of millions of packets still gives a file a browser opens.
 *
 * Every mark is an element with a class naming its kind (data, retx, ack,
 * nak-seq, nak-rnr, nak-other, cnp) inside a <g class="flow"> whose data-*
 * attributes hold the exact counts, so tests read the picture as XML.
 */
#ifndef UROCE_DUMP_PLOT_H
#define UROCE_DUMP_PLOT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dump_analyze.h"
#include "dump_flows.h"

namespace uroce::dump {

enum class mark_kind : uint8_t { data, retx, ack, nak_seq, nak_rnr, nak_other, cnp };
inline constexpr size_t mark_kinds = 7;
/* The SVG class of each kind (also the legend's order). */
const char *mark_class(mark_kind k);

struct plot_options {
    size_t max_flows = 8;    /* flows drawn, busiest first */
    size_t max_marks = 5000; /* per kind and panel, after the per-pixel merge */
    std::string title;       /* shown at the top, e.g. the capture's name */
};

/* What was counted for one data flow (exact, before any decimation). */
struct plot_flow_counts {
    uint64_t packets = 0; /* data packets, retransmissions included */
    uint64_t payload_bytes = 0;
    uint64_t marks[mark_kinds] = {};
};

class plot_collector {
  public:
    /* One captured frame at t_ns since the capture's first frame. */
    void add(const frame_report &r, int64_t t_ns);
    /* The whole picture. */
    std::string svg(const plot_options &o) const;

    /* Data flows in order of first appearance, with their counts (tests). */
    std::vector<std::pair<flow_key, plot_flow_counts>> flows() const;
    uint64_t unattributed_cnps() const;

  private:
    struct event {
        int64_t t_ns;
        int64_t psn; /* unwrapped, relative to the flow's first PSN */
        uint32_t bytes;
        mark_kind kind;
    };
    struct panel {
        flow_key key;
        uint64_t first_frame = 0;
        uint32_t first_psn = 0;
        uint32_t last_raw_psn = 0; /* of the last data packet, the unwrapping reference */
        int64_t last_psn = 0;      /* the same, unwrapped */
        int64_t highest_psn = -1;  /* highest unwrapped data PSN (READ span included) */
        bool sequenced = false;    /* RC/UC: retransmissions are marked */
        bool read_response = false;
        bool have_sender_qpn = false;
        uint32_t sender_qpn = 0;
        plot_flow_counts counts;
        std::vector<event> events;
    };
    struct cnp_event {
        int64_t t_ns;
        flow_key from; /* src = notification point, dst = data sender, dest_qp = its QPN */
    };
    /* An ACK stream's binding to a request panel (npos until found). */
    static constexpr size_t npos = SIZE_MAX;

    void add_data(const frame_report &r, const flow_key &k, int64_t t_ns);
    void add_aeth(const frame_report &r, const flow_key &k, int64_t t_ns);
    size_t bind(const flow_key &resp, uint32_t psn);
    int64_t unwrap(const panel &p, uint32_t psn) const;
    /* The panel a CNP belongs to, or npos. */
    size_t cnp_panel(const cnp_event &c) const;
    std::vector<size_t> drawn(const plot_options &o) const;

    std::vector<panel> panels_;
    std::map<flow_key, size_t> panel_of_;
    std::map<flow_key, size_t> ack_binding_; /* response flow -> request panel */
    std::vector<cnp_event> cnps_;
};

} // namespace uroce::dump

#endif

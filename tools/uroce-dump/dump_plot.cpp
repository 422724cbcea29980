/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --plot: collecting the marks, and writing them as SVG (dump_plot.h).
 */
#include "dump_plot.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "dump_format.h"
#include <uroce/hdr.h>
#include <uroce/opcode.h>

namespace uroce::dump {

const char *mark_class(mark_kind k) {
    switch (k) {
    case mark_kind::data:
        return "data";
    case mark_kind::retx:
        return "retx";
    case mark_kind::ack:
        return "ack";
    case mark_kind::nak_seq:
        return "nak-seq";
    case mark_kind::nak_rnr:
        return "nak-rnr";
    case mark_kind::nak_other:
        return "nak-other";
    case mark_kind::cnp:
        return "cnp";
    }
    return "?";
}

namespace {

/* The smallest IB path MTU (IBTA 9.7.2.1), as --flows uses it: a READ of
 * dma_length bytes may consume ceil(dma_length / 256) PSNs. */
inline constexpr uint32_t min_pmtu = 256;

flow_key key_of(const frame_report &r, const opcode_info &info) {
    flow_key k;
    k.ip_version = r.addrs.ip_version;
    std::memcpy(k.src, r.addrs.src_ip, sizeof k.src);
    std::memcpy(k.dst, r.addrs.dst_ip, sizeof k.dst);
    k.dest_qp = r.roce.dest_qp;
    k.role = info.has(op_flag::request)    ? flow_key::request
             : info.has(op_flag::response) ? flow_key::response
                                           : flow_key::other;
    return k;
}

/* b's addresses are a's, swapped. */
bool reverse_pair(const flow_key &a, const flow_key &b) {
    return a.ip_version == b.ip_version && std::memcmp(a.src, b.dst, sizeof a.src) == 0 &&
           std::memcmp(a.dst, b.src, sizeof a.dst) == 0;
}

mark_kind aeth_kind(uint8_t syndrome) {
    switch (aeth_syndrome::type(syndrome)) {
    case aeth_syndrome::type_ack:
        return mark_kind::ack;
    case aeth_syndrome::type_rnr_nak:
        return mark_kind::nak_rnr;
    default:
        return aeth_syndrome::value(syndrome) == aeth_syndrome::nak_psn_seq_error &&
                       aeth_syndrome::type(syndrome) == aeth_syndrome::type_nak
                   ? mark_kind::nak_seq
                   : mark_kind::nak_other;
    }
}

} // namespace

int64_t plot_collector::unwrap(const panel &p, uint32_t psn) const {
    return p.last_psn + psn_distance(psn, p.last_raw_psn);
}

void plot_collector::add(const frame_report &r, int64_t t_ns) {
    /* The packets --flows counts, and only those. */
    if (r.cls != frame_class::roce || r.repaired) return;
    if (!r.parsed && !(r.snapped && r.raw_bth)) return;
    const opcode_info &info = opcode_lookup(r.roce.opcode);
    if (!info.is_valid()) return;
    flow_key k = key_of(r, info);
    if (info.transport == ib_transport::cnp) {
        cnps_.push_back({t_ns, k});
        return;
    }
    bool read_data = info.has(op_flag::read) && info.has(op_flag::response);
    if (info.has(op_flag::request) || read_data) add_data(r, k, t_ns);
    if (r.roce.has_aeth && info.has(op_flag::response)) add_aeth(r, k, t_ns);
}

void plot_collector::add_data(const frame_report &r, const flow_key &k, int64_t t_ns) {
    const opcode_info &info = opcode_lookup(r.roce.opcode);
    auto [it, fresh] = panel_of_.try_emplace(k, panels_.size());
    if (fresh) {
        panel p;
        p.key = k;
        p.first_frame = r.number;
        p.first_psn = r.roce.psn;
        p.last_raw_psn = r.roce.psn;
        p.sequenced = info.transport == ib_transport::rc || info.transport == ib_transport::uc;
        p.read_response = info.has(op_flag::response);
        panels_.push_back(std::move(p));
    }
    panel &p = panels_[it->second];
    int64_t psn = unwrap(p, r.roce.psn);
    mark_kind kind = mark_kind::data;
    if (p.sequenced && psn <= p.highest_psn) {
        kind = mark_kind::retx;
    } else {
        /* A READ request reserves the PSNs of its response packets. */
        uint32_t span = 1;
        if (info.has(op_flag::read) && info.has(op_flag::request) && r.roce.has_reth)
            span = std::max<uint32_t>(1, (r.roce.dma_length + min_pmtu - 1) / min_pmtu);
        p.highest_psn = std::max(p.highest_psn, psn + int64_t(span) - 1);
    }
    p.last_raw_psn = r.roce.psn;
    p.last_psn = psn;
    if (info.transport == ib_transport::ud && r.roce.has_deth) {
        p.have_sender_qpn = true;
        p.sender_qpn = r.roce.src_qp;
    }
    p.counts.packets++;
    p.counts.payload_bytes += r.roce.payload_len;
    p.counts.marks[size_t(kind)]++;
    p.events.push_back({t_ns, psn, r.roce.payload_len, kind});
}

size_t plot_collector::bind(const flow_key &resp, uint32_t psn) {
    auto [it, fresh] = ack_binding_.try_emplace(resp, npos);
    if (it->second != npos) return it->second;
    size_t best = npos;
    int64_t best_distance = 0;
    for (size_t i = 0; i < panels_.size(); i++) {
        const panel &p = panels_[i];
        if (p.read_response || !p.sequenced || !reverse_pair(p.key, resp)) continue;
        /* An ACK names a PSN already sent; a PSN-sequence NAK the next expected one. */
        int64_t u = unwrap(p, psn);
        if (u < 0 || u > p.highest_psn + 1) continue;
        int64_t d = std::llabs(u - p.last_psn);
        if (best == npos || d < best_distance) {
            best = i;
            best_distance = d;
        }
    }
    if (best != npos) {
        it->second = best;
        panel &p = panels_[best];
        if (!p.have_sender_qpn) {
            /* The responder's packets name the requester's QPN. */
            p.have_sender_qpn = true;
            p.sender_qpn = resp.dest_qp;
        }
    }
    return best;
}

void plot_collector::add_aeth(const frame_report &r, const flow_key &k, int64_t t_ns) {
    size_t i = bind(k, r.roce.psn);
    if (i == npos) return;
    panel &p = panels_[i];
    mark_kind kind = aeth_kind(r.roce.syndrome);
    p.counts.marks[size_t(kind)]++;
    p.events.push_back({t_ns, unwrap(p, r.roce.psn), 0, kind});
}

size_t plot_collector::cnp_panel(const cnp_event &c) const {
    size_t by_address = npos, candidates = 0;
    for (size_t i = 0; i < panels_.size(); i++) {
        const panel &p = panels_[i];
        /* The CNP goes from the data's receiver back to its sender. */
        if (!reverse_pair(p.key, c.from)) continue;
        bool known = p.have_sender_qpn;
        uint32_t qpn = p.sender_qpn;
        if (p.read_response) {
            /* The READ responder is the QP the READ requests were sent to. */
            auto b = ack_binding_.find(p.key);
            known = b != ack_binding_.end() && b->second != npos;
            if (known) qpn = panels_[b->second].key.dest_qp;
        }
        if (known && qpn == c.from.dest_qp) return i;
        if (!known) {
            candidates++;
            by_address = i;
        }
    }
    /* No QPN matches: a sole flow between the two hosts whose sender QPN the
     * capture does not show (no ACK seen yet) claims it. */
    return candidates == 1 ? by_address : npos;
}

std::vector<std::pair<flow_key, plot_flow_counts>> plot_collector::flows() const {
    std::vector<std::pair<flow_key, plot_flow_counts>> v;
    for (const panel &p : panels_)
        v.emplace_back(p.key, p.counts);
    for (const cnp_event &c : cnps_)
        if (size_t i = cnp_panel(c); i != npos) v[i].second.marks[size_t(mark_kind::cnp)]++;
    return v;
}

uint64_t plot_collector::unattributed_cnps() const {
    uint64_t n = 0;
    for (const cnp_event &c : cnps_)
        n += cnp_panel(c) == npos;
    return n;
}

std::vector<size_t> plot_collector::drawn(const plot_options &o) const {
    std::vector<size_t> order(panels_.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const plot_flow_counts &x = panels_[a].counts, &y = panels_[b].counts;
        if (x.payload_bytes != y.payload_bytes) return x.payload_bytes > y.payload_bytes;
        return x.packets > y.packets;
    });
    if (order.size() > o.max_flows) order.resize(o.max_flows);
    /* Drawn in order of first appearance, as --flows lists them. */
    std::sort(order.begin(), order.end());
    return order;
}

/* ------------------------------------------------------------------ SVG writing */

namespace {

void appendf(std::string &s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string &s, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (size_t(n) < sizeof buf) {
        s.append(buf, size_t(n));
        return;
    }
    std::string big(size_t(n) + 1, '\0');
    va_start(ap, fmt);
    std::vsnprintf(big.data(), big.size(), fmt, ap);
    va_end(ap);
    s.append(big.data(), size_t(n));
}

std::string xml_escape(const std::string &in) {
    std::string out;
    for (char c : in) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? '?' : c;
        }
    }
    return out;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
double nice_step(double span, int want) {
    if (!(span > 0)) return 1;
    double raw = span / want;
    double p = std::pow(10.0, std::floor(std::log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* Decimals that show a step's significant digit. */
int decimals_for(double step) {
    int d = 0;
    while (d < 9 && std::fabs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) >
                        1e-6 * step * std::pow(10.0, d))
        d++;
    return d;
}

struct time_unit {
    double ns;
    const char *name;
};

time_unit unit_for(double span_ns) {
    if (span_ns >= 1e9) return {1e9, "s"};
    if (span_ns >= 1e6) return {1e6, "ms"};
    if (span_ns >= 1e3) return {1e3, "\xc2\xb5s"};
    return {1, "ns"};
}

/* Layout, in SVG user units (pixels at 100%). */
inline constexpr double width = 1000;
inline constexpr double left = 92, right = 24;
inline constexpr double plot_w = width - left - right;
inline constexpr double header_h = 96; /* title, legend, notes */
inline constexpr double flow_title_h = 36;
inline constexpr double seq_h = 230;
inline constexpr double between_h = 44; /* time labels under the sequence panel */
inline constexpr double thr_h = 90;
inline constexpr double after_h = 50;
inline constexpr double flow_h = flow_title_h + seq_h + between_h + thr_h + after_h;
inline constexpr uint64_t min_bins = 10, max_bins = 120;
inline constexpr int max_ticks = 40; /* a bound, whatever rounding does */

const char *const style =
    "<style>\n"
    "text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:11px;fill:#222}\n"
    ".title{font-size:15px;font-weight:bold}.flow-title{font-size:13px;font-weight:bold}\n"
    ".note{fill:#a33}.axis{stroke:#333;fill:none}.grid{stroke:#e4e4e4}\n"
    ".data{fill:#1f5fbf}.retx{fill:#d62728}\n"
    ".ack{stroke:#2ca02c;stroke-width:1.8;fill:none}\n"
    ".nak-seq{fill:#ff7f0e;stroke:#a04a00;stroke-width:.6}\n"
    ".nak-rnr{fill:#9467bd}.nak-other{stroke:#000;stroke-width:1.6;fill:none}\n"
    ".cnp{fill:#c000c0;stroke:#c000c0;stroke-width:.8;stroke-opacity:.45}\n"
    ".bar-new{fill:#1f5fbf}.bar-retx{fill:#d62728}\n"
    "</style>\n";

/* One mark of a kind centred at (x, y); CNPs hang from `top` down to `bottom`. */
void draw_mark(std::string &s, mark_kind k, double x, double y, double top, double bottom) {
    switch (k) {
    case mark_kind::data:
        appendf(s, "<circle class=\"data\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\"/>\n", x, y);
        break;
    case mark_kind::retx:
        appendf(s, "<path class=\"retx\" d=\"M%.1f %.1fl3.6 3.6-3.6 3.6-3.6-3.6z\"/>\n", x,
                y - 3.6);
        break;
    case mark_kind::ack:
        appendf(s, "<path class=\"ack\" d=\"M%.1f %.1fh8\"/>\n", x - 4, y);
        break;
    case mark_kind::nak_seq:
        appendf(s, "<path class=\"nak-seq\" d=\"M%.1f %.1fh10l-5 8z\"/>\n", x - 5, y - 4);
        break;
    case mark_kind::nak_rnr:
        appendf(s, "<rect class=\"nak-rnr\" x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\"/>\n",
                x - 3.5, y - 3.5);
        break;
    case mark_kind::nak_other:
        appendf(s, "<path class=\"nak-other\" d=\"M%.1f %.1fl7 7m0-7l-7 7\"/>\n", x - 3.5, y - 3.5);
        break;
    case mark_kind::cnp:
        /* A triangle hanging from the panel's top edge, and a faint line down. */
        appendf(s, "<path class=\"cnp\" d=\"M%.1f %.1fh9l-4.5 8zM%.1f %.1fV%.1f\"/>\n", x - 4.5,
                top, x, top, bottom);
        break;
    }
}

const char *const legend_text[mark_kinds] = {"data packet",
                                             "retransmission",
                                             "ACK (PSN acknowledged)",
                                             "NAK PSN sequence error",
                                             "RNR NAK",
                                             "other NAK",
                                             "CNP"};

std::string flow_name(const flow_key &k) {
    char qp[16];
    std::snprintf(qp, sizeof qp, "0x%06x", k.dest_qp);
    return ip_text(k.src, k.ip_version) + " -> " + ip_text(k.dst, k.ip_version) + " QP=" + qp;
}

/* Bits per second in a readable unit: the scale to divide by and its name. */
time_unit rate_unit(double max_bps) {
    if (max_bps >= 1e9) return {1e9, "Gb/s"};
    if (max_bps >= 1e6) return {1e6, "Mb/s"};
    if (max_bps >= 1e3) return {1e3, "kb/s"};
    return {1, "b/s"};
}

} // namespace

std::string plot_collector::svg(const plot_options &o) const {
    std::vector<size_t> shown = drawn(o);
    /* CNPs by panel. */
    std::vector<std::vector<int64_t>> cnp_times(panels_.size());
    uint64_t cnp_unclaimed = 0;
    for (const cnp_event &c : cnps_) {
        size_t i = cnp_panel(c);
        if (i == npos)
            cnp_unclaimed++;
        else
            cnp_times[i].push_back(c.t_ns);
    }

    /* One time axis for every flow, so flows sharing a link line up. */
    int64_t t_lo = INT64_MAX, t_hi = INT64_MIN;
    for (size_t i : shown) {
        for (const event &e : panels_[i].events) {
            t_lo = std::min(t_lo, e.t_ns);
            t_hi = std::max(t_hi, e.t_ns);
        }
        for (int64_t t : cnp_times[i]) {
            t_lo = std::min(t_lo, t);
            t_hi = std::max(t_hi, t);
        }
    }
    if (t_lo > t_hi) t_lo = t_hi = 0;
    /* Times relative to t_lo, exact (a hostile capture's times may be near
     * 2^63 ns, where a double no longer resolves nanoseconds). */
    auto rel = [&](int64_t t) { return double(uint64_t(t) - uint64_t(t_lo)); };
    double span = rel(t_hi);
    if (span <= 0) span = 1000; /* one instant: a microsecond's window */
    double t_pad = span * 0.02;
    double x_lo = -t_pad, x_hi = span + t_pad;
    if (t_lo >= 0 && double(t_lo) < t_pad) x_lo = -double(t_lo); /* start at 0 */
    auto x_of = [&](double r) { return left + (r - x_lo) / (x_hi - x_lo) * plot_w; };
    time_unit tu = unit_for(x_hi - x_lo);

    /* Throughput bins: a few packets per bin on average for the busiest flow
     * drawn, so sparse traffic is not all spikes; the same bins for every flow. */
    uint64_t most_packets = 0;
    for (size_t i : shown)
        most_packets = std::max(most_packets, panels_[i].counts.packets);
    int throughput_bins = int(std::clamp<uint64_t>(most_packets / 3, min_bins, max_bins));

    double height = header_h + double(std::max<size_t>(shown.size(), 1)) * flow_h;
    std::string s;
    s.reserve(1 << 16);
    appendf(s,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\">\n",
            width, height, width, height);
    s += style;
    appendf(s, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", width, height);
    appendf(s, "<text class=\"title\" x=\"%.0f\" y=\"22\">%s</text>\n", left,
            xml_escape(o.title.empty() ? "uroce-dump --plot" : o.title).c_str());

    /* Legend: one sample of each mark. */
    s += "<g id=\"legend\">\n";
    double lx = left;
    for (size_t k = 0; k < mark_kinds; k++) {
        std::string m;
        draw_mark(m, mark_kind(k), lx + 5, 44, 40, 50);
        s += m;
        appendf(s, "<text x=\"%.0f\" y=\"48\">%s</text>\n", lx + 14, legend_text[k]);
        lx += 14 + 7.0 * double(std::strlen(legend_text[k])) + 16;
    }
    s += "</g>\n";

    /* Notes: what is not drawn. */
    double ny = 70;
    if (panels_.empty()) {
        appendf(s,
                "<text class=\"note\" x=\"%.0f\" y=\"%.0f\">No RC, UC or UD data flows in "
                "this capture.</text>\n",
                left, ny);
        ny += 15;
    } else if (shown.size() < panels_.size()) {
        appendf(s,
                "<text class=\"note\" x=\"%.0f\" y=\"%.0f\">%zu of %zu data flows drawn: the %zu "
                "busiest by payload bytes (uroce-dump --flows lists them all).</text>\n",
                left, ny, shown.size(), panels_.size(), shown.size());
        ny += 15;
    }
    if (cnp_unclaimed) {
        appendf(s,
                "<text class=\"note\" x=\"%.0f\" y=\"%.0f\">%" PRIu64
                " CNPs name no data flow in the capture (not drawn).</text>\n",
                left, ny, cnp_unclaimed);
        ny += 15;
    }

    double y0 = header_h;
    for (size_t i : shown) {
        const panel &p = panels_[i];
        const plot_flow_counts &c = p.counts;
        uint64_t ncnp = cnp_times[i].size();
        appendf(s,
                "<g class=\"flow\" data-flow=\"%s %s\" data-packets=\"%" PRIu64
                "\" data-payload=\"%" PRIu64 "\"",
                xml_escape(flow_name(p.key)).c_str(), p.read_response ? "resp" : "req", c.packets,
                c.payload_bytes);
        for (size_t k = 0; k < mark_kinds; k++)
            appendf(s, " data-%s=\"%" PRIu64 "\"", mark_class(mark_kind(k)),
                    mark_kind(k) == mark_kind::cnp ? ncnp : c.marks[k]);
        s += ">\n";

        /* Title line. */
        const char *kind = p.read_response ? "RDMA READ responses"
                           : !p.sequenced  ? "UD requests"
                                           : "requests";
        std::string counts;
        appendf(counts, "%" PRIu64 " packets, %" PRIu64 " payload bytes, %" PRIu64 " resent",
                c.packets, c.payload_bytes, c.marks[size_t(mark_kind::retx)]);
        appendf(counts,
                "; %" PRIu64 " ACKs, %" PRIu64 " NAKs (%" PRIu64 " PSN seq, %" PRIu64
                " RNR), %" PRIu64 " CNPs",
                c.marks[size_t(mark_kind::ack)],
                c.marks[size_t(mark_kind::nak_seq)] + c.marks[size_t(mark_kind::nak_rnr)] +
                    c.marks[size_t(mark_kind::nak_other)],
                c.marks[size_t(mark_kind::nak_seq)], c.marks[size_t(mark_kind::nak_rnr)], ncnp);
        appendf(s, "<text class=\"flow-title\" x=\"%.0f\" y=\"%.0f\">%s  (%s)</text>\n", left,
                y0 + 16, xml_escape(flow_name(p.key)).c_str(), kind);
        appendf(s, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", left, y0 + 31, counts.c_str());

        /* ---- time-sequence panel */
        double top = y0 + flow_title_h, bottom = top + seq_h;
        int64_t p_lo = INT64_MAX, p_hi = INT64_MIN;
        for (const event &e : p.events) {
            p_lo = std::min(p_lo, e.psn);
            p_hi = std::max(p_hi, e.psn);
        }
        if (p_lo > p_hi) p_lo = p_hi = 0;
        double pspan = double(p_hi - p_lo);
        if (pspan < 4) pspan = 4;
        double ylo = double(p_lo) - pspan * 0.05, yhi = double(p_lo) + pspan * 1.05;
        auto y_of = [&](double psn) { return bottom - (psn - ylo) / (yhi - ylo) * seq_h; };

        /* Grid, ticks and labels. */
        double pstep = std::max(1.0, nice_step(yhi - ylo, 6));
        double pfirst = std::ceil(ylo / pstep) * pstep;
        for (int n = 0; n < max_ticks && pfirst + n * pstep <= yhi; n++) {
            double v = pfirst + n * pstep;
            if (v == 0) v = 0; /* no "-0" label */
            double y = y_of(v);
            appendf(s, "<path class=\"grid\" d=\"M%.0f %.1fh%.0f\"/>\n", left, y, plot_w);
            appendf(s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", left - 6,
                    y + 4, v);
        }
        double tstep = nice_step(x_hi - x_lo, 10);
        int tdec = decimals_for(tstep / tu.ns);
        auto time_ticks = [&](double ytop, double ybottom) {
            /* Ticks at round times since the first frame. */
            double first = std::ceil((double(t_lo) + x_lo) / tstep) * tstep - double(t_lo);
            for (int n = 0; n < max_ticks && first + n * tstep <= x_hi; n++) {
                double r = first + n * tstep, x = x_of(r);
                appendf(s, "<path class=\"grid\" d=\"M%.1f %.1fV%.1f\"/>\n", x, ytop, ybottom);
                appendf(s, "<path class=\"axis\" d=\"M%.1f %.1fv4\"/>\n", x, ybottom);
                appendf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", x,
                        ybottom + 15, tdec, (double(t_lo) + r) / tu.ns);
            }
        };
        time_ticks(top, bottom);
        appendf(s, "<rect class=\"axis\" x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\"/>\n",
                left, top, plot_w, seq_h);
        appendf(s,
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.0f "
                "%.1f)\">PSN &#8722; %u</text>\n",
                left - 60, top + seq_h / 2, left - 60, top + seq_h / 2, p.first_psn);
        appendf(s,
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">time since the first frame "
                "(%s)</text>\n",
                left + plot_w / 2, bottom + 31, tu.name);

        /* Marks: one per pixel of each kind, then at most max_marks of each kind. */
        std::vector<std::vector<std::pair<double, double>>> pts(mark_kinds);
        std::unordered_set<uint64_t> seen;
        for (const event &e : p.events) {
            double x = x_of(rel(e.t_ns)), y = y_of(double(e.psn));
            uint64_t cell = uint64_t(e.kind) << 56 | uint64_t(std::lround(x)) << 28 |
                            uint64_t(std::lround(y - top + 64) & 0xfffffff);
            if (seen.insert(cell).second) pts[size_t(e.kind)].push_back({x, y});
        }
        for (int64_t t : cnp_times[i]) {
            double x = x_of(rel(t));
            uint64_t cell = uint64_t(mark_kind::cnp) << 56 | uint64_t(std::lround(x)) << 28;
            if (seen.insert(cell).second) pts[size_t(mark_kind::cnp)].push_back({x, top});
        }
        uint64_t merged = 0, sampled = 0;
        std::string marks;
        for (mark_kind k : {mark_kind::ack, mark_kind::data, mark_kind::retx, mark_kind::nak_other,
                            mark_kind::nak_rnr, mark_kind::nak_seq, mark_kind::cnp}) {
            auto &v = pts[size_t(k)];
            uint64_t total = k == mark_kind::cnp ? ncnp : c.marks[size_t(k)];
            merged += total - v.size();
            size_t keep = std::min(v.size(), o.max_marks);
            sampled += v.size() - keep;
            for (size_t j = 0; j < keep; j++) {
                /* Even sampling keeps the shape of the curve. */
                const auto &[x, y] = v[keep == v.size() ? j : j * v.size() / keep];
                draw_mark(marks, k, x, y, top, bottom);
            }
        }
        appendf(s, "<g class=\"marks\" data-merged=\"%" PRIu64 "\" data-sampled=\"%" PRIu64 "\">\n",
                merged, sampled);
        s += marks;
        s += "</g>\n";
        if (merged || sampled) {
            std::string note;
            appendf(note, "%" PRIu64 " marks on a pixel already marked not drawn", merged);
            if (sampled)
                appendf(note, "; %" PRIu64 " more left out (at most %zu of a kind)", sampled,
                        o.max_marks);
            appendf(s, "<text class=\"note\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                    left + plot_w, y0 + 16, note.c_str());
        }

        /* ---- throughput panel */
        double ttop = bottom + between_h, tbottom = ttop + thr_h;
        double bin_ns = (x_hi - x_lo) / throughput_bins;
        std::vector<double> fresh_bytes(size_t(throughput_bins), 0.0),
            resent_bytes(size_t(throughput_bins), 0.0);
        for (const event &e : p.events) {
            if (e.kind != mark_kind::data && e.kind != mark_kind::retx) continue;
            double b = std::clamp((rel(e.t_ns) - x_lo) / bin_ns, 0.0, throughput_bins - 1.0);
            (e.kind == mark_kind::retx ? resent_bytes : fresh_bytes)[size_t(b)] += e.bytes;
        }
        double max_bps = 0;
        for (int b = 0; b < throughput_bins; b++)
            max_bps = std::max(max_bps,
                               (fresh_bytes[size_t(b)] + resent_bytes[size_t(b)]) * 8e9 / bin_ns);
        time_unit ru = rate_unit(max_bps);
        double rmax = max_bps > 0 ? max_bps / ru.ns * 1.08 : 1;
        double rstep = nice_step(rmax, 3);
        int rdec = decimals_for(rstep);
        for (int n = 0; n < max_ticks && n * rstep <= rmax + 1e-12; n++) {
            double v = n * rstep;
            double y = tbottom - v / rmax * thr_h;
            appendf(s, "<path class=\"grid\" d=\"M%.0f %.1fh%.0f\"/>\n", left, y, plot_w);
            appendf(s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", left - 6,
                    y + 4, rdec, v);
        }
        time_ticks(ttop, tbottom);
        double bw = plot_w / throughput_bins;
        s += "<g class=\"throughput\">\n";
        for (int b = 0; b < throughput_bins; b++) {
            double fresh = fresh_bytes[size_t(b)] * 8e9 / bin_ns / ru.ns;
            double resent = resent_bytes[size_t(b)] * 8e9 / bin_ns / ru.ns;
            double hf = fresh / rmax * thr_h, hr = resent / rmax * thr_h;
            double x = left + b * bw;
            if (hf > 0)
                appendf(s,
                        "<rect class=\"bar-new\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                        "height=\"%.2f\"/>\n",
                        x, tbottom - hf, bw, hf);
            if (hr > 0)
                appendf(s,
                        "<rect class=\"bar-retx\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                        "height=\"%.2f\"/>\n",
                        x, tbottom - hf - hr, bw, hr);
        }
        s += "</g>\n";
        appendf(s, "<rect class=\"axis\" x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\"/>\n",
                left, ttop, plot_w, thr_h);
        appendf(s,
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.0f "
                "%.1f)\">%s</text>\n",
                left - 60, ttop + thr_h / 2, left - 60, ttop + thr_h / 2, ru.name);
        std::string bin_text;
        double bin_in_unit = bin_ns / unit_for(bin_ns).ns;
        appendf(bin_text, "payload throughput per %.3g %s bin (resent bytes in red)", bin_in_unit,
                unit_for(bin_ns).name);
        appendf(s, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                left + plot_w / 2, tbottom + 31, bin_text.c_str());
        s += "</g>\n";
        y0 += flow_h;
    }
    s += "</svg>\n";
    return s;
}

} // namespace uroce::dump

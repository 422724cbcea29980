/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump's capture reading loop (dump_read.h); main() is uroce_dump.cpp.
 */
#include "dump_read.h"

#include <pcap/pcap.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "dump_analyze.h"
#include "dump_check.h"
#include "dump_flows.h"
#include "dump_plot.h"

namespace uroce::dump {
namespace {

/* pcap files say their timestamp resolution in the magic number; pcapng and
 * stdin are shown with microseconds. */
bool file_has_nanoseconds(const char *path) {
    if (std::strcmp(path, "-") == 0) return false;
    FILE *f = std::fopen(path, "rb");
    if (!f) return false;
    uint8_t m[4] = {};
    size_t n = std::fread(m, 1, 4, f);
    std::fclose(f);
    return n == 4 && ((m[0] == 0xa1 && m[1] == 0xb2 && m[2] == 0x3c && m[3] == 0x4d) ||
                      (m[0] == 0x4d && m[1] == 0x3c && m[2] == 0xb2 && m[3] == 0xa1));
}

/* Timestamps in ns, wide: a capture's seconds (pcapng's 64-bit units, an
 * if_tsoffset) times 10^9 need not fit 64 bits. */
using wide_ns = __int128;

std::string rel_time(wide_ns ns, bool nano) {
    char buf[48];
    const char *sign = ns < 0 ? "-" : "";
    unsigned __int128 a =
        ns < 0 ? -static_cast<unsigned __int128>(ns) : static_cast<unsigned __int128>(ns);
    unsigned __int128 whole = a / 1000000000;
    uint64_t sec = whole > UINT64_MAX ? UINT64_MAX : uint64_t(whole);
    uint64_t frac = uint64_t(a % 1000000000);
    if (nano)
        std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%09" PRIu64, sign, sec, frac);
    else
        std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%06" PRIu64, sign, sec, frac / 1000);
    return buf;
}

} // namespace

int read_capture(const char *path, const read_options &o, FILE *out, std::string &error) {
    struct stat st;
    if (std::strcmp(path, "-") != 0) {
        if (::stat(path, &st) != 0) {
            error = std::strerror(errno);
            return exit_bad_input;
        }
        if (S_ISDIR(st.st_mode)) {
            error = "is a directory, not a capture file";
            return exit_bad_input;
        }
        if (S_ISREG(st.st_mode) && st.st_size == 0) {
            error = "empty file, not a pcap or pcapng capture";
            return exit_bad_input;
        }
    }
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (!pc) {
        error = std::string("not a readable pcap/pcapng capture: ") + errbuf;
        return exit_bad_input;
    }
    int dlt = pcap_datalink(pc);
    link_kind link;
    if (!link_kind_from_dlt(dlt, link)) {
        const char *name = pcap_datalink_val_to_name(dlt);
        pcap_close(pc);
        error = "unsupported link type " + std::to_string(dlt) + " (" + (name ? name : "unknown") +
                "); uroce-dump reads Ethernet, Linux cooked (SLL/SLL2) and raw IP";
        return exit_bad_input;
    }
    bool nano = file_has_nanoseconds(path);

    analyzer an(link, analyze_options{o.lenient});
    check_summary check(!o.lenient);
    flow_table flows;
    plot_collector plot;
    bool plotting = !o.plot_path.empty();
    bool print_lines = !o.check && !o.flows && !o.fields && !plotting;
    uint64_t number = 0, hidden = 0;
    wide_ns t0 = 0;
    if (o.fields) std::fprintf(out, "#%s\n", fields_header);

    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
        number++;
        wide_ns t = wide_ns(h->ts.tv_sec) * 1000000000 + h->ts.tv_usec; /* tv_usec holds ns */
        if (number == 1) t0 = t;
        const frame_report &r = an.analyze(number, data, h->caplen, h->len);
        check.add(r);
        flows.add(r);
        if (plotting) {
            wide_ns rel = t - t0;
            plot.add(r, rel > INT64_MAX ? INT64_MAX : rel < INT64_MIN ? INT64_MIN : int64_t(rel));
        }
        if (o.fields) {
            std::string f = format_fields(r);
            if (!f.empty()) std::fprintf(out, "%s\n", f.c_str());
        }
        bool show = print_lines || (o.check && !o.quiet && !r.error.empty());
        if (print_lines && o.roce_only && r.cls != frame_class::roce) {
            hidden++;
            show = false;
        }
        if (show) std::fprintf(out, "%s\n", format_line(r, rel_time(t - t0, nano), o.fmt).c_str());
    }
    std::string damage;
    if (rc == PCAP_ERROR) damage = pcap_geterr(pc);
    pcap_close(pc);
    if (!damage.empty()) {
        error = "damaged capture after frame " + std::to_string(number) + ": " + damage;
        return exit_bad_input;
    }

    if (hidden) std::fprintf(out, "(%" PRIu64 " non-RoCE frames not shown)\n", hidden);
    auto l2 = check.finish();
    if (o.flows) std::fputs(flows.format().c_str(), out);
    if (plotting) {
        plot_options po = o.plot;
        if (po.title.empty()) po.title = std::string("uroce-dump --plot ") + path;
        std::string svg = plot.svg(po);
        FILE *f = std::fopen(o.plot_path.c_str(), "w");
        bool written = f && std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
        if (f && std::fclose(f) != 0) written = false;
        if (!written) {
            error = "cannot write the plot to " + o.plot_path + ": " + std::strerror(errno);
            return exit_bad_input;
        }
        auto v = plot.flows();
        std::fprintf(out, "plot: %s: %zu of %zu data flows drawn\n", o.plot_path.c_str(),
                     std::min(v.size(), po.max_flows), v.size());
    }
    if (o.check) {
        if (!o.quiet)
            for (const auto &f : l2)
                std::fprintf(out, "%5" PRIu64 " ERROR %s: %s\n", f.number, f.error.c_str(),
                             f.detail.c_str());
        std::fputs(check.format().c_str(), out);
        if (check.failed()) return exit_check_failed;
    }
    return exit_ok;
}

} // namespace uroce::dump

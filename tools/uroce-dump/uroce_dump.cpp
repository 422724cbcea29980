/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: decode, check and summarize RoCEv2 traffic in pcap/pcapng files.
 *
 *   uroce-dump [-r] [-e] FILE        one line per frame (tshark-like)
 *   uroce-dump --check [-q] FILE     exit 1 if any RoCE packet is malformed or has a bad ICRC
 *   uroce-dump --flows FILE          per (src, dst, QPN) statistics
 *   uroce-dump --fields FILE         tab-separated BTH/ETH fields (tshark -T fields order)
 *
 * Exit status: 0 fine, 1 --check found bad packets, 2 unusable input or usage.
 * Usage and sample output: doc/uroce-dump.md.
 */
#include <getopt.h>
#include <pcap/pcap.h>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dump_analyze.h"
#include "dump_check.h"
#include "dump_flows.h"
#include "dump_format.h"

namespace uroce::dump {
namespace {

constexpr int exit_ok = 0;
constexpr int exit_check_failed = 1;
constexpr int exit_bad_input = 2;

struct options {
    bool check = false;
    bool flows = false;
    bool fields = false;
    bool roce_only = false;
    bool quiet = false;
    bool lenient = false;
    format_options fmt;
    const char *path = nullptr;
};

void usage(FILE *to) {
    std::fputs("usage: uroce-dump [options] FILE\n"
               "Decode RoCEv2 packets in a pcap or pcapng file (FILE '-' reads stdin).\n"
               "  -c, --check      print only bad RoCE packets and a summary; exit 1 if any\n"
               "  -f, --flows      per (source, destination, destination QP) statistics\n"
               "  -F, --fields     tab-separated fields in tshark -T fields order (see doc)\n"
               "  -r, --roce-only  do not print non-RoCE frames (they are counted)\n"
               "  -e, --macs       print MAC addresses\n"
               "  -l, --lenient    only parser and ICRC errors count: no IPv4/UDP checksum,\n"
               "                   BTH reserved-bit or L2 address consistency checks\n"
               "  -q, --quiet      with --check: the summary only\n"
               "  -h, --help\n"
               "Exit status: 0 ok, 1 --check found bad packets, 2 unusable input or usage.\n",
               to);
}

/* One-line error for input that cannot be used; always exit 2. */
[[noreturn]] void bad_input(const char *path, const std::string &msg) {
    std::fflush(stdout);
    std::fprintf(stderr, "uroce-dump: %s: %s\n", path, msg.c_str());
    std::exit(exit_bad_input);
}

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

std::string rel_time(int64_t ns, bool nano) {
    char buf[48];
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? uint64_t(-ns) : uint64_t(ns);
    if (nano)
        std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%09" PRIu64, sign, a / 1000000000,
                      a % 1000000000);
    else
        std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%06" PRIu64, sign, a / 1000000000,
                      (a % 1000000000) / 1000);
    return buf;
}

int run(const options &o) {
    struct stat st;
    if (std::strcmp(o.path, "-") != 0) {
        if (::stat(o.path, &st) != 0) bad_input(o.path, std::strerror(errno));
        if (S_ISDIR(st.st_mode)) bad_input(o.path, "is a directory, not a capture file");
        if (S_ISREG(st.st_mode) && st.st_size == 0)
            bad_input(o.path, "empty file, not a pcap or pcapng capture");
    }
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t *pc =
        pcap_open_offline_with_tstamp_precision(o.path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (!pc) bad_input(o.path, std::string("not a readable pcap/pcapng capture: ") + errbuf);
    int dlt = pcap_datalink(pc);
    link_kind link;
    if (!link_kind_from_dlt(dlt, link)) {
        const char *name = pcap_datalink_val_to_name(dlt);
        pcap_close(pc);
        bad_input(o.path, "unsupported link type " + std::to_string(dlt) + " (" +
                              (name ? name : "unknown") +
                              "); uroce-dump reads Ethernet, Linux cooked (SLL/SLL2) and raw IP");
    }
    bool nano = file_has_nanoseconds(o.path);

    analyzer an(link, analyze_options{o.lenient});
    check_summary check(!o.lenient);
    flow_table flows;
    bool print_lines = !o.check && !o.flows && !o.fields;
    uint64_t number = 0, hidden = 0;
    int64_t t0 = 0;
    if (o.fields) std::printf("#%s\n", fields_header);

    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
        number++;
        int64_t t = int64_t(h->ts.tv_sec) * 1000000000 + h->ts.tv_usec; /* tv_usec holds ns */
        if (number == 1) t0 = t;
        const frame_report &r = an.analyze(number, data, h->caplen, h->len);
        check.add(r);
        flows.add(r);
        if (o.fields) {
            std::string f = format_fields(r);
            if (!f.empty()) std::printf("%s\n", f.c_str());
        }
        bool show = print_lines || (o.check && !o.quiet && !r.error.empty());
        if (print_lines && o.roce_only && r.cls != frame_class::roce) {
            hidden++;
            show = false;
        }
        if (show) std::printf("%s\n", format_line(r, rel_time(t - t0, nano), o.fmt).c_str());
    }
    std::string damage;
    if (rc == PCAP_ERROR) damage = pcap_geterr(pc);
    pcap_close(pc);
    if (!damage.empty())
        bad_input(o.path, "damaged capture after frame " + std::to_string(number) + ": " + damage);

    if (hidden) std::printf("(%" PRIu64 " non-RoCE frames not shown)\n", hidden);
    auto l2 = check.finish();
    if (o.flows) std::fputs(flows.format().c_str(), stdout);
    if (o.check) {
        if (!o.quiet)
            for (const auto &f : l2)
                std::printf("%5" PRIu64 " ERROR %s: %s\n", f.number, f.error.c_str(),
                            f.detail.c_str());
        std::fputs(check.format().c_str(), stdout);
        if (check.failed()) return exit_check_failed;
    }
    return exit_ok;
}

} // namespace
} // namespace uroce::dump

int main(int argc, char **argv) {
    using namespace uroce::dump;
    options o;
    static const struct option longopts[] = {
        {"check", no_argument, nullptr, 'c'},
        {"flows", no_argument, nullptr, 'f'},
        {"fields", no_argument, nullptr, 'F'},
        {"roce-only", no_argument, nullptr, 'r'},
        {"macs", no_argument, nullptr, 'e'},
        {"lenient", no_argument, nullptr, 'l'},
        {"quiet", no_argument, nullptr, 'q'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "cfFrelqh", longopts, nullptr)) != -1) {
        switch (c) {
        case 'c':
            o.check = true;
            break;
        case 'f':
            o.flows = true;
            break;
        case 'F':
            o.fields = true;
            break;
        case 'r':
            o.roce_only = true;
            break;
        case 'e':
            o.fmt.show_macs = true;
            break;
        case 'l':
            o.lenient = true;
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'h':
            usage(stdout);
            return exit_ok;
        default:
            usage(stderr);
            return exit_bad_input;
        }
    }
    if (optind != argc - 1) {
        std::fprintf(stderr, "uroce-dump: expected exactly one capture file\n");
        usage(stderr);
        return exit_bad_input;
    }
    o.path = argv[optind];
    return run(o);
}

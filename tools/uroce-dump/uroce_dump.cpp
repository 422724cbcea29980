/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump: decode, check and summarize RoCEv2 traffic in pcap/pcapng files.
 *
 *   uroce-dump [-r] [-e] FILE        one line per frame (tshark-like)
 *   uroce-dump --check [-q] FILE     exit 1 if any RoCE packet is malformed or has a bad ICRC
 *   uroce-dump --flows FILE          per (src, dst, QPN) statistics
 *   uroce-dump --fields FILE         tab-separated BTH/ETH fields (tshark -T fields order)
 *   uroce-dump --plot OUT.svg FILE   per-QP time-sequence and throughput graphs
 *
 * Exit status: 0 fine, 1 --check found bad packets, 2 unusable input or usage.
 * Usage and sample output: doc/uroce-dump.md.
 */
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dump_read.h"

namespace uroce::dump {
namespace {

struct options {
    read_options read;
    const char *path = nullptr;
};

void usage(FILE *to) {
    std::fputs("usage: uroce-dump [options] FILE\n"
               "Decode RoCEv2 packets in a pcap or pcapng file (FILE '-' reads stdin).\n"
               "  -c, --check      print only bad RoCE packets and a summary; exit 1 if any\n"
               "  -f, --flows      per (source, destination, destination QP) statistics\n"
               "  -F, --fields     tab-separated fields in tshark -T fields order (see doc)\n"
               "  -p, --plot OUT.svg\n"
               "                   draw each QP's data flow to OUT.svg: PSN over time with\n"
               "                   retransmissions, ACKs, NAKs and CNPs marked, and payload\n"
               "                   throughput over time (the 8 busiest flows; see doc)\n"
               "      --plot-flows N  draw up to N flows instead of 8\n"
               "  -r, --roce-only  do not print non-RoCE frames (they are counted)\n"
               "  -e, --macs       print MAC addresses\n"
               "  -l, --lenient    only parser and ICRC errors count: no IPv4/UDP checksum,\n"
               "                   BTH reserved-bit or L2 address consistency checks\n"
               "  -q, --quiet      with --check: the summary only\n"
               "  -h, --help\n"
               "Exit status: 0 ok, 1 --check found bad packets, 2 unusable input or usage.\n",
               to);
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
        {"plot", required_argument, nullptr, 'p'},
        {"plot-flows", required_argument, nullptr, 'P'},
        {"roce-only", no_argument, nullptr, 'r'},
        {"macs", no_argument, nullptr, 'e'},
        {"lenient", no_argument, nullptr, 'l'},
        {"quiet", no_argument, nullptr, 'q'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "cfFp:relqh", longopts, nullptr)) != -1) {
        switch (c) {
        case 'c':
            o.read.check = true;
            break;
        case 'f':
            o.read.flows = true;
            break;
        case 'F':
            o.read.fields = true;
            break;
        case 'p':
            o.read.plot_path = optarg;
            break;
        case 'P': {
            char *end = nullptr;
            long n = std::strtol(optarg, &end, 10);
            if (!*optarg || *end || n < 1 || n > 1000) {
                std::fprintf(stderr, "uroce-dump: --plot-flows wants a number from 1 to 1000\n");
                return exit_bad_input;
            }
            o.read.plot.max_flows = size_t(n);
            break;
        }
        case 'r':
            o.read.roce_only = true;
            break;
        case 'e':
            o.read.fmt.show_macs = true;
            break;
        case 'l':
            o.read.lenient = true;
            break;
        case 'q':
            o.read.quiet = true;
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
    std::string error;
    int rc = read_capture(o.path, o.read, stdout, error);
    if (rc == exit_bad_input) {
        /* one line for input that cannot be used, after what was printed */
        std::fflush(stdout);
        std::fprintf(stderr, "uroce-dump: %s: %s\n", o.path, error.c_str());
    }
    return rc;
}

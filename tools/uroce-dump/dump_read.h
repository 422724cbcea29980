/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump's reading of a capture file: libpcap opens it (pcap or pcapng),
 * every frame goes through the analyzer, and the lines, flows, fields or
 * check summary are written to `out`. In the library (not in main) so the
 * fuzz target (test/fuzz/fuzz_dump_read.cpp) runs exactly what the binary runs.
 */
#ifndef UROCE_DUMP_READ_H
#define UROCE_DUMP_READ_H

#include <cstdio>
#include <string>

#include "dump_format.h"
#include "dump_plot.h"

namespace uroce::dump {

inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1;
inline constexpr int exit_bad_input = 2;

struct read_options {
    bool check = false;
    bool flows = false;
    bool fields = false;
    bool roce_only = false;
    bool quiet = false;
    bool lenient = false;
    format_options fmt;
    /* --plot: the SVG file to write (empty: none); its title is set from the path. */
    std::string plot_path;
    plot_options plot;
};

/* Reads the capture at path ("-": stdin). Returns exit_ok, exit_check_failed
 * (--check found bad packets) or exit_bad_input with `error` set to the
 * one-line reason (what was printed for the frames before damage stays; a
 * damaged capture writes no plot, and an unwritable plot file is exit_bad_input). */
int read_capture(const char *path, const read_options &o, FILE *out, std::string &error);

} // namespace uroce::dump

#endif

/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: uroce-dump reading a capture file, i.e. read_capture()
 * (tools/uroce-dump/dump_read.cpp, the whole of `uroce-dump FILE` but its
 * option parsing): libpcap's pcap and pcapng readers on hostile file bytes,
 * the per-record caplen/len/timestamp handling, then the analyzer, lines,
 * fields, flows and --check summary on every record.
 *
 * The input is the file: it is written to a memfd and read through
 * /proc/self/fd/N, the way the binary reads a path. Each input is read six
 * ways (lines, --roce-only -e, --fields, --flows, --check, the last also
 * --lenient, and --plot), output to /dev/null.
 *
 * Oracle (besides ASan/UBSan): the return is 0, 1 or 2; 2 exactly when an
 * error line is given; 1 only with --check; and every way of reading the
 * same bytes agrees on whether the file is usable (exit 2), since they read
 * it identically.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "dump_read.h"
#include "fuzz_common.h"

namespace uroce::fuzz {
namespace {

struct memfile {
    int fd = -1;
    char path[64] = {};
    FILE *devnull = nullptr;
    memfile() {
        fd = ::memfd_create("fuzz_dump_read", 0);
        FUZZ_REQUIRE(fd >= 0);
        std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        devnull = std::fopen("/dev/null", "w");
        FUZZ_REQUIRE(devnull != nullptr);
    }
    void store(const uint8_t *data, size_t size) {
        FUZZ_REQUIRE(::ftruncate(fd, 0) == 0);
        size_t off = 0;
        while (off < size) {
            ssize_t n = ::pwrite(fd, data + off, size - off, off_t(off));
            FUZZ_REQUIRE(n > 0);
            off += size_t(n);
        }
    }
};

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce::fuzz;
    using namespace uroce::dump;
    static memfile f;
    if (size > 200000) return 0;
    f.store(data, size);

    read_options ways[6];
    ways[1].roce_only = true;
    ways[1].fmt.show_macs = true;
    ways[2].fields = true;
    ways[3].flows = true;
    ways[4].check = true;
    ways[4].lenient = (size & 1) != 0;
    ways[5].plot_path = "/dev/null"; /* --plot: the SVG is built, then discarded */
    int bad = -1;
    for (const read_options &o : ways) {
        std::string error;
        int rc = read_capture(f.path, o, f.devnull, error);
        FUZZ_REQUIRE(rc == exit_ok || rc == exit_check_failed || rc == exit_bad_input);
        FUZZ_REQUIRE((rc == exit_bad_input) == !error.empty());
        FUZZ_REQUIRE(rc != exit_check_failed || o.check);
        if (bad < 0) bad = rc == exit_bad_input;
        FUZZ_REQUIRE(bad == (rc == exit_bad_input));
    }
    return 0;
}

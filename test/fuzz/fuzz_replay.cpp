/* SPDX-License-Identifier: BSD-3-Clause
 * main() for the fuzz target in builds without libFuzzer: runs
 * LLVMFuzzerTestOneInput over every file named, or found in a directory
 * named, on the command line (the committed corpus and regressions), so the
 * regressions stay fixed in every CI build, gcc included.
 */
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

int replay(const std::filesystem::path &file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "fuzz_replay: cannot read %s\n", file.c_str());
        return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    /* An exact-size heap copy, so ASan builds catch reads past the end as libFuzzer would. */
    std::vector<uint8_t> exact(bytes);
    exact.shrink_to_fit();
    static const uint8_t empty_input[1] = {0};
    LLVMFuzzerTestOneInput(exact.empty() ? empty_input : exact.data(), exact.size());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    size_t files = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        std::filesystem::path arg(argv[i]);
        std::error_code ec;
        if (std::filesystem::is_directory(arg, ec)) {
            for (const auto &e : std::filesystem::recursive_directory_iterator(arg)) {
                if (!e.is_regular_file() || e.path().filename().string().front() == '.') continue;
                bad += replay(e.path());
                files++;
            }
        } else {
            bad += replay(arg);
            files++;
        }
    }
    std::printf("fuzz_replay: %zu inputs replayed\n", files);
    return bad ? 1 : 0;
}

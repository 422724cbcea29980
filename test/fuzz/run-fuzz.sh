#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build the parser fuzzer with clang (ASan + UBSan + libFuzzer) in its own
# build directory and run it for a short while from the committed corpus.
#
#   test/fuzz/run-fuzz.sh [SECONDS]        default 60; CI runs this
#
# Environment: BUILD_DIR (default build-fuzz), JOBS (ninja -j, default 2),
# FUZZ_WORK (where new corpus entries go, default $BUILD_DIR/fuzz-work).
# Exit 0 when the run found nothing. When it crashes, the input is left as
# $FUZZ_WORK/crash-* (libFuzzer's name); reproduce with
#   $BUILD_DIR/test/fuzz/fuzz_parse CRASH_FILE
# and, once fixed, copy it to test/fuzz/regressions/ so every build replays it.
set -eu

seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-2}
work=${FUZZ_WORK:-$build/fuzz-work}

command -v clang++ >/dev/null || { echo "run-fuzz.sh: clang++ not found" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
    # -fsanitize=fuzzer-no-link instruments the libraries for coverage; the
    # target links -fsanitize=fuzzer. UBSan findings must stop the run.
    # tests=true only because test/fuzz lives under test/; ninja below builds
    # just the fuzzer and what it links.
    CC=clang CXX=clang++ meson setup "$build" "$root" \
        -Dfuzzers=true -Dtests=true -Dbenchmarks=false \
        -Dbuildtype=debugoptimized -Db_ndebug=false \
        -Db_sanitize=address,undefined -Db_lundef=false \
        "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
        "-Dcpp_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined"
fi
ninja -C "$build" -j "$jobs" test/fuzz/fuzz_parse

# New inputs go to a scratch corpus dir (first dir), seeds are read from the
# committed corpus and regressions; nothing in the source tree is modified.
mkdir -p "$work/corpus"
cd "$work"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$build/test/fuzz/fuzz_parse" -max_total_time="$seconds" -max_len=4400 \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    "$work/corpus" "$here/corpus" "$here/regressions"

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build the fuzz targets with clang (ASan + UBSan + libFuzzer) in their own
# build directory and run each for a short while from its committed corpus.
#
#   test/fuzz/run-fuzz.sh [SECONDS [TARGET...]]
#       SECONDS per target, default 30 (7 targets: ~2 min of fuzzing on 2
#       cores; CI runs 10 s each); TARGET among parse transport neigh engine oob dump_read cm,
#       default all of them.
#
# Environment: BUILD_DIR (default build-fuzz), JOBS (ninja -j, default 2),
# FUZZ_WORK (where new corpus entries go, default $BUILD_DIR/fuzz-work),
# LANES (targets fuzzed at once, default one per CPU, at most 2).
# Exit 0 when no run found anything. When one crashes, its input is left as
# $FUZZ_WORK/<target>/crash-* (libFuzzer's name) and the other targets still
# run; reproduce with
#   $BUILD_DIR/test/fuzz/fuzz_<target> CRASH_FILE
# and, once fixed, copy it to test/fuzz/regressions/<target>/ so every build
# replays it (and say what it guards in test/fuzz/regressions/README.md).
set -eu

seconds=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-parse transport neigh engine oob dump_read cm}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-2}
work=${FUZZ_WORK:-$build/fuzz-work}

command -v clang++ >/dev/null || { echo "run-fuzz.sh: clang++ not found" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
    # -fsanitize=fuzzer-no-link instruments the libraries for coverage; the
    # targets link -fsanitize=fuzzer. UBSan findings must stop the run.
    # tests=true only because test/fuzz lives under test/; ninja below builds
    # just the fuzzers and what they link.
    CC=clang CXX=clang++ meson setup "$build" "$root" \
        -Dfuzzers=true -Dtests=true -Dbenchmarks=false \
        -Dbuildtype=debugoptimized -Db_ndebug=false \
        -Db_sanitize=address,undefined -Db_lundef=false \
        "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
        "-Dcpp_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined"
fi
bins=
for t in $targets; do bins="$bins test/fuzz/fuzz_$t"; done
# shellcheck disable=SC2086
ninja -C "$build" -j "$jobs" $bins

# The longest input worth trying: a frame (parse); a few dozen frames
# (transport, engine, neigh); a perftest exchange (oob); a small capture.
max_len() {
    case $1 in
    parse) echo 4400 ;;
    transport | engine) echo 20000 ;;
    neigh | oob) echo 4096 ;;
    cm) echo 8192 ;;
    dump_read) echo 16384 ;;
    *) echo 4096 ;;
    esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target's run; its one-line verdict goes to $work/$t.result.
fuzz_one() {
    t=$1
    # New inputs go to a scratch corpus dir (first dir), seeds are read from
    # the committed corpus and regressions; the source tree is not modified.
    mkdir -p "$work/$t/corpus"
    if (cd "$work/$t" && "$build/test/fuzz/fuzz_$t" -max_total_time="$seconds" \
            -max_len="$(max_len "$t")" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$work/$t/" \
            "$work/$t/corpus" "$here/corpus/$t" "$here/regressions/$t" >"$work/$t.log" 2>&1); then
        line=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$work/$t.log" | tail -n 1 |
            sed 's/^#\([0-9]*\)[^c]*\(cov: [0-9]*\) \(ft: [0-9]*\).*/\1 execs, \2, \3/')
        echo "fuzz_$t: ok, $line" >"$work/$t.result"
    else
        echo "fuzz_$t: FAILED, see $work/$t.log and $work/$t/crash-*" >"$work/$t.result"
    fi
}

# Each libFuzzer run is one thread, so the targets run in LANES lanes side
# by side (default: one per CPU, at most 2): CI's seven 10 s runs take 40 s
# on 2 cores instead of 70. Lane i takes targets i, i+LANES, ...
lanes=${LANES:-$(nproc 2>/dev/null || echo 1)}
[ "$lanes" -gt 2 ] && [ -z "${LANES:-}" ] && lanes=2
[ "$lanes" -ge 1 ] || lanes=1
for t in $targets; do rm -f "$work/$t.result"; done
echo "=== $(echo $targets | wc -w) targets, $seconds s each, $lanes at a time"
lane=0
while [ "$lane" -lt "$lanes" ]; do
    (
        i=0
        for t in $targets; do
            [ $((i % lanes)) -eq "$lane" ] && fuzz_one "$t"
            i=$((i + 1))
        done
    ) &
    lane=$((lane + 1))
done
wait

failed=
summary=
for t in $targets; do
    if [ ! -f "$work/$t.result" ] || grep -q FAILED "$work/$t.result"; then
        tail -n 40 "$work/$t.log" 2>/dev/null || true
        failed="$failed $t"
    fi
    summary="$summary
$(cat "$work/$t.result" 2>/dev/null || echo "fuzz_$t: FAILED, no result")"
done
echo "$summary"
[ -z "$failed" ] || { echo "run-fuzz.sh: failed:$failed" >&2; exit 1; }

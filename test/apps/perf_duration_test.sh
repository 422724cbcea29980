#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-perf -D without -f reports the whole run with its drain: the WRs
# posted before the stop complete after it, and count. With one signaled WR
# per 100 (-Q 100, the default) and 64 KiB WRITEs paced at 40 Mb/s
# (--dcqcn=40: DCQCN's rate limiter at that line rate), the first completion
# (100 x 64 KiB = 52 Mbit) comes 1.3 s after the start of a 1 s run. A run
# that ended its count at the stop read 0 WRITEs and 0.00 MB/s, as
# test/bench/qp_scaling.sh did for 64 KiB WRITE at 4096 QPs (434bb97).
# Usage: perf_duration_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
out=$(mktemp /tmp/uroce-perf-duration.XXXXXX)
trap 'rm -f "$out"' EXIT
timeout 60 "$bin" --loopback write_bw -s 65536 -D 1 -Q 100 --dcqcn=40 >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || { echo "FAIL: write_bw -D 1 exited with $rc"; exit 1; }
# the result line: size, iterations, peak, average MB/s, Mpps
read -r size iters _ avg _ < <(grep -E '^ +65536 +[0-9]+ ' "$out" | head -1)
[ "${size:-}" = 65536 ] || { echo "FAIL: no result line"; exit 1; }
if [ "$iters" -lt 100 ] || ! awk -v a="$avg" 'BEGIN { exit !(a > 0) }'; then
    echo "FAIL: -D 1 without -f counted $iters WRITEs at $avg MB/s; the drain's (>= 100, > 0) are missing"
    exit 1
fi
echo "PASS: -D 1 without -f: $iters WRITEs of 64 KiB, $avg MB/s, drain included"

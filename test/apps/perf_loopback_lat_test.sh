#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-perf --loopback latency tests: both stacks in one process on one
# core over a net_ring pair, the client endpoint running perftest's
# initiator loop and the server endpoint answering from the same thread.
# Checks the exit code, one result line per test with every iteration, and
# that t_max stays within a sane bound of t_typical (samples from post to
# post: no wait for the peer is in any).
# Usage: perf_loopback_lat_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
out=$(mktemp /tmp/uroce-perf-lat.XXXXXX)
trap 'rm -f "$out"' EXIT
eal="--no-huge -m 1024 --no-pci --no-shconf -l 0 --log-level=*:warning --file-prefix uroce-lat-$$ --"
timeout 60 "$bin" $eal --loopback send_lat write_lat read_lat atomic_lat -n 2000 >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: uroce-perf exited with $rc"
  exit 1
fi
lines=$(grep -A1 '#bytes' "$out" | grep -c '^ *[0-9]\+ \+2000 ')
if [ "$lines" -ne 4 ]; then
  echo "FAIL: $lines result lines of 2000 iterations, 4 expected"
  exit 1
fi
# t_max within 1000 x t_typical + 80 ms (a busy machine's scheduler)
if ! grep -A1 '#bytes' "$out" | grep '^ *[0-9]\+ \+2000 ' |
  awk '{ if (!($4 > 0 && $5 > 0 && $4 <= 1000 * $5 + 80000)) bad = 1 } END { exit bad }'; then
  echo "FAIL: a t_max is not within 1000 x t_typical + 80 ms"
  exit 1
fi
echo "PASS: send/write/read/atomic_lat over the ring, 2000 iterations each"

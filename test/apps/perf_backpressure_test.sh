#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# TX back-pressure end to end: uroce-perf --loopback write_bw with 64 QPs of
# 4 KiB WRITEs (8192 frames outstanding, twice the 4096 slots it asks of the
# net_ring pair with --ring 4096; the default 512 refuses even more, this
# pins the size), so the port refuses bursts all the time) while a busy loop competes for the
# same CPU. Frames the port refuses are kept and sent later; the run must
# complete with its data checked. (Before back-pressure they were dropped and
# a longer run could end in "transport retry counter exceeded"; this short
# run passed with that code too on the 2-core CI box, so it guards the
# refusal path through a real PMD, and device_poll's unit test is the one
# that shows the drops.)
# Usage: perf_backpressure_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[,-].*//')
cpu=${cpu:-0}
out=$(mktemp /tmp/uroce-perf-bp.XXXXXX)
busy=
cleanup() {
  [ -n "$busy" ] && kill "$busy" 2>/dev/null
  rm -f "$out"
}
trap cleanup EXIT
# the competitor: a busy loop on the CPU uroce-perf runs on
taskset -c "$cpu" bash -c 'while :; do :; done' &
busy=$!
eal="--no-huge -m 1024 --no-pci --no-shconf -l $cpu --log-level=*:warning --file-prefix uroce-bp-$$ --"
timeout 60 "$bin" $eal --loopback write_bw -q 64 -s 4096 -n 1000 --ring 4096 >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: uroce-perf exited with $rc"
  exit 1
fi
if ! grep -q '^ *4096 \+[0-9]\+ ' "$out"; then
  echo "FAIL: no result line"
  exit 1
fi
echo "PASS: write_bw -q 64 -s 4096 against a busy loop on CPU $cpu"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 4096 QPs: uroce-perf --loopback send_bw -q 4096 (perftest's -q range) with a
# few 64 B messages per QP, then write_bw of 4 KiB. Every QP is created and
# connected on both stacks, every message completes without error and its
# data is checked (uroce-perf exits 1 otherwise); the counters must show no
# frame dropped, no completion lost and no frame for an unknown QP. The TX
# pool holds fewer mbufs than the QPs' windows: the transport waits for them
# (tx_mbuf_waits) instead of failing. The app's own EAL defaults size its
# memory from -q.
# Usage: perf_qp_scale_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
out=$(mktemp /tmp/uroce-perf-qps.XXXXXX)
trap 'rm -f "$out"' EXIT
fail() {
  cat "$out"
  echo "FAIL: $*"
  exit 1
}
check() { # TEST SIZE ITERS
  local test=$1 size=$2 n=$3
  timeout 120 "$bin" --loopback "$test" -q 4096 -s "$size" -n "$n" --counters >"$out" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || fail "$test -q 4096 exited with $rc"
  grep -q "Number of qps   : 4096" "$out" || fail "$test: not 4096 QPs"
  # every QP's messages: 4096 x n completions
  grep -qE "^ +$size +$((4096 * n)) " "$out" || fail "$test: no result line for $((4096 * n)) messages"
  if grep -E ' (tx_drops|cq_overflows|rx_no_qp|error_completions) ' "$out"; then
    fail "$test: frames dropped, completions lost or in error"
  fi
  echo "PASS: $test -q 4096 -s $size -n $n: $(grep -E "^ +$size " "$out" | head -1)"
}
check send_bw 64 8
check write_bw 4096 5

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two shards on two lcores: uroce-perf --loopback with 4 QPs spread over 2
# shards per stack (lcore 0 runs shard 0 of both stacks, lcore 1 shard 1),
# over a net_ring pair, which has no RSS: shard 0 reads the one RX queue and
# hands shard 1's frames over. SEND, WRITE and READ at 64 B, 4 KiB and
# 64 KiB with the data checked by uroce-perf after every size; the check
# here is its exit code and that shard 1 of both stacks got its frames
# through the fan-out.
# Usage: perf_shards_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
out=$(mktemp /tmp/uroce-perf-shards.XXXXXX)
trap 'rm -f "$out"' EXIT
eal="--no-huge -m 1024 --no-pci --no-shconf -l 0,1 --log-level=*:warning --file-prefix uroce-shards-$$ --"
timeout 60 "$bin" $eal --loopback send_bw write_bw read_bw -q 4 -n 1000 --shards 2 >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: uroce-perf exited with $rc"
  exit 1
fi
lines=$(grep -c '^ *[0-9]\+ \+[0-9]\+ ' "$out")
if [ "$lines" -ne 9 ]; then
  echo "FAIL: $lines result lines, 9 expected"
  exit 1
fi
for side in client server; do
  in=$(grep "^ $side shard 1:" "$out" | tail -1 | sed 's/.* in \([0-9]*\) .*/\1/')
  if ! [ "${in:-0}" -gt 0 ] 2>/dev/null; then
    echo "FAIL: $side shard 1 received nothing through the fan-out"
    exit 1
  fi
done
echo "PASS: 3 tests x 3 sizes, 4 QPs on 2 shards, data checked"

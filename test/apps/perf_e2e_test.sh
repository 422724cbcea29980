#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-perf end to end between two processes over net_memif: every test
# (bw and lat, send/write/read/atomic), client and server each on its own
# core, through perftest's TCP exchange. Checks both exit codes and that
# the client printed a result line with a non-zero iteration count.
# Usage: perf_e2e_test.sh UROCE_PERF
set -u
bin=${1:?usage: $0 UROCE_PERF}
tmp=$(mktemp -d /tmp/uroce-perf.XXXXXX)
trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
eal0="--no-huge -m 1024 --no-pci --no-shconf -l 0 --log-level=*:warning --"
eal1="--no-huge -m 1024 --no-pci --no-shconf -l 1 --log-level=*:warning --"
pass=0 fail=0
for t in send_bw write_bw read_bw atomic_bw send_lat write_lat read_lat atomic_lat; do
  sock=$tmp/$t.sock
  args=(-n 500 -p 18700 --timeout 10)
  case $t in *_bw) args+=(-s 4096) ;; esac
  timeout 60 "$bin" $eal0 "$t" --vdev "net_memif0,role=server,id=0,socket=$sock,socket-abstract=no" \
    --ip 10.77.0.1/24 --mac 02:00:00:00:00:01 "${args[@]}" >"$tmp/$t.srv" 2>&1 &
  spid=$!
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  timeout 60 "$bin" $eal1 "$t" --vdev "net_memif0,role=client,id=0,socket=$sock,socket-abstract=no" \
    --ip 10.77.0.2/24 --mac 02:00:00:00:00:02 "${args[@]}" 127.0.0.1 >"$tmp/$t.cli" 2>&1
  crc=$?
  wait $spid
  src=$?
  line=$(grep -A1 '#bytes' "$tmp/$t.cli" | tail -1)
  iters=$(echo "$line" | awk '{print $2}')
  if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -n "$iters" ] && [ "$iters" -gt 0 ] 2>/dev/null; then
    echo "PASS $t:$line"
    pass=$((pass + 1))
  else
    echo "FAIL $t (server rc $src, client rc $crc)"
    grep -v "^EAL" "$tmp/$t.srv" | sed 's/^/  server: /' | head -15
    grep -v "^EAL" "$tmp/$t.cli" | sed 's/^/  client: /' | head -15
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

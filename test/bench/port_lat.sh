#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Latency between two processes over net_memif (issue 14's target: 2 B
# send_lat t_typical <= 1.0 us, half a round trip), beside its reference
# measured in the same run: the bare port (bench_port_lat), the same memif
# link opened the same way with no stack, one and two frames each way. A
# send_lat round trip carries two frames each way (the SEND, and the ACK of
# the peer's last SEND), so "uroce adds" is uroce-perf's t_typical minus the
# bare port's with two frames: uroce's own path, once per half round trip.
#
# Each round runs bare 1 frame, bare 2 frames and uroce-perf, in that
# order, server on CPU 0 and client on CPU 1, rounds interleaved so that the
# host's load falls on all of them alike; the table shows each run and the
# medians of the rounds. CI runs one short round (suite apps) to keep it
# working; its figures mean nothing there.
#
# Usage: test/bench/port_lat.sh [BUILD_DIR] [-r ROUNDS] [-n ITERS] [-t send_lat|write_lat] [-s SIZE]
# (default build, 3 rounds, 20000 iterations, send_lat, 2 bytes)
set -u
build=build
rounds=3
iters=20000
test_name=send_lat
size=2
while [ $# -gt 0 ]; do
  case "$1" in
    -r) rounds=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -t) test_name=$2; shift 2 ;;
    -s) size=$2; shift 2 ;;
    -h|--help) sed -n '3,17p' "$0"; exit 0 ;;
    *) build=$1; shift ;;
  esac
done
perf_bin=$build/apps/uroce-perf/uroce-perf
bare_bin=$build/test/bench/bench_port_lat
for b in "$perf_bin" "$bare_bin"; do
  [ -x "$b" ] || { echo "port_lat: no $b (ninja -C $build)" >&2; exit 2; }
done
[ "$(nproc)" -ge 2 ] || { echo "port_lat: needs two CPUs" >&2; exit 2; }
tmp=$(mktemp -d /tmp/uroce-port-lat.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error
     --log-level=pmd.net.memif:error)
# The frame of a SIZE-byte SEND over IPv4: Ethernet 14, IPv4 20, UDP 8,
# BTH 12, the payload padded to 4 bytes, ICRC 4.
frame=$((14 + 20 + 8 + 12 + (size + 3) / 4 * 4 + 4))

# pair NAME SERVER_ARGS... :: CLIENT_ARGS...: both sides of one run, the
# client's last line (the figures) in $tmp/NAME
pair() {
  local name=$1; shift
  local sargs=() cargs=()
  while [ "$1" != :: ]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  local sock=$tmp/sock.$name
  rm -f "$sock"
  taskset -c 0 timeout 120 "${sargs[@]//SOCK/$sock}" >"$tmp/$name.server" 2>&1 &
  local server=$!
  sleep 1
  if ! taskset -c 1 timeout 120 "${cargs[@]//SOCK/$sock}" >"$tmp/$name.client" 2>&1; then
    echo "port_lat: $name failed:" >&2
    tail -3 "$tmp/$name.client" "$tmp/$name.server" >&2
    wait "$server"
    return 1
  fi
  wait "$server"
  grep -A1 '#bytes' "$tmp/$name.client" | tail -1 >"$tmp/$name"
  [ -s "$tmp/$name" ] || { echo "port_lat: $name printed no figures" >&2; return 1; }
}

calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }

# column NAME N: field N of a result file (bench_port_lat prints t_min in
# column 4 and t_typical in 5; uroce-perf, perftest's layout, in 3 and 5)
column() { awk -v c="$2" '{ print $c }' "$tmp/$1"; }

printf '%-6s %-22s %-22s %-22s %s\n' round "bare, 1 frame" "bare, 2 frames" "uroce-perf $test_name" "uroce adds"
printf '%-6s %-22s %-22s %-22s %s\n' "" "t_typical (t_min) us" "t_typical (t_min) us" "t_typical (t_min) us" "t_typical"
for r in $(seq 1 "$rounds"); do
  for f in 1 2; do
    pair "bare$f.$r" \
      "$bare_bin" "${eal[@]}" -l 0 -- --vdev=net_memif0,role=server,socket=SOCK -n "$iters" -f "$f" -s "$frame" :: \
      "$bare_bin" "${eal[@]}" -l 1 -- --vdev=net_memif0,role=client,socket=SOCK --client -n "$iters" -f "$f" -s "$frame" ||
      exit 1
  done
  port=$((19000 + RANDOM % 1000))
  pair "uroce.$r" \
    "$perf_bin" "${eal[@]}" -l 0 -- "$test_name" -s "$size" -n "$iters" --vdev=net_memif0,role=server,socket=SOCK \
      --ip=10.81.0.1/24 -x 1 -p "$port" :: \
    "$perf_bin" "${eal[@]}" -l 1 -- "$test_name" -s "$size" -n "$iters" --vdev=net_memif0,role=client,socket=SOCK \
      --ip=10.81.0.2/24 -x 1 -p "$port" 127.0.0.1 ||
    exit 1
  b1=$(column "bare1.$r" 5); b1m=$(column "bare1.$r" 4)
  b2=$(column "bare2.$r" 5); b2m=$(column "bare2.$r" 4)
  u=$(column "uroce.$r" 5); um=$(column "uroce.$r" 3)
  echo "$b1 $b2 $u" >>"$tmp/rounds"
  printf '%-6s %-22s %-22s %-22s %+.2f\n' "$r" "$b1 ($b1m)" "$b2 ($b2m)" "$u ($um)" "$(calc "$u - $b2")"
done
# the median of each column over the rounds
median() { cut -d' ' -f"$1" "$tmp/rounds" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m1=$(median 1); m2=$(median 2); mu=$(median 3)
printf '%-6s %-22s %-22s %-22s %+.2f\n' median "$m1" "$m2" "$mu" "$(calc "$mu - $m2")"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); half a round trip, microseconds; uroce-perf/bare (2 frames) = $(calc "$mu / $m2")"

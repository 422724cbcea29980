#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 13's speed check, in one run: the stock perftest binaries on
# compat/'s libibverbs.so.1 against uroce-perf, the same test between two
# processes over the same net_memif setup, each process on one CPU of its
# own (taskset: server CPU 0, client CPU 1; EAL lcore likewise), at nice
# -19 when allowed: on a shared machine each setup then gets its CPU whole
# whatever else runs (CFS shares a CPU per thread, so at nice 0 compat's
# two threads would get twice uroce-perf's one thread's share of it).
#   test/bench/compat_vs_uroce_perf.sh [BUILD_DIR]     (default: build)
# Prints (best of REPEAT=3 runs) ib_write_bw 64 KiB (compat, thread mode) / uroce-perf write_bw
# 64 KiB (target >= 0.8) and ib_send_lat 2 B t_typical (compat, inline
# mode, and thread mode) / uroce-perf send_lat 2 B (target <= 1.5), with
# the CPU. Not a CI test: figures depend on the machine and its load.
set -u
case "${1:-}" in -h | --help) sed -n '3,14p' "$0"; exit 0 ;; esac
build=$(cd "${1:-build}" && pwd) || { echo "compat_vs_uroce_perf.sh: no build directory ${1:-build}" >&2; exit 2; }
perf=$build/apps/uroce-perf/uroce-perf
libdir=$build/compat
for f in "$perf" "$libdir/libibverbs.so.1"; do
    [ -e "$f" ] || { echo "$f missing: build it first (ninja -C $build)"; exit 2; }
done
for t in ib_write_bw ib_send_lat; do
    command -v $t >/dev/null || { echo "$t not installed (perftest)"; exit 2; }
done
dir=$(mktemp -d /tmp/uroce-compat-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal="--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error --log-level=pmd.net.memif:error"
port=18790
pin() { # pin CPU COMMAND...: on CPU, at nice -19 if we may
    local cpu=$1
    shift
    if nice -n -19 true 2>/dev/null; then
        taskset -c $cpu nice -n -19 "$@"
    else
        taskset -c $cpu "$@"
    fi
}
BW_SECONDS=${BW_SECONDS:-3}
LAT_ITERS=${LAT_ITERS:-10000}

wait_listen() {
    for _ in $(seq 100); do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return
        sleep 0.05
    done
}

# compat PROGRESS TOOL ARGS...: the stock tool on compat, server and client.
compat() {
    local progress=$1 tool=$2
    shift 2
    port=$((port + 1))
    rm -f "$dir/sock"
    pin 0 env LD_LIBRARY_PATH="$libdir" UROCE_PROGRESS=$progress UROCE_IP=10.81.0.1/24 \
        UROCE_EAL="$eal -l 0 --vdev net_memif0,role=server,socket=$dir/sock" \
        timeout 60 "$tool" "$@" -x 1 -p $port >"$dir/server.log" 2>&1 &
    local server=$!
    wait_listen $port
    pin 1 env LD_LIBRARY_PATH="$libdir" UROCE_PROGRESS=$progress UROCE_IP=10.81.0.2/24 \
        UROCE_EAL="$eal -l 1 --vdev net_memif0,role=client,socket=$dir/sock" \
        timeout 60 "$tool" "$@" -x 1 -p $port 127.0.0.1 >"$dir/client.log" 2>&1
    wait $server
}

# uroce TEST ARGS...: uroce-perf, server and client.
uroce() {
    local test=$1
    shift
    port=$((port + 1))
    rm -f "$dir/sock"
    pin 0 timeout 60 "$perf" $eal -l 0 -- $test --vdev=net_memif0,role=server,socket=$dir/sock \
        --ip=10.81.0.1/24 -x 1 -p $port "$@" >"$dir/server.log" 2>&1 &
    local server=$!
    wait_listen $port
    pin 1 timeout 60 "$perf" $eal -l 1 -- $test --vdev=net_memif0,role=client,socket=$dir/sock \
        --ip=10.81.0.2/24 -x 1 -p $port "$@" 127.0.0.1 >"$dir/client.log" 2>&1
    wait $server
}

# The client's result line (after the " #bytes" header); field N of it.
field() {
    grep -A1 "^ #bytes" "$dir/client.log" | tail -1 | awk -v n=$1 '{print $n}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "CPU: $cpu, $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
niceness=0
nice -n -19 true 2>/dev/null && niceness=-19
echo "two processes over net_memif, server on CPU 0, client on CPU 1, nice $niceness"

# Each figure is the best of REPEAT runs (the highest bandwidth, the lowest
# t_typical), the setups taking turns, so that a burst of other load on a
# shared machine spoils one run, not the comparison.
REPEAT=${REPEAT:-3}
best() { # best max|min OLD NEW
    awk -v m=$1 -v a="$2" -v b="$3" 'BEGIN { if (a == "" || (m == "max" ? b + 0 > a + 0 : b + 0 < a + 0)) print b; else print a }'
}
bw_thread="" bw_inline="" bw_uroce="" lat_inline="" lat_thread="" lat_uroce=""
for _ in $(seq $REPEAT); do
    compat thread ib_write_bw -s 65536 -D $BW_SECONDS
    bw_thread=$(best max "$bw_thread" "$(field 4)")
    uroce write_bw -s 65536 -D $BW_SECONDS
    bw_uroce=$(best max "$bw_uroce" "$(field 4)")
    compat inline ib_write_bw -s 65536 -D $BW_SECONDS
    bw_inline=$(best max "$bw_inline" "$(field 4)")
    compat inline ib_send_lat -s 2 -n $LAT_ITERS
    lat_inline=$(best min "$lat_inline" "$(field 5)")
    uroce send_lat -s 2 -n $LAT_ITERS
    lat_uroce=$(best min "$lat_uroce" "$(field 5)")
    compat thread ib_send_lat -s 2 -n $LAT_ITERS
    lat_thread=$(best min "$lat_thread" "$(field 5)")
done
echo "best of $REPEAT runs each; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %10s %10s %8s\n' test compat uroce-perf ratio
printf '%-44s %10s %10s %8s   (target >= 0.8)\n' "write_bw 64 KiB MB/s, thread mode" \
    "$bw_thread" "$bw_uroce" "$(ratio "$bw_thread" "$bw_uroce")"
printf '%-44s %10s %10s %8s\n' "write_bw 64 KiB MB/s, inline mode" \
    "$bw_inline" "$bw_uroce" "$(ratio "$bw_inline" "$bw_uroce")"
printf '%-44s %10s %10s %8s   (target <= 1.5)\n' "send_lat 2 B t_typical us, inline mode" \
    "$lat_inline" "$lat_uroce" "$(ratio "$lat_inline" "$lat_uroce")"
printf '%-44s %10s %10s %8s\n' "send_lat 2 B t_typical us, thread mode" \
    "$lat_thread" "$lat_uroce" "$(ratio "$lat_thread" "$lat_uroce")"

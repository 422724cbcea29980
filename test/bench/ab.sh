#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two builds of uroce-perf --loopback against each other, in one run, their
# runs alternating: how the "A against B, N pairs" figures of
# doc/performance.md are taken. On a shared host one build's rate moves by
# 5-15% from run to run (the bare ring's ceiling with it), more than most
# changes do; runs of the two builds side by side see the same host. The
# pairs run A B, B A, A B, ... so that a drift of the host falls on both.
# Each build's uroce-perf and liburoce.so are copied aside first (the
# binaries have no rpath), so a build directory may be rebuilt meanwhile.
#
# Usage: test/bench/ab.sh BUILD_A BUILD_B [-r PAIRS] [-e VAR=VALUE] [-E VAR=VALUE] -- ARGS...
#   ARGS are uroce-perf's after --loopback, e.g. send_bw -s 64 -D 3 -f 1
#   -r: pairs (default 6); -e / -E: an environment variable for A's / B's
#   runs (repeatable): the same build twice compares a run-time switch, e.g.
#   test/bench/ab.sh build build -e UROCE_SQ_STREAM=0 -E UROCE_SQ_STREAM=1 -- send_bw -s 64 -q 4096 -D 3 -f 1
# Prints every run's per-CPU-second rate (uroce-perf's line: M msg/s and
# Gb/s) and the bare ring's, then each side's mean, B/A of the means and in
# how many pairs B was ahead, in whichever of the two rates has more digits.
# Not a CI test: it measures the machine.
set -u
usage() { sed -n '12,20p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
build_a=$1 build_b=$2
shift 2
pairs=6
env_a=() env_b=()
while [ $# -gt 0 ]; do
  case "$1" in
    -r) pairs=$2; shift 2 ;;
    -e) env_a+=("$2"); shift 2 ;;
    -E) env_b+=("$2"); shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "ab.sh: unknown option $1" >&2; usage ;;
  esac
done
[ $# -gt 0 ] || { echo "ab.sh: no uroce-perf arguments after --" >&2; usage; }
[ "$pairs" -gt 0 ] 2>/dev/null || { echo "ab.sh: -r wants a number of pairs" >&2; exit 2; }

tmp=$(mktemp -d /tmp/uroce-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# copy BUILD DIR: the program and the library it loads, as they are now
copy() {
  local build=$1 dir=$2 lib
  mkdir -p "$dir"
  cp "$build/apps/uroce-perf/uroce-perf" "$dir/" 2>/dev/null ||
    { echo "ab.sh: no $build/apps/uroce-perf/uroce-perf" >&2; exit 2; }
  for lib in "$build"/liburoce.so.[0-9]*; do
    [ -f "$lib" ] || continue # not meson's liburoce.so.N.p/ object directories
    cp -L "$lib" "$dir/"
  done
}
copy "$build_a" "$tmp/A"
copy "$build_b" "$tmp/B"

# run SIDE: one run of SIDE's copy; prints "msg gbits ceiling", or fails
run() {
  local side=$1 log="$tmp/run.log" vars
  shift
  if [ "$side" = A ]; then vars=("${env_a[@]}"); else vars=("${env_b[@]}"); fi
  if ! env "${vars[@]}" LD_LIBRARY_PATH="$tmp/$side" "$tmp/$side/uroce-perf" --loopback "$@" \
      >"$log" 2>&1; then
    echo "ab.sh: $side's run failed:" >&2
    tail -5 "$log" >&2
    return 1
  fi
  # "per CPU-second: 6.81 M msg/s, 3.49 Gb/s; ..." and "... no stack: 123.62 Mpps ..."
  local rates ceiling
  rates=$(grep -E '^ +per CPU-second: ' "$log" | head -1 | awk '{print $3, $6}')
  ceiling=$(grep -oE 'no stack: [0-9.]+' "$log" | head -1 | awk '{print $3}')
  [ -n "$rates" ] || { echo "ab.sh: $side printed no per-CPU-second line" >&2; return 1; }
  echo "$rates ${ceiling:--}"
}

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "uroce-perf --loopback $*: A = $build_a ${env_a[*]}, B = $build_b ${env_b[*]}"
echo "CPU: $cpu ($(nproc) CPUs); per CPU-second rates, the bare ring's ceiling in Mpps"
printf '%5s %4s %10s %9s %9s\n' pair side 'M msg/s' 'Gb/s' ceiling
results="$tmp/results"
: >"$results"
for i in $(seq 1 "$pairs"); do
  order="A B"
  [ $((i % 2)) -eq 0 ] && order="B A"
  for side in $order; do
    r=$(run "$side" "$@") || exit 1
    read -r msg gbits ceiling <<<"$r"
    printf '%5d %4s %10s %9s %9s\n' "$i" "$side" "$msg" "$gbits" "$ceiling"
    echo "$i $side $msg $gbits" >>"$results"
  done
done
awk -v pairs="$pairs" '
  { msg[$1, $2] = $3; gb[$1, $2] = $4; sm[$2] += $3; sg[$2] += $4 }
  END {
    # uroce-perf prints both with two decimals: compare on the larger, which
    # has more digits (M msg/s for small messages, Gb/s for large ones)
    use_gb = sg["A"] > sm["A"]
    unit = use_gb ? "Gb/s" : "M msg/s"
    a = (use_gb ? sg["A"] : sm["A"]) / pairs
    b = (use_gb ? sg["B"] : sm["B"]) / pairs
    ahead = 0
    for (i = 1; i <= pairs; i++)
      if (use_gb ? gb[i, "B"] > gb[i, "A"] : msg[i, "B"] > msg[i, "A"]) ahead++
    printf "mean A %.3f, B %.3f %s: B/A %.3f (%+.1f%%), B ahead in %d of %d pairs\n",
      a, b, unit, b / a, 100 * (b / a - 1), ahead, pairs
  }' "$results"

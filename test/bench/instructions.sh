#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per message of uroce-perf --loopback (both ends on one core),
# counted by valgrind's callgrind: the difference between a run of N2 and a
# run of N1 iterations, divided by N2 - N1, so that start-up, the bare
# ring's reference measurement and the teardown cancel out. Printed in total
# and per function (its own instructions, not its callees').
#
# Why: on a machine without a PMU (a VM) perf stat cannot count
# instructions, and the rates move by several percent between runs; these
# counts do not move, so a change of a few instructions a message shows
# here when the rate cannot (doc/performance.md, "Fourteenth pass"). They
# are upper bounds of the native path: valgrind's CPUID hides AVX-512, so
# the ICRC takes the 128-bit CLMUL path, and the timer wheel walks more
# ticks at valgrind's pace (so a second total leaves it out). They say
# nothing about cache misses.
#
# Usage: test/bench/instructions.sh [UROCE_PERF] [-t TEST] [-s SIZE] [-n "N1 N2"] [-k TOP]
# (default build/apps/uroce-perf/uroce-perf, send_bw, 64, "100000 300000",
# the top 25 functions). Needs valgrind (Debian's package); not a CI test.
set -u
bin=build/apps/uroce-perf/uroce-perf
test_name=send_bw
size=64
counts="100000 300000"
top=25
while [ $# -gt 0 ]; do
  case "$1" in
    -t) test_name=$2; shift 2 ;;
    -s) size=$2; shift 2 ;;
    -n) counts=$2; shift 2 ;;
    -k) top=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
read -r n1 n2 <<<"$counts"
if ! [ "${n1:-0}" -gt 0 ] 2>/dev/null || ! [ "${n2:-0}" -gt "$n1" ] 2>/dev/null; then
  echo "instructions.sh: -n wants two iteration counts, the second larger" >&2
  exit 2
fi
for tool in valgrind callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "instructions.sh: $tool not found (apt-get install valgrind)" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "instructions.sh: $bin is not an executable" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# profile N OUT: the functions' own instruction counts, "count<TAB>name"
profile() {
  if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" \
      "$bin" --loopback "$test_name" -s "$size" -n "$1" >"$tmp/run.$1" 2>&1; then
    echo "instructions.sh: uroce-perf --loopback $test_name -s $size -n $1 failed:" >&2
    tail -5 "$tmp/run.$1" >&2
    exit 1
  fi
  callgrind_annotate --auto=no --inclusive=no --threshold=100 "$tmp/cg.$1" |
    awk '/^ *[0-9,]+ +\(/ {
      count = $1; gsub(",", "", count)
      name = $0; sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, "", name)
      sub(/ \[\/.*$/, "", name)           # the object file
      if (name !~ /^PROGRAM TOTALS/) sub(/^[^:]*:/, "", name) # the source file
      print count "\t" substr(name, 1, 110)
    }' >"$2"
}
profile "$n1" "$tmp/a"
profile "$n2" "$tmp/b"

lscpu | sed -n 's/^Model name: *//p' | head -1 | sed 's/^/CPU: /'
echo "uroce-perf --loopback $test_name -s $size: instructions per iteration," \
  "(-n $n2) - (-n $n1) over $((n2 - n1)), under valgrind (no AVX-512)"
awk -F '\t' -v n="$((n2 - n1))" -v top="$top" '
  NR == FNR { a[$2] += $1; next }
  { b[$2] += $1 }
  END {
    for (k in b) d[k] = (b[k] - a[k]) / n
    printf "%9.1f  total\n", d["PROGRAM TOTALS"]
    # the timer wheel visits one slot per 1024 ns tick that passed: under
    # valgrind far more of them pass per message than natively, so its
    # count follows the machine'"'"'s speed, not the code
    wheel = 0
    for (k in d) if (k ~ /timer_wheel::advance/) wheel += d[k]
    printf "%9.1f  total without timer_wheel::advance (%.1f)\n", d["PROGRAM TOTALS"] - wheel, wheel
    delete d["PROGRAM TOTALS"]
    for (i = 0; i < top; i++) {
      best = ""
      for (k in d) if (best == "" || d[k] > d[best]) best = k
      if (best == "" || d[best] < 0.5) break
      printf "%9.1f  %s\n", d[best], best
      delete d[best]
    }
  }' "$tmp/a" "$tmp/b"

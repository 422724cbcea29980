#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# QP scaling of uroce-perf --loopback (both ends on one core over a net_ring
# pair): 64 B SEND rate and 64 KiB WRITE Gb/s at 1, 16, 256, 1024 and 4096
# QPs, per CPU-second of the process (uroce-perf's own line: the machine's
# other load does not lower it), each as a ratio to 1 QP measured in the
# same run, with the peak RSS and what each QP adds to it. Every QP count
# runs once per round, rounds
# interleaved so that the machine's load falls on all of them alike; the
# table shows the median of the rounds. Issue 14's target: at 4096 QPs the
# 64 B SEND rate >= 0.7x the 1-QP rate, with no failures.
#
# Usage: test/bench/qp_scaling.sh [UROCE_PERF] [-D SECONDS] [-r ROUNDS] [-q "1 16 ..."] [-u N]
# (default build/apps/uroce-perf/uroce-perf, -D 1, -r 3, -q "1 16 256 1024 4096";
# -u: the QPs' ACK timeout, 4.096 us x 2^N, uroce-perf's default 14 = 67 ms)
set -u
bin=build/apps/uroce-perf/uroce-perf
secs=1
rounds=3
qps="1 16 256 1024 4096"
timeout_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -D) secs=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -q) qps=$2; shift 2 ;;
    -u) timeout_args=(-u "$2"); shift 2 ;;
    -h|--help) sed -n '3,15p' "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
[ -x "$bin" ] || { echo "qp_scaling: no uroce-perf at $bin" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "qp_scaling: needs /usr/bin/time (GNU time)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/uroce-qp-scaling.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one run: TEST SIZE QPS ROUND -> $tmp/TEST.QPS.ROUND (rate) and .rss (KiB)
run() {
  local test=$1 size=$2 q=$3 r=$4 out="$tmp/rate.$1.$3.$4"
  # SEND: only the middle of the run counts (-f, perftest's margin: no
  # warm-up); WRITE 64 KiB the whole run, as with thousands of QPs one signaled
  # WR per 100 (perftest's cq_mod) completes seconds apart on each QP
  local margin=0
  [ "$test" = send_bw ] && margin=1
  /usr/bin/time -f '%M' -o "$out.rss" "$bin" --loopback "$test" -s "$size" -q "$q" \
    -D "$((secs + 2 * margin))" -f "$margin" --report_gbits --counters "${timeout_args[@]}" \
    >"$out.log" 2>&1
  local rc=$?
  # perftest's line: size, iterations, peak, average (Gb/s), Mpps
  local line
  line=$(grep -E "^ +$size +[0-9]+ " "$out.log" | head -1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    cp "$out.log" "/tmp/qp_scaling-$test-q$q-r$r.log"
    echo "qp_scaling: $test -q $q failed (exit $rc; log in /tmp/qp_scaling-$test-q$q-r$r.log):" >&2
    grep 'uroce-perf:' "$out.log" >&2
    echo "FAIL" >"$out"
    return
  fi
  # per CPU-second (uroce-perf's line under the perftest line): M msg/s, Gb/s
  local cpu_line
  cpu_line=$(grep -E '^ +per CPU-second: ' "$out.log" | head -1)
  if [ "$test" = send_bw ]; then echo "$cpu_line" | awk '{print $3}' >"$out"; else echo "$cpu_line" | awk '{print $6}' >"$out"; fi
  # the transport's waits for mbufs (not failures: the QP resumes later)
  grep -E 'tx_mbuf_waits' "$out.log" | awk '{s += $3} END {print s + 0}' >"$out.waits"
  # frames lost or refused for good, completions lost: must stay 0
  grep -E ' (tx_drops|cq_overflows|rx_no_qp) ' "$out.log" | awk '{s += $3} END {print s + 0}' >"$out.bad"
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "FAIL"; else print a[int((NR + 1) / 2)]}'; }

for r in $(seq 1 "$rounds"); do
  for q in $qps; do
    run send_bw 64 "$q" "$r"
    run write_bw 65536 "$q" "$r"
  done
done

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "uroce-perf --loopback ${timeout_args[*]}, one core both ends, per CPU-second, -D $secs (SEND: a $secs s window after 1 s), median of $rounds interleaved rounds"
echo "CPU: $cpu ($(nproc) CPUs); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%6s  %12s %7s  %12s %7s  %9s %11s  %12s %5s\n' QPs "SEND64 Mmsg/s" ratio "WRITE64K Gb/s" ratio \
  "RSS MiB" "KiB per QP" "mbuf waits" bad
base_send="" base_write="" base_rss=""
fail=0
for q in $qps; do
  rates() { for r in $(seq 1 "$rounds"); do cat "$tmp/rate.$1.$q.$r"; done 2>/dev/null; }
  send=$(rates send_bw | grep -v FAIL | median)
  write=$(rates write_bw | grep -v FAIL | median)
  rss=$(cat "$tmp"/rate.*."$q".*.rss 2>/dev/null | sort -g | tail -1)
  waits=$(cat "$tmp"/rate.*."$q".*.waits 2>/dev/null | awk '{s += $1} END {print s + 0}')
  bad=$(cat "$tmp"/rate.*."$q".*.bad 2>/dev/null | awk '{s += $1} END {print s + 0}')
  nfail=$( (rates send_bw; rates write_bw) | grep -c FAIL)
  [ "$nfail" -gt 0 ] || [ "$bad" -gt 0 ] && fail=1
  [ -z "$base_send" ] && base_send=$send base_write=$write base_rss=${rss:-0} base_q=$q
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "FAIL" || b == "FAIL" || b == 0) print "-"; else printf "%.2f", a / b}'; }
  perqp=$(awk -v r="${rss:-0}" -v b="$base_rss" -v q="$q" -v bq="$base_q" \
    'BEGIN {if (q == bq) print "-"; else printf "%.0f", (r - b) / (q - bq)}')
  printf '%6s  %12s %7s  %12s %7s  %9.0f %11s  %12s %5s\n' "$q" "$send" "$(ratio "$send" "$base_send")" \
    "$write" "$(ratio "$write" "$base_write")" "$(awk -v r="${rss:-0}" 'BEGIN {print r / 1024}')" "$perqp" \
    "$waits" "$((bad + nfail))"
done
echo "RSS: the larger run's peak (64 KiB WRITE: perftest's buffers, 2 x 64 KiB per QP per side)."
echo "mbuf waits: QP turns that waited for a TX mbuf (dev tx_mbuf_waits), summed over the runs."
echo "bad: failed runs, and frames dropped (tx_drops), completions lost (cq_overflows), frames for no QP."
exit $fail

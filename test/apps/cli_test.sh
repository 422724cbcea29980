#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The apps' command line from the outside (no peer, no namespaces):
#   help       --help and -h: exit 0, the help on stdout, nothing on stderr
#              (no EAL or telemetry output: parsed before EAL starts)
#   usage      a wrong command line: exit 2, stdout empty, the message and
#              "Try '... --help'" on stderr
#   failure    a run that fails (a vdev without a driver, no server): exit 1;
#              the unknown vdev's message names the driver and those there are
#   mtu        -m 1024, --mtu 1024 and --mtu=1024 are the same IB path MTU
#              (uroce-perf --loopback prints it); --link-mtu 1500 is the link's
#   runtime    EAL's runtime directory uroce-<pid> is gone after a run, a
#              failed run and SIGTERM; one left by SIGKILL goes at the next start
#   progress   uroce-perf's progress lines only on a terminal (script(1)'s pty)
#   margin     -D with -f (perftest's --margin) counts the middle of the run only
#   limits     -w/-y (perftest's verifier): exit 1 with its message, or 0
#   cpu_util   --cpu_util -D adds perftest's CPU_Util column
# Usage: cli_test.sh UROCE_PERF UROCE_PINGPONG
set -u
perf=${1:?usage: $0 UROCE_PERF UROCE_PINGPONG}
pp=${2:?usage: $0 UROCE_PERF UROCE_PINGPONG}
tmp=$(mktemp -d /tmp/uroce-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ "$(id -u)" -eq 0 ]; then base=/var/run/dpdk; else base=${XDG_RUNTIME_DIR:-/tmp}/dpdk; fi
pass=0 fail=0 skip=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() {
  echo "FAIL $1"
  for f in "$tmp/out" "$tmp/err"; do [ -s "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | head -15; done
  fail=$((fail + 1))
}
# run NAME EXPECTED_RC CMD...: stdout in $tmp/out, stderr in $tmp/err
run() {
  local name=$1 want=$2
  shift 2
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit $rc, expected $want"
    return 1
  fi
  return 0
}
loop=(--loopback write_bw -s 4096 -n 200)

# help
for bin in "$perf" "$pp"; do
  for h in --help -h; do
    name="help $(basename "$bin") $h"
    run "$name" 0 "$bin" "$h" || continue
    if grep -q '^Usage:' "$tmp/out" && grep -q -- '--link-mtu' "$tmp/out" &&
      grep -q 'Exit status' "$tmp/out" && [ ! -s "$tmp/err" ]; then
      ok "$name"
    else
      bad "$name: no usage on stdout, or something on stderr"
    fi
  done
done

# usage errors
usage() { # name hint-regex cmd...
  local name=$1 msg=$2
  shift 2
  run "usage $name" 2 "$@" || return
  if [ ! -s "$tmp/out" ] && grep -q -- "$msg" "$tmp/err" && grep -q "Try '.* --help'" "$tmp/err" &&
    ! grep -q -e '^EAL' -e '^TELEMETRY' "$tmp/err"; then
    ok "usage $name"
  else
    bad "usage $name: expected '$msg' and the --help hint on stderr only"
  fi
}
usage "unknown option" "unknown (or ambiguous) option '--bogus'" "$pp" --bogus
usage "missing value" "option '--vdev' needs a value" "$pp" --ip 10.0.0.1/24 --vdev
usage "link MTU as --mtu" "the link MTU is --link-mtu 9000" "$perf" "${loop[@]}" --mtu 9000
usage "link MTU as --mtu=" "the link MTU is --link-mtu 9000" "$pp" --mtu=9000
usage "bad size" "-s/--size: 'x'" "$perf" write_bw -s x
usage "no test" "no test" "$perf" --vdev net_ring0 --ip 10.0.0.1/24
usage "not a test" "'nope_bw' is not a test" "$perf" nope_bw --loopback
usage "no address" "no local address" "$pp" --vdev net_ring0
usage "no port" "no port" "$pp" --ip 10.0.0.1/24
usage "lat in loopback with shards" "latency tests run on one shard" "$perf" --loopback send_lat --shards 2
usage "UC read" "-c UC runs SEND and WRITE tests only" "$perf" read_bw -c UC --vdev net_ring0 --ip 10.0.0.1/24
usage "UD write" "-c UD runs SEND tests only" "$perf" write_lat -c UD --vdev net_ring0 --ip 10.0.0.1/24
usage "no DC" "'DC' is not RC, UC or UD" "$perf" send_bw -c DC
usage "inline limit" "-I/--inline_size: '1024' is not a number in 0..512" "$perf" send_lat -I 1024
usage "rx depth" "-r/--rx-depth: '0' is not a number" "$perf" send_bw -r 0
usage "two pingpongs" "--ud, --uc and --srq are different tools" "$pp" --ip 10.0.0.1/24 --vdev net_ring0 --uc --srq
usage "-q without --srq" "-q/--num-qp is for --srq" "$pp" --ip 10.0.0.1/24 --vdev net_ring0 -q 4
usage "srq rx depth" "rx_depth 2 is too small for 4 QPs" "$pp" --ip 10.0.0.1/24 --vdev net_ring0 --srq -q 4 -r 2
usage "-R with UC" "-R runs RC and UD only (no -c UC)" "$perf" write_bw -R -c UC --vdev net_ring0 --ip 10.0.0.1/24
usage "-R in loopback" "-R is for runs against a peer" "$perf" write_bw -R --loopback
usage "margin without -D" "-f (--margin) needs -D" "$perf" --loopback write_bw -f 1
usage "margin too long" "-D must be longer than twice -f (--margin)" "$perf" --loopback write_bw -D 2 -f 1
usage "-b latency" "-b (bidirectional) is for bw tests" "$perf" send_lat -b --vdev net_ring0 --ip 10.0.0.1/24
usage "-b in loopback" "-b is for runs against a peer" "$perf" write_bw -b --loopback
usage "post list lat" "-l (post_list) is for bw tests" "$perf" write_lat -l 4 --vdev net_ring0 --ip 10.0.0.1/24
usage "post list -n" "-n must be a multiple of -l (post_list)" "$perf" --loopback write_bw -l 3 -n 100
usage "post list -Q" "-l (post_list) must be a multiple of -Q (cq-mod)" "$perf" --loopback write_bw -l 4 -Q 3 -n 100
usage "cq-mod range" "-Q/--cq-mod: '0' is not a number in 1..1024" "$perf" --loopback write_bw -Q 0
usage "-S with -R" "with -R, rdma_cm sets it" "$perf" write_bw -R -S 1 --vdev net_ring0 --ip 10.0.0.1/24
usage "infinite latency" "--run_infinitely is for bw tests" "$perf" send_lat --run_infinitely --vdev net_ring0 --ip 10.0.0.1/24
usage "infinite loopback" "--run_infinitely is for runs against a peer" "$perf" --loopback write_bw --run_infinitely
usage "infinite -b send" "--run_infinitely does not run -b send_bw" "$perf" send_bw -b --run_infinitely --vdev net_ring0 --ip 10.0.0.1/24
usage "-T without -R" "-T (tos) is for rdma_cm connections (-R)" "$perf" write_bw -T 96 --vdev net_ring0 --ip 10.0.0.1/24
usage "bad limit" "'fast' is not a limit" "$perf" --loopback write_bw -w fast

# -w/-y (perftest's verifier): exit 1 with perftest's message when no result
# line reaches the limit, 0 when one does; the results are printed either
# way. --cpu_util (with -D): perftest's column, the machine's CPU use in
# 0..100; without -D perftest's warning and no column.
if run "limit not met, cpu_util" 1 "$perf" --loopback write_bw -s 4096 -D 1 --cpu_util -w 1000000000; then
  util=$(grep -E '^ 4096 +[0-9]+ ' "$tmp/out" | awk '{print $6}')
  if grep -q '^Error: BW result is below bw limit' "$tmp/err" &&
    grep -q 'MsgRate\[Mpps\]    CPU_Util\[%\]' "$tmp/out" &&
    awk -v u="${util:--1}" 'BEGIN { exit !(u > 0 && u <= 100) }'; then
    ok "limit not met: $(head -1 "$tmp/err"); cpu_util $util %"
  else
    bad "limit not met, cpu_util: not perftest's message, or no CPU_Util column in (0, 100]"
  fi
fi
if run "limit met, cpu_util without -D" 0 "$perf" "${loop[@]}" -w 0.001 -y 0.000001 --cpu_util; then
  if grep -q 'CPU Utilization works only with Duration mode' "$tmp/err" && ! grep -q Error "$tmp/err" &&
    ! grep -q CPU_Util "$tmp/out"; then
    ok "limit met: exit 0; cpu_util without -D: perftest's warning, no column"
  else
    bad "limit met, cpu_util without -D: an error, no warning, or a column"
  fi
fi

# margin: -D 5 -f 2 counts the middle second only (perftest's --margin):
# about a fifth of what -f 0 counts. The bound is three fifths: other tests
# share the cores (apps_cli starts beside the longest ones), so either run
# may get half a core for a while; -f 0 would count all of it.
if run "margin whole" 0 "$perf" --loopback send_bw -s 64 -D 5 -f 0; then
  whole=$(grep -E '^ +64 +[0-9]+ ' "$tmp/out" | awk '{print $2}')
  if run "margin window" 0 "$perf" --loopback send_bw -s 64 -D 5 -f 2; then
    window=$(grep -E '^ +64 +[0-9]+ ' "$tmp/out" | awk '{print $2}')
    if [ "${window:-0}" -gt 0 ] && [ "${whole:-0}" -gt 0 ] && [ $((window * 5)) -lt $((whole * 3)) ]; then
      ok "margin: $window of $whole iterations in the middle second"
    else
      bad "margin: -f 2 counted ${window:-none} iterations, -f 0 ${whole:-none}"
    fi
  fi
fi

# run failures
if run "unknown vdev" 1 "$pp" --vdev net_foo0 --ip 10.0.0.1/24; then
  if grep -q "cannot create vdev 'net_foo0': no DPDK driver 'net_foo'; " "$tmp/err" && grep -q 'net_ring' "$tmp/err" &&
    grep -q 'net_memif' "$tmp/err"; then
    ok "unknown vdev: $(grep -o "cannot create vdev[^;]*" "$tmp/err")"
  else
    bad "unknown vdev: the message does not name the driver and the drivers there are"
  fi
fi
if run "no server" 1 "$pp" --vdev net_ring0 --ip 10.0.0.1/24 -p 1 --timeout 1 127.0.0.1; then
  ok "no server: exit 1"
fi

# -m/--mtu forms: the same path MTU; --link-mtu the link's
for form in "-m 1024" "--mtu 1024" "--mtu=1024" "-m1024" "--link-mtu 1500"; do
  # shellcheck disable=SC2086 # the form is two words or one
  run "mtu '$form'" 0 "$perf" "${loop[@]}" $form || continue
  if grep -q '^ Mtu *: 1024\[B\]' "$tmp/out" && grep -q '^ 4096 *200 ' "$tmp/out"; then
    ok "mtu '$form': $(grep '^ Mtu' "$tmp/out" | tr -s ' ')"
  else
    bad "mtu '$form': the run's Mtu line is not 1024[B]"
  fi
done
run "mtu default" 0 "$perf" "${loop[@]}" &&
  if grep -q '^ Mtu *: 4096\[B\]' "$tmp/out"; then ok "mtu default: 4096 on net_ring"; else bad "mtu default"; fi

# runtime directory
gone() { # name pid
  if [ -e "$base/uroce-$2" ]; then
    bad "runtime $1: $base/uroce-$2 left behind"
  else
    ok "runtime $1: no $base/uroce-$2"
  fi
}
"$perf" "${loop[@]}" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait $pid && gone "after a run" $pid || bad "runtime after a run: exit $?"
"$pp" --vdev net_foo0 --ip 10.0.0.1/24 >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait $pid
[ $? -eq 1 ] && gone "after a failed run" $pid || bad "runtime after a failed run: exit code"
# A server that waits for a client (listening): its directory exists.
waiting_server() {
  "$pp" --vdev net_ring0 --ip 10.0.0.1/24 -p 18650 >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do ss -ltnH 2>/dev/null | grep -q ':18650 ' && break; sleep 0.05; done
  [ -e "$base/uroce-$pid" ]
}
if waiting_server; then
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc -eq 1 ] && gone "after SIGTERM" $pid || bad "runtime after SIGTERM: exit $rc"
else
  bad "runtime: no $base/uroce-$pid while the server runs"
  kill -9 $pid 2>/dev/null
fi
if waiting_server; then
  kill -9 $pid
  wait $pid 2>/dev/null
  killed=$pid
  if [ -e "$base/uroce-$killed" ]; then
    "$pp" --vdev net_foo0 --ip 10.0.0.1/24 >/dev/null 2>&1
    gone "left by SIGKILL, at the next start" $killed
  else
    bad "runtime: SIGKILL removed the directory? (the test expects it left)"
  fi
else
  bad "runtime: no $base/uroce-$pid while the server runs"
  kill -9 $pid 2>/dev/null
fi

# progress lines
run "progress, not a terminal" 0 "$perf" "${loop[@]}" &&
  if grep -q 'B: *[0-9]*%' "$tmp/out" "$tmp/err"; then
    bad "progress: lines in a pipe"
  else
    ok "progress: none in a pipe"
  fi
if command -v script >/dev/null; then
  # shellcheck disable=SC2145 # one command string for script -c
  if script -qec "$perf --loopback write_bw -s 4096 -D 1" /dev/null >"$tmp/out" 2>"$tmp/err" && grep -q 'B: *[0-9]*%' "$tmp/out"; then
    ok "progress: shown on a terminal"
  else
    bad "progress: none on a terminal"
  fi
else
  echo "SKIP progress on a terminal: no script(1)"
  skip=$((skip + 1))
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ECN/CNP/DCQCN on the real path: two uroce-perf processes (write_bw, 64 KiB,
# DCQCN at 1 Gb/s) in two network namespaces joined by a veth pair
# (net_af_packet, qdisc_bypass=0 so the sender's frames pass tc). For two
# seconds in the middle of the run a tc egress program on the sender's veth
# marks CE on PCT % of the RoCE frames (mark_ce.bpf.c; this machine's kernel
# has no red/fq_codel/codel/pie qdisc to do it by queue length). SIGUSR1
# every 0.5 s makes the sender dump its counters and its QP's rate; the
# receiver dumps its own at exit (--counters, after its linger).
# Checks: the receiver counted CE marks and sent CNPs, one per mark or
# within the interval (cnps_sent + ce_no_cnp = ce_marks_rcvd); the sender received
# them, cut its rate below 1 Gb/s while marked, and was back at 1 Gb/s after;
# the receiver's capture passes uroce-dump --check and holds CNPs and CE.
# Usage: perf_ecn_test.sh UROCE_PERF UROCE_DUMP MARK_CE_BPF_C
set -u
perf=${1:?usage: $0 UROCE_PERF UROCE_DUMP MARK_CE_BPF_C}
dump=${2:?}
bpf_src=${3:?}
pct=${PCT:-20}
tmp=$(mktemp -d /tmp/uroce-ecn.XXXXXX)
ns1=uecn1-$$ ns2=uecn2-$$
spid="" cpid=""
cleanup() {
  [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
  [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
  ip netns del "$ns1" 2>/dev/null
  ip netns del "$ns2" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v clang >/dev/null || skip "needs clang (BPF target) for the CE marker"
clang -O2 -g -target bpf -DPCT="$pct" -I/usr/include/x86_64-linux-gnu -c "$bpf_src" \
  -o "$tmp/mark_ce.o" 2>"$tmp/clang.err" || skip "clang cannot build the BPF marker: $(head -1 "$tmp/clang.err")"
ip netns add "$ns1" 2>/dev/null || skip "cannot create network namespaces"
ip netns add "$ns2"
ip link add ue1 netns "$ns1" type veth peer name ue2 netns "$ns2"
for n in 1 2; do
  ns=$ns1
  [ $n = 2 ] && ns=$ns2
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "ue$n" mtu 9000 up
  ip -n "$ns" addr add "10.98.0.$n/24" dev "ue$n"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip netns exec "$ns2" tc qdisc add dev ue2 clsact || skip "no clsact qdisc"

eal0="--no-huge -m 512 --no-pci --no-shconf -l 0 --log-level=*:warning --"
eal1="--no-huge -m 512 --no-pci --no-shconf -l 1 --log-level=*:warning --"
common=(write_bw -p 18611 --timeout 20 -s 65536 -m 4096 -D 7)
# ip netns exec execs the binary: $! is uroce-perf itself (for SIGUSR1)
ip netns exec "$ns1" "$perf" $eal0 "${common[@]}" --vdev net_af_packet0,iface=ue1 \
  --ip 10.98.1.1/24 --pcap "$tmp/srv.pcap" --counters >"$tmp/srv.log" 2>&1 &
spid=$!
for _ in $(seq 50); do ip netns exec "$ns1" ss -ltn 2>/dev/null | grep -q ":18611 " && break; sleep 0.1; done
ip netns exec "$ns2" "$perf" $eal1 "${common[@]}" --vdev net_af_packet0,iface=ue2,qdisc_bypass=0 \
  --ip 10.98.1.2/24 --dcqcn 1000 10.98.0.1 >"$tmp/cli.log" 2>&1 &
cpid=$!
sleep 1.5
kill -USR1 "$cpid"
echo "== before" >>"$tmp/phases"
sleep 0.3
ip netns exec "$ns2" tc filter add dev ue2 egress bpf da obj "$tmp/mark_ce.o" sec tc ||
  skip "cannot attach the BPF marker"
for _ in 1 2 3 4; do
  sleep 0.5
  kill -USR1 "$cpid"
done
ip netns exec "$ns2" tc filter del dev ue2 egress
sleep 0.2
kill -USR1 "$cpid"
kill -USR1 "$spid" # the receiver's counters
for _ in 1 2 3 4; do
  sleep 0.5
  kill -USR1 "$cpid"
done
wait "$cpid"
crc=$?
wait "$spid"
src=$?
cpid="" spid=""

fail=0
check() { # description, condition
  if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi
}
last() { grep -E " $1 " "$2" | tail -1 | awk '{print $4}'; }
rates=$(grep -E "^  qp 0x[0-9a-f]+  rate " "$tmp/cli.log" | awk '{print $4}')
echo "sender rate (Mb/s) every dump: $(echo $rates)"
min_rate=$(grep -E "^  qp 0x[0-9a-f]+  rate " "$tmp/cli.log" | tail -1 | awk '{print $10}')
final_rate=$(echo "$rates" | tail -1)
ce=$(last ce_marks_rcvd "$tmp/srv.log")
cnps=$(last cnps_sent "$tmp/srv.log")
nocnp=$(last ce_no_cnp "$tmp/srv.log")
dumps=$(grep -c "^uroce counters (" "$tmp/srv.log")
rcvd=$(last cnps_rcvd "$tmp/cli.log")
cuts=$(last rate_cuts "$tmp/cli.log")
echo "receiver: ce_marks_rcvd ${ce:-0} cnps_sent ${cnps:-0}; sender: cnps_rcvd ${rcvd:-0} rate_cuts ${cuts:-0}"
check "both ends exit 0 (server $src, client $crc)" '[ "$src" -eq 0 ] && [ "$crc" -eq 0 ]'
check "the receiver counted CE marks" '[ "${ce:-0}" -gt 0 ]'
check "the receiver sent CNPs" '[ "${cnps:-0}" -gt 0 ]'
check "the receiver dumped its counters on SIGUSR1 and at exit ($dumps dumps)" '[ "$dumps" -eq 2 ]'
check "at exit: cnps_sent ${cnps:-0} + ce_no_cnp ${nocnp:-0} = ce_marks_rcvd ${ce:-0}" \
  '[ $(( ${cnps:-0} + ${nocnp:-0} )) -eq "${ce:-0}" ]'
check "the sender received CNPs" '[ "${rcvd:-0}" -gt 0 ]'
check "the sender cut its rate" '[ "${cuts:-0}" -gt 0 ]'
check "the rate fell below 1000 Mb/s (lowest: $min_rate)" '[ "${min_rate:-1000}" -lt 1000 ]'
check "the rate recovered to 1000 Mb/s after the marking ($final_rate)" '[ "${final_rate:-0}" -eq 1000 ]'
"$dump" --check -q "$tmp/srv.pcap" >"$tmp/check.out" 2>&1
# shellcheck disable=SC2034 # read by check's eval
drc=$?
check "uroce-dump --check accepts the receiver's capture ($(tail -1 "$tmp/check.out"))" '[ $drc -eq 0 ]'
"$dump" "$tmp/srv.pcap" >"$tmp/decoded" 2>&1
ncnp=$(grep -c " CNP QP=" "$tmp/decoded")
check "uroce-dump decodes CNPs in it ($ncnp)" '[ "$ncnp" -gt 0 ]'
nce=$(tshark -r "$tmp/srv.pcap" -Y "ip.dsfield.ecn == 3" 2>/dev/null | wc -l)
check "CE-marked frames in it ($nce, by tshark)" '[ "$nce" -gt 0 ]'
if [ $fail -ne 0 ]; then
  grep -v "^EAL" "$tmp/cli.log" | sed 's/^/  client: /' | tail -40
  grep -v "^EAL" "$tmp/srv.log" | sed 's/^/  server: /' | tail -20
fi
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-rping end to end: two processes joined by net_memif, the client and
# the server each uroce-rping, connected by rdma_cm on the wire (REQ, REP,
# RTU on QP1; DREQ, DREP at the end). Checks:
#   - both exit 0; the client printed -C "ping data:" lines, the server as
#     many "server ping data:" lines, ping 0 is rping's exact text
#     ("rdma-ping-0: ABCDEFG..."), and -V compared every echo;
#   - the capture holds the CM's REQ, REP, RTU, DREQ, DREP and uroce-dump
#     --check passes on every frame;
#   - -S 65535 (rping's largest buffer) over IPv6 addresses;
#   - -q on both sides: QPs the app moves itself (rdma_init_qp_attr,
#     rdma_establish);
#   - a REQ to a port nobody listens on: the client reports
#     "RDMA_CM_EVENT_REJECTED, error 8" (invalid service ID) and exits 255,
#     as rping does.
# Usage: rping_e2e_test.sh UROCE_RPING UROCE_DUMP
set -u
bin=${1:?usage: $0 UROCE_RPING UROCE_DUMP}
dump=${2:?usage: $0 UROCE_RPING UROCE_DUMP}
tmp=$(mktemp -d /tmp/uroce-rping.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
eal0="--no-huge -m 512 --no-pci --no-shconf -l 0 --log-level=*:warning --"
eal1="--no-huge -m 512 --no-pci --no-shconf -l 1 --log-level=*:warning --"
pass=0 fail=0

ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() {
  echo "FAIL $1"
  for f in "$tmp/$2.srv" "$tmp/$2.cli"; do
    [ -f "$f" ] && grep -v '^EAL' "$f" | sed "s|^|  $(basename "$f"): |" | tail -15
  done
  fail=$((fail + 1))
}

# start_server NAME SERVER_IP CLIENT_IP args...: a uroce-rping -s on memif
start_server() {
  local name=$1 sip=$2
  shift 3
  local sock=$tmp/$name.sock
  timeout 60 "$bin" $eal0 --vdev "net_memif0,role=server,id=0,socket=$sock,socket-abstract=no" \
    --ip "$sip" --mac 02:00:00:00:00:01 --timeout 10 -d -s "$@" >"$tmp/$name.srv" 2>&1 &
  spid=$!
  pids+=("$spid")
  for _ in $(seq 100); do grep -q '^rdma_listen' "$tmp/$name.srv" 2>/dev/null && [ -S "$sock" ] && break; sleep 0.1; done
}

run_client() { # NAME CLIENT_IP args...
  local name=$1 cip=$2
  shift 2
  timeout 60 "$bin" $eal1 --vdev "net_memif0,role=client,id=0,socket=$tmp/$name.sock,socket-abstract=no" \
    --ip "$cip" --mac 02:00:00:00:00:02 --timeout 10 --pcap "$tmp/$name.pcap" -c "$@" >"$tmp/$name.cli" 2>&1
}

# ping 0's text as rping makes it for SIZE: "rdma-ping-0: " then 'A'.. 'z'
# wrapping to 'A', NUL at SIZE - 1
ping0() {
  python3 -c "
import sys
n = int(sys.argv[1]); s = 'rdma-ping-0: '; c = 65
while len(s) < n - 1:
    s += chr(c); c = 65 if c == 122 else c + 1
print(s)" "$1"
}

pingpong_case() { # NAME SERVER_IP CLIENT_IP SERVER_ADDR COUNT SIZE [OPTION for both]
  local name=$1 sip=$2 cip=$3 addr=$4 count=$5 size=$6
  local extra=()
  [ -n "${7:-}" ] && extra=("$7")
  start_server "$name" "$sip" "$cip" -a "$addr" -p 7175 -v -S "$size" "${extra[@]}"
  run_client "$name" "$cip" -a "$addr" -p 7175 -C "$count" -S "$size" -v -V "${extra[@]}"
  local crc=$?
  wait "$spid"
  local src=$?
  local nc ns
  nc=$(grep -c '^ping data: rdma-ping-' "$tmp/$name.cli")
  ns=$(grep -c '^server ping data: rdma-ping-' "$tmp/$name.srv")
  if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$nc" -ne "$count" ] || [ "$ns" -ne "$count" ]; then
    bad "$name: client rc $crc ($nc pings), server rc $src ($ns pings), want $count" "$name"
    return
  fi
  if [ "$(grep -m1 '^ping data: ' "$tmp/$name.cli")" != "ping data: $(ping0 "$size")" ]; then
    bad "$name: ping 0 is not rping's text" "$name"
    return
  fi
  local msgs
  msgs=$("$dump" -r "$tmp/$name.pcap" 2>/dev/null | grep -oE '\b(REQ|REP|RTU|DREQ|DREP|REJ|MRA)\b' | sort -u | tr '\n' ' ')
  for m in REQ REP RTU DREQ DREP; do
    case " $msgs" in *" $m "*) ;; *)
      bad "$name: no CM $m in the capture (saw: $msgs)" "$name"
      return ;;
    esac
  done
  if ! "$dump" --check -q "$tmp/$name.pcap" >"$tmp/$name.check" 2>&1; then
    bad "$name: uroce-dump --check: $(tail -3 "$tmp/$name.check")" "$name"
    return
  fi
  ok "$name: $count pings of $size B, CM: $msgs"
}

pingpong_case rc-v4 10.77.0.1/24 10.77.0.2/24 10.77.0.1 20 64
pingpong_case rc-v6-64K fd77::1/64 fd77::2/64 fd77::1 3 65535
# -q: both QPs made and moved by the app (init_qp_attr; CONNECT_RESPONSE, establish)
pingpong_case rc-self-qp 10.77.0.1/24 10.77.0.2/24 10.77.0.1 10 64 -q

# A REQ to a port nobody listens on: REJ, reason 8
start_server reject 10.77.0.1/24 10.77.0.2/24 -a 10.77.0.1 -p 7175
run_client reject 10.77.0.2/24 -a 10.77.0.1 -p 7176 -C 1
crc=$?
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if [ $crc -eq 255 ] && grep -q 'cma event RDMA_CM_EVENT_REJECTED, error 8' "$tmp/reject.cli"; then
  ok "reject: a REQ to a closed port is rejected (REJ reason 8), exit 255 as rping"
else
  bad "reject: client rc $crc, want 255 and 'cma event RDMA_CM_EVENT_REJECTED, error 8'" reject
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce-cmatose end to end: two processes joined by net_memif, both
# uroce-cmatose, connected by rdma_cm on the wire. Checks:
#   - ucmatose's exchange over -c 10 connections at once (-C 10 SENDs each
#     way on each, the server disconnects all): both exit 0 with the stock
#     tool's "return status 0", the capture holds REQ, REP, RTU, DREQ, DREP
#     (10 REQs) and uroce-dump --check passes on every frame;
#   - udaddy's (--ud) over -c 4 UD ids: SIDR_REQ / SIDR_REP, SENDs with
#     immediate each way, over IPv6;
#   - a REQ to a port nobody listens on: "event: RDMA_CM_EVENT_REJECTED,
#     error: 8", as ucmatose prints it, exit 1.
# Usage: cmatose_e2e_test.sh UROCE_CMATOSE UROCE_DUMP
set -u
bin=${1:?usage: $0 UROCE_CMATOSE UROCE_DUMP}
dump=${2:?usage: $0 UROCE_CMATOSE UROCE_DUMP}
tmp=$(mktemp -d /tmp/uroce-cmatose.XXXXXX)
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

start_server() { # NAME SERVER_IP args...
  local name=$1 sip=$2
  shift 2
  local sock=$tmp/$name.sock
  timeout 60 "$bin" $eal0 --vdev "net_memif0,role=server,id=0,socket=$sock,socket-abstract=no" \
    --ip "$sip" --mac 02:00:00:00:00:01 --timeout 20 "$@" >"$tmp/$name.srv" 2>&1 &
  spid=$!
  pids+=("$spid")
  for _ in $(seq 100); do grep -q 'starting server' "$tmp/$name.srv" 2>/dev/null && [ -S "$sock" ] && break; sleep 0.1; done
}

run_client() { # NAME CLIENT_IP args...
  local name=$1 cip=$2
  shift 2
  timeout 60 "$bin" $eal1 --vdev "net_memif0,role=client,id=0,socket=$tmp/$name.sock,socket-abstract=no" \
    --ip "$cip" --mac 02:00:00:00:00:02 --timeout 20 --pcap "$tmp/$name.pcap" "$@" >"$tmp/$name.cli" 2>&1
}

exchange_case() { # NAME SERVER_IP CLIENT_IP SERVER_ADDR CM_MESSAGES -- args for both
  local name=$1 sip=$2 cip=$3 addr=$4 want=$5
  shift 6
  start_server "$name" "$sip" "$@"
  run_client "$name" "$cip" -s "$addr" "$@"
  local crc=$?
  wait "$spid"
  local src=$?
  if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -q '^return status 0' "$tmp/$name.cli" ||
    ! grep -q '^return status 0' "$tmp/$name.srv"; then
    bad "$name: client rc $crc, server rc $src" "$name"
    return
  fi
  local msgs
  msgs=$("$dump" -r "$tmp/$name.pcap" 2>/dev/null | grep -oE '\bCM (REQ|REP|RTU|DREQ|DREP|REJ|MRA|SIDR_REQ|SIDR_REP)\b' | sort | uniq -c | awk '{printf "%s%s ", $3, "x" $1}')
  for m in $want; do
    case " $msgs" in *" $m"*) ;; *)
      bad "$name: no CM $m in the capture (saw: $msgs)" "$name"
      return ;;
    esac
  done
  if ! "$dump" --check -q "$tmp/$name.pcap" >"$tmp/$name.check" 2>&1; then
    bad "$name: uroce-dump --check: $(tail -3 "$tmp/$name.check")" "$name"
    return
  fi
  ok "$name: CM $msgs"
}

exchange_case rc-c10 10.78.0.1/24 10.78.0.2/24 10.78.0.1 "REQx10 REPx10 RTUx10 DREPx10 DREQx10" -- -c 10 -C 10 -S 100
exchange_case ud-c4-v6 fd78::1/64 fd78::2/64 fd78::1 "SIDR_REQx4 SIDR_REPx4" -- --ud -c 4 -C 5 -S 200

# A REQ to a port nobody listens on: REJ, reason 8
start_server reject 10.78.0.1/24 -p 7471 --timeout 3
run_client reject 10.78.0.2/24 -s 10.78.0.1 -p 7472
crc=$?
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if [ $crc -eq 1 ] && grep -q 'cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8' "$tmp/reject.cli"; then
  ok "reject: a REQ to a closed port is rejected (REJ reason 8), as ucmatose prints it"
else
  bad "reject: client rc $crc, want 1 and 'event: RDMA_CM_EVENT_REJECTED, error: 8'" reject
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

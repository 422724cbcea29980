#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A stock rdma-core example (ibv_rc_pingpong, ...) between two processes of
# this machine, both on compat/'s libibverbs.so.1 over a net_memif pair
# (server role / client role), the QPN/PSN/GID exchange on loopback TCP.
#   compat_pingpong.sh LIBDIR PROGRESS TCP_PORT TOOL [tool args...]
# Passes when both sides finish their iterations (exit 0); skips (77)
# without the Debian binary (package ibverbs-utils).
set -u
libdir=$1 progress=$2 port=$3 tool=$4
shift 4
command -v "$tool" >/dev/null || { echo "$tool not installed (ibverbs-utils): skipped"; exit 77; }
dir=$(mktemp -d /tmp/uroce-compat-XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal="--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error --log-level=pmd.net.memif:error"
sock=$dir/memif.sock
run() {
    local role=$1 lcore=$2 ip=$3 host=${4:-}
    LD_LIBRARY_PATH=$libdir UROCE_PROGRESS=$progress \
        UROCE_EAL="$eal -l $lcore --vdev net_memif0,role=$role,socket=$sock" UROCE_IP=$ip \
        timeout 60 "$tool" "${args[@]}" -p "$port" $host >"$dir/$role.log" 2>&1
}
args=("$@")
run server 0 10.77.0.1/24 &
server=$!
# The client connects its TCP exchange to the server once it listens.
for _ in $(seq 50); do
    ss -ltn 2>/dev/null | grep -q ":$port " && break
    sleep 0.1
done
run client 1 10.77.0.2/24 127.0.0.1
client_rc=$?
wait $server
server_rc=$?
for side in server client; do
    echo "--- $side"
    cat "$dir/$side.log"
done
grep -q "iters in" "$dir/server.log" && grep -q "iters in" "$dir/client.log" || exit 1
[ $server_rc -eq 0 ] && [ $client_rc -eq 0 ]

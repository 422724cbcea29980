#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A stock rdmacm-utils tool (rping, ucmatose, udaddy) between two processes
# of this machine, both on compat/'s librdmacm.so.1 and libibverbs.so.1
# over a net_memif pair: the connection set up by the rdma_cm over the
# memif link (no TCP), the server at 10.76.0.1.
#   compat_rdmacm.sh LIBDIR PROGRESS TOOL "SERVER ARGS" "CLIENT ARGS" [PATTERN]
# Passes when both sides exit 0 (and the client's output has PATTERN, if
# given); skips (77) without the Debian binary (rdmacm-utils).
set -u
libdir=$1 progress=$2 tool=$3 server_args=$4 client_args=$5 pattern=${6:-}
command -v "$tool" >/dev/null || { echo "$tool not installed (rdmacm-utils): skipped"; exit 77; }
dir=$(mktemp -d /tmp/uroce-compat-XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal="--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error --log-level=pmd.net.memif:error"
sock=$dir/memif.sock
run() {
    local role=$1 lcore=$2 ip=$3 args=$4
    # shellcheck disable=SC2086 # the tool's arguments, split
    LD_LIBRARY_PATH=$libdir UROCE_PROGRESS=$progress \
        UROCE_EAL="$eal -l $lcore --vdev net_memif0,role=$role,socket=$sock,socket-abstract=no" UROCE_IP=$ip \
        timeout 60 "$tool" $args >"$dir/$role.log" 2>&1
}
run server 0 10.76.0.1/24 "$server_args" &
server=$!
# The memif server's socket appears when its port starts; its rdma_cm
# listens right after.
for _ in $(seq 100); do
    [ -S "$sock" ] && break
    sleep 0.05
done
sleep 0.3
run client 1 10.76.0.2/24 "$client_args"
client_rc=$?
wait $server
server_rc=$?
echo "--- server (exit $server_rc)"
cat "$dir/server.log"
echo "--- client (exit $client_rc)"
cat "$dir/client.log"
[ -z "$pattern" ] || grep -q "$pattern" "$dir/client.log" || exit 1
[ $server_rc -eq 0 ] && [ $client_rc -eq 0 ]

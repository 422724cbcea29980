#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A stock rdmacm-utils tool (ucmatose or udaddy) on compat/'s librdmacm.so.1
# and libibverbs.so.1 against uroce-cmatose (its own ucmatose/udaddy
# modes), over a net_memif pair: the two ends built separately meet on the
# wire. ROLE says which end the stock tool plays.
#   compat_cmatose_mixed.sh LIBDIR UROCE_CMATOSE TOOL ROLE "STOCK ARGS" "UROCE ARGS"
# Passes when both exit 0 and both print "return status 0"; skips (77)
# without the Debian binary (rdmacm-utils).
set -u
libdir=$1 uroce=$2 tool=$3 role=$4 stock_args=$5 uroce_args=$6
command -v "$tool" >/dev/null || { echo "$tool not installed (rdmacm-utils): skipped"; exit 77; }
dir=$(mktemp -d /tmp/uroce-compat-XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal="--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error --log-level=pmd.net.memif:error"
sock=$dir/memif.sock
stock() { # MEMIF_ROLE LCORE IP
    # shellcheck disable=SC2086 # the tool's arguments, split
    LD_LIBRARY_PATH=$libdir UROCE_PROGRESS=thread \
        UROCE_EAL="$eal -l $2 --vdev net_memif0,role=$1,socket=$sock,socket-abstract=no" UROCE_IP=$3 \
        timeout 60 "$tool" $stock_args >"$dir/$1.log" 2>&1
}
ours() { # MEMIF_ROLE LCORE IP
    # shellcheck disable=SC2086 # the app's arguments, split
    timeout 60 "$uroce" $eal -l "$2" -- --vdev "net_memif0,role=$1,socket=$sock,socket-abstract=no" --ip "$3" \
        --timeout 30 $uroce_args >"$dir/$1.log" 2>&1
}
if [ "$role" = server ]; then
    stock server 0 10.76.0.1/24 &
else
    ours server 0 10.76.0.1/24 &
fi
server=$!
for _ in $(seq 100); do
    [ -S "$sock" ] && break
    sleep 0.05
done
sleep 0.5
if [ "$role" = server ]; then ours client 1 10.76.0.2/24; else stock client 1 10.76.0.2/24; fi
client_rc=$?
wait $server
server_rc=$?
echo "--- server (exit $server_rc)"
cat "$dir/server.log"
echo "--- client (exit $client_rc)"
cat "$dir/client.log"
grep -q '^return status 0' "$dir/server.log" && grep -q '^return status 0' "$dir/client.log" &&
    [ $server_rc -eq 0 ] && [ $client_rc -eq 0 ]

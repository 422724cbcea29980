#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# compat's configuration from the outside: every variable that is missing
# or bad makes the stock ibv_devices (or ibv_devinfo, which opens the
# device) fail with one line naming the variable, before EAL starts, never
# a crash; a good configuration lists uroce0 without starting the port.
#   compat_env.sh LIBDIR
# Skips (77) without Debian's ibverbs-utils.
set -u
libdir=${1:?usage: $0 LIBDIR}
command -v ibv_devices >/dev/null && command -v ibv_devinfo >/dev/null ||
    { echo "ibverbs-utils not installed: skipped"; exit 77; }
eal="--no-huge -m 512 --no-pci --no-shconf -l 0 --vdev net_ring0"
out=$(mktemp /tmp/uroce-compat-env.XXXXXX)
trap 'rm -f "$out"' EXIT
fails=0
# expect TOOL WANT_TEXT VAR=VALUE...: the tool fails (exit 1..127) and says WANT_TEXT
expect() {
    local tool=$1 want=$2
    shift 2
    env -u UROCE_EAL -u UROCE_IP LD_LIBRARY_PATH="$libdir" "$@" timeout 30 "$tool" >"$out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 124 ] || ! grep -qF "uroce: $want" "$out"; then
        echo "FAIL: $* $tool: exit $rc, want a failure saying 'uroce: $want'; got:"
        cat "$out"
        fails=$((fails + 1))
        return
    fi
    echo "ok: $* -> $(grep -F "uroce: $want" "$out" | head -1)"
}
ok_ip=UROCE_IP=10.0.0.1/24
expect ibv_devices "UROCE_EAL is not set" "$ok_ip"
expect ibv_devices "UROCE_IP is not set" UROCE_EAL="$eal"
expect ibv_devices "UROCE_IP: '10.0.0.300/24' is not a usable" UROCE_EAL="$eal" UROCE_IP=10.0.0.300/24
expect ibv_devices "UROCE_EAL: --vdev without a device" UROCE_EAL="-l 0 --vdev" "$ok_ip"
expect ibv_devices "UROCE_PROGRESS: 'fast' is neither" UROCE_EAL="$eal" "$ok_ip" UROCE_PROGRESS=fast
expect ibv_devices "UROCE_MAC: 'zz' is not a MAC address" UROCE_EAL="$eal" "$ok_ip" UROCE_MAC=zz
expect ibv_devices "UROCE_LINK_MTU: '12' is not an MTU" UROCE_EAL="$eal" "$ok_ip" UROCE_LINK_MTU=12
expect ibv_devices "UROCE_BUSY_POLL_US: 'abc' is not a number" UROCE_EAL="$eal" "$ok_ip" UROCE_BUSY_POLL_US=abc
expect ibv_devices "UROCE_BUSY_POLL_US: '2000000' is not a number" UROCE_EAL="$eal" "$ok_ip" UROCE_BUSY_POLL_US=2000000
expect ibv_devinfo "UROCE_EAL: one --vdev (the port of uroce0), got 2" \
    UROCE_EAL="$eal --vdev net_ring1" "$ok_ip"
# A good configuration: uroce0 listed, no port started (no EAL output).
env LD_LIBRARY_PATH="$libdir" UROCE_EAL="$eal" "$ok_ip" UROCE_BUSY_POLL_US=0 \
    timeout 30 ibv_devices >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "uroce0" "$out" || grep -q "EAL:" "$out"; then
    echo "FAIL: a good configuration: exit $rc, want uroce0 listed without EAL starting; got:"
    cat "$out"
    fails=$((fails + 1))
else
    echo "ok: a good configuration lists uroce0"
fi
[ $fails -eq 0 ]

#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Interop test of lib/neigh against the Linux kernel's own ARP/ND/ICMP.
#
# Two network namespaces joined by a veth pair, both created here and removed
# on exit:
#   ns "kern":  veth vk, 10.99.0.1/24, fd00:99::1/64 -- the kernel is the peer
#   ns "uroce": veth vu, no addresses, IPv6 off      -- neigh_responder runs
#               lib/neigh on it through net_af_packet (10.99.0.2, fd00:99::2)
# The kernel pings us (IPv4, IPv6 global and link-local), resolves us (ARP,
# ND, arping, ndisc6), and DAD-probes our address; we resolve the kernel.
#
# usage: kernel_neigh_test.sh <path to neigh_responder>
# exit: 0 all PASS, 1 a check failed, 77 skipped (reason printed).
set -u

RESPONDER=${1:-}
SKIP=77
RUN_SECONDS=${NEIGH_TEST_SECONDS:-30}
TAG=$$
NS_K="uroce-nk-$TAG"
NS_U="uroce-nu-$TAG"
NS_C="uroce-nc-$TAG" # MLD phase: a client behind a snooping bridge
VK="vk$TAG"
VU="vu$TAG"
MAC_K=02:00:00:99:00:01
MAC_U=02:00:00:99:00:02
LL_K=fe80::ff:fe99:1
LL_U=fe80::ff:fe99:2
OUT=$(mktemp -d /tmp/neigh-kernel.XXXXXX)
RESP_PID=

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "SKIP: $*"; exit $SKIP; }

cleanup() {
    if [ -n "$RESP_PID" ] && kill -0 "$RESP_PID" 2>/dev/null; then
        kill -TERM "$RESP_PID" 2>/dev/null
        wait "$RESP_PID" 2>/dev/null
    fi
    ip netns del "$NS_K" 2>/dev/null   # deleting the ns destroys vk, and with it vu
    ip netns del "$NS_U" 2>/dev/null
    ip netns del "$NS_C" 2>/dev/null
    rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- prerequisites
[ -x "$RESPONDER" ] || skip "responder binary not given or not executable: '$RESPONDER'"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, AF_PACKET)"
command -v ip >/dev/null || skip "iproute2 'ip' not installed"
ip netns add "uroce-probe-$TAG" 2>/dev/null || skip "cannot create network namespaces here"
ip netns del "uroce-probe-$TAG"

need_pkgs=()
command -v ping >/dev/null || need_pkgs+=(iputils-ping)
command -v arping >/dev/null || need_pkgs+=(iputils-arping)
command -v ndisc6 >/dev/null || need_pkgs+=(ndisc6)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "installing ${need_pkgs[*]} with apt-get"
    command -v apt-get >/dev/null || skip "missing ${need_pkgs[*]} and no apt-get"
    DEBIAN_FRONTEND=noninteractive timeout 90 apt-get install -y -q "${need_pkgs[@]}" >"$OUT/apt.log" 2>&1 ||
        { tail -5 "$OUT/apt.log"; skip "apt-get install ${need_pkgs[*]} failed"; }
fi
command -v ping >/dev/null || skip "ping unavailable"

kx() { ip netns exec "$NS_K" "$@"; }
ux() { ip netns exec "$NS_U" "$@"; }

# ---------------------------------------------------------------- topology
set -e
ip netns add "$NS_K"
ip netns add "$NS_U"
# Kernel side: addresses usable at once (no DAD wait), no router solicitations.
kx sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 \
    net.ipv6.conf.default.router_solicitations=0
# uroce side: the kernel stays silent on vu (no IPv6, no ARP answers).
ux sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
kx ip link add "$VK" address $MAC_K type veth peer name "$VU" address $MAC_U netns "$NS_U"
ux sysctl -qw "net.ipv4.conf.$VU.arp_ignore=8"
# Kernel re-verifies entries it used 1 s (not 5 s) after first use, so the
# test sees its unicast probes (RFC 4861 7.3.3 DELAY -> PROBE) answered.
kx sysctl -qw "net.ipv4.neigh.$VK.delay_first_probe_time=1" "net.ipv6.neigh.$VK.delay_first_probe_time=1"
kx ip addr add 10.99.0.1/24 dev "$VK"
kx ip -6 addr add fd00:99::1/64 dev "$VK" nodad
kx ip link set "$VK" up
ux ip link set "$VU" up
ux ip link set lo up
kx ip link set lo up
set +e

# ---------------------------------------------------------------- responder
# start_responder LOG ARGS...: run neigh_responder on vu in the uroce ns and
# wait for READY. Started with ip netns exec directly (not through ux, which
# would add a subshell): $! must be the responder itself, to signal and wait.
start_responder() {
    local log=$1
    shift
    ip netns exec "$NS_U" "$RESPONDER" --no-huge -m 256 --no-pci --no-shconf --no-telemetry -l 0 \
        --log-level='*:warning' --vdev="net_af_packet0,iface=${RESP_IFACE:-$VU}" -- \
        --mac $MAC_U --seconds "$RUN_SECONDS" "$@" >"$log" 2>&1 &
    RESP_PID=$!
    for _ in $(seq 1 100); do
        grep -q '^READY' "$log" 2>/dev/null && break
        kill -0 $RESP_PID 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q '^READY' "$log"; then
        cat "$log"
        echo "FAIL: responder did not start"
        exit 1
    fi
    grep '^GIDS' "$log"
}

# stop_responder LOG: SIGTERM, wait, print its table and counters, check
# that nothing was dropped for a reason that would mean a bug.
stop_responder() {
    local log=$1 rc
    kill -TERM $RESP_PID 2>/dev/null
    wait $RESP_PID
    rc=$?
    RESP_PID=
    [ $rc = 0 ] && pass "responder exited cleanly" || fail "responder exit status $rc"
    echo "---- responder output"
    sed 's/^/    /' "$log"
    for c in bad_icmp_checksum bad_ip_checksum truncated headers_split no_room bad_nd bad_arp; do
        if grep -q "^neigh.drop.$c " "$log"; then
            fail "unexpected drops: $(grep "^neigh.drop.$c " "$log")"
        fi
    done
}

# As if uroce had run before on another NIC: the kernel caches an old MAC
# for our addresses. Linux only overrides entries older than locktime (1 s).
OLD_MAC=02:00:00:99:00:ee
for ip in 10.99.0.2 fd00:99::2 $LL_U; do
    kx ip neigh replace "$ip" lladdr $OLD_MAC nud stale dev "$VK"
done
sleep 1.1

# Resolution starts 2.5 s after READY: until then only the announcements
# can tell the kernel our MAC (our ARP requests and NS would too).
start_responder "$OUT/responder.log" --addr 10.99.0.2/24 --addr fd00:99::2/64 \
    --resolve 10.99.0.1 --resolve fd00:99::1 --resolve $LL_K --resolve-delay 2.5 \
    --announce "${NEIGH_TEST_ANNOUNCE:-1}"

# 0. Our start-up announcements (RFC 5227 2.3 ARP Announcement, RFC 4861
#    7.2.6 unsolicited NA with O=1) replace the old MAC without any traffic
#    from the kernel. All three within 1.5 s of READY, well before we send
#    anything else.
declare -A updated=()
for _ in $(seq 1 15); do
    for ip in 10.99.0.2 fd00:99::2 $LL_U; do
        kx ip neigh show "$ip" dev "$VK" | grep -qi "lladdr $MAC_U" && updated[$ip]=1
    done
    [ ${#updated[@]} = 3 ] && break
    sleep 0.1
done
for ip in 10.99.0.2 fd00:99::2 $LL_U; do
    [ -n "${updated[$ip]:-}" ] && pass "announcement updated the kernel's entry for $ip" ||
        fail "kernel entry for $ip after announcements: '$(kx ip neigh show "$ip" dev "$VK")'"
done

# ---------------------------------------------------------------- checks
check_ping() { # name, args...
    local name=$1
    shift
    if kx ping -c 3 -i 0.2 -W 2 "$@" >"$OUT/ping.log" 2>&1 && grep -q ' 0% packet loss' "$OUT/ping.log"; then
        pass "$name ($(grep -o 'rtt.*' "$OUT/ping.log"))"
    else
        fail "$name"
        sed 's/^/    /' "$OUT/ping.log"
    fi
}

check_neigh() { # name, family flag, address
    local out
    out=$(kx ip $2 neigh show "$3" dev "$VK")
    if echo "$out" | grep -qi "lladdr $MAC_U"; then
        pass "$1: kernel cache has $3 -> $MAC_U ($(echo "$out" | awk '{print $NF}'))"
    else
        fail "$1: kernel cache for $3 is '$out'"
    fi
}

# 1. IPv4: kernel ARPs for us, we answer; ICMP echo answered.
check_ping "ping 10.99.0.2" 10.99.0.2
check_neigh "ARP" -4 10.99.0.2
# 2. Larger payload (checksum over 1400 bytes; still one frame at MTU 1500).
check_ping "ping -s 1400 10.99.0.2" -s 1400 10.99.0.2
# 3. arping: explicit ARP request/reply exchange.
if kx arping -c 2 -w 3 -I "$VK" 10.99.0.2 >"$OUT/arping.log" 2>&1 && grep -qi "$MAC_U" "$OUT/arping.log"; then
    pass "arping 10.99.0.2 answered by $MAC_U"
else
    fail "arping 10.99.0.2"
    sed 's/^/    /' "$OUT/arping.log"
fi
# 4. IPv6 global: NS/NA then echo.
check_ping "ping -6 fd00:99::2" -6 fd00:99::2
check_neigh "ND" -6 fd00:99::2
# 5. IPv6 link-local (derived from our MAC by EUI-64).
check_ping "ping -6 $LL_U%$VK" -6 "$LL_U%$VK"
check_neigh "ND link-local" -6 $LL_U
# 6. ndisc6: a raw NS, expecting our NA with the target link-layer option.
if command -v ndisc6 >/dev/null; then
    if kx ndisc6 -1 -r 3 -w 1000 fd00:99::2 "$VK" >"$OUT/ndisc6.log" 2>&1 && grep -qi "$MAC_U" "$OUT/ndisc6.log"; then
        pass "ndisc6 fd00:99::2 -> $(grep -i 'link-layer' "$OUT/ndisc6.log" | awk '{print $NF}')"
    else
        fail "ndisc6 fd00:99::2"
        sed 's/^/    /' "$OUT/ndisc6.log"
    fi
else
    echo "SKIP: ndisc6 not installed"
fi
# 7. Multicast echo to all-nodes: RFC 4443 4.2, reply from our link-local.
if kx ping -6 -c 2 -i 0.2 -W 2 "ff02::1%$VK" >"$OUT/mping.log" 2>&1 && grep -q "from $LL_U" "$OUT/mping.log"; then
    pass "ping -6 ff02::1: answered from $LL_U"
else
    fail "ping -6 ff02::1 (no reply from $LL_U)"
    sed 's/^/    /' "$OUT/mping.log"
fi
# 8. DAD: the kernel tries to claim fd00:99::2 (NS from ::); we defend it
#    with an NA to all-nodes and the kernel must mark it dadfailed.
kx sysctl -qw "net.ipv6.conf.$VK.accept_dad=1" "net.ipv6.conf.$VK.dad_transmits=1"
kx ip -6 addr add fd00:99::2/64 dev "$VK"
dad=
for _ in $(seq 1 30); do
    dad=$(kx ip -6 addr show dev "$VK" to fd00:99::2/128)
    echo "$dad" | grep -q dadfailed && break
    echo "$dad" | grep -q tentative || break
    sleep 0.1
done
if echo "$dad" | grep -q dadfailed; then
    pass "DAD: kernel saw our NA defending fd00:99::2 (dadfailed)"
else
    fail "DAD: kernel address state: $(echo "$dad" | tr -s ' \n' ' ')"
fi
kx ip -6 addr del fd00:99::2/64 dev "$VK" 2>/dev/null
# 9. The kernel's unicast probes (ARP and NS to our MAC) were answered:
#    its entries went DELAY -> PROBE -> REACHABLE.
kx ping -c 1 -W 1 10.99.0.2 >/dev/null 2>&1
kx ping -6 -c 1 -W 1 fd00:99::2 >/dev/null 2>&1
for ip in 10.99.0.2 fd00:99::2; do
    st=
    for _ in $(seq 1 40); do
        st=$(kx ip neigh show "$ip" dev "$VK" | awk '{print $NF}')
        [ "$st" = REACHABLE ] && break
        sleep 0.1
    done
    [ "$st" = REACHABLE ] && pass "kernel re-verified $ip by unicast probe: REACHABLE" ||
        fail "kernel entry for $ip is '$st' (unicast probe unanswered?)"
done
# 10. Address conflict: the kernel claims our 10.99.0.2 with a gratuitous
#     ARP (RFC 5227 2.4); we keep the address, count it and raise the event.
kx ip addr add 10.99.0.2/32 dev "$VK" noprefixroute 2>/dev/null || kx ip addr add 10.99.0.2/32 dev "$VK"
kx arping -U -c 1 -I "$VK" -s 10.99.0.2 10.99.0.2 >/dev/null 2>&1
kx ip addr del 10.99.0.2/32 dev "$VK"
for _ in $(seq 1 20); do
    grep -q "^EVENT address_conflict 10.99.0.2 $MAC_K" "$OUT/responder.log" && break
    sleep 0.1
done
grep -q "^EVENT address_conflict 10.99.0.2 $MAC_K" "$OUT/responder.log" &&
    pass "conflict: the kernel's gratuitous ARP for 10.99.0.2 raised address_conflict" ||
    fail "conflict: no address_conflict event for 10.99.0.2"
kx ip neigh flush dev "$VK" to 10.99.0.2 2>/dev/null

# 11. We resolved the kernel (our ARP request / NS answered by Linux).
sleep 0.3
for ip in 10.99.0.1 fd00:99::1 $LL_K; do
    if grep -q "^RESOLVED $ip $MAC_K" "$OUT/responder.log"; then
        pass "uroce resolved $ip -> $MAC_K"
    else
        fail "uroce did not resolve $ip"
    fi
done

# ---------------------------------------------------------------- responder exit and counters
stop_responder "$OUT/responder.log"
grep -q '^neigh.icmp_tx_echo_reply ' "$OUT/responder.log" && grep -q '^neigh.icmpv6_tx_echo_reply ' "$OUT/responder.log" &&
    grep -q '^neigh.nd_tx_na ' "$OUT/responder.log" && grep -q '^neigh.arp_tx_reply ' "$OUT/responder.log" &&
    pass "counters show ARP replies, NA, ICMP and ICMPv6 echo replies" || fail "reply counters missing"

# ---------------------------------------------------------------- 802.1Q
# RoCE with PFC runs tagged (the PCP carries the priority). The kernel talks
# over VLAN 5 (vk.5, PCP 3 on egress); af_packet hands us the tag in the
# frame, replies keep it, our own requests carry --vlan.
echo "---- VLAN 5"
VL="vl$TAG"
if ! vlan_err=$(kx ip link add link "$VK" name "$VL" type vlan id 5 egress-qos-map 0:3 2>&1); then
    echo "SKIP: VLAN checks: this kernel cannot create 802.1Q links ($vlan_err)"
else
    kx ip addr add 10.99.5.1/24 dev "$VL"
    kx ip -6 addr add fd00:99:5::1/64 dev "$VL" nodad
    kx ip link set "$VL" up
    start_responder "$OUT/responder-vlan.log" --vlan $((3 << 13 | 5)) --addr 10.99.5.2/24 --addr fd00:99:5::2/64 \
        --resolve 10.99.5.1 --resolve fd00:99:5::1
    sleep 0.3
    check_ping "VLAN 5: ping 10.99.5.2" 10.99.5.2
    check_ping "VLAN 5: ping -6 fd00:99:5::2" -6 fd00:99:5::2
    out=$(kx ip neigh show 10.99.5.2 dev "$VL")
    echo "$out" | grep -qi "lladdr $MAC_U" && pass "VLAN 5: kernel ARP cache has our MAC" ||
        fail "VLAN 5: kernel ARP cache '$out'"
    sleep 0.3
    for ip in 10.99.5.1 fd00:99:5::1; do
        grep -q "^RESOLVED $ip $MAC_K" "$OUT/responder-vlan.log" && pass "VLAN 5: uroce resolved $ip (tagged request)" ||
            fail "VLAN 5: uroce did not resolve $ip"
    done
    stop_responder "$OUT/responder-vlan.log"
fi

# ---------------------------------------------------------------- MLD snooping
# A Linux bridge (in the kernel ns) with MLD snooping and its own querier;
# flooding of unregistered multicast is off towards uroce. A client on
# another bridge port pings us: its NS for our address reaches us only if
# our MLD reports put us in the bridge's group table (RFC 4861 7.2.1 +
# RFC 3810), as behind a datacenter switch with snooping. (The bridge's own
# host traffic would be flooded regardless, hence the separate client.)
echo "---- MLD snooping bridge"
BR="br$TAG"
VK2="wk$TAG"
VU2="wu$TAG"
VC="vc$TAG"
WC="wc$TAG"
if ! br_err=$(kx ip link add "$BR" type bridge mcast_snooping 1 mcast_querier 1 mcast_mld_version 2 \
    mcast_query_interval 100 mcast_query_response_interval 50 mcast_startup_query_interval 100 2>&1); then
    echo "SKIP: MLD checks: no bridge with multicast snooping ($br_err)"
else
    ip netns add "$NS_C"
    ip netns exec "$NS_C" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.router_solicitations=0
    kx ip link add "$VK2" type veth peer name "$VU2" address $MAC_U netns "$NS_U"
    kx ip link add "$WC" type veth peer name "$VC" netns "$NS_C"
    ux sysctl -qw "net.ipv4.conf.$VU2.arp_ignore=8"
    kx ip link set "$VK2" master "$BR"
    kx ip link set "$WC" master "$BR"
    kx bridge link set dev "$VK2" mcast_flood off
    ip netns exec "$NS_C" ip -6 addr add fd00:99:7::1/64 dev "$VC" nodad
    ip netns exec "$NS_C" ip link set "$VC" up
    kx ip link set "$VK2" up
    kx ip link set "$WC" up
    kx ip link set "$BR" up
    ux ip link set "$VU2" up
    RESP_IFACE=$VU2 start_responder "$OUT/responder-mld.log" --addr fd00:99:7::2/64 --mld "${NEIGH_TEST_MLD:-1}"
    mdb=
    for _ in $(seq 1 30); do
        mdb=$(kx bridge -6 mdb show dev "$BR" 2>&1)
        echo "$mdb" | grep -q "port $VK2 grp ff02::1:ff99:2" && break
        sleep 0.1
    done
    echo "$mdb" | grep -q "port $VK2 grp ff02::1:ff99:2" &&
        pass "MLD: bridge lists $VK2 in ff02::1:ff99:2 (our report accepted)" ||
        fail "MLD: bridge group table: $(echo "$mdb" | tr -s ' \n' ' ')"
    if ip netns exec "$NS_C" ping -6 -c 3 -i 0.2 -W 2 fd00:99:7::2 >"$OUT/ping.log" 2>&1 &&
        grep -q ' 0% packet loss' "$OUT/ping.log"; then
        pass "MLD: client behind the snooping bridge pings fd00:99:7::2"
    else
        fail "MLD: client behind the snooping bridge cannot ping fd00:99:7::2"
        sed 's/^/    /' "$OUT/ping.log"
    fi
    # The bridge queries every second; we must have answered at least one.
    sleep 1.2
    stop_responder "$OUT/responder-mld.log"
    q=$(awk '/^neigh.mld_rx_query /{print $2}' "$OUT/responder-mld.log")
    r=$(awk '/^neigh.mld_tx_report /{print $2}' "$OUT/responder-mld.log")
    # 2 join reports (robustness 2), then one per query answered
    [ "${q:-0}" -ge 1 ] && [ "${r:-0}" -ge 3 ] && pass "MLD: $q bridge queries received, $r reports sent" ||
        fail "MLD: queries received '${q:-0}', reports sent '${r:-0}'"
fi

if [ $fails -eq 0 ]; then
    echo "ALL PASS"
    exit 0
fi
echo "$fails check(s) FAILED"
exit 1

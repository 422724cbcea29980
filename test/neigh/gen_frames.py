#!/usr/bin/python3
# Generates neigh_frames.h: request frames and the exact replies we expect,
# built by scapy (an implementation independent of uroce), so the unit tests
# compare uroce's replies byte for byte. Run: /usr/bin/python3 gen_frames.py > neigh_frames.h
import sys
from scapy.all import (Ether, Dot1Q, ARP, IP, ICMP, IPv6, ICMPv6EchoRequest, ICMPv6EchoReply,
                       ICMPv6ND_NS, ICMPv6ND_NA, ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr,
                       IPOption, Raw, raw)

ME = "02:00:00:00:00:01"
PEER = "02:00:00:00:00:02"
PEER2 = "02:00:00:00:00:03"
PEER_NEW = "02:00:00:00:00:22"
BC = "ff:ff:ff:ff:ff:ff"
MY4, PEER4, PEER2_4 = "10.99.0.1", "10.99.0.2", "10.99.0.3"
MY6, PEER6 = "fd00:99::1", "fd00:99::2"
MYLL, PEERLL = "fe80::ff:fe00:1", "fe80::ff:fe00:2"
PAYLOAD = bytes(range(56))

frames = {}

def pad60(b):
    return b + b"\0" * max(0, 60 - len(b))

def add(name, pkt, pad=False, trailer=b""):
    b = raw(pkt)
    if pad:
        b = pad60(b)
    frames[name] = b + trailer

# ---- ARP
add("arp_request", Ether(dst=BC, src=PEER) / ARP(op=1, hwsrc=PEER, psrc=PEER4, hwdst="00:00:00:00:00:00", pdst=MY4),
    trailer=b"\xaa" * 18)  # Ethernet padding with junk: must not leak into the reply
add("arp_reply_expected", Ether(dst=PEER, src=ME) / ARP(op=2, hwsrc=ME, psrc=MY4, hwdst=PEER, pdst=PEER4), pad=True)
add("arp_request_vlan", Ether(dst=BC, src=PEER) / Dot1Q(vlan=5, prio=3) / ARP(op=1, hwsrc=PEER, psrc=PEER4, pdst=MY4))
add("arp_reply_vlan_expected", Ether(dst=PEER, src=ME) / Dot1Q(vlan=5, prio=3) / ARP(op=2, hwsrc=ME, psrc=MY4, hwdst=PEER, pdst=PEER4), pad=True)
add("arp_request_other", Ether(dst=BC, src=PEER) / ARP(op=1, hwsrc=PEER, psrc=PEER4, pdst="10.99.0.77"), pad=True)
add("arp_probe", Ether(dst=BC, src=PEER) / ARP(op=1, hwsrc=PEER, psrc="0.0.0.0", pdst=MY4), pad=True)
add("arp_probe_reply_expected", Ether(dst=PEER, src=ME) / ARP(op=2, hwsrc=ME, psrc=MY4, hwdst=PEER, pdst="0.0.0.0"), pad=True)
add("arp_reply_to_us", Ether(dst=ME, src=PEER) / ARP(op=2, hwsrc=PEER, psrc=PEER4, hwdst=ME, pdst=MY4), pad=True)
add("garp_peer2", Ether(dst=BC, src=PEER2) / ARP(op=1, hwsrc=PEER2, psrc=PEER2_4, hwdst="00:00:00:00:00:00", pdst=PEER2_4), pad=True)
add("garp_peer_new_mac", Ether(dst=BC, src=PEER_NEW) / ARP(op=1, hwsrc=PEER_NEW, psrc=PEER4, pdst=PEER4), pad=True)
add("garp_claims_ours", Ether(dst=BC, src=PEER) / ARP(op=1, hwsrc=PEER, psrc=MY4, pdst=MY4), pad=True)
add("arp_bad_hrd", Ether(dst=BC, src=PEER) / ARP(hwtype=6, op=1, hwsrc=PEER, psrc=PEER4, pdst=MY4), pad=True)
add("arp_bad_op", Ether(dst=BC, src=PEER) / ARP(op=3, hwsrc=PEER, psrc=PEER4, pdst=MY4), pad=True)
add("arp_request_expected_out", Ether(dst=BC, src=ME) / ARP(op=1, hwsrc=ME, psrc=MY4, hwdst="00:00:00:00:00:00", pdst=PEER4), pad=True)
add("arp_request_vlan_expected_out", Ether(dst=BC, src=ME) / Dot1Q(vlan=5, prio=3) / ARP(op=1, hwsrc=ME, psrc=MY4, hwdst="00:00:00:00:00:00", pdst=PEER4), pad=True)
add("arp_unicast_probe_expected_out", Ether(dst=PEER, src=ME) / ARP(op=1, hwsrc=ME, psrc=MY4, hwdst="00:00:00:00:00:00", pdst=PEER4), pad=True)

add("arp_announce_expected_out", Ether(dst=BC, src=ME) / ARP(op=1, hwsrc=ME, psrc=MY4, hwdst="00:00:00:00:00:00", pdst=MY4), pad=True)

# ---- ICMP echo
add("icmp_echo", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, id=0x1234, ttl=63, flags="DF", tos=0x48) /
    ICMP(type=8, id=0x77, seq=1) / Raw(PAYLOAD))
add("icmp_echo_reply_expected", Ether(dst=PEER, src=ME) / IP(src=MY4, dst=PEER4, id=0, ttl=64, flags=0, tos=0x48) /
    ICMP(type=0, id=0x77, seq=1) / Raw(PAYLOAD))
add("icmp_echo_odd", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, id=7) / ICMP(type=8, id=0x1, seq=0xfffe) / Raw(PAYLOAD[:55]))
add("icmp_echo_odd_reply_expected", Ether(dst=PEER, src=ME) / IP(src=MY4, dst=PEER4, id=0, ttl=64, flags=0) /
    ICMP(type=0, id=0x1, seq=0xfffe) / Raw(PAYLOAD[:55]))
add("icmp_echo_small", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, id=9) / ICMP(type=8, id=2, seq=3),
    trailer=b"\x55" * 18)
add("icmp_echo_small_reply_expected", Ether(dst=PEER, src=ME) / IP(src=MY4, dst=PEER4, id=0, ttl=64, flags=0) /
    ICMP(type=0, id=2, seq=3), pad=True)
add("icmp_echo_options", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, id=5, options=[IPOption(b"\x01\x01\x01\x00")]) /
    ICMP(type=8, id=0x77, seq=1) / Raw(PAYLOAD))
add("icmp_echo_options_reply_expected", Ether(dst=PEER, src=ME) / IP(src=MY4, dst=PEER4, id=0, ttl=64, flags=0) /
    ICMP(type=0, id=0x77, seq=1) / Raw(PAYLOAD))
add("icmp_echo_bad_icmp_csum", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4) / ICMP(type=8, id=1, seq=1, chksum=0x1234) / Raw(PAYLOAD))
add("icmp_echo_bad_ip_csum", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, chksum=0x1234) / ICMP(type=8, id=1, seq=1) / Raw(PAYLOAD))
add("icmp_echo_fragment", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, flags="MF") / ICMP(type=8, id=1, seq=1) / Raw(PAYLOAD))
add("icmp_echo_not_us", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst="10.99.0.9") / ICMP(type=8, id=1, seq=1) / Raw(PAYLOAD))
add("icmp_echo_broadcast", Ether(dst=BC, src=PEER) / IP(src=PEER4, dst="10.99.0.255") / ICMP(type=8, id=1, seq=1) / Raw(PAYLOAD))
add("icmp_echo_other_mac", Ether(dst="02:00:00:00:00:99", src=PEER) / IP(src=PEER4, dst=MY4) / ICMP(type=8, id=1, seq=1))
add("icmp_dest_unreach", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4) / ICMP(type=3, code=3) / Raw(b"\0" * 28))
add("udp_to_us", Ether(dst=ME, src=PEER) / IP(src=PEER4, dst=MY4, proto=17) / Raw(b"\0" * 8 + PAYLOAD))

# ---- ICMPv6 echo
add("icmp6_echo", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst=MY6, hlim=64, tc=0x20, fl=0x12345) /
    ICMPv6EchoRequest(id=0x42, seq=7, data=PAYLOAD))
add("icmp6_echo_reply_expected", Ether(dst=PEER, src=ME) / IPv6(src=MY6, dst=PEER6, hlim=64, tc=0x20, fl=0x12345) /
    ICMPv6EchoReply(id=0x42, seq=7, data=PAYLOAD))
add("icmp6_echo_ll", Ether(dst=ME, src=PEER) / IPv6(src=PEERLL, dst=MYLL, hlim=64) / ICMPv6EchoRequest(id=1, seq=1, data=PAYLOAD[:13]))
add("icmp6_echo_ll_reply_expected", Ether(dst=PEER, src=ME) / IPv6(src=MYLL, dst=PEERLL, hlim=64) / ICMPv6EchoReply(id=1, seq=1, data=PAYLOAD[:13]))
add("icmp6_echo_allnodes", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEERLL, dst="ff02::1", hlim=1) / ICMPv6EchoRequest(id=3, seq=4, data=PAYLOAD))
add("icmp6_echo_allnodes_reply_expected", Ether(dst=PEER, src=ME) / IPv6(src=MYLL, dst=PEERLL, hlim=64) / ICMPv6EchoReply(id=3, seq=4, data=PAYLOAD))
add("icmp6_echo_bad_csum", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst=MY6) / ICMPv6EchoRequest(id=1, seq=1, cksum=0xbeef, data=PAYLOAD))
add("icmp6_echo_not_us", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst="fd00:99::77") / ICMPv6EchoRequest(id=1, seq=1, data=PAYLOAD))
add("icmp6_echo_hbh", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst=MY6, nh=0) / Raw(b"\x3a\x00\x01\x04\x00\x00\x00\x00") /
    Raw(bytes.fromhex("8000000000010001")))  # checksum irrelevant: dropped at the ext header

# ---- Neighbor Discovery
SN_MY6 = "ff02::1:ff00:1"
add("ns", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src=PEER6, dst=SN_MY6, hlim=255) / ICMPv6ND_NS(tgt=MY6) / ICMPv6NDOptSrcLLAddr(lladdr=PEER))
add("na_expected", Ether(dst=PEER, src=ME) / IPv6(src=MY6, dst=PEER6, hlim=255) / ICMPv6ND_NA(R=0, S=1, O=1, tgt=MY6) / ICMPv6NDOptDstLLAddr(lladdr=ME))
add("ns_ll", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src=PEERLL, dst=SN_MY6, hlim=255) / ICMPv6ND_NS(tgt=MYLL) / ICMPv6NDOptSrcLLAddr(lladdr=PEER))
add("na_ll_expected", Ether(dst=PEER, src=ME) / IPv6(src=MYLL, dst=PEERLL, hlim=255) / ICMPv6ND_NA(R=0, S=1, O=1, tgt=MYLL) / ICMPv6NDOptDstLLAddr(lladdr=ME))
add("ns_unicast_nosll", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst=MY6, hlim=255) / ICMPv6ND_NS(tgt=MY6))
# RFC 7527 nonce option (type 14, len 1) as Linux sends it in DAD
add("ns_dad", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src="::", dst=SN_MY6, hlim=255) / ICMPv6ND_NS(tgt=MY6) / Raw(b"\x0e\x01\x01\x02\x03\x04\x05\x06"))
add("na_dad_expected", Ether(dst="33:33:00:00:00:01", src=ME) / IPv6(src=MY6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=MY6) / ICMPv6NDOptDstLLAddr(lladdr=ME))
add("ns_hop64", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src=PEER6, dst=SN_MY6, hlim=64) / ICMPv6ND_NS(tgt=MY6) / ICMPv6NDOptSrcLLAddr(lladdr=PEER))
add("ns_optlen0", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src=PEER6, dst=SN_MY6, hlim=255) / ICMPv6ND_NS(tgt=MY6) / Raw(b"\x01\x00" + bytes.fromhex("020000000002")))
add("ns_other_target", Ether(dst="33:33:ff:00:00:77", src=PEER) / IPv6(src=PEER6, dst="ff02::1:ff00:77", hlim=255) / ICMPv6ND_NS(tgt="fd00:99::77") / ICMPv6NDOptSrcLLAddr(lladdr=PEER))
add("ns_dad_with_sll", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src="::", dst=SN_MY6, hlim=255) / ICMPv6ND_NS(tgt=MY6) / ICMPv6NDOptSrcLLAddr(lladdr=PEER))
add("ns_expected_out", Ether(dst="33:33:ff:00:00:02", src=ME) / IPv6(src=MY6, dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt=PEER6) / ICMPv6NDOptSrcLLAddr(lladdr=ME))
add("ns_vlan_expected_out", Ether(dst="33:33:ff:00:00:02", src=ME) / Dot1Q(vlan=5, prio=3) / IPv6(src=MY6, dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt=PEER6) / ICMPv6NDOptSrcLLAddr(lladdr=ME))
add("ns_unicast_probe_expected_out", Ether(dst=PEER, src=ME) / IPv6(src=MY6, dst=PEER6, hlim=255) / ICMPv6ND_NS(tgt=PEER6) / ICMPv6NDOptSrcLLAddr(lladdr=ME))
add("una_ll_expected_out", Ether(dst="33:33:00:00:00:01", src=ME) / IPv6(src=MYLL, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=MYLL) / ICMPv6NDOptDstLLAddr(lladdr=ME))
add("una_expected_out", Ether(dst="33:33:00:00:00:01", src=ME) / IPv6(src=MY6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=MY6) / ICMPv6NDOptDstLLAddr(lladdr=ME))
add("na_from_peer", Ether(dst=ME, src=PEER) / IPv6(src=PEER6, dst=MY6, hlim=255) / ICMPv6ND_NA(R=0, S=1, O=1, tgt=PEER6) / ICMPv6NDOptDstLLAddr(lladdr=PEER))
add("na_unsolicited_override_new", Ether(dst="33:33:00:00:00:01", src=PEER_NEW) / IPv6(src=PEER6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=PEER6) / ICMPv6NDOptDstLLAddr(lladdr=PEER_NEW))
add("na_unsolicited_no_override", Ether(dst="33:33:00:00:00:01", src=PEER2) / IPv6(src=PEER6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=0, tgt=PEER6) / ICMPv6NDOptDstLLAddr(lladdr=PEER2))
add("na_mcast_solicited", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEER6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=1, O=1, tgt=PEER6) / ICMPv6NDOptDstLLAddr(lladdr=PEER))
add("na_claims_ours", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEER6, dst="ff02::1", hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=MY6) / ICMPv6NDOptDstLLAddr(lladdr=PEER))
# ---- MLD (RFC 3810 / 2710): reports we send, queries we answer
from scapy.layers.inet6 import (IPv6ExtHdrHopByHop, RouterAlert, ICMPv6MLReport2, ICMPv6MLDMultAddrRec,
                                ICMPv6MLQuery2, ICMPv6MLQuery, ICMPv6MLReport)
def hbh():
    return IPv6ExtHdrHopByHop(options=[RouterAlert(value=0)])
SN_MY = "ff02::1:ff00:1"       # solicited-node group of both fe80::ff:fe00:1 and fd00:99::1
SN_EXTRA = "ff02::1:ff01:2345"  # of fd00:99::1:2345
add("mld_join_expected_out", Ether(dst="33:33:00:00:00:16", src=ME) / IPv6(src=MYLL, dst="ff02::16", hlim=1) / hbh() /
    ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst=SN_MY)]))
add("mld_current_expected_out", Ether(dst="33:33:00:00:00:16", src=ME) / IPv6(src=MYLL, dst="ff02::16", hlim=1) / hbh() /
    ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=2, dst=SN_MY)]))
add("mld_join_two_groups_expected_out", Ether(dst="33:33:00:00:00:16", src=ME) / IPv6(src=MYLL, dst="ff02::16", hlim=1) / hbh() /
    ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst=SN_MY), ICMPv6MLDMultAddrRec(rtype=4, dst=SN_EXTRA)]))
add("mldv1_report_expected_out", Ether(dst="33:33:ff:00:00:01", src=ME) / IPv6(src=MYLL, dst=SN_MY, hlim=1) / hbh() /
    ICMPv6MLReport(mladdr=SN_MY, mrd=0))
add("mldv2_query", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEERLL, dst="ff02::1", hlim=1) / hbh() / ICMPv6MLQuery2())
add("mldv1_query", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEERLL, dst="ff02::1", hlim=1) / hbh() / ICMPv6MLQuery(mladdr="::"))
add("mldv2_query_other_group", Ether(dst="33:33:ff:00:00:77", src=PEER) / IPv6(src=PEERLL, dst="ff02::1:ff00:77", hlim=1) / hbh() /
    ICMPv6MLQuery2(mladdr="ff02::1:ff00:77"))
add("mldv2_query_our_group", Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src=PEERLL, dst=SN_MY, hlim=1) / hbh() /
    ICMPv6MLQuery2(mladdr=SN_MY))
add("mldv2_query_hop64", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEERLL, dst="ff02::1", hlim=64) / hbh() / ICMPv6MLQuery2())
add("mldv2_query_global_src", Ether(dst="33:33:00:00:00:01", src=PEER) / IPv6(src=PEER6, dst="ff02::1", hlim=1) / hbh() / ICMPv6MLQuery2())
add("mldv2_report_other", Ether(dst="33:33:00:00:00:16", src=PEER) / IPv6(src=PEERLL, dst="ff02::16", hlim=1) / hbh() /
    ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst="ff02::1:ff00:2")]))

# RS: we are not a router; counted as unsupported
from scapy.layers.inet6 import ICMPv6ND_RS
frames["router_solicit"] = raw(Ether(dst="33:33:00:00:00:02", src=PEER) / IPv6(src=PEERLL, dst="ff02::2", hlim=255) / ICMPv6ND_RS())

out = sys.stdout
out.write("/* SPDX-License-Identifier: BSD-3-Clause\n * GENERATED by test/neigh/gen_frames.py (scapy); do not edit.\n */\n")
out.write("#pragma once\n#include <cstdint>\n#include <vector>\n\nnamespace neigh_frames {\n")
for name, b in frames.items():
    out.write(f"inline const std::vector<uint8_t> {name} = {{")
    for i, x in enumerate(b):
        if i % 16 == 0:
            out.write("\n    ")
        out.write(f"0x{x:02x},")
    out.write("\n};\n")
out.write("} // namespace neigh_frames\n")

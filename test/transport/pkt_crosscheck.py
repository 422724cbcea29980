#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Frames built by the transport's fast path (pkt_build: the header template
copied per shape, the IPv4 checksum from the template's partial sum) checked
by two independent dissectors, scapy and tshark.

    pkt_crosscheck.py PKT_CROSSCHECK_BINARY WORKDIR

The binary writes WORKDIR/pkt_build.pcap (IPv4 and IPv6, each without and
with a VLAN tag; for every IPv4 shape and length also the IP id whose header
checksum is 0x0000) and a fields file. Then, per frame:

scapy  - the layers are Ether[/Dot1Q]/IP|IPv6/UDP/BTH with the expected
         VLAN, BTH opcode, PSN and QPN; IPv4: rebuilding the frame with the
         checksum deleted (scapy recomputes it) gives the same bytes, total
         length matches, DF set; IPv6: payload length matches; UDP port 4791,
         length matches, checksum 0; ICRC: scapy's own (IPv4; scapy has none
         for IPv6) and the IBTA A17.3.3 reference from scapy_crosscheck.py
         (both versions) equal the stored one.
tshark - with ip.check_checksum on, every IPv4 header checksum is "Good"
         (status 1); the frame dissects down to InfiniBand with the same
         opcode and PSN and the ICRC where it belongs; no expert info at all
         except "Illegal checksum value (0)" on IPv6 frames, which is the
         RoCEv2 convention (UDP checksum 0 over IPv6 too, as rxe and RoCE NICs
         send it). The payload is random bytes, so Wireshark's upper-layer
         heuristics on InfiniBand payloads (RPC-over-RDMA, EoIB, ...) are
         turned off: they would misread it and report it malformed.

Exit 0 when every frame passes, 1 otherwise, 77 (skip) when tshark is missing
(after the scapy checks passed).
"""
import os
import shutil
import struct
import subprocess
import sys

from scapy.all import IP, IPv6, UDP, Dot1Q, Ether, raw, rdpcap
from scapy.contrib.roce import BTH

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wire"))
from scapy_crosscheck import icrc_reference  # noqa: E402

# Wireshark's heuristic dissectors for InfiniBand payloads: the payload here
# is random, not one of these protocols.
PAYLOAD_PROTOCOLS = ["rpcordma", "infiniband.eoib", "smc", "smb_direct", "nvme-rdma", "lnet",
                     "iser", "infiniband_sdp", "fcoib"]
IPV6_UDP_ZERO = "Illegal checksum value (0)"


def read_fields(path):
    with open(path) as f:
        return [dict((k, int(v)) for k, v in (kv.split("=") for kv in line.split())) for line in f]


def scapy_check(frames, want):
    bad = 0
    zero_csum = 0
    for i, (pkt, w) in enumerate(zip(frames, want), 1):
        frame = raw(pkt)
        errs = []
        l2 = 14
        if w["vlan"]:
            l2 = 18
            if Dot1Q not in pkt:
                errs.append("no 802.1Q tag")
            elif pkt[Dot1Q].vlan != w["tci"] & 0xFFF or pkt[Dot1Q].prio != w["tci"] >> 13:
                errs.append("VLAN %d prio %d" % (pkt[Dot1Q].vlan, pkt[Dot1Q].prio))
        elif Dot1Q in pkt:
            errs.append("unexpected 802.1Q tag")
        if w["ipver"] == 4:
            if IP not in pkt:
                errs.append("no IPv4 layer")
            else:
                ip = pkt[IP]
                if ip.chksum != w["ip_csum"] or ip.id != w["ip_id"]:
                    errs.append("IP checksum/id %04x/%d, uroce %04x/%d"
                                % (ip.chksum, ip.id, w["ip_csum"], w["ip_id"]))
                again = Ether(frame)
                del again[IP].chksum
                rebuilt = raw(again)
                if rebuilt != frame:
                    errs.append("scapy recomputes IP checksum %04x, frame has %04x"
                                % (Ether(rebuilt)[IP].chksum, ip.chksum))
                if ip.len != len(frame) - l2 or ip.ihl != 5 or ip.flags != "DF":
                    errs.append("IPv4 length/IHL/flags")
                zero_csum += ip.chksum == 0
        else:
            if IPv6 not in pkt:
                errs.append("no IPv6 layer")
            elif pkt[IPv6].plen != len(frame) - l2 - 40:
                errs.append("IPv6 payload length %d" % pkt[IPv6].plen)
        if UDP not in pkt or BTH not in pkt:
            errs.append("no UDP/BTH")
        else:
            u = pkt[UDP]
            if u.dport != 4791 or u.chksum != 0 or u.len != len(frame) - l2 - (20 if w["ipver"] == 4 else 40):
                errs.append("UDP port %d checksum %04x length %d" % (u.dport, u.chksum, u.len))
            b = pkt[BTH]
            for name, val in (("opcode", b.opcode), ("psn", b.psn), ("dqpn", b.dqpn)):
                if w[name] != val:
                    errs.append("%s: uroce %d scapy %d" % (name, w[name], val))
            stored = struct.unpack("<I", frame[-4:])[0]
            if stored != w["icrc"] or stored != icrc_reference(frame):
                errs.append("ICRC %08x, reference %08x" % (stored, icrc_reference(frame)))
            if w["ipver"] == 4:
                again = pkt.copy()
                again[BTH].icrc = None
                if raw(again)[-4:] != frame[-4:]:
                    errs.append("scapy's ICRC %s" % raw(again)[-4:].hex())
        if errs:
            bad += 1
            if bad <= 10:
                print("scapy: frame %d: %s" % (i, "; ".join(errs)))
    return bad, zero_csum


def tshark_check(pcap, want):
    cmd = ["tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE"]
    for p in PAYLOAD_PROTOCOLS:
        cmd += ["--disable-protocol", p]
    cmd += ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|",
            "-e", "frame.number", "-e", "ip.checksum.status", "-e", "infiniband.bth.opcode",
            "-e", "infiniband.bth.psn", "-e", "infiniband.invariant.crc", "-e", "_ws.expert.message",
            "-e", "_ws.malformed"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("tshark failed:", r.stderr)
        return len(want), 0
    lines = [ln for ln in r.stdout.split("\n") if ln]
    if len(lines) != len(want):
        print("tshark: %d frames, expected %d" % (len(lines), len(want)))
        return len(want), 0
    bad = 0
    good_csum = 0
    for ln, w in zip(lines, want):
        num, status, opcode, psn, icrc, expert, malformed = (ln.split("\t") + [""] * 7)[:7]
        errs = []
        if w["ipver"] == 4:
            if status != "1":
                errs.append("IPv4 checksum status %r (1 = good)" % status)
            else:
                good_csum += 1
        messages = [m for m in expert.split("|") if m]
        allowed = [IPV6_UDP_ZERO] if w["ipver"] == 6 else []
        extra = [m for m in messages if m not in allowed]
        if extra or malformed:
            errs.append("expert info %s" % (extra or malformed))
        if opcode != str(w["opcode"]) or psn != str(w["psn"]):
            errs.append("opcode/psn %s/%s" % (opcode, psn))
        # tshark shows the ICRC bytes as a big-endian number; the ICRC is little-endian on the wire
        if not icrc or struct.pack(">I", int(icrc, 16)) != struct.pack("<I", w["icrc"]):
            errs.append("ICRC field %r" % icrc)
        if errs:
            bad += 1
            if bad <= 10:
                print("tshark: frame %s: %s" % (num, "; ".join(errs)))
    return bad, good_csum


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    pcap = os.path.join(workdir, "pkt_build.pcap")
    fields = os.path.join(workdir, "pkt_build.fields")
    r = subprocess.run([binary, pcap, fields], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        print("pkt_crosscheck failed:", r.stderr)
        return 1
    want = read_fields(fields)
    frames = rdpcap(pcap)
    if len(frames) != len(want) or not want:
        print("pcap has %d frames, fields %d" % (len(frames), len(want)))
        return 1
    shapes = {}
    for w in want:
        key = "IPv%d%s" % (w["ipver"], "+VLAN" if w["vlan"] else "")
        shapes[key] = shapes.get(key, 0) + 1
    print("frames: " + ", ".join("%s %d" % kv for kv in sorted(shapes.items())))
    if len(shapes) != 4:
        print("expected all four shapes")
        return 1

    bad, zero_csum = scapy_check(frames, want)
    print("scapy: %d frames, %d disagree; %d IPv4 frames with checksum 0x0000" % (len(want), bad, zero_csum))
    if bad or zero_csum == 0:
        return 1
    if not shutil.which("tshark"):
        print("SKIP: no tshark")
        return 77
    bad, good = tshark_check(pcap, want)
    print("tshark: %d frames, %d with findings; %d IPv4 checksums Good" % (len(want), bad, good))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

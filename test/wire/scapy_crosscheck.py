#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cross-check uroce's parser and builder against scapy, an independent
RoCEv2 implementation (scapy.contrib.roce computes the ICRC for IPv4; for
IPv6, which scapy does not support, this script's own zlib ICRC from the
IBTA Annex A17 definition is the reference).

    scapy_crosscheck.py CROSSCHECK_BINARY WORKDIR [--count N] [--seed S]

1. scapy -> uroce: scapy builds COUNT random packets (random opcodes, QPNs,
   PSNs, flags, pad, payload 0..4096, extension headers laid out here from
   IBTA 9.3); `CROSSCHECK check` must parse each with the same fields and ICRC.
2. uroce -> scapy: `CROSSCHECK generate` builds COUNT random packets; scapy
   dissects each, its BTH fields must match, and its ICRC must verify.
Exit 0 when both directions agree on every packet.
"""
import argparse
import os
import random
import struct
import subprocess
import sys
import zlib

from scapy.all import IP, IPv6, UDP, Ether, Raw, rdpcap, wrpcap, raw
from scapy.contrib.roce import BTH

# Extension headers by opcode, from IBTA 9.2.1 table 36 / 9.3 (independent
# of lib/wire/uroce_opcode.h on purpose). RD and XRC are not generated.
RETH, AETH, ATOMIC, ATOMICACK, IMM, IETH, DETH = "reth", "aeth", "atomic", "atomicack", "imm", "ieth", "deth"
OPCODES = {
    0x00: ([], True), 0x01: ([], True), 0x02: ([], True), 0x03: ([IMM], True),
    0x04: ([], True), 0x05: ([IMM], True), 0x06: ([RETH], True), 0x07: ([], True),
    0x08: ([], True), 0x09: ([IMM], True), 0x0A: ([RETH], True), 0x0B: ([RETH, IMM], True),
    0x0C: ([RETH], False), 0x0D: ([AETH], True), 0x0E: ([], True), 0x0F: ([AETH], True),
    0x10: ([AETH], True), 0x11: ([AETH], False), 0x12: ([AETH, ATOMICACK], False),
    0x13: ([ATOMIC], False), 0x14: ([ATOMIC], False), 0x16: ([IETH], True), 0x17: ([IETH], True),
    0x20: ([], True), 0x21: ([], True), 0x22: ([], True), 0x23: ([IMM], True),
    0x24: ([], True), 0x25: ([IMM], True), 0x26: ([RETH], True), 0x27: ([], True),
    0x28: ([], True), 0x29: ([IMM], True), 0x2A: ([RETH], True), 0x2B: ([RETH, IMM], True),
    0x64: ([DETH], True), 0x65: ([DETH, IMM], True),
}


def ext_bytes(kind, rng, fields):
    if kind == RETH:
        va, rkey, dlen = rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(32)
        fields.update({"reth.va": va, "reth.rkey": rkey, "reth.dlen": dlen})
        return struct.pack("!QII", va, rkey, dlen)
    if kind == AETH:
        syn, msn = rng.getrandbits(7), rng.getrandbits(24)
        fields.update({"aeth.syndrome": syn, "aeth.msn": msn})
        return struct.pack("!I", (syn << 24) | msn)
    if kind == ATOMIC:
        va, rkey, swap, cmp = rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(64), rng.getrandbits(64)
        fields.update({"atomic.va": va, "atomic.rkey": rkey, "atomic.swap_add": swap, "atomic.compare": cmp})
        return struct.pack("!QIQQ", va, rkey, swap, cmp)
    if kind == ATOMICACK:
        orig = rng.getrandbits(64)
        fields["atomicack.orig"] = orig
        return struct.pack("!Q", orig)
    if kind == IMM:
        imm = rng.getrandbits(32)
        fields["imm"] = imm  # host value of the big-endian word
        return struct.pack("!I", imm)
    if kind == IETH:
        rkey = rng.getrandbits(32)
        fields["ieth.rkey"] = rkey
        return struct.pack("!I", rkey)
    if kind == DETH:
        qkey, sqp = rng.getrandbits(32), rng.getrandbits(24)
        fields.update({"deth.qkey": qkey, "deth.srcqp": sqp})
        return struct.pack("!II", qkey, sqp)
    raise ValueError(kind)


def icrc_reference(frame: bytes) -> int:
    """ICRC per IBTA Annex A17.3.3 with zlib, for IPv4 and IPv6 (8 x 0xFF,
    masked IP header, UDP checksum masked, BTH byte 4 masked, rest)."""
    eth_type = struct.unpack("!H", frame[12:14])[0]
    l3 = 14
    if eth_type == 0x8100:
        eth_type = struct.unpack("!H", frame[16:18])[0]
        l3 = 18
    ip = bytearray(frame[l3:-4])
    if eth_type == 0x0800:
        ihl = (ip[0] & 0xF) * 4
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
        udp = ihl
    else:
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
        udp = 40
    ip[udp + 6:udp + 8] = b"\xff\xff"
    ip[udp + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip)) & 0xFFFFFFFF


def scapy_to_uroce(binary, workdir, count, seed):
    rng = random.Random(seed)
    packets, lines = [], []
    for i in range(count):
        op = rng.choice(list(OPCODES))
        exts, has_payload = OPCODES[op]
        fields = {"opcode": op}
        ext = b"".join(ext_bytes(k, rng, fields) for k in exts)
        plen = rng.randint(0, 4096) if has_payload else 0
        if has_payload and rng.random() < 0.1:
            plen = rng.randint(0, 8)
        payload = bytes(rng.getrandbits(8) for _ in range(plen))
        pad = (-plen) & 3
        bth = BTH(opcode=op, solicited=rng.getrandbits(1), migreq=rng.getrandbits(1), padcount=pad,
                  pkey=rng.getrandbits(16), fecn=rng.getrandbits(1), becn=rng.getrandbits(1),
                  dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1), psn=rng.getrandbits(24))
        v6 = rng.random() < 0.25
        sport = 0xC000 | rng.getrandbits(14)
        if v6:
            l3 = IPv6(src="fd00:77::%x" % rng.getrandbits(16), dst="fd00:77::%x" % rng.getrandbits(16),
                      tc=rng.getrandbits(8), fl=rng.getrandbits(20), hlim=rng.getrandbits(8))
        else:
            l3 = IP(src="10.77.%d.%d" % (rng.getrandbits(8), rng.getrandbits(8)),
                    dst="10.77.0.%d" % rng.getrandbits(8), tos=rng.getrandbits(8), ttl=rng.getrandbits(8),
                    id=rng.getrandbits(16), flags="DF")
        pkt = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / l3 / UDP(sport=sport, dport=4791, chksum=0) / bth / Raw(ext + payload + b"\0" * pad)
        frame = bytearray(raw(pkt))
        if v6:  # scapy leaves the IPv6 ICRC at 0: put the reference value in place
            frame[-4:] = struct.pack("<I", icrc_reference(bytes(frame)))
        else:
            assert struct.unpack("<I", frame[-4:])[0] == icrc_reference(bytes(frame)), "scapy and zlib disagree"
        fields.update({"ipver": 6 if v6 else 4, "dqpn": bth.dqpn, "psn": bth.psn, "se": bth.solicited,
                       "mig": bth.migreq, "pad": pad, "ackreq": bth.ackreq, "pkey": bth.pkey,
                       "fecn": bth.fecn, "becn": bth.becn, "plen": plen, "sport": sport,
                       "icrc": struct.unpack("<I", frame[-4:])[0]})
        packets.append(Ether(bytes(frame)))
        lines.append(" ".join("%s=%d" % kv for kv in sorted(fields.items())))
    pcap = os.path.join(workdir, "scapy_generated.pcap")
    tsv = os.path.join(workdir, "scapy_generated.fields")
    wrpcap(pcap, packets)
    with open(tsv, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([binary, "check", pcap, tsv], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    print("scapy -> uroce: %d packets, checker exit %d" % (count, r.returncode))
    return r.returncode == 0


def uroce_to_scapy(binary, workdir, count, seed):
    pcap = os.path.join(workdir, "uroce_generated.pcap")
    tsv = os.path.join(workdir, "uroce_generated.fields")
    r = subprocess.run([binary, "generate", str(count), str(seed), pcap, tsv], capture_output=True, text=True)
    if r.returncode != 0:
        print("generate failed:", r.stdout, r.stderr)
        return False
    expected = []
    with open(tsv) as f:
        for line in f:
            expected.append(dict((k, int(v)) for k, v in (kv.split("=") for kv in line.split())))
    frames = rdpcap(pcap)
    if len(frames) != count or len(expected) != count:
        print("expected %d packets, pcap has %d, fields %d" % (count, len(frames), len(expected)))
        return False
    bad = 0
    for i, (pkt, want) in enumerate(zip(frames, expected)):
        frame = raw(pkt)
        errs = []
        stored = struct.unpack("<I", frame[-4:])[0]
        if IP in pkt:
            again = pkt.copy()
            again[BTH].icrc = None
            if raw(again) != frame:
                errs.append("scapy recomputes a different ICRC: %s" % raw(again)[-4:].hex())
        if stored != icrc_reference(frame):
            errs.append("ICRC %08x, reference %08x" % (stored, icrc_reference(frame)))
        b = pkt[BTH]
        for name, val in (("opcode", b.opcode), ("dqpn", b.dqpn), ("psn", b.psn), ("se", b.solicited),
                          ("mig", b.migreq), ("pad", b.padcount), ("ackreq", b.ackreq), ("pkey", b.pkey),
                          ("ipver", 6 if IPv6 in pkt else 4), ("sport", pkt[UDP].sport)):
            if want[name] != val:
                errs.append("%s: uroce %d scapy %d" % (name, want[name], val))
        if pkt[UDP].dport != 4791 or pkt[UDP].len != len(frame) - 14 - (40 if IPv6 in pkt else 20):
            errs.append("UDP port/length")
        if errs:
            bad += 1
            if bad <= 10:
                print("packet %d: %s" % (i + 1, "; ".join(errs)))
    print("uroce -> scapy: %d packets, %d disagree" % (count, bad))
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=4791)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    ok1 = scapy_to_uroce(a.binary, a.workdir, a.count, a.seed)
    ok2 = uroce_to_scapy(a.binary, a.workdir, a.count, a.seed + 1)
    print("%d passed, %d failed" % (ok1 + ok2, 2 - ok1 - ok2))
    return 0 if ok1 and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())

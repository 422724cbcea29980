#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerate test/fuzz/corpus/parse/ (fuzz_parse's seeds) from the golden captures.

One file per kind of frame: the first two frames of every (capture, opcode)
pair, the first few non-RoCE frames of each capture (TCP), and synthetic
variants the captures lack: 802.1Q- and QinQ-tagged, IPv6, IPv4 with
options, each with a correct ICRC (IBTA Annex A17.3.3, computed here with
zlib so the seeds do not depend on the code under test).

usage: make-corpus.py GOLDEN_DIR CORPUS_DIR
"""
import hashlib
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import pcaputil  # noqa: E402


def icrc(ip_version, l3):
    """ICRC over an IP packet without its 4 ICRC bytes (masked fields set to ones)."""
    b = bytearray(l3)
    if ip_version == 4:
        ihl = (b[0] & 0x0F) * 4
        b[1] = 0xFF          # TOS
        b[8] = 0xFF          # TTL
        b[10:12] = b"\xff\xff"  # header checksum
        udp = ihl
    else:
        b[0] |= 0x0F         # traffic class low nibble
        b[1:4] = b"\xff\xff\xff"  # traffic class high nibble + flow label
        b[7] = 0xFF          # hop limit
        udp = 40
    b[udp + 6:udp + 8] = b"\xff\xff"  # UDP checksum
    b[udp + 8 + 4] = 0xFF    # BTH FECN/BECN/reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF)


def ipv4_checksum(h):
    s = sum(struct.unpack(f">{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def to_ipv6(eth):
    """The same RoCE packet over IPv6 (addresses fe80::N), ICRC recomputed."""
    ihl = (eth[14] & 0x0F) * 4
    udp = bytearray(eth[14 + ihl:-4])
    src = bytes.fromhex("fe800000000000000000000000000001")
    dst = bytes.fromhex("fe800000000000000000000000000002")
    ip6 = struct.pack(">IHBB", (6 << 28) | (0x1A << 20) | 0x12345, len(udp) + 4, 17, 64) + src + dst
    body = ip6 + bytes(udp)
    return eth[:12] + b"\x86\xdd" + body + icrc(6, body)


def with_ipv4_options(eth):
    """IHL 6 (one NOP option word): still RoCE to a lenient parser, ICRC recomputed."""
    ip = bytearray(eth[14:34])
    rest = eth[34:-4]
    ip[0] = 0x46
    total = 24 + len(rest) + 4
    ip[2:4] = struct.pack(">H", total)
    ip[10:12] = b"\0\0"
    hdr = bytes(ip) + b"\x01\x01\x01\x00"
    hdr = hdr[:10] + struct.pack(">H", ipv4_checksum(hdr)) + hdr[12:]
    body = hdr + rest
    return eth[:14] + body + icrc(4, body)


def tagged(eth, tpids):
    tags = b"".join(struct.pack(">HH", t, 0x2000 | (100 + i)) for i, t in enumerate(tpids))
    return eth[:12] + tags + eth[12:]


def main():
    golden, corpus = sys.argv[1], sys.argv[2]
    os.makedirs(corpus, exist_ok=True)
    seeds = {}
    for name in sorted(os.listdir(golden)):
        if not name.endswith(".pcap"):
            continue
        _, _, recs = pcaputil.read(os.path.join(golden, name))
        per_opcode, non_roce = {}, 0
        for r in recs:
            stem = name[:-5]
            if pcaputil.is_udp_4791(r.data):
                op = r.data[42]
                k = per_opcode.get(op, 0)
                if k < 2:
                    per_opcode[op] = k + 1
                    seeds[f"{stem}-op{op:02x}-{r.number}"] = r.data
            elif non_roce < 3:
                non_roce += 1
                seeds[f"{stem}-other-{r.number}"] = r.data
    # Synthetic variants of a few small packets (ACK, READ request, UD with DETH, atomic).
    base = {k: v for k, v in seeds.items() if "-op" in k and len(v) <= 400}
    for k in sorted(base)[:12]:
        v = base[k]
        seeds[k + "-vlan"] = tagged(v, [0x8100])
        seeds[k + "-qinq"] = tagged(v, [0x88A8, 0x8100])
        seeds[k + "-ipv6"] = to_ipv6(v)
        seeds[k + "-ipopt"] = with_ipv4_options(v)
    for k, v in sorted(seeds.items()):
        with open(os.path.join(corpus, k), "wb") as f:
            f.write(v)
    print(f"{len(seeds)} seeds, {sum(len(v) for v in seeds.values())} bytes")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerate the seed corpora of the fuzz targets other than fuzz_parse
(make-corpus.py writes that one) from real frames: the golden rxe captures
(test/golden), fuzz_parse's corpus (one frame per kind of golden RoCE packet,
plus VLAN/QinQ/IPv6 variants with correct ICRCs) and test/neigh's scapy
frames (neigh_frames.h). Each target's input format is in its header
comment; the bytes here follow it.

usage: make-seeds.py [TARGET...] (from anywhere; writes test/fuzz/corpus/<target>/,
                                  every target's when none is named)
"""
import os
import re
import shutil
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(root, "test", "tools"))
import pcaputil  # noqa: E402

golden = os.path.join(root, "test", "golden")
parse_corpus = os.path.join(here, "corpus", "parse")


def out_dir(target):
    d = os.path.join(here, "corpus", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def golden_frames(name):
    return [r.data for r in pcaputil.read(os.path.join(golden, name + ".pcap"))[2]]


def roce_opcode(frame):
    """BTH opcode of an (untagged/tagged, IPv4/IPv6) RoCEv2 frame, or None."""
    off, et = 14, frame[12:14]
    while et in (b"\x81\x00", b"\x88\xa8") and len(frame) >= off + 4:
        et, off = frame[off + 2:off + 4], off + 4
    if et == b"\x08\x00":
        if len(frame) < off + 20 or frame[off + 9] != 17:
            return None
        udp = off + (frame[off] & 15) * 4
    elif et == b"\x86\xdd":
        if len(frame) < off + 40 or frame[off + 6] != 17:
            return None
        udp = off + 40
    else:
        return None
    if len(frame) < udp + 9 or frame[udp + 2:udp + 4] != b"\x12\xb7":
        return None
    return frame[udp + 8]


def is_ipv6(frame):
    off, et = 14, frame[12:14]
    while et in (b"\x81\x00", b"\x88\xa8"):
        et, off = frame[off + 2:off + 4], off + 4
    return et == b"\x86\xdd"


def tcp_streams(name):
    """Payload bytes per direction (src port, dst port), in capture order."""
    streams = {}
    for f in golden_frames(name):
        if f[12:14] != b"\x08\x00" or f[23] != 6:
            continue
        tcp = 14 + (f[14] & 15) * 4
        sp, dp = struct.unpack(">HH", f[tcp:tcp + 4])
        tl = struct.unpack(">H", f[16:18])[0]
        pl = f[tcp + (f[tcp + 12] >> 4) * 4:14 + tl]
        if pl:
            streams.setdefault((sp, dp), []).append(pl)
    return streams


def rec(header, frame):
    return bytes(header) + struct.pack("<H", len(frame)) + frame


# ---------------------------------------------------------------- transport
def qp_for(frame):
    op = roce_opcode(frame)
    if op is None:
        return 0
    if op < 0x20:
        return 3 if is_ipv6(frame) else 0
    if op < 0x40:
        return 1
    return 2


def transport():
    d = out_dir("transport")
    for name in sorted(os.listdir(parse_corpus)):
        with open(os.path.join(parse_corpus, name), "rb") as f:
            frame = f.read()
        if roce_opcode(frame) is None or name.endswith(("-qinq", "-ipopt")):
            continue
        write(d, name, rec([qp_for(frame), 0x40, 0], frame))
    # the opening frames of real flows, each rebuilt for the QP of its transport
    for cap, n in (("rc_pingpong", 12), ("ib_write_bw", 12), ("ib_atomic_bw", 16), ("ud_pingpong", 8)):
        frames = [f for f in golden_frames(cap) if roce_opcode(f) is not None][:n]
        write(d, cap + "-flow", b"".join(rec([qp_for(f), 0x40, 0], f) for f in frames))
    # an ACK, then time passing (retransmission), then the frame raw
    ack = [f for f in golden_frames("rc_pingpong") if roce_opcode(f) == 0x11][0]
    write(d, "ack-timeout-raw", rec([0, 0x40, 0], ack) + rec([0, 0x50, 2], ack) + rec([0, 0x01, 0], ack))


# ---------------------------------------------------------------- neigh
def neigh_frames():
    text = open(os.path.join(root, "test", "neigh", "neigh_frames.h")).read()
    out = {}
    for m in re.finditer(r"inline const std::vector<uint8_t> (\w+) = \{([^}]*)\}", text):
        if not m.group(1).endswith("_expected"):
            out[m.group(1)] = bytes(int(x, 16) for x in re.findall(r"0x[0-9a-fA-F]+", m.group(2)))
    return out


def neigh():
    d = out_dir("neigh")
    frames = neigh_frames()
    for name, f in frames.items():
        cfg = 0x04 if name.startswith("mld") else 0  # MLD on for the queries
        write(d, name, bytes([cfg]) + rec([0], f))
    # resolve the peer first, so its reply / advertisement completes an entry
    write(d, "resolve-then-arp-reply", bytes([0]) + rec([0x08 | 0x20], frames["arp_reply_to_us"]) + rec([3], frames["arp_reply_to_us"]))
    write(d, "resolve-then-na", bytes([0]) + rec([0x10], frames["na_from_peer"]) + rec([4], frames["na_from_peer"]))
    # shared and split frames, announcements, MLD, VLAN
    write(d, "shared-echo", bytes([0x20]) + rec([0x40], frames["icmp_echo"]) + rec([0x40], frames["icmp6_echo"]))
    write(d, "split-echo", bytes([0x4c]) + rec([0x80 | 6], frames["icmp_echo"]) + rec([0x80 | 20], frames["ns"]))


# ---------------------------------------------------------------- engine
def engine():
    d = out_dir("engine")
    nf = neigh_frames()
    roce = {}
    for name in sorted(os.listdir(parse_corpus)):
        with open(os.path.join(parse_corpus, name), "rb") as f:
            roce[name] = f.read()
    tcp = [f for f in golden_frames("rc_pingpong") if f[12:14] == b"\x08\x00" and f[23] == 6][:2]

    def with_qpn(frame, qpn):
        """The frame's BTH destination QPN changed (ICRC left stale: the
        classification does not look at it; the device counts it)."""
        op = roce_opcode(frame)
        if op is None:
            return frame
        off, et = 14, frame[12:14]
        while et in (b"\x81\x00", b"\x88\xa8"):
            et, off = frame[off + 2:off + 4], off + 4
        udp = off + (40 if et == b"\x86\xdd" else (frame[off] & 15) * 4)
        b = bytearray(frame)
        b[udp + 8 + 5:udp + 8 + 8] = struct.pack(">I", qpn)[1:]
        return bytes(b)

    names = sorted(roce)
    for i, count in enumerate((2, 3, 4)):
        recs = []
        for j, name in enumerate(names[i::3][:24]):
            recs.append(rec([j % count], with_qpn(roce[name], (j % 5) << 16 | 0x11)))
        for j, f in enumerate(list(nf.values())[i::3][:12]):
            recs.append(rec([(j + 1) % count | (0x80 if j % 4 == 3 else 0)], f))
        for f in tcp:
            recs.append(rec([1], f))
        write(d, "mix-%d-shards" % count, bytes([count - 2]) + b"".join(recs))
    write(d, "split-roce", bytes([0]) + rec([0x40 | 1], with_qpn(roce[names[0]], 0x10011)) + rec([0x40], roce[names[1]]))


# ---------------------------------------------------------------- oob
def oob():
    d = out_dir("oob")
    for cap in ("rc_pingpong", "ud_pingpong"):
        s = tcp_streams(cap)
        for (sp, dp), msgs in s.items():
            from_server = sp == 18515
            stream = b"".join(msgs)
            # the client reads the server's 52 bytes; the server the client's 52 + "done"
            mode = 0 if from_server else 6
            write(d, "%s-%s" % (cap, "server-says" if from_server else "client-says"), bytes([mode]) + stream)
    s = tcp_streams("ib_write_bw")
    for (sp, dp), msgs in s.items():
        from_server = sp == 18515
        key = [m for m in msgs if len(m) == 108][0]
        report = struct.pack(">QQ", 65536, 5000) + struct.pack(">ddd", 11.5, 11.4, 0.18)
        stream = b"".join(msgs) + key * 4 + report + key + b"done\0"
        cfg = 0x02 | (0 if from_server else 1)  # write bw; we are the client when the server speaks
        write(d, "ib_write_bw-%s" % ("server-says" if from_server else "client-says"), bytes([1, cfg, 0x40]) + stream)
        # the same, as every other test kind: send/read/atomic, lat, 2 QPs, duplex
        for extra, tag in ((0x00, "send"), (0x04, "read"), (0x06, "atomic"), (0x08, "lat"), (0x10, "2qps"), (0x20, "duplex")):
            c = (cfg & ~0x06) | extra if extra in (0x00, 0x04, 0x06) else cfg | extra
            write(d, "ib_write_bw-%s-as-%s" % ("server-says" if from_server else "client-says", tag),
                  bytes([1, c, 0x40]) + stream + key * 4)


# ---------------------------------------------------------------- dump_read
def pcap_file(frames, linktype=1, endian="<", magic=pcaputil.PCAP_MAGIC_US):
    out = struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, f in enumerate(frames):
        out += struct.pack(endian + "IIII", 1700000000 + i, 1000 * i, len(f), len(f)) + f
    return out


def pcapng_file(frames, linktype=1, tsresol=None):
    def block(t, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", t, n) + body + struct.pack("<I", n)
    shb = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    if tsresol is not None:
        opts = struct.pack("<HH", 9, 1) + bytes([tsresol]) + b"\0\0\0" + struct.pack("<HH", 0, 0)
    idb = block(1, struct.pack("<HHI", linktype, 0, 65535) + opts)
    epbs = b""
    for i, f in enumerate(frames):
        ts = 1700000000000000 + i * 1000
        epbs += block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(f), len(f)) + f)
    return shb + idb + epbs


def dump_read():
    d = out_dir("dump_read")
    for cap in ("published-vectors", "ib_atomic_bw", "rping_rdmacm"):
        with open(os.path.join(golden, cap + ".pcap"), "rb") as f:
            write(d, cap + ".pcap", f.read())
    few = {cap: golden_frames(cap)[:6] for cap in ("rc_pingpong", "ud_pingpong", "ib_write_bw")}
    for cap, frames in few.items():
        write(d, cap + "-head.pcap", pcap_file(frames))
    rc = few["rc_pingpong"]
    write(d, "rc_pingpong-head-be.pcap", pcap_file(rc, endian=">"))
    write(d, "rc_pingpong-head-ns.pcap", pcap_file(rc, magic=pcaputil.PCAP_MAGIC_NS))
    write(d, "rc_pingpong-head.pcapng", pcapng_file(rc))
    write(d, "rc_pingpong-head-tsresol9.pcapng", pcapng_file(rc, tsresol=9))
    write(d, "rc_pingpong-head-tsresol-pow2.pcapng", pcapng_file(rc, tsresol=0x80 | 20))
    write(d, "rc_pingpong-head-raw.pcap", pcap_file([f[14:] for f in rc], linktype=101))
    sll = [b"\0\0\0\1\0\6" + f[6:12] + b"\0\0" + f[12:] for f in rc]
    write(d, "rc_pingpong-head-sll.pcap", pcap_file(sll, linktype=113))
    sll2 = [f[12:14] + b"\0\0" + struct.pack(">I", 2) + b"\0\1\0\6" + f[6:12] + b"\0\0" + f[14:] for f in rc]
    write(d, "rc_pingpong-head-sll2.pcap", pcap_file(sll2, linktype=276))


def mads(name):
    """The 256-byte MADs (UD SEND_ONLY to QP1) of a golden capture, in order."""
    out = []
    for f in golden_frames(name):
        if roce_opcode(f) != 0x64:  # UD SEND_ONLY
            continue
        udp = 14 + (f[14] & 15) * 4 if not is_ipv6(f) else 14 + 40
        bth = udp + 8
        if int.from_bytes(f[bth + 5:bth + 8], "big") != 1:
            continue
        out.append(f[bth + 12 + 8:bth + 12 + 8 + 256])
    return out


def cm():
    """fuzz_cm: records [op][len hi][len lo][MAD] (ops 0, 1) or [op][len][bytes]."""
    d = out_dir("cm")
    rping = mads("rping_rdmacm")
    assert len(rping) == 5, len(rping)

    def mad_rec(op, m):
        return bytes([op, len(m) >> 8, len(m) & 255]) + m

    def op(o, payload=b""):
        return bytes([o, len(payload)]) + payload

    names = ["req", "rep", "rtu", "dreq", "drep"]
    for name, m in zip(names, rping):
        write(d, "rping-" + name + "-to-b", mad_rec(0, m))
        write(d, "rping-" + name + "-to-a", mad_rec(1, m))
    # the whole rping exchange, forged as from A to B and back
    write(d, "rping-all", b"".join(mad_rec(0 | 1 << 3 if i % 2 == 0 else 1 | 2 << 3, m)
                                   for i, m in enumerate(rping)))
    # handshakes by ops: connect, deliver, accept (auto), deliver..., disconnect, time
    hs = op(3 | 8) + op(5 | 0x40) + op(5 | 0x40) + op(5) + op(5)
    write(d, "handshake-auto-accept", hs)
    write(d, "handshake-then-disconnect", hs + op(6 | 0x20 | 2 << 3, b"\0") + op(5 | 3 << 3) +
          op(6 | 2 << 3, b"\0") + op(5 | 3 << 3) + op(2 | 7 << 3) + op(2 | 7 << 3))
    write(d, "handshake-lost-rep", op(3 | 8) + op(5 | 0x40) + op(7) + op(2 | 6 << 3) + op(2 | 6 << 3) +
          op(5 | 7 << 3) + op(5 | 7 << 3))
    write(d, "req-to-nobody", op(3) + op(5) + op(5))
    write(d, "unreachable", op(3 | 8) + op(7) + b"".join(op(2 | 6 << 3) + op(7) for _ in range(6)))
    write(d, "user-calls", op(3 | 8) + op(5) + op(6, b"\0") + op(5) + op(6 | 3 << 3, b"\0") + op(5))
    # the golden REQ padded, flooding B past its half-open cap
    write(d, "req-flood", b"".join(mad_rec(0, rping[0][:27] + bytes([i]) + rping[0][28:]) for i in range(12)))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for t in sys.argv[1:]:
            globals()[t]()
        sys.exit(0)
    cm()
    transport()
    neigh()
    engine()
    oob()
    dump_read()

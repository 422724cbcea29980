# SPDX-License-Identifier: BSD-3-Clause
"""Minimal classic-pcap reader/writer for the uroce-dump tests.

Only what the tests need: the golden captures are classic pcap, and the
tests rewrite them byte for byte (flip one byte, cut the file short), so
they need each record's file offset, which scapy does not give.
"""
import struct

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D


class Record:
    def __init__(self, number, offset, ts_sec, ts_frac, caplen, wirelen, data):
        self.number = number  # 1-based, as tshark numbers frames
        self.offset = offset  # file offset of the first data byte
        self.ts_sec, self.ts_frac = ts_sec, ts_frac
        self.caplen, self.wirelen = caplen, wirelen
        self.data = data


def read(path):
    """Returns (global_header_bytes, endian_prefix, [Record])."""
    with open(path, "rb") as f:
        blob = f.read()
    magic = struct.unpack("<I", blob[:4])[0]
    if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        e = "<"
    elif struct.unpack(">I", blob[:4])[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        e = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    recs, off, n = [], 24, 0
    while off + 16 <= len(blob):
        ts_sec, ts_frac, caplen, wirelen = struct.unpack(e + "IIII", blob[off:off + 16])
        n += 1
        recs.append(Record(n, off + 16, ts_sec, ts_frac, caplen, wirelen,
                           blob[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return blob[:24], e, recs


def write(path, header, endian, records, datas=None):
    """Write records (optionally with replaced data) keeping the header."""
    with open(path, "wb") as f:
        f.write(header)
        for i, r in enumerate(records):
            d = r.data if datas is None else datas[i]
            f.write(struct.pack(endian + "IIII", r.ts_sec, r.ts_frac, len(d), max(len(d), r.wirelen if datas is None else len(d))))
            f.write(d)


def is_udp_4791(frame):
    """Independent of uroce: untagged IPv4/UDP to 4791 (all golden RoCE frames)."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return False
    ihl = (frame[14] & 0x0F) * 4
    return frame[14 + ihl + 2:14 + ihl + 4] == b"\x12\xb7"

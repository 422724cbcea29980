#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""uroce-dump --check must fail, naming the packet, when any byte of a RoCE
packet is flipped.

Two ways:
 1. In place, one file per flip (the literal criterion): every byte of a few
    small RoCE packets XORed with 0xff, one at a time; --check must exit 1
    and print an error line that starts with that frame's number.
 2. In bulk: copies of a packet, each with one byte flipped (XOR 0xff, and
    every single bit of every byte), appended to the original capture; one
    --check run must flag exactly the copies.

What --check cannot see, and this test allows (doc/uroce-dump.md):
 - BTH byte 4 bits 7 (FECN) and 6 (BECN) flipped alone: the network sets
   them legitimately and the ICRC masks them; their 6 reserved bits are checked.
 - MAC bytes in published-vectors.pcap: two frames with unrelated addresses,
   so there is no other frame to compare a MAC with (elsewhere the L2
   consistency check catches them).

usage: test_flip.py UROCE_DUMP GOLDEN_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumprun  # noqa: E402
import pcaputil  # noqa: E402

BTH_BYTE4 = 14 + 20 + 8 + 4  # untagged IPv4 in all golden captures
ECN_BITS = (0x80, 0x40)

# (capture, frames to flip in place)
IN_PLACE = [
    ("ib_atomic_bw.pcap", [1, 21]),        # FETCH_ADD (AtomicETH), ATOMIC_ACKNOWLEDGE
    ("rping_rdmacm.pcap", [5, 6]),          # ACKNOWLEDGE, RDMA_READ_REQUEST (RETH)
    ("published-vectors.pcap", [1, 2]),     # UC SEND_ONLY with pad 2, CNP
]
# (capture, frames copied with every flip, bytes to flip in every bit: None = all)
BULK = [
    ("rping_rdmacm.pcap", [1, 7, 12], None),  # CM MAD (UD, DETH), READ_RESPONSE_ONLY, WRITE_ONLY
    ("ud_pingpong.pcap", [12], None),         # UD SEND_ONLY, 1090 bytes
    ("ib_atomic_bw.pcap", [1, 21], None),
    ("rc_pingpong.pcap", [12, 16], 80),       # SEND_FIRST: headers bitwise, payload 0xff
    ("ib_write_bw.pcap", [22], 100),          # RDMA_WRITE_FIRST 4150 bytes
]


def flagged_frames(stdout):
    """Frame numbers on --check error lines ("   12 0.000 ... MALFORMED/ERROR/BAD")."""
    out = set()
    for line in stdout.splitlines():
        m = re.match(r"^\s*(\d+) ", line)
        if m:
            out.add(int(m.group(1)))
    return out


def allowed_miss(name, offset, mask):
    if offset == BTH_BYTE4 and mask in ECN_BITS:
        return True
    return name == "published-vectors.pcap" and offset < 12


def main(tmp):
    dump, golden = sys.argv[1], sys.argv[2]
    failures = []
    runs = 0

    for name, frames in IN_PLACE:
        path = os.path.join(golden, name)
        blob = open(path, "rb").read()
        _, _, recs = pcaputil.read(path)
        for fn in frames:
            r = recs[fn - 1]
            for i in range(r.caplen):
                b = bytearray(blob)
                b[r.offset + i] ^= 0xFF
                out = os.path.join(tmp, "flip.pcap")
                with open(out, "wb") as f:
                    f.write(b)
                p = dumprun.run(dump, ["--check", out])
                runs += 1
                if p.returncode < 0:
                    failures.append(f"{name} frame {fn} byte {i}: signal {-p.returncode}")
                    continue
                named = fn in flagged_frames(p.stdout) and re.search(
                    rf"frames? (\d+,)*{fn}\b", p.stdout)
                if allowed_miss(name, i, 0xFF):
                    continue
                if p.returncode != 1 or not named:
                    failures.append(f"{name} frame {fn} byte {i} ^0xff: exit {p.returncode}\n"
                                    f"{p.stdout}{p.stderr}")

    for name, frames, bitwise_upto in BULK:
        path = os.path.join(golden, name)
        header, endian, recs = pcaputil.read(path)
        datas = [r.data for r in recs]
        copies = []  # (frame number in the new file, source frame, byte, mask)
        for fn in frames:
            src = recs[fn - 1]
            for i in range(src.caplen):
                masks = [0xFF]
                if bitwise_upto is None or i < bitwise_upto:
                    masks += [1 << b for b in range(8)]
                for m in masks:
                    d = bytearray(src.data)
                    d[i] ^= m
                    datas.append(bytes(d))
                    copies.append((len(datas), fn, i, m))
        all_recs = recs + [recs[c[1] - 1] for c in copies]
        out = os.path.join(tmp, "bulk.pcap")
        pcaputil.write(out, header, endian, all_recs, datas)
        p = subprocess.run([dump, "--check", out], capture_output=True, text=True)
        runs += 1
        if p.returncode != 1:
            failures.append(f"{name} bulk: exit {p.returncode}\n{p.stderr}")
            continue
        flagged = flagged_frames(p.stdout)
        originals = {n for n in flagged if n <= len(recs)}
        if originals:
            failures.append(f"{name} bulk: unflipped frames flagged: {sorted(originals)[:10]}")
        missed = [c for c in copies if c[0] not in flagged and not allowed_miss(name, c[2], c[3])]
        for c in missed[:20]:
            failures.append(f"{name} bulk: copy {c[0]} of frame {c[1]}, byte {c[2]} ^0x{c[3]:02x}"
                            " not flagged")
        if len(missed) > 20:
            failures.append(f"{name} bulk: ... {len(missed)} missed in all")
        allowed = sum(1 for c in copies if c[0] not in flagged and allowed_miss(name, c[2], c[3]))
        print(f"{name}: {len(copies)} flipped copies, {len(copies) - len(missed) - allowed} "
              f"flagged, {allowed} allowed misses (FECN/BECN bit alone)")

    for f in failures:
        print("FAIL:", f)
    print(f"{runs} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    # Removed however main() ends, an exception included.
    with tempfile.TemporaryDirectory(prefix="uroce-flip-") as tmp:
        sys.exit(main(tmp))

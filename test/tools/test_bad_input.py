#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unusable input gets one line on stderr and exit 2, never a crash; odd but
valid input (a capture with no frames, random frame bytes) is no error.

usage: test_bad_input.py UROCE_DUMP GOLDEN_DIR
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumprun  # noqa: E402
import pcaputil  # noqa: E402


def pcap_header(linktype, magic=pcaputil.PCAP_MAGIC_US, snaplen=262144):
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)


def main(tmp):
    dump, golden = sys.argv[1], sys.argv[2]
    failures = []
    golden_pcap = os.path.join(golden, "rping_rdmacm.pcap")
    blob = open(golden_pcap, "rb").read()
    _, _, recs = pcaputil.read(golden_pcap)

    def write(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def run(args):
        return dumprun.run(dump, args)

    def expect_bad(what, args, must_say=None):
        for extra in ([], ["--check"], ["--flows"], ["--fields"]):
            p = run(extra + args)
            lines = p.stderr.splitlines()
            if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("uroce-dump: "):
                failures.append(f"{what} {extra}: exit {p.returncode}, stderr {p.stderr!r}")
            elif must_say and must_say not in lines[0]:
                failures.append(f"{what}: {lines[0]!r} does not say {must_say!r}")
        return p

    expect_bad("empty file", [write("empty.pcap", b"")], "empty")
    expect_bad("text file", [write("notes.txt", b"this is not a capture\n" * 20)], "not a readable")
    rnd = random.Random(4791)
    expect_bad("random bytes", [write("random.bin", bytes(rnd.getrandbits(8) for _ in range(5000)))])
    expect_bad("missing file", [os.path.join(tmp, "does-not-exist.pcap")], "No such file")
    expect_bad("directory", [tmp], "directory")
    expect_bad("unsupported link type", [write("wifi.pcap", pcap_header(105) + b"")],
               "unsupported link type 105")

    # Cut short everywhere interesting: in the file header, in a record header,
    # in a record's bytes, one byte before the end.
    first = recs[0]
    cuts = [1, 4, 10, 23, 24 + 8, first.offset + 1, first.offset + first.caplen - 1,
            recs[5].offset + 20, len(blob) - 1]
    for cut in cuts:
        p = expect_bad(f"truncated at {cut}", [write(f"cut{cut}.pcap", blob[:cut])])
    # A damaged capture still prints the frames before the damage.
    p = run([write("cut-late.pcap", blob[:recs[5].offset + 20])])
    if len(p.stdout.splitlines()) != 5 or "after frame 5" not in p.stderr:
        failures.append(f"truncated after 5 frames: {p.stdout!r} {p.stderr!r}")

    # pcapng, truncated (editcap from the tshark package converts).
    editcap = shutil.which("editcap")
    if editcap:
        ng = os.path.join(tmp, "full.pcapng")
        subprocess.run([editcap, "-F", "pcapng", golden_pcap, ng], check=True)
        ngb = open(ng, "rb").read()
        for cut in (3, 30, len(ngb) // 2, len(ngb) - 1):
            expect_bad(f"pcapng truncated at {cut}", [write(f"cut{cut}.pcapng", ngb[:cut])])
    else:
        print("editcap not found: pcapng truncation cases skipped")

    # Usage errors are exit 2 too.
    for args in ([], [golden_pcap, golden_pcap], ["--bogus", golden_pcap]):
        p = run(args)
        if p.returncode != 2:
            failures.append(f"usage {args}: exit {p.returncode}")

    # Valid but empty: no frames, no error.
    p = run(["--check", write("noframes.pcap", pcap_header(1))])
    if p.returncode != 0 or "0 frames" not in p.stdout:
        failures.append(f"header-only capture: exit {p.returncode} {p.stdout!r} {p.stderr!r}")

    # Random frame contents in a valid file: any verdict, never a crash or exit 2.
    for seed in range(40):
        r = random.Random(seed)
        body = bytearray(pcap_header(1))
        for n in range(50):
            if r.random() < 0.5:
                base = bytearray(recs[r.randrange(len(recs))].data)
                for _ in range(r.randrange(1, 6)):
                    base[r.randrange(len(base))] = r.getrandbits(8)
                frame = bytes(base[:r.randrange(len(base) + 1)])
            else:
                frame = bytes(r.getrandbits(8) for _ in range(r.randrange(0, 200)))
            wire = len(frame) + (r.randrange(100) if r.random() < 0.2 else 0)
            body += struct.pack("<IIII", n, 0, len(frame), wire) + frame
        path = write(f"fuzz{seed}.pcap", bytes(body))
        for extra in ([], ["--check"], ["--flows"], ["--fields"], ["-e", "-r"]):
            p = run(extra + [path])
            if p.returncode not in (0, 1) or p.stderr:
                failures.append(f"random frames seed {seed} {extra}: exit {p.returncode} "
                                f"{p.stderr!r}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    # Removed however main() ends, an exception included.
    with tempfile.TemporaryDirectory(prefix="uroce-bad-") as tmp:
        sys.exit(main(tmp))

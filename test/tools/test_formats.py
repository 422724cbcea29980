#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The same traffic in other containers and link types decodes the same:
pcapng, nanosecond pcap, big-endian pcap, Linux cooked (SLL, SLL2), raw IP
(LINKTYPE_RAW, LINKTYPE_IPV4), and 802.1Q-tagged Ethernet.

usage: test_formats.py UROCE_DUMP GOLDEN_DIR
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcaputil  # noqa: E402

LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_SLL2, LINKTYPE_IPV4 = 101, 113, 276, 228


def write_pcap(path, linktype, frames, endian="<", magic=pcaputil.PCAP_MAGIC_US, ts=None):
    with open(path, "wb") as f:
        f.write(struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype))
        for i, d in enumerate(frames):
            sec, frac = ts[i] if ts else (i, 0)
            f.write(struct.pack(endian + "IIII", sec, frac, len(d), len(d)) + d)


def sll(eth):
    # packet type 0 (to us), ARPHRD_ETHER, 6-byte address, the EtherType.
    return struct.pack(">HHH8s", 0, 1, 6, eth[6:12] + b"\0\0") + eth[12:14] + eth[14:]


def sll2(eth):
    return eth[12:14] + struct.pack(">HIHBB8s", 0, 2, 1, 0, 6, eth[6:12] + b"\0\0") + eth[14:]


def vlan(eth, vid=77):
    return eth[:12] + struct.pack(">HH", 0x8100, (3 << 13) | vid) + eth[12:]


def strip_time(out):
    """frame number and the rest of the line, without the time column."""
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit():
            rows.append((parts[0], parts[2]))
    return rows


def main(tmp):
    dump, golden = sys.argv[1], sys.argv[2]
    failures = []

    def run(*args):
        p = subprocess.run([dump, *args], capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(f"{args}: exit {p.returncode} {p.stderr}")
        return p.stdout

    for name in ("rping_rdmacm.pcap", "rc_pingpong.pcap", "published-vectors.pcap"):
        src = os.path.join(golden, name)
        header, endian, recs = pcaputil.read(src)
        frames = [r.data for r in recs]
        ts = [(r.ts_sec, r.ts_frac) for r in recs]
        want_out = run(src)
        want = strip_time(want_out)
        want_times = [l.split()[1] for l in want_out.splitlines()]
        roce = {str(r.number) for r in recs if pcaputil.is_udp_4791(r.data)}
        want_roce = [w for w in want if w[0] in roce]
        variants = {}

        p = os.path.join(tmp, "be.pcap")
        write_pcap(p, 1, frames, ">", ts=ts)
        variants["big-endian pcap"] = (p, want, want_times)

        editcap = shutil.which("editcap")
        if editcap:
            for fmt in ("pcapng", "nsecpcap"):
                p = os.path.join(tmp, f"{name}.{fmt}")
                subprocess.run([editcap, "-F", fmt, src, p], check=True)
                times = want_times if fmt == "pcapng" else [t + "000" for t in want_times]
                variants[fmt] = (p, want, times)
        else:
            print("editcap not found: pcapng/nsecpcap cases skipped")

        # Non-Ethernet links carry no MACs; their RoCE lines must match exactly.
        for label, lt, conv in (("sll", LINKTYPE_SLL, sll), ("sll2", LINKTYPE_SLL2, sll2),
                                ("raw", LINKTYPE_RAW, lambda e: e[14:]),
                                ("ipv4", LINKTYPE_IPV4, lambda e: e[14:])):
            p = os.path.join(tmp, f"{label}.pcap")
            write_pcap(p, lt, [conv(f) for f in frames], ts=ts)
            variants[label] = (p, want_roce, None)

        p = os.path.join(tmp, "vlan.pcap")
        write_pcap(p, 1, [vlan(f) for f in frames], ts=ts)
        vlan_want = [(n, re.sub(r"(sport \d+)", r"\1 vlan=77", l) if n in roce else l)
                     for n, l in want]
        variants["802.1Q"] = (p, vlan_want, None)

        for label, (path, expect_rows, expect_times) in variants.items():
            out = run(path)
            got = strip_time(out)
            if expect_rows is want_roce:
                got = [g for g in got if g[0] in roce]
            if got != expect_rows:
                diff = [(a, b) for a, b in zip(got, expect_rows) if a != b][:3]
                failures.append(f"{name} as {label}: lines differ, e.g. {diff}"
                                f" ({len(got)} vs {len(expect_rows)} lines)")
            if expect_times is not None:
                times = [l.split()[1] for l in out.splitlines()]
                if times != expect_times:
                    failures.append(f"{name} as {label}: times {times[:3]} vs {expect_times[:3]}")
            p = subprocess.run([dump, "--check", path], capture_output=True, text=True)
            if p.returncode != 0:
                failures.append(f"{name} as {label}: --check exit {p.returncode}\n{p.stdout}")

    # A capture snapped at 128 bytes (tcpdump -s 128): nothing verified, nothing
    # failed, and --flows gives the same table as the full capture.
    editcap = shutil.which("editcap")
    if editcap:
        for name in ("rc_pingpong.pcap", "ib_write_bw.pcap", "rping_rdmacm.pcap"):
            src = os.path.join(golden, name)
            snapped = os.path.join(tmp, "snap-" + name)
            subprocess.run([editcap, "-s", "128", src, snapped], check=True)
            p = subprocess.run([dump, "--check", snapped], capture_output=True, text=True)
            if p.returncode != 0 or "snapped and not verified" not in p.stdout:
                failures.append(f"{name} snapped: --check exit {p.returncode}\n{p.stdout}")
            full, snap = run("--flows", src), run("--flows", snapped)
            if full != snap:
                failures.append(f"{name} snapped: --flows differs\n{full}\n{snap}")
            big = [r.number for r in pcaputil.read(src)[2]
                   if pcaputil.is_udp_4791(r.data) and r.caplen > 128]
            lines = {int(l.split()[0]): l for l in run(snapped).splitlines()}
            if not big or any("[snapped: 128 of" not in lines[n] for n in big):
                failures.append(f"{name} snapped: {[lines.get(n) for n in big[:2]]}")

    # -e shows the MACs.
    out = run("-e", os.path.join(golden, "published-vectors.pcap"))
    if "02:00:00:00:00:01 -> 02:00:00:00:00:02 192.168.0.7 -> 192.168.0.7" not in out:
        failures.append(f"-e: {out!r}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    # Removed however main() ends, an exception included.
    with tempfile.TemporaryDirectory(prefix="uroce-fmt-") as tmp:
        sys.exit(main(tmp))

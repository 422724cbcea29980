#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""uroce-dump on every golden capture: --check passes, every frame gets one
line, every RoCE frame says "ICRC ok", --fields has one row per RoCE frame,
--flows finds the one real retransmission in rc_pingpong.pcap.

usage: test_golden.py UROCE_DUMP GOLDEN_DIR
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcaputil  # noqa: E402

CAPTURES = ["rc_pingpong.pcap", "ib_write_bw.pcap", "ud_pingpong.pcap",
            "rping_rdmacm.pcap", "ib_atomic_bw.pcap", "published-vectors.pcap"]


def run(dump, *args):
    p = subprocess.run([dump, *args], capture_output=True, text=True)
    if p.returncode < 0:
        raise AssertionError(f"{args}: killed by signal {-p.returncode}\n{p.stderr}")
    return p


def main():
    dump, golden = sys.argv[1], sys.argv[2]
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    for name in CAPTURES:
        path = os.path.join(golden, name)
        _, _, recs = pcaputil.read(path)
        roce = [r.number for r in recs if pcaputil.is_udp_4791(r.data)]

        p = run(dump, "--check", path)
        expect(p.returncode == 0, f"{name}: --check exit {p.returncode}\n{p.stdout}{p.stderr}")
        expect("check: OK" in p.stdout, f"{name}: no 'check: OK'\n{p.stdout}")
        expect(f"{len(recs)} frames: {len(roce)} RoCE ({len(roce)} ok, 0 bad" in p.stdout,
               f"{name}: counts\n{p.stdout}")

        p = run(dump, path)
        lines = p.stdout.splitlines()
        expect(p.returncode == 0 and len(lines) == len(recs),
               f"{name}: {len(lines)} lines for {len(recs)} frames")
        for line in lines:
            n = int(line.split()[0])
            if n in roce:
                expect(line.endswith("ICRC ok"), f"{name}: RoCE frame {n}: {line}")
            else:
                expect("non-RoCE" in line, f"{name}: frame {n}: {line}")

        p = run(dump, "--roce-only", path)
        lines = p.stdout.splitlines()
        hidden = len(recs) - len(roce)
        expect(len(lines) == len(roce) + (1 if hidden else 0), f"{name}: --roce-only lines")
        if hidden:
            expect(lines[-1] == f"({hidden} non-RoCE frames not shown)", f"{name}: {lines[-1]}")

        p = run(dump, "--fields", path)
        rows = [l for l in p.stdout.splitlines() if not l.startswith("#")]
        expect(p.returncode == 0 and [int(r.split("\t")[0]) for r in rows] == roce,
               f"{name}: --fields rows")

        p = run(dump, "--flows", path)
        expect(p.returncode == 0 and p.stdout.startswith("flow "), f"{name}: --flows\n{p.stdout}")

    # rc_pingpong frames 106-109 resend PSNs 9742685-9742688 (frames 102-105): the
    # only retransmission in the golden set, and no PSN gaps anywhere.
    p = run(dump, "--flows", os.path.join(golden, "rc_pingpong.pcap"))
    rows = {" ".join(l.split()[:6]): l.split() for l in p.stdout.splitlines()[1:]}
    req = rows.get("10.77.0.12 -> 10.77.0.11 QP=0x000011 RC req")
    expect(req is not None and req[6] == "117" and req[11] == "0(0)" and req[12] == "4",
           f"rc_pingpong flows:\n{p.stdout}")
    for name in CAPTURES:
        p = run(dump, "--flows", os.path.join(golden, name))
        for l in p.stdout.splitlines()[1:]:
            expect(" 0(0) " in l, f"{name}: unexpected PSN gap: {l}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

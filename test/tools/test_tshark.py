#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cross-check uroce-dump's decode against an independent one: tshark.

For every golden capture, `uroce-dump --fields` and
`tshark -T fields -e <the same fields>` must agree on every RoCE frame and
every column: opcode, SE/M/A, pad, P_Key, destination QP, PSN, RETH (and
AtomicETH address/key, which tshark files under reth.*), AETH syndrome and
MSN, DETH Q_Key and source QP, AtomicETH swap/compare, AtomicAckETH, and the
ICRC as stored. Exceptions, from tshark 4.0's dissector: it does not know
the CNP opcode (0x81), so for CNPs only the BTH columns are compared.

Then the CM MADs on QP1: every frame tshark decodes as a CM message
uroce-dump names too, with the same attribute, transaction ID, and the comm
IDs tshark shows for it.
Exit 77 (skipped) when tshark is not installed.

usage: test_tshark.py UROCE_DUMP GOLDEN_DIR
"""
import os
import re
import shutil
import subprocess
import sys

CAPTURES = ["rc_pingpong.pcap", "ib_write_bw.pcap", "ud_pingpong.pcap",
            "rping_rdmacm.pcap", "ib_atomic_bw.pcap", "published-vectors.pcap"]
# The uroce-dump --fields column order (dump_format.h).
FIELDS = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m",
          "infiniband.bth.a", "infiniband.bth.padcnt", "infiniband.bth.p_key",
          "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.reth.va",
          "infiniband.reth.r_key", "infiniband.reth.dmalen", "infiniband.aeth.syndrome",
          "infiniband.aeth.msn", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
          "infiniband.atomicacketh.origremdt", "infiniband.invariant.crc"]
BTH_COLUMNS = 9
CNP = "129"


def main():
    dump, golden = sys.argv[1], sys.argv[2]
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed; the cross-check against it did not run")
        return 77
    failures, compared = [], 0
    for name in CAPTURES:
        path = os.path.join(golden, name)
        cmd = [tshark, "-r", path, "-T", "fields", "-E", "separator=/t"]
        for f in FIELDS:
            cmd += ["-e", f]
        t = subprocess.run(cmd, capture_output=True, text=True)
        if t.returncode != 0:
            failures.append(f"{name}: tshark failed: {t.stderr}")
            continue
        theirs = {}
        for line in t.stdout.splitlines():
            cols = line.split("\t")
            if len(cols) > 1 and cols[1]:  # a frame tshark decoded as InfiniBand
                theirs[cols[0]] = cols
        u = subprocess.run([dump, "--fields", path], capture_output=True, text=True)
        ours = {}
        for line in u.stdout.splitlines():
            if line.startswith("#"):
                if line[1:].split("\t")[0] != "frame" or len(line.split("\t")) != len(FIELDS):
                    failures.append(f"{name}: --fields header {line!r}")
                continue
            cols = line.split("\t")
            ours[cols[0]] = cols
        if sorted(theirs) != sorted(ours):
            failures.append(f"{name}: frames differ: tshark-only "
                            f"{sorted(set(theirs) - set(ours))[:5]}, uroce-only "
                            f"{sorted(set(ours) - set(theirs))[:5]}")
        for n in sorted(set(theirs) & set(ours), key=int):
            a, b = ours[n], theirs[n]
            b += [""] * (len(FIELDS) - len(b))
            width = BTH_COLUMNS if a[1] == CNP else len(FIELDS)
            for i in range(width):
                if a[i] != b[i]:
                    failures.append(f"{name} frame {n} {FIELDS[i]}: uroce-dump {a[i]!r}, "
                                    f"tshark {b[i]!r}")
            compared += 1
    cm = check_cm_mads(dump, golden, tshark, failures)
    for f in failures[:50]:
        print("FAIL:", f)
    print(f"{compared} frames compared field by field and {cm} CM MADs by name, "
          f"{len(failures)} failures")
    return 1 if failures or compared == 0 or cm == 0 else 0


# uroce-dump's CM message names and tshark's attribute IDs (IBTA 12.6).
CM_ATTR = {"REQ": "0x0010", "MRA": "0x0011", "REJ": "0x0012", "REP": "0x0013", "RTU": "0x0014",
           "DREQ": "0x0015", "DREP": "0x0016", "SIDR_REQ": "0x0017", "SIDR_REP": "0x0018"}
CM_FIELDS = ["frame.number", "infiniband.mad.attributeid", "infiniband.mad.transactionid",
             "infiniband.cm.req.serviceid", "infiniband.cm.rep.remotecommid",
             "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid",
             "infiniband.cm.dreq.localcommid", "infiniband.cm.dreq.remotecommid",
             "infiniband.cm.drsp.localcommid", "infiniband.cm.drsp.remotecommid"]
CM_LINE = re.compile(r"^\s*(\d+) .* CM (\w+) TID=(0x[0-9a-f]+)(.*?) ICRC")


def check_cm_mads(dump, golden, tshark, failures):
    checked = 0
    for name in CAPTURES:
        path = os.path.join(golden, name)
        cmd = [tshark, "-r", path, "-Y", "infiniband.mad", "-T", "fields", "-E", "separator=/t"]
        for f in CM_FIELDS:
            cmd += ["-e", f]
        t = subprocess.run(cmd, capture_output=True, text=True)
        theirs = {c[0]: c for c in (l.split("\t") for l in t.stdout.splitlines())}
        ours = {}
        for line in subprocess.run([dump, path], capture_output=True, text=True).stdout.splitlines():
            m = CM_LINE.match(line)
            if m:
                ours[m.group(1)] = m
        if sorted(theirs) != sorted(ours):
            failures.append(f"{name}: CM MADs differ: tshark {sorted(theirs)}, uroce-dump {sorted(ours)}")
        for n in sorted(set(theirs) & set(ours), key=int):
            c, m = theirs[n], ours[n]
            c += [""] * (len(CM_FIELDS) - len(c))
            if CM_ATTR.get(m.group(2)) != c[1]:
                failures.append(f"{name} frame {n}: uroce-dump CM {m.group(2)}, tshark attribute {c[1]}")
            if int(m.group(3), 16) != int(c[2], 16):
                failures.append(f"{name} frame {n}: TID {m.group(3)} vs tshark {c[2]}")
            rest = m.group(4)
            ids = [v for v in c[3:] if v]  # the service ID and comm IDs tshark shows for it
            for v in ids:
                if f"{int(v, 16):x}" not in rest.replace("0x", "").lstrip("0") and \
                        f"{int(v, 16):08x}" not in rest and f"{int(v, 16):016x}" not in rest:
                    failures.append(f"{name} frame {n}: tshark's {v} not in uroce-dump's {rest!r}")
            checked += 1
    return checked


if __name__ == "__main__":
    sys.exit(main())

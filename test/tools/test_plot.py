#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""uroce-dump --plot: the SVG is well-formed XML and shows what the capture holds.

1. Every golden capture: exit 0, the SVG parses (xml.etree), one
   <g class="flow"> per data flow (the --flows rows carrying requests or RDMA
   READ response data, at most 8), each flow's packet and retransmission
   counts equal the --flows row's, and no mark class outside the known ones.
   rc_pingpong.pcap: its one go-back-N resend is 4 retransmission marks, and
   its 32 ACKs are drawn on the right flow.
2. A capture built here with scapy (an independent RoCEv2 encoder): a
   go-back-N episode whose PSNs wrap past 2^24, with a PSN sequence error
   NAK, an RNR NAK, a remote access error NAK, ACKs, a CNP to the sender's
   QPN and a CNP to a QP no flow has. Exactly that many marks of each kind;
   the resends sit on the rows of the PSNs they repeat; the data climbs
   across the wrap (PSNs unwrapped); the stray CNP is noted; with
   --plot-flows 1 only the busier flow is drawn, with a note.
3. An unwritable output path: exit 2 with one stderr line.
Exit 77 when scapy is missing (after part 1, which needs only python3).

usage: test_plot.py UROCE_DUMP GOLDEN_DIR
"""
import os
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CAPTURES = ["rc_pingpong.pcap", "ib_write_bw.pcap", "ud_pingpong.pcap",
            "rping_rdmacm.pcap", "ib_atomic_bw.pcap", "published-vectors.pcap"]
SVG = "{http://www.w3.org/2000/svg}"
KINDS = ["data", "retx", "ack", "nak-seq", "nak-rnr", "nak-other", "cnp"]


def run(dump, *args):
    p = subprocess.run([dump, *args], capture_output=True, text=True)
    if p.returncode < 0:
        raise AssertionError(f"{args}: killed by signal {-p.returncode}\n{p.stderr}")
    return p


def flows_table(dump, path):
    """--flows rows: {'a -> b QP=x kind role': {'packets':..,'payload':..,'retrans':..}}."""
    rows = {}
    for line in run(dump, "--flows", path).stdout.splitlines()[1:]:
        f = line.split()
        role = f[5] if f[5] in ("req", "resp") else ""
        base = 6 if role else 5
        rows[" ".join(f[:4])] = rows.get(" ".join(f[:4]), {})
        rows[" ".join(f[:4])][role] = {"kind": f[4], "packets": int(f[base]),
                                       "payload": int(f[base + 2]), "retrans": int(f[base + 6]),
                                       "acks": int(f[base + 7])}
    return rows


def read_svg(path):
    """(root, [flow groups as dicts: attrs + drawn mark counts + mark coordinates])."""
    root = ET.parse(path).getroot()
    flows = []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "flow":
            continue
        marks = next(x for x in g.iter(SVG + "g") if x.get("class") == "marks")
        drawn = {k: [] for k in KINDS}
        for el in marks:
            cls = el.get("class")
            if cls not in drawn:
                raise AssertionError(f"{path}: unknown mark class {cls!r}")
            if el.tag == SVG + "circle":
                xy = (float(el.get("cx")), float(el.get("cy")))
            elif el.tag == SVG + "rect":
                xy = (float(el.get("x")) + 3.5, float(el.get("y")) + 3.5)
            else:  # path "Mx y...", starting above the mark's centre by this much
                x, y = (float(v) for v in el.get("d")[1:].replace("l", " ").replace("h", " ")
                        .replace("V", " ").split()[:2])
                xy = (x, y + {"retx": 3.6, "nak-seq": 4, "nak-other": 3.5}.get(cls, 0))
                if cls == "cnp":
                    xy = (x + 4.5, y)
            drawn[cls].append(xy)
        flows.append({"attrs": dict(g.attrib), "drawn": drawn})
    return root, flows


def write_pcap(path, frames):
    """Nanosecond pcap: frames = [(t_ns, bytes)]."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        for t, d in frames:
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(d), len(d)) + d)


def main(tmp):
    dump, golden = sys.argv[1], sys.argv[2]
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    # ---- 1. the golden captures
    for name in CAPTURES:
        path = os.path.join(golden, name)
        out = os.path.join(tmp, name + ".svg")
        p = run(dump, "--plot", out, path)
        expect(p.returncode == 0 and p.stdout.startswith("plot: "), f"{name}: {p.returncode} {p.stdout}{p.stderr}")
        try:
            root, flows = read_svg(out)
        except (ET.ParseError, AssertionError, OSError) as e:
            failures.append(f"{name}: SVG does not parse: {e}")
            continue
        expect(root.tag == SVG + "svg", f"{name}: root {root.tag}")
        table = flows_table(dump, path)
        data_rows = {f"{k} {role}": r[role] for k, r in table.items() for role in r
                     if role == "req" or (role == "resp" and r[role]["payload"] > 0)}
        expect(len(flows) == min(8, len(data_rows)),
               f"{name}: {len(flows)} flow panels for {len(data_rows)} data flows")
        for f in flows:
            a = f["attrs"]
            row = data_rows.get(a["data-flow"])
            expect(row is not None, f"{name}: panel {a['data-flow']} is no --flows data row")
            if row is None:
                continue
            # A response row also holds ACKs; its panel only the READ response data.
            resp = a["data-flow"].endswith(" resp")
            expect((resp or int(a["data-packets"]) == row["packets"]) and int(a["data-payload"]) == row["payload"],
                   f"{name}: {a['data-flow']}: {a['data-packets']} packets, {a['data-payload']} "
                   f"bytes; --flows says {row}")
            if row["kind"] in ("RC", "UC") and not resp:
                expect(int(a["data-retx"]) == row["retrans"],
                       f"{name}: {a['data-flow']}: {a['data-retx']} resends, --flows {row['retrans']}")
            for k in KINDS:
                expect(len(f["drawn"][k]) <= int(a["data-" + k]), f"{name}: more {k} marks than counted")
            expect(len(f["drawn"]["data"]) + len(f["drawn"]["retx"]) > 0, f"{name}: {a['data-flow']}: no data marks")
        if name == "rc_pingpong.pcap":
            first = next((f for f in flows if f["attrs"]["data-flow"] == "10.77.0.12 -> 10.77.0.11 QP=0x000011 req"), None)
            expect(first is not None and len(first["drawn"]["retx"]) == 4 and first["attrs"]["data-ack"] == "32"
                   and len(first["drawn"]["ack"]) > 0,
                   f"rc_pingpong: {first and first['attrs']}")

    # ---- 3. an unwritable output
    p = run(dump, "--plot", os.path.join(tmp, "no", "such", "dir.svg"), os.path.join(golden, CAPTURES[0]))
    expect(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "cannot write the plot" in p.stderr,
           f"unwritable: {p.returncode} {p.stderr!r}")

    # ---- 2. a built episode
    try:
        from scapy.all import Ether, IP, UDP, Raw, raw
        from scapy.contrib.roce import BTH, AETH, CNPPadding
    except ImportError:
        for f in failures:
            print("FAIL:", f)
        print("SKIP: python3-scapy missing; the built capture was not plotted")
        return 1 if failures else 77

    A, B, C = "10.0.0.1", "10.0.0.2", "10.0.0.3"
    QP_A, QP_B, QP_C = 0x12, 0x11, 0x33  # requester A's QPN, responder B's, C's
    START = 0xFFFFFA  # the PSNs wrap past 2^24 after 6 packets
    frames, t = [], 0

    def l2(src, dst, sport=49152):
        return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src, dst=dst, flags="DF") / UDP(sport=sport, dport=4791, chksum=0)

    def send(i, src=A, qp=QP_B, start=START):
        nonlocal t
        t += 10_000
        frames.append((t, raw(l2(src, B) / BTH(opcode=0x04, dqpn=qp, psn=(start + i) & 0xFFFFFF, ackreq=1) / Raw(b"\x5a" * 1024))))

    def reply(i, syndrome):
        nonlocal t
        t += 10_000
        frames.append((t, raw(l2(B, A) / BTH(opcode=0x11, dqpn=QP_A, psn=(START + i) & 0xFFFFFF) / AETH(syndrome=syndrome, msn=i))))

    def cnp(qp):
        nonlocal t
        t += 10_000
        frames.append((t, raw(l2(B, A, 0) / BTH(opcode=0x81, dqpn=qp, becn=1, psn=0) / CNPPadding())))

    for i in range(10):      # 10 new PSNs, the 4th to be lost at B
        send(i)
    reply(2, 0x1F)           # ACK 2
    reply(3, 0x60)           # NAK PSN sequence error: B expects 3
    cnp(QP_A)                # B saw CE: CNP to the sender's QPN
    for i in range(3, 10):   # go-back-N: 7 resends
        send(i)
    send(10)                 # new
    reply(10, 0x2E)          # RNR NAK at 10 (timer 1.28 ms)
    send(10)                 # resend
    reply(10, 0x1F)          # ACK 10
    send(11)                 # new
    reply(11, 0x62)          # NAK remote access error at 11
    cnp(0x777)               # a CNP to a QP no flow has
    for i in range(3):       # a smaller flow from C
        send(i, src=C, qp=QP_B, start=500)
    want = {"data": 12, "retx": 8, "ack": 2, "nak-seq": 1, "nak-rnr": 1, "nak-other": 1, "cnp": 1}

    cap = os.path.join(tmp, "built.pcap")
    write_pcap(cap, frames)
    p = run(dump, "--check", cap)
    expect(p.returncode == 0, f"built capture does not check:\n{p.stdout}")
    out = os.path.join(tmp, "built.svg")
    p = run(dump, "--plot", out, cap)
    expect(p.returncode == 0 and p.stdout.strip() == f"plot: {out}: 2 of 2 data flows drawn",
           f"built: {p.returncode} {p.stdout!r} {p.stderr!r}")
    root, flows = read_svg(out)
    expect(len(flows) == 2, f"built: {len(flows)} panels")
    main_flow = next((f for f in flows if f["attrs"]["data-flow"] == f"{A} -> {B} QP=0x{QP_B:06x} req"), None)
    expect(main_flow is not None, "built: no panel for A -> B")
    if main_flow:
        got = {k: int(main_flow["attrs"]["data-" + k]) for k in KINDS}
        drawn = {k: len(v) for k, v in main_flow["drawn"].items()}
        expect(got == want, f"built: counted {got}, want {want}")
        expect(drawn == want, f"built: drawn {drawn}, want {want}")
        data = sorted(main_flow["drawn"]["data"])
        ys = [y for _, y in data]
        expect(all(a > b for a, b in zip(ys, ys[1:])), f"built: data PSNs do not climb across the wrap: {ys}")
        rows = {round(y, 1) for _, y in data}
        expect(all(round(y, 1) in rows for _, y in main_flow["drawn"]["retx"]),
               "built: a resend is not on the row of the PSN it repeats")
        # The NAK (expected PSN 3) sits on the row of data PSN 3; ACK 2 on PSN 2's.
        nak_y = main_flow["drawn"]["nak-seq"][0][1]
        expect(abs(nak_y - ys[3]) < 0.2, f"built: NAK at y {nak_y}, PSN 3 at {ys[3]}")
    text = "".join(root.itertext())
    expect("1 CNPs name no data flow" in text, "built: no note for the stray CNP")
    flows_out = run(dump, "--flows", cap).stdout
    expect(any(l.startswith(f"{A} -> {B} QP=0x{QP_B:06x}  RC req") and l.split()[12] == "8" for l in flows_out.splitlines()),
           f"built: --flows does not count the same 8 resends:\n{flows_out}")

    p = run(dump, "--plot", out, "--plot-flows", "1", cap)
    _, flows = read_svg(out)
    expect(p.stdout.strip() == f"plot: {out}: 1 of 2 data flows drawn" and len(flows) == 1
           and flows[0]["attrs"]["data-flow"].startswith(A), f"--plot-flows 1: {p.stdout!r}")
    text = "".join(ET.parse(out).getroot().itertext())
    expect("1 of 2 data flows drawn: the 1 busiest" in text, "--plot-flows 1: no note")
    p = run(dump, "--plot", out, "--plot-flows", "0", cap)
    expect(p.returncode == 2, f"--plot-flows 0: exit {p.returncode}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    # Removed however main() ends, an exception included.
    with tempfile.TemporaryDirectory(prefix="uroce-plot-") as tmp:
        sys.exit(main(tmp))

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An include across an undeclared layer fails the build, two ways:

1. tools/check-layers (which the build runs before any component compiles)
   passes on the tree as it is, and fails, naming the file, the line and the
   layers, on a copy of the tree with one undeclared include planted: a
   public header of a layer above (<uroce/verbs.h> in lib/wire) and an
   internal header of an undeclared component ("uroce_device.h" in
   lib/neigh);
2. the compiler cannot even find an undeclared component's internal header:
   the real compile command of a lib/wire source (from compile_commands.json)
   fails on a copy of that source that includes "uroce_qp.h" (transport),
   and succeeds on the unchanged copy.

Usage: test_check_layers.py SOURCE_DIR BUILD_DIR -- CHECK-LAYERS-ARGS...
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile


def run_check(root, layer_args):
    tool = os.path.join(SRC, "tools", "check-layers")
    return subprocess.run([sys.executable, tool, "--root", root] + layer_args,
                          capture_output=True, text=True)


def plant(tree, rel, line):
    p = os.path.join(tree, rel)
    with open(p) as f:
        lines = f.read().split("\n")
    # after the first include, so the line number is predictable
    at = next(i for i, l in enumerate(lines) if l.startswith("#include")) + 1
    lines.insert(at, line)
    with open(p, "w") as f:
        f.write("\n".join(lines))
    return at + 1


def main():
    global SRC
    sep = sys.argv.index("--")
    SRC, build = sys.argv[1], sys.argv[2]
    layer_args = sys.argv[sep + 1:]
    failures = 0
    checks = 0

    def check(cond, what):
        nonlocal failures, checks
        print(("ok   " if cond else "FAIL ") + what)
        checks += 1
        failures += not cond

    r = run_check(SRC, layer_args)
    check(r.returncode == 0, f"the tree as it is passes ({r.stderr.strip()[:200]})")

    cases = [
        ("lib/wire/uroce_parse.cpp", "#include <uroce/verbs.h>",
         "wire includes <uroce/verbs.h> of transport, which wire does not declare"),
        ("lib/neigh/uroce_neigh.cpp", '#include "uroce_device.h"',
         'neigh includes "uroce_device.h", internal to transport, which neigh does not declare'),
        ("include/uroce/hdr.h", "#include <uroce/engine.h>",
         "wire includes <uroce/engine.h> of engine"),
    ]
    for rel, line, expect in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for d in ("include", "lib", "drivers"):
                shutil.copytree(os.path.join(SRC, d), os.path.join(tmp, d))
            lineno = plant(tmp, rel, line)
            r = run_check(tmp, layer_args)
            check(r.returncode == 1 and f"{rel}:{lineno}: {expect}" in r.stderr,
                  f"{line} planted in {rel} fails the check: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else 'no message'}")

    # The compiler's side: a lib/wire source with the real flags.
    with open(os.path.join(build, "compile_commands.json")) as f:
        cmds = json.load(f)
    wire = next(c for c in cmds if c["file"].endswith("lib/wire/uroce_parse.cpp"))
    with tempfile.TemporaryDirectory() as tmp:
        src_copy = os.path.join(tmp, "uroce_parse.cpp")
        shutil.copy(os.path.join(SRC, "lib/wire/uroce_parse.cpp"), src_copy)
        argv = shlex.split(wire["command"])
        # compile the copy, to a scratch object, without dependency files
        out = []
        skip = False
        for a in argv:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MQ", "-c"):
                skip = True
                continue
            if a == "-MD":
                continue
            out.append(a)
        base = out + ["-fsyntax-only", src_copy]
        r = subprocess.run(base, cwd=wire["directory"], capture_output=True, text=True)
        check(r.returncode == 0, f"lib/wire/uroce_parse.cpp compiles with its own flags ({r.stderr.strip()[:200]})")
        plant(tmp, "uroce_parse.cpp", '#include "uroce_qp.h"')
        r = subprocess.run(base, cwd=wire["directory"], capture_output=True, text=True)
        check(r.returncode != 0 and "uroce_qp.h: No such file" in r.stderr,
              "with #include \"uroce_qp.h\" (transport's) it does not: the header is not on wire's include path")

    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

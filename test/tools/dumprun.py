# SPDX-License-Identifier: BSD-3-Clause
"""One uroce-dump run per case, for the scripts that start hundreds of them
(test_flip.py, test_bad_input.py).

Under ASan, LeakSanitizer's scan at exit took 70 of a run's 160 ms here
(measured with ASAN_OPTIONS=detect_leaks=0 and =1 on the same file), most
of those scripts' time. Every run keeps ASan's and UBSan's checks; the
leak check runs in every LEAK_CHECK_EVERY-th run, so each kind of bad
input still meets it (the scripts cycle through their kinds of damage
faster than that). In a build without sanitizers the variable is ignored.
"""
import os
import subprocess

LEAK_CHECK_EVERY = 3

_runs = 0
_no_leak_env = dict(os.environ)
_no_leak_env["ASAN_OPTIONS"] = ":".join(
    filter(None, [os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))


def run(dump, args):
    """subprocess.run of uroce-dump ARGS, text output captured."""
    global _runs
    env = None if _runs % LEAK_CHECK_EVERY == 0 else _no_leak_env
    _runs += 1
    return subprocess.run([dump, *args], capture_output=True, text=True, env=env)

#!/usr/bin/env python3
"""Rust panics through traced frames (tests/progs/panics.rs, built here with rustc
-C opt-level=0 -g): a panic is an exception of the Itanium unwinder, catch_unwind a
catch.

usage: test_rust_panics.py

The program is checked as test_prog.py checks the programs of tests/progs (output and
status equal to the untraced run's, call records per function equal to the program's
own counts, `unwound` records equal to what it expects: reason "exception" for every
frame a panic went through, none for the frames that caught it, which return
normally), caught only and with a last panic nobody catches (exit status 101); then
with every function of every module traced ('*'), where the unwinder's and the
personality routine's functions are traced too: output, status and counts unchanged,
every call closed. Skipped (status 77) without rustc (Debian package rustc).
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import test_prog as tp  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "progs", "panics.rs")
NAMES = ["pn_catch", "pn_pass1", "pn_pass2", "pn_pass3", "pn_throw", "pn_re1", "pn_re2", "pn_re3",
         "pn_thread", "pn_after"]


def main():
    rustc = shutil.which("rustc")
    if not rustc:
        h.skip_test("rust-panics", "rustc not installed (Debian package rustc)")
    ck = h.Checker("rust-panics")
    with h.TempDir() as tmp:
        binary = os.path.join(tmp, "panics")
        built = h.run([rustc, "-C", "opt-level=0", "-g", "-o", binary, SOURCE])
        if not ck.check(built.status == 0, f"rustc failed\n{built.describe()}"):
            return ck.finish()
        # Each function by its name (not their closures, which the program does not count).
        prog = tp.Prog(",".join(NAMES), [tp.Run(), tp.Run(["uncaught"], 101)])
        for i, run in enumerate(prog.runs):
            tp.check_run(ck, "panics", "O0", binary, prog, run, first=(i == 0))

        # Everything traced: the unwinder, the personality routine, std's panic machinery.
        plain = h.run([binary])
        want = h.parse_expectations(plain.out).calls
        out = os.path.join(tmp, "all")
        tr = h.trace([binary], "*", out, timeout=600)
        res = tr.result
        ck.check(not res.timed_out and res.status == plain.status and res.stdout == plain.stdout,
                 f"-a '*': traced run differs\n--- untraced\n{plain.describe()}\n--- traced\n"
                 f"{res.describe()}")
        records = h.dump_records(ck, tr.files)
        if records is not None:
            a = h.analyze(records)
            h.report_problems(ck, a, "-a '*'")
            got = {n: a.calls[n] for n in want}
            ck.check(got == dict(want), f"-a '*': calls in the trace {got}, the program counted "
                                        f"{dict(want)}")
            exp = h.parse_expectations(plain.out).unwound["exception"]
            got = {n: a.unwound.get("exception", {}).get(n, 0) for n in exp}
            ck.check(got == dict(exp), f"-a '*': unwound (exception) in the trace {got}, the "
                                       f"program expects {dict(exp)}")
            print(f"-a '*': {len(records)} records, counts agree")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Backtraces walked through frame rules equal libunwind's, frame for frame.

functracer walks a stack through the frame rules it reads from each module's
.eh_frame (libdw), and gives a stack to libunwind only when a frame has no simple
rule (doc/internals.md, "Backtraces"). With FT_UNWIND_VERIFY=1 every stack walked
through the rules is walked by libunwind as well, and the two are compared; the
--stats summary counts both. libunwind is the oracle: this test runs memtrace with
deep backtraces (-b 32) on real programs and on the test programs with C++
exceptions, signal handlers (signal frames), threads and forks, and requires that
no backtrace differs, and that the rules did the walking for most of them.

Calls recorded in the process (the in-process recorder) walk their stacks there, with
the same rules in a compact table. With FT_UNWIND_VERIFY=1 such a walk is sent to
functracer and the call takes the stop path, where libunwind walks the same stack:
--stats counts those checks on a line of their own, and none may differ either.

usage: test_unwind_rules.py EXCEPTIONS_O2 LEAKS_CXX_O2 SIGNALS_O0 FORKS_O2 THREADS_O2"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

STATS = re.compile(r"(\d+) backtraces \([0-9.]+ frames each, (\d+) through frame rules alone\).*?"
                   r"(\d+) checked against libunwind, (\d+) differed")
IN_PROCESS = re.compile(r"(\d+) backtraces walked in the process checked against libunwind, (\d+) differed")


def main():
    exceptions, leaks_cxx, signals, forks, threads = (os.path.abspath(p) for p in sys.argv[1:6])
    ck = h.Checker("unwind-rules")
    cases = [
        ("ls", ["ls", "-l", "/usr"], []),
        ("sort", ["sort", "/etc/services"], []),
        ("python3", [sys.executable, "-c", "import json; print(json.dumps(sorted({3: 1, 1: 2})))"], []),
        ("perl", ["perl", "-e", "my %h = map { $_ => $_ * 2 } 1..500; print scalar(keys %h), qq(\\n)"], []),
        ("exceptions", [exceptions], []),
        ("leaks_cxx", [leaks_cxx], []),
        ("signals", [signals], []),
        ("threads", [threads], []),
        ("forks -f", [forks], ["-f"]),
    ]
    env = dict(os.environ, FT_UNWIND_VERIFY="1")
    total = by_rules = in_process = 0
    with h.TempDir() as tmp:
        for name, cmd, extra in cases:
            if not shutil.which(cmd[0]) and not os.path.exists(cmd[0]):
                ck.skip(name, f"{cmd[0]} not installed")
                continue
            out = os.path.join(tmp, name.split()[0])
            os.makedirs(out)
            untraced = h.run(cmd)
            res = h.run([h.functracer(), "-q", "--stats", "-e", "memtrace", "-b", "32", "--uncompressed", "-o", out] + extra + cmd,
                        timeout=600, env=env)
            ck.check_eq(res.status, untraced.status, f"{name}: exit status under functracer")
            ck.check_eq(res.stdout, untraced.stdout, f"{name}: stdout under functracer")
            m = STATS.search(res.err)
            if not ck.check(m, f"{name}: no backtrace summary with checks in --stats: {res.err!r}"):
                continue
            n, rules, checked, differed = (int(g) for g in m.groups())
            print(f"{name}: {n} backtraces, {rules} through frame rules, {checked} checked, {differed} differed")
            ck.check(n > 0, f"{name}: no backtraces taken")
            ck.check_eq(checked, rules, f"{name}: every backtrace through the rules is checked")
            ck.check_eq(differed, 0, f"{name}: backtraces that differ from libunwind's")
            ck.check("differs from libunwind" not in res.err, f"{name}: a difference was reported: {res.err!r}")
            total += n
            by_rules += rules
            ip = IN_PROCESS.search(res.err)
            if ip:
                walked, walk_differed = int(ip.group(1)), int(ip.group(2))
                print(f"{name}: {walked} backtraces walked in the process checked, {walk_differed} differed")
                ck.check_eq(walk_differed, 0, f"{name}: backtraces walked in the process that differ from libunwind's")
                in_process += walked
    print(f"all: {total} backtraces, {by_rules} through frame rules alone, {in_process} walked in the process")
    if os.environ.get("FT_FAST_PATH") != "0":
        ck.check(in_process > 0, "no backtrace walked in the process was checked (is the recorder off?)")
    ck.check(total > 0 and by_rules >= 0.9 * total,
             f"only {by_rules} of {total} backtraces walked through frame rules")
    ck.finish()


if __name__ == "__main__":
    main()

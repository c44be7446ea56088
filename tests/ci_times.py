#!/usr/bin/env python3
"""The time of every test of a run, from meson's log, as the table of tests/README.md.

usage: tests/ci_times.py BUILDDIR TESTLOG.json [BEFORE.json] [--top N]

TESTLOG.json is a log of `meson test` in BUILDDIR: .ci/run keeps the default tier's
as BUILDDIR/meson-logs/testlog-default.json (the slow tier then writes testlog.json).
With BEFORE.json (the log of an earlier run), the table has both times. Rows are
sorted by the longer of the two; serial tests (is_parallel false, from `meson
introspect --tests BUILDDIR`: they run alone, so their time adds to the suite's
wall time) are marked, and the totals say how long the serial and the parallel
tests took.
"""

import json
import subprocess
import sys


def load(path, serial_names):
    """{test name: (seconds, result, serial)}"""
    tests = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            name = t["name"].split(" / ", 1)[-1]
            tests[name] = (float(t["duration"]), t["result"], name in serial_names)
    return tests


def main(argv):
    top = None
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    intro = json.loads(subprocess.check_output(["meson", "introspect", "--tests", argv[1]]))
    serial_names = {t["name"] for t in intro if not t.get("is_parallel", True)}
    after = load(argv[2], serial_names)
    before = load(argv[3], serial_names) if len(argv) == 4 else {}
    names = sorted(set(after) | set(before),
                   key=lambda n: -max(after.get(n, (0,))[0], before.get(n, (0,))[0]))
    if before:
        print("| test | serial | before (s) | after (s) |")
        print("|---|---|---:|---:|")
    else:
        print("| test | serial | seconds | result |")
        print("|---|---|---:|---|")
    for n in names[:top]:
        a = after.get(n)
        b = before.get(n)
        serial = "yes" if (a or b)[2] else ""
        if before:
            fmt = lambda t: f"{t[0]:.1f}" if t else "-"  # noqa: E731
            print(f"| `{n}` | {serial} | {fmt(b)} | {fmt(a)} |")
        else:
            print(f"| `{n}` | {serial} | {a[0]:.1f} | {a[1]} |")
    for label, tests in (("before", before), ("after", after)):
        if not tests:
            continue
        ser = sum(t[0] for t in tests.values() if t[2])
        par = sum(t[0] for t in tests.values() if not t[2])
        print(f"\n{label}: {len(tests)} tests, serial {ser:.0f} s, parallel {par:.0f} s "
              f"(on two processes about {ser + par / 2:.0f} s of wall time)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

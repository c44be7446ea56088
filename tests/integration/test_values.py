#!/usr/bin/env python3
"""Argument and return values shown by type (tests/progs/floats.c).

usage: test_values.py EXECUTABLE

The program calls fl_scale(3, 1.5, "abc", 0.25f) -> 4.75, fl_half(5.0f) -> 2.5 and
fl_neg(-7, 200) -> -193. Both the live call log (no -o) and functracer-postproc tree
must show exactly these values: integers by size and signedness, the string, and the
float/double arguments and returns taken from the floating-point registers.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

EXPECTED = [
    'fl_scale(3, 1.5, "abc", 0.25) = 4.75',
    "fl_half(5) = 2.5",
    "fl_neg(-7, 200) = -193",
]


def main():
    ck = h.Checker("values")
    binary = os.path.abspath(sys.argv[1])
    ft = h.functracer()
    pp = h.postproc()
    live = h.run([ft, "-a", "fl_*", binary])
    ck.check(live.status == 0, f"live run failed\n{live.describe()}")
    for line in EXPECTED:
        ck.check(any(l.endswith("] " + line) for l in live.err.splitlines()),
                 f"live call log lacks {line!r}\n{live.err}")
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        res = h.run([ft, "-q", "-a", "fl_*", "--uncompressed", "-o", out, binary])
        ck.check(res.status == 0, f"traced run failed\n{res.describe()}")
        traces = [os.path.join(out, f) for f in sorted(os.listdir(out))]
        tree = h.run([pp, "tree", "--no-callsite"] + traces)
        ck.check(tree.status == 0, f"tree failed\n{tree.describe()}")
        lines = [l.strip() for l in tree.out.splitlines()]
        for line in EXPECTED:
            ck.check(line in lines, f"tree lacks {line!r}\n{tree.out}")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

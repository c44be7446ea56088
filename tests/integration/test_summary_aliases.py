#!/usr/bin/env python3
"""functracer -c names a function reached under several symbols at one address as
ltrace -c does (tests/progs/aliases.c).

usage: test_summary_aliases.py EXECUTABLE

glibc defines puts and _IO_puts, free, cfree and __libc_free, fopen, fopen64 and
_IO_fopen, ... at one address each. `functracer -c -l libc.so --from-program` must
count each call under the name the program calls (fopen64 when it is built with
_FILE_OFFSET_BITS=64), with the count the program states ("calls NAME=N"), and every function
`ltrace -c` lists must be in functracer's table with the same count: no alias name
instead (_IO_puts), no count split between two names. Without ltrace the test is
skipped loudly (SKIP).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d*\s+(\d+)\s+(?:\d+\s+)?(\S+)\s*$")


def summary_counts(text):
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(2) != "total":
            out[m.group(2)] = int(m.group(1))
    return out


def main():
    ck = h.Checker("summary-aliases")
    h.require_tools("summary-aliases", ["ltrace"], "ltrace")
    exe = os.path.abspath(sys.argv[1])
    ft = h.functracer()
    plain = h.run([exe])
    ck.check(plain.status == 0, f"the program failed\n{plain.describe()}")
    line = next((l for l in plain.out.splitlines() if l.startswith("calls ")), "")
    expected = {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}
    ck.check(len(expected) == 6, f"no calls line\n{plain.out}")

    res = h.run([ft, "-c", "-l", "libc.so", "--from-program", exe], timeout=h.TRACED_TIMEOUT)
    ck.check(res.status == 0, f"-c run failed\n{res.describe()}")
    ours = summary_counts(res.err)
    for name, n in expected.items():
        ck.check_eq(ours.get(name), n, f"-c calls of {name} (the program's count)\n{res.err}")
    for alias in ("_IO_puts", "__libc_free", "cfree", "__libc_malloc", "_IO_fopen", "__snprintf", "_IO_fclose"):
        ck.check(alias not in ours, f"-c counts calls under the alias {alias}\n{res.err}")

    lt = h.run(["ltrace", "-c", exe], timeout=h.TRACED_TIMEOUT)
    ck.check(lt.status == 0, f"ltrace -c failed\n{lt.describe()}")
    theirs = summary_counts(lt.err + lt.out)
    ck.check(set(expected) <= set(theirs), f"ltrace -c lacks some of {sorted(expected)}\n{lt.describe()}")
    for name, n in sorted(theirs.items()):
        ck.check_eq(ours.get(name), n, f"-c calls of {name}: functracer vs ltrace -c\n{res.err}\n{lt.err}")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

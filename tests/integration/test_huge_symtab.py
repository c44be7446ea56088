#!/usr/bin/env python3
"""Huge symbol tables: a program with 200,000 functions (f_0 .. f_199999, generated
assembly, tests/progs/gen_huge.py) linked with a library of 100,000 more (g_0 ..
g_99999) starts quickly under functracer and is traced exactly.

usage: test_huge_symtab.py HUGE_EXECUTABLE

The program (tests/progs/huge_main.c) checks every result and prints its counts:
"calls f_12345=3 f_199999=5 g_54321=2 g_99999=1" for its direct calls and
"range f 10000 20000 1" for the calls it makes through its table (each of f_10000
.. f_19999 once, f_12345 among them).

  * two functions: -a 'f_12345,f_199999' records exactly their calls (4 and 5) and
    nothing else; functracer's start-up cost (traced run time minus untraced run
    time, with only 9 traced calls) is printed and must stay under
    STARTUP_LIMIT seconds;
  * a pattern matching 122,222 functions: -a 'f_1*,g_5*' (111,111 in the program,
    11,111 in the library): `calls --json` has exactly the calls the program made,
    one entry per function called (10,002) and no other.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

STARTUP_LIMIT = 10.0   # seconds, generous for a busy 2-core VM
TIMEOUT = 120


def expected_counts(out):
    """name -> calls from the program's own lines."""
    exp = h.parse_expectations(out)
    counts = dict(exp.calls)
    ranges = [l.split() for l in out.splitlines() if l.startswith("range ")]
    for _, prefix, lo, hi, n in ranges:
        for i in range(int(lo), int(hi)):
            name = f"{prefix}_{i}"
            counts[name] = counts.get(name, 0) + int(n)
    return counts


def matches(name, patterns):
    import fnmatch
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def traced_counts(ck, label, outdir):
    files = sorted(os.path.join(outdir, f) for f in os.listdir(outdir)) if os.path.isdir(outdir) else []
    if not ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
        return None
    funcs = h.calls_report(ck, files)
    if funcs is None:
        return None
    got = {}
    for f in funcs:
        name = h.base_name(f["name"])
        got[name] = got.get(name, 0) + int(f["calls"])
    return got


def compare(ck, label, got, want):
    missing = {k: v for k, v in want.items() if got.get(k) != v}
    extra = {k: v for k, v in got.items() if k not in want}
    ck.check(not missing and not extra,
             f"{label}: calls differ from the program's own counts: {len(missing)} wrong or missing "
             f"(e.g. {dict(list(missing.items())[:5])} -> {[got.get(k) for k in list(missing)[:5]]}), "
             f"{len(extra)} not called (e.g. {dict(list(extra.items())[:5])})")
    print(f"{label}: {len(got)} functions with calls, {sum(got.values())} calls "
          f"(want {len(want)}, {sum(want.values())})")


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    prog = sys.argv[1]
    ck = h.Checker("huge-symtab")
    start = time.monotonic()
    untraced = [h.run([prog], timeout=TIMEOUT) for _ in range(2)]
    for r in untraced:
        if not ck.check(r.status == 0 and not r.timed_out, f"untraced run failed\n{r.describe()}"):
            ck.finish()
    base = min(r.seconds for r in untraced)
    out = untraced[0].out
    all_counts = expected_counts(out)
    print(f"untraced: {base:.3f}s, {len(all_counts)} functions called, {sum(all_counts.values())} calls")

    with h.TempDir() as tmp:
        for label, patterns in (("two functions", ["f_12345", "f_199999"]),
                                ("122,222 functions", ["f_1*", "g_5*"])):
            outdir = os.path.join(tmp, label.split()[0])
            t = h.trace([prog], patterns=",".join(patterns), outdir=outdir, timeout=TIMEOUT)
            r = t.result
            print(f"{label}: traced run {r.seconds:.3f}s, start-up cost about {r.seconds - base:.3f}s")
            if not ck.check(r.status == 0 and not r.timed_out, f"{label}: traced run failed\n{r.describe()}"):
                continue
            ck.check_eq(r.out, out, f"{label}: traced stdout differs from untraced")
            ck.check_eq(r.err, "", f"{label}: functracer said something (with -q)")
            if len(patterns) == 2 and not patterns[0].endswith("*"):
                ck.check(r.seconds - base < STARTUP_LIMIT,
                         f"{label}: start-up took {r.seconds - base:.2f}s (limit {STARTUP_LIMIT}s)")
            want = {k: v for k, v in all_counts.items() if matches(k, patterns)}
            got = traced_counts(ck, label, outdir)
            if got is not None:
                compare(ck, label, got, want)
    print(f"run time {time.monotonic() - start:.1f}s")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

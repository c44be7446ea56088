#!/usr/bin/env python3
"""Programs nobody here wrote must run unchanged under functracer.

Each program runs with a pattern that matches nothing and with patterns that
match functions it really calls (its own exported ones, its PLT imports, libc
functions including IFUNCs such as strlen, fork in a shell whose children are
not traced). Output and exit status must be the untraced ones, and the trace
must be balanced."""

import fnmatch
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

NOMATCH = "xyz_nomatch_*"

CASES = [
    # (label, argv, patterns that match functions the program calls, stdin)
    ("ls", ["ls", "-l", "/"],
     "_obstack_*,strlen,readdir*,strcoll,malloc,free,fwrite_unlocked,__errno_location", None),
    ("sort", ["sort", "@SORT_INPUT@"],
     "strcoll,memcmp,qsort,malloc,free,_obstack_*,fwrite_unlocked", None),
    ("sort-stdin", ["sort", "-n", "-r"], "strcoll,memcmp,malloc,free,memchr", "@SORT_DATA@"),
    ("sh-pipe", ["sh", "-c", "echo a | tr a b"],
     "fork,wait3,waitpid,malloc,strlen,strchr,_setjmp,pipe", None),
    ("sh-sigpipe", ["sh", "-c", "yes | head -n 3"], "malloc,fork,wait3,strlen", None),
    ("sh-loop", ["sh", "-c", "i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo $i; done | tr 1 x"],
     "fork,wait3,malloc,free,strlen,strchr", None),
    # Every function of libc (IFUNCs included): thousands of breakpoints.
    ("ls-libc", ["ls", "-l", "/"], "*@libc.so", None),
    ("sort-libc", ["sort", "@SORT_INPUT@"], "*@libc.so", None),
    ("python3", ["python3", "-c", "import json; d = {str(i * i % 97): i for i in range(500)}; "
                 "print(json.dumps(sorted(d.items())[:20]))"],
     "PyDict_*,PyUnicode_*,PyLong_FromLong,malloc,free,strlen,memcpy,memmove", None),
]

# With -f: the children (forked shells, exec'd tr/ls/sort) are traced too, one
# trace file per process.
FOLLOW_CASES = [
    ("sh-pipe-f", ["sh", "-c", "echo a | tr a b; ls / > /dev/null"], "malloc,fork,strlen", None),
    ("sh-sort-f", ["sh", "-c", "sort -n | head -n 3"], "strcoll,memcmp,malloc,free", "@SORT_DATA@"),
    ("sh-libc-f", ["sh", "-c", "echo a | tr a b"], "*@libc.so", None),
]


def sort_data():
    # Deterministic pseudo-random lines.
    x = 12345
    lines = []
    for i in range(3000):
        x = (x * 1103515245 + 12345) % (1 << 31)
        lines.append(f"{x % 100000} item {i} {'abcdefghij'[x % 10] * (x % 7 + 1)}")
    return ("\n".join(lines) + "\n").encode()


def resolve(argv, program_path):
    out = []
    for a in argv:
        out.append(program_path if a == "@SORT_INPUT@" else a)
    # The system's python3, not a wrapper script that may come first in PATH.
    exe = "/usr/bin/python3" if out[0] == "python3" else shutil.which(out[0])
    return [exe or out[0]] + out[1:]


def normalize(label, data):
    """/proc's link count in `ls -l /` is the number of processes, which a
    tracer running next to ls changes; mask it."""
    if not label.startswith("ls"):
        return data
    return re.sub(rb"(?m)^(\S+\s+)\d+(\s.*\sproc)$", rb"\1N\2", data)


def one(ck, label, argv, patterns, stdin, tmp, expect_calls, follow=False):
    """Untraced, traced, untraced again; the traced run must match one of the
    untraced ones (ls -l / shows /tmp, which other processes keep changing)."""
    for attempt in range(3):
        before = h.run(argv, stdin=stdin)
        outdir = os.path.join(tmp, f"{label}-{attempt}-{'match' if expect_calls else 'nomatch'}")
        tr = h.trace(argv, patterns, outdir, stdin=stdin, extra=["-f"] if follow else [])
        after = h.run(argv, stdin=stdin)
        res = tr.result
        same = [u for u in (before, after)
                if normalize(label, u.stdout) == normalize(label, res.stdout) and
                u.stderr == h.without_gaps(res.stderr) and u.status == res.status]
        if same or res.timed_out or before.stdout == after.stdout:
            break
        print(f"{label}: untraced runs differ from each other, retrying")
    what = f"{label} {'-f ' if follow else ''}-a {patterns}"
    print(f"=== {what}: traced {res.seconds:.2f}s, untraced {before.seconds:.2f}s")
    if not ck.check(not res.timed_out, f"{what}: timed out\n{res.describe()}"):
        return
    ck.check(before.status == 0, f"{what}: untraced run failed\n{before.describe()}")
    if not same:
        ck.fail(f"{what}: traced run differs from the untraced run (status "
                f"{before.status} vs {res.status})\n--- untraced stdout ---\n"
                f"{before.out[:2000]}\n--- untraced stderr ---\n{before.err[:1000]}\n"
                f"{res.describe()}")
    if not ck.check(tr.files, f"{what}: no trace file in {outdir}\n{res.describe()}"):
        return
    if follow:
        ck.check(len(tr.files) > 1, f"{what} -f: only {len(tr.files)} trace file(s) for a shell "
                 f"that starts children: {[os.path.basename(f) for f in tr.files]}")
        print(f"-f: {len(tr.files)} trace files")
    records = h.dump_records(ck, tr.files)
    if records is None:
        return
    a = h.analyze(records)
    h.report_problems(ck, a, what)
    # NAME@LIB: the name part (NAME@plt names a PLT stub and stays whole).
    pats = [p if "@" not in p or p.endswith("@plt") else p.rsplit("@", 1)[0]
            for p in patterns.split(",")]
    called = {n: c for n, c in a.calls.items()
              if any(fnmatch.fnmatchcase(str(n), p) for p in pats)}
    # An IFUNC may be reported under its implementation's name (__strlen_avx2
    # for strlen); anything that does not even contain a pattern's text is wrong.
    stems = [p.strip("*") for p in pats if p.strip("*")]
    others = {n: c for n, c in a.calls.items()
              if n not in called and not any(s in str(n) for s in stems)}
    ck.check(not others, f"{what}: calls of functions no pattern asked for: {others}")
    if expect_calls:
        ck.check(sum(called.values()) > 0, f"{what}: no call recorded for any of {patterns}")
        print(f"calls: {dict(sorted(called.items()))}")
    else:
        ck.check(not a.calls, f"{what}: calls recorded although nothing matches: {dict(a.calls)}")
    funcs = h.calls_report(ck, tr.files)
    if funcs is not None:
        for n, c in called.items():
            ck.check_eq(h.find_calls_entry(funcs, n), c, f"{what}: calls --json count of {n}")


def main():
    ck = h.Checker("real-programs")
    with h.TempDir() as tmp:
        sort_path = os.path.join(tmp, "sort-input.txt")
        data = sort_data()
        with open(sort_path, "wb") as f:
            f.write(data)
        for label, argv, patterns, stdin in CASES:
            argv = resolve(argv, sort_path)
            stdin_bytes = data if stdin == "@SORT_DATA@" else None
            if not os.path.exists(argv[0]):
                ck.skip(label, f"{argv[0]} not installed")
                continue
            one(ck, label, argv, NOMATCH, stdin_bytes, tmp, expect_calls=False)
            one(ck, label, argv, patterns, stdin_bytes, tmp, expect_calls=True)
        for label, argv, patterns, stdin in FOLLOW_CASES:
            argv = resolve(argv, sort_path)
            stdin_bytes = data if stdin == "@SORT_DATA@" else None
            one(ck, label, argv, patterns, stdin_bytes, tmp, expect_calls=True, follow=True)
    ck.finish()


if __name__ == "__main__":
    main()

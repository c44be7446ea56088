#!/usr/bin/env python3
"""The two ways of catching returns agree: --returns=stack and --returns=ret-sites
on one tracee program of tests/progs.

usage: test_ret_sites.py PROGRAM VARIANT EXECUTABLE

For each way, as test_prog.py does for the default one: the traced run's output
and exit status equal the untraced run's, every call is closed by one return or
unwound record in LIFO order, and the call and unwound counts per function are
the program's own. Between the two ways: the same call, return and unwound
records, in the same order with the same depths and return values, thread by
thread, except for functions that end in a tail jump (doc/functracer.1,
--returns): with ret-sites such a function returns at its jump, so for programs
whose -O2 code has tail jumps only the return values of the other functions
are compared (as multisets). Programs whose records depend on when signals
arrive (signals) are checked against their own counts only.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import test_prog  # noqa: E402

MODES = ("stack", "ret-sites")
# glibc's setjmp family ends in tail jumps (_setjmp and setjmp to __sigsetjmp, that one
# to __sigjmp_save), at every optimisation level of the program.
LIBC_TAIL_JUMPS = {"_setjmp", "setjmp", "__sigsetjmp", "sigsetjmp"}
# Programs whose records depend on when signals arrive: each way is checked against
# the program's own counts alone.
ASYNC = {"signals"}


def events(records):
    """tid -> [(type, function, depth, reason or retval)] of call/return/unwound."""
    out = collections.defaultdict(list)
    for r in records:
        t = r.get("type")
        if t not in ("call", "return", "unwound"):
            continue
        what = r.get("reason") if t == "unwound" else r.get("retval") if t == "return" else None
        out[r.get("tid")].append((t, h.base_name(h.record_function(r)), r.get("depth"), what))
    return out


def trace_mode(ck, label, binary, args, patterns, untraced, exp, mode):
    with h.TempDir() as tmp:
        outdir = os.path.join(tmp, "traces")
        tr = h.trace([binary] + args, patterns, outdir, extra=[f"--returns={mode}"])
        res = tr.result
        same = (res.status == untraced.status and res.stdout == untraced.stdout
                and h.without_gaps(res.stderr) == untraced.stderr)
        if not ck.check(same and not res.timed_out,
                        f"{label} {mode}: traced run differs from the untraced one\n"
                        f"untraced:\n{untraced.describe(1500)}\ntraced:\n{res.describe(1500)}"):
            return None
        files = h.trace_files(outdir)
        if not ck.check(len(files) == 1, f"{label} {mode}: want one trace file, got {files}"):
            return None
        records = h.dump_records(ck, files)
        if records is None:
            return None
    a = h.analyze(records)
    h.report_problems(ck, a, f"{label} {mode}")
    for name, want in exp.calls.items():
        ck.check_eq(a.calls[name], want, f"{label} {mode}: calls of {name}")
    for reason, per in exp.unwound.items():
        for name, want in per.items():
            ck.check_eq(a.unwound[reason][name], want, f"{label} {mode}: {name} unwound ({reason})")
    print(f"{label} {mode}: {sum(a.calls.values())} calls, counts agree with the program's")
    return events(records)


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    prog_name, variant, binary = sys.argv[1:]
    binary = os.path.abspath(binary)
    prog = test_prog.PROGRAMS[prog_name]
    ck = h.Checker(f"ret-sites-{prog_name}-{variant}")
    for run in prog.runs:
        args = test_prog.expand_args(run.args)
        patterns = run.patterns or prog.patterns
        label = f"{prog_name}-{variant} {' '.join(args)}".strip()
        untraced = h.run([binary] + args)
        if not ck.check(untraced.status == run.status, f"{label}: untraced run\n{untraced.describe()}"):
            continue
        exp = h.parse_expectations(untraced.out)
        seqs = {m: trace_mode(ck, label, binary, args, patterns, untraced, exp, m) for m in MODES}
        if None in seqs.values():
            continue
        if prog_name in ASYNC:
            print(f"{label}: signals arrive at other points in the two runs: counts compared only")
            continue
        stack, sites = seqs["stack"], seqs["ret-sites"]
        tail = set(prog.tail_jumps) if variant.startswith("O2") else set()
        if run.patterns:
            tail |= {f for f in LIBC_TAIL_JUMPS if f in run.patterns.split(",")}
        if not tail:
            # Threads have other tids in the two runs: compare them in order of appearance.
            a, b = list(stack.values()), list(sites.values())
            ck.check_eq(len(a), len(b), f"{label}: threads with calls")
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    diff = next(k for k in range(min(len(x), len(y)) + 1)
                                if k == min(len(x), len(y)) or x[k] != y[k])
                    ck.fail(f"{label}: thread {i}: the records differ from record {diff} on:\n"
                            f"  stack:     {x[diff:diff + 4]}\n  ret-sites: {y[diff:diff + 4]}")
            print(f"{label}: same {sum(len(x) for x in a)} records in both ways")
        else:
            def values(seq):
                c = collections.Counter()
                for evs in seq.values():
                    c.update((e[1], e[3]) for e in evs if e[0] == "return" and e[1] not in tail)
                return c
            ck.check(values(stack) == values(sites),
                     f"{label}: return values of the functions without tail jumps differ:\n"
                     f"  stack only:     {sorted((values(stack) - values(sites)).items())[:5]}\n"
                     f"  ret-sites only: {sorted((values(sites) - values(stack)).items())[:5]}")
            print(f"{label}: same return values in both ways but for {sorted(tail)} (tail jumps)")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

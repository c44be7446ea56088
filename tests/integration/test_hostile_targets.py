#!/usr/bin/env python3
"""Hostile targets (tests/progs/hostile.c), one table of cases run in each build
variant given on the command line.

usage: test_hostile_targets.py VARIANT=EXECUTABLE...

For every case (and, where the case makes children, with and without -f):
  * untraced, the program ends as the case says (the oracle is the program: it
    checks itself and prints what it did);
  * traced with calltrace (-a 'hx_*', -q): the same stdout, stderr and exit status or
    death signal, within a time limit (a hang is a failure, never a hung test);
  * `dump --json`: every call closed once, depths consistent; call records per
    function and unwound records per reason equal the program's counts; the
    launched process's fate (exit status, or the killing signal and, for the stack
    overflow, the faulting address the program probed); signal records = the
    signals the program says were delivered to it; with -f one trace file
    per process holding that process's own counts, with its parent's pid, its exit
    status and, for a child that exec'd, its exec record;
  * `calls --json` agrees with the counts;
  * where the program allocates, the same under memtrace (the default plugin), whose
    alloc and free records of the program's block size equal its own account.
The stack overflow cases cannot print after the fault: their counts and the address
they fault at are in a file the program rewrites at every level.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

TRACED_LIMIT = 30  # seconds for one traced run; every case takes well under one
UNTRACED_LIMIT = 10
DEADLINE = 180  # for the whole test, under meson's timeout: a hang ends it with a message


class Case:
    def __init__(self, mode, status, follow=(False,), memtrace=False, countfile=False,
                 child_exits=None, execs=None, verbose_report=False):
        self.mode = mode
        self.status = status  # exit status, or 128+N for death by signal N
        self.follow = follow  # runs without and/or with -f
        self.memtrace = memtrace  # the program prints a "heap" line
        self.countfile = countfile  # counts in a file (stack overflow)
        self.child_exits = child_exits or {}  # -f: process label -> exit status
        self.execs = execs or {}  # -f: process label -> exec records (default 0)
        self.verbose_report = verbose_report  # also run without -q: the crash report


# Not here, a known limit (doc/internals.md, known limitations: breakpoints change
# SIGTRAP's state): a program that ignores SIGTRAP, or handles it and runs traced code
# with SIGTRAP blocked, dies of its next SIGTRAP under tracing.
CASES = [
    Case("abort-threads", 134, memtrace=True),
    Case("stackoverflow", 139, countfile=True, verbose_report=True),
    Case("stackoverflow-handled", 3, countfile=True),
    Case("stackoverflow-thread", 139, countfile=True),
    Case("fault-longjmp", 0, memtrace=True),
    Case("fault-longjmp-altstack", 0),
    Case("blocksig", 143),
    Case("ignoresig", 0),
    # kill(0, sig) reaches functracer too (same process group): not a request to it.
    Case("groupsig", 0),
    # The exec'ing thread becomes the process: one trace file, with or without -f.
    Case("exec-thread", 0, follow=(False, True), memtrace=True),
    Case("exec-thread-noleader", 0),
    Case("vfork-calls", 0, follow=(False, True), child_exits={"top/v1": 21, "top/v2": 22},
         execs={"top/v2": 1}),
    Case("clone-nostack", 0, follow=(False, True), child_exits={"top/c1": 30, "top/c2": 31}),
]


def read_countfile(ck, label, path):
    """(Expectations, probe address) from a stack overflow case's file."""
    try:
        with open(path, "rb") as f:
            text = f.read().rstrip(b"\0").decode("ascii")
    except (OSError, UnicodeDecodeError) as e:
        ck.fail(f"{label}: cannot read the program's count file {path}: {e}")
        return None, None
    exp = h.parse_expectations(text)
    m = re.search(r"^probe=(0x[0-9a-f]+)$", text, re.M)
    if not ck.check(exp.calls and m, f"{label}: count file holds {text!r}"):
        return None, None
    # Every level is still open when the program dies or its handler _exits.
    exp.unwound["exit"].update(exp.calls)
    return exp, int(m.group(1), 16)


def mode_args(case, tmp, tag):
    args = [case.mode]
    if case.countfile:
        args.append(os.path.join(tmp, f"counts-{tag}"))
    return args


def check_counts(ck, label, a, want, unwound, names):
    wrong = [f"{n}: program {want.get(n, 0)}, trace {a.calls[n]}" for n in names
             if a.calls[n] != want.get(n, 0)]
    ck.check(not wrong, f"{label}: call records differ from the program's counts:\n  " +
             "\n  ".join(wrong))
    reasons = set(unwound) | set(a.unwound)
    wrong = []
    for r in sorted(reasons, key=str):
        for n in names:
            w = unwound.get(r, {}).get(n, 0)
            g = a.unwound.get(r, {}).get(n, 0)
            if w != g:
                wrong.append(f"{n} reason {r}: program {w}, trace {g}")
    ck.check(not wrong, f"{label}: unwound records differ from the program's account:\n  " +
             "\n  ".join(wrong))
    return not wrong


def check_fate(ck, label, records, pid, status, fault_addr=None):
    exits = [r for r in records if r.get("type") == "exit" and r.get("pid") == pid]
    killed = [r for r in records if r.get("type") == "killed" and r.get("pid") == pid]
    if status < 128:
        if ck.check(len(exits) == 1 and not killed,
                    f"{label}: pid {pid}: want one exit record, got {exits} {killed}"):
            ck.check_eq(h._as_int(exits[0].get("status")), status, f"{label}: exit record status")
        return
    if not ck.check(len(killed) == 1 and not exits,
                    f"{label}: pid {pid}: want one killed record, got {exits} {killed}"):
        return
    ck.check_eq(h._as_int(killed[0].get("signal")), status - 128, f"{label}: killed record signal")
    if fault_addr is not None:
        ck.check_eq(h._as_int(killed[0].get("address")), fault_addr,
                    f"{label}: killed record fault address (the program's probe)")


def check_signals(ck, label, records, pid, text):
    """signal records of the launched process = the program's "signals" line, if any."""
    m = re.search(r"^signals((?: \d+=\d+)+)$", text, re.M)
    if not m:
        return
    want = {int(k): int(v) for k, v in (w.split("=") for w in m.group(1).split())}
    got = {}
    for r in records:
        if r.get("type") == "signal" and r.get("pid") == pid:
            sig = h._as_int(r.get("signal"))
            got[sig] = got.get(sig, 0) + 1
    if ck.check_eq(got, want, f"{label}: signal records by number"):
        print(f"signal records agree: {want}")


def check_per_process(ck, label, case, files, exp, names):
    """-f: one trace file per process, each with exactly one proc_calls line's counts."""
    want = exp.proc_calls
    ck.check(len(files) == len(want),
             f"{label}: {len(want)} processes, {len(files)} trace files "
             f"{[os.path.basename(f) for f in files]}")
    by_counts = {tuple(c.get(n, 0) for n in names): pl for pl, c in want.items()}
    ck.check(len(by_counts) == len(want), f"{label}: the program's processes print equal counts")
    found = {}  # label -> (pid, ppid, records)
    for f in files:
        records = h.dump_records(ck, [f])
        if records is None:
            continue
        a = h.analyze(records)
        h.report_problems(ck, a, f"{label} {os.path.basename(f)}")
        got = tuple(a.calls[n] for n in names)
        pl = by_counts.get(got)
        if not ck.check(pl is not None and pl not in found,
                        f"{label}: {os.path.basename(f)} holds counts {dict(zip(names, got))}, "
                        f"no process's (or a second file for one): {dict(want)}"):
            continue
        procs = [r for r in records if r.get("type") == "process"]
        pid = procs[0].get("pid") if procs else None
        found[pl] = (pid, procs[0].get("ppid") if procs else None, records)
    for pl, (pid, ppid, records) in found.items():
        parent = pl.rpartition("/")[0]
        if parent:
            ck.check(parent in found and found[parent][0] == ppid,
                     f"{label}: process {pl} (pid {pid}) has parent pid {ppid}, want the pid of "
                     f"{parent}")
            check_fate(ck, f"{label} {pl}", records, pid, case.child_exits.get(pl, 0))
        nexec = sum(1 for r in records if r.get("type") == "exec")
        ck.check_eq(nexec, case.execs.get(pl, 0), f"{label}: exec records of process {pl}")
    ck.check(set(found) == set(want), f"{label}: processes without a trace file: "
             f"{sorted(set(want) - set(found))}")


def check_heap(ck, label, records, untraced_out):
    m = re.search(r"^heap size=(\d+) allocs=(\d+) frees=(\d+)$", untraced_out, re.M)
    if not ck.check(m, f"{label}: the program printed no heap line"):
        return
    size, allocs, frees = (int(x) for x in m.groups())
    addrs = [h._as_int(r.get("address")) for r in records
             if r.get("type") == "alloc" and h._as_int(r.get("size")) == size]
    freed = sum(1 for r in records
                if r.get("type") == "free" and h._as_int(r.get("address")) in set(addrs))
    ck.check_eq(len(addrs), allocs, f"{label}: alloc records of {size} bytes")
    ck.check_eq(freed, frees, f"{label}: free records of those blocks")
    bad = [r for r in records if r.get("type") == "bad_free"]
    ck.check(not bad, f"{label}: bad_free records {bad[:3]}")


def run_case(ck, variant, binary, case, follow, tmp):
    label = f"{case.mode}-{variant}{' -f' if follow else ''}"
    print(f"=== {label}", flush=True)
    tag = f"{variant}-{int(follow)}"
    untraced = h.run([binary] + mode_args(case, tmp, tag + "-untraced"), timeout=UNTRACED_LIMIT)
    if not ck.check(untraced.status == case.status and not untraced.timed_out,
                    f"{label}: untraced run should end with status {case.status}\n"
                    f"{untraced.describe()}"):
        return
    outdir = os.path.join(tmp, f"traces-{tag}-{case.mode}")
    args = mode_args(case, tmp, tag + "-traced")
    tr = h.trace([binary] + args, "hx_*", outdir, extra=["-f"] if follow else [],
                 timeout=TRACED_LIMIT)
    res = tr.result
    print(f"traced in {res.seconds:.2f}s (untraced {untraced.seconds:.2f}s)", flush=True)
    if not ck.check(not res.timed_out, f"{label}: traced run hung (killed after "
                    f"{TRACED_LIMIT}s)\n{res.describe()}"):
        return
    ck.check(res.status == untraced.status and res.stdout == untraced.stdout and
             res.stderr == untraced.stderr,
             f"{label}: traced run differs from untraced\n--- untraced\n{untraced.describe()}\n"
             f"--- traced\n{res.describe()}")
    fault = None
    if case.countfile:
        exp, fault = read_countfile(ck, label, args[1])
        if exp is None:
            return
        if case.status < 128:
            fault = None  # the handler _exits: no killed record
    else:
        exp = h.parse_expectations(untraced.out)
    if not ck.check(exp.calls, f"{label}: no counts from the program\n{untraced.describe()}"):
        return
    names = sorted(set(exp.calls) | set(exp.follow_calls))
    want = dict(exp.calls)
    if follow and exp.follow_calls:
        want = dict(exp.follow_calls)
    ck.check(tr.files and (follow or len(tr.files) == 1),
             f"{label}: trace files {tr.files}\n{res.describe()}")
    records = h.dump_records(ck, tr.files)
    if not records:
        return
    a = h.analyze(records)
    h.report_problems(ck, a, label)
    ok = check_counts(ck, label, a, want, exp.unwound, names)
    pid = h.main_pid(records)
    check_fate(ck, label, records, pid, case.status, fault)
    check_signals(ck, label, records, pid, untraced.out)
    funcs = h.calls_report(ck, tr.files)
    if funcs is not None:
        wrong = [f"{n}: program {want.get(n, 0)}, calls --json {h.find_calls_entry(funcs, n)}"
                 for n in names if h.find_calls_entry(funcs, n) != want.get(n, 0)]
        ck.check(not wrong, f"{label}: calls --json differs:\n  " + "\n  ".join(wrong))
    if follow and exp.proc_calls:
        check_per_process(ck, label, case, tr.files, exp, names)
    if ok:
        print(f"counts agree: {want}", flush=True)

    if case.verbose_report and not follow:
        tr2 = h.trace([binary] + mode_args(case, tmp, tag + "-report"), "hx_*",
                      outdir + "-report", quiet=False, timeout=TRACED_LIMIT)
        err = tr2.result.err
        ck.check(tr2.result.status == case.status and "SIGSEGV" in err,
                 f"{label}: the crash report does not name SIGSEGV\n{tr2.result.describe()}")
        _, probe = read_countfile(ck, label, mode_args(case, tmp, tag + "-report")[1])
        if probe is not None:
            ck.check(f"{probe:#x}" in err, f"{label}: the crash report does not give the "
                     f"faulting address {probe:#x}\n{tr2.result.describe()}")

    if case.memtrace and not follow:
        mdir = outdir + "-memtrace"
        # no -e: memtrace is the default plugin
        tr3 = h.trace([binary] + mode_args(case, tmp, tag + "-memtrace"), None, mdir,
                      plugin=None, timeout=TRACED_LIMIT)
        r3 = tr3.result
        print(f"memtrace: traced in {r3.seconds:.2f}s", flush=True)
        if not ck.check(not r3.timed_out and r3.status == untraced.status and
                        r3.stdout == untraced.stdout and r3.stderr == untraced.stderr,
                        f"{label}: memtrace run differs from untraced\n{r3.describe()}"):
            return
        mrecs = h.dump_records(ck, tr3.files)
        if mrecs:
            check_heap(ck, f"{label} memtrace", mrecs, untraced.out)
            check_fate(ck, f"{label} memtrace", mrecs, h.main_pid(mrecs), case.status)


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    ck = h.Checker("hostile-targets")
    start = time.monotonic()
    with h.TempDir() as tmp:
        for arg in sys.argv[1:]:
            variant, _, binary = arg.partition("=")
            for case in CASES:
                for follow in case.follow:
                    if time.monotonic() - start > DEADLINE:
                        ck.fail(f"out of time after {DEADLINE}s: {case.mode}-{variant} and the "
                                f"cases after it not run")
                        ck.finish()
                    run_case(ck, variant, os.path.abspath(binary), case, follow, tmp)
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

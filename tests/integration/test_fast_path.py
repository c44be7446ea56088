#!/usr/bin/env python3
"""Calls recorded inside the traced process (doc/internals.md §8b, the default),
checked against the stop path (FT_FAST_PATH=0: every entry a breakpoint stop) on the same programs:

  * the same events: per thread, the sequence of call, return and unwound records
    (function, depth, return values, unwinding reason), for recursion, mutual
    recursion, tail calls, longjmp, C++ exceptions (also static), floats, unwinding,
    coroutines, threads, and fork children (-f);
  * signals: handlers run where the signal finds the thread (also inside the
    recorder), which depends on the stops, so each run is checked on its own: the
    program's counts and checks, no unwound record, returns in order;
  * cost: most calls are recorded without a stop (--stats), and there are far fewer
    stops than calls; fib(20) fills its thread's ring, and the calls that find it full
    are recorded too once it is copied out (only the thread's first call takes a stop);
  * the programs' own checks of every result, and stdout as untraced.

With --thread-pointer fs0, all of it again with the recorder reading the thread
pointer at fs:0 (FT_THREAD_POINTER=fs0), as it does on machines without FSGSBASE; on
such a machine the default run already does, and this one is skipped.

usage: test_fast_path.py [--thread-pointer fs0]   (programs from FT_PROGS_DIR)"""

import collections
import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from test_fast_returns import SAME_EVENTS, event_sequences  # noqa: E402
from test_prog import PROGRAMS  # noqa: E402

# Their return values hold pids and stack addresses, which differ between runs.
MORE_EVENTS = [
    # fib(20): 21,891 calls, more than a thread's ring holds (it fills, and the calls
    # that find it full go on once it is copied out: Tracer::retry_for_room).
    ("recursion-O2", ["20"], "fib", []),
    ("threads-O2", [], PROGRAMS["threads"].patterns, []),
    ("forks-O2", [], PROGRAMS["forks"].patterns, ["-f"]),
]
NO_VALUES = {"threads-O2", "forks-O2"}


def stats(err):
    """(ptrace stops, calls, entries patched, calls recorded in the process, lost)."""
    stops = re.search(r"([0-9]+) ptrace stops", err)
    calls = re.search(r"\(([0-9]+) calls,", err)
    rec = re.search(r"([0-9]+) function entries patched for the in-process recorder, [0-9]+ kept a breakpoint; "
                    r"([0-9]+) calls and [0-9]+ returns recorded in the process, ([0-9]+) lost", err)
    num = lambda m, i: int(m.group(i)) if m else 0  # noqa: E731
    return num(stops, 1), num(calls, 1), num(rec, 1), num(rec, 2), num(rec, 3)


def traced(ck, label, exe, args, patterns, outdir, fast, extra=()):
    env = dict(os.environ)
    if fast:
        env.pop("FT_FAST_PATH", None)  # the default
    else:
        env["FT_FAST_PATH"] = "0"
    cmd = [h.functracer(), "-e", "calltrace", "-a", patterns, "--uncompressed", "-o", outdir, "--stats", *extra,
           exe, *args]
    res = h.run(cmd, timeout=h.TRACED_TIMEOUT, env=env)
    ck.check(res.status == 0 and not res.timed_out, f"{label}: traced run failed\n{res.describe()}")
    return res


def first_difference(fast, slow):
    where = next((i for i, (a, b) in enumerate(zip(fast, slow)) if a != b), min(len(fast), len(slow)))
    a, b = (fast[where] if where < len(fast) else []), (slow[where] if where < len(slow) else [])
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"thread {where} differs at event {k}: in the process {a[max(0, k - 3):k + 3]}, " \
           f"stops {b[max(0, k - 3):k + 3]}"


def check_same_events(ck, tmp):
    runs = [(n, a, p, []) for n, a, p in SAME_EVENTS] + MORE_EVENTS
    recorded_total = 0
    for n, (name, args, patterns, extra) in enumerate(runs):
        exe = os.path.join(h.progs_dir(), name)
        label = " ".join([name] + extra + args)
        untraced = h.run([exe, *args])
        fo, so = os.path.join(tmp, f"same-{n}-fast"), os.path.join(tmp, f"same-{n}-slow")
        fres = traced(ck, label, exe, args, patterns, fo, True, extra)
        sres = traced(ck, label + " (stops)", exe, args, patterns, so, False, extra)
        ck.check_eq(fres.stdout, untraced.stdout, f"{label}: stdout, calls recorded in the process")
        ck.check_eq(sres.stdout, untraced.stdout, f"{label}: stdout, stops")
        fast, slow = event_sequences(ck, fo), event_sequences(ck, so)
        if name in NO_VALUES:
            fast, slow = ([[e[:3] for e in s] for s in seqs] for seqs in (fast, slow))
        if len(slow) > 1:  # threads, processes: each one's sequence, whatever the order
            fast, slow = sorted(fast), sorted(slow)
        nev = sum(len(s) for s in slow)
        _, _, patched, recorded, lost = stats(fres.err)
        recorded_total += recorded
        print(f"{label}: {nev} events in {len(slow)} threads; {patched} entries patched, {recorded} calls "
              f"recorded in the process, {lost} lost")
        ck.check(nev > 0, f"{label}: no events")
        ck.check_eq(lost, 0, f"{label}: events lost to full buffers")
        if fast != slow:
            ck.fail(f"{label}: {first_difference(fast, slow)}")
    ck.check(recorded_total > 1000, f"only {recorded_total} calls recorded in the process in all runs")


def check_signals(ck, tmp):
    """Handlers that run traced code wherever the signal lands: in a traced call, at its
    entry or return, inside the recorder's code (a storm of SIGALRM over a function
    called back to back). Where the handlers run depends on the stops, so each run is
    checked on its own: the program's checks and counts, no unwound record, and every
    return matching the innermost open call."""
    exe = os.path.join(h.progs_dir(), "signals-O2")
    patterns = PROGRAMS["signals"].patterns
    untraced = h.run([exe])
    want = h.parse_expectations(untraced.out).calls
    for fast in (True, False):
        label = "signals" + ("" if fast else " (stops)")
        out = os.path.join(tmp, "signals-" + ("fast" if fast else "slow"))
        res = traced(ck, label, exe, [], patterns, out, fast)
        ck.check_eq(res.stdout, untraced.stdout, f"{label}: stdout")
        calls = collections.Counter()
        problems = []
        for seq in event_sequences(ck, out):
            stack = []
            for ev in seq:
                if ev[0] == "call":
                    calls[ev[1]] += 1
                    stack.append(ev[1])
                elif ev[0] == "return":
                    if not stack or stack[-1] != ev[1]:
                        problems.append(f"return of {ev[1]} with {stack[-1:] or 'nothing'} open")
                    stack = stack[:-1]
                else:
                    problems.append(f"unwound {ev[1]} ({ev[3]})")
        ck.check_eq({n: calls[n] for n in want}, dict(want), f"{label}: calls of each function")
        ck.check(not problems, f"{label}: {len(problems)} wrong records, first: {problems[:5]}")
        print(f"{label}: {sum(calls.values())} calls ({calls['sg_leaf']} of sg_leaf during the storm), "
              f"{len(problems)} wrong records")


def check_cost(ck, tmp):
    exe = os.path.join(h.progs_dir(), "recursion-O2")
    res = traced(ck, "recursion (cost)", exe, ["20"], "fib", os.path.join(tmp, "cost"), True)
    stops, calls, patched, recorded, lost = stats(res.err)
    full = re.search(r"([0-9]+) recorded calls found their thread's buffer full", res.err)
    print(f"recursion 20, fib: {calls} calls, {recorded} recorded in the process, {stops} ptrace stops, "
          f"{full.group(1) if full else 0} found the buffer full")
    ck.check(patched >= 1, f"fib's entry was not patched:\n{res.err}")
    # Only the thread's first call takes a stop (it gets its ring there); a call that
    # finds the ring full (2 MB of records here: it fills) is recorded once the ring
    # is copied out.
    ck.check(calls > 20000 and recorded >= calls - 2, f"{recorded} of {calls} calls recorded in the process")
    ck.check(stops < calls // 20, f"{stops} ptrace stops for {calls} calls")
    ck.check_eq(lost, 0, "events lost to full buffers")


def leak_groups(ck, outdir):
    """leaks --json of a memtrace run: totals, and each group's kind, size and the
    functions of its frames (addresses differ between runs)."""
    res = h.run_postproc(["leaks", "--json", outdir])
    if not ck.check(res.status == 0, f"leaks --json {outdir}:\n{res.describe()}"):
        return None
    doc = json.loads(res.out)
    groups = sorted((g.get("kind"), g["bytes"], g["blocks"], tuple(f.get("function") for f in g.get("frames", [])))
                    for g in doc["groups"])
    return doc["leaked_bytes"], doc["leaked_blocks"], groups


def check_memtrace(ck, tmp):
    """memtrace: the calls of the allocators recorded in the process with their call
    stacks (walked there) give the same leaks, kinds and stacks as the stop path."""
    for name in ("leaks-O2", "leaks_cxx-O2", "threads-O2"):
        exe = os.path.join(h.progs_dir(), name)
        if not os.path.exists(exe):
            continue
        runs = []
        for fast in (True, False):
            out = os.path.join(tmp, f"mem-{name}-{int(fast)}")
            env = dict(os.environ, FT_FAST_PATH="1" if fast else "0")  # 1: as the default, explicitly
            res = h.run([h.functracer(), "-e", "memtrace", "-b", "12", "--uncompressed", "-o", out, "--stats", exe],
                        timeout=h.TRACED_TIMEOUT, env=env)
            ck.check(res.status == 0 and not res.timed_out, f"memtrace {name}: traced run failed\n{res.describe()}")
            runs.append((res, leak_groups(ck, out)))
        (fres, fast), (_, slow) = runs
        _, _, patched, recorded, lost = stats(fres.err)
        print(f"memtrace {name}: {patched} entries patched, {recorded} calls recorded in the process; "
              f"{fast[1] if fast else '?'} blocks leaked")
        ck.check(recorded > 0, f"memtrace {name}: no call recorded in the process\n{fres.err}")
        ck.check_eq(lost, 0, f"memtrace {name}: events lost")
        ck.check_eq(fast, slow, f"memtrace {name}: leaks recorded in the process against the stop path")


def has_fsgsbase():
    """Whether the kernel lets programs run rdfsbase (AT_HWCAP2 & HWCAP2_FSGSBASE)."""
    with open("/proc/self/auxv", "rb") as f:
        auxv = f.read()
    for i in range(0, len(auxv) - 15, 16):
        key, val = struct.unpack_from("<QQ", auxv, i)
        if key == 26:  # AT_HWCAP2
            return bool(val & 2)
    return False


def main():
    if sys.argv[1:] == ["--thread-pointer", "fs0"]:
        if not has_fsgsbase():
            print("SKIP: this machine has no FSGSBASE: the fast-path test already ran the recorder reading the "
                  "thread pointer at fs:0")
            sys.exit(77)
        os.environ["FT_THREAD_POINTER"] = "fs0"
    ck = h.Checker("fast-path" + (" (fs:0)" if os.environ.get("FT_THREAD_POINTER") else ""))
    with h.TempDir() as tmp:
        check_cost(ck, tmp)
        check_memtrace(ck, tmp)
        check_same_events(ck, tmp)
        check_signals(ck, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

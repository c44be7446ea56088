#!/usr/bin/env python3
"""Returns handled inside the traced process (doc/internals.md, "Returns without a
stop") of calls whose entry is a stop (FT_FAST_PATH=0, as for the functions the
in-process recorder refuses), checked against the trampoline's stop per return
(FT_FAST_RETURNS=0):

  * cost: a traced call is one stop, where the trampoline needs two (--stats);
  * the same events: for single-threaded programs, the sequence of call, return
    and unwound records (function, depth, return values in rax and xmm0, unwinding
    reason) is the same either way; for threads, each thread's sequence;
  * time: a return's time stamp is when the function returned, not when
    functracer next stopped the process (fastret timing: 50 ms in the function,
    then 400 ms without any traced call);
  * the programs' own checks of every return value, and stdout as untraced.

usage: test_fast_returns.py   (programs from FT_PROGS_DIR)"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from test_prog import PROGRAMS  # noqa: E402

# (executable, arguments, patterns): deterministic programs and runs.
SAME_EVENTS = [
    ("fastret-O2", ["values"], "fr_*"),
    ("fastret-O2", ["deep"], "fr_*"),
    ("fastret-O0", ["threads"], "fr_*"),
    ("recursion-O2", ["18"], PROGRAMS["recursion"].patterns),
    ("mutual-O2", [], PROGRAMS["mutual"].patterns),
    ("tailcall-O2", [], PROGRAMS["tailcall"].patterns),
    ("longjmp-O2", [], PROGRAMS["longjmp"].patterns),
    ("longjmp-O0", [], PROGRAMS["longjmp"].runs[1].patterns),
    ("exceptions-O2", [], PROGRAMS["exceptions"].patterns),
    ("exceptions-O2-static", [], PROGRAMS["exceptions"].patterns),
    ("floats-O2", [], PROGRAMS["floats"].patterns),
    ("unwinding-O2", [], PROGRAMS["unwinding"].patterns),
    ("coroutine-O2", [], "co_*"),
]


def stats_numbers(err):
    """(stops, returns hooked in the process, of those returned without a stop)."""
    stops = re.search(r"([0-9]+) ptrace stops", err)
    fast = re.search(r"([0-9]+) returns hooked in the process, ([0-9]+) of them returned without a stop", err)
    return (int(stops.group(1)) if stops else None,
            int(fast.group(1)) if fast else 0, int(fast.group(2)) if fast else 0)


def traced(ck, label, exe, args, patterns, outdir, fast, extra=()):
    # Entries keep their breakpoint (FT_FAST_PATH=0): these are the returns of calls
    # that reach functracer by a stop, as for the functions the recorder refuses.
    env = dict(os.environ, FT_FAST_PATH="0")
    if not fast:
        env["FT_FAST_RETURNS"] = "0"
    cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", patterns, "--uncompressed", "-o", outdir, "--stats", *extra, exe, *args]
    res = h.run(cmd, timeout=h.TRACED_TIMEOUT, env=env)
    ck.check(res.status == 0 and not res.timed_out, f"{label}: traced run failed\n{res.describe()}")
    return res


def event_sequences(ck, outdir):
    """Per thread (in order of first appearance), the events that must not depend
    on how returns are caught."""
    recs = h.dump_records(ck, h.trace_files(outdir)) or []
    threads = {}
    for r in recs:
        t = r.get("type")
        if t == "call":
            ev = ("call", r.get("function"), r.get("depth"))
        elif t == "return":
            # rax is whatever the function left there when it returns a float (often
            # an address, which differs between runs)
            rv = r.get("retval") if r.get("fretval") is None else None
            ev = ("return", r.get("function"), r.get("depth"), rv, r.get("fretval"))
        elif t == "unwound":
            ev = ("unwound", r.get("function"), r.get("depth"), r.get("reason"))
        else:
            continue
        threads.setdefault((r.get("pid"), r.get("tid")), []).append(ev)
    return list(threads.values())


def check_cost(ck, tmp):
    exe = os.path.join(h.progs_dir(), "fastret-O2")
    untraced = h.run([exe])
    ck.check(untraced.status == 0, f"fastret untraced:\n{untraced.describe()}")
    calls = h.parse_expectations(untraced.out).calls
    total = sum(calls.values())
    fast = traced(ck, "fastret (in the process)", exe, [], "fr_*", os.path.join(tmp, "cost-fast"), True)
    slow = traced(ck, "fastret (trampoline)", exe, [], "fr_*", os.path.join(tmp, "cost-slow"), False)
    ck.check_eq(fast.stdout, untraced.stdout, "fastret stdout, traced (returns in the process)")
    ck.check_eq(slow.stdout, untraced.stdout, "fastret stdout, traced (trampoline)")
    fstops, hooked, without = stats_numbers(fast.err)
    sstops, shooked, _ = stats_numbers(slow.err)
    print(f"fastret: {total} traced calls; returns in the process: {fstops} stops, {hooked} hooked, "
          f"{without} without a stop; trampoline: {sstops} stops")
    if not ck.check(fstops is not None and sstops is not None, f"no stop counts:\n{fast.err}\n{slow.err}"):
        return
    ck.check_eq(shooked, 0, "returns hooked in the process with FT_FAST_RETURNS=0")
    ck.check(sstops >= 2 * total, f"trampoline: {sstops} stops for {total} calls, fewer than two per call")
    # One stop per call; fr_deep's recursion goes deeper than a thread's record block,
    # so some of its returns may take the trampoline: at most one more stop per fr_deep.
    ck.check(fstops <= total + calls.get("fr_deep", 0) + 200,
             f"returns in the process: {fstops} stops for {total} traced calls "
             f"({calls.get('fr_deep', 0)} of them fr_deep)")
    ck.check(without >= total - calls.get("fr_deep", 0),
             f"only {without} of {total} returns came back without a stop")
    ck.check(without <= hooked, f"{without} returns without a stop, but {hooked} hooked")


def check_timing(ck, tmp):
    exe = os.path.join(h.progs_dir(), "fastret-O2")
    out = os.path.join(tmp, "timing")
    traced(ck, "fastret timing", exe, ["timing"], "fr_*", out, True)
    recs = h.dump_records(ck, h.trace_files(out)) or []
    timed = [r for r in recs if r.get("function") == "fr_timed" and r.get("type") in ("call", "return")]
    kinds = [r["type"] for r in timed]
    if not ck.check(kinds == ["call", "return", "call", "return"], f"fr_timed records: {kinds}"):
        return
    ms = [(timed[i + 1]["ts_ns"] - timed[i]["ts_ns"]) / 1e6 for i in (0, 2)]
    gap = (timed[2]["ts_ns"] - timed[1]["ts_ns"]) / 1e6
    print(f"fr_timed(50) took {ms[0]:.1f} ms, fr_timed(5) {ms[1]:.1f} ms, {gap:.1f} ms between them")
    ck.check(50 <= ms[0] < 250, f"fr_timed(50) recorded as {ms[0]:.1f} ms (the next stop came 400 ms later)")
    ck.check(5 <= ms[1] < 205, f"fr_timed(5) recorded as {ms[1]:.1f} ms")
    ck.check(gap >= 400, f"{gap:.1f} ms between fr_timed's first return and its second call, "
                         f"where the program slept 400 ms")
    ck.check_eq([int(timed[i]["retval"], 16) for i in (1, 3)], [1050, 1005], "fr_timed return values")


def check_same_events(ck, tmp):
    for n, (name, args, patterns) in enumerate(SAME_EVENTS):
        exe = os.path.join(h.progs_dir(), name)
        label = " ".join([name] + args)
        fo, so = os.path.join(tmp, f"same-{n}-fast"), os.path.join(tmp, f"same-{n}-slow")
        fres = traced(ck, label, exe, args, patterns, fo, True)
        sres = traced(ck, label + " (trampoline)", exe, args, patterns, so, False)
        ck.check_eq(fres.stdout, sres.stdout, f"{label}: stdout")
        fast, slow = event_sequences(ck, fo), event_sequences(ck, so)
        if len(fast) > 1:  # threads: compare each thread's sequence, whatever the order
            fast, slow = sorted(fast), sorted(slow)
        nev = sum(len(s) for s in slow)
        _, hooked, without = stats_numbers(fres.err)
        print(f"{label}: {nev} events in {len(slow)} threads, {hooked} returns hooked in the process, "
              f"{without} without a stop")
        ck.check(nev > 0, f"{label}: no events")
        if fast != slow:
            where = next((i for i, (a, b) in enumerate(zip(fast, slow)) if a != b), min(len(fast), len(slow)))
            a, b = (fast[where] if where < len(fast) else []), (slow[where] if where < len(slow) else [])
            k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            ck.fail(f"{label}: thread {where} differs at event {k}: in the process "
                    f"{a[max(0, k - 3):k + 3]}, trampoline {b[max(0, k - 3):k + 3]}")


def main():
    ck = h.Checker("fast-returns")
    with h.TempDir() as tmp:
        check_cost(ck, tmp)
        check_timing(ck, tmp)
        check_same_events(ck, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Load: sixteen threads calling traced functions and allocating for 4 seconds
(tests/progs/load.c), traced with calltrace on its ld_* functions and memtrace
(with backtraces) in one run (-e is repeatable). Nothing may be lost: every
count the program states for itself is found exactly in the trace.

usage: test_load.py LOAD_EXECUTABLE
FT_LOAD_SECONDS (default 4) sets how long the traced program runs at most, and
FT_LOAD_ITERATIONS (default 8000, 0: no bound; 0 under FT_FULL=1) how many
iterations each thread makes at most (load -n). What the test costs is the number
of records read back here in Python: unbounded, it grows with the tracer's speed
(on the in-process recorder 4 s make 5 to 11 million, more than a minute made on
the stop path); bounded, about 16 per iteration, 2 million.

  * the program, traced, exits 0 with its self-check line, its leak manifest and
    lines of the same shape as an untraced run (whose counts differ: it runs for
    a time, not a number of iterations);
  * every thread makes progress: none makes ten times fewer iterations than
    another (functracer serves the stops of all threads in turn), by the
    program's counts and, from the trace's ld_outer calls, by the moment the
    first thread stopped (in a bounded run the others still work then);
  * functracer prints nothing but its --stats summary; the summary agrees with
    the trace (no frame unwound, at least as many calls and returns as recorded,
    nothing lost by the in-process recorder) and the trace holds no `lost` record;
  * the raw records (tracefile.py, not the post-processor): every thread
    balanced (calls = returns + unwound, properly nested, consistent depths),
    ld_leaf's return value = 3 * a + b for its arguments on every call; for
    every thread of the program (identified by the tid it prints), the calls of
    each ld_* function and, inside its ld_worker call, the alloc/free records of
    malloc, calloc, realloc and free equal the program's own per-thread counts,
    with no bad_free or alloc_failed; every such allocation's backtrace starts
    in the program;
  * the blocks still live at the end that the worker threads allocated are
    exactly the program's leak manifest (function and size);
  * `calls --json` gives the program's total for each ld_* function and
    `leaks --json` has the manifest's blocks and bytes in the groups that
    go through ld_keep, and no leak through another ld_* function.
"""

import bisect
import collections
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import tracefile  # noqa: E402

THREADS = 16
FUNCTIONS = ("ld_worker", "ld_outer", "ld_mid", "ld_leaf", "ld_keep")
ALLOCATORS = ("malloc", "calloc", "realloc", "free")
UNTRACED_SECONDS = 1
FAIRNESS = 10  # no thread makes 10 times fewer iterations than another
BAD_FREE_REASONS = collections.Counter()  # reason of every bad_free record

THREAD_LINE = re.compile(r"^thread (\d+) tid=(\d+) iterations=(\d+) " +
                         " ".join(f"{n}=(\\d+)" for n in FUNCTIONS + ALLOCATORS) + "$")
FAST_LINE = re.compile(r"^functracer: (\d+) returns hooked in the process, (\d+) of them returned without a stop$")
REC_LINE = re.compile(r"^functracer: (\d+) function entries patched for the in-process recorder, (\d+) kept a "
                      r"breakpoint; (\d+) calls and (\d+) returns recorded in the process, (\d+) lost to full buffers$")
STATS_LINE = re.compile(r"^functracer: (\d+) events \((\d+) calls, (\d+) returns, (\d+) unwound, "
                        r"(\d+) other\), (\d+) ptrace stops \([0-9.]+ per event\), (\d+) breakpoints, (\d+) refused")


class Output:
    def __init__(self):
        self.threads = {}  # index -> {"tid":, "iterations":, name: count}
        self.calls = {}
        self.leaks = []  # (function, size)
        self.leaks_total = None
        self.check = None
        self.other = []


def parse_output(text):
    o = Output()
    for line in text.splitlines():
        m = THREAD_LINE.match(line)
        if m:
            values = [int(g) for g in m.groups()]
            d = {"tid": values[1], "iterations": values[2]}
            d.update(zip(FUNCTIONS + ALLOCATORS, values[3:]))
            o.threads[values[0]] = d
        elif line.startswith("calls "):
            o.calls = {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}
        elif line.startswith("leak "):
            d = dict(w.split("=") for w in line.split()[1:])
            o.leaks.append((d["function"], int(d["size"])))
        elif line.startswith("leaks "):
            o.leaks_total = line
        elif line.startswith("check "):
            o.check = line
        else:
            o.other.append(line)
    return o


def shape(o):
    """What a run's output must have whatever its duration."""
    return {"thread lines": sorted(o.threads), "calls keys": sorted(o.calls),
            "leaks": o.leaks, "leaks total": o.leaks_total, "check": o.check, "other lines": o.other}


class TidLog:
    def __init__(self):
        self.stack = []  # open call records
        self.depth_offset = None
        self.calls = collections.Counter()
        self.returns = 0
        self.unwound = 0
        self.heap = collections.Counter()  # inside ld_worker: (type, function) -> n
        self.heap_outside = collections.Counter()
        self.bad_frames = 0
        self.outer_ts = []  # times of the ld_outer calls (one per iteration)


def replay(ck, path, exe):
    """One streaming pass over the raw records."""
    logs = collections.defaultdict(TidLog)
    live = {}  # address -> (tid, function, size, in_worker)
    types = collections.Counter()
    exe_ranges = []
    problems = []
    lost = []
    last_engine = None
    bad_leaf = 0

    def problem(msg):
        if len(problems) < 12:
            problems.append(msg)
        else:
            problems.append(None)

    for r in tracefile.iter_trace(path):
        t = r["type"]
        types[t] += 1
        tid = r["tid"]
        if t == "module":
            if os.path.realpath(r["path"]) == exe:
                exe_ranges.append((r["base"], r["end"]))
            continue
        if t in ("exit", "killed", "detach"):
            last_engine = r
            continue
        if t == "lost":
            lost.append(dict(r))
            continue
        log = logs[tid]
        in_worker = bool(log.stack) and log.stack[0]["function"] == "ld_worker"
        if t == "call":
            off = r["depth"] - len(log.stack)
            if log.depth_offset is None:
                log.depth_offset = off
            elif off != log.depth_offset:
                problem(f"tid {tid}: call of {r['function']} at depth {r['depth']} with "
                        f"{len(log.stack)} open frames (seq {r['seq']})")
            log.calls[r["function"]] += 1
            if r["function"] == "ld_outer":
                log.outer_ts.append(r["ts"])
            log.stack.append(r)
        elif t in ("return", "unwound"):
            if not log.stack:
                problem(f"tid {tid}: {t} of {r['function']} with no open call (seq {r['seq']})")
                continue
            c = log.stack.pop()
            if c["function"] != r["function"] or c["depth"] != r["depth"]:
                problem(f"tid {tid}: {t} of {r['function']} at depth {r['depth']} closes the call "
                        f"of {c['function']} at depth {c['depth']} (seq {c['seq']} / {r['seq']})")
            if t == "unwound":
                log.unwound += 1
                continue
            log.returns += 1
            if r["function"] == "ld_leaf":
                a, b = c["args"][0], c["args"][1]
                if r["retval"] != (a * 3 + b) & 0xFFFFFFFFFFFFFFFF:
                    bad_leaf += 1
                    problem(f"tid {tid}: ld_leaf({a}, {b}) returned {r['retval']} (seq {r['seq']})")
            elif r["function"] == "ld_keep" and r["retval"] != 3:
                problem(f"tid {tid}: ld_keep returned {r['retval']} (seq {r['seq']})")
        elif t in ("alloc", "free", "bad_free", "alloc_failed"):
            fn = r.get("function")
            if t == "bad_free":
                BAD_FREE_REASONS[r.get("reason")] += 1
            (log.heap if in_worker else log.heap_outside)[(t, fn)] += 1
            if t == "alloc":
                live[r["address"]] = (tid, fn, r["size"], in_worker)
                if in_worker:
                    frames = r.get("frames") or []
                    if not frames or not any(b <= frames[0] < e for b, e in exe_ranges):
                        log.bad_frames += 1
            elif t == "free":
                live.pop(r["address"], None)
    return logs, live, types, lost, last_engine, problems, exe_ranges


def check_stats(ck, stderr, types, logs):
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    stats = [STATS_LINE.match(ln) for ln in lines]
    fast = [FAST_LINE.match(ln) for ln in lines]
    rec = [REC_LINE.match(ln) for ln in lines]
    others = [ln for ln, m, fm, rm in zip(lines, stats, fast, rec)
              if not m and not fm and not rm and not re.match(r"^functracer: \d+ (backtraces|memory snapshots?|of the patched entries keep|recorded calls found their thread.s buffer full)", ln)]
    ck.check(not others, f"functracer printed more than its summary: {others[:5]}")
    found = [m for m in stats if m]
    if not ck.check(len(found) == 1, f"want one --stats summary line on stderr, got {lines[:5]}"):
        return
    events, calls, returns, unwound, other, stops, breakpoints, refused = (
        int(g) for g in found[0].groups())
    print(f"--stats: {events} events ({calls} calls, {returns} returns, {unwound} unwound, "
          f"{other} other), {stops} stops, {breakpoints} breakpoints, {refused} refused")
    # The engine's one count of what it could not trace: functions refused.
    ck.check_eq(refused, 0, "--stats: functions refused (not traced)")
    rec_calls = types["call"]
    rec_returns = types["return"]
    rec_unwound = types["unwound"]
    heap = collections.Counter()
    for log in logs.values():
        heap.update(log.heap)
        heap.update(log.heap_outside)
    # A realloc is one call and two records (free and alloc).
    realloc_frees = heap[("free", "realloc")]
    heap_entries = types["alloc"] + types["free"] - realloc_frees + types["bad_free"] + types["alloc_failed"]
    heap_returns = types["alloc"] + types["alloc_failed"]
    # Every entry the engine reported reached calltrace (an ld_* call) or memtrace;
    # memtrace records each allocator call once (free(NULL) and calls nested in
    # another allocator not at all), so the summary may count more, never fewer.
    ck.check_eq(unwound, rec_unwound, "--stats unwound frames vs unwound records")
    ck.check(calls >= rec_calls + heap_entries,
             f"--stats reports {calls} calls, the trace holds {rec_calls} call records and "
             f"{heap_entries} allocator entries: events were recorded that the engine did not count")
    ck.check(returns >= rec_returns + heap_returns,
             f"--stats reports {returns} returns, the trace holds {rec_returns} return records and "
             f"{heap_returns} allocator returns")
    # A return handled in the process costs no stop, and so does a call or return
    # recorded in the process (doc/internals.md §8a, §8b); every other event one.
    fast = [m for m in fast if m]
    without_stop = int(fast[0].group(2)) if fast else 0
    rec = [m for m in rec if m]
    patched, kept, in_calls, in_returns, lost = (int(g) for g in rec[0].groups()) if rec else (0, 0, 0, 0, 0)
    if rec:
        print(f"in the process: {patched} entries patched, {kept} kept a breakpoint; {in_calls} calls and "
              f"{in_returns} returns recorded there, {lost} lost")
    ck.check_eq(lost, 0, "--stats: records lost to full buffers in the process")
    ck.check(without_stop + in_returns <= returns and in_calls <= calls,
             f"--stats: {without_stop} + {in_returns} returns and {in_calls} calls without a stop, "
             f"{calls} calls and {returns} returns in all")
    ck.check(stops >= calls + returns - without_stop - in_calls - in_returns,
             f"--stats: {stops} stops for {calls} calls and {returns} returns, "
             f"{without_stop + in_calls + in_returns} of them handled in the process")


def main():
    binary = os.path.realpath(sys.argv[1])
    seconds = int(os.environ.get("FT_LOAD_SECONDS", "4"))
    iterations = int(os.environ.get("FT_LOAD_ITERATIONS", "0" if h.FULL else "8000"))
    bound = ["-n", iterations] if iterations > 0 else []
    ck = h.Checker("load")

    plain = h.run([binary, UNTRACED_SECONDS], timeout=60 + UNTRACED_SECONDS)
    if not ck.check(plain.status == 0 and not plain.err,
                    f"untraced run failed\n{plain.describe()}"):
        ck.finish()
    ref = parse_output(plain.out)
    ck.check(len(ref.threads) == THREADS and ref.check == f"check ok threads={THREADS}"
             and len(ref.leaks) == 3 * THREADS,
             f"untraced output lacks its {THREADS} thread lines, leaks or check line:\n{plain.out[:2000]}")

    with h.TempDir(prefix="ft-load-") as tmp:
        cmd = [h.functracer(), "-q", "--stats", "-e", "calltrace", "-e", "memtrace", "-a", "ld_*",
               "--uncompressed", "-o", tmp, binary] + bound + [seconds]
        print(f"--- {h.fmt_cmd(cmd)}", flush=True)
        res = h.run(cmd, timeout=3 * seconds + 300)
        print(f"traced run: status {res.status} after {res.seconds:.1f}s")
        if not ck.check(res.status == 0 and not res.timed_out, f"traced run failed\n{res.describe()}"):
            ck.finish()
        out = parse_output(res.out)
        ck.check_eq(shape(out), shape(ref), "traced output's shape vs the untraced run's")
        ck.check_eq(sorted(out.calls.items()), sorted(
            (n, sum(t[n] for t in out.threads.values())) for n in FUNCTIONS), "calls line vs thread lines")
        iters = [out.threads[i]["iterations"] for i in sorted(out.threads)]
        print(f"iterations per thread: {iters} (total {sum(iters)})")
        # Every thread's stops are served in turn (a thread starved of service while
        # others run on would take thousands of times fewer turns).
        ck.check(iters and min(iters) * FAIRNESS >= max(iters),
                 f"threads starved under tracing: iterations per thread {iters}, the fewest less "
                 f"than 1/{FAIRNESS} of the most")

        files = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".trace")]
        if not ck.check(len(files) == 1, f"want one trace file, found {files}"):
            ck.finish()
        size = os.path.getsize(files[0])
        start = time.monotonic()
        try:
            logs, live, types, lost, end, problems, exe_ranges = replay(ck, files[0], binary)
        except ValueError as e:
            ck.fail(f"the trace does not parse: {e}")
            ck.finish()
        print(f"trace: {size / 1e6:.1f} MB, {sum(types.values())} records "
              f"({dict(types)}), read in {time.monotonic() - start:.1f}s")
        ck.check(exe_ranges, f"no module record for {binary}")
        # The program releases every block once. What glibc's thread exit hands to free
        # again (its per-thread cache) must be told apart from a double free.
        print(f"bad_free records by reason: {dict(BAD_FREE_REASONS)}")
        ck.check(set(BAD_FREE_REASONS) <= {"allocator"},
                 f"releases reported as the program's bad frees: {dict(BAD_FREE_REASONS)}")
        ck.check(not lost, f"the trace reports lost events: {lost[:5]}")
        ck.check(end is not None and end["type"] == "exit" and end.get("status") == 0,
                 f"the trace does not end with exit status=0: {end}")
        if problems:
            more = sum(1 for p in problems if p is None)
            ck.fail(f"{len(problems)} structural problem(s) in the records:\n  " +
                    "\n  ".join(p for p in problems if p) + (f"\n  ... and {more} more" if more else ""))
        for tid, log in logs.items():
            ck.check(not log.stack, f"tid {tid}: {len(log.stack)} calls never closed, innermost "
                     f"{[c['function'] for c in log.stack][-5:]}")
            ck.check_eq(sum(log.calls.values()), log.returns + log.unwound,
                        f"tid {tid}: calls vs returns + unwound")
        check_stats(ck, res.err, types, logs)
        # The same fairness, from the trace, at the moment the first thread stopped: in a
        # bounded run (-n) the others are still at work then, and a thread starved
        # until the rest had stopped would have fewer iterations behind it by far.
        workers = [log.outer_ts for log in logs.values() if log.outer_ts]
        if ck.check(len(workers) == THREADS, f"{len(workers)} threads called ld_outer, want {THREADS}"):
            first_done = min(ts[-1] for ts in workers)
            by_then = sorted(bisect.bisect_right(ts, first_done) for ts in workers)
            print(f"iterations per thread when the first one stopped: {by_then}")
            ck.check(by_then[0] * FAIRNESS >= by_then[-1],
                     f"threads starved under tracing: iterations per thread when the first one stopped "
                     f"{by_then}, the fewest less than 1/{FAIRNESS} of the most")

        # Per thread: the program's counts against the records.
        for i in sorted(out.threads):
            d = out.threads[i]
            log = logs.get(d["tid"])
            label = f"thread {i} (tid {d['tid']})"
            if not ck.check(log is not None, f"{label}: no record in the trace"):
                continue
            ck.check_eq({n: log.calls[n] for n in FUNCTIONS}, {n: d[n] for n in FUNCTIONS},
                        f"{label}: traced calls vs the program's counts")
            want_heap = {("alloc", "malloc"): d["malloc"], ("alloc", "calloc"): d["calloc"],
                         ("alloc", "realloc"): d["realloc"], ("free", "realloc"): d["realloc"],
                         ("free", "free"): d["free"]}
            ck.check_eq(dict(log.heap), want_heap,
                        f"{label}: memtrace records inside ld_worker vs the program's counts")
            ck.check_eq(log.bad_frames, 0, f"{label}: allocations whose backtrace does not start "
                        f"in the program")
        tids = {d["tid"] for d in out.threads.values()}
        strays = {tid: dict(log.calls) for tid, log in logs.items() if log.calls and tid not in tids}
        ck.check(not strays, f"ld_* calls on threads the program does not know: {strays}")

        leaked = sorted((fn, size) for tid, fn, size, in_worker in live.values()
                        if in_worker and tid in tids)
        ck.check_eq(leaked, sorted(out.leaks), "blocks the workers left allocated (raw records) vs "
                    "the program's manifest")

        funcs = h.calls_report(ck, files)
        if funcs is not None:
            ck.check_eq({n: h.find_calls_entry(funcs, n) for n in FUNCTIONS}, out.calls,
                        "calls --json vs the program's totals")
        lres = h.run_postproc(["leaks", "--json"] + files)
        if ck.check(lres.status == 0, f"leaks --json failed\n{lres.describe()}"):
            doc = json.loads(lres.out)
            blocks = nbytes = 0
            other = []
            for g in doc["groups"]:
                names = [f.get("function") or "" for f in g["frames"]]
                if any(n.startswith("ld_keep") for n in names):
                    blocks += g["blocks"]
                    nbytes += g["bytes"]
                elif any(n.startswith("ld_") for n in names):
                    other.append(g)
            ck.check_eq((blocks, nbytes), (len(out.leaks), sum(s for _, s in out.leaks)),
                        "leaks --json: blocks and bytes leaked through ld_keep vs the manifest")
            ck.check(not other, f"leaks --json: leaks through other ld_* functions: {other[:3]}")
            print(f"leaks --json: {doc['leaked_blocks']} blocks, {doc['leaked_bytes']} bytes in all; "
                  f"{blocks} blocks, {nbytes} bytes through ld_keep")
    ck.finish()


if __name__ == "__main__":
    main()

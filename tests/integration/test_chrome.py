#!/usr/bin/env python3
"""The chrome report (Chrome Trace Event Format JSON) on traced programs.

usage: test_chrome.py RECURSION MUTUAL THREADS EXCEPTIONS FORKS HEAPSHAPE

Each program is traced with the built functracer, `functracer-postproc chrome` turns
the traces into JSON, and Python's json module reads it back, as any consumer would.
Oracles: the programs' own statements (tests/progs: call counts, per-thread counts,
unwound frames, the heap's peak) and the raw trace records, read here with
tracefile.py and replayed by the rules of doc/trace-format.md, never through
functracer-postproc. Checked, for every trace:

  * the JSON object format: traceEvents, displayTimeUnit "ns", otherData with the
    command line of the process that started first; every event has the fields its
    phase needs (X: name, cat, ts, dur, pid, tid, args; i: scope; C: numeric args;
    M: a known metadata name);
  * every process has one process_name naming its executable and pid, every thread
    with events a thread_name;
  * per thread, the complete events nest properly in whole nanoseconds (a callee
    never extends past its caller), so viewers draw a flame chart;
  * the complete events are exactly the activations of the raw records: same pid,
    tid, function (demangled by c++filt), start and end to the nanosecond;
  * calls per function equal the program's own counts (per thread for threads, over
    every process for forks -f), exceptions' unwound frames are marked as the program
    states, fib's return value is fib of its argument;
  * lifecycle instants (process start, exec, exit, signals, thread start/exit) match
    the raw lifecycle records;
  * heapshape under memtrace: the heap counter's maximum is the program's stated
    peak, and every sample equals the raw records' live bytes at that time; under
    memtrace and calltrace at once, heap and calls share the timeline: the raw alloc
    records inside each function's complete event are as many as the program says
    that function allocated;
  * --tid keeps one thread, -o writes the same document to a file.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

PHASES = {"X", "M", "i", "C"}
METADATA = {"process_name", "process_labels", "thread_name", "thread_sort_index"}


def ns(us):
    """A viewer's integer nanoseconds from the JSON microseconds."""
    return round(us * 1000)


def chrome(ck, args, label):
    res = h.run_postproc(["chrome"] + list(args))
    if not ck.check(res.status == 0 and not res.timed_out,
                    f"{label}: functracer-postproc chrome failed\n{res.describe()}"):
        return None
    try:
        return json.loads(res.out)
    except ValueError as e:
        ck.fail(f"{label}: chrome output is not JSON ({e})\n{res.out[:500]}")
        return None


def demangler(names):
    """{mangled: demangled} through c++filt (binutils), an independent demangler."""
    names = sorted(set(names))
    res = h.run(["c++filt"], stdin="\n".join(names).encode() + b"\n")
    out = res.out.splitlines()
    if res.status != 0 or len(out) != len(names):
        return {n: n for n in names}
    return dict(zip(names, out))


def base(name):
    i = name.find("(")
    name = name if i < 0 else name[:i]
    return name.rsplit("::", 1)[-1]


# --------------------------------------------------------------------------
# Raw records, replayed by doc/trace-format.md §3.3 and §4.


def raw_activations(records, pid):
    """[(pid, tid, mangled function, start_ns, end_ns, how, args)] of one trace."""
    out = []
    stacks = collections.defaultdict(list)  # tid -> [call record]
    last_ts = 0

    def close(tid, ts, how):
        c = stacks[tid].pop()
        out.append((pid, tid, c["function"], c["ts"], ts, how, c.get("args", [])))

    for r in records:
        last_ts = max(last_ts, r["ts"])
        t, tid = r["type"], r["tid"]
        if t == "call":
            while stacks[tid] and stacks[tid][-1]["depth"] >= r["depth"]:
                close(tid, r["ts"], "missing return")
            stacks[tid].append(r)
        elif t in ("return", "unwound"):
            depths = [c["depth"] for c in stacks[tid]]
            if r["depth"] not in depths:
                continue  # e.g. a forked child returning through its parent's frames
            while stacks[tid][-1]["depth"] != r["depth"]:
                close(tid, r["ts"], "missing return")
            close(tid, r["ts"], "return" if t == "return" else r["reason"])
        elif t == "thread_exit":
            while stacks[tid]:
                close(tid, r["ts"], "exit")
        elif t in ("exit", "killed", "exec", "detach"):
            for other in list(stacks):
                while stacks[other]:
                    close(other, r["ts"], "exit" if t == "exit" else t)
    for tid in list(stacks):
        while stacks[tid]:
            close(tid, last_ts, "end of trace")
    return out


def raw_lifecycle(records, pid):
    """Multiset of (pid, tid or None, name, ts_ns) the lifecycle records stand for."""
    names = {"process": "process start", "exec": "exec", "exit": "exit", "detach": "detach",
             "thread": "thread start", "thread_exit": "thread exit", "lost": "lost events"}
    process_scope = {"process", "exec", "exit", "killed", "detach"}
    out = collections.Counter()
    for r in records:
        t = r["type"]
        if t == "signal":
            name = r["name"]
        elif t == "killed":
            name = "killed by " + r["name"]
        elif t in names:
            name = names[t]
        else:
            continue
        out[(pid, None if t in process_scope else r["tid"], name, r["ts"])] += 1
    return out


# --------------------------------------------------------------------------
# The document.


def check_schema(ck, doc, label, command):
    if not ck.check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
                    f"{label}: no traceEvents array"):
        return []
    ck.check_eq(doc.get("displayTimeUnit"), "ns", f"{label}: displayTimeUnit")
    other = doc.get("otherData")
    if ck.check(isinstance(other, dict), f"{label}: no otherData object"):
        ck.check_eq(other.get("command_line"), command, f"{label}: otherData.command_line")
        ck.check(isinstance(other.get("ts_zero_ns"), int), f"{label}: otherData.ts_zero_ns")
    events = doc["traceEvents"]
    bad = collections.Counter()

    def need(cond, what, e):
        if not cond:
            bad[what] += 1
            if bad[what] <= 3:
                ck.fail(f"{label}: {what}: {json.dumps(e)[:300]}")

    num = (int, float)
    for e in events:
        if not isinstance(e, dict):
            need(False, "event is not an object", e)
            continue
        ph = e.get("ph")
        need(ph in PHASES, "unknown phase", e)
        need(isinstance(e.get("name"), str) and e["name"], "no name", e)
        need(isinstance(e.get("pid"), int), "no integer pid", e)
        if ph in ("X", "i", "C"):
            need(isinstance(e.get("ts"), num) and e["ts"] >= 0, "no ts", e)
            need(isinstance(e.get("cat"), str), "no cat", e)
            need(isinstance(e.get("args"), dict), "no args object", e)
        if ph in ("X", "i"):
            need(isinstance(e.get("tid"), int), "no integer tid", e)
        if ph == "X":
            need(isinstance(e.get("dur"), num) and e["dur"] >= 0, "no dur", e)
            need(e.get("cat") == "call", "call event not in category call", e)
            need(isinstance(e.get("args", {}).get("args"), str), "no argument text", e)
        elif ph == "i":
            need(e.get("s") in ("t", "p"), "instant without scope t or p", e)
        elif ph == "C":
            need(all(isinstance(v, num) for v in e.get("args", {}).values()) and e.get("args"),
                 "counter args not numbers", e)
        elif ph == "M":
            need(e.get("name") in METADATA, "unknown metadata", e)
            need(isinstance(e.get("args"), dict), "metadata without args", e)
    return events


def check_names(ck, events, label, exes):
    """exes: {pid: executable basename}."""
    pnames = collections.defaultdict(list)
    tnames = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            pnames[e["pid"]].append(e["args"].get("name"))
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            tnames[(e["pid"], e.get("tid"))].append(e["args"].get("name"))
    for pid, exe in exes.items():
        ck.check_eq(pnames.get(pid), [f"{exe} (pid {pid})"], f"{label}: process_name of {pid}")
    used = {(e["pid"], e["tid"]) for e in events if e.get("ph") in ("X", "i") and "tid" in e}
    for key in sorted(used):
        ck.check(len(tnames.get(key, [])) == 1,
                 f"{label}: thread {key} has thread_name {tnames.get(key)}")


def check_nesting(ck, events, label):
    per_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            start = ns(e["ts"])
            per_thread[(e["pid"], e["tid"])].append((start, -(start + ns(e["dur"])), e))
    broken = 0
    for key, evs in per_thread.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack = []  # end times
        for start, neg_end, e in evs:
            end = -neg_end
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                broken += 1
                if broken <= 3:
                    ck.fail(f"{label}: thread {key}: {e['name']} [{start}, {end}] ends after its "
                            f"enclosing event ends at {stack[-1]}")
            stack.append(end)
    ck.check_eq(broken, 0, f"{label}: improperly nested complete events")


def check_against_raw(ck, doc, events, files, label):
    zero = doc.get("otherData", {}).get("ts_zero_ns", 0)
    raw = []
    lifecycle = collections.Counter()
    for f in files:
        recs = parse_trace(f)
        pid = recs[0]["pid"]
        raw += raw_activations(recs, pid)
        lifecycle += raw_lifecycle(recs, pid)
    names = demangler([r[2] for r in raw])
    want = collections.Counter((p, t, names[f], s, e) for p, t, f, s, e, _, _ in raw)
    got = collections.Counter((e["pid"], e["tid"], e["name"], zero + ns(e["ts"]),
                               zero + ns(e["ts"]) + ns(e["dur"]))
                              for e in events if e.get("ph") == "X")
    missing, extra = want - got, got - want
    ck.check(not missing and not extra,
             f"{label}: complete events differ from the raw activations: "
             f"{sum(missing.values())} missing (e.g. {list(missing)[:3]}), "
             f"{sum(extra.values())} extra (e.g. {list(extra)[:3]})")
    got_life = collections.Counter(
        (e["pid"], e["tid"] if e.get("s") == "t" else None, e["name"], zero + ns(e["ts"]))
        for e in events if e.get("ph") == "i")
    ck.check_eq(got_life, lifecycle, f"{label}: lifecycle instants against the raw records")
    return raw


def counts(events, pid=None, tid=None):
    c = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and (pid is None or e["pid"] == pid) and (tid is None or
                                                                        e["tid"] == tid):
            c[base(e["name"])] += 1
    return c


def trace_prog(ck, exe, work, name, patterns, extra=(), plugin="calltrace"):
    untraced = h.run([exe])
    ck.check(untraced.status == 0, f"{name} failed untraced\n{untraced.describe()}")
    tr = h.trace([exe], patterns, os.path.join(work, name), plugin=plugin, extra=extra)
    ck.check(tr.result.status == 0, f"traced {name} failed\n{tr.result.describe()}")
    ck.check(tr.files, f"{name}: no trace files\n{tr.result.describe()}")
    return tr


def full_check(ck, tr, label, exe):
    doc = chrome(ck, [tr.outdir], label)
    if doc is None:
        return None, []
    first = min((parse_trace(f)[0] for f in tr.files), key=lambda r: r["ts"])
    events = check_schema(ck, doc, label, first["cmdline"])
    exes = {}
    for f in tr.files:
        recs = parse_trace(f)
        final = [r["exe"] for r in recs if r["type"] in ("header", "exec")][-1]
        exes[recs[0]["pid"]] = os.path.basename(final)
    check_names(ck, events, label, exes)
    check_nesting(ck, events, label)
    check_against_raw(ck, doc, events, tr.files, label)
    ck.note(f"{label}: {sum(1 for e in events if e.get('ph') == 'X')} complete events, "
            f"{len(events)} events in all, {len(tr.files)} process(es)")
    return doc, events


def main():
    ck = h.Checker("chrome")
    recursion, mutual, threads, exceptions, forks, heapshape = sys.argv[1:7]
    with h.TempDir() as work:
        # recursion: counts, and fib's value against its argument.
        tr = trace_prog(ck, recursion, work, "recursion", "fib,rec_hidden_helper,rec_deep")
        exp = h.parse_expectations(tr.result.out)
        doc, events = full_check(ck, tr, "recursion", recursion)
        if doc:
            ck.check_eq(dict(counts(events)), dict(exp.calls), "recursion: calls per function")
            fib = {0: 0, 1: 1}
            for n in range(2, 40):
                fib[n] = fib[n - 1] + fib[n - 2]
            wrong = [e["args"] for e in events if e.get("ph") == "X" and base(e["name"]) == "fib"
                     and fib.get(int(e["args"]["args"])) != int(e["args"].get("return", "-1"), 0)]
            ck.check_eq(wrong[:3], [], "recursion: fib events whose return is not fib(arg)")

        tr = trace_prog(ck, mutual, work, "mutual", "is_even,is_odd")
        exp = h.parse_expectations(tr.result.out)
        doc, events = full_check(ck, tr, "mutual", mutual)
        if doc:
            ck.check_eq(dict(counts(events)), dict(exp.calls), "mutual: calls per function")

        # threads: per-thread counts, thread metadata, --tid and -o.
        tr = trace_prog(ck, threads, work, "threads", "th_*")
        exp = h.parse_expectations(tr.result.out)
        doc, events = full_check(ck, tr, "threads", threads)
        if doc:
            ck.check_eq(dict(counts(events)), dict(exp.calls), "threads: calls per function")
            pid = parse_trace(tr.files[0])[0]["pid"]
            workers = sorted({e["tid"] for e in events
                              if e.get("ph") == "X" and base(e["name"]) == "th_work"})
            for name, n, nthreads in exp.per_thread:
                ck.check_eq(len(workers), nthreads, "threads: threads calling th_work")
                for tid in workers:
                    ck.check_eq(counts(events, tid=tid)[name], n, f"threads: {name} on {tid}")
            if workers:
                one = workers[0]
                out = os.path.join(work, "threads.json")
                res = h.run_postproc(["chrome", "--tid", str(one), "-o", out, tr.outdir])
                if ck.check(res.status == 0 and res.out == "",
                            f"chrome --tid -o failed\n{res.describe()}"):
                    with open(out) as f:
                        sub = json.load(f)
                    sev = check_schema(ck, sub, "threads --tid", doc["otherData"]["command_line"])
                    tids = {e["tid"] for e in sev if e.get("ph") == "X"}
                    ck.check_eq(tids, {one}, "threads --tid: threads with calls")
                    ck.check_eq(dict(counts(sev)), dict(counts(events, tid=one)),
                                "threads --tid: calls of that thread")
                    ck.check(all(e.get("s") == "p" or e.get("tid") == one
                                 for e in sev if e.get("ph") == "i"),
                             "threads --tid: a thread instant of another thread")
                ck.check(pid not in workers, "threads: main thread calls th_work")

        # exceptions: unwound frames are marked.
        tr = trace_prog(ck, exceptions, work, "exceptions", "xt_*")
        exp = h.parse_expectations(tr.result.out)
        doc, events = full_check(ck, tr, "exceptions", exceptions)
        if doc:
            ck.check_eq(dict(counts(events)), dict(exp.calls), "exceptions: calls per function")
            unwound = collections.defaultdict(collections.Counter)
            for e in events:
                if e.get("ph") == "X" and "unwound" in e["args"]:
                    unwound[e["args"]["unwound"]][base(e["name"])] += 1
                    ck.check("return" not in e["args"], f"unwound event with a return: {e}")
            ck.check_eq({k: dict(v) for k, v in unwound.items()},
                        {k: dict(v) for k, v in exp.unwound.items()},
                        "exceptions: unwound frames per reason and function")

        # forks -f: one process per trace file in one document.
        tr = trace_prog(ck, forks, work, "forks", "fk_*", extra=["-f"])
        exp = h.parse_expectations(tr.result.out)
        doc, events = full_check(ck, tr, "forks -f", forks)
        if doc:
            ck.check_eq(dict(counts(events)), dict(exp.follow_calls),
                        "forks -f: calls per function over every process")
            pids = {e["pid"] for e in events if e.get("ph") == "X"}
            ck.check(len(pids) >= 4, f"forks -f: calls in {len(pids)} processes, want >= 4")
            execs = [e for e in events if e.get("ph") == "i" and e["name"] == "exec"]
            ck.check(execs, "forks -f: no exec instant (system() runs sh)")

        # heapshape: the heap counter.
        tr = trace_prog(ck, heapshape, work, "heapshape", None, plugin="memtrace")
        peak = next(([int(x) for x in line.split()[1:3]] for line in tr.result.out.splitlines()
                     if line.startswith("peak ")), None)
        doc, events = full_check(ck, tr, "heapshape", heapshape)
        if doc and ck.check(peak, f"heapshape states no peak\n{tr.result.describe()}"):
            samples = [(ns(e["ts"]), e["args"]["live_bytes"]) for e in events
                       if e.get("ph") == "C" and e["name"] == "heap"]
            ck.check(len(samples) > 100, f"heapshape: only {len(samples)} heap samples")
            ck.check_eq(max(v for _, v in samples), peak[0], "heapshape: heap counter maximum")
            # Replays the raw records: the live bytes after the last record of each time.
            zero = doc["otherData"]["ts_zero_ns"]
            live, at = {}, {}
            for r in parse_trace(tr.files[0]):
                if r["type"] == "alloc":
                    live[r["address"]] = r["size"]
                elif r["type"] == "free":
                    live.pop(r["address"], None)
                at[r["ts"] - zero] = sum(live.values())
            wrong = [(t, v, at.get(t)) for t, v in samples if at.get(t) != v]
            ck.check_eq(wrong[:3], [], "heapshape: samples that differ from the raw records")
            ck.check_eq(samples[-1][1], sum(live.values()), "heapshape: live bytes at the end")
            changes = sorted(t for t in at if t in at)
            prev, changed = 0, set()
            for t in changes:
                if at[t] != prev:
                    changed.add(t)
                prev = at[t]
            ck.check_eq(sorted(changed - {t for t, _ in samples})[:3], [],
                        "heapshape: changes of the live heap without a sample")
        # heapshape under memtrace and calltrace: one timeline.
        if peak:
            allocs = {l.split()[1]: int(l.split()[2]) for l in tr.result.out.splitlines()
                      if l.startswith("allocs ")}
            tr = trace_prog(ck, heapshape, work, "heapshape-calls", ",".join(allocs),
                            plugin="memtrace", extra=["-e", "calltrace"])
            doc, events = full_check(ck, tr, "heapshape memtrace+calltrace", heapshape)
            if doc:
                samples = [e["args"]["live_bytes"] for e in events if e.get("ph") == "C"]
                ck.check_eq(max(samples, default=None), peak[0],
                            "heapshape memtrace+calltrace: heap counter maximum")
                zero = doc["otherData"]["ts_zero_ns"]
                recs = [r for r in parse_trace(tr.files[0]) if r["type"] == "alloc"]
                inside = collections.Counter()
                for e in events:
                    if e.get("ph") != "X":
                        continue
                    start = zero + ns(e["ts"])
                    end = start + ns(e["dur"])
                    inside[base(e["name"])] += sum(1 for r in recs if r["tid"] == e["tid"] and
                                                   start <= r["ts"] <= end)
                ck.check_eq(dict(inside), allocs,
                            "heapshape memtrace+calltrace: allocations inside each function")
    ck.finish()


if __name__ == "__main__":
    main()

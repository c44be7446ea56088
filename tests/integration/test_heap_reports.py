#!/usr/bin/env python3
"""The post-processor's heap reports on programs built to show them.

usage: test_heap_reports.py HEAPSHAPE HEAPDIFF_V1 HEAPDIFF_V2

Oracles: the programs' own manifests (tests/progs/heapshape.c, heapdiff.c: every
block they allocate, what was live at their peak, their temporary allocations, their
leaks) and the raw trace records, replayed here without functracer-postproc
(tracefile.py). Checked:

  * peak: the peak bytes and blocks equal the manifest's; the groups live at the
    peak, per program function, equal the manifest's; replaying the raw records up
    to the reported event gives the same live bytes;
  * leaks --at the peak's event, and at its time: the live heap equals the peak;
  * leaks, per program function, equal the manifest; --function, --size, --tid,
    --from/--to (event range of the raw records of one function) and
    --suppressions select exactly the manifest's share; suppressed bytes counted;
  * temporary: per function equals the manifest, the total equals the count
    replayed from the raw records;
  * allocators: the top by count and by bytes are the manifest's largest;
  * histogram: bucket counts equal the raw records' sizes, bucketed here;
  * diff of the two heapdiff builds: exactly the two changed functions, with the
    manifests' differences; swapping the runs negates them; a run against another
    run of the same build changes nothing;
  * bad arguments are one line and a non-zero exit.
"""

import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402


def manifest(text):
    m = collections.defaultdict(dict)
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] in ("peak", "thread"):
            m[w[0]] = [int(x) for x in w[1:]]
        elif w[0] == "size":
            m["size"][int(w[1])] = int(w[2])
        else:
            m[w[0]][w[1]] = [int(x) for x in w[2:]]
    return m


def program_function(group, functions):
    """The first frame of a group in one of the program's functions, else None."""
    for f in group["frames"]:
        if f["function"] in functions:
            return f["function"]
    return None


def per_function(groups, functions, keys):
    out = collections.defaultdict(lambda: [0] * len(keys))
    for g in groups:
        fn = program_function(g, functions)
        for i, k in enumerate(keys):
            out[fn][i] += g[k]
    return dict(out)


def postproc_json(ck, args):
    res = h.run_postproc(list(args))
    if not ck.check(res.status == 0, f"functracer-postproc {' '.join(args)} failed\n{res.describe()}"):
        return None
    try:
        return json.loads(res.out)
    except ValueError as e:
        ck.fail(f"functracer-postproc {' '.join(args)}: not JSON ({e})")
        return None


def trace_program(ck, exe, outdir):
    untraced = h.run([exe])
    ck.check(untraced.status == 0, f"{exe} failed untraced\n{untraced.describe()}")
    tr = h.trace([exe], outdir=outdir, plugin="memtrace")
    ck.check(tr.result.status == 0, f"traced {exe} failed\n{tr.result.describe()}")
    strip = lambda t: [l for l in t.splitlines() if not l.startswith("thread ")]  # noqa: E731
    ck.check_eq(strip(tr.result.out), strip(untraced.out), f"{exe}: traced output")
    ck.check_eq(len(tr.files), 1, f"{exe}: trace files")
    return tr


def replay_live_bytes(records, last_seq):
    live = {}
    for r in records:
        if r["seq"] > last_seq:
            break
        if r["type"] == "alloc":
            live[r["address"]] = r["size"]
        elif r["type"] == "free":
            live.pop(r["address"], None)
    return sum(live.values()), len(live)


def replay_temporary(records):
    last = {}
    live = {}
    temporary = 0
    for r in records:
        if r["type"] == "alloc":
            live[r["address"]] = r["tid"]
            last[r["tid"]] = r["address"]
        elif r["type"] == "free" and r["address"] in live:
            owner = live.pop(r["address"])
            if owner == r["tid"] and last.get(r["tid"]) == r["address"]:
                temporary += 1
                del last[r["tid"]]
    return temporary


def check_heapshape(ck, exe, work):
    tr = trace_program(ck, exe, os.path.join(work, "shape"))
    if not tr.files:
        return
    m = manifest(tr.result.out)
    functions = set(m["allocs"])
    records = parse_trace(tr.files[0])
    d = tr.outdir

    # peak
    peak = postproc_json(ck, ["peak", "--json", d])
    if peak:
        p = peak["processes"][0]
        ck.check_eq([p["peak_bytes"], p["peak_blocks"]], m["peak"], "peak bytes and blocks")
        ck.check_eq(peak["peak_bytes"], m["peak"][0], "top-level peak_bytes")
        got = per_function(p["groups"], functions, ["bytes", "blocks"])
        ck.check_eq(got, {fn: v for fn, v in m["peak_live"].items()}, "live at the peak, per function")
        ck.check_eq(list(replay_live_bytes(records, p["seq"])), m["peak"],
                    f"raw records replayed up to the peak's event #{p['seq']}")
        at_record = [r for r in records if r["seq"] == p["seq"]]
        ck.check(at_record and at_record[0]["type"] == "alloc", "the peak's event is an alloc")
        for at in (f"#{p['seq']}", f"{p['time_ns']}ns"):
            live = postproc_json(ck, ["leaks", "--json", "--at", at, d])
            if live:
                ck.check_eq([live["leaked_bytes"], live["leaked_blocks"]], m["peak"],
                            f"leaks --at {at}: the live heap is the peak")
                ck.check_eq(live.get("at"), at if at.startswith("#") else live.get("at"),
                            f"leaks --at {at}: the moment is in the JSON")

    # leaks and filters
    leaks = postproc_json(ck, ["leaks", "--json", d])
    if leaks:
        got = per_function(leaks["groups"], functions, ["blocks", "bytes"])
        got.pop(None, None)  # libc's own (the new thread's TLS)
        ck.check_eq(got, m["leak"], "leaks per function")

    def leaked(args, what):
        r = postproc_json(ck, ["leaks", "--json"] + args + [d])
        if r is None:
            return None
        return [r["leaked_blocks"], r["leaked_bytes"]], r

    def check_filter(args, expected_fns, what):
        got = leaked(args, what)
        if got is None:
            return
        want = [sum(m["leak"][f][0] for f in expected_fns), sum(m["leak"][f][1] for f in expected_fns)]
        ck.check_eq(got[0], want, f"leaks {' '.join(args)}: blocks and bytes")
        fns = {program_function(g, functions) for g in got[1]["groups"]}
        ck.check_eq(fns, set(expected_fns), f"leaks {' '.join(args)}: functions")

    check_filter(["--function", "leak_some"], ["leak_some"], "function")
    check_filter(["--function", "leak_*"], ["leak_some", "leak_big"], "glob")
    check_filter(["--function", "nothing_here"], [], "no match")
    check_filter(["--size", "3000"], ["leak_big"], "size")
    check_filter(["--size", "100-200"], ["leak_some", "build_table"], "size range")
    check_filter(["--tid", str(m["thread"][0])], ["leaky_thread"], "tid")
    some = [r["seq"] for r in records if r["type"] == "alloc" and r["size"] == 100]
    ck.check_eq(len(some), 4, "raw alloc records of 100 bytes (leak_some)")
    if some:
        check_filter(["--from", f"#{min(some)}", "--to", f"#{max(some)}"], ["leak_some"], "from/to")
    supp = os.path.join(work, "supp.txt")
    with open(supp, "w") as f:
        f.write("# built at start-up, freed by exit\nleak:build_table\n\nleak:^leaky_thr*$\n")
    got = leaked(["--suppressions", supp], "suppressions")
    if got and leaks:
        s = m["leak"]["build_table"][1] + m["leak"]["leaky_thread"][1]
        ck.check_eq(got[1]["suppressed_bytes"], s, "suppressed bytes")
        ck.check_eq(got[1]["leaked_bytes"], leaks["leaked_bytes"] - s, "leaked bytes after suppressions")
        fns = {program_function(g, functions) for g in got[1]["groups"]}
        ck.check("build_table" not in fns and "leaky_thread" not in fns, "suppressed groups left out")

    # temporary
    temp = postproc_json(ck, ["temporary", "--json", d])
    if temp:
        got = per_function(temp["groups"], functions, ["temporary"])
        got.pop(None, None)
        ck.check_eq({fn: v[0] for fn, v in got.items()}, {fn: v[0] for fn, v in m["temporary"].items()},
                    "temporary allocations per function")
        ck.check_eq(temp["temporary"], replay_temporary(records), "temporary total, from the raw records")
        ck.check_eq(temp["allocations"], sum(1 for r in records if r["type"] == "alloc"),
                    "allocations total")

    # allocators
    for sort, fn in (("count", max(m["allocs"], key=lambda f: m["allocs"][f][0])),
                     ("bytes", max(m["allocs"], key=lambda f: m["allocs"][f][1]))):
        top = postproc_json(ck, ["allocators", "--json", "--sort", sort, "--top", "1", d])
        if top:
            ck.check_eq(len(top["groups"]), 1, f"allocators --top 1 --sort {sort}: groups")
            g = top["groups"][0] if top["groups"] else {"frames": []}
            ck.check_eq(program_function(g, functions), fn, f"allocators --sort {sort}: the top")
            ck.check_eq([g.get("allocations"), g.get("bytes")], m["allocs"][fn],
                        f"allocators --sort {sort}: counts")

    # histogram
    hist = postproc_json(ck, ["histogram", "--json", d])
    if hist:
        want = collections.Counter(r["size"].bit_length() for r in records if r["type"] == "alloc")
        got = {b["min"].bit_length() if b["min"] else 0: b["allocations"] for b in hist["buckets"]
               if b["allocations"]}
        ck.check_eq(got, dict(want), "histogram buckets (by bit length of the size)")
        for b in hist["buckets"]:
            ck.check(b["max"] == (2 * b["min"] - 1 if b["min"] else 0), f"bucket bounds {b}")
        for size, count in m["size"].items():
            n = next((b["allocations"] for b in hist["buckets"] if b["min"] <= size <= b["max"]), 0)
            ck.check(n >= count, f"histogram: {count} allocations of {size} bytes in its bucket")


def check_heapdiff(ck, v1, v2, work):
    runs = {}
    for name, exe in (("v1", v1), ("v1-again", v1), ("v2", v2)):
        tr = trace_program(ck, exe, os.path.join(work, name))
        runs[name] = (tr.outdir, manifest(tr.result.out))
    (d1, m1), (d2, m2) = runs["v1"], runs["v2"]
    diff = postproc_json(ck, ["diff", "--json", d1, d2])
    if diff is None:
        return
    functions = set(m1["allocs"])
    got = {}
    for g in diff["groups"]:
        fn = program_function(g, functions)
        got[fn] = [g["delta"]["leaked_blocks"], g["delta"]["leaked_bytes"], g["delta"]["allocations"],
                   g["delta"]["allocated_bytes"]]
        ck.check_eq(g["delta"]["leaked_bytes"], g["new"]["leaked_bytes"] - g["old"]["leaked_bytes"],
                    f"diff {fn}: delta = new - old")
    want = {}
    for fn in functions:
        a1, a2 = m1["allocs"][fn], m2["allocs"][fn]
        l1, l2 = m1["leak"].get(fn, [0, 0]), m2["leak"].get(fn, [0, 0])
        d = [l2[0] - l1[0], l2[1] - l1[1], a2[0] - a1[0], a2[1] - a1[1]]
        if any(d):
            want[fn] = d
    ck.check_eq(got, want, "diff v1 v2: changed groups and their deltas")
    ck.check_eq(diff["old"]["leaked_bytes"] - diff["new"]["leaked_bytes"],
                sum(v[1] for v in m1["leak"].values()) - sum(v[1] for v in m2["leak"].values()),
                "diff totals: leaked bytes fixed")
    back = postproc_json(ck, ["diff", "--json", d2, d1])
    if back:
        ck.check_eq({program_function(g, functions): -g["delta"]["leaked_bytes"] for g in back["groups"]},
                    {fn: v[1] for fn, v in want.items()}, "diff v2 v1 negates")
    same = postproc_json(ck, ["diff", "--json", d1, runs["v1-again"][0]])
    if same:
        ck.check_eq(same["groups"], [], "diff of two runs of the same build")
    text = h.run_postproc(["diff", d1, d2])
    ck.check(text.status == 0 and "parse_config" in text.out and "fill_cache" in text.out,
             f"diff text output\n{text.describe()}")


def check_bad_arguments(ck, work):
    d = os.path.join(work, "shape")
    bad_supp = os.path.join(work, "bad-supp.txt")
    with open(bad_supp, "w") as f:
        f.write("leak:ok\nfun:not_this_kind\n")
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    cases = [
        (["leaks", "--at", "5parsecs", d], 2, "not a moment"),
        (["leaks", "--size", "10-5", d], 2, "not a size range"),
        (["peak", "--at", "#3", d], 2, "does not take --at"),
        (["leaks", "--from", "#9", "--to", "#3", d], 2, "is after --to"),
        (["diff", d], 2, "takes 2 traces"),
        (["leaks", "--suppressions", os.path.join(work, "missing.supp"), d], 1, "missing.supp"),
        (["leaks", "--suppressions", bad_supp, d], 1, "bad-supp.txt:2"),
        (["leaks", empty], 1, "no trace files"),
    ]
    for args, status, text in cases:
        res = h.run_postproc(args)
        err = res.err.strip()
        ck.check(res.status == status and text in err and "\n" not in err,
                 f"functracer-postproc {' '.join(args)}: want exit {status} and one line "
                 f"with {text!r}\n{res.describe()}")


def main():
    ck = h.Checker("heap-reports")
    heapshape, v1, v2 = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="ft-heap-") as work:
        check_heapshape(ck, heapshape, work)
        check_heapdiff(ck, v1, v2, work)
        check_bad_arguments(ck, work)
    ck.finish()


if __name__ == "__main__":
    main()

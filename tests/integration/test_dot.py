#!/usr/bin/env python3
"""The dot report, read by graphviz, against the programs' own call counts.

usage: test_dot.py MUTUAL RECURSION LIBCHAIN HEAPSHAPE LEAKS_CXX

Each program is traced (calltrace -a on its own functions; memtrace for heapshape
and leaks_cxx), the report is fed to graphviz's dot: -Tsvg must give an SVG that
parses as XML, and the edges of -Tplain (graphviz's own layout of our graph, read
back) must be the program's call graph with the counts it states:

  * mutual: is_even -> is_odd and is_odd -> is_even; main calls each of them 31
    times plus one is_odd(1001), so the edges carry the rest of their counts;
  * recursion: fib -> fib (every call but the first), rec_deep -> rec_deep;
    rec_hidden_helper is called from main only: no edge;
  * libchain: the calls its comment lists (lca_step -> lcb_mix three times a step,
    lcb_apply -> lca_leaf once, ...), with the counts the libraries keep;
  * every node's call count equals the program's;
  * --metric=time: the same edges and counts, with times;
  * heapshape (memtrace): the edge into each of the program's allocating functions
    carries the bytes and allocations its manifest states;
  * leaks_cxx (memtrace): C++ names with parentheses, colons and spaces survive
    into graphviz's labels.
"""

import os
import re
import shlex
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402


def program_calls(out):
    for line in out.splitlines():
        if line.startswith("calls "):
            return {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}
    return {}


def graphviz(ck, dot_file, what):
    """graphviz's plain output of our graph: {node: label lines}, {(tail, head): label}."""
    svg = h.run(["dot", "-Tsvg", dot_file])
    if ck.check(svg.status == 0, f"{what}: dot -Tsvg\n{svg.describe()}"):
        try:
            root = ET.fromstring(svg.out)
            ck.check(root.tag.endswith("svg"), f"{what}: SVG root is {root.tag}")
        except ET.ParseError as e:
            ck.fail(f"{what}: dot -Tsvg output is not XML ({e})")
    plain = h.run(["dot", "-Tplain", dot_file])
    if not ck.check(plain.status == 0 and plain.err.strip() == "",
                    f"{what}: dot -Tplain\n{plain.describe()}"):
        return None, None
    nodes, edges = {}, {}
    # dot breaks long lines of -Tplain with a backslash-newline.
    for line in plain.out.replace("\\\n", "").splitlines():
        w = shlex.split(line)
        if w and w[0] == "node":
            nodes[w[1]] = w[6].split("\\n")
        elif w and w[0] == "edge":
            n = int(w[3])
            edges[(w[1], w[2])] = w[4 + 2 * n].split("\\n")
    return nodes, edges


def call_graph(ck, nodes, edges, what):
    """{(caller, callee): calls} and {function: calls} from the labels."""
    graph, calls = {}, {}
    for name, label in nodes.items():
        m = re.fullmatch(r"(\d+) calls?", label[-1])
        ck.check(m, f"{what}: node label {label}")
        calls[label[0]] = int(m.group(1)) if m else None
    for (a, b), label in edges.items():
        m = re.fullmatch(r"(\d+) calls?", label[-1])
        ck.check(m, f"{what}: edge label {label}")
        graph[(nodes[a][0], nodes[b][0])] = int(m.group(1)) if m else None
    return graph, calls


def check_calls(ck, work, exe, patterns, expect_edges):
    what = os.path.basename(exe)
    tr = h.trace([exe], patterns=patterns, outdir=os.path.join(work, what))
    if not ck.check(tr.result.status == 0 and tr.files, f"tracing {what}\n{tr.result.describe()}"):
        return
    counts = program_calls(tr.result.out)
    want = {k: v for k, v in expect_edges(counts).items() if v}
    for metric in ("calls", "time"):
        dot_file = os.path.join(work, f"{what}.{metric}.dot")
        res = h.run_postproc(["dot", f"--metric={metric}", "-o", dot_file, tr.outdir])
        if not ck.check(res.status == 0, f"{what}: dot --metric={metric}\n{res.describe()}"):
            continue
        nodes, edges = graphviz(ck, dot_file, f"{what} --metric={metric}")
        if nodes is None:
            continue
        graph, calls = call_graph(ck, nodes, edges, what)
        ck.check_eq(graph, want, f"{what} --metric={metric}: edges and their calls")
        ck.check_eq(calls, counts, f"{what} --metric={metric}: calls per function")
        if metric == "time":
            ck.check(all(re.fullmatch(r"[\d.]+ (ns|us|ms|s)", l[0]) for l in edges.values()),
                     f"{what}: edge times {list(edges.values())[:3]}")


def manifest_allocs(out):
    allocs = {}
    for line in out.splitlines():
        w = line.split()
        if w and w[0] == "allocs":
            allocs[w[1]] = [int(w[2]), int(w[3])]
    return allocs


def check_heap(ck, work, heapshape, leaks_cxx):
    what = os.path.basename(heapshape)
    tr = h.trace([heapshape], outdir=os.path.join(work, what), plugin="memtrace")
    if not ck.check(tr.result.status == 0 and tr.files, f"tracing {what}\n{tr.result.describe()}"):
        return
    allocs = manifest_allocs(tr.result.out)
    dot_file = os.path.join(work, what + ".dot")
    res = h.run_postproc(["dot", "-o", dot_file, tr.outdir])  # memtrace: bytes by default
    if not ck.check(res.status == 0, f"{what}: dot\n{res.describe()}"):
        return
    nodes, edges = graphviz(ck, dot_file, what)
    if nodes is None:
        return
    into = {}
    for (a, b), label in edges.items():
        fn = nodes[b][0]
        m = re.fullmatch(r"(\d+) bytes?", label[0]), re.fullmatch(r"(\d+) allocations?", label[1])
        if fn in allocs and ck.check(all(m), f"{what}: edge label {label}"):
            got = into.setdefault(fn, [0, 0])
            got[0] += int(m[1].group(1))
            got[1] += int(m[0].group(1))
    ck.check_eq(into, allocs, f"{what}: allocations and bytes on the edges into each function")

    what = os.path.basename(leaks_cxx)
    tr = h.trace([leaks_cxx], outdir=os.path.join(work, what), plugin="memtrace")
    if not ck.check(tr.result.status == 0 and tr.files, f"tracing {what}\n{tr.result.describe()}"):
        return
    dot_file = os.path.join(work, what + ".dot")
    res = h.run_postproc(["dot", "--metric=bytes", "-o", dot_file, tr.outdir])
    if ck.check(res.status == 0, f"{what}: dot\n{res.describe()}"):
        nodes, _ = graphviz(ck, dot_file, what)
        names = [label[0] for label in (nodes or {}).values()]
        ck.check(any(n.startswith("operator new(") for n in names) and
                 any("::" in n and "(" in n for n in names),
                 f"{what}: C++ names in graphviz's labels: {names}")


def main():
    ck = h.Checker("dot")
    h.require_tools("dot", ["dot"], "graphviz")
    mutual, recursion, libchain, heapshape, leaks_cxx = sys.argv[1:6]
    with tempfile.TemporaryDirectory(prefix="ft-dot-") as work:
        # main calls is_even(n) and is_odd(n) for n in 0..30, then is_odd(1001).
        check_calls(ck, work, mutual, "is_even,is_odd", lambda c: {
            ("is_even", "is_odd"): c["is_odd"] - 32,
            ("is_odd", "is_even"): c["is_even"] - 31})
        check_calls(ck, work, recursion, "fib,rec_deep,rec_hidden_helper", lambda c: {
            ("fib", "fib"): c["fib"] - 1,
            ("rec_deep", "rec_deep"): c["rec_deep"] - 1})
        check_calls(ck, work, libchain, "lc_main,lca_*,lcb_*", lambda c: {
            ("lc_main", "lca_run"): c["lca_run"],
            ("lc_main", "lcb_mix"): c["lca_run"],  # once per round
            ("lca_run", "lca_step"): c["lca_step"],
            ("lca_run", "lcb_fold"): c["lcb_fold"],
            ("lca_step", "lcb_mix"): 3 * c["lca_step"],
            ("lca_step", "lcb_apply"): c["lcb_apply"],
            ("lcb_apply", "lca_leaf"): c["lca_leaf"],
            ("lcb_fold", "lcb_mix"): c["lcb_fold"]})
        check_heap(ck, work, heapshape, leaks_cxx)
    ck.finish()


if __name__ == "__main__":
    main()

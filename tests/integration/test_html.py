#!/usr/bin/env python3
"""The views of the html report, rendered by headless Chromium.

usage: test_html.py HEAPSHAPE LEAKS_CXX

Each program is traced with memtrace, `functracer-postproc html` writes the page and
Chromium renders it (the DOM after the page's script ran, and screenshots). Oracles:
the JSON of the leaks, allocators, temporary, peak and histogram reports of the same
traces (their totals, and per function sums computed here from their groups'
frames), heapshape's and leaks_cxx's statements about themselves. Checked:

  * one self-contained file: nothing from the network;
  * the summary's leaked, allocated, allocations, temporary and peak values;
  * each tree's root holds the totals of every metric, a node's children add up to
    it, and the bottom-up roots' leaked bytes are the leaks groups' by innermost
    function;
  * the caller/callee table: per function, inclusive and self leaked, peak and
    allocated bytes equal the sums over the groups of leaks, peak and allocators
    that hold the function (inclusive) or start with it (self);
  * the peak view's peak per process, the size histogram's buckets;
  * the leak table: bytes per leaking function equal the program's statement, each
    row is titled by the program's own function, not by allocator internals;
    shortened C++ names keep the full name in their title attribute;
  * readable units in the cells, labelled axes on the chart;
  * the flame graph takes the window's width (narrow and wide windows);
  * a screenshot of each view shows something drawn (FT_HTML_SCREENSHOTS=DIR keeps
    them for a reader).
"""

import collections
import html
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import ftharness as h  # noqa: E402

VIEWS = ["summary", "leaks", "peak", "temporary", "allocations", "sizes", "over-time", "bottom-up",
         "top-down", "caller-callee", "flame-graph"]
METRICS = ["allocations", "allocated", "temporary", "peak", "leaked"]


def postproc_json(ck, args):
    res = h.run_postproc(args + ["--json"])
    ck.check(res.status == 0, f"{args}\n{res.describe()}")
    return json.loads(res.out) if res.status == 0 else {}


def section(dom, view):
    m = re.search(rf'<section class="view" id="view-{view}"[^>]*>(.*?)</section>', dom, re.S)
    return m.group(1) if m else ""


def values(row):
    return [int(v) for v in re.findall(r'<td class="num[^"]*" data-value="(\d+)"', row)]


def tree_rows(dom, tree_id):
    m = re.search(rf'<table class="tree" id="tree-{tree_id}">(.*?)</table>', dom, re.S)
    rows = []
    for r in re.findall(r'<tr class="node[^"]*"([^>]*)>(.*?)</tr>', m.group(1) if m else "", re.S):
        attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', r[0]))
        rows.append({"id": attrs.get("id"), "parent": attrs.get("parent"),
                     "name": html.unescape(attrs.get("name", "")), "v": values(r[1])})
    return rows


def fname(frame):
    return frame["function"] if frame.get("function") else None


def per_function(groups, key):
    """{function: [inclusive, self]} of the groups' `key`, each group once per function."""
    out = collections.defaultdict(lambda: [0, 0])
    for g in groups:
        names = [fname(f) for f in g["frames"]]
        for n in set(names):
            if n:
                out[n][0] += g[key]
        if names and names[0]:
            out[names[0]][1] += g[key]
    return out


def check_heapshape(ck, exe, work, shots):
    tr = h.trace([exe], None, os.path.join(work, "shape"), plugin="memtrace")
    ck.check(tr.result.status == 0, f"traced heapshape\n{tr.result.describe()}")
    page = os.path.join(work, "shape.html")
    res = h.run_postproc(["html", "-o", page, tr.outdir])
    if not ck.check(res.status == 0, f"html\n{res.describe()}"):
        return
    with open(page, encoding="utf-8") as f:
        text = f.read()
    ck.check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "@import" not in text
             and "url(" not in text, "one self-contained file: nothing from the network")
    leaks = postproc_json(ck, ["leaks", tr.outdir])
    allocators = postproc_json(ck, ["allocators", tr.outdir])
    temporary = postproc_json(ck, ["temporary", tr.outdir])
    peak = postproc_json(ck, ["peak", tr.outdir])
    histogram = postproc_json(ck, ["histogram", tr.outdir])
    peak_sum = sum(p["peak_bytes"] for p in peak.get("processes", []))
    want_totals = [allocators.get("allocations"), allocators.get("allocated_bytes"), temporary.get("temporary"),
                   peak_sum, leaks.get("leaked_bytes")]

    dom = browser.dump_dom(browser.file_url(page, "summary"))

    def by_id(i):
        m = re.search(rf'id="{i}" data-value="(\d+)"', dom)
        return int(m.group(1)) if m else None

    ck.check_eq([by_id("allocation-count"), by_id("allocated-bytes"), by_id("temporary-count"), by_id("peak-bytes"),
                 by_id("leaked-bytes")],
                [want_totals[0], want_totals[1], want_totals[2], peak.get("peak_bytes"), want_totals[4]],
                "summary: allocations, allocated, temporary, peak, leaked = the reports' JSON")
    ck.check(re.search(r'id="leaked-bytes"[^>]*>\d+(\.\d+)? (B|KiB|MiB)</td>', dom), "summary: leaked in readable units")

    for tree in ("top-down", "bottom-up"):
        rows = tree_rows(dom, tree)
        if not ck.check(rows and rows[0]["parent"] == "", f"{tree}: a root row"):
            continue
        ck.check_eq(rows[0]["v"], want_totals, f"{tree}: the root's {METRICS} = the reports' JSON")
        kids = collections.defaultdict(lambda: [0] * 5)
        has_kids = set()
        for r in rows[1:]:
            has_kids.add(r["parent"])
            for i, v in enumerate(r["v"]):
                kids[r["parent"]][i] += v
        bad = [r["name"] for r in rows if r["id"] in has_kids and kids[r["id"]] != r["v"]]
        ck.check_eq(bad[:5], [], f"{tree}: every node's children add up to it")
    bottom = tree_rows(dom, "bottom-up")
    got = {r["name"]: r["v"][4] for r in bottom if r["parent"] == "0" and r["v"][4]}
    want = collections.Counter()
    for g in leaks.get("groups", []):
        want[fname(g["frames"][0]) if g["frames"] else "(no backtrace)"] += g["bytes"]
    ck.check_eq(got, dict(want), "bottom-up: leaked bytes per innermost function = leaks --json")

    table = {}
    for attrs, row in re.findall(r'<tr class="fn-row" data-name="([^"]*)">(.*?)</tr>\n', dom, re.S):
        table[html.unescape(attrs)] = values(re.sub(r"<details>.*</details>", "", row, flags=re.S))
    for metric, groups, key in (("leaked", leaks.get("groups", []), "bytes"),
                                ("allocated", allocators.get("groups", []), "bytes"),
                                ("peak", [g for p in peak.get("processes", []) for g in p["groups"]], "bytes")):
        i = METRICS.index(metric)
        want = {f: v for f, v in per_function(groups, key).items()}
        got = {f: [v[2 * i], v[2 * i + 1]] for f, v in table.items() if f in want or v[2 * i]}
        ck.check_eq(got, want, f"caller/callee: {metric} inclusive and self per function")

    peaks = {int(p): int(v) for p, v in re.findall(r'class="peak-process" data-pid="(\d+)" data-value="(\d+)"', dom)}
    ck.check_eq(peaks, {p["pid"]: p["peak_bytes"] for p in peak.get("processes", [])}, "peak: per process")
    buckets = [(int(lo), int(hi), values(row)) for lo, hi, row in
               re.findall(r'<tr class="bucket"><td data-min="(\d+)" data-max="(\d+)"[^>]*>.*?</td>(.*?)</tr>', dom, re.S)]
    ck.check_eq([(lo, hi, v[0], v[1], v[2]) for lo, hi, v in buckets],
                [(b["min"], b["max"], b["allocations"], b["bytes"], b["leaked_blocks"])
                 for b in histogram.get("buckets", [])], "sizes: the buckets = histogram --json")
    heads = [html.unescape(x) for x in re.findall(r"<th[^>]*>([^<]*)</th>", section(dom, "sizes"))]
    ck.check_eq(heads[:4], ["size", "allocations", "bytes", "leaked blocks"],
                "sizes: the headings say the leaked column counts blocks (the bytes column counts bytes)")

    stated = {}  # heapshape: "leak FUNCTION BLOCKS BYTES"
    for line in tr.result.out.splitlines():
        w = line.split()
        if len(w) >= 4 and w[0] == "leak":
            stated[w[1]] = int(w[3])
    leak_rows = re.findall(r'<tr class="group">(.*?)</tr>', section(dom, "leaks"), re.S)
    got = collections.Counter()
    for row in leak_rows:
        t = re.search(r'<td class="title"><span class="fn" title="([^"]*)"', row)
        got[html.unescape(t.group(1)) if t else None] += values(row)[0]
    ck.check_eq({f: v for f, v in got.items() if f in stated}, stated,
                "leaks: bytes per row title = heapshape's leaks (titles are its functions)")

    chart = section(dom, "over-time")
    ck.check("time since the trace started" in chart and "live heap" in chart, "chart: axis titles")
    ck.check(re.search(r'class="tick-y"[^>]*>\d+(\.\d+)? (KiB|MiB)<', chart), "chart: byte ticks in KiB/MiB")
    ck.check(len(re.findall(r'class="tick-x"', chart)) >= 3, "chart: time ticks")

    for width in (900, 1700):
        d = browser.dump_dom(browser.file_url(page, "flame-graph"), width=width, height=900)
        m = re.search(r'<svg[^>]*id="fg-allocated"[^>]*>', d)
        w = re.search(r'\bwidth="(\d+)"', m.group(0)) if m else None
        got_w = int(w.group(1)) if w else 0
        ck.check(width - 120 < got_w <= width, f"flame graph fills a {width}px window (width {got_w})")

    for view in VIEWS:
        png = os.path.join(work, f"{view}.png")
        img = browser.screenshot(browser.file_url(page, view), png, 1400, 1000)
        dark = sum(1 for y in range(60, img.height, 6) for x in range(0, img.width, 6)
                   if sum(img.pixel(x, y)) < 300)
        ck.check(dark > 50, f"screenshot of {view}: something drawn ({dark} dark samples)")
        if shots:
            shutil.copy(png, os.path.join(shots, f"heapshape-{view}.png"))


def check_cxx(ck, exe, work, shots):
    tr = h.trace([exe], None, os.path.join(work, "cxx"), plugin="memtrace")
    ck.check(tr.result.status == 0, f"traced leaks_cxx\n{tr.result.describe()}")
    stated = set()
    for line in tr.result.out.splitlines():
        w = line.split()
        if w and w[0] == "leak":
            stated.add(w[1])
    page = os.path.join(work, "cxx.html")
    res = h.run_postproc(["html", "-o", page, tr.outdir])
    if not ck.check(res.status == 0, f"html (C++)\n{res.describe()}"):
        return
    dom = browser.dump_dom(browser.file_url(page, "leaks"))
    leaks = postproc_json(ck, ["leaks", tr.outdir])
    titles = [html.unescape(t) for t in
              re.findall(r'<td class="title"><span class="fn" title="([^"]*)"', section(dom, "leaks"))]
    ck.check_eq(len(titles), len(leaks.get("groups", [])), "leaks_cxx: a row per leak group")
    runtime = [t for t in titles if re.match(r"(std::|__gnu_cxx::|operator new|operator delete)", t)]
    ck.check_eq(runtime, [], "leaks_cxx: no row titled by allocator internals")
    mine = {t.split("(")[0] for t in titles} & stated
    ck.check(len(mine) >= min(5, len(stated)), f"leaks_cxx: rows titled by its leaking functions ({sorted(mine)})")
    def outside(name):
        """The name without what is inside <> and () (kept: the brackets' places)."""
        out, depth = "", 0
        for c in name.replace("(anonymous namespace)", "{anon}"):
            if c in "<(":
                depth += 1
                if depth == 1:
                    out += c
            elif c in ">)":
                depth -= 1
                if depth == 0:
                    out += c
            elif depth == 0:
                out += c
        return out

    spans = [(html.unescape(t), html.unescape(s)) for t, s in
             re.findall(r'<span class="fn" title="([^"]*)">([^<]*)</span>', dom)]
    long_names = [(t, s) for t, s in spans if re.search(r"<[^>]", t)]
    bad = [(t, s) for t, s in long_names
           if len(s) >= len(t) or outside(t) != outside(s.replace("\u2026", "")) or re.search(r"<[^\u2026]", s)]
    ck.check(long_names and not bad, f"leaks_cxx: template names shortened, the full name in the title {bad[:2]}")
    if shots:
        for view in ("leaks", "caller-callee", "bottom-up"):
            browser.screenshot(browser.file_url(page, view), os.path.join(shots, f"cxx-{view}.png"), 1400, 1000)


def main():
    ck = h.Checker("html")
    heapshape, leaks_cxx = sys.argv[1:3]
    if browser.chromium() is None:
        h.skip_test("html", "chromium not installed (Debian package chromium)")
    shots = os.environ.get("FT_HTML_SCREENSHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ft-html-") as work:
        check_heapshape(ck, heapshape, work, shots)
        check_cxx(ck, leaks_cxx, work, shots)
    ck.finish()


if __name__ == "__main__":
    main()

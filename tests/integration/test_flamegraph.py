#!/usr/bin/env python3
"""The flamegraph report (folded stacks and SVG) and the html report on traced
programs.

usage: test_flamegraph.py RECURSION MUTUAL HEAPSHAPE LEAKS_CXX

Oracles: the programs' own knowledge (recursion.c: fib's call tree, so the calls
at each depth; mutual.c: the is_even/is_odd chains it makes; heapshape.c and
leaks_cxx.cc: their manifests of allocations, leaks, the peak and temporary
blocks), the raw trace records replayed here (tracefile.py), c++filt for the
allocator names, the folded grammar of flamegraph.pl, and headless Chromium for
the SVG (its pixels and its DOM after the script ran). Checked:

  * calls: the count of every stack equals the program's call tree, the sum the
    calls the program counted;
  * time: the self time of every stack equals the one replayed from the raw
    call/return records, the sum the outermost calls' durations;
  * heap metrics: per program function (the innermost frame of the stack that is
    one), allocated bytes, allocations, leaked bytes, bytes at the peak and bytes
    of temporary blocks equal the manifest; totals equal the raw records'; the
    leaf of every stack is the allocator the raw record names;
  * C++: the leaked bytes per leaking function, the leaf is c++filt's name of
    the recorded entry point; names with < > & come out escaped in the SVG;
  * SVG: well-formed XML; widths proportional to the values; children inside
    their parent; labels fit; Chromium draws the root bar across the width and
    coloured frames above it; #search= highlights the matching frames and the
    script reports the share they cover;
  * html: in Chromium's DOM, the leak table's rows per leaking function equal the
    manifest, leaked bytes the raw records', the peak the manifest's, the chart's
    points reach the peak and end at the leaked bytes; the screenshots of the heap
    over time and the flame graph views show the chart line and flame graph frames
    (test_html.py checks the other views);
  * bad metrics are one line and a non-zero exit.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
FOLDED_LINE = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")  # flamegraph.pl's grammar


def folded(ck, args):
    res = h.run_postproc(["flamegraph"] + list(args))
    if not ck.check(res.status == 0, f"flamegraph {' '.join(args)} failed\n{res.describe()}"):
        return {}
    stacks = collections.Counter()
    for line in res.out.splitlines():
        m = FOLDED_LINE.match(line)
        if not ck.check(m is not None and m.group(2).isdigit(), f"folded line {line[:200]!r}"):
            continue
        ck.check(m.group(1) not in stacks, f"stack listed twice: {m.group(1)[:200]}")
        stacks[m.group(1)] += int(m.group(2))
    return stacks


def trace(ck, args, outdir, plugin, patterns=None):
    tr = h.trace(args, patterns=patterns, outdir=outdir, plugin=plugin)
    ck.check(tr.result.status == 0, f"traced {args} failed\n{tr.result.describe()}")
    return tr


def replay_self_times(files):
    """stack (';'-joined mangled names) -> self ns, from the raw records."""
    out = collections.Counter()
    for path in files:
        stacks = collections.defaultdict(list)
        for r in parse_trace(path):
            st = stacks[r["tid"]]
            if r["type"] == "call":
                st.append([r["function"], r["ts"], 0])
            elif r["type"] in ("return", "unwound"):
                fn, ts0, children = st[-1]
                incl = r["ts"] - ts0
                out[";".join(f[0] for f in st)] += incl - children
                st.pop()
                if st:
                    st[-1][2] += incl
    return out


def check_recursion(ck, exe, work):
    n = 12
    tr = trace(ck, [exe, str(n)], os.path.join(work, "rec"), "calltrace", "fib,rec_hidden_helper")
    want = collections.Counter()

    def fib(k, path):
        want[path] += 1
        if k >= 2:
            fib(k - 1, path + ";fib")
            fib(k - 2, path + ";fib")

    fib(n, "fib")
    want["rec_hidden_helper"] = n
    calls = folded(ck, ["--metric", "calls", tr.outdir])
    ck.check_eq(dict(calls), dict(want), "recursion: calls per stack (fib's call tree)")
    stated = h.parse_expectations(tr.result.out).calls
    ck.check_eq(sum(calls.values()), stated["fib"] + stated["rec_hidden_helper"],
                "recursion: sum of calls = the program's count")
    time = folded(ck, [tr.outdir])  # time is the default for calltrace traces
    ck.check_eq(dict(time), dict(replay_self_times(tr.files)), "recursion: self time per stack")
    outer = sum(v for k, v in replay_self_times(tr.files).items())
    ck.check_eq(sum(time.values()), outer, "recursion: total time")
    ck.check(all(v > 0 for v in time.values()), "recursion: every stack took some time")
    return tr


def check_mutual(ck, exe, work):
    tr = trace(ck, [exe], os.path.join(work, "mutual"), "calltrace", "is_even,is_odd")
    want = collections.Counter()

    def chain(first, length):
        names = ["is_even", "is_odd"] if first == "is_even" else ["is_odd", "is_even"]
        for k in range(1, length + 1):
            want[";".join(names[i % 2] for i in range(k))] += 1

    for n in range(31):
        chain("is_even", n + 1)
        chain("is_odd", n + 1)
    chain("is_odd", 1002)
    calls = folded(ck, ["--metric", "calls", tr.outdir])
    ck.check_eq(dict(calls), dict(want), "mutual: calls per stack")
    stated = h.parse_expectations(tr.result.out).calls
    ck.check_eq(sum(calls.values()), stated["is_even"] + stated["is_odd"], "mutual: sum of calls")


def per_function(stacks, functions):
    out = collections.Counter()
    for stack, v in stacks.items():
        frames = stack.split(";")
        fn = next((f for f in reversed(frames) if f in functions), None)
        out[fn] += v
    return out


def replay_heap(records):
    """Totals from the raw records: allocated, allocations, leaked, temporary bytes."""
    live, last = {}, {}
    allocated = allocations = temporary = 0
    for r in records:
        if r["type"] == "alloc":
            live.pop(r["address"], None)
            live[r["address"]] = (r["size"], r["tid"])
            last[r["tid"]] = r["address"]
            allocated += r["size"]
            allocations += 1
        elif r["type"] == "free" and r["address"] in live:
            size, owner = live.pop(r["address"])
            if owner == r["tid"] and last.get(r["tid"]) == r["address"]:
                temporary += size
                del last[r["tid"]]
    return {"allocated": allocated, "allocations": allocations,
            "leaked": sum(s for s, _ in live.values()), "temporary": temporary}


def check_heapshape(ck, exe, work):
    tr = trace(ck, [exe], os.path.join(work, "shape"), "memtrace")
    m = h.heap_manifest(tr.result.out)
    functions = set(m["allocs"])
    records = parse_trace(tr.files[0])
    raw = replay_heap(records)
    allocators = {r["function"] for r in records if r["type"] == "alloc"}
    # bytes of each temporary block, per function (heapshape.c: churn frees its 48-byte
    # blocks, interleaved its second, 24-byte block, load_batch its last 4096 bytes)
    temp_size = {"churn": 48, "interleaved": 24, "load_batch": 4096}
    wants = {
        "allocated": {f: v[1] for f, v in m["allocs"].items()},
        "allocations": {f: v[0] for f, v in m["allocs"].items()},
        "leaked": {f: v[1] for f, v in m["leak"].items()},
        "peak": {f: v[0] for f, v in m["peak_live"].items() if v[0]},
        "temporary": {f: v[0] * temp_size[f] for f, v in m["temporary"].items()},
    }
    default = folded(ck, [tr.outdir])
    for metric, want in wants.items():
        stacks = folded(ck, ["--metric", metric, tr.outdir])
        got = per_function(stacks, functions)
        got.pop(None, None)  # libc's own (pthread_create's TLS)
        ck.check_eq(dict(got), want, f"heapshape --metric {metric}: per function")
        total = m["peak"][0] if metric == "peak" else raw[metric]
        ck.check_eq(sum(stacks.values()), total, f"heapshape --metric {metric}: total")
        leaves = {s.split(";")[-1] for s in stacks}
        ck.check(leaves <= allocators, f"--metric {metric}: leaves {leaves} are allocators {allocators}")
        if metric == "allocated":
            ck.check_eq(dict(default), dict(stacks), "allocated is the default for memtrace traces")
        for s in stacks:
            fn = per_function({s: 1}, functions)
            if None not in fn:
                ck.check(s.startswith("_start;") or "start_thread;" in s,
                         f"--metric {metric}: outermost frame first: {s}")
    return tr


def check_cxx(ck, exe, work):
    tr = trace(ck, [exe], os.path.join(work, "cxx"), "memtrace")
    leaks = {}
    for line in tr.result.out.splitlines():
        w = line.split()
        if w and w[0] == "leak":
            kv = dict(x.split("=", 1) for x in w[2:])
            leaks[w[1]] = (int(kv["blocks"]) * int(kv["bytes"]), kv["entry"])
    ck.check(len(leaks) >= 5, f"leaks_cxx states its leaks: {leaks}")
    demangled = subprocess.run(["c++filt"] + [e for _, e in leaks.values()], stdout=subprocess.PIPE,
                               text=True, check=True).stdout.split("\n")
    entry_name = dict(zip([e for _, e in leaks.values()], demangled))
    stacks = folded(ck, ["--metric", "leaked", tr.outdir])
    for fn, (bytes_, entry) in leaks.items():
        mine = {s: v for s, v in stacks.items() if f";{fn}()" in s}
        ck.check_eq(sum(mine.values()), bytes_, f"leaks_cxx {fn}: leaked bytes")
        ck.check_eq({s.split(";")[-1] for s in mine}, {entry_name[entry]},
                    f"leaks_cxx {fn}: the leaf is the allocator")
    svg = os.path.join(work, "cxx.svg")
    res = h.run_postproc(["flamegraph", "--metric", "allocated", "--svg", "-o", svg, tr.outdir])
    ck.check(res.status == 0, f"flamegraph --svg (C++)\n{res.describe()}")
    frames = check_svg(ck, svg, "leaks_cxx allocated")
    names = {f["name"] for f in frames}
    ck.check(any("<" in n and ">" in n for n in names), "C++ template names survive escaping")
    ck.check("operator new(unsigned long)" in names, "operator new is a frame")


def svg_frames(root):
    frames = []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(SVG + "title").text
        rect = g.find(SVG + "rect")
        text = g.find(SVG + "text").text or ""
        frames.append({"name": title[:title.rindex(" (")], "title": title,
                       "o": int(g.get("data-o")), "v": int(g.get("data-v")), "d": int(g.get("data-d")),
                       "x": float(rect.get("x")), "y": float(rect.get("y")),
                       "w": float(rect.get("width")), "h": float(rect.get("height")),
                       "fill": rect.get("fill"), "label": text})
    return frames


def check_svg(ck, path, what):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        ck.fail(f"{what}: SVG is not well-formed XML: {e}")
        return []
    ck.check_eq(root.tag, SVG + "svg", f"{what}: root element")
    width = float(root.get("width"))
    plot = width - 20
    frames = svg_frames(root)
    if not ck.check(frames, f"{what}: frames drawn"):
        return frames
    total = frames[0]["v"]
    ck.check_eq(frames[0]["name"], "all", f"{what}: the root frame")
    ck.check_eq(total, int(root.get("data-total")), f"{what}: the root holds the total")
    ck.check(abs(frames[0]["w"] - plot) < 0.01 and abs(frames[0]["x"] - 10) < 0.01,
             f"{what}: the root spans the width")
    bad = []
    by_depth = collections.defaultdict(list)
    for f in frames:
        by_depth[f["d"]].append(f)
        if abs(f["w"] - f["v"] / total * plot) > 0.006 or abs(f["x"] - 10 - f["o"] / total * plot) > 0.006:
            bad.append(f"{f['name']}: width {f['w']} for {f['v']}/{total}")
        if len(f["label"]) > max(0, (f["w"] - 6) / 7.2):
            bad.append(f"{f['name']}: label {f['label']!r} wider than {f['w']}")
        if not re.search(r"\(\d[^()]* [a-z]+, \d+\.\d\d%\)$", f["title"]):
            bad.append(f"tooltip {f['title']!r}")
    for f in frames[1:]:
        parents = [p for p in by_depth[f["d"] - 1] if p["o"] <= f["o"] and f["o"] + f["v"] <= p["o"] + p["v"]]
        if len(parents) != 1:
            bad.append(f"{f['name']}: {len(parents)} parents")
            continue
        p = parents[0]
        if f["x"] < p["x"] - 0.01 or f["x"] + f["w"] > p["x"] + p["w"] + 0.02 or f["y"] != p["y"] - 16:
            bad.append(f"{f['name']}: outside its parent {p['name']}")
    ck.check(not bad, f"{what}: SVG frames\n  " + "\n  ".join(bad[:10]))
    return frames


def check_svg_in_browser(ck, tr, work):
    svg = os.path.join(work, "shape.svg")
    res = h.run_postproc(["flamegraph", "--svg", "--metric", "allocated", "-o", svg, tr.outdir])
    if not ck.check(res.status == 0, f"flamegraph --svg\n{res.describe()}"):
        return
    frames = check_svg(ck, svg, "heapshape allocated")
    root = ET.parse(svg).getroot()
    width, height = int(float(root.get("width"))), int(float(root.get("height")))
    if browser.chromium() is None:
        ck.skip("SVG rendering", "chromium not installed (Debian package chromium)")
        return
    img = browser.screenshot(browser.file_url(svg), os.path.join(work, "shape.png"), width, height)
    bg = img.pixel(2, 2)
    rootf = frames[0]
    y = int(rootf["y"] + rootf["h"] / 2)
    row = [img.pixel(x, y) for x in range(int(rootf["x"]) + 1, int(rootf["x"] + rootf["w"]) - 1)]
    # The label's glyphs are dark; the rest of the bar is the frame's colour.
    fill = tuple(int(c) for c in re.findall(r"\d+", rootf["fill"]))
    same = sum(1 for p in row if max(abs(a - b) for a, b in zip(p, fill)) <= 3)
    ck.check(same > 0.9 * len(row), f"screenshot: the root bar is drawn in {fill} across the width "
             f"({same} of {len(row)} pixels)")
    ck.check(bg != fill and img.pixel(2, y) == bg, "screenshot: the margin is background")
    for f in frames:
        if f["w"] > 50:
            cx, cy = int(f["x"] + f["w"] - 4), int(f["y"] + 2)
            p = img.pixel(cx, cy)
            want = tuple(int(c) for c in re.findall(r"\d+", f["fill"]))
            ck.check(max(abs(a - b) for a, b in zip(p, want)) <= 3,
                     f"screenshot: {f['name']} at ({cx},{cy}) is {p}, want {want}")
    above = int(min(f["y"] for f in frames)) - 3
    ck.check(all(img.pixel(x, above) == bg for x in range(0, width, 7)), "screenshot: blank above the flames")
    # The search, through the URL: matching frames turn magenta, the share is reported.
    hits = [f for f in frames if f["name"].startswith("leak_")]
    dom = browser.dump_dom(browser.file_url(svg, "search=^leak_"))
    covered = sum(f["v"] for f in hits)
    ck.check(f'data-matched="{covered}"' in dom, f"search: the script covers {covered} (leak_*)")
    pct = f"Matched: {100 * covered / frames[0]['v']:.2f}%"
    ck.check(pct in dom, f"search: {pct!r} shown")
    img = browser.screenshot(browser.file_url(svg, "search=^leak_"), os.path.join(work, "search.png"),
                             width, height)
    for f in hits:
        if f["w"] > 6:
            p = img.pixel(int(f["x"] + f["w"] / 2), int(f["y"] + 2))
            ck.check(p == (230, 0, 230), f"search: {f['name']} highlighted ({p})")


def check_html(ck, tr, work):
    """The html report of heapshape in Chromium: the DOM after the scripts ran holds
    the leak table rows of the leaking functions, the summary and the chart's points;
    the screenshot shows the chart and the flame graph."""
    m = h.heap_manifest(tr.result.out)
    raw = replay_heap(parse_trace(tr.files[0]))
    page = os.path.join(work, "heap.html")
    res = h.run_postproc(["html", "-o", page, tr.outdir])
    if not ck.check(res.status == 0, f"html\n{res.describe()}"):
        return
    with open(page, encoding="utf-8") as f:
        text = f.read()
    ck.check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "html: nothing from the network")
    if browser.chromium() is None:
        ck.skip("HTML rendering", "chromium not installed (Debian package chromium)")
        return
    dom = browser.dump_dom(browser.file_url(page))
    ck.check(f'id="leaked-bytes" data-value="{raw["leaked"]}"' in dom,
             f"html: leaked bytes {raw['leaked']} (raw records)")
    ck.check(f'id="peak-bytes" data-value="{m["peak"][0]}"' in dom, f"html: peak {m['peak'][0]} (manifest)")
    table = re.search(r'<table id="leak-table">(.*?)</table>', dom, re.S)
    rows = re.findall(r'<tr class="group">(.*?)</tr>', table.group(1) if table else "", re.S)
    got = collections.Counter()
    for row in rows:
        nums = re.findall(r'<td class="num" data-value="(\d+)"', row)
        frames = re.findall(r'<li class="frame">(.*?)</li>', row, re.S)
        fn = next((f for fr in frames for f in m["leak"] if re.search(rf"\b{f}\b", fr)), None)
        got[fn] += int(nums[0])
    got.pop(None, None)
    ck.check_eq(dict(got), {f: v[1] for f, v in m["leak"].items()}, "html: leak table rows per leaking function")
    points = [int(b) for b in re.findall(r'<circle cx="[^"]*" cy="[^"]*" r="1" data-ns="\d+" data-bytes="(\d+)"', dom)]
    ck.check(len(points) > 100, f"html: chart points ({len(points)})")
    ck.check(points and max(points) == m["peak"][0], "html: the chart reaches the peak")
    ck.check(points and points[-1] == raw["leaked"], "html: the chart ends at the leaked bytes")
    ck.check(re.search(rf'class="peak"[^>]*data-bytes="{m["peak"][0]}"', dom), "html: the peak is marked")
    ck.check(dom.count('class="ft-flamegraph"') == 4, "html: four flame graphs")
    ck.check('style="display: none;"' in dom or 'display: none' in dom, "html: the page script ran (one graph shown)")
    img = browser.screenshot(browser.file_url(page, "over-time"), os.path.join(work, "html.png"), 1280, 800)
    colours = collections.Counter(img.pixel(x, y) for y in range(0, img.height, 2) for x in range(0, img.width, 2))
    red = sum(n for (r, g, b), n in colours.items() if r > 150 and g < 120 and b < 120)
    ck.check(red > 50, f"html screenshot: the chart line is drawn ({red} red samples)")
    img = browser.screenshot(browser.file_url(page, "flame-graph"), os.path.join(work, "html.png"), 1280, 800)
    colours = collections.Counter(img.pixel(x, y) for y in range(0, img.height, 4) for x in range(0, img.width, 4))
    flame = sum(n for (r, g, b), n in colours.items() if r >= 205 and b <= 56 and g > 100)
    ck.check(flame > 500, f"html screenshot: flame graph frames ({flame} samples)")


def check_bad(ck, rec, shape):
    cases = [
        (["flamegraph", "--metric", "time", shape], 1, "needs call records"),
        (["flamegraph", "--metric", "leaked", rec], 1, "needs heap records"),
        (["flamegraph", "--metric", "watts", shape], 2, "not 'watts'"),
        (["leaks", "--svg", shape], 2, "does not take --svg"),
        (["flamegraph", "--size", "10", rec], 1, "apply to the heap metrics"),
    ]
    for args, status, text in cases:
        res = h.run_postproc(args)
        err = res.err.strip()
        ck.check(res.status == status and text in err and "\n" not in err,
                 f"functracer-postproc {' '.join(args)}: want exit {status} and one line with {text!r}\n"
                 f"{res.describe()}")


def main():
    ck = h.Checker("flamegraph")
    recursion, mutual, heapshape, leaks_cxx = sys.argv[1:5]
    with tempfile.TemporaryDirectory(prefix="ft-flame-") as work:
        rec = check_recursion(ck, recursion, work)
        check_mutual(ck, mutual, work)
        shape = check_heapshape(ck, heapshape, work)
        check_svg_in_browser(ck, shape, work)
        check_html(ck, shape, work)
        check_cxx(ck, leaks_cxx, work)
        check_bad(ck, rec.outdir, shape.outdir)
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Call sites: where each traced call was made, through every report that shows it.

usage: test_callsites.py SOURCE EXE...

SOURCE is tests/progs/callsites.c, each EXE a build of it. Its calling lines carry a
`/* CALLSITE:NAME */` mark; the line numbers come from searching the source for the
marks, and the order and number of the calls from the source's comment (the program
checks its own counts). Each EXE is traced with calltrace on main, add3 and twice.
Oracles, none of them from functracer-postproc:

  * dump --json: every call of add3 and twice has a "callsite"; addr2line on the
    executable at callsite - 1 (made a link-time address with the module record and
    the executable's program headers, from readelf) names the marked line of that
    call, in the order the program makes the calls;
  * tree: each call line ends with [callsites.c:LINE], the marked line; --no-callsite
    gives the same tree without them;
  * a trace without callsite fields (as older functracers wrote them) still reads:
    its tree is the --no-callsite tree, dump --json has no "callsite";
  * callgrind_annotate (valgrind) on the callgrind report: in the annotated source,
    the calls of add3 and twice ("=> ...:add3 (Nx)") are listed under their marked
    lines only, with the number of calls each site made and, as their cost, the
    inclusive time of those calls replayed from the raw trace records;
  * gprof -l -q (binutils) on the gmon.out of the gprof report: the callers of add3
    and twice in the call graph are main and twice at the marked lines, with each
    site's number of calls.
"""

import collections
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

TRACED = ("add3", "twice")
# (callee, site) of every call of add3 and twice, in the order the program makes them.
SEQUENCE = ([("add3", "main_add3_loop")] * 3 +
            [("twice", "main_twice"), ("add3", "twice_add3"), ("add3", "main_add3_once"),
             ("twice", "main_twice_loop"), ("add3", "twice_add3"),
             ("twice", "main_twice_loop"), ("add3", "twice_add3")])
CALLER = {"main_add3_loop": "main", "main_twice": "main", "main_add3_once": "main",
          "main_twice_loop": "main", "twice_add3": "twice"}


def marked_lines(source):
    marks = {}
    with open(source) as f:
        for n, line in enumerate(f, 1):
            for name in re.findall(r"/\* CALLSITE:(\w+) \*/", line):
                marks[name] = n
    return marks


def link_address(addr, modules, exe, segs):
    """The link-time address in `exe` of a runtime address, or None."""
    real = os.path.realpath(exe)
    for m in modules:
        if m["base"] <= addr < m["end"] and os.path.realpath(m["path"]) == real:
            file_off = addr - m["base"] + m["offset"]
            for off, vaddr, size in segs:
                if off <= file_off < off + size:
                    return file_off - off + vaddr
    return None


def addr2line(exe, addresses):
    """[(file basename, line)] for link-time addresses."""
    if not addresses:
        return []
    res = h.run(["addr2line", "-e", exe] + [hex(a) for a in addresses])
    out = []
    for line in res.out.splitlines():
        m = re.match(r"(.*):(\d+|\?)", line.split(" (discriminator")[0])
        out.append((os.path.basename(m.group(1)), int(m.group(2))) if m and m.group(2) != "?" else None)
    return out


def as_int(v):
    return int(v, 16) if isinstance(v, str) else v


def check_dump(ck, label, exe, files, marks):
    records = h.dump_records(ck, files)
    if records is None:
        return
    modules = [{"base": as_int(r["base"]), "end": as_int(r["end"]), "offset": as_int(r["offset"]),
                "path": r["path"]} for r in records if r["type"] == "module"]
    calls = [r for r in records if r["type"] == "call" and r.get("function") in TRACED]
    ck.check_eq(len(calls), len(SEQUENCE), f"{label}: calls of add3 and twice in dump --json")
    missing = [r for r in calls if "callsite" not in r]
    if not ck.check(not missing, f"{label}: call records without callsite: {missing[:2]}"):
        return
    segs = h.load_segments(exe)
    links = [link_address(as_int(r["callsite"]), modules, exe, segs) for r in calls]
    if not ck.check(None not in links, f"{label}: a callsite outside the executable: "
                    f"{[r['callsite'] for r in calls]}"):
        return
    got = [(r["function"], where) for r, where in zip(calls, addr2line(exe, [a - 1 for a in links]))]
    want = [(fn, ("callsites.c", marks[site])) for fn, site in SEQUENCE]
    ck.check_eq(got, want, f"{label}: addr2line of each callsite - 1 in dump --json")


TREE_SITE = re.compile(r" \[([^\] ]+):(\d+)\]$")


def check_tree(ck, label, files, marks, old_files):
    res = h.run_postproc(["tree"] + files)
    if not ck.check(res.status == 0, f"{label}: tree failed\n{res.describe()}"):
        return
    got = []
    for line in res.out.splitlines():
        m = re.match(r"\s*(\w+)\(", line)
        if m and m.group(1) in TRACED:
            s = TREE_SITE.search(line)
            got.append((m.group(1), (s.group(1), int(s.group(2))) if s else None))
    want = [(fn, ("callsites.c", marks[site])) for fn, site in SEQUENCE]
    ck.check_eq(got, want, f"{label}: call sites in the tree\n{res.out}")

    bare = h.run_postproc(["tree", "--no-callsite"] + files)
    ck.check(bare.status == 0, f"{label}: tree --no-callsite failed\n{bare.describe()}")
    ck.check(not re.search(r"\[callsites\.c:\d+\]", bare.out),
             f"{label}: tree --no-callsite shows call sites\n{bare.out}")
    stripped = "\n".join(TREE_SITE.sub("", line) for line in res.out.split("\n"))
    ck.check_eq(bare.out, stripped, f"{label}: tree --no-callsite is the tree without [FILE:LINE]")

    old = h.run_postproc(["tree"] + old_files)
    ck.check(old.status == 0, f"{label}: tree of a trace without callsite failed\n{old.describe()}")
    ck.check_eq(old.out, bare.out, f"{label}: tree of a trace without callsite")
    records = h.dump_records(ck, old_files)
    if records is not None:
        ck.check(not any("callsite" in r for r in records),
                 f"{label}: dump --json of a trace without callsite shows one")


def replayed_site_times(exe, files):
    """{(callee, (file, line)): (calls, inclusive ns)} from the raw records, the line
    from addr2line at callsite - 1."""
    out = collections.defaultdict(lambda: [0, 0])
    segs = h.load_segments(exe)
    for path in files:
        records = parse_trace(path)
        modules = [r for r in records if r["type"] == "module"]
        stacks = collections.defaultdict(list)
        done = []
        for r in records:
            if r["type"] == "call":
                stacks[r["tid"]].append(r)
            elif r["type"] in ("return", "unwound") and stacks[r["tid"]]:
                call = stacks[r["tid"]].pop()
                if call["function"] in TRACED:
                    done.append((call, r["ts"] - call["ts"]))
        links = [link_address(c["callsite"], modules, exe, segs) - 1 for c, _ in done]
        for (call, ns), where in zip(done, addr2line(exe, links)):
            entry = out[(call["function"], where)]
            entry[0] += 1
            entry[1] += ns
    return out


def write_report(ck, label, report, path, files, reader, package):
    """Writes `report` of the traces to `path` for `reader`; False (and a skip or a
    failure said) when it cannot be read."""
    if shutil.which(reader) is None:
        ck.skip(f"{label}: {report}", f"{reader} ({package}) is not installed")
        return False
    res = h.run_postproc([report, "-o", path] + files)
    return ck.check(res.status == 0, f"{label}: {report} report failed\n{res.describe()}")


def check_callgrind(ck, label, exe, files, marks, work):
    out = os.path.join(work, f"{label}.callgrind")
    if not write_report(ck, label, "callgrind", out, files, "callgrind_annotate", "valgrind"):
        return
    ann = h.run(["callgrind_annotate", "--auto=yes", "--context=1000", out])
    if not ck.check(ann.status == 0, f"{label}: callgrind_annotate failed\n{ann.describe()}"):
        return
    # The calls listed under each source line of callsites.c.
    got = collections.defaultdict(lambda: [0, 0])
    in_source = False
    last_line = None
    for line in ann.out.splitlines():
        if line.startswith("-- Auto-annotated source:"):
            in_source = line.rstrip().endswith("/callsites.c")
            continue
        if not in_source:
            continue
        m = re.match(r"\s*([\d,]+)(?: \(\s*[\d.]+%\))?\s+=> (.*):(\w+) \(([\d,]+)x\)$", line)
        if m:
            callee = m.group(3)
            if callee in TRACED:
                mark = re.search(r"CALLSITE:(\w+)", last_line or "")
                key = (callee, mark.group(1) if mark else f"unmarked line {last_line!r}")
                got[key][0] += int(m.group(4).replace(",", ""))
                got[key][1] += int(m.group(1).replace(",", ""))
            continue
        last_line = line
    counts = collections.Counter(SEQUENCE)
    ck.check_eq({k: v[0] for k, v in got.items()}, dict(counts),
                f"{label}: calls under each line in callgrind_annotate\n{ann.out[-4000:]}")
    # The cost of each site's calls: their inclusive time.
    replayed = replayed_site_times(exe, files)
    by_site = {(fn, site): replayed.get((fn, ("callsites.c", marks[site])), [0, 0])[1]
               for fn, site in counts}
    ck.check_eq({k: v[1] for k, v in got.items()}, by_site,
                f"{label}: inclusive ns of each site's calls in callgrind_annotate")


GPROF_PARENT = re.compile(
    r"^\s+[\d.]+\s+[\d.]+\s+(\d+)/\d+\s+(\w+) \(([^ :]+):(\d+) @ [0-9a-f]+\) \[\d+\]$")


def check_gprof(ck, label, exe, files, marks, work):
    gmon = os.path.join(work, f"{label}.gmon")
    if not write_report(ck, label, "gprof", gmon, files, "gprof", "binutils"):
        return
    g = h.run(["gprof", "-l", "-q", "-b", exe, gmon])
    if not ck.check(g.status == 0, f"{label}: gprof -l -q failed\n{g.describe()}"):
        return
    got = collections.Counter()
    for block in g.out.split("-----------------------------------------------"):
        lines = block.strip("\n").splitlines()
        primary = next((i for i, l in enumerate(lines) if l.startswith("[")), None)
        if primary is None:
            continue
        m = re.search(r"\s(\w+) \([^)]*\) \[\d+\]$", lines[primary])
        if not m or m.group(1) not in TRACED:
            continue
        # Above the primary line: its callers (in the first block, after the header).
        for parent in (l for l in lines[:primary] if re.match(r"\s+[\d.]+\s", l)):
            p = GPROF_PARENT.match(parent)
            if not ck.check(p, f"{label}: gprof -l parent line not understood: {parent!r}"):
                continue
            got[(m.group(1), p.group(2), p.group(3), int(p.group(4)))] += int(p.group(1))
    want = collections.Counter()
    for fn, site in SEQUENCE:
        want[(fn, CALLER[site], "callsites.c", marks[site])] += 1
    ck.check_eq(dict(got), dict(want), f"{label}: callers of add3 and twice in gprof -l -q\n{g.out}")


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, exes = sys.argv[1], sys.argv[2:]
    ck = h.Checker("callsites")
    marks = marked_lines(source)
    if not ck.check(set(marks) == set(CALLER), f"marks in {source}: {sorted(marks)}"):
        return ck.finish()
    with h.TempDir() as work:
        for exe in exes:
            label = os.path.basename(exe)
            untraced = h.run([exe])
            ck.check(untraced.status == 0, f"{label} failed untraced\n{untraced.describe()}")
            outdir = os.path.join(work, label)
            tr = h.trace([exe], patterns="main," + ",".join(TRACED), outdir=outdir)
            if not ck.check(tr.result.status == 0, f"traced {label} failed\n{tr.result.describe()}"):
                continue
            ck.check_eq(tr.result.out, untraced.out, f"{label}: traced output")
            if not ck.check(len(tr.files) == 1, f"{label}: one trace expected, got {tr.files}"):
                continue
            # The same trace as an older functracer wrote it: no callsite fields.
            old_dir = os.path.join(work, label + "-old")
            os.makedirs(old_dir)
            old = os.path.join(old_dir, os.path.basename(tr.files[0]))
            with open(tr.files[0]) as f, open(old, "w") as g:
                g.write(re.sub(r" callsite=0x[0-9a-f]+", "", f.read()))
            check_dump(ck, label, exe, tr.files, marks)
            check_tree(ck, label, tr.files, marks, [old])
            check_callgrind(ck, label, exe, tr.files, marks, work)
            check_gprof(ck, label, exe, tr.files, marks, work)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

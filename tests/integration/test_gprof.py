#!/usr/bin/env python3
"""The gprof report, read by binutils' gprof.

usage: test_gprof.py RECURSION-O0 RECURSION-O0-NOPIE MUTUAL-O0 MUTUAL-O0-NOPIE LIBCHAIN

The programs are built without -pg. Each is traced with calltrace on main and its own
functions, `functracer-postproc gprof` writes a gmon.out, and `gprof -b PROGRAM
gmon.out` reads it. Oracles, none of them from functracer-postproc:

  * gprof reads the file (exit status 0, nothing on stderr);
  * per function, the call graph's "called" column, N or N+R (R: recursive calls),
    adds up to the program's own count of its calls, and the flat profile's "calls"
    column is N;
  * the functions with time in the flat profile are traced ones, each traced function
    with at least 1% of the self time (replayed from the raw trace records) has time,
    and its "% time" is its share of the raw self time;
  * two runs of the same program given together count every call twice;
  * without -o the file is ./gmon.out, and stderr says so;
  * traces of two different programs are an error naming both;
  * libchain: the functions of its libraries are left out, and stderr says how many
    (the distinct library functions in the raw records).
"""

import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

FUNCTIONS = {
    "recursion": ["fib", "rec_deep", "rec_hidden_helper"],
    "mutual": ["is_even", "is_odd"],
}


def self_times(files):
    self_ns = collections.Counter()
    for path in files:
        stacks = collections.defaultdict(list)
        for r in parse_trace(path):
            if r["type"] == "call":
                stacks[r["tid"]].append([r["function"], r["ts"], 0])
            elif r["type"] in ("return", "unwound") and stacks[r["tid"]]:
                fn, start, children = stacks[r["tid"]].pop()
                incl = r["ts"] - start
                self_ns[fn] += incl - children
                if stacks[r["tid"]]:
                    stacks[r["tid"]][-1][2] += incl
    return self_ns


def gprof(ck, exe, gmon):
    res = h.run(["gprof", "-b", exe, gmon])
    ck.check(res.status == 0 and not res.err.strip(), f"gprof {exe} failed\n{res.describe()}")
    return res.out


def parse_flat(text):
    """{name: (percent, calls or None)} of the flat profile."""
    out = {}
    in_flat = False
    for line in text.splitlines():
        if line.startswith("Flat profile"):
            in_flat = True
            continue
        if "Call graph" in line:
            break
        if not in_flat:
            continue
        w = line.split()
        if len(w) >= 4 and re.fullmatch(r"[\d.]+", w[0]) and re.fullmatch(r"[\d.]+", w[1]):
            calls = int(w[3]) if len(w) == 7 else None
            out[w[-1]] = (float(w[0]), calls)
    return out


def parse_graph(text):
    """{name: (called, recursive)} from the call graph's primary lines. A member of a
    cycle (mutual recursion) shows all its calls as called, without +R."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\[\d+\]\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(?:(\d+)(?:\+(\d+))?\s+)?(\S+)(?: <cycle \d+>)? \[\d+\]",
                     line)
        if m:
            out[m.group(3)] = (int(m.group(1) or 0), int(m.group(2) or 0))
    return out


def check_program(ck, name, exe, work, runs=1):
    untraced = h.run([exe])
    ck.check(untraced.status == 0, f"{exe} failed untraced\n{untraced.describe()}")
    own = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", untraced.out.splitlines()[-1])}
    label = os.path.basename(exe)
    dirs = []
    for i in range(runs):
        outdir = os.path.join(work, f"{label}-{i}")
        tr = h.trace([exe], patterns="main," + ",".join(FUNCTIONS[name]), outdir=outdir)
        ck.check(tr.result.status == 0, f"traced {label} failed\n{tr.result.describe()}")
        ck.check_eq(tr.result.out, untraced.out, f"{label}: traced output")
        dirs.append(outdir)
    gmon = os.path.join(work, f"{label}-{runs}.gmon")
    res = h.run_postproc(["gprof", "-o", gmon] + dirs)
    if not ck.check(res.status == 0, f"{label}: gprof report failed\n{res.describe()}"):
        return
    ck.check(gmon in res.err, f"{label}: stderr does not say where the profile went\n{res.err}")
    text = gprof(ck, exe, gmon)
    flat = parse_flat(text)
    graph = parse_graph(text)
    what = f"{label} x{runs}"
    for fn in FUNCTIONS[name]:
        called, recursive = graph.get(fn, (None, None))
        ck.check_eq(None if called is None else called + recursive, runs * own[fn],
                    f"{what}: gprof's called count of {fn} (N+R)\n{text[-3000:]}")
        ck.check_eq(flat.get(fn, (None, None))[1], called, f"{what}: flat calls of {fn}")

    self_ns = self_times([f for d in dirs for f in sorted(glob.glob(os.path.join(d, "*.trace")))])
    total = sum(self_ns.values())
    timed = {fn for fn, (pct, _) in flat.items() if pct > 0}
    ck.check(timed <= set(self_ns), f"{what}: untraced functions with time: {timed - set(self_ns)}")
    for fn, ns in self_ns.items():
        share = 100.0 * ns / total if total else 0.0
        if share >= 1.0:
            ck.check(fn in timed, f"{what}: {fn} has {share:.2f}% of the self time but none in gprof")
        if fn in flat:
            ck.check(abs(flat[fn][0] - share) <= 0.02,
                     f"{what}: % time of {fn}: gprof {flat[fn][0]}, raw records {share:.3f}")
    ck.note(f"{what}: {total} ns of self time, gprof: {sorted(timed)}")
    return dirs, own


def main():
    if len(sys.argv) != 6:
        sys.stderr.write(__doc__)
        sys.exit(2)
    h.require_tools("gprof", ["gprof"], "binutils")
    rec_pie, rec_nopie, mut_pie, mut_nopie, libchain = sys.argv[1:]
    ck = h.Checker("gprof")
    with h.TempDir() as work:
        rec_dirs, rec_own = check_program(ck, "recursion", rec_pie, work) or (None, None)
        check_program(ck, "recursion", rec_nopie, work)
        check_program(ck, "mutual", mut_nopie, work)
        mut_dirs = (check_program(ck, "mutual", mut_pie, work, runs=2) or (None, None))[0]

        # Without -o: gmon.out in the current directory, as a -pg program writes it.
        if rec_dirs:
            cwd = os.path.join(work, "cwd")
            os.mkdir(cwd)
            res = h.run([h.postproc(), "gprof", rec_dirs[0]], cwd=cwd)
            ck.check(res.status == 0 and os.path.exists(os.path.join(cwd, "gmon.out"))
                     and "gmon.out" in res.err and not res.out,
                     f"gprof without -o: expected ./gmon.out, named on stderr\n{res.describe()}")
            if os.path.exists(os.path.join(cwd, "gmon.out")):
                graph = parse_graph(gprof(ck, rec_pie, os.path.join(cwd, "gmon.out")))
                ck.check_eq(sum(graph.get("fib", (0, 0))), rec_own["fib"], "./gmon.out: calls of fib")

        # Two programs: an error that names both.
        if rec_dirs and mut_dirs:
            res = h.run_postproc(["gprof", "-o", os.path.join(work, "mixed.gmon"),
                                  rec_dirs[0], mut_dirs[0]])
            ck.check(res.status == 1 and rec_pie in res.err and mut_pie in res.err
                     and len(res.err.strip().splitlines()) == 1,
                     f"two executables: expected one error line naming both\n{res.describe()}")

        # Library functions are left out, and counted.
        outdir = os.path.join(work, "libchain")
        tr = h.trace([libchain], patterns="lc_main,lca_*,lcb_*", outdir=outdir)
        ck.check(tr.result.status == 0, f"traced libchain failed\n{tr.result.describe()}")
        records = [r for f in tr.files for r in parse_trace(f)]
        exe_module = next(r for r in records if r["type"] == "module")
        in_libs = {r["function"] for r in records if r["type"] == "call"
                   and not exe_module["base"] <= r["address"] < exe_module["end"]}
        res = h.run_postproc(["gprof", "-o", os.path.join(work, "libchain.gmon"), outdir])
        ck.check(res.status == 0, f"libchain: gprof report failed\n{res.describe()}")
        ck.check(f"{len(in_libs)} traced functions outside the executable" in res.err,
                 f"libchain: stderr should count the {len(in_libs)} library functions "
                 f"{sorted(in_libs)}\n{res.err}")
        text = gprof(ck, libchain, os.path.join(work, "libchain.gmon"))
        flat = parse_flat(text)
        ck.check("lc_main" in flat and not (set(flat) & in_libs),
                 f"libchain: gprof should show lc_main and no library function\n{text}")
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-event cost of functracer's memtrace next to ltrace, heaptrack and valgrind.

Builds bench_alloc.c (N malloc/free pairs 16 calls deep; the program times its
own allocating loop) and runs it, in the same run:

  untraced
  functracer -q -e memtrace -o TMP --stats -b 8      (and -b 0, -b 16)
  the same with FT_FAST_PATH=0, -b 8                 (a ptrace stop per entry)
  ltrace -e malloc+free -o FILE                      (if ltrace is installed)
  heaptrack -o FILE                                  (if heaptrack is installed)
  valgrind --tool=memcheck -q                        (if valgrind is installed)

An event is one malloc or one free: 2N per run. For each tool it prints the loop
time per event, the overhead per event over the untraced loop, the wall time,
and the ratio of ltrace's overhead to the tool's; for functracer also the ptrace
stops per event from its --stats line. This is a benchmark, not a test: it fails
only when a tool gives wrong results (functracer's trace must hold exactly N
alloc and N free records and no leak, ltrace's log 2N calls).

usage: memtrace_vs_peers.py [-n N] [-r REPEATS] [--functracer PATH]
                            [--postproc PATH] [--build DIR] [--cc CC] [--keep]
"""

import argparse
import glob
import json
import os
import re
import shutil
import sys

import benchlib
from benchlib import Table, measure, run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "malloc/free pairs per run (20000)")
    ap.add_argument("--without", action="append", default=[], metavar="TOOL",
                    help="leave a peer out (ltrace: 150 µs per event is long at -n 500000)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)

    benchlib.require_functracer(args)
    n = args.n
    events = 2 * n
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = benchlib.compile_program(args.cc, "bench_alloc.c", tmp)
        expect = f"blocks={n} "
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} {n}  ({n} malloc + {n} free = {events} events, "
              f"best of {args.repeats})")
        print()

        def bench(name, cmd, check=None, prepare=None):
            return measure(name, cmd, args.repeats, "bench_alloc", expect, check, prepare)

        results = [bench("untraced", [binary, str(n)])]
        outdir = os.path.join(tmp, "traces")

        def clean():
            shutil.rmtree(outdir, ignore_errors=True)

        def ft_check(out, err, m):
            problem, c = benchlib.functracer_run(err, m, outdir)
            if problem:
                return problem
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            if c.get("alloc", 0) != n or c.get("free", 0) != n:
                return (f"functracer recorded {c.get('alloc', 0)} allocs and {c.get('free', 0)} "
                        f"frees, not {n} each")
            if args.postproc:
                p, _ = run([args.postproc, "leaks", "--json"] + files)
                try:
                    doc = json.loads(p.stdout.decode())
                    leaked = (doc["leaked_blocks"], doc["leaked_bytes"])
                except (ValueError, KeyError, TypeError):
                    return f"functracer-postproc leaks --json failed: {p.stderr.decode()[-500:]}"
                if leaked != (0, 0):
                    return f"leaks --json reports {leaked} (blocks, bytes), the program leaks none"
            return None

        for depth in (8, 0, 16):
            results.append(bench(
                f"functracer -b {depth}",
                [args.functracer, "-q", "-e", "memtrace", "-o", outdir, "-b", str(depth), "--stats",
                 binary, str(n)], ft_check, prepare=clean))
        # A stop per entry (no in-process recorder, doc/internals.md §8b).
        results.append(bench(
            "functracer -b 8 stops",
            ["env", "FT_FAST_PATH=0", args.functracer, "-q", "-e", "memtrace", "-o", outdir, "-b", "8",
             "--stats", binary, str(n)], ft_check, prepare=clean))

        if "ltrace" not in args.without and benchlib.optional_tool("ltrace"):
            log = os.path.join(tmp, "ltrace.log")

            def lt_check(out, err, m):
                with open(log, errors="replace") as f:
                    calls = sum(1 for ln in f if re.search(r"->(malloc|free)\(", ln))
                return None if calls == events else f"ltrace logged {calls} calls, not {events}"
            results.append(bench("ltrace -e malloc+free",
                                 ["ltrace", "-e", "malloc+free", "-o", log, binary, str(n)],
                                 lt_check))

        if "heaptrack" not in args.without and benchlib.optional_tool("heaptrack"):
            data = os.path.join(tmp, "heaptrack.data")

            def ht_clean():
                for f in glob.glob(data + "*"):
                    os.remove(f)
            results.append(bench("heaptrack", ["heaptrack", "-o", data, binary, str(n)],
                                 prepare=ht_clean))

        if "valgrind" not in args.without and benchlib.optional_tool("valgrind"):
            results.append(bench("valgrind memcheck",
                                 ["valgrind", "--tool=memcheck", "-q", binary, str(n)]))

        base = results[0].best_loop()
        table = Table([("tool", 24), ("µs/event (loop)", 17), ("overhead µs/event", 19),
                       ("wall s", 9), ("wall/heaptrack", 16), ("ltrace/tool", 13),
                       ("stops/event", 13)])
        table.header()
        lt = next((m for m in results if m.name.startswith("ltrace") and not m.error), None)
        lt_over = (lt.best_loop() - base) / events / 1000.0 if lt and base else None
        ht = next((m for m in results if m.name == "heaptrack" and not m.error), None)
        ht_wall = ht.best_wall() if ht else None
        for m in results:
            if m.error:
                table.error(m.name, m.error)
                continue
            loop = m.best_loop() / events / 1000.0
            o = (m.best_loop() - base) / events / 1000.0 if base is not None else float("nan")
            ratio = benchlib.ratio(lt_over or None, o)
            stops = f"{m.extra['stops'] / events:.2f}" if "stops" in m.extra else "-"
            table.row(m.name, f"{loop:.3f}", f"{o:.3f}", f"{m.best_wall():.2f}",
                      benchlib.ratio(m.best_wall(), ht_wall, "{:.2f}"), ratio, stops)
        print()
        for m in results:
            if "stats" in m.extra and not m.error:
                print(f"{m.name} --stats: {m.extra['stats']}")
        return 1 if any(m.error for m in results) else 0


if __name__ == "__main__":
    sys.exit(main())

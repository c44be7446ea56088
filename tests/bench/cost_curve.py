#!/usr/bin/env python3
"""The cost curve: µs per traced event as threads, breakpoints and backtrace depth grow.

Three series on one program (bench_curve.c), each point the best of -r runs:

  threads      functracer -e calltrace -a curve_hot, T = 1, 2, 4, 8, 16 threads
               sharing N calls; ltrace -x curve_hot beside it
  breakpoints  the same at T = 1, with K = 0, 10, 100, 1000, 10000 idle functions
               traced as well (-a 'curve_hot,curve_fn_0000*' ...): their
               breakpoints are planted and never hit; also the start-up time
               (wall time minus the loop), which planting them costs
  depth        functracer -e memtrace -b D, D = 0, 4, 8, 16, 32, 64, on N
               malloc/free pairs 60 calls deep; heaptrack (whole stacks) and
               ltrace -e malloc+free (no stacks) beside it

Every functracer run is checked (the trace holds exactly N calls of curve_hot, or
N alloc and N free records) and its --stats line gives the ptrace stops per event.
ltrace, heaptrack are optional.
"""

import argparse
import glob
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import measure, run  # noqa: E402

IDLE_FUNCS = 10000
ALLOC_DEPTH = 60


def build(cc, outdir):
    with open(os.path.join(outdir, "bench_curve_fns.h"), "w") as f:
        for i in range(IDLE_FUNCS):
            f.write(f"CURVE_FN({i:05d}, {i})\n")
    binary = os.path.join(outdir, "bench_curve")
    p, secs = run([cc, "-O2", "-g", "-pthread", "-I", outdir, "-o", binary,
                   os.path.join(HERE, "bench_curve.c")], 1800)
    if p.returncode != 0:
        sys.exit(f"cannot build bench_curve.c:\n{p.stderr.decode()[-2000:]}")
    return binary


def idle_pattern(k):
    """The -a glob that selects k of the idle functions (k a power of 10 up to 10000)."""
    if k == 0:
        return None
    digits = 5 - len(str(k)) + 1  # 10 -> 4 fixed digits, 10000 -> 1
    return "curve_fn_" + "0" * digits + "*"


def us(ns, n):
    return f"{ns / n / 1000:.2f}" if ns is not None else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "events per point (default 10000)", n_default=10000)
    ap.add_argument("--only", choices=["threads", "breakpoints", "depth"], action="append",
                    help="run only these series (repeatable)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    series = args.only or ["threads", "breakpoints", "depth"]
    n = args.n
    ltrace = shutil.which("ltrace")
    heaptrack = shutil.which("heaptrack")
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = build(args.cc, tmp)
        outdir = os.path.join(tmp, "traces")
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} ({IDLE_FUNCS} idle functions), N = {n}, best of {args.repeats}")
        for tool, path in (("ltrace", ltrace), ("heaptrack", heaptrack)):
            if not path:
                benchlib.skipped(tool, f"not installed (Debian package {tool})")

        def ft_calls_check(out, err, m):
            m.extra["stats"] = err
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            if args.postproc:
                calls = benchlib.traced_calls(args.postproc, files, "curve_hot")
                if isinstance(calls, str):
                    return calls
                if calls != n:
                    return f"functracer recorded {calls} calls of curve_hot, not {n}"
            shutil.rmtree(outdir, ignore_errors=True)
            return None

        def ft_alloc_check(out, err, m):
            m.extra["stats"] = err
            counts = {}
            for f in glob.glob(os.path.join(outdir, "*.trace*")):
                for k, v in benchlib.count_records(f).items():
                    counts[k] = counts.get(k, 0) + v
            shutil.rmtree(outdir, ignore_errors=True)
            m.extra["heap_events"] = counts.get("alloc", 0) + counts.get("free", 0)
            # The loop's pairs, plus what libc allocates for itself (stdio, start-up).
            if counts.get("alloc", 0) < n or counts.get("free", 0) < n:
                return f"trace holds {counts.get('alloc', 0)} alloc and {counts.get('free', 0)} free records, want >= {n}"
            return None

        def stats_of(m):
            err = m.extra.get("stats", "")
            ev = re.search(r"(\d+) events", err)
            st = benchlib.stats_stops(err)
            bp = re.search(r"(\d+) breakpoints", err)
            fr = re.search(r"\(([0-9.]+) frames each", err)
            return {
                "stops/event": f"{st / int(ev.group(1)):.2f}" if ev and st and int(ev.group(1)) else "-",
                "breakpoints": bp.group(1) if bp else "-",
                "frames": fr.group(1) if fr else "-",
            }

        def point(name, cmd, expect, check=None):
            m = measure(name, cmd, args.repeats, "bench_curve", expect, check, timeout=1800)
            return m

        if "threads" in series:
            print("\n== threads: calltrace on curve_hot, N calls shared by T threads")
            t = benchlib.Table([("T", 4), ("functracer µs/call", 20), ("stops/event", 13),
                                ("ltrace µs/call", 16), ("ltrace/functracer", 19)])
            t.header()
            for threads in (1, 2, 4, 8, 16):
                cmd = [binary, "calls", str(n), str(threads)]
                expect = f"calls={n} "
                f = point("functracer", [args.functracer, "-q", "-e", "calltrace", "-a", "curve_hot",
                                         "-o", outdir, "--stats"] + cmd, expect, ft_calls_check)
                lt = point("ltrace", ["ltrace", "-f", "-L", "-x", "curve_hot", "-o", "/dev/null"] + cmd,
                           expect) if ltrace else None
                if f.error:
                    t.error(str(threads), f.error)
                    continue
                lbest = lt.best_loop() if lt and not lt.error else None
                t.row(threads, us(f.best_loop(), n), stats_of(f)["stops/event"], us(lbest, n),
                      benchlib.ratio(lbest, f.best_loop()))
                if lt and lt.error:
                    print(f"     ltrace: {lt.error.splitlines()[0]}")

        if "breakpoints" in series:
            print("\n== breakpoints: calltrace on curve_hot plus K idle functions, one thread")
            t = benchlib.Table([("K", 7), ("breakpoints", 13), ("functracer µs/call", 20),
                                ("start-up s", 12), ("stops/event", 13), ("ltrace µs/call", 16),
                                ("ltrace start-up s", 19)])
            t.header()
            for k in (0, 10, 100, 1000, 10000):
                pat = idle_pattern(k)
                cmd = [binary, "calls", str(n), "1"]
                expect = f"calls={n} "
                f = point("functracer", [args.functracer, "-q", "-e", "calltrace", "-a",
                                         "curve_hot" + (f",{pat}" if pat else ""), "-o", outdir,
                                         "--stats"] + cmd, expect, ft_calls_check)
                lt = point("ltrace", ["ltrace", "-L", "-x", "curve_hot" + (f"+{pat}" if pat else ""),
                                      "-o", "/dev/null"] + cmd, expect) if ltrace else None
                if f.error:
                    t.error(str(k), f.error)
                    continue
                fstart = f.best_wall() - f.best_loop() / 1e9
                lbest = lt.best_loop() if lt and not lt.error else None
                lstart = (lt.best_wall() - lbest / 1e9) if lbest else None
                t.row(k, stats_of(f)["breakpoints"], us(f.best_loop(), n), f"{fstart:.2f}",
                      stats_of(f)["stops/event"], us(lbest, n), f"{lstart:.2f}" if lstart else "-")
                if lt and lt.error:
                    print(f"     ltrace: {lt.error.splitlines()[0]}")

        if "depth" in series:
            print(f"\n== depth: memtrace -b D, N malloc/free pairs {ALLOC_DEPTH} calls deep "
                  "(µs per event: a malloc or a free)")
            t = benchlib.Table([("run", 26), ("frames", 8), ("µs/event", 10),
                                ("stops per malloc|free", 23), ("vs -b 0", 9)])
            t.header()
            cmd = [binary, "alloc", str(n), str(ALLOC_DEPTH)]
            expect = f"blocks={n} "
            base = None
            for d in (0, 4, 8, 16, 32, 64):
                f = point(f"-b {d}", [args.functracer, "-q", "-e", "memtrace", "-b", str(d), "-o", outdir,
                                      "--stats"] + cmd, expect, ft_alloc_check)
                if f.error:
                    t.error(f"functracer -b {d}", f.error)
                    continue
                if d == 0:
                    base = f.best_loop()
                stops = benchlib.stats_stops(f.extra.get("stats", ""))
                t.row(f"functracer -b {d}", stats_of(f)["frames"] if d else "0", us(f.best_loop(), 2 * n),
                      benchlib.ratio(stops, f.extra.get("heap_events"), "{:.2f}"),
                      benchlib.ratio(f.best_loop(), base, "{:.2f}"))
            if heaptrack:
                hp = os.path.join(tmp, "heaptrack")
                m = point("heaptrack", [heaptrack, "-o", hp] + cmd, expect,
                          lambda out, err, m: [os.remove(x) for x in glob.glob(hp + "*")] and None)
                if m.error:
                    t.error("heaptrack", m.error)
                else:
                    t.row("heaptrack (whole stacks)", "all", us(m.best_loop(), 2 * n), "-",
                          benchlib.ratio(m.best_loop(), base, "{:.2f}"))
            if ltrace:
                m = point("ltrace", ["ltrace", "-e", "malloc+free", "-o", os.path.join(tmp, "ltrace.out")] + cmd,
                          expect)
                if m.error:
                    t.error("ltrace -e malloc+free", m.error)
                else:
                    t.row("ltrace -e malloc+free", "0", us(m.best_loop(), 2 * n), "-",
                          benchlib.ratio(m.best_loop(), base, "{:.2f}"))


if __name__ == "__main__":
    main()

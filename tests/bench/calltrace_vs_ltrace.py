#!/usr/bin/env python3
"""Per-call cost of functracer's calltrace next to ltrace and kernel uprobes.

Builds bench_calls.c (one noinline function called N times; the program times
its own calling loop) and runs it, in the same run:

  untraced
  functracer -q -e calltrace -a bench_fn -o TMP --stats
  ltrace -L -x bench_fn -o /dev/null            (if ltrace is installed)
  bpftrace uprobe count on bench_fn             (if bpftrace works here)

and prints, for each, the loop time per call, the overhead per call over the
untraced loop, the wall time, the ratio ltrace/functracer, and functracer's
ptrace stops per call from --stats. This is a benchmark, not a test: it never
fails on slow numbers, only when a tool gives wrong results.

usage: calltrace_vs_ltrace.py [-n N] [-r REPEATS] [--functracer PATH]
                              [--postproc PATH] [--build DIR] [--cc CC] [--keep]
"""

import argparse
import glob
import os
import re
import shutil
import sys

import benchlib
from benchlib import Table, measure


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "calls per run (default 20000)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)

    benchlib.require_functracer(args)
    n = args.n
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = benchlib.compile_program(args.cc, "bench_calls.c", tmp)
        expect = f"sum={3 * (n * (n - 1) // 2) + n}"
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} {n}  (bench_fn called {n} times, best of {args.repeats})")
        print()

        def bench(name, cmd, check=None):
            return measure(name, cmd, args.repeats, "bench_calls", expect, check, timeout=1800)

        results = []
        results.append(bench("untraced", [binary, str(n)]))

        outdir = os.path.join(tmp, "traces")

        def ft_check(out, err, m):
            s = benchlib.stats_stops(err)
            e = re.search(r"(\d+)\s+events", err)
            if s is not None:
                m.extra["stops"] = s
            if e:
                m.extra["events"] = int(e.group(1))
            m.extra["stats"] = benchlib.stats_line(err, ("stops", "events"))
            if args.postproc:
                files = glob.glob(os.path.join(outdir, "*.trace*"))
                calls = benchlib.traced_calls(args.postproc, files, "bench_fn")
                if isinstance(calls, str):
                    return calls
                if calls != n:
                    return f"functracer recorded {calls} calls of bench_fn, not {n}"
            shutil.rmtree(outdir, ignore_errors=True)
            return None

        ft_cmd = [args.functracer, "-q", "-e", "calltrace", "-a", "bench_fn", "-o", outdir, "--stats",
                  binary, str(n)]
        results.append(bench("functracer", ft_cmd, ft_check))
        # The same with every return caught by a stop at the trampoline.
        results.append(bench("ft trampoline", ["env", "FT_FAST_RETURNS=0"] + ft_cmd, ft_check))

        if benchlib.optional_tool("ltrace"):
            results.append(bench("ltrace", ["ltrace", "-L", "-x", "bench_fn", "-o", "/dev/null",
                                            binary, str(n)]))

        bpftrace = shutil.which("bpftrace")
        if bpftrace and os.geteuid() == 0:
            def bpf_check(out, err, m):
                c = re.search(r"@c:\s*(\d+)", out)
                if not c or int(c.group(1)) != n:
                    return f"bpftrace counted {c.group(1) if c else 'nothing'}, not {n}"
                return None
            script = f'uprobe:"{binary}":bench_fn {{ @c = count(); }}'
            results.append(bench("bpftrace uprobe", [bpftrace, "-e", script, "-c",
                                                     f"{binary} {n}"], bpf_check))
        else:
            benchlib.skipped("bpftrace", "not installed (Debian package bpftrace) or not root")

        base = results[0].best_loop()
        table = Table([("tool", 18), ("µs/call (loop)", 16), ("overhead µs/call", 18),
                       ("wall s", 9)])
        table.header()
        per_call = {}
        for m in results:
            if m.error:
                table.error(m.name, m.error)
                continue
            loop = m.best_loop() / n / 1000.0
            over = (m.best_loop() - base) / n / 1000.0 if base is not None else float("nan")
            per_call[m.name] = over
            table.row(m.name, f"{loop:.3f}", f"{over:.3f}", f"{m.best_wall():.2f}")
        print()
        for ft in (m for m in results if m.name in ("functracer", "ft trampoline") and not m.error):
            print(f"{ft.name} --stats: {ft.extra.get('stats')}")
            if "stops" in ft.extra:
                print(f"{ft.name} ptrace stops per traced call: {ft.extra['stops'] / n:.3f}")
        if "functracer" in per_call and "ltrace" in per_call and per_call["functracer"] > 0:
            print(f"ratio ltrace/functracer (overhead per call): "
                  f"{per_call['ltrace'] / per_call['functracer']:.2f}")
        if "functracer" in per_call and "bpftrace uprobe" in per_call and \
                per_call["bpftrace uprobe"] > 0:
            print(f"ratio functracer/uprobe (overhead per call): "
                  f"{per_call['functracer'] / per_call['bpftrace uprobe']:.2f}")
        errors = [m for m in results if m.error]
        return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

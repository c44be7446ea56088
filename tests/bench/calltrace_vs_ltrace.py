#!/usr/bin/env python3
"""Per-call cost of functracer's calltrace next to ltrace and kernel uprobes.

Builds bench_calls.c (one noinline function called N times; the program times
its own calling loop) and runs it, in the same run:

  untraced
  functracer -q -e calltrace -a bench_fn -o TMP --stats   (in-process recorder)
  the same with FT_FAST_PATH=0                            (a ptrace stop per entry)
  the same with --returns=ret-sites      (a stop per entry and per return: the
                                         return-site mode, the stack never written)
  uftrace record -P bench_fn (dynamic patching of the unmodified binary)
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
import json
import os
import re
import shutil
import sys

import benchlib
from benchlib import Table, measure, run


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
        # The same with a stop per entry (no in-process recorder).
        results.append(bench("ft stops", ["env", "FT_FAST_PATH=0"] + ft_cmd, ft_check))
        # Returns caught at the function's return instructions (the stack never written:
        # Go, JVM and V8 code always, doc/internals.md section 8c): a stop per entry and
        # one per return.
        results.append(bench("ft ret-sites", ft_cmd[:-2] + ["--returns=ret-sites"] + ft_cmd[-2:], ft_check))
        # Self time of bench_fn in functracer's own report (a last, separate run).
        ft_self = None
        if args.postproc and not results[-3].error:
            p, _ = run(ft_cmd)
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            q, _ = run([args.postproc, "calls", "--json"] + files)
            try:
                f = next(f for f in json.loads(q.stdout.decode())["functions"]
                         if f["name"].split("(")[0] == "bench_fn")
                ft_self = f["self_ns"] / f["calls"]
            except (ValueError, KeyError, TypeError, StopIteration):
                ft_self = None
            shutil.rmtree(outdir, ignore_errors=True)

        uft_self = None
        if benchlib.optional_tool("uftrace"):
            udata = os.path.join(tmp, "uftrace.data")

            def uft_check(out, err, m):
                nonlocal uft_self
                p, _ = run(["uftrace", "report", "-d", udata])
                for line in p.stdout.decode().splitlines():
                    cells = line.split()
                    if cells and cells[-1] == "bench_fn":
                        # Total time, unit, self time, unit, calls, name.
                        if int(cells[4]) != n:
                            return f"uftrace recorded {cells[4]} calls of bench_fn, not {n}"
                        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[cells[3]]
                        uft_self = float(cells[2]) * scale / n
                        return None
                return f"uftrace report has no bench_fn: {p.stdout.decode()[-300:]}"
            results.append(bench("uftrace -P", ["uftrace", "record", "-P", "bench_fn", "-d", udata,
                                                binary, str(n)], uft_check))

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
        for ft in (m for m in results if m.name in ("functracer", "ft stops", "ft ret-sites") and not m.error):
            print(f"{ft.name} --stats: {ft.extra.get('stats')}")
            if "stops" in ft.extra:
                print(f"{ft.name} ptrace stops per traced call: {ft.extra['stops'] / n:.3f}")
        if "functracer" in per_call and "ltrace" in per_call and per_call["functracer"] > 0:
            print(f"ratio ltrace/functracer (overhead per call): "
                  f"{per_call['ltrace'] / per_call['functracer']:.2f}")
        for peer in ("uftrace -P", "bpftrace uprobe", "ltrace"):
            if "functracer" in per_call and peer in per_call and per_call[peer] > 0:
                print(f"ratio functracer/{peer} (overhead per call): "
                      f"{per_call['functracer'] / per_call[peer]:.2f}")
        if "ft stops" in per_call and per_call.get("functracer", 0) > 0:
            print(f"ratio stop path/recorder (overhead per call): "
                  f"{per_call['ft stops'] / per_call['functracer']:.2f}")
        if "ft ret-sites" in per_call and per_call.get("ft stops", 0) > 0:
            print(f"ratio ret-sites/stack mode on the stop path (overhead per call): "
                  f"{per_call['ft ret-sites'] / per_call['ft stops']:.2f}")
        if base is not None:
            print(f"self time of bench_fn per call: untraced loop {base / n:.1f} ns, "
                  f"functracer calls {ft_self if ft_self is None else f'{ft_self:.1f}'} ns, "
                  f"uftrace report {uft_self if uft_self is None else f'{uft_self:.1f}'} ns, "
                  f"functracer/uftrace {benchlib.ratio(ft_self, uft_self, '{:.2f}')} (target <= 2)")
        errors = [m for m in results if m.error]
        return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

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
                              [--postproc PATH] [--cc CC] [--keep]
"""

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_built(rel):
    """The most recently built ROOT/<builddir>/<rel>."""
    found = [p for p in glob.glob(os.path.join(ROOT, "*", rel)) if os.access(p, os.X_OK)]
    found.sort(key=os.path.getmtime, reverse=True)
    return found[0] if found else None


def run(cmd, timeout=1800):
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    return p, time.monotonic() - start


def loop_ns(text):
    m = re.search(r"bench_calls: n=(\d+) loop_ns=(\d+)", text)
    return int(m.group(2)) if m else None


class Measure:
    def __init__(self, name):
        self.name = name
        self.loop_ns = []
        self.wall = []
        self.extra = {}
        self.error = None

    def best_loop(self):
        return min(self.loop_ns) if self.loop_ns else None

    def best_wall(self):
        return min(self.wall) if self.wall else None


def measure(name, cmd, repeats, expect_stdout, check=None):
    m = Measure(name)
    for _ in range(repeats):
        try:
            p, wall = run(cmd)
        except subprocess.TimeoutExpired:
            m.error = "timed out"
            return m
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        ns = loop_ns(err) or loop_ns(out)
        if p.returncode != 0 or ns is None or expect_stdout not in out:
            m.error = (f"failed (status {p.returncode}): {shlex.join(cmd)}\n"
                       f"stdout: {out[-500:]}\nstderr: {err[-800:]}")
            return m
        if check:
            problem = check(out, err, m)
            if problem:
                m.error = problem
                return m
        m.loop_ns.append(ns)
        m.wall.append(wall)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20000, help="calls per run (default 20000)")
    ap.add_argument("-r", "--repeats", type=int, default=3, help="runs per tool, best kept")
    ap.add_argument("--functracer", default=os.environ.get("FUNCTRACER") or
                    find_built("core/functracer"))
    ap.add_argument("--postproc", default=os.environ.get("FUNCTRACER_POSTPROC") or
                    find_built("postproc/functracer-postproc"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()

    if not args.functracer:
        sys.exit("functracer not found; build it (meson/ninja) or pass --functracer PATH")
    n = args.n
    tmp = tempfile.mkdtemp(prefix="ft-bench-")
    try:
        binary = os.path.join(tmp, "bench_calls")
        p, _ = run([args.cc, "-O2", "-g", "-o", binary, os.path.join(HERE, "bench_calls.c")])
        if p.returncode != 0:
            sys.exit(f"cannot build bench_calls.c:\n{p.stderr.decode()}")
        expect = f"sum={3 * (n * (n - 1) // 2) + n}"
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} {n}  (bench_fn called {n} times, best of {args.repeats})")
        print()

        results = []
        results.append(measure("untraced", [binary, str(n)], args.repeats, expect))

        outdir = os.path.join(tmp, "traces")

        def ft_check(out, err, m):
            s = re.search(r"(\d+)\s+(?:ptrace\s+)?stops", err)
            e = re.search(r"(\d+)\s+events", err)
            if s:
                m.extra["stops"] = int(s.group(1))
            if e:
                m.extra["events"] = int(e.group(1))
            line = [ln for ln in err.splitlines() if "stops" in ln or "events" in ln]
            m.extra["stats"] = line[-1].strip() if line else "(no --stats line)"
            if args.postproc:
                files = glob.glob(os.path.join(outdir, "*.trace"))
                p, _ = run([args.postproc, "calls", "--json"] + files)
                try:
                    funcs = json.loads(p.stdout.decode())["functions"]
                    calls = sum(f["calls"] for f in funcs if f["name"].split("(")[0] == "bench_fn")
                except (ValueError, KeyError, TypeError):
                    return f"functracer-postproc calls --json failed: {p.stderr.decode()[-500:]}"
                if calls != n:
                    return f"functracer recorded {calls} calls of bench_fn, not {n}"
            shutil.rmtree(outdir, ignore_errors=True)
            return None

        results.append(measure(
            "functracer", [args.functracer, "-q", "-e", "calltrace", "-a", "bench_fn", "-o",
                           outdir, "--stats", binary, str(n)], args.repeats, expect, ft_check))

        if shutil.which("ltrace"):
            results.append(measure("ltrace", ["ltrace", "-L", "-x", "bench_fn", "-o", "/dev/null",
                                              binary, str(n)], args.repeats, expect))
        else:
            print("ltrace: not installed, skipped")

        bpftrace = shutil.which("bpftrace")
        if bpftrace and os.geteuid() == 0:
            def bpf_check(out, err, m):
                c = re.search(r"@c:\s*(\d+)", out)
                if not c or int(c.group(1)) != n:
                    return f"bpftrace counted {c.group(1) if c else 'nothing'}, not {n}"
                return None
            script = f'uprobe:"{binary}":bench_fn {{ @c = count(); }}'
            results.append(measure("bpftrace uprobe", [bpftrace, "-e", script, "-c",
                                                       f"{binary} {n}"], args.repeats, expect,
                                   bpf_check))
        else:
            print("bpftrace: not available (needs root), skipped")

        base = results[0].best_loop()
        print(f"{'tool':<18}{'µs/call (loop)':>16}{'overhead µs/call':>18}{'wall s':>9}")
        per_call = {}
        for m in results:
            if m.error:
                print(f"{m.name:<18}  ERROR: {m.error}")
                continue
            loop = m.best_loop() / n / 1000.0
            over = (m.best_loop() - base) / n / 1000.0 if base is not None else float("nan")
            per_call[m.name] = over
            print(f"{m.name:<18}{loop:>16.3f}{over:>18.3f}{m.best_wall():>9.2f}")
        print()
        ft = next((m for m in results if m.name == "functracer" and not m.error), None)
        if ft:
            print(f"functracer --stats: {ft.extra.get('stats')}")
            if "stops" in ft.extra:
                print(f"functracer ptrace stops per traced call: {ft.extra['stops'] / n:.3f}")
        if "functracer" in per_call and "ltrace" in per_call and per_call["functracer"] > 0:
            print(f"ratio ltrace/functracer (overhead per call): "
                  f"{per_call['ltrace'] / per_call['functracer']:.2f}")
        if "functracer" in per_call and "bpftrace uprobe" in per_call and \
                per_call["bpftrace uprobe"] > 0:
            print(f"ratio functracer/uprobe (overhead per call): "
                  f"{per_call['functracer'] / per_call['bpftrace uprobe']:.2f}")
        errors = [m for m in results if m.error]
        return 1 if errors else 0
    finally:
        if args.keep:
            print(f"(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

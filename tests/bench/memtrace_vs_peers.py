#!/usr/bin/env python3
"""Per-event cost of functracer's memtrace next to ltrace, heaptrack and valgrind.

Builds bench_alloc.c (N malloc/free pairs 16 calls deep; the program times its
own allocating loop) and runs it, in the same run:

  untraced
  functracer -q -e memtrace -o TMP --stats -b 8      (and -b 0, -b 16)
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
    found = [p for p in glob.glob(os.path.join(ROOT, "*", rel)) if os.path.exists(p)]
    found.sort(key=os.path.getmtime, reverse=True)
    return found[0] if found else None


def run(cmd, timeout=3600):
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    return p, time.monotonic() - start


def loop_ns(text):
    m = re.search(r"bench_alloc: n=(\d+) loop_ns=(\d+)", text)
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


def measure(name, cmd, repeats, expect_stdout, check=None, prepare=None):
    m = Measure(name)
    for _ in range(repeats):
        if prepare:
            prepare()
        try:
            p, wall = run(cmd)
        except subprocess.TimeoutExpired:
            m.error = "timed out"
            return m
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        ns = loop_ns(err)
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


def count_records(trace_file):
    counts = {}
    with open(trace_file, "rb") as f:
        for line in f:
            parts = line.split(b" ", 4)
            if len(parts) >= 4:
                t = parts[3].decode()
                counts[t] = counts.get(t, 0) + 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20000, help="malloc/free pairs per run (20000)")
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
    events = 2 * n
    tmp = tempfile.mkdtemp(prefix="ft-bench-")
    try:
        binary = os.path.join(tmp, "bench_alloc")
        p, _ = run([args.cc, "-O2", "-g", "-o", binary, os.path.join(HERE, "bench_alloc.c")])
        if p.returncode != 0:
            sys.exit(f"cannot build bench_alloc.c:\n{p.stderr.decode()}")
        expect = f"blocks={n} "
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} {n}  ({n} malloc + {n} free = {events} events, "
              f"best of {args.repeats})")
        print()

        results = [measure("untraced", [binary, str(n)], args.repeats, expect)]
        outdir = os.path.join(tmp, "traces")

        def clean():
            shutil.rmtree(outdir, ignore_errors=True)

        def ft_check(out, err, m):
            stats = [ln for ln in err.splitlines() if "stops" in ln]
            m.extra["stats"] = stats[-1].strip() if stats else "(no --stats line)"
            s = re.search(r"(\d+)\s+(?:ptrace\s+)?stops", err)
            if s:
                m.extra["stops"] = int(s.group(1))
            files = glob.glob(os.path.join(outdir, "*.trace"))
            if len(files) != 1:
                return f"functracer wrote {len(files)} trace files"
            c = count_records(files[0])
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
            results.append(measure(
                f"functracer -b {depth}",
                [args.functracer, "-q", "-e", "memtrace", "-o", outdir, "-b", str(depth), "--stats",
                 binary, str(n)], args.repeats, expect, ft_check, prepare=clean))

        if shutil.which("ltrace"):
            log = os.path.join(tmp, "ltrace.log")

            def lt_check(out, err, m):
                with open(log, errors="replace") as f:
                    calls = sum(1 for ln in f if re.search(r"->(malloc|free)\(", ln))
                return None if calls == events else f"ltrace logged {calls} calls, not {events}"
            results.append(measure("ltrace -e malloc+free",
                                   ["ltrace", "-e", "malloc+free", "-o", log, binary, str(n)],
                                   args.repeats, expect, lt_check))
        else:
            print("ltrace: not installed, skipped")

        if shutil.which("heaptrack"):
            data = os.path.join(tmp, "heaptrack.data")

            def ht_clean():
                for f in glob.glob(data + "*"):
                    os.remove(f)
            results.append(measure("heaptrack", ["heaptrack", "-o", data, binary, str(n)],
                                   args.repeats, expect, prepare=ht_clean))
        else:
            print("heaptrack: not installed, skipped")

        if shutil.which("valgrind"):
            results.append(measure("valgrind memcheck",
                                   ["valgrind", "--tool=memcheck", "-q", binary, str(n)],
                                   args.repeats, expect))
        else:
            print("valgrind: not installed, skipped")

        base = results[0].best_loop()
        over = {}
        print(f"{'tool':<24}{'µs/event (loop)':>17}{'overhead µs/event':>19}{'wall s':>9}"
              f"{'ltrace/tool':>13}{'stops/event':>13}")
        lt = next((m for m in results if m.name.startswith("ltrace") and not m.error), None)
        lt_over = (lt.best_loop() - base) / events / 1000.0 if lt and base else None
        for m in results:
            if m.error:
                print(f"{m.name:<24}  ERROR: {m.error}")
                continue
            loop = m.best_loop() / events / 1000.0
            o = (m.best_loop() - base) / events / 1000.0 if base is not None else float("nan")
            over[m.name] = o
            ratio = f"{lt_over / o:.1f}" if lt_over and o > 0 else "-"
            stops = f"{m.extra['stops'] / events:.2f}" if "stops" in m.extra else "-"
            print(f"{m.name:<24}{loop:>17.3f}{o:>19.3f}{m.best_wall():>9.2f}{ratio:>13}{stops:>13}")
        print()
        for m in results:
            if "stats" in m.extra and not m.error:
                print(f"{m.name} --stats: {m.extra['stats']}")
        return 1 if any(m.error for m in results) else 0
    finally:
        if args.keep:
            print(f"(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

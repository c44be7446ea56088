#!/usr/bin/env python3
"""memtrace on a real interpreter: python3 running a json workload, next to heaptrack
and valgrind.

The workload (written into a scratch directory as json_work.py): a list of N small
dicts dumped to a JSON string and loaded back R times, checked equal each time; it
times its own loop and prints "json_work: n=N loop_ns=T". It runs under the real
interpreter (the python3 on PATH with its links followed, not a shim script, which
heaptrack and valgrind would not follow into the interpreter), with
PYTHONHASHSEED=0, one after the other:

  untraced           python3 json_work.py N R
  functracer         functracer -q -e memtrace -b 8 -o TMP --stats python3 ...
  functracer stops   the same with FT_FAST_PATH=0 (a ptrace stop per entry)
  heaptrack          heaptrack -o FILE python3 ...            (if installed)
  valgrind           valgrind --tool=memcheck -q python3 ...  (if installed; 1 run)

For each: the whole program's wall time (start-up and exit included: few heap
events reach the C allocator, since python's own allocator serves small objects)
and its ratio to heaptrack's (the target: memtrace at most heaptrack's), the loop
time, and for functracer the ptrace stops. This is a benchmark, not a test: it fails
only when a tool gives wrong results: the workload's own check, a record lost to a
full buffer, or functracer's count of allocations more than 2 % away from
heaptrack's ("calls to allocation functions" of heaptrack_print), an independent
count of the same program's allocations.

usage: python_json.py [-n N] [-R ROUNDS] [-r REPEATS] [--functracer PATH]
                      [--build DIR] [--keep]
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

import benchlib
from benchlib import Table, measure

WORKLOAD = r'''
import json, sys, time
n, rounds = int(sys.argv[1]), int(sys.argv[2])
data = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)], "score": i * 0.5}
        for i in range(n)]
start = time.perf_counter_ns()
for _ in range(rounds):
    text = json.dumps(data)
    back = json.loads(text)
    if back != data:
        sys.exit("json_work: round trip differs")
loop = time.perf_counter_ns() - start
print(f"json_work: n={n} loop_ns={loop}", file=sys.stderr)
print(f"json_work ok rounds={rounds} bytes={len(text)}")
'''


def interpreter():
    """The python3 on PATH with its links followed, else /usr/bin/python3: the first
    that is an ELF executable (a shim script is not)."""
    for cand in (shutil.which("python3"), "/usr/bin/python3"):
        if not cand:
            continue
        path = os.path.realpath(cand)
        try:
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return path
        except OSError:
            pass
    sys.exit("python_json.py: no python3 interpreter (an ELF executable) found")


def heaptrack_count(data_file):
    """heaptrack's "calls to allocation functions", or None."""
    files = glob.glob(data_file + "*")
    if not files or not shutil.which("heaptrack_print"):
        return None
    p = subprocess.run(["heaptrack_print", "-f", files[0]], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=600)
    m = re.search(r"calls to allocation functions: (\d+)", p.stdout.decode(errors="replace"))
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "dicts in the list (20000)", n_default=20000, cc=False)
    ap.add_argument("-R", "--rounds", type=int, default=10, help="dump/load rounds (10)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    os.environ["PYTHONHASHSEED"] = "0"
    python = interpreter()
    with benchlib.scratch_dir(args.keep) as tmp:
        script = os.path.join(tmp, "json_work.py")
        with open(script, "w") as f:
            f.write(WORKLOAD)
        workload = [python, script, str(args.n), str(args.rounds)]
        expect = f"json_work ok rounds={args.rounds}"
        print(f"functracer: {args.functracer}")
        print(f"program:    {' '.join(workload)}  (PYTHONHASHSEED=0, best of {args.repeats})")
        print()

        def bench(name, cmd, check=None, prepare=None, repeats=args.repeats):
            return measure(name, cmd, repeats, "json_work", expect, check, prepare)

        results = [bench("untraced", workload)]
        outdir = os.path.join(tmp, "traces")

        def clean():
            shutil.rmtree(outdir, ignore_errors=True)

        def ft_check(out, err, m):
            problem, c = benchlib.functracer_run(err, m, outdir)
            m.extra["allocs"] = c.get("alloc", 0)
            m.extra["frees"] = c.get("free", 0)
            return problem

        cmd = [args.functracer, "-q", "-e", "memtrace", "-b", "8", "-o", outdir, "--stats"] + workload
        results.append(bench("functracer -b 8", cmd, ft_check, prepare=clean))
        results.append(bench("functracer -b 8 stops", ["env", "FT_FAST_PATH=0"] + cmd, ft_check,
                             prepare=clean))

        ht_allocs = None
        if benchlib.optional_tool("heaptrack"):
            data = os.path.join(tmp, "heaptrack.data")

            def ht_clean():
                for f in glob.glob(data + "*"):
                    os.remove(f)
            results.append(bench("heaptrack", ["heaptrack", "-o", data] + workload, prepare=ht_clean))
            ht_allocs = heaptrack_count(data)
        if benchlib.optional_tool("valgrind"):
            results.append(bench("valgrind memcheck", ["valgrind", "--tool=memcheck", "-q"] + workload,
                                 repeats=1))

        ht = next((m for m in results if m.name == "heaptrack" and not m.error), None)
        ht_wall = ht.best_wall() if ht else None
        table = Table([("run", 24), ("wall s", 9), ("wall/heaptrack", 16), ("loop s", 9),
                       ("allocs", 10), ("frees", 10), ("stops", 8)])
        table.header()
        for m in results:
            if m.error:
                table.error(m.name, m.error)
                continue
            allocs = m.extra.get("allocs", ht_allocs if m is ht else None)
            table.row(m.name, f"{m.best_wall():.2f}", benchlib.ratio(m.best_wall(), ht_wall, "{:.2f}"),
                      f"{m.best_loop() / 1e9:.2f}", "-" if allocs is None else allocs,
                      m.extra.get("frees", "-"), m.extra.get("stops", "-"))
        print()
        for m in results:
            if "stats" in m.extra and not m.error:
                print(f"{m.name} --stats: {m.extra['stats']}")
        failed = any(m.error for m in results)
        if ht_allocs:
            for m in results:
                if "allocs" in m.extra and not m.error:
                    off = abs(m.extra["allocs"] - ht_allocs) / ht_allocs
                    verdict = "ok" if off <= 0.02 else "DIFFERS"
                    print(f"{m.name}: {m.extra['allocs']} allocations, heaptrack {ht_allocs} "
                          f"({100 * off:.2f} % apart): {verdict}")
                    failed = failed or off > 0.02
        else:
            print("heaptrack's allocation count not available: the counts were not compared")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

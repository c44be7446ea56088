#!/usr/bin/env python3
"""Throughput and memory of functracer-postproc next to heaptrack_print.

Records one allocation-heavy program (bench_leaks.c: four call paths, about
4096 blocks live at a time, one block in 997 leaked) twice, once under each
tool, with about --events heap events (an event is one allocation or one
release):

  functracer -q -e memtrace -b 8 -o WORK/traces bench_leaks N
  heaptrack -o WORK/heaptrack bench_leaks N          (if heaptrack is installed)

The recordings are kept in the work directory and reused by the next run with
the same N, depth and bench_leaks.c (--retrace records them again). Then it
runs each report best of --repeat times, every run a fresh child reaped with
wait4 for its own peak RSS:

  functracer-postproc leaks WORK/traces
  functracer-postproc leaks --json WORK/traces
  heaptrack_print WORK/heaptrack.zst                 (its default report)
  heaptrack_print --print-leaks=1 WORK/heaptrack.zst (the default plus leaks)
  heaptrack_print --print-leaks=1 --print-peaks=0 --print-allocators=0
                  --print-temporary=0 WORK/heaptrack.zst (leaks only)

and prints, for each: the events in its input (functracer: alloc + free
records of the trace; heaptrack: the + and - records of its data file when
zstd can read it, its "calls to allocation functions" otherwise), the best wall
time and CPU time (user + system), events per second (wall), the largest max
RSS of the runs, and the ratios functracer-postproc leaks / that report for
wall time and for RSS. A benchmark, not a test: it fails only when a report is
wrong (the leaks found must be the program's) or a tool fails.

usage: postproc_vs_heaptrack.py [--events N] [-r N] [--workdir DIR] [--retrace]
                                [--quick] [-b DEPTH] [--functracer PATH]
                                [--postproc PATH] [--build DIR] [--cc CC] [--keep]
"""

import argparse
import glob
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import benchlib
from benchlib import Table, count_records, run

LEAK_EVERY = 997  # bench_leaks.c leaks block i when i % 997 == 0
QUICK_EVENTS = 20000
CACHE_FORMAT = 1  # of WORK/.../meta.json; a change records again


def events_arg(text):
    value = int(float(text))
    if value < 10:
        raise argparse.ArgumentTypeError("at least 10 events")
    return value


def pairs_for(events):
    """bench_leaks N makes N allocations and N - ceil(N / 997) frees."""
    return max(1, round(events / (2 - 1 / LEAK_EVERY)))


def expected_output(n):
    leaked = math.ceil(n / LEAK_EVERY)
    leaked_bytes = sum(16 + ((i * 7) % 128) * 8 for i in range(0, n, LEAK_EVERY))
    return {"allocs": n, "frees": n - leaked, "leaked": leaked, "leaked_bytes": leaked_bytes}


def output_line(e):
    return (f"allocs={e['allocs']} frees={e['frees']} leaked={e['leaked']} "
            f"leaked_bytes={e['leaked_bytes']}")


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def mb(n_bytes):
    return n_bytes / (1024 * 1024)


def fmt_rate(events, seconds):
    return f"{events / seconds:,.0f}" if events and seconds and seconds > 0 else "-"


def load_meta(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_meta(path, meta):
    with open(path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def record_functracer(args, binary, n, expect, cfgdir):
    outdir = os.path.join(cfgdir, "traces")
    shutil.rmtree(outdir, ignore_errors=True)
    cmd = [args.functracer, "-q", "-e", "memtrace", "-b", str(args.depth), "-o", outdir,
           binary, str(n)]
    print(f"recording:  {shlex.join(cmd)}", flush=True)
    p, wall = run(cmd, timeout=6 * 3600)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or output_line(expect) not in out:
        sys.exit(f"functracer failed (status {p.returncode}):\nstdout: {out[-500:]}\n"
                 f"stderr: {p.stderr.decode(errors='replace')[-800:]}")
    files = sorted(glob.glob(os.path.join(outdir, "*.trace*")))
    if len(files) != 1:
        sys.exit(f"functracer wrote {len(files)} trace files into {outdir}, expected 1")
    counts = count_records(files[0])
    allocs, frees = counts.get("alloc", 0), counts.get("free", 0)
    if (allocs, frees) != (expect["allocs"], expect["frees"]):
        sys.exit(f"the trace holds {allocs} alloc and {frees} free records; the program made "
                 f"{expect['allocs']} allocations and {expect['frees']} frees")
    return {"files": [os.path.relpath(f, cfgdir) for f in files], "allocs": allocs,
            "frees": frees, "record_s": wall}


def heaptrack_counts(data):
    """Allocation (+) and free (-) records in a heaptrack data file and its
    uncompressed size, or None when there is no zstd/gzip program to read it."""
    reader = ["zstd", "-dc"] if data.endswith(".zst") else ["gzip", "-dc"]
    if not shutil.which(reader[0]):
        return None
    plus = minus = size = 0
    with subprocess.Popen(reader + [data], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as p:
        for line in p.stdout:
            size += len(line)
            if line.startswith(b"+ "):
                plus += 1
            elif line.startswith(b"- "):
                minus += 1
    return (plus, minus, size) if p.returncode == 0 else None


def record_heaptrack(heaptrack, binary, n, expect, cfgdir):
    base = os.path.join(cfgdir, "heaptrack")
    for f in glob.glob(base + ".*"):
        os.remove(f)
    cmd = [heaptrack, "-o", base, binary, str(n)]
    print(f"recording:  {shlex.join(cmd)}", flush=True)
    p, wall = run(cmd, timeout=6 * 3600)
    out = p.stdout.decode(errors="replace")
    files = glob.glob(base + ".*")
    if p.returncode != 0 or output_line(expect) not in out or len(files) != 1:
        sys.exit(f"heaptrack failed (status {p.returncode}, files {files}):\n"
                 f"stdout: {out[-800:]}\nstderr: {p.stderr.decode(errors='replace')[-800:]}")
    meta = {"file": os.path.relpath(files[0], cfgdir), "record_s": wall}
    counts = heaptrack_counts(files[0])
    if counts:
        meta["allocs"], meta["frees"], meta["uncompressed_bytes"] = counts
    return meta


class Report:
    def __init__(self, name, cmd, events, peer, check=None):
        self.name = name
        self.cmd = cmd
        self.events = events
        self.peer = peer
        self.check = check
        self.wall = []
        self.cpu = []
        self.maxrss_kib = 0
        self.error = None
        self.leaked = None

    def best(self):
        return min(self.wall) if self.wall else None


def run_report(r, repeats, outfile):
    for _ in range(repeats):
        with open(outfile, "wb") as out:
            try:
                code, wall, cpu, maxrss, err = benchlib.run_rusage(r.cmd, stdout=out)
            except subprocess.TimeoutExpired:
                r.error = "timed out"
                return
        if code != 0:
            r.error = f"failed (status {code}): {shlex.join(r.cmd)}\nstderr: {err[-800:]}"
            return
        if r.check:
            with open(outfile, "rb") as f:
                problem = r.check(f.read().decode(errors="replace"))
            if problem:
                r.error = problem
                return
        r.wall.append(wall)
        r.cpu.append(cpu)
        r.maxrss_kib = max(r.maxrss_kib, maxrss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", metavar="N", type=events_arg, default=None,
                    help="heap events to record, about (default 1e6; 20000 with --quick)")
    ap.add_argument("-b", "--depth", type=int, default=8,
                    help="functracer backtrace depth (default 8)")
    ap.add_argument("--workdir", metavar="DIR", default=os.path.join(
        tempfile.gettempdir(), f"functracer-bench-postproc-{os.getuid()}"),
        help="where the recordings are kept between runs (default: %(default)s)")
    ap.add_argument("--retrace", action="store_true",
                    help="record again even when the work directory has the recordings")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK_EVENTS} events, 1 run per report")
    benchlib.add_common_args(ap, None, n=False, repeats_default=None,
                             keep_help="keep the reports' output in the work directory")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else 1000000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3

    if not args.postproc or not os.access(args.postproc, os.X_OK):
        sys.exit(f"functracer-postproc not found ({args.postproc}); build it (meson/ninja) or "
                 f"pass --postproc PATH or --build DIR")
    n = pairs_for(args.events)
    expect = expected_output(n)
    source = os.path.join(benchlib.HERE, "bench_leaks.c")
    cfgdir = os.path.join(os.path.abspath(args.workdir), f"n{n}-b{args.depth}")
    os.makedirs(cfgdir, exist_ok=True)
    meta_path = os.path.join(cfgdir, "meta.json")
    meta = load_meta(meta_path)
    key = {"n": n, "depth": args.depth, "source_sha256": sha256_file(source), "cc": args.cc,
           "format": CACHE_FORMAT}
    binary = os.path.join(cfgdir, "bench_leaks")
    if args.retrace or meta.get("key") != key or not os.path.exists(binary):
        meta = {"key": key}  # everything is recorded again, with a fresh build
        benchlib.compile_program(args.cc, "bench_leaks.c", cfgdir)
        save_meta(meta_path, meta)

    heaptrack = shutil.which("heaptrack")
    heaptrack_print = shutil.which("heaptrack_print")

    print(f"postproc:   {args.postproc}")
    print(f"program:    {binary} {n}  ({expect['allocs']} allocations, {expect['frees']} frees, "
          f"{expect['leaked']} leaked blocks; 4 call paths)")
    print(f"work dir:   {cfgdir}")

    if "functracer" in meta:
        print("functracer: recording cached (--retrace to record again)")
    else:
        if not args.functracer or not os.access(args.functracer, os.X_OK):
            sys.exit(f"functracer not found ({args.functracer}); build it (meson/ninja) or "
                     f"pass --functracer PATH or --build DIR")
        meta["functracer"] = record_functracer(args, binary, n, expect, cfgdir)
        save_meta(meta_path, meta)
    ft = meta["functracer"]
    traces = [os.path.join(cfgdir, f) for f in ft["files"]]
    ft_events = ft["allocs"] + ft["frees"]
    trace_bytes = sum(os.path.getsize(f) for f in traces)
    print(f"functracer trace: {ft['allocs']} alloc + {ft['frees']} free = {ft_events} events, "
          f"{mb(trace_bytes):.1f} MB, recorded in {ft['record_s']:.1f} s")

    ht = None
    if not heaptrack or not heaptrack_print:
        missing = "heaptrack" if not heaptrack else "heaptrack_print"
        benchlib.skipped(missing, "not installed (Debian package heaptrack), only "
                         "functracer-postproc is measured")
    else:
        if "heaptrack" in meta:
            print("heaptrack:  recording cached (--retrace to record again)")
        else:
            meta["heaptrack"] = record_heaptrack(heaptrack, binary, n, expect, cfgdir)
            save_meta(meta_path, meta)
        ht = meta["heaptrack"]
        ht_data = os.path.join(cfgdir, ht["file"])
        size = f"{os.path.getsize(ht_data) / 1024:.1f} KB {os.path.splitext(ht_data)[1]}"
        if "allocs" in ht:
            size = (f"{ht['allocs']} + and {ht['frees']} - records = "
                    f"{ht['allocs'] + ht['frees']} events, {mb(ht['uncompressed_bytes']):.1f} MB "
                    f"({size})")
        print(f"heaptrack data: {size}, recorded in {ht['record_s']:.1f} s")
    print(f"best of {args.repeats} runs per report")
    print(flush=True)

    def leaks_json_check(text):
        try:
            doc = json.loads(text)
            leaked = (doc["leaked_blocks"], doc["leaked_bytes"])
        except (ValueError, KeyError, TypeError):
            return "leaks --json printed no JSON report"
        want = (expect["leaked"], expect["leaked_bytes"])
        return None if leaked == want else \
            f"leaks --json reports {leaked} (blocks, bytes) leaked, the program leaked {want}"

    def leaks_text_check(text):
        want = f"{expect['leaked_bytes']} bytes"
        return None if want in text else f"leaks does not report the {want} leaked"

    reports = [
        Report("functracer-postproc leaks", [args.postproc, "leaks"] + traces, ft_events,
               False, leaks_text_check),
        Report("functracer-postproc leaks --json", [args.postproc, "leaks", "--json"] + traces,
               ft_events, False, leaks_json_check),
    ]
    if ht:
        ht_events = ht["allocs"] + ht["frees"] if "allocs" in ht else None

        def ht_check(report):
            def check(text):
                m = re.search(r"calls to allocation functions: (\d+)", text)
                if not m:
                    return "heaptrack_print printed no \"calls to allocation functions\" line"
                calls = int(m.group(1))
                if calls < expect["allocs"]:
                    return (f"heaptrack_print counts {calls} calls to allocation functions, "
                            f"the program made {expect['allocs']}")
                if report.events is None:
                    report.events = calls  # no - records counted: allocations only
                leak = re.search(r"total memory leaked: (\S+)", text)
                report.leaked = leak.group(1) if leak else None
                return None
            return check

        for name, flags in (("heaptrack_print", []),
                            ("heaptrack_print --print-leaks", ["--print-leaks=1"]),
                            ("heaptrack_print leaks only",
                             ["--print-leaks=1", "--print-peaks=0", "--print-allocators=0",
                              "--print-temporary=0"])):
            r = Report(name, [heaptrack_print] + flags + [ht_data], ht_events, True)
            r.check = ht_check(r)
            reports.append(r)

    outdir = os.path.join(cfgdir, "reports")
    os.makedirs(outdir, exist_ok=True)
    for r in reports:
        slug = re.sub(r"[^a-z0-9]+", "-", r.name.lower()).strip("-")
        run_report(r, args.repeats, os.path.join(outdir, slug + ".txt"))

    ours = reports[0] if not reports[0].error else None
    table = Table([("report", 34), ("events", 10), ("s", 8), ("CPU s", 8), ("events/s", 12),
                   ("max RSS MB", 12), ("ours/peer s", 13), ("ours/peer RSS", 15)])
    table.header()
    for r in reports:
        if r.error:
            table.error(r.name, r.error)
            continue
        t_ratio = rss_ratio = "-"
        if r.peer and ours:
            t_ratio = benchlib.ratio(ours.best(), r.best(), "{:.2f}")
            rss_ratio = benchlib.ratio(ours.maxrss_kib, r.maxrss_kib, "{:.2f}")
        table.row(r.name, r.events if r.events is not None else "-", f"{r.best():.3f}",
                  f"{min(r.cpu):.3f}", fmt_rate(r.events, r.best()),
                  f"{r.maxrss_kib / 1024:.1f}", t_ratio, rss_ratio)
    notes = []
    if ht and "allocs" not in ht:
        notes.append("heaptrack_print: events are its calls to allocation functions only "
                     "(no zstd program to count the frees in its data file)")
    if ht and not any(r.error for r in reports if r.peer):
        leaked = reports[-1].leaked
        notes.append(f"heaptrack_print: total memory leaked {leaked}; the program leaked "
                     f"{expect['leaked_bytes']} bytes in {expect['leaked']} blocks")
    for note in notes:
        print(note)

    if args.keep:
        print(f"(reports kept in {outdir})")
    else:
        shutil.rmtree(outdir, ignore_errors=True)
    return 1 if any(r.error for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Attach-mode overhead: a busy 4-thread program, traced by attaching to it.

The program (bench_curve.c, `busy S 4`) runs 4 threads that call curve_hot for S
seconds and prints how many calls they made. Each tool attaches to it once it is
running and stays until it exits:

  untraced     the program alone: its call rate
  functracer   functracer -q -p PID -e calltrace -a curve_hot -o DIR --stats
  ft in-proc   the same with FT_FAST_PATH=1: calls recorded inside the process
  ltrace       ltrace -p PID -x curve_hot -o FILE
  bpftrace     a uprobe on curve_hot counting hits (root only; the probe is set
               before the program starts, since a uprobe is on the file)

For each: the calls it recorded (functracer-postproc calls --json on the trace,
lines of ltrace's log, bpftrace's count), the time from its start to its exit
(attaching, tracing, detaching when the program ends), and so the traced calls
per second and the cost per traced call, against the program's untraced call
rate, and how much of its untraced throughput the program kept over its run. functracer's --stats line gives the stops per event. The program must end
well (its own check of every result); a tool that breaks it is reported.
ltrace and bpftrace are optional.

With --memtrace, a malloc/free pair in place of each call (`busyalloc`), traced by
functracer -e memtrace and heaptrack -p; --work W puts W rounds of work on each block
between its malloc and its free (tests/bench/README.md).
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import cost_curve  # noqa: E402

THREADS = 4


MODE = ["busy"]  # "busyalloc" with --memtrace, then the rounds of work per block (--work)


def start_target(binary, seconds):
    p = subprocess.Popen([binary, MODE[0], str(seconds), str(THREADS)] + MODE[1:], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    line = p.stdout.readline().decode()
    if line.strip() != "ready":
        p.kill()
        sys.exit(f"bench_curve busy did not start: {line!r}")
    return p


def finish_target(p):
    out, err = p.communicate(timeout=600)
    m = re.search(r"busy calls=(\d+) ok=1", out.decode())
    if p.returncode != 0 or not m:
        return None, f"target failed (status {p.returncode}): {out.decode()[-300:]} {err.decode()[-300:]}"
    return int(m.group(1)), None


def attached(binary, seconds, tool_cmd, count, probe=False):
    """Runs the target, attaches tool_cmd(pid) after a short delay, waits for both.
    A probe (bpftrace) is started first instead, waited for until it says it is
    attached, and interrupted once the program has ended.
    Returns (program calls, tool seconds, calls the tool recorded, tool stderr) or an error."""
    t0 = time.monotonic()
    if probe:
        tool = subprocess.Popen(tool_cmd(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        first = tool.stdout.readline().decode()
        if not first.startswith("Attaching"):
            tool.kill()
            return None, f"probe did not start: {first!r} {tool.stderr.read().decode()[-300:]}"
        p = start_target(binary, seconds)
    else:
        p = start_target(binary, seconds)
        time.sleep(0.2)
        t0 = time.monotonic()
        tool = subprocess.Popen(tool_cmd(p.pid), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
    calls, err = finish_target(p)
    if err and p.returncode < 0:
        err = f"the program was killed by signal {-p.returncode} while traced"
    if probe:
        tool.send_signal(signal.SIGINT)
    try:
        tout, terr = tool.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        tool.kill()
        return None, "tool did not exit after the target"
    # A probe is attached while the program runs: its start-up is not the program's.
    wall = seconds if probe else time.monotonic() - t0
    if err:
        return None, err
    recorded = count(tout.decode(errors="replace"), terr.decode(errors="replace"))
    if recorded is None or isinstance(recorded, str):
        return None, recorded or f"tool recorded nothing; stderr: {terr.decode()[-500:]}"
    return (calls, wall, recorded, terr.decode(errors="replace")), None


def attached_runs(repeats, table, name, binary, seconds, cmd, count, probe=False):
    """`repeats` runs of attached(); the first error goes to the table and ends them."""
    runs = []
    for _ in range(repeats):
        r, err = attached(binary, seconds, cmd, count, probe=probe)
        if err:
            table.error(name, err)
            break
        runs.append(r)
    return runs


def announce(args, tmp):
    """Builds bench_curve into tmp and says what runs."""
    binary = cost_curve.build(args.cc, tmp)
    print(f"functracer: {args.functracer}")
    print(f"program:    {binary} {MODE[0]} {args.seconds} {THREADS} {' '.join(MODE[1:])}".rstrip()
          + f"  (best of {args.repeats})\n")
    return binary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, None, n=False)
    ap.add_argument("-s", "--seconds", type=float, default=3.0, help="run time of the program (default 3)")
    ap.add_argument("--memtrace", action="store_true", help="a malloc/free pair per call (busyalloc), "
                    "traced with memtrace -b 8 and against heaptrack -p")
    ap.add_argument("--work", type=int, default=0, metavar="W",
                    help="with --memtrace: W rounds of work on each block between its malloc and "
                         "its free (default 0: the threads do nothing but allocate)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    if args.work < 0 or (args.work and not args.memtrace):
        sys.exit("--work takes a count of rounds >= 0, and goes with --memtrace")
    if args.memtrace:
        MODE[0] = "busyalloc"
        if args.work:
            MODE.append(str(args.work))
        return main_memtrace(args)
    s = args.seconds
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = announce(args, tmp)
        table = benchlib.Table([("run", 12), ("attached s", 12), ("traced calls", 14),
                                ("calls/s", 14), ("µs/traced call", 16), ("stops/event", 13),
                                ("program kept", 13)])
        table.header()

        base_rate = None
        best = []
        for _ in range(args.repeats):
            p = start_target(binary, s)
            calls, err = finish_target(p)
            if err:
                sys.exit(err)
            best.append(calls / s)
        base_rate = max(best)
        table.row("untraced", f"{s:.1f}", "-", f"{base_rate:,.0f}", f"{1e6 / base_rate:.4f}", "-", "100 %")

        outdir = os.path.join(tmp, "traces")

        def ft_count(out, err):
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            if not files or not args.postproc:
                return None
            calls = benchlib.traced_calls(args.postproc, files, "curve_hot")
            shutil.rmtree(outdir, ignore_errors=True)
            return calls

        def ft_cmd(fast):
            # FT_FAST_PATH=1: calls recorded inside the process (doc/internals.md §8b).
            return lambda pid: ["env", f"FT_FAST_PATH={1 if fast else 0}", args.functracer, "-q", "-p", str(pid),
                                "-e", "calltrace", "-a", "curve_hot", "-o", outdir, "--stats"]
        tools = [("functracer", ft_cmd(False), ft_count), ("ft in-proc", ft_cmd(True), ft_count)]
        if benchlib.optional_tool("ltrace"):
            log = os.path.join(tmp, "ltrace.log")

            def lt_count(out, err):
                with open(log, errors="replace") as f:
                    n = sum(1 for line in f if "curve_hot(" in line)
                os.remove(log)
                return n
            tools.append(("ltrace", lambda pid: ["ltrace", "-p", str(pid), "-x", "curve_hot", "-o", log],
                          lt_count))
        bpftrace = shutil.which("bpftrace")
        if bpftrace and os.geteuid() == 0:
            def bpf_count(out, err):
                m = re.search(r"@c:\s*(\d+)", out)
                return int(m.group(1)) if m else None
            tools.append(("bpftrace", lambda pid: [
                bpftrace, "-e", f'uprobe:"{binary}":curve_hot {{ @c = count(); }}'], bpf_count))
        else:
            benchlib.skipped("bpftrace", "not installed (Debian package bpftrace) or not root")

        for name, cmd, count in tools:
            runs = attached_runs(args.repeats, table, name, binary, s, cmd, count,
                                 probe=name == "bpftrace")
            if not runs:
                continue
            calls, wall, recorded, terr = min(runs, key=lambda r: r[1] / max(r[2], 1))
            ev = re.search(r"(\d+) events", terr)
            st = benchlib.stats_stops(terr)
            spe = f"{st / int(ev.group(1)):.2f}" if ev and st and int(ev.group(1)) else "-"
            # The program's own calls over its whole run (0.2 s of it untraced), against
            # its untraced rate: how much of its throughput it kept.
            kept = f"{100 * calls / (base_rate * s):.1f} %"
            table.row(name, f"{wall:.1f}", recorded, f"{recorded / wall:,.0f}",
                      f"{wall / recorded * 1e6:.3f}" if recorded else "-", spe, kept)


def main_memtrace(args):
    """busyalloc attached with memtrace (recorder and stop path) and heaptrack -p;
    a "call" is a malloc/free pair, the records counted are the allocs."""
    s = args.seconds
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = announce(args, tmp)
        table = benchlib.Table([("run", 14), ("attached s", 12), ("allocs seen", 14),
                                ("allocs/s", 14), ("stops/event", 13), ("program kept", 13)])
        table.header()
        rates = []
        for _ in range(args.repeats):
            calls, err = finish_target(start_target(binary, s))
            if err:
                sys.exit(err)
            rates.append(calls / s)
        base_rate = max(rates)
        table.row("untraced", f"{s:.1f}", "-", f"{base_rate:,.0f}", "-", "100 %")
        outdir = os.path.join(tmp, "traces")

        def ft_count(out, err):
            lost = re.search(r"(\d+) lost", err)
            if lost and int(lost.group(1)):
                return f"functracer lost {lost.group(1)} records"
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            if not files:
                return None
            c = benchlib.count_records(files[0])
            shutil.rmtree(outdir, ignore_errors=True)
            return c.get("alloc", 0)

        def ft_cmd(fast):
            return lambda pid: ["env", f"FT_FAST_PATH={fast}", args.functracer, "-q", "-p", str(pid),
                                "-e", "memtrace", "-b", "8", "-o", outdir, "--stats"]
        tools = [("memtrace -p", ft_cmd(1), ft_count), ("stops -p", ft_cmd(0), ft_count)]
        if benchlib.optional_tool("heaptrack"):
            data = os.path.join(tmp, "ht")

            def ht_count(out, err):
                files = glob.glob(data + "*")
                if not files:
                    return f"heaptrack wrote nothing: {(out + err)[-400:]}"
                p, _ = benchlib.run(["heaptrack_print", files[0]])
                for f in files:
                    os.remove(f)
                m = re.search(r"calls to allocation functions: (\d+)", p.stdout.decode())
                return int(m.group(1)) if m else f"heaptrack_print: {p.stderr.decode()[-300:]}"
            tools.append(("heaptrack -p", lambda pid: ["heaptrack", "-o", data, "-p", str(pid)],
                          ht_count))
        for name, cmd, count in tools:
            runs = attached_runs(args.repeats, table, name, binary, s, cmd, count)
            if not runs:
                continue
            calls, wall, recorded, terr = max(runs, key=lambda r: r[0])
            ev = re.search(r"(\d+) events", terr)
            st = benchlib.stats_stops(terr)
            spe = f"{st / int(ev.group(1)):.3f}" if ev and st is not None and int(ev.group(1)) else "-"
            # The 0.2 s before the attach ran at the untraced rate: taken out.
            kept = (calls - base_rate * 0.2) / (base_rate * (s - 0.2))
            table.row(name, f"{wall:.1f}", recorded, f"{recorded / wall:,.0f}", spe,
                      f"{100 * max(kept, 0):.1f} %")
            if calls < recorded:
                print(f"{name}: ERROR recorded {recorded} allocs, the program made {calls}")
        print("\n(program kept: its malloc/free pairs after the first 0.2 s (before the attach, "
              "counted at the untraced rate), against its untraced rate)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Attach pause: how long a running program stands still while a tracer attaches
to it and plants its probes on 2,000 functions.

The program (generated here: NFUNCS distinct functions pf_0 ... pf_N-1 and a worker
thread calling them in turn) has a ticker thread that reads CLOCK_MONOTONIC in a
loop and keeps the longest gap between two readings, and the number of gaps over
1 ms: a thread stopped by ptrace (or waiting for a lock) shows as a gap. The ticker
calls nothing traced. Each tool attaches once the program runs and stays until it
ends:

  untraced      the program alone: the gaps the machine itself makes
  functracer    functracer -q -p PID -e calltrace -a 'pf_*' -o DIR --stats
                (entries patched for the in-process recorder, the default)
  ft stops      the same with FT_FAST_PATH=0: 2,000 breakpoints
  ft memtrace   functracer -q -p PID -e memtrace -o DIR --stats (the allocator's
                entries patched; the modules' frame rules for call stacks)
  heaptrack     heaptrack -p PID (gdb stops the program and loads heaptrack's
                library into it)
  ltrace        ltrace -p PID -x 'pf_*' -o FILE
  bpftrace      bpftrace -e 'uprobe:BIN:pf_* { @c = count(); }' started while the
                program runs (uprobes are put on the file; no thread is stopped)

For each: the longest pause the ticker saw, the gaps over 1 ms, the calls the
tool recorded (a tool that records none did not attach), and functracer's own
account from --stats: how long it held the threads, and how much of that went to
reading the modules and planting. The program must end well
(it checks what its functions returned).
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


def source(nfuncs):
    """C source of the target: nfuncs functions that differ (no two fold into one)."""
    out = ["#define _GNU_SOURCE", "#include <pthread.h>", "#include <stdio.h>", "#include <stdlib.h>",
           "#include <time.h>", "#include <stdatomic.h>", ""]
    for i in range(nfuncs):
        out.append(f"__attribute__((noinline)) long pf_{i}(long x) {{ "
                   f"return (x * {2 * i + 3}) ^ (x >> {i % 13 + 1}); }}")
    out.append("typedef long (*fn_t)(long);")
    out.append("static fn_t fns[] = {" + ", ".join(f"pf_{i}" for i in range(nfuncs)) + "};")
    out.append(f"""
static atomic_int stop;
static double now(void) {{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}}
static void* worker(void* arg) {{
  long* bad = arg;
  while (!atomic_load(&stop))
    for (long i = 0; i < {nfuncs}; ++i) {{
      long x = i + 7;
      if (fns[i](x) != ((x * (2 * i + 3)) ^ (x >> (i % 13 + 1)))) ++*bad;
    }}
  return NULL;
}}
int main(int argc, char** argv) {{
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  long bad = 0;
  pthread_t t;
  pthread_create(&t, NULL, worker, &bad);
  printf("ready\\n");
  fflush(stdout);
  double start = now(), prev = start, max_gap = 0, at = 0;
  long over_1ms = 0;
  for (;;) {{
    double n = now();
    double gap = n - prev;
    if (gap > 0.001) ++over_1ms;
    if (gap > max_gap) {{ max_gap = gap; at = prev - start; }}
    prev = n;
    if (n - start > seconds) break;
  }}
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("max_gap_ms=%.3f at_s=%.3f over_1ms=%ld bad=%ld\\n", max_gap * 1e3, at, over_1ms, bad);
  return bad != 0;
}}
""")
    return "\n".join(out)


def build(cc, tmp, nfuncs):
    src = os.path.join(tmp, "pause_target.c")
    with open(src, "w") as f:
        f.write(source(nfuncs))
    binary = os.path.join(tmp, "pause_target")
    p, _ = benchlib.run([cc, "-O1", "-g", "-pthread", "-o", binary, src])
    if p.returncode != 0:
        sys.exit(f"cannot build the target:\n{p.stderr.decode()[-2000:]}")
    return binary


def run_once(binary, seconds, tool_cmd, delay):
    """The target, with tool_cmd(pid) started after `delay` seconds (None: alone).
    Returns ((max gap ms, at s, gaps over 1 ms), tool stdout, tool stderr) or an error."""
    p = subprocess.Popen([binary, str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    if p.stdout.readline().decode().strip() != "ready":
        p.kill()
        return None, "the target did not start"
    tool = None
    if tool_cmd:
        time.sleep(delay)
        tool = subprocess.Popen(tool_cmd(p.pid), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
    held_exit = False
    try:
        out, err = p.communicate(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        # A tracer that never lets the program's exit through (ltrace does so with
        # thousands of breakpoints): it is killed, and the program's report, written
        # before its exit, is still read.
        held_exit = True
        if tool:
            tool.kill()
            tool.communicate()
        out, err = p.communicate(timeout=60)
    tout = terr = b""
    if tool:
        if tool.poll() is None:
            time.sleep(0.5)
            tool.send_signal(signal.SIGINT)
        try:
            tout, terr = tool.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            tool.kill()
            return None, "the tool did not exit after the target"
    m = re.search(r"max_gap_ms=([\d.]+) at_s=([\d.]+) over_1ms=(\d+) bad=0", out.decode())
    if held_exit and m:
        terr += b"\n(held the program at its exit; killed after it)"
    elif p.returncode != 0 or not m:
        why = f"killed by signal {-p.returncode}" if p.returncode < 0 else f"status {p.returncode}"
        return None, f"the target failed ({why}): {out.decode()[-300:]} {err.decode()[-300:]}"
    return (float(m.group(1)), float(m.group(2)), int(m.group(3)),
            tout.decode(errors="replace"), terr.decode(errors="replace")), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, None, n=False)
    ap.add_argument("-s", "--seconds", type=float, default=4.0, help="run time of the target (default 4)")
    ap.add_argument("--functions", type=int, default=2000, help="traced functions (default 2000)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    delay = 1.0
    with benchlib.scratch_dir(args.keep) as tmp:
        binary = build(args.cc, tmp, args.functions)
        print(f"functracer: {args.functracer}")
        print(f"program:    {binary} {args.seconds}  ({args.functions} functions; the tool starts after "
              f"{delay:.1f} s; best of {args.repeats})\n")
        outdir = os.path.join(tmp, "traces")

        def ft_cmd(fast):
            return lambda pid: ["env", f"FT_FAST_PATH={1 if fast else 0}", args.functracer, "-q", "-p", str(pid),
                                "-e", "calltrace", "-a", "pf_*", "-o", outdir, "--stats"]

        def ft_count(out, err):
            files = glob.glob(os.path.join(outdir, "*.trace*"))
            if not files or not args.postproc:
                return None
            p, _ = benchlib.run([args.postproc, "calls", "--json"] + files, 1800)
            shutil.rmtree(outdir, ignore_errors=True)
            m = re.findall(rb'"calls":\s*(\d+)', p.stdout)
            return sum(int(x) for x in m) if m else None

        tools = [("untraced", None, None), ("functracer", ft_cmd(True), ft_count),
                 ("ft stops", ft_cmd(False), ft_count),
                 # memtrace: a handful of libc's allocator functions patched, and the
                 # frame rules of every module for call stacks walked in the process.
                 ("ft memtrace", lambda pid: [args.functracer, "-q", "-p", str(pid), "-e", "memtrace", "-o", outdir,
                                              "--stats"], None)]
        if benchlib.optional_tool("ltrace"):
            log = os.path.join(tmp, "ltrace.log")

            def lt_count(out, err):
                with open(log, errors="replace") as f:
                    n = sum(1 for line in f if "pf_" in line)
                os.remove(log)
                return n
            tools.append(("ltrace", lambda pid: ["ltrace", "-p", str(pid), "-x", "pf_*", "-o", log], lt_count))
        if benchlib.optional_tool("heaptrack") and shutil.which("gdb"):
            # heaptrack's attach: gdb injects its library into the running program.
            # Its data file goes to the scratch directory, not the current one.
            tools.append(("heaptrack", lambda pid: ["heaptrack", "-o", os.path.join(tmp, "heaptrack-attach"), "-p", str(pid)],
                          None))
        else:
            benchlib.skipped("heaptrack -p", "heaptrack or gdb not installed (Debian packages heaptrack, gdb)")
        bpftrace = shutil.which("bpftrace")
        if bpftrace and os.geteuid() == 0:
            def bpf_count(out, err):
                m = re.search(r"@c:\s*(\d+)", out)
                return int(m.group(1)) if m else None
            # bpftrace refuses more than 512 probes unless told.
            tools.append(("bpftrace", lambda pid: ["env", f"BPFTRACE_MAX_PROBES={args.functions + 100}", bpftrace,
                                                   "-e", f'uprobe:"{binary}":pf_* {{ @c = count(); }}'], bpf_count))
        else:
            benchlib.skipped("bpftrace", "not installed (Debian package bpftrace) or not root")

        table = benchlib.Table([("run", 12), ("longest pause ms", 18), ("at s", 8), ("gaps > 1 ms", 13),
                                ("calls recorded", 16), ("ft: held ms", 13), ("ft: planting ms", 17)])
        table.header()
        for name, cmd, count in tools:
            runs = []
            for _ in range(args.repeats):
                r, err = run_once(binary, args.seconds, cmd, delay)
                if err:
                    table.error(name, err)
                    runs = []
                    break
                recorded = count(r[3], r[4]) if count else None
                if "(held the program at its exit" in r[4]:
                    print(f"{name}: held the program at its exit (it never ended); killed, the pause "
                          f"the program measured is kept")
                if count and not recorded:
                    table.error(name, f"recorded no call; stderr: {r[4][-300:]}")
                    runs = []
                    break
                runs.append((r, recorded))
            if not runs:
                continue
            # The run with the shortest longest pause: noise only ever adds to it.
            (gap, at, over, _, terr), recorded = min(runs, key=lambda x: x[0][0])
            # functracer's own account of the pause (--stats): the threads held from the
            # first seize to their resumption, and of that the set-up.
            held = re.search(r"threads held at most ([\d.]+) ms \(([\d.]+) ms of it", terr)
            table.row(name, f"{gap:.2f}", f"{at:.2f}", over, "-" if recorded is None else f"{recorded:,}",
                      held.group(1) if held else "-", held.group(2) if held else "-")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""redis-server under redis-benchmark, attached with functracer's memtrace.

Starts redis-server on a loopback port (no persistence), then for each run a
bounded redis-benchmark (-n N -t set,get,lpush -q):

  untraced       redis-server alone
  memtrace -p    functracer -q -p PID -e memtrace -b 8 -o DIR --stats, attached
                 before the benchmark, detached by SIGINT after it
  stops -p       the same with FT_FAST_PATH=0 (a ptrace stop per entry)

It prints the requests per second of each command and the share kept against
the untraced run, the heap events recorded and functracer's --stats lines. After
each detach the server must still answer right (redis-cli SET then GET of a
fresh value, and the length of the benchmark's list), functracer must exit 0
and lose no record to full buffers.

usage: redis_attach.py [-n N] [-r REPEATS] [--build DIR] [--port P]
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

import benchlib

TESTS = "set,get,lpush"


def bench(port, n):
    p = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(n), "-t", TESTS, "-q"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800)
    text = p.stdout.decode(errors="replace").replace("\r", "\n")
    rates = {}
    for m in re.finditer(r"^(\w+): ([\d.]+) requests per second", text, re.M):
        rates[m.group(1)] = float(m.group(2))
    return rates


def cli(port, *words):
    p = subprocess.run(["redis-cli", "-p", str(port)] + list(words), stdout=subprocess.PIPE,
                       timeout=60)
    return p.stdout.decode().strip()


def answers_right(port, tag):
    value = f"v-{tag}-{time.monotonic_ns()}"
    if cli(port, "SET", "bench:check", value) != "OK":
        return "SET did not answer OK"
    got = cli(port, "GET", "bench:check")
    if got != value:
        return f"GET answered {got!r}, not {value!r}"
    if cli(port, "PING") != "PONG":
        return "PING did not answer PONG"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "requests per command (default 200000)", n_default=200000, cc=False)
    ap.add_argument("--port", type=int, default=16379)
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (Debian packages redis-server, redis-tools)")
    with benchlib.scratch_dir(args.keep) as tmp:
        server = subprocess.Popen(["redis-server", "--port", str(args.port), "--save", "",
                                   "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if cli(args.port, "PING") == "PONG":
                    break
                time.sleep(0.1)
            return run_all(args, server.pid, tmp)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)


def run_all(args, pid, tmp):
    print(f"functracer: {args.functracer}\nredis-server pid {pid}, redis-benchmark -n {args.n} "
          f"-t {TESTS} -q, best of {args.repeats}\n")
    outdir = os.path.join(tmp, "traces")
    runs = [("untraced", None), ("memtrace -p", "1"), ("stops -p", "0")]
    best = {}
    notes = []
    failed = False
    for name, fast in runs:
        for _ in range(args.repeats):
            tracer = None
            if fast is not None:
                shutil.rmtree(outdir, ignore_errors=True)
                tracer = subprocess.Popen(["env", f"FT_FAST_PATH={fast}", args.functracer, "-q", "-p",
                                           str(pid), "-e", "memtrace", "-b", "8", "-o", outdir,
                                           "--stats"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                time.sleep(1.0)  # attached (a short wait for the patching)
            rates = bench(args.port, args.n)
            if tracer:
                tracer.send_signal(signal.SIGINT)
                _, err = tracer.communicate(timeout=600)
                err = err.decode(errors="replace")
                lost = re.search(r"(\d+) lost", err)
                files = glob.glob(os.path.join(outdir, "*.trace*"))
                c = benchlib.count_records(files[0]) if files else {}
                if tracer.returncode != 0 or (lost and int(lost.group(1))):
                    print(f"{name}: ERROR functracer status {tracer.returncode}: {err[-500:]}")
                    failed = True
                notes.append(f"{name}: {c.get('alloc', 0)} alloc, {c.get('free', 0)} free, "
                             f"{c.get('realloc', 0)} realloc records; "
                             f"{benchlib.stats_line(err, ('stops',))}")
            problem = answers_right(args.port, name)
            if problem:
                print(f"{name}: ERROR after detach: {problem}")
                failed = True
            for k, v in rates.items():
                best.setdefault(name, {})
                best[name][k] = max(best[name].get(k, 0), v)
    cmds = sorted({k for r in best.values() for k in r})
    table = benchlib.Table([("run", 14)] + [(f"{c} req/s", 16) for c in cmds]
                           + [(f"{c} kept", 12) for c in cmds])
    table.header()
    base = best.get("untraced", {})
    for name, _ in runs:
        r = best.get(name, {})
        table.row(name, *[f"{r.get(c, 0):,.0f}" for c in cmds],
                  *[f"{100 * r.get(c, 0) / base[c]:.1f} %" if base.get(c) else "-" for c in cmds])
    print()
    for line in notes:
        print(line)
    print("answers after each detach: " + ("WRONG" if failed else "right (SET/GET/PING)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""PostgreSQL under pgbench, attached with functracer's memtrace and with heaptrack.

Starts a PostgreSQL cluster in a scratch directory (as user nobody when run as root:
PostgreSQL refuses root), on a unix socket only (listen_addresses '', shared_buffers
16MB, fsync off), loads `pgbench -i -s SCALE`, then for each run a bounded
`pgbench -n -c C -j 2 -T S` (TPC-B-like), its connections opened after the tool has
attached:

  untraced       the server alone
  memtrace -f    functracer -p POSTMASTER -e memtrace -f -b 8 -o DIR --stats: the
                 postmaster and every process it forks while attached, so pgbench's
                 C backends, each with its own trace; detached by SIGINT after pgbench
  memtrace       the same without -f: the postmaster alone; the backends it forks
                 run untraced (functracer takes its patches out of each child)
  heaptrack -p   heaptrack -o FILE -p POSTMASTER: gdb injects heaptrack's library
                 into the postmaster alone; heaptrack does not follow forks, so at
                 most the postmaster is recorded and the backends, where the work
                 is, are not; stopped by SIGINT (gdb calls heaptrack_stop). Where
                 gdb cannot inject (it says so) and the server goes down, the run
                 is reported, the server started again, and heaptrack not run again

The runs take turns (one of each, R times), and the best tps of each is kept.
It prints pgbench's tps (without the connection time), the share of the untraced tps
kept, the heap events recorded (functracer: alloc, free, bad_free, alloc_failed
records of all traces; heaptrack: heaptrack_print's "calls to allocation functions",
allocations only) and per second, and
functracer's ptrace stops per heap event (the --stats line's stops over the heap
records). Checked: pgbench reports no failed transaction, functracer exits 0 and
loses no record to full buffers, and after each run the server answers (psql).

usage: postgres_attach.py [-T S] [-c C] [-r R] [--scale N] [--connect] [--without RUN]
                          [--build DIR]
"""

import argparse
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import benchlib

PORT = 5432
USER = "nobody"
SERVER_OPTIONS = ("-c listen_addresses= -c shared_buffers=16MB -c fsync=off "
                  "-c max_connections=60")
HEAP_RECORDS = ("alloc", "free", "bad_free", "alloc_failed")


def pg_bindir():
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        v = os.path.basename(os.path.dirname(d))
        if all(os.access(os.path.join(d, t), os.X_OK) for t in ("initdb", "pg_ctl", "pgbench", "psql")):
            found.append((int(v) if v.isdigit() else 0, d))
    return max(found)[1] if found else None


class Server:
    def __init__(self, bindir, tmp):
        self.bin = bindir
        self.tmp = tmp
        self.data = os.path.join(tmp, "data")
        self.log = os.path.join(tmp, "server.log")
        self.user = USER if os.geteuid() == 0 else None
        self.env = dict(os.environ, PGHOST=tmp, PGPORT=str(PORT), PGUSER="postgres",
                        PGDATABASE="postgres")
        self.pid = None

    def cmd(self, tool, *args, as_user=False):
        c = [os.path.join(self.bin, tool)] + list(args)
        return (["runuser", "-u", self.user, "--"] + c) if as_user and self.user else c

    def run(self, cmd, timeout=600):
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, cwd=self.tmp, env=self.env,
                              timeout=timeout)

    def start(self, scale):
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
        os.chmod(self.tmp, 0o755)
        c = self.cmd("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "--no-sync",
                     "-E", "UTF8", "--locale=C", as_user=True)
        p = self.run(c)
        if p.returncode != 0:
            sys.exit(f"{' '.join(c)} failed:\n{p.stdout.decode(errors='replace')[-2000:]}")
        self.start_server()
        p = self.run(self.cmd("pgbench", "-i", "-q", "-s", str(scale)))
        if p.returncode != 0:
            sys.exit(f"pgbench -i failed:\n{p.stdout.decode(errors='replace')[-2000:]}")

    def start_server(self):
        c = self.cmd("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o",
                     f"-k {self.tmp} -p {PORT} {SERVER_OPTIONS}", "start", as_user=True)
        p = self.run(c)
        if p.returncode != 0:
            sys.exit(f"{' '.join(c)} failed:\n{p.stdout.decode(errors='replace')[-2000:]}")
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def log_tail(self, n=2):
        try:
            with open(self.log, errors="replace") as f:
                return [ln.strip() for ln in f][-n:]
        except OSError:
            return []

    def stop(self):
        if self.pid is None:
            return
        self.run(self.cmd("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", as_user=True))
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def answers(self):
        p = self.run(self.cmd("psql", "-XAtq", "-c", "select 6 * 7"), timeout=60)
        return p.returncode == 0 and p.stdout.decode().strip() == "42"

    def log_problems(self):
        try:
            with open(self.log, errors="replace") as f:
                return [ln for ln in f if "terminated by signal" in ln or "PANIC" in ln]
        except OSError:
            return []


class Attached:
    """A tool attached to the postmaster, its output read as it comes; ready when a
    line holding `ready` has been seen."""

    def __init__(self, cmd, ready, stream):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE if stream == "stderr" else subprocess.STDOUT)
        self.text = ""
        self.ready = threading.Event()
        src = self.proc.stdout if stream == "stdout" else self.proc.stderr
        self.reader = threading.Thread(target=self._read, args=(src, ready), daemon=True)
        self.reader.start()

    def _read(self, src, ready):
        for line in src:
            line = line.decode(errors="replace")
            self.text += line
            if ready in line:
                self.ready.set()

    def wait_ready(self, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if self.ready.wait(0.05):
                return True
        return self.ready.is_set()

    def stop(self, timeout=600):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=30)
        return self.proc.returncode


def injection_failed(text):
    """What heaptrack's gdb said when it could not inject heaptrack's library, or None."""
    said = [ln.strip() for ln in text.splitlines()
            if "Couldn't write" in ln or 'No symbol "heaptrack_inject"' in ln]
    return "gdb: " + " / ".join(said) if said else None


def pgbench(server, args):
    p = server.run(server.cmd("pgbench", *args), timeout=3600)
    out = p.stdout.decode(errors="replace")
    # -C: "(including reconnection times)", a connection being part of each transaction.
    tps = re.search(r"tps = ([\d.]+) \((?:without initial connection time|including "
                    r"reconnection times)\)", out)
    failed = re.search(r"number of failed transactions: (\d+)", out)
    done = re.search(r"number of transactions actually processed: (\d+)", out)
    problem = None
    if p.returncode != 0 or not tps or not done:
        problem = f"pgbench ended with status {p.returncode}: {out[-800:]}"
    elif failed and int(failed.group(1)):
        problem = f"pgbench: {failed.group(1)} failed transactions"
    return (float(tps.group(1)) if tps else None), (int(done.group(1)) if done else 0), problem


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, None, n=False, cc=False)
    ap.add_argument("-T", "--seconds", type=int, default=10, help="pgbench -T (default 10)")
    ap.add_argument("-c", "--clients", type=int, default=4, help="pgbench -c (default 4)")
    ap.add_argument("--scale", type=int, default=1, help="pgbench -i -s (default 1)")
    ap.add_argument("--connect", action="store_true",
                    help="pgbench -C: a new connection (a backend forked) per transaction")
    ap.add_argument("--without", action="append", default=[], metavar="RUN",
                    help="leave a run out: memtrace-f, memtrace, heaptrack (repeatable)")
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    bindir = pg_bindir()
    if not bindir:
        sys.exit("PostgreSQL not found: no /usr/lib/postgresql/NN/bin with initdb, pg_ctl, "
                 "pgbench, psql (Debian packages postgresql, postgresql-contrib)")
    if os.geteuid() == 0 and not shutil.which("runuser"):
        sys.exit("running as root: runuser (util-linux) is needed to run the server as nobody")
    # SIGTERM (and SIGINT) end the run through the finally below: the server is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with benchlib.scratch_dir(args.keep) as tmp:
        server = Server(bindir, tmp)
        try:
            server.start(args.scale)
            return run_all(args, server, tmp)
        finally:
            server.stop()


def run_all(args, server, tmp):
    version = server.run(server.cmd("postgres", "--version")).stdout.decode().strip()
    bench_args = ["-n", "-c", str(args.clients), "-j", "2", "-T", str(args.seconds)]
    if args.connect:
        bench_args.insert(1, "-C")
    print(f"functracer: {args.functracer}\n{version}, postmaster pid {server.pid}, "
          f"pgbench {' '.join(bench_args)} (scale {args.scale}), best of {args.repeats}\n")
    outdir = os.path.join(tmp, "traces")
    ht_data = os.path.join(tmp, "heaptrack")

    def memtrace(follow):
        return lambda: Attached([args.functracer, "-p", str(server.pid), "-e", "memtrace"]
                                + (["-f"] if follow else []) + ["-b", "8", "-o", outdir, "--stats"],
                                f"attached to process {server.pid} ", "stderr")

    runs = [("untraced", None), ("memtrace -f", memtrace(True)), ("memtrace", memtrace(False))]
    if shutil.which("heaptrack"):
        runs.append(("heaptrack -p", lambda: Attached(
            ["heaptrack", "-o", ht_data, "-p", str(server.pid)], "injection finished", "stdout")))
    else:
        benchlib.skipped("heaptrack -p", "not installed (Debian packages heaptrack, gdb)")
    runs = [r for r in runs if r[0].replace(" -p", "").replace(" -", "-") not in args.without]

    results = {name: [] for name, _ in runs}   # (tps, transactions, heap events, stops)
    failed = False
    broke = set()
    errors = {}
    for rnd in range(args.repeats):
        for name, start in runs:
            if name in broke:
                continue
            shutil.rmtree(outdir, ignore_errors=True)
            for f in glob.glob(ht_data + "*"):
                os.remove(f)
            tool = start() if start else None
            if tool and not tool.wait_ready():
                tool.stop()
                print(f"{name}: ERROR the tool did not attach: {tool.text[-800:]}")
                failed = True
                continue
            tps, done, problem = pgbench(server, bench_args)
            events = stops = None
            if tool:
                rc = tool.stop()
                if name.startswith("memtrace"):
                    lost = re.search(r"(\d+) lost", tool.text)
                    if rc != 0 or (lost and int(lost.group(1))):
                        problem = problem or f"functracer status {rc}: {tool.text[-800:]}"
                    events = 0
                    for f in glob.glob(os.path.join(outdir, "*.trace*")):
                        c = benchlib.count_records(f)
                        events += sum(c.get(k, 0) for k in HEAP_RECORDS)
                    stops = benchlib.stats_stops(tool.text)
                    if rnd == 0:
                        procs = re.search(r"(\d+) process(?:es)? traced", tool.text)
                        print(f"{name}: {procs.group(0) if procs else '?'}; "
                              f"{benchlib.stats_line(tool.text)}")
                else:
                    files = glob.glob(ht_data + "*")
                    if files:
                        p, _ = benchlib.run(["heaptrack_print", files[0]])
                        m = re.search(r"calls to allocation functions: (\d+)", p.stdout.decode())
                        events = int(m.group(1)) if m else None
                    if events is None:
                        problem = problem or f"heaptrack wrote nothing readable: {tool.text[-800:]}"
            if not server.alive():
                # Nothing to measure the next runs on: the server is started again, and
                # the tool that took it down is not run again.
                problem = (f"the postmaster {server.pid} is gone; its log ends: "
                           f"{server.log_tail()}" + (f"; {injection_failed(tool.text)}"
                                                       if tool and injection_failed(tool.text) else ""))
                broke.add(name)
                server.start_server()
                print(f"(server started again: postmaster pid {server.pid})")
            elif not server.answers():
                problem = problem or "the server does not answer after the run"
            if problem:
                print(f"{name}: ERROR {problem}")
                # A peer that breaks the server is a result; functracer that does, a failure.
                failed = failed or not name.startswith("heaptrack")
                errors.setdefault(name, problem)
                continue
            results[name].append((tps, done, events, stops))
            print(f"  round {rnd + 1} {name}: {tps:,.0f} tps, {done} transactions"
                  + (f", {events} heap events" if events is not None else "")
                  + (f", {stops} stops" if stops is not None else ""), flush=True)

    print()
    table = benchlib.Table([("run", 14), ("tps (best)", 12), ("tps range", 18), ("kept", 9),
                            ("heap events", 13), ("events/s", 11), ("stops/event", 13)])
    table.header()
    base = max((r[0] for r in results.get("untraced", [])), default=None)
    for name, _ in runs:
        rs = results[name]
        if not rs:
            table.error(name, "no successful run" + (": the server went down" if name in broke else ""))
            continue
        best = max(rs, key=lambda r: r[0])
        tps = [r[0] for r in rs]
        ev = best[2]
        table.row(name, f"{best[0]:,.0f}", f"{min(tps):,.0f}-{max(tps):,.0f}",
                  f"{100 * best[0] / base:.1f} %" if base else "-",
                  f"{ev:,}" if ev is not None else "-",
                  f"{ev / args.seconds:,.0f}" if ev is not None else "-",
                  f"{best[3] / ev:.4f}" if best[3] is not None and ev else "-")
    problems = server.log_problems()
    if problems:
        print(f"server log: {problems[:5]}")
        failed = True
    print("\n(heap events: functracer's alloc, free, bad_free and alloc_failed records over "
          "all its traces; heaptrack's calls to allocation functions in the postmaster, the "
          "only process it traces)")
    for name, problem in errors.items():
        print(f"{name}: {problem[:600]}")
    print("checks: " + ("FAILED" if failed else "no failed transaction, functracer exit 0 "
                        "and nothing lost, the server answered after every functracer run"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

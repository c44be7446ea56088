#!/usr/bin/env python3
"""nginx under ab, its master attached with functracer's memtrace (-f).

Starts nginx (Debian package nginx) in the foreground from a scratch directory: two
worker processes, a loopback port, access log off, one static 4 KiB page. For each
run the master is (or is not) attached, then reloaded (SIGHUP: it forks two new
workers and the old ones leave), so the workers serving the load are forked while the
tool is attached, then a bounded `ab -n N -c C` (apache2-utils; a connection per
request) fetches the page:

  untraced       nginx alone (reloaded the same way)
  memtrace -f    functracer -p MASTER -e memtrace -f -b 8 -o DIR --stats: the master
                 and the workers it forks while attached, each with its own trace;
                 detached by SIGINT after ab
  memtrace       the same without -f: the master alone; the workers run untraced

The runs take turns (one of each, R times), the best requests per second of each is
kept. It prints ab's requests per second, the share of the untraced rate kept, the
heap events recorded (alloc, free, bad_free and alloc_failed records of all traces)
and functracer's ptrace stops per heap event. Checked: ab reports no failed request
and no non-2xx response, functracer exits 0 and loses no record to full buffers, and
after each run nginx serves the page whole.

heaptrack -p is not run: it attaches to one process and does not follow forks, and
the master, which forks the workers, makes no heap events under load.

usage: nginx_attach.py [-n N] [-c C] [-r R] [--port P] [--build DIR]
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import benchlib

HEAP_RECORDS = ("alloc", "free", "bad_free", "alloc_failed")
WORKERS = 2
PAGE = b"functracer nginx benchmark\n" * 157  # 4,239 bytes

CONF = """worker_processes {workers};
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {tmp}/html;
    }}
}}
"""


def children(pid):
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == str(pid) and fields[0] != "Z":
                found.add(int(entry))
    return found


def reload(master, timeout=30):
    """SIGHUP: new workers forked, the old ones gone. True when done in time."""
    old = children(master)
    os.kill(master, signal.SIGHUP)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        now = children(master)
        if len(now) == WORKERS and not (now & old):
            return True
        time.sleep(0.05)
    return False


def serves(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=30) as r:
            return r.status == 200 and r.read() == PAGE
    except OSError:
        return False


def ab(port, n, c):
    p = subprocess.run(["ab", "-q", "-n", str(n), "-c", str(c), f"http://127.0.0.1:{port}/index.html"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=3600)
    out = p.stdout.decode(errors="replace")
    rate = re.search(r"Requests per second:\s+([\d.]+)", out)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    problem = None
    if p.returncode != 0 or not rate:
        problem = f"ab ended with status {p.returncode}: {out[-800:]}"
    elif failed and int(failed.group(1)) or non2xx:
        problem = f"ab: {failed.group(1) if failed else 0} failed requests, " \
                  f"{non2xx.group(1) if non2xx else 0} non-2xx responses"
    return (float(rate.group(1)) if rate else None), problem


class Tracer:
    def __init__(self, cmd, master):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.text = ""
        self.ready = threading.Event()
        want = f"attached to process {master} "
        self.reader = threading.Thread(target=self._read, args=(want,), daemon=True)
        self.reader.start()

    def _read(self, want):
        for line in self.proc.stderr:
            line = line.decode(errors="replace")
            self.text += line
            if want in line:
                self.ready.set()

    def wait_ready(self, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if self.ready.wait(0.05):
                return True
        return self.ready.is_set()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=30)
        return self.proc.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_common_args(ap, "requests per run (default 20000)", n_default=20000, cc=False)
    ap.add_argument("-c", "--concurrency", type=int, default=8, help="ab -c (default 8)")
    ap.add_argument("--port", type=int, default=18080)
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    benchlib.require_functracer(args)
    for tool, package in (("nginx", "nginx"), ("ab", "apache2-utils")):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (Debian package {package})")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with benchlib.scratch_dir(args.keep) as tmp:
        os.chmod(tmp, 0o755)  # the workers run as nobody when started as root
        os.makedirs(os.path.join(tmp, "html"))
        with open(os.path.join(tmp, "html", "index.html"), "wb") as f:
            f.write(PAGE)
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(workers=WORKERS, tmp=tmp, port=args.port))
        server = subprocess.Popen(["nginx", "-p", tmp, "-c", conf, "-g", "daemon off;"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if serves(args.port):
                    break
                time.sleep(0.1)
            else:
                sys.exit(f"nginx does not serve on port {args.port}")
            return run_all(args, server.pid, tmp)
        finally:
            server.send_signal(signal.SIGQUIT)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def run_all(args, master, tmp):
    version = subprocess.run(["nginx", "-v"], stderr=subprocess.PIPE).stderr.decode().strip()
    print(f"functracer: {args.functracer}\n{version}, master pid {master}, {WORKERS} workers, "
          f"ab -n {args.n} -c {args.concurrency} (a connection per request), best of {args.repeats}\n")
    outdir = os.path.join(tmp, "traces")

    def memtrace(follow):
        return lambda: Tracer([args.functracer, "-p", str(master), "-e", "memtrace"]
                              + (["-f"] if follow else []) + ["-b", "8", "-o", outdir, "--stats"],
                              master)

    runs = [("untraced", None), ("memtrace -f", memtrace(True)), ("memtrace", memtrace(False))]
    results = {name: [] for name, _ in runs}
    failed = False
    for rnd in range(args.repeats):
        for name, start in runs:
            shutil.rmtree(outdir, ignore_errors=True)
            tool = start() if start else None
            if tool and not tool.wait_ready():
                tool.stop()
                print(f"{name}: ERROR functracer did not attach: {tool.text[-800:]}")
                failed = True
                continue
            problem = None if reload(master) else "nginx did not replace its workers after SIGHUP"
            rate, ab_problem = ab(args.port, args.n, args.concurrency)
            problem = problem or ab_problem
            events = stops = None
            if tool:
                rc = tool.stop()
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
                    print(f"{name}: {procs.group(0) if procs else '?'}; {benchlib.stats_line(tool.text)}")
            if not serves(args.port):
                problem = problem or "nginx does not serve the page after the run"
            if problem:
                print(f"{name}: ERROR {problem}")
                failed = True
                continue
            results[name].append((rate, events, stops))
            print(f"  round {rnd + 1} {name}: {rate:,.0f} requests/s"
                  + (f", {events} heap events, {stops} stops" if events is not None else ""), flush=True)
    print()
    table = benchlib.Table([("run", 14), ("req/s (best)", 14), ("req/s range", 18), ("kept", 9),
                            ("heap events", 13), ("per request", 13), ("stops/event", 13)])
    table.header()
    base = max((r[0] for r in results["untraced"]), default=None)
    for name, _ in runs:
        rs = results[name]
        if not rs:
            table.error(name, "no successful run")
            continue
        best = max(rs, key=lambda r: r[0])
        ev = best[1]
        table.row(name, f"{best[0]:,.0f}", f"{min(r[0] for r in rs):,.0f}-{max(r[0] for r in rs):,.0f}",
                  f"{100 * best[0] / base:.1f} %" if base else "-",
                  f"{ev:,}" if ev is not None else "-",
                  f"{ev / args.n:.1f}" if ev is not None else "-",
                  f"{best[2] / ev:.4f}" if best[2] is not None and ev else "-")
    print("checks: " + ("FAILED" if failed else "no failed request, functracer exit 0 and nothing "
                        "lost, nginx served the page after every run"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

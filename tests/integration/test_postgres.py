#!/usr/bin/env python3
"""PostgreSQL under pgbench, attached with `functracer -e memtrace -f -p POSTMASTER`:
detached cleanly once, then SIGKILLed at random moments; the server serves every
transaction throughout and keeps its data consistent.

usage: test_postgres.py

PostgreSQL comes from the Debian packages postgresql and postgresql-contrib (the
newest /usr/lib/postgresql/NN/bin with initdb, pg_ctl, postgres, pgbench, psql); the
test says SKIP and why when they are missing. The server runs as user nobody when
the test runs as root (runuser; PostgreSQL refuses to run as root), from a scratch
data directory, on a unix socket in the scratch directory only (listen_addresses '',
shared_buffers 16MB, fsync off), `pgbench -i -s 1` loaded.

With -f, functracer traces the postmaster and the processes it forks while attached:
the backends of connections opened then. So each round attaches first and opens
pgbench's connections after (`pgbench -n -c 4 -j 2 -T S`: four backends forked under
tracing, each with its own trace; -n: no vacuum, pgbench_history is never truncated).

  * clean round: attached, pgbench started, detached with SIGINT while pgbench runs:
    functracer exits 0, its traces (the postmaster's and at least the four backends')
    are read by `functracer-postproc leaks DIR` (exit 0), memtrace warns of no free of
    a block "never allocated" (a backend inherits the postmaster's heap), the
    postmaster's /proc/PID/maps has no /memfd:functracer left (neither has any other
    process of the server), pgbench ends with its transactions processed and none
    failed;
  * kill rounds (FT_PG_KILLS, default 4, 8 under FT_FULL=1): functracer attached again
    and SIGKILLed at a random moment (seeded, the seed printed; FT_SEED=N repeats a
    run): in a quarter of the rounds 0-0.3 s after its start, mostly while it attaches,
    with pgbench started beside it; otherwise 0-2 s after pgbench's backends were
    forked under tracing. pgbench goes on
    to its end (at least 1 s after the kill) with no failed transaction, no process of
    the server is left stopped, the postmaster is the same process, and new
    connections work (`pgbench -n -C -c 2 -j 2 -t 10`: twenty backends forked after the
    kill, from a postmaster the killed functracer had patched; and a psql query);

after every round the server log has no "terminated by signal" (a backend dying by a
signal, as SIGTRAP at a breakpoint left behind did), no PANIC, no crash restart. At
the end the tables are consistent: sum(abalance) of pgbench_accounts = sum(bbalance)
of pgbench_branches = sum(tbalance) of pgbench_tellers = sum(delta) of
pgbench_history, and pgbench_history holds one row per transaction pgbench counted as
processed. The server is stopped (`pg_ctl stop -m fast`) on every path.
"""

import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

NAME = "postgres"
PACKAGES = "postgresql, postgresql-contrib"
PG_TOOLS = ("initdb", "pg_ctl", "postgres", "pgbench", "psql")
PORT = 5432          # only a socket file in the scratch directory: no clash
USER = "nobody"      # the server's user when the test runs as root
SERVER_OPTIONS = ("-c listen_addresses= -c shared_buffers=16MB -c fsync=off "
                  "-c max_connections=40 -c log_min_messages=warning")
DEFAULT_KILLS = 8 if h.FULL else 4
CLEAN_SECONDS = 4    # pgbench -T of the clean round; detached 2 s after its start
CLEAN_DETACH = 2.0
KILL_SECONDS = 3     # pgbench -T of a kill round
KILL_MAX = 2.0       # the kill: 0-2 s after pgbench's start (at least 1 s before its end)
EARLY_SHARE = 0.25   # rounds killed while functracer attaches
EARLY_MAX = 0.3    # attaching to the postmaster takes a few tenths of a second
ATTACH_TIMEOUT = 60
DETACH_TIMEOUT = 60
PGBENCH_TIMEOUT = 120
MIN_BACKEND_TRACES = 4
LOG_BAD = ("terminated by signal", "PANIC", "terminating any other active server processes",
           "all server processes terminated; reinitializing")


def pg_bindir():
    """The newest /usr/lib/postgresql/NN/bin that has every tool, or None."""
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        version = os.path.basename(os.path.dirname(d))
        if all(os.access(os.path.join(d, t), os.X_OK) for t in PG_TOOLS):
            found.append((int(version) if version.isdigit() else 0, d))
    return max(found)[1] if found else None



class Server:
    """A PostgreSQL cluster in a scratch directory, run as `user` (None: as the test)."""

    def __init__(self, bindir, tmp, user):
        self.bin = bindir
        self.tmp = tmp
        self.user = user
        self.data = os.path.join(tmp, "data")
        self.log = os.path.join(tmp, "server.log")
        self.log_seen = 0
        self.env = dict(os.environ, PGHOST=tmp, PGPORT=str(PORT), PGUSER="postgres",
                        PGDATABASE="postgres")
        self.pid = None

    def tool(self, name):
        return os.path.join(self.bin, name)

    def as_user(self, cmd):
        return (["runuser", "-u", self.user, "--"] if self.user else []) + cmd

    def run(self, cmd, timeout=h.UNTRACED_TIMEOUT):
        return h.run(cmd, timeout=timeout, cwd=self.tmp, env=self.env)

    def init_and_start(self, ck):
        r = self.run(self.as_user([self.tool("initdb"), "-D", self.data, "-U", "postgres",
                                   "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"]))
        if not ck.check(r.status == 0, f"initdb failed\n{r.describe()}"):
            return False
        r = self.run(self.as_user([self.tool("pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                                   "-t", "60", "-o", f"-k {self.tmp} -p {PORT} {SERVER_OPTIONS}",
                                   "start"]))
        if not ck.check(r.status == 0, f"pg_ctl start failed\n{r.describe()}\n"
                        f"server log: {self.read_log()[-2000:]}"):
            return False
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        r = self.run([self.tool("pgbench"), "-i", "-s", "1", "-q"])
        return ck.check(r.status == 0, f"pgbench -i failed\n{r.describe()}")

    def stop(self, ck):
        if self.pid is None:
            return
        r = self.run(self.as_user([self.tool("pg_ctl"), "-D", self.data, "-m", "fast", "-w",
                                   "-t", "60", "stop"]))
        ck.check(r.status == 0, f"pg_ctl stop -m fast failed\n{r.describe()}")
        if alive(self.pid):
            # Whatever happened, no server is left behind: its backends end with it.
            os.kill(self.pid, signal.SIGKILL)
            ck.fail(f"the postmaster {self.pid} was still running after pg_ctl stop: killed")
        self.pid = None

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def new_log_problems(self):
        """Lines of the server log since the last call that say a process of the server
        died or the server restarted."""
        text = self.read_log()
        fresh, self.log_seen = text[self.log_seen:], len(text)
        return [ln for ln in fresh.splitlines() if any(b in ln for b in LOG_BAD)]

    def processes(self):
        """{pid: (state, command line)} of the postmaster and its children."""
        found = {}
        for pid, fields in h.proc_stats():
            if pid == self.pid or (len(fields) > 1 and fields[1] == str(self.pid)):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                except OSError:
                    continue
                found[pid] = (fields[0], cmdline)
        return found

    def pgbench(self, args):
        return subprocess.Popen([self.tool("pgbench")] + args, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, cwd=self.tmp, env=self.env,
                                preexec_fn=h._child_setup)

    def psql(self, sql):
        return self.run([self.tool("psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                         "-c", sql])


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False



class Bench:
    """A pgbench run: its output, counted at the end."""

    def __init__(self, server, args, label):
        self.args = args
        self.label = label
        self.proc = server.pgbench(args)
        self.started = time.monotonic()
        self.output = ""

    def finish(self, ck, context=""):
        """Waits for pgbench; checks it ended well. Returns the transactions processed
        (None after a failure)."""
        try:
            out, _ = self.proc.communicate(timeout=PGBENCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            ck.fail(f"{self.label}: pgbench {' '.join(self.args)} did not end within "
                    f"{PGBENCH_TIMEOUT} s\n{context}")
            return None
        self.output = out.decode(errors="replace")
        processed = re.search(r"number of transactions actually processed: (\d+)", self.output)
        failed = re.search(r"number of failed transactions: (\d+)", self.output)
        what = (f"{self.label}: pgbench {' '.join(self.args)} ended with "
                f"{h.status_text(self.proc.returncode)}")
        detail = f"{context}\npgbench output: {self.output[-1500:]}"
        if not ck.check(self.proc.returncode == 0 and processed, f"{what}\n{detail}"):
            return None
        if failed is None:
            ck.note(f"{self.label}: this pgbench does not count failed transactions "
                    "(before PostgreSQL 15): its exit status 0 says none aborted")
        elif not ck.check_eq(int(failed.group(1)), 0, f"{self.label}: failed transactions\n{detail}"):
            return None
        n = int(processed.group(1))
        ck.check(n > 0, f"{self.label}: pgbench processed no transaction\n{detail}")
        return n


class Tracer:
    """functracer attached to the postmaster; its stderr read as it comes, so that
    "attached to process PID" is seen without waiting for the trace files."""

    def __init__(self, server, outdir):
        self.cmd = [h.functracer(), "-e", "memtrace", "-f", "-o", outdir, "-p", server.pid]
        self.pid = server.pid
        self.proc = subprocess.Popen([str(c) for c in self.cmd], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=h._child_setup)
        self.err = b""
        self.attached = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        want = f"attached to process {self.pid} ".encode()
        for line in self.proc.stderr:
            self.err += line
            if want in line:
                self.attached.set()

    def wait_attached(self):
        end = time.monotonic() + ATTACH_TIMEOUT
        while time.monotonic() < end and self.proc.poll() is None:
            if self.attached.wait(0.05):
                return True
        return self.attached.is_set()

    def wait(self, timeout):
        """The exit status, or None when still running after timeout."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.reader.join(timeout=10)
        return self.proc.returncode

    def stderr(self):
        return self.err.decode(errors="replace")

    def context(self):
        return f"command: {h.fmt_cmd(self.cmd)}\nfunctracer stderr: {self.stderr()[-2000:]}"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait(30)


def server_fine(ck, server, label, context):
    """The postmaster lives, no process of the server is stopped, the log shows no
    death; then twenty new connections (`pgbench -C`) and a psql query work. Returns
    the transactions the new connections processed (None after a failure)."""
    if not ck.check(alive(server.pid), f"{label}: the postmaster {server.pid} died\n{context}\n"
                    f"server log: {server.read_log()[-2000:]}"):
        return None
    ok = True
    stopped = {p: v for p, v in server.processes().items() if v[0] in "tT"}
    if stopped:
        time.sleep(0.5)  # a stop on its way out of a signal delivery: look again
        stopped = {p: v for p, v in server.processes().items() if v[0] in "tT"}
    ok = ck.check(not stopped, f"{label}: processes of the server left stopped: {stopped}\n"
                  f"{context}") and ok
    fresh = Bench(server, ["-n", "-C", "-c", "2", "-j", "2", "-t", "10"], f"{label}, new connections")
    n = fresh.finish(ck, context)
    r = server.psql("select 6 * 7")
    ok = ck.check(r.status == 0 and r.out.strip() == "42", f"{label}: a new psql connection: "
                  f"{r.describe()}\n{context}") and ok
    problems = server.new_log_problems()
    ok = ck.check(not problems, f"{label}: the server log says: {problems[:5]}\n{context}") and ok
    ok = ck.check(server.pid == current_postmaster(server),
                  f"{label}: postmaster.pid names another postmaster\n{context}") and ok
    return n if ok and n is not None else None


def current_postmaster(server):
    try:
        with open(os.path.join(server.data, "postmaster.pid")) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None


def clean_round(ck, server, tmp, tracers):
    """Attach, pgbench, SIGINT while it runs. Returns the transactions processed, or
    None after a failure."""
    label = "clean round"
    outdir = os.path.join(tmp, "clean")
    tracer = Tracer(server, outdir)
    tracers.append(tracer)
    if not tracer.wait_attached():
        tracer.kill()
        ck.fail(f"{label}: functracer did not attach ({h.status_text(tracer.proc.returncode)})\n"
                f"{tracer.context()}")
        return None
    bench = Bench(server, ["-n", "-c", "4", "-j", "2", "-T", str(CLEAN_SECONDS)], label)
    time.sleep(CLEAN_DETACH)
    traced = len(glob.glob(os.path.join(outdir, "*.trace*")))
    tracer.proc.send_signal(signal.SIGINT)
    rc = tracer.wait(DETACH_TIMEOUT)
    if rc is None:
        tracer.kill()
        ck.fail(f"{label}: functracer did not detach within {DETACH_TIMEOUT} s of SIGINT\n"
                f"{tracer.context()}")
    ck.check(rc == 0, f"{label}: functracer ended with {h.status_text(rc)} after SIGINT\n"
             f"{tracer.context()}")
    err = tracer.stderr()
    summary = [ln for ln in err.splitlines() if "process" in ln and "traced" in ln]
    print(f"{label}: functracer exited {rc} after SIGINT, {traced} trace files when signalled; "
          f"{summary[-1].strip() if summary else err.strip()[-300:]!r}", flush=True)
    never = [ln for ln in err.splitlines() if "never allocated" in ln]
    ck.check(not never, f"{label}: memtrace warned about blocks a backend inherited from the "
             f"postmaster: {never[:3]} ({len(never)} lines)")
    left = h.memfd_mappings(server.pid)
    ck.check(not left, f"{label}: the detach left the recorder's region mapped in the "
             f"postmaster: {left}")
    others = {p: h.memfd_mappings(p) for p in server.processes() if p != server.pid}
    others = {p: m for p, m in others.items() if m}
    ck.check(not others, f"{label}: the detach left the recorder's region mapped in processes "
             f"of the server: {others}")
    n = bench.finish(ck, tracer.context())
    files = [f for f in glob.glob(os.path.join(outdir, "*.trace*"))]
    ck.check(len(files) >= 1 + MIN_BACKEND_TRACES,
             f"{label}: {len(files)} trace files, want the postmaster's and at least "
             f"{MIN_BACKEND_TRACES} backends' (pgbench -c 4 connected while attached): "
             f"{sorted(os.path.basename(f) for f in files)}")
    r = h.run_postproc(["leaks", outdir])
    ck.check(r.status == 0, f"{label}: functracer-postproc leaks {outdir}\n{r.describe()}")
    totals = r.out.splitlines()[:1]
    m = re.search(r"\((\d+) groups?, (\d+) process", totals[0]) if totals else None
    if m:
        ck.check_eq(int(m.group(2)), len(files), f"{label}: processes in the leaks report "
                    "against the trace files")
    print(f"{label}: pgbench {n} transactions; {len(files)} traces read by leaks "
          f"(exit {r.status}): {totals[0].strip() if totals else ''!r}", flush=True)
    fresh = server_fine(ck, server, label, tracer.context())
    if n is None or fresh is None:
        return None
    return n + fresh


def kill_round(ck, rng, server, tmp, number, tracers):
    """Attach, pgbench, SIGKILL at a random moment. Returns the transactions processed,
    or None after a failure."""
    label = f"kill {number}"
    outdir = os.path.join(tmp, f"kill-{number}")
    early = rng.random() < EARLY_SHARE
    delay = rng.uniform(0, EARLY_MAX if early else KILL_MAX)
    tracer = Tracer(server, outdir)
    tracers.append(tracer)
    if early:
        bench = Bench(server, ["-n", "-c", "4", "-j", "2", "-T", str(KILL_SECONDS)], label)
        time.sleep(delay)
        when = (f"{delay * 1000:.0f} ms after its start, "
                f"{'after' if tracer.attached.is_set() else 'before'} the attach")
    else:
        if not tracer.wait_attached():
            tracer.kill()
            ck.fail(f"{label}: functracer did not attach ({h.status_text(tracer.proc.returncode)})"
                    f"\n{tracer.context()}")
            return None
        bench = Bench(server, ["-n", "-c", "4", "-j", "2", "-T", str(KILL_SECONDS)], label)
        time.sleep(delay)
        when = f"{delay * 1000:.0f} ms after pgbench's start (attached)"
    ended = tracer.proc.poll()
    tracer.kill()
    context = f"{tracer.context()}\n(SIGKILL {when}; FT_SEED repeats the draw)"
    if ended is not None:
        ck.fail(f"{label}: functracer ended before the kill ({h.status_text(ended)})\n{context}")
    kept = KILL_SECONDS - (time.monotonic() - bench.started)
    n = bench.finish(ck, context)
    fresh = server_fine(ck, server, label, context)
    ok = n is not None and fresh is not None
    print(f"{label}: SIGKILL {when}: pgbench ran on {max(kept, 0):.1f} s: "
          f"{f'{n} transactions, none failed; {fresh} on new connections' if ok else 'FAILED'}",
          flush=True)
    return n + fresh if ok else None


def check_balances(ck, server, processed):
    r = server.psql("select (select sum(abalance) from pgbench_accounts), "
                    "(select sum(bbalance) from pgbench_branches), "
                    "(select sum(tbalance) from pgbench_tellers), "
                    "(select coalesce(sum(delta), 0) from pgbench_history), "
                    "(select count(*) from pgbench_history)")
    if not ck.check(r.status == 0, f"the balance query failed\n{r.describe()}"):
        return
    fields = r.out.strip().split("|")
    if not ck.check(len(fields) == 5, f"the balance query answered {r.out!r}"):
        return
    a, b, t, d, rows = (int(x) for x in fields)
    ck.check(a == b == t == d, f"the balances disagree: accounts {a}, branches {b}, tellers {t}, "
             f"history {d}")
    if processed is not None:
        ck.check_eq(rows, processed, "rows of pgbench_history (one per transaction) against the "
                    "transactions pgbench processed")
    print(f"balances: accounts {a} = branches {b} = tellers {t} = history {d}; "
          f"{rows} history rows, pgbench processed {processed}", flush=True)


def main():
    bindir = pg_bindir()
    if bindir is None:
        h.skip_test(NAME, "PostgreSQL not installed: no /usr/lib/postgresql/NN/bin with "
                    f"{', '.join(PG_TOOLS)} (Debian packages {PACKAGES})")
    user = None
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root.
        if not shutil.which("runuser"):
            h.skip_test(NAME, "running as root, and runuser (util-linux) is missing to run the "
                        f"server as {USER}")
        if h.run(["runuser", "-u", USER, "--", "true"]).status != 0:
            h.skip_test(NAME, f"running as root, and `runuser -u {USER}` does not work here")
        user = USER
    seed = int(os.environ.get("FT_SEED") or random.SystemRandom().randrange(1 << 32))
    kills = int(os.environ.get("FT_PG_KILLS") or DEFAULT_KILLS)
    version = h.run([os.path.join(bindir, "postgres"), "--version"]).out.strip()
    print(f"{version} ({bindir}), server as {user or 'this user'}; seed {seed} "
          f"(FT_SEED={seed} repeats this run), {kills} kill rounds", flush=True)
    rng = random.Random(seed)
    ck = h.Checker(NAME)
    started = time.monotonic()
    tracers = []
    with h.TempDir(prefix="ft-postgres-") as tmp:
        os.chmod(tmp, 0o755)
        if user:
            pw = __import__("pwd").getpwnam(user)
            os.chown(tmp, pw.pw_uid, pw.pw_gid)
        server = Server(bindir, tmp, user)
        try:
            if server.init_and_start(ck):
                server.new_log_problems()
                processed = clean_round(ck, server, tmp, tracers)
                for k in range(1, kills + 1):
                    if not alive(server.pid):
                        break
                    n = kill_round(ck, rng, server, tmp, k, tracers)
                    processed = None if n is None or processed is None else processed + n
                if alive(server.pid):
                    check_balances(ck, server, processed)
        finally:
            for t in tracers:
                t.kill()
            server.stop(ck)
            problems = server.new_log_problems()
            ck.check(not problems, f"the server log says: {problems[:5]}")
    print(f"seed {seed}, {time.monotonic() - started:.1f} s")
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 1:
        sys.stderr.write("usage: test_postgres.py\n")
        sys.exit(2)
    main()

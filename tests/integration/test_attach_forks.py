#!/usr/bin/env python3
"""A forking server attached to (-p, with and without -f), and functracer SIGKILLed at
random moments: every child the server forks, before the kill and after it, runs to
its end and passes its own checks, and so does the server.

usage: test_attach_forks.py ATTACH_TARGET_EXECUTABLE

The target is `attach forker` (tests/progs/attach.c): two threads loop calling
at_level1 -> at_level2 -> at_work (malloc/free inside) while the main thread forks a
child every 20 ms from inside the traced function at_spawn; each child calls
at_level1 20 times, checks the results and exits 0; the server waits for it and
prints "child PID failed: ..." at once for one that does not. At the end of its input
it prints "done forker children=N failed=F"; after each child, "children=N".

What a killed functracer leaves in the server (patched entries, breakpoints, the
recorder's region, return addresses replaced in the forking thread's frames) is what
every later child inherits: a child must run the original code, or a recorder that
works without functracer (core/recorder_abi.h, "what a fork child inherits").

  * kill rounds (FT_FORK_ROUNDS, default 30, 60 under FT_FULL=1), KILLS_PER_TARGET on
    each server: `functracer -q PLUGINS --uncompressed -o DIR -p PID`, the plugins in
    turn memtrace, memtrace -f, calltrace `at_*`, calltrace `at_*` -f, memtrace with
    calltrace `at_*` -f; SIGKILL after a random delay (a share of the rounds 0-50 ms
    after the start, while functracer attaches; otherwise 0-600 ms after the attach).
    SETTLE s after the kill the server is alive, has forked at least MIN_FORKS more
    children, and none has failed;
  * after its kill rounds, each server is attached once more with memtrace -f and
    detached with SIGINT: memtrace does not call the children's frees of blocks the
    server allocated before the attach "never allocated" (they are the server's
    history, inherited at the fork); the detach leaves no recorder region of its own mapped in
    it (/proc/PID/maps has no /memfd:functracer but the killed sessions', which the
    return addresses they replaced may still need); then its input is closed: it prints
    its done line with failed=0 and exits 0.
"""

import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

KILLS_PER_TARGET = 6
DEFAULT_ROUNDS = 60 if h.FULL else 30
PLUGIN_SETS = (
    ("memtrace", ["-e", "memtrace"]),
    ("memtrace -f", ["-e", "memtrace", "-f"]),
    ("calltrace at_*", ["-e", "calltrace", "-a", "at_*"]),
    ("calltrace at_* -f", ["-e", "calltrace", "-a", "at_*", "-f"]),
    ("memtrace+calltrace at_* -f", ["-e", "memtrace", "-e", "calltrace", "-a", "at_*", "-f"]),
)
EARLY_SHARE = 0.2
EARLY_MAX = 0.05
LATE_MAX = 0.6
SETTLE = 0.35       # after the kill: some 10 children are forked meanwhile
MIN_FORKS = 3
ATTACH_TIMEOUT = 30
END_TIMEOUT = 60



class Log:
    """The server's stdout, read between rounds without waiting."""

    def __init__(self, proc):
        self.proc = proc
        self.text = ""
        os.set_blocking(proc.stdout.fileno(), False)

    def read(self):
        try:
            chunk = self.proc.stdout.read()
        except (BlockingIOError, ValueError):
            chunk = None
        if chunk:
            self.text += chunk.decode(errors="replace")
        return self.text

    def failures(self):
        return [ln for ln in self.read().splitlines() if " failed: " in ln]

    def children(self):
        counts = [int(ln.split("=", 1)[1]) for ln in self.read().splitlines() if ln.startswith("children=")]
        return counts[-1] if counts else 0


def start_target(ck, binary, label):
    target = h.popen([binary, "forker"], stdin=subprocess.PIPE)
    line = target.stdout.readline().decode(errors="replace").strip()
    if ck.check(line == "ready", f"{label}: the server did not start: {line!r}"):
        return target, Log(target)
    h.kill_all(target)
    return None, None


def wait_attached(tracer, outdir):
    end = time.monotonic() + ATTACH_TIMEOUT
    while tracer.poll() is None and time.monotonic() < end:
        if h.wait_attached(outdir, timeout=0.2):
            return True
    return False


def server_fine(ck, label, target, log, before, context):
    """The server lives, forked more children since `before`, and none failed."""
    if target.poll() is not None:
        ck.fail(f"{label}: the server died ({h.status_text(target.returncode)})\n{context}\n"
                f"its output: {log.read()[-1500:]!r}")
        return False
    failures = log.failures()
    ok = ck.check(not failures, f"{label}: children failed: {failures[:5]} ({len(failures)} in all)\n{context}")
    after = log.children()
    ok = ck.check(after - before >= MIN_FORKS,
                  f"{label}: the server forked {after - before} children in {SETTLE} s after the "
                  f"kill, want at least {MIN_FORKS}\n{context}") and ok
    return ok


def kill_round(ck, rng, target, log, tmp, label, plugins, tracers):
    name, args = plugins
    outdir = os.path.join(tmp, label.replace(" ", "-"))
    cmd = [h.functracer(), "-q"] + args + ["--uncompressed", "-o", outdir, "-p", target.pid]
    early = rng.random() < EARLY_SHARE
    delay = rng.uniform(0, EARLY_MAX if early else LATE_MAX)
    tracer = h.popen(cmd)
    tracers.append(tracer)
    if early:
        when = f"{delay * 1000:.0f} ms after its start"
    elif wait_attached(tracer, outdir):
        when = f"{delay * 1000:.0f} ms after the attach"
    else:
        h.kill_all(tracer)
        _, err = tracer.communicate()
        ck.fail(f"{label}: functracer did not attach ({h.status_text(tracer.returncode)})\n"
                f"command: {h.fmt_cmd(cmd)}\nstderr: {err[-1500:]!r}")
        return target.poll() is None
    time.sleep(delay)
    ended = tracer.poll()
    if ended is None:
        tracer.kill()
    _, err = tracer.communicate()
    context = f"command: {h.fmt_cmd(cmd)} (SIGKILL {when})\nfunctracer stderr: {err[-1500:]!r}"
    if ended is not None:
        ck.fail(f"{label}: functracer ended before the kill ({h.status_text(ended)})\n{context}")
    before = log.children()
    time.sleep(SETTLE)
    ok = server_fine(ck, label, target, log, before, context)
    print(f"{label}: {name}, SIGKILL {when}: {'children fine' if ok else 'FAILED'} "
          f"({log.children()} forked so far)", flush=True)
    return ok and target.poll() is None



def clean_round(ck, target, log, tmp, label, tracers):
    outdir = os.path.join(tmp, label.replace(" ", "-"))
    cmd = [h.functracer(), "-e", "memtrace", "-f", "--uncompressed", "-o", outdir, "-p", target.pid]
    earlier = set(h.memfd_mappings(target.pid))  # the killed sessions' (see below)
    tracer = h.popen(cmd)
    tracers.append(tracer)
    if not wait_attached(tracer, outdir):
        h.kill_all(tracer)
        ck.fail(f"{label}: functracer did not attach\ncommand: {h.fmt_cmd(cmd)}")
        return False
    before = log.children()
    time.sleep(SETTLE)
    tracer.send_signal(signal.SIGINT)
    try:
        _, err = tracer.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        h.kill_all(tracer)
        _, err = tracer.communicate()
    err = err.decode(errors="replace")
    if not ck.check(tracer.returncode == 0, f"{label}: functracer ended with {h.status_text(tracer.returncode)} "
                    f"after SIGINT\ncommand: {h.fmt_cmd(cmd)}\nstderr: {err[-1500:]!r}"):
        return False
    # The children free their copies of blocks the server allocated before the
    # attach: the server's history, not bad frees.
    bad = [ln for ln in err.splitlines() if "never allocated" in ln]
    ck.check(not bad, f"{label}: memtrace warned about blocks a child inherited: {bad[:3]} ({len(bad)} lines)")
    left = [m for m in h.memfd_mappings(target.pid) if m not in earlier]
    ok = ck.check(not left, f"{label}: the detach left the recorder's region mapped: {left}")
    ok = server_fine(ck, label, target, log, before, f"command: {h.fmt_cmd(cmd)} (detached)") and ok
    print(f"{label}: attached, detached: {'nothing left mapped, children fine' if ok else 'FAILED'}", flush=True)
    return target.poll() is None


def finish_target(ck, target, log, label):
    try:
        target.stdin.close()
        target.wait(timeout=END_TIMEOUT)
    except subprocess.TimeoutExpired:
        h.kill_all(target)
        ck.fail(f"{label}: the server did not finish within {END_TIMEOUT} s of the end of its input")
        return
    time.sleep(0.05)
    err = target.stderr.read().decode(errors="replace")
    lines = log.read().splitlines()
    done = [ln for ln in lines if ln.startswith("done forker")]
    ok = ck.check(target.returncode == 0 and done and done[-1].endswith("failed=0"),
                  f"{label}: the server ended with {h.status_text(target.returncode)} and {done}, want exit "
                  f"status 0 and failed=0\nits output: {log.read()[-300:]!r}\nits stderr: {err[-1500:]!r}")
    print(f"{label}: end of input: {h.status_text(target.returncode)}, {done[-1:] if ok else 'FAILED'}", flush=True)


def run_target(ck, rng, binary, tmp, number, kills, first_round):
    tag = f"server {number}"
    tracers = []
    target, log = start_target(ck, binary, tag)
    if target is None:
        return
    try:
        for k in range(1, kills + 1):
            plugins = PLUGIN_SETS[(first_round + k - 1) % len(PLUGIN_SETS)]
            if not kill_round(ck, rng, target, log, tmp, f"{tag} kill {k}", plugins, tracers):
                print(f"{tag}: given up after kill round {k}", flush=True)
                return
        if clean_round(ck, target, log, tmp, f"{tag} clean", tracers):
            finish_target(ck, target, log, tag)
    finally:
        h.kill_all(*tracers)
        h.kill_all(target)


def main():
    binary = os.path.abspath(sys.argv[1])
    seed = int(os.environ.get("FT_SEED") or random.SystemRandom().randrange(1 << 32))
    rounds = int(os.environ.get("FT_FORK_ROUNDS") or DEFAULT_ROUNDS)
    print(f"seed {seed} (FT_SEED={seed} repeats this run), {rounds} kill rounds, "
          f"{KILLS_PER_TARGET} per server", flush=True)
    rng = random.Random(seed)
    ck = h.Checker("attach-forks")
    started = time.monotonic()
    with h.TempDir(prefix="ft-attach-forks-") as tmp:
        done = number = 0
        while done < rounds:
            number += 1
            kills = min(KILLS_PER_TARGET, rounds - done)
            run_target(ck, rng, binary, tmp, number, kills, done)
            done += kills
    print(f"seed {seed}, {number} server(s), {time.monotonic() - started:.1f} s")
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: test_attach_forks.py ATTACH_TARGET_EXECUTABLE\n")
        sys.exit(2)
    main()

#!/usr/bin/env python3
"""functracer killed with SIGKILL while attached (-p): the program it was tracing
lives on, runs correctly and finishes its own checks.

usage: test_attach_sigkill.py ATTACH_TARGET_EXECUTABLE

The target is `attach until-eof` (tests/progs/attach.c): four threads calling
at_level1 -> at_level2 -> at_work (with malloc/free and a 1 ms sleep inside
at_level2) while the main thread blocks in read(2) on stdin; it checks every
result and prints "done until-eof threads=4" (exit 0) once stdin is closed.

The moments are drawn with a seeded random generator; the seed is printed, and
FT_SEED=N runs the same draw again. FT_SIGKILL_ROUNDS sets the number of kill
rounds (default 20, 50 under FT_FULL=1), KILLS_PER_TARGET of them on each target
process, so that later attaches meet what an earlier, killed functracer left in
the process (breakpoints, out-of-line areas, replaced return addresses, threads
stopped mid-way).

  * kill rounds: `functracer -q PLUGINS --uncompressed -o DIR -p PID`, the plugins
    in turn calltrace `at_*,malloc,free`, memtrace, memtrace with calltrace `at_*`,
    and calltrace on every function of libc (`*@libc.so`); SIGKILL to functracer
    after a random delay: for a share of the rounds 0-50 ms after its start (while
    it attaches and plants), otherwise 0-800 ms after it attached (its module map
    is in the trace). 0.3 s after the kill the program is still alive, no thread of
    it is stopped, and each of its four workers went on (its voluntary context
    switches grew: every loop sleeps 1 ms);
  * once per target, between two kill rounds, the program runs 0.5 s untraced and
    is checked the same way;
  * after the kill rounds of a target, a clean round: attached once more, detached
    with SIGINT 0.3 s after the attach (functracer exits 0, its trace balanced and
    ending with a detach record); the program's text in memory then equals its
    executable file's bytes (nothing the killed tracers planted is left); stdin is
    closed and the program prints its "done" line and exits 0.
"""

import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

KILLS_PER_TARGET = 5
# Four targets (every plugin set five times), ten under FT_FULL=1 (tests/README.md).
DEFAULT_ROUNDS = 50 if h.FULL else 20
# (label, functracer's arguments, what runs it). The stop path alone (FT_FAST_PATH=0)
# is not in the rotation: its return trampoline still loses a thread now and then
# (doc/functracer.1, BUGS).
PLUGIN_SETS = (
    ("calltrace at_*,malloc,free", ["-e", "calltrace", "-a", "at_*,malloc,free"], []),
    ("memtrace", ["-e", "memtrace"], []),
    ("memtrace+calltrace at_*", ["-e", "memtrace", "-e", "calltrace", "-a", "at_*"], []),
    ("calltrace *@libc.so", ["-e", "calltrace", "-a", "*@libc.so"], []),
)
EARLY_SHARE = 0.25      # rounds killed while functracer attaches and plants
EARLY_MAX = 0.05
LATE_MAX = 0.8
SETTLE = 0.3            # after the kill, before the program is looked at
UNTRACED_RUN = 0.5
ATTACH_TIMEOUT = 30
REAP_TIMEOUT = 30
END_TIMEOUT = 60
WORKERS = 4



def threads(pid):
    """{tid: (state, voluntary context switches)} of the process's threads; {} once it
    is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        state = fields.get("State", "?").split()[0]
        out[int(tid)] = (state, int(fields.get("voluntary_ctxt_switches", "0")))
    return out


def target_output(target):
    """(stdout, stderr) of a target that has ended."""
    out, err = target.communicate()
    return out.decode(errors="replace"), err.decode(errors="replace")


def tracer_stderr(raw):
    """functracer's stderr for a failure message: its lines about functions it could not
    trace (many under `*@libc.so`, more when a killed functracer left breakpoints
    behind) counted, with the first one shown, and the rest."""
    lines = raw.decode(errors="replace").splitlines()
    gaps = [ln for ln in lines if h.GAP_LINE.match(ln.encode())]
    rest = "\n".join(ln for ln in lines if not h.GAP_LINE.match(ln.encode()))
    text = f"functracer stderr: {len(gaps)} line(s) about functions it could not trace"
    text += f", the first: {gaps[0]}" if gaps else ""
    return text + (f"; the rest:\n{rest[-2000:]}" if rest else "; nothing else")


def died(ck, label, target, context):
    """True (and a failure reported, with the program's output) when the program ended."""
    if target.poll() is None:
        return False
    out, err = target_output(target)
    ck.fail(f"{label}: the program died ({h.status_text(target.returncode)})\n{context}\n"
            f"program stdout: {out[-1000:]!r}\nprogram stderr: {err[-2000:]!r}")
    return True


def check_running(ck, label, target, seconds, context):
    """Waits `seconds`, then: the program is alive, none of its threads is stopped, and
    each worker thread went on meanwhile. Returns a short description, or None after a
    failure was reported (context: what to add to it)."""
    before = threads(target.pid)
    time.sleep(seconds)
    if died(ck, label, target, f"(seen {seconds} s later)\n{context}"):
        return None
    after = threads(target.pid)
    stopped = {tid: s for tid, (s, _) in after.items() if s in ("T", "t")}
    workers = [tid for tid in after if tid != target.pid]
    stalled = [tid for tid in workers if tid not in before or after[tid][1] <= before[tid][1]]
    ok = ck.check(not stopped, f"{label}: threads of the program are stopped: {stopped}\n{context}")
    ok = ck.check(len(workers) == WORKERS and not stalled,
                  f"{label}: want {WORKERS} worker threads going on, have {len(workers)}, of which "
                  f"{stalled} made no progress in {seconds} s (states {after})\n{context}") and ok
    if not ok:
        return None
    return f"alive, {len(workers)} workers going on"


def start_target(ck, binary, label):
    target = h.popen([binary, "until-eof"], stdin=subprocess.PIPE)
    line = target.stdout.readline().decode(errors="replace").strip()
    if ck.check(line == "ready", f"{label}: the program did not start: {line!r}"):
        return target
    h.kill_all(target)
    return None


def wait_attached(tracer, outdir, timeout=ATTACH_TIMEOUT):
    """h.wait_attached, giving up as soon as functracer has ended."""
    end = time.monotonic() + timeout
    while tracer.poll() is None and time.monotonic() < end:
        if h.wait_attached(outdir, timeout=0.2):
            return True
    return False


def not_attached(ck, label, target, tracer, cmd):
    """functracer ended, or did not attach in time: reported; True when the program
    still runs."""
    ended = tracer.poll() is not None
    h.kill_all(tracer)
    _, terr = tracer.communicate()
    what = (f"functracer ended before it attached ({h.status_text(tracer.returncode)})" if ended else
            f"functracer did not attach within {ATTACH_TIMEOUT} s (killed)")
    context = f"command: {h.fmt_cmd(cmd)}\n{tracer_stderr(terr)}"
    if died(ck, label, target, f"{what}\n{context}"):
        return False
    ck.fail(f"{label}: {what}\n{context}")
    print(f"{label}: FAILED, the program still runs", flush=True)
    return True


def kill_round(ck, rng, target, tmp, label, plugins, tracers):
    """One attach and SIGKILL. True when the program is fine afterwards."""
    name, args, runner = plugins
    outdir = os.path.join(tmp, label.replace(" ", "-"))
    cmd = runner + [h.functracer(), "-q"] + args + ["--uncompressed", "-o", outdir, "-p", target.pid]
    early = rng.random() < EARLY_SHARE
    delay = rng.uniform(0, EARLY_MAX if early else LATE_MAX)
    started = time.monotonic()
    tracer = h.popen(cmd)
    tracers.append(tracer)
    if early:
        when = f"{delay * 1000:.0f} ms after its start"
    elif wait_attached(tracer, outdir):
        when = f"{delay * 1000:.0f} ms after the attach ({time.monotonic() - started:.2f} s)"
    else:
        return not_attached(ck, label, target, tracer, cmd)
    time.sleep(delay)
    ended_before = tracer.poll()
    if ended_before is None:
        tracer.kill()
    try:
        _, terr = tracer.communicate(timeout=REAP_TIMEOUT)
    except subprocess.TimeoutExpired:
        ck.fail(f"{label}: functracer was not reaped within {REAP_TIMEOUT} s of SIGKILL\n"
                f"command: {h.fmt_cmd(cmd)}")
        return False
    context = f"command: {h.fmt_cmd(cmd)} (SIGKILL {when})\n{tracer_stderr(terr)}"
    if ended_before is not None:
        # functracer ends when its program does: the program's death is the failure.
        ended = f"functracer ended by itself before the kill ({h.status_text(ended_before)})"
        try:
            target.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        if not died(ck, label, target, f"{ended}\n{context}"):
            ck.fail(f"{label}: {ended}, the program still runs\n{context}")
            print(f"{label}: {name}, SIGKILL {when}: FAILED, the program still runs", flush=True)
            return True
        print(f"{label}: {name}, SIGKILL {when}: FAILED", flush=True)
        return False
    result = check_running(ck, label, target, SETTLE, context)
    print(f"{label}: {name}, SIGKILL {when}: {result or 'FAILED'}", flush=True)
    return result is not None


def untraced_run(ck, target, label):
    result = check_running(ck, label, target, UNTRACED_RUN, "(no functracer attached)")
    print(f"{label}: {UNTRACED_RUN} s untraced: {result or 'FAILED'}", flush=True)
    return result is not None


def clean_round(ck, target, binary, tmp, label, plugins, tracers):
    """Attach, detach with SIGINT, text = file. True when the program is fine."""
    name, args, runner = plugins
    outdir = os.path.join(tmp, label.replace(" ", "-"))
    cmd = runner + [h.functracer(), "-q"] + args + ["--uncompressed", "-o", outdir, "-p", target.pid]
    tracer = h.popen(cmd)
    tracers.append(tracer)
    if not wait_attached(tracer, outdir):
        return not_attached(ck, label, target, tracer, cmd)
    time.sleep(SETTLE)
    detached = h.detach(ck, label, tracer, signal.SIGINT, cmd)
    if died(ck, label, target, f"at the clean attach or detach\ncommand: {h.fmt_cmd(cmd)}"):
        return False
    if not detached:
        return True  # reported; the program may still finish
    a = h.check_trace(ck, label, outdir, target.pid)
    if a is not None:
        print(f"{label}: {name}: trace of {sum(a.types.values())} records, "
              f"{sum(a.calls.values())} calls, {sum(a.unwound['detach'].values())} frames "
              "open at the detach", flush=True)
    n = h.text_matches_file(ck, target.pid, binary, label)
    print(f"{label}: {n} bytes of text compared with the file", flush=True)
    return True


def finish_target(ck, target, label):
    """Closes the program's stdin: it must print its done line and exit 0."""
    try:
        out, err = target.communicate(input=b"", timeout=END_TIMEOUT)
    except subprocess.TimeoutExpired:
        h.kill_all(target)
        out, err = target.communicate()
        ck.fail(f"{label}: the program did not finish within {END_TIMEOUT} s of the end of its "
                f"input (stopped or hung?)\nstdout: {out!r}\nstderr: {err[-2000:]!r}")
        return
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    ok = ck.check(target.returncode == 0 and "done until-eof threads=4" in out.splitlines(),
                  f"{label}: the program ended with {h.status_text(target.returncode)}, want exit "
                  f"status 0 and its done line\nstdout: {out!r}\nstderr: {err[-2000:]!r}")
    print(f"{label}: end of input: {h.status_text(target.returncode)}, "
          f"{out.strip().splitlines()[-1:] if ok else 'FAILED'}", flush=True)


def run_target(ck, rng, binary, tmp, number, kills, first_round):
    """A target attached to and killed `kills` times, then the clean round."""
    tag = f"target {number}"
    tracers = []
    target = start_target(ck, binary, tag)
    if target is None:
        return
    try:
        pause_after = rng.randint(1, max(1, kills - 1))
        alive = True
        for k in range(1, kills + 1):
            plugins = PLUGIN_SETS[(first_round + k - 1) % len(PLUGIN_SETS)]
            alive = kill_round(ck, rng, target, tmp, f"{tag} kill {k}", plugins, tracers)
            if alive and k == pause_after:
                alive = untraced_run(ck, target, f"{tag} after kill {k}")
            if not alive:
                break
        if not alive:
            print(f"{tag}: given up after kill round {k} (see the failure above); "
                  f"{kills - k} kill round(s) and the clean round not run", flush=True)
            return
        plugins = PLUGIN_SETS[number % len(PLUGIN_SETS)]
        if clean_round(ck, target, binary, tmp, f"{tag} clean", plugins, tracers):
            finish_target(ck, target, tag)
    finally:
        h.kill_all(*tracers)
        h.kill_all(target)


def main():
    binary = os.path.abspath(sys.argv[1])
    seed = int(os.environ.get("FT_SEED") or random.SystemRandom().randrange(1 << 32))
    rounds = int(os.environ.get("FT_SIGKILL_ROUNDS") or DEFAULT_ROUNDS)
    print(f"seed {seed} (FT_SEED={seed} repeats this run), {rounds} kill rounds, "
          f"{KILLS_PER_TARGET} per target", flush=True)
    rng = random.Random(seed)
    ck = h.Checker("attach-sigkill")
    started = time.monotonic()
    with h.TempDir(prefix="ft-attach-sigkill-") as tmp:
        done = number = 0
        while done < rounds:
            number += 1
            kills = min(KILLS_PER_TARGET, rounds - done)
            run_target(ck, rng, binary, tmp, number, kills, done)
            done += kills
    print(f"seed {seed}, {number} target(s), {time.monotonic() - started:.1f} s")
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: test_attach_sigkill.py ATTACH_TARGET_EXECUTABLE\n")
        sys.exit(2)
    main()

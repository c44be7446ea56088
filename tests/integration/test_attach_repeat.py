#!/usr/bin/env python3
"""Attach and detach fifty times in a row (design §4: SIGINT or SIGTERM to
functracer in attach mode detaches cleanly and the program runs on unharmed).

usage: test_attach_repeat.py ATTACH_TARGET_EXECUTABLE

The target is `attach until-eof` (tests/progs/attach.c): four threads calling
at_level1 -> at_level2 -> at_work (with malloc/free and a 1 ms sleep inside
at_level2, so traced frames are open on every stack at every attach and
detach) while the main thread blocks in read(2) on stdin; it checks every
result and prints its "done" line once stdin is closed.

Fifty rounds, each: `functracer -e calltrace -a at_* -o DIR -p PID` (every
fifth round with memtrace as well), a short traced window once the module map
is written, then SIGINT (even rounds) or SIGTERM (odd rounds) to functracer,
which must exit 0 within DETACH_TIMEOUT. Each round's trace must be read by
`functracer-postproc dump --json` and be balanced (frames open at the detach
closed by `unwound reason="detach"` records), end with a detach record, and
the program must still run; calls of at_work are traced in at least half of
the rounds (a 50 ms window on a busy machine may see none) and memtrace
records allocations in its rounds. The out-of-line areas the first attaches map are
reused by the later ones: their number in /proc/PID/maps does not grow after
the first round of each kind. After the last round stdin is closed: the program
prints its "done" line and exits 0, every self-check passed (its read(2) was
never failed by an attach either).
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ROUNDS = 50
MEMTRACE_EVERY = 5
WINDOWS = (0.05, 0.15, 0.3)  # traced time per round, in turn


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("attach-repeat")
    started = time.monotonic()
    target = h.popen([binary, "until-eof"], stdin=subprocess.PIPE)
    try:
        with h.TempDir(prefix="ft-attach-repeat-") as tmp:
            line = target.stdout.readline().decode().strip()
            if not ck.check(line == "ready", f"target did not start: {line!r}"):
                ck.finish()
            before = h.areas(target.pid)
            ck.check_eq(before, 0, "out-of-line areas before the first attach")
            settled = {}  # kind of round -> areas after its first round
            calls = allocs = traced_rounds = rounds_done = 0
            for i in range(ROUNDS):
                sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
                memtrace = i % MEMTRACE_EVERY == MEMTRACE_EVERY - 1
                kind = "calltrace+memtrace" if memtrace else "calltrace"
                label = f"round {i + 1} ({kind}, {signal.Signals(sig).name})"
                outdir = os.path.join(tmp, f"round-{i + 1}")
                cmd = [h.functracer(), "-q", "-e", "calltrace"] + (["-e", "memtrace"] if memtrace else []) + \
                    ["-a", "at_*", "--uncompressed", "-o", outdir, "-p", target.pid]
                tracer = h.attach_window(ck, label, cmd, outdir, target, WINDOWS[i % len(WINDOWS)],
                                         timeout=20)
                if tracer is None:
                    break
                if not h.detach(ck, label, tracer, sig, cmd):
                    break
                if not ck.check(target.poll() is None,
                                f"{label}: target ended at detach (status {target.returncode})"):
                    break
                n = h.areas(target.pid)
                if kind not in settled:
                    # memtrace's functions are in libc, where the engine's own hooks
                    # already are: at most one more area for the first such round.
                    ck.check(not settled or n <= max(settled.values()) + 1,
                             f"{label}: {n} out-of-line areas in the process, {settled} after the "
                             f"first round of each kind before")
                    settled[kind] = n
                else:
                    ck.check(n <= max(settled.values()),
                             f"{label}: {n} out-of-line areas in the process, {settled} after the first "
                             f"round of each kind: areas are not reused")
                a = h.check_trace(ck, label, outdir, target.pid)
                if a is not None:
                    tids = {t.tid for t in a.threads if t.calls["at_work"]}
                    detached = sum(a.unwound["detach"].values())
                    print(f"{label}: {a.calls['at_work']} calls of at_work on {len(tids)} threads, "
                          f"{detached} frames open at the detach, {n} areas", flush=True)
                    calls += a.calls["at_work"]
                    # A window of 50 ms on a busy machine may see no call; the
                    # rounds together must.
                    traced_rounds += a.calls["at_work"] > 0
                    allocs += a.types["alloc"] if memtrace else 0
                rounds_done += 1
            print(f"{rounds_done} rounds in {time.monotonic() - started:.1f}s, {calls} calls of "
                  f"at_work traced in {traced_rounds} of them, {allocs} allocations under memtrace, "
                  f"areas after the first rounds: {settled}")
            if rounds_done == ROUNDS:
                ck.check(traced_rounds >= ROUNDS // 2,
                         f"calls of at_work traced in only {traced_rounds} of {ROUNDS} rounds")
                ck.check(allocs > 0, "memtrace recorded no allocation in its rounds")
            try:
                out, err = target.communicate(input=b"", timeout=60)
            except subprocess.TimeoutExpired:
                target.kill()
                out, err = target.communicate()
                ck.fail("target did not finish after its input was closed (stopped or hung?)")
                ck.finish()
            status = target.returncode if target.returncode >= 0 else 128 - target.returncode
            ck.check_eq((status, out.decode(), err.decode()), (0, "done until-eof threads=4\n", ""),
                        "target's exit status, output and errors after the last detach")
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
    ck.finish()


if __name__ == "__main__":
    main()

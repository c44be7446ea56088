#!/usr/bin/env python3
"""Allocations cut off by a detach or by the process's death are not failed
allocations.

usage: test_interrupted_alloc.py LOAD_EXE

The target is `load SECONDS` (tests/progs/load.c): sixteen threads allocating and
releasing in a tight loop; it checks every block it gets and ends with "check ok"
(exit 0) only when no allocation failed. So its trace may hold no alloc_failed.

  * Attach and detach ROUNDS times (at least MIN_ROUNDS before the program ends) with `-e memtrace -e calltrace -a ALLOCATORS`:
    calltrace's `unwound reason="detach"` records show the allocator calls in
    progress at each detach; memtrace must write no alloc_failed, and the program
    must still end with "check ok".
  * Launch it under the same plugins and SIGKILL it while it allocates: calltrace's
    `unwound reason="exit"` records show the calls in progress; no alloc_failed.

Over all rounds and the kill, at least one allocation must have been in progress
(else nothing was tested: sixteen threads in malloc loops make that near certain);
while none was, the kill is repeated, up to three launches.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ROUNDS = 6
KILLS = 3  # launches killed, at most, until an allocation was in progress somewhere
MIN_ROUNDS = 3  # attaching to sixteen busy threads is slow on a loaded machine
TARGET_SECONDS = 60
# The attach rounds' target (load -i): at most long enough for ROUNDS attaches to
# sixteen busy threads on a loaded machine; its input is closed after the last round,
# which ends it (the traces are read after it ends).
ROUNDS_TARGET_SECONDS = 45
ALLOCATORS = ["malloc", "calloc", "realloc"]
PLUGINS = ["-e", "memtrace", "-e", "calltrace", "-a", ",".join(ALLOCATORS), "--uncompressed"]


class Tally:
    """What a trace says about interrupted allocations, counted as its records are
    read (a trace of the launched run holds millions: they are not kept)."""

    def __init__(self, reason):
        self.reason = reason
        self.cut = 0  # allocator calls left unwound for `reason`
        self.failed = []  # the first alloc_failed records
        self.nfailed = 0
        self.allocs = 0
        self.killed = False  # a `killed` record was seen

    def __call__(self, r):
        kind = r.get("type")
        if kind == "alloc":
            self.allocs += 1
        elif kind == "unwound" and r.get("reason") == self.reason and r.get("function") in ALLOCATORS:
            self.cut += 1
        elif kind == "alloc_failed":
            self.nfailed += 1
            if len(self.failed) < 3:
                self.failed.append(r)
        elif kind == "killed":
            self.killed = True


def interrupted(ck, files, reason):
    """The Tally of the trace files, or None when they could not be read."""
    tally = Tally(reason)
    return tally if files and h.stream_records(ck, files, tally) else None


def attach_rounds(ck, load, tmp):
    target = h.popen([load, "-i", str(ROUNDS_TARGET_SECONDS)], stdin=subprocess.PIPE)
    total = 0
    done = []  # (label, trace directory) of the rounds that detached
    try:
        # The rounds first, their traces read afterwards: reading a round's trace takes
        # longer than the round (tens of thousands of records), and the target must
        # still run for the next one.
        for i in range(ROUNDS):
            if target.poll() is not None:
                ck.check(i >= MIN_ROUNDS, f"the target ended after {i} rounds (status {target.returncode})")
                break
            label = f"round {i + 1}"
            out = os.path.join(tmp, f"attach{i}")
            cmd = [h.functracer(), "-q"] + PLUGINS + ["-o", out, "-p", str(target.pid)]
            tracer = h.attach_window(ck, label, cmd, out, target, 0.3)
            if tracer is None or not h.detach(ck, label, tracer, signal.SIGINT, cmd):
                continue
            done.append((label, out))
        out, err = target.communicate(timeout=ROUNDS_TARGET_SECONDS + 120)
        ck.check(target.returncode == 0 and b"check ok" in out,
                 f"the target after the detaches: status {target.returncode}\n{err.decode()[-1500:]}")
    finally:
        h.kill_all(target)
    for label, out in done:
        t = interrupted(ck, h.trace_files(out), "detach")
        if not ck.check(t, f"{label}: no trace"):
            continue
        total += t.cut
        print(f"{label}: {t.allocs} allocations, {t.cut} allocator calls in progress at the detach, "
              f"{t.nfailed} alloc_failed")
        ck.check(t.allocs > 0, f"{label}: memtrace recorded no allocation")
        ck.check_eq(t.nfailed, 0, f"{label}: alloc_failed records in a program whose allocations "
                                  f"never fail\n{t.failed}")
    return total


def killed(ck, load, tmp, attempt):
    out = os.path.join(tmp, f"killed{attempt}")
    tracer = h.popen([h.functracer(), "-q"] + PLUGINS + ["-o", out, load, str(TARGET_SECONDS)])
    pid = None
    seen = {}  # trace file -> (bytes read, " alloc " lines in them)
    end = time.monotonic() + 60
    # The trace grows by hundreds of MB a second on the fast path: it is read on from
    # where the last look stopped, and the program is killed as soon as it allocates.
    while time.monotonic() < end and pid is None and tracer.poll() is None:
        for f in h.trace_files(out):
            offset, allocs = seen.get(f, (0, 0))
            with open(f, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read(1 << 22)
            whole = chunk[:chunk.rfind(b"\n") + 1]
            seen[f] = (offset + len(whole), allocs + whole.count(b" alloc "))
            if seen[f][1] > 1000:
                pid = int(re.search(r"\.(\d+)\.trace$", f).group(1))
        time.sleep(0.01)
    if not ck.check(pid, "the launched program made no allocations under functracer"):
        h.kill_all(tracer)
        return 0
    os.kill(pid, signal.SIGKILL)
    try:
        tracer.communicate(timeout=h.DETACH_TIMEOUT)
    except Exception:
        h.kill_all(tracer)
    ck.check_eq(tracer.returncode, 128 + signal.SIGKILL, "functracer's status for a program killed by SIGKILL")
    t = interrupted(ck, h.trace_files(out), "exit")
    if not ck.check(t, "killed: the trace could not be read"):
        return 0
    ck.check(t.killed, "the trace has no killed record")
    print(f"killed: {t.allocs} allocations, {t.cut} allocator calls in progress at the kill, "
          f"{t.nfailed} alloc_failed")
    ck.check_eq(t.nfailed, 0, f"killed: alloc_failed records in a program whose allocations never fail\n"
                              f"{t.failed}")
    return t.cut

def main():
    load = os.path.abspath(sys.argv[1])
    ck = h.Checker("interrupted-alloc")
    with h.TempDir(prefix="ft-interrupted-alloc-") as tmp:
        total = attach_rounds(ck, load, tmp)
        # The kill is a sample of one moment: on a loaded machine it may find no thread
        # inside an allocator, so it is taken again (at most KILLS times) until some
        # allocation was cut off somewhere.
        for attempt in range(KILLS):
            total += killed(ck, load, tmp, attempt)
            if total > 0:
                break
        ck.check(total > 0, "no allocation was in progress at any detach or at the kill: nothing was tested")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

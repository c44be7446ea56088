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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ROUNDS = 6
KILLS = 3  # launches killed, at most, until an allocation was in progress somewhere
MIN_ROUNDS = 3  # attaching to sixteen busy threads is slow on a loaded machine
TARGET_SECONDS = 60
# The attach rounds' target: long enough for ROUNDS attaches to sixteen busy threads
# on a loaded machine (the traces are read after it ends).
ROUNDS_TARGET_SECONDS = 45
ALLOCATORS = ["malloc", "calloc", "realloc"]
PLUGINS = ["-e", "memtrace", "-e", "calltrace", "-a", ",".join(ALLOCATORS), "--uncompressed"]


def interrupted(records, reason):
    """(allocator calls left unwound for reason, alloc_failed records, alloc records)."""
    cut = sum(1 for r in records if r.get("type") == "unwound" and r.get("reason") == reason
              and r.get("function") in ALLOCATORS)
    failed = [r for r in records if r.get("type") == "alloc_failed"]
    allocs = sum(1 for r in records if r.get("type") == "alloc")
    return cut, failed, allocs


def attach_rounds(ck, load, tmp):
    target = h.popen([load, str(ROUNDS_TARGET_SECONDS)])
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
        files = h.trace_files(out)
        records = h.dump_records(ck, files) if files else None
        if not ck.check(records, f"{label}: no trace"):
            continue
        cut, failed, allocs = interrupted(records, "detach")
        total += cut
        print(f"{label}: {allocs} allocations, {cut} allocator calls in progress at the detach, "
              f"{len(failed)} alloc_failed")
        ck.check(allocs > 0, f"{label}: memtrace recorded no allocation")
        ck.check_eq(len(failed), 0, f"{label}: alloc_failed records in a program whose allocations "
                                    f"never fail\n{failed[:3]}")
    return total


def killed(ck, load, tmp, attempt):
    out = os.path.join(tmp, f"killed{attempt}")
    tracer = h.popen([h.functracer(), "-q"] + PLUGINS + ["-o", out, load, str(TARGET_SECONDS)])
    pid = None
    end = time.monotonic() + 60
    while time.monotonic() < end and pid is None and tracer.poll() is None:
        for f in h.trace_files(out):
            with open(f, "rb") as fh:
                if fh.read().count(b" alloc ") > 1000:
                    pid = int(re.search(r"\.(\d+)\.trace$", f).group(1))
        time.sleep(0.1)
    if not ck.check(pid, "the launched program made no allocations under functracer"):
        h.kill_all(tracer)
        return 0
    os.kill(pid, signal.SIGKILL)
    try:
        tracer.communicate(timeout=h.DETACH_TIMEOUT)
    except Exception:
        h.kill_all(tracer)
    ck.check_eq(tracer.returncode, 128 + signal.SIGKILL, "functracer's status for a program killed by SIGKILL")
    records = h.dump_records(ck, h.trace_files(out)) or []
    ck.check(any(r.get("type") == "killed" for r in records), "the trace has no killed record")
    cut, failed, allocs = interrupted(records, "exit")
    print(f"killed: {allocs} allocations, {cut} allocator calls in progress at the kill, "
          f"{len(failed)} alloc_failed")
    ck.check_eq(len(failed), 0, f"killed: alloc_failed records in a program whose allocations never fail\n"
                                f"{failed[:3]}")
    return cut


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

#!/usr/bin/env python3
"""Attaching while threads sit inside the first bytes of traced functions.

usage: test_patch_window.py PATCHWIN_EXECUTABLE

The target (tests/progs/patchwin.c) has a thread that spends its time in a
`rep movsb` at byte 3 of pw_copy, inside the five bytes an entry patch (a jump to
the in-process recorder) replaces, and a thread blocked in read(2) whose `syscall`
is at bytes 3..4 of pw_read (the kernel restarts it there when the thread
resumes). An entry patched under either thread, the thread left where it was, would
send it into the middle of the jump: functracer moves a thread stopped at one of the
window's instructions to that instruction's copy in the trampoline (doc/internals.md
§8b), refuses windows with a system call, and at a detach moves a thread in a copy
back to the original instruction. The program checks every copy and every message itself; its main thread
calls pw_tick, an ordinary function whose entry is patched, once per message.

Rounds, each a fresh target attached with `functracer -e calltrace -a 'pw_*' -p`:
  * to the end: the program's own checks pass and its output is as it says; the
    trace is balanced, pw_read has exactly one call per message after the first
    (which was under way at the attach), pw_copy between the copies made after
    "go" (less the one under way at the attach) and all of them, pw_tick one per
    message; over the rounds the copier was found inside pw_copy's first bytes and
    moved at least once (`-d` says so: the case this test exists for is checked,
    not assumed);
  * detached halfway (SIGINT): no thread is single-stepped out of a copy instruction
    by instruction (`-d`: a few steps at most, never the 32 MiB `rep movsb`);
    afterwards the text of the program in memory equals the executable file's
    bytes (no jump, no int3 left), and the program finishes its checks.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

MESSAGES = 60
ROUNDS_TO_END = 6
ROUNDS_DETACHED = 3
INSIDE = re.compile(r"moved from 0x[0-9a-f]+ inside pw_copy's first instructions to its copy")
STEPPED = re.compile(r"stepped (\d+) instructions out of the recorder's code")
MAX_STEPS = 1000


def communicate(ck, proc, timeout, failure, stdin=None):
    """(stdout, stderr) of proc once it ended, or None (killed after timeout, failure
    reported)."""
    try:
        return proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        ck.fail(f"{failure}\nstdout: {out!r}\nstderr: {(err or b'')[-2000:]!r}")
        return None


def start_target(ck, exe, label):
    target = subprocess.Popen([exe, str(MESSAGES)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    ready = target.stdout.readline()
    if not ck.check(ready == b"ready\n", f"{label}: target did not start: {ready!r}"):
        h.kill_all(target)
        return None
    return target


def finish_target(ck, target, label):
    """Sends "go" (if not sent), waits for the program; its counts, or None."""
    ended = communicate(ck, target, 120, f"{label}: the program did not finish (hung?)", stdin=b"go\n")
    if ended is None:
        return None
    out, err = ended
    ok = ck.check_eq(target.returncode, 0, f"{label}: the program's exit status (its own checks)\n"
                     f"stdout: {out!r}\nstderr: {err!r}")
    lines = out.decode().strip().splitlines()
    line = next((ln for ln in lines if ln.startswith("received=")), "")
    counts = dict(kv.split("=") for kv in line.split() if "=" in kv)
    ck.check(counts.get("received") == str(MESSAGES) and counts.get("bad_messages") == "0"
             and counts.get("bad_copies") == "0", f"{label}: the program's counts: {line!r}")
    return {k: int(v) for k, v in counts.items()} if ok else None


def round_to_end(ck, exe, tmp, i):
    label = f"round {i + 1} to the end"
    target = start_target(ck, exe, label)
    if target is None:
        return None
    outdir = os.path.join(tmp, f"end-{i + 1}")
    cmd = [h.functracer(), "-d", "--stats", "-e", "calltrace", "-a", "pw_*", "--uncompressed", "-o", outdir,
           "-p", str(target.pid)]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not ck.check(h.wait_attached(outdir), f"{label}: functracer did not attach"):
        h.kill_all(tracer, target)
        return None
    counts = finish_target(ck, target, label)
    ended = communicate(ck, tracer, 60, f"{label}: functracer did not end with the program")
    if ended is None:
        return None
    err = ended[1].decode()
    ck.check_eq(tracer.returncode, 0, f"{label}: functracer's exit status\n{err[-2000:]}")
    if counts is None:
        return None
    files = h.trace_files(outdir)
    records = h.dump_records(ck, files) if ck.check(len(files) == 1, f"{label}: trace files {files}") else None
    if records is None:
        return None
    a = h.analyze(records)
    h.report_problems(ck, a, label)
    ck.check_eq(a.calls["pw_read"], MESSAGES - 1, f"{label}: calls of pw_read (one per message after the first)")
    ck.check_eq(a.calls["pw_tick"], MESSAGES, f"{label}: calls of pw_tick (one per message)")
    # The copy under way at the attach ends after "go" and was entered untraced.
    low, high = counts["copies"] - counts["copies_at_go"] - 1, counts["copies"]
    ck.check(low <= a.calls["pw_copy"] <= high,
             f"{label}: {a.calls['pw_copy']} calls of pw_copy traced, want {low}..{high}")
    inside = bool(INSIDE.search(err))
    patched = [ln for ln in err.splitlines() if "pw_" in ln and ("not patched" in ln or "moved from" in ln)
               or "patched for the in-process" in ln]
    print(f"{label}: pw_copy {a.calls['pw_copy']} calls ({low}..{high}), pw_read {a.calls['pw_read']}; "
          f"copier inside pw_copy's first bytes: {inside}; {patched}", flush=True)
    return inside


def round_detached(ck, exe, tmp, i):
    label = f"round {i + 1} detached"
    target = start_target(ck, exe, label)
    if target is None:
        return
    outdir = os.path.join(tmp, f"detach-{i + 1}")
    cmd = [h.functracer(), "-d", "-e", "calltrace", "-a", "pw_*", "--uncompressed", "-o", outdir,
           "-p", str(target.pid)]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not ck.check(h.wait_attached(outdir), f"{label}: functracer did not attach"):
        h.kill_all(tracer, target)
        return
    target.stdin.write(b"go\n")
    target.stdin.flush()
    time.sleep(0.15)
    tracer.send_signal(signal.SIGINT)
    ended = communicate(ck, tracer, h.DETACH_TIMEOUT, f"{label}: functracer did not detach within "
                        f"{h.DETACH_TIMEOUT} s")
    if ended is None:
        h.kill_all(target)
        return
    err = ended[1].decode()
    ck.check_eq(tracer.returncode, 0, f"{label}: functracer's exit status after the detach\n{err[-2000:]}")
    steps = [int(n) for n in STEPPED.findall(err)]
    ck.check(all(n <= MAX_STEPS for n in steps) and "still in the recorder's code" not in err,
             f"{label}: threads stepped out of the recorder's code at the detach: {steps} steps")
    print(f"{label}: steps at the detach {steps}", flush=True)
    if ck.check(target.poll() is None, f"{label}: the program ended at the detach ({target.returncode})"):
        n = h.text_matches_file(ck, target.pid, exe, label)
        print(f"{label}: {n} bytes of text compared with the file", flush=True)
    ended = communicate(ck, target, 120, f"{label}: the program did not finish after the detach")
    if ended is None:
        return
    out = ended[0]
    ck.check_eq(target.returncode, 0, f"{label}: the program's exit status after the detach\n{out!r}")


def main():
    exe = os.path.abspath(sys.argv[1])
    ck = h.Checker("patch-window")
    with h.TempDir() as tmp:
        inside = [round_to_end(ck, exe, tmp, i) for i in range(ROUNDS_TO_END)]
        ck.check(any(inside), f"the copier thread was never found inside pw_copy's first bytes in "
                 f"{ROUNDS_TO_END} rounds: the case was not exercised ({inside})")
        for i in range(ROUNDS_DETACHED):
            round_detached(ck, exe, tmp, i)
    ck.finish()


if __name__ == "__main__":
    main()

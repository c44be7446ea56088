#!/usr/bin/env python3
"""functracer killed at the moments an attached program depends on it most: the
program lives on, runs correctly and finishes its own checks.

usage: test_attach_die_at.py ATTACH_TARGET_EXECUTABLE

test_attach_sigkill.py kills functracer at random moments; the windows in which a
thread of the program holds state only functracer can undo are short, and a random
kill finds them now and then. Here FT_DIE_AT (doc/functracer.1) makes functracer
SIGKILL itself at each such moment, every time:

  * syscall:N, once a thread is pointed at the N-th system call functracer injects:
    the first (the first out-of-line area, mapped from the padding after the
    executable's code) and a later one (from the first area);
  * trap:N, once functracer has taken in the N-th stop at one of its traps and not
    answered it (the kernel then lets the thread go on past the trap without the
    signal): a patched entry's trampoline (a thread without a ring yet), an entry
    breakpoint (FT_FAST_PATH=0), and a later stop under memtrace and calltrace.

Each case runs on a program of its own (`attach until-eof`, tests/progs/attach.c:
four threads calling at_level1 -> at_level2 -> at_work with malloc/free, checking
every result): functracer must die by its own SIGKILL (else the moment was never
reached: a failure), the program must be alive 0.3 s later with every worker going
on, a second functracer must attach and detach cleanly with the program's text
equal to its file, and the program must print its done line and exit 0 once its
stdin is closed.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import test_attach_sigkill as sk  # noqa: E402

DIE_TIMEOUT = 30
# (label, functracer's arguments, FT_DIE_AT, other environment)
CASES = (
    ("first injected system call", ["-e", "memtrace"], "syscall:1", []),
    ("fifth injected system call", ["-e", "memtrace"], "syscall:5", []),
    ("trampoline stop taken in", ["-e", "calltrace", "-a", "at_*"], "trap:1", []),
    ("entry breakpoint stop taken in", ["-e", "calltrace", "-a", "at_*"], "trap:1", ["FT_FAST_PATH=0"]),
    ("third stop taken in, memtrace+calltrace", ["-e", "memtrace", "-e", "calltrace", "-a", "at_*"], "trap:3", []),
)
CLEAN = ("memtrace+calltrace at_*", ["-e", "memtrace", "-e", "calltrace", "-a", "at_*"], [])


def run_case(ck, binary, tmp, number, case):
    label, args, moment, env = case
    tag = f"case {number} ({label}, FT_DIE_AT={moment})"
    target = sk.start_target(ck, binary, tag)
    if target is None:
        return
    tracers = []
    try:
        outdir = os.path.join(tmp, f"case-{number}")
        cmd = ["env", f"FT_DIE_AT={moment}"] + env + [h.functracer(), "-q"] + args + \
            ["--uncompressed", "-o", outdir, "-p", target.pid]
        tracer = h.popen(cmd)
        tracers.append(tracer)
        try:
            _, terr = tracer.communicate(timeout=DIE_TIMEOUT)
        except subprocess.TimeoutExpired:
            ck.fail(f"{tag}: functracer still runs after {DIE_TIMEOUT} s: the moment was never reached\n"
                    f"command: {h.fmt_cmd(cmd)}")
            return
        context = f"command: {h.fmt_cmd(cmd)}\n{sk.tracer_stderr(terr)}"
        if not ck.check(tracer.returncode == -9,
                        f"{tag}: functracer ended with {h.status_text(tracer.returncode)}, want killed by "
                        f"SIGKILL at the moment FT_DIE_AT names\n{context}"):
            return
        result = sk.check_running(ck, tag, target, sk.SETTLE, context)
        print(f"{tag}: {result or 'FAILED'}", flush=True)
        if result is None:
            return
        if sk.clean_round(ck, target, binary, tmp, f"{tag} clean", CLEAN, tracers):
            sk.finish_target(ck, target, tag)
    finally:
        h.kill_all(*tracers)
        h.kill_all(target)


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("attach-die-at")
    with h.TempDir(prefix="ft-attach-die-at-") as tmp:
        for number, case in enumerate(CASES, 1):
            run_case(ck, binary, tmp, number, case)
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: test_attach_die_at.py ATTACH_TARGET_EXECUTABLE\n")
        sys.exit(2)
    main()

#!/usr/bin/env python3
"""Attach mode (design §4): functracer -p PID seizes every thread of a running
program, and SIGINT or SIGTERM to functracer detaches cleanly: functracer exits
0 and the program runs on unharmed, although traced frames (with replaced
return addresses) are on all of its stacks at attach and at detach time.

usage: test_attach.py ATTACH_TARGET_EXECUTABLE

  * busy: a 4-thread program that calls traced functions and allocates (malloc
    and free are traced too, and in one round every function of libc, so
    functracer is interrupted in the middle of heavy tracing) is attached to
    and detached from three times in a row (later attaches reuse the
    out-of-line areas the first one left in the process); it
    finishes with its own checks passed and exit 0, and each trace is complete
    (every call closed, a detach record at the end, calls on all 4 threads);
  * spawning: a program that creates and ends threads all the time is
    attached to and detached from three times; threads created while it is
    traced are traced, every trace is complete, and the program finishes;
  * following: a shell that runs the program again and again is attached to
    with -f; every child that ran while traced has its own trace with exactly
    its one call, and the shell and its children finish normally after the
    detach;
  * blocked: a program blocked in read(2) is attached to (the system call is
    restarted, not failed); the lines it reads while traced are counted
    exactly, and it goes on reading after the detach; the same once more with
    the program's executable replaced on disk after it started;
  * errors: an unknown pid, a process that has exited but is not reaped (a
    zombie), a process already being traced, and (as an
    unprivileged user) a process of another user are each one clear line and
    exit status 1, and the process is left as it was.
"""

import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

TRACE_SECONDS = 1.0
# (signal that detaches, functions traced): the second round traces every function
# of libc (IFUNCs included), so functracer is interrupted amid heavy tracing.
ROUNDS = ((signal.SIGINT, "at_*,malloc,free"), (signal.SIGTERM, "*@libc.so,at_*"),
          (signal.SIGINT, "at_*,malloc,free"))
def busy(ck, binary, tmp):
    print("=== busy 4-thread program, attached and detached three times")
    # Until its input is closed after the last round (attach until-eof).
    target = h.popen([binary, "until-eof"], stdin=subprocess.PIPE)
    try:
        line = target.stdout.readline().decode().strip()
        if not ck.check(line == "ready", f"busy: target did not start: {line!r}"):
            return
        first_areas = None
        for i, (sig, patterns) in enumerate(ROUNDS):
            label = f"busy, round {i + 1} ({signal.Signals(sig).name})"
            outdir = os.path.join(tmp, f"busy-{i}")
            cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", patterns, "--uncompressed", "-o", outdir,
                   "-p", target.pid]
            tracer = h.attach_window(ck, label, cmd, outdir, target, TRACE_SECONDS)
            if tracer is None:
                return
            if not h.detach(ck, label, tracer, sig, cmd):
                return
            time.sleep(0.2)
            if not ck.check(target.poll() is None, f"{label}: target ended at detach "
                            f"(status {target.returncode})"):
                return
            # A later attach adopts the areas an earlier one left behind.
            n = h.areas(target.pid)
            first_areas = first_areas or n
            ck.check(n <= max(first_areas, 2), f"{label}: {n} out-of-line areas in the process after "
                     f"this round, {first_areas} after the first: areas are not reused")
            a = h.check_trace(ck, label, outdir, target.pid)
            if a is None:
                continue
            tids = {t.tid for t in a.threads if t.calls["at_work"]}
            # Under "*@libc.so" malloc may be reported under an alias (__libc_malloc).
            mallocs = sum(c for n, c in a.calls.items() if str(n).endswith("malloc"))
            frees = sum(c for n, c in a.calls.items() if str(n).endswith("free"))
            print(f"{label}: {a.calls['at_work']} calls of at_work on {len(tids)} threads, "
                  f"{mallocs} of malloc, {frees} of free, {sum(a.calls.values())} in all")
            ck.check(a.calls["at_work"] > 0, f"{label}: no call of at_work traced")
            ck.check(len(tids) == 4, f"{label}: calls traced on {len(tids)} threads, want all 4")
            ck.check(mallocs > 0 and frees > 0, f"{label}: malloc and free (in libc) not traced")
        try:
            out, err = target.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            target.kill()
            out, err = target.communicate()
            ck.fail("busy: target did not finish after the detaches (stopped?)")
            return
        status = target.returncode if target.returncode >= 0 else 128 - target.returncode
        ck.check_eq(status, 0, f"busy: target exit status\nstdout: {out.decode()}\n"
                    f"stderr: {err.decode()}")
        ck.check("done until-eof threads=4" in out.decode(),
                 f"busy: target did not finish its work: {out.decode()!r} {err.decode()!r}")
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()


def spawning(ck, binary, tmp):
    print("=== program creating and ending threads all the time, attached three times")
    # Rounds until its input is closed after the last attach (attach spawn 0).
    target = h.popen([binary, "spawn", 0], stdin=subprocess.PIPE)
    try:
        line = target.stdout.readline().decode().strip()
        if not ck.check(line == "ready", f"spawn: target did not start: {line!r}"):
            return
        for i in range(3):
            label = f"spawn, round {i + 1}"
            outdir = os.path.join(tmp, f"spawn-{i}")
            cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", "at_*,malloc,free", "--uncompressed", "-o", outdir,
                   "-p", target.pid]
            tracer = h.popen(cmd)
            if not ck.check(h.wait_attached(outdir), f"{label}: functracer did not attach"):
                tracer.kill()
                tracer.communicate()
                return
            time.sleep(0.5 + 0.2 * i)
            if not h.detach(ck, label, tracer, signal.SIGINT, cmd):
                return
            if not ck.check(target.poll() is None, f"{label}: target ended at detach "
                            f"(status {target.returncode})"):
                return
            a = h.check_trace(ck, label, outdir, target.pid)
            if a is not None:
                tids = {t.tid for t in a.threads if t.calls["at_work"]}
                print(f"{label}: {a.calls['at_work']} calls of at_work on {len(tids)} threads")
                ck.check(len(tids) > 4, f"{label}: calls on {len(tids)} threads; threads created "
                         f"while traced were not followed")
        out, err = target.communicate(timeout=300)
        ck.check_eq(target.returncode, 0, f"spawn: target exit status (stderr {err.decode()!r})")
        ck.check(re.search(r"^done rounds=[1-9][0-9]*$", out.decode(), re.M) is not None,
                 f"spawn: target output {out.decode()!r}")
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()


def following(ck, binary, tmp):
    print("=== a shell starting the program again and again, attached with -f")
    runs = 60
    script = (f"i=0; while [ $i -lt {runs} ]; do i=$((i+1)); echo line$i | {binary} read > /dev/null "
              f"|| exit 9; sleep 0.03; done; echo done")
    target = h.popen(["sh", "-c", script])
    outdir = os.path.join(tmp, "follow")
    cmd = [h.functracer(), "-q", "-f", "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir, "-p", target.pid]
    try:
        time.sleep(0.2)
        tracer = h.popen(cmd)
        if not ck.check(h.wait_attached(outdir), "follow: functracer did not attach"):
            tracer.kill()
            tracer.communicate()
            return
        time.sleep(1.5)
        if not h.detach(ck, "follow", tracer, signal.SIGINT, cmd):
            return
        out, err = target.communicate(timeout=120)
        ck.check_eq((target.returncode, out.decode()), (0, "done\n"),
                    f"follow: the shell's status and output (stderr {err.decode()!r})")
        files = h.trace_files(outdir)
        whole = 0
        for f in files:
            records = h.dump_records(ck, [f])
            if records is None:
                continue
            a = h.analyze(records)
            h.report_problems(ck, a, f"follow: {os.path.basename(f)}")
            types = {r.get("type") for r in records}
            execs = [r for r in records if r.get("type") == "exec"]
            # A child that started the program and exited while traced called at_line
            # exactly once.
            if "exit" in types and execs and execs[-1].get("exe") == binary:
                whole += 1
                ck.check_eq(a.calls["at_line"], 1, f"follow: calls of at_line in {os.path.basename(f)}")
        print(f"follow: {len(files)} trace files, {whole} children traced from fork to exit")
        ck.check(whole >= 3, f"follow: only {whole} children traced from fork to exit in "
                 f"{[os.path.basename(f) for f in files]}")
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()


def line_hash(s):
    v = 5381
    for b in s.encode():
        v = (v * 33 + b) & 0xFFFFFFFFFFFFFFFF
    return v


def blocked(ck, binary, tmp, replaced=False):
    """replaced: the executable is replaced on disk once the program runs (an
    upgraded service); functracer reads the old one through /proc."""
    name = "replaced" if replaced else "blocked"
    print(f"=== program blocked in read(2){', its executable replaced on disk' if replaced else ''}")
    if replaced:
        copy = os.path.join(tmp, "victim")
        shutil.copy(binary, copy)
        binary = copy
    target = h.popen([binary, "read"], stdin=subprocess.PIPE)
    if replaced:
        shutil.copy("/bin/true", copy + ".new")
        os.replace(copy + ".new", copy)
    outdir = os.path.join(tmp, name)
    cmd = [h.functracer(), "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir, "-p", target.pid]
    tracer = None
    try:
        line = target.stdout.readline().decode().strip()
        if not ck.check(line == "ready", f"{name}: target did not start: {line!r}"):
            return
        time.sleep(0.2)  # in read() by now
        tracer = h.popen(cmd)
        if not ck.check(h.wait_attached(outdir), f"{name}: functracer did not attach"):
            return
        time.sleep(0.3)
        lines = [f"line {i}" for i in range(5)] + [f"after {i}" for i in range(3)]
        got = []
        for s in lines[:5]:
            target.stdin.write((s + "\n").encode())
            target.stdin.flush()
            got.append(target.stdout.readline().decode().rstrip("\n"))
        if not h.detach(ck, name, tracer, signal.SIGINT, cmd):
            return
        rest = "".join(s + "\n" for s in lines[5:]).encode()
        out, err = target.communicate(input=rest, timeout=60)
        got += out.decode().splitlines()
        want = [f"{s} {line_hash(s)}" for s in lines] + [f"done lines={len(lines)}"]
        ck.check_eq(got, want, f"{name}: program output (stderr {err.decode()!r})")
        ck.check_eq(target.returncode, 0, f"{name}: target exit status")
        a = h.check_trace(ck, name, outdir, target.pid)
        if a is not None:
            ck.check_eq(a.calls["at_line"], 5, f"{name}: at_line calls traced while attached")
    finally:
        for p in (tracer, target):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def children_of(pid):
    """Processes whose parent is pid."""
    return [p for p, fields in h.proc_stats() if len(fields) > 1 and int(fields[1]) == pid]


def state_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("State:"):
                return line.split()[1]
    return ""


def errors(ck, binary, tmp):
    print("=== attach errors")
    out = os.path.join(tmp, "errors")
    # A process that has exited and is not reaped yet: the kernel refuses it with
    # EPERM, which is no permission problem.
    zombie = h.popen([binary, "read"], stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 30
        while state_of(zombie.pid) != "Z" and time.monotonic() < end:
            time.sleep(0.02)
        if ck.check(state_of(zombie.pid) == "Z", f"zombie: process {zombie.pid} did not exit"):
            res = h.run([h.functracer(), "-e", "calltrace", "--uncompressed", "-o", out + "-z", "-p", zombie.pid])
            ck.check_eq(res.status, 1, f"zombie: exit status\n{res.describe()}")
            ck.check(str(zombie.pid) in res.err and "has exited" in res.err
                     and len(res.err.strip().splitlines()) == 1,
                     f"zombie: want one line saying the process has exited\n{res.describe()}")
    finally:
        zombie.communicate()
    ck.check_eq(zombie.returncode, 0, "zombie: the program's status")
    # A process already traced: by another functracer.
    first = h.popen([h.functracer(), "-q", "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", out + "-1",
                   binary, "read"], stdin=subprocess.PIPE)
    try:
        line = first.stdout.readline().decode().strip()
        if ck.check(line == "ready", f"already traced: target did not start: {line!r}"):
            pids = children_of(first.pid)
            if ck.check(len(pids) == 1, f"already traced: want one child of functracer, found {pids}"):
                res = h.run([h.functracer(), "-e", "calltrace", "--uncompressed", "-o", out + "-2", "-p", pids[0]])
                ck.check_eq(res.status, 1, f"already traced: exit status\n{res.describe()}")
                ck.check(str(pids[0]) in res.err and "already traced" in res.err
                         and len(res.err.strip().splitlines()) == 1,
                         f"already traced: want one line naming the pid\n{res.describe()}")
            fout, _ = first.communicate(input=b"x\n", timeout=60)
            ck.check(fout.decode().endswith(f"x {line_hash('x')}\ndone lines=1\n"),
                     f"already traced: the target was disturbed: {fout.decode()!r}")
            ck.check_eq(first.returncode, 0, "already traced: the traced program's status")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    # Another user's process.
    setpriv = shutil.which("setpriv")
    nobody = pwd.getpwnam("nobody") if os.geteuid() == 0 and setpriv else None
    as_nobody = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                 "--clear-groups"] if nobody else None
    if as_nobody and h.run(as_nobody + [h.functracer(), "--version"]).status != 0:
        ck.skip("permission", "user nobody cannot run functracer from this build directory")
    elif as_nobody:
        victim = h.popen([binary, "read"], stdin=subprocess.PIPE)
        try:
            victim.stdout.readline()
            res = h.run(as_nobody + [h.functracer(), "-e", "calltrace", "-p", victim.pid])
            ck.check_eq(res.status, 1, f"permission: exit status\n{res.describe()}")
            ck.check(str(victim.pid) in res.err and "permission denied" in res.err
                     and len(res.err.strip().splitlines()) == 1,
                     f"permission: want one 'permission denied' line naming the pid\n{res.describe()}")
            vout, _ = victim.communicate(input=b"y\n", timeout=60)
            ck.check(vout.decode().endswith(f"y {line_hash('y')}\ndone lines=1\n"),
                     f"permission: the target was disturbed: {vout.decode()!r}")
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait()
    elif os.geteuid() != 0 and os.stat("/proc/1").st_uid != os.geteuid():
        res = h.run([h.functracer(), "-e", "calltrace", "-p", "1"])
        ck.check_eq(res.status, 1, f"permission: exit status\n{res.describe()}")
        ck.check("1" in res.err and "permission denied" in res.err,
                 f"permission: want a 'permission denied' line naming the pid\n{res.describe()}")
    else:
        ck.skip("permission", "not root, or no setpriv (Debian package util-linux): no process "
                "of another user to try")


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("attach")
    with h.TempDir() as tmp:
        busy(ck, binary, tmp)
        spawning(ck, binary, tmp)
        following(ck, binary, tmp)
        blocked(ck, binary, tmp)
        blocked(ck, binary, tmp, replaced=True)
        errors(ck, binary, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

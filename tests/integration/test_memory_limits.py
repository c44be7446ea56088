#!/usr/bin/env python3
"""functracer under a memory limit, attached to a program whose heap holds millions of
blocks: it says it ran out of memory in one line and detaches cleanly; the program
runs on to its own end.

usage: test_memory_limits.py HOARD_EXECUTABLE

The program is `hoard BLOCKS` (tests/progs/hoard.c): it keeps BLOCKS blocks and, in
rounds until its input ends, frees and allocates each again, checking their contents;
"done rounds=N" at the end. memtrace's table of live blocks outgrows the limit within
seconds.

  * RLIMIT_AS: `prlimit --as=LIMIT functracer -e memtrace -o DIR -p PID` (the limit on
    functracer alone). Wanted: exactly one line "functracer: out of memory (...):
    detaching from the traced processes, whose traces end here", exit status 1 within
    the time allowed (no "terminate called", no abort, no death by signal), the
    program not stopped and not traced any more (TracerPid 0), its memory map free of
    the recorder's region, and, once its input is closed, its done line and exit 0.
    The region cannot be mapped in functracer under such a limit: a warning says so
    (not only under -d).
  * a memory cgroup (v2, or v1's memory controller) with a limit, functracer moved
    into it: the same, where the kernel would otherwise kill functracer (SIGKILL, exit
    status 137) without a word. Needs root and a writable cgroup hierarchy: skipped
    with a line saying why where there is none.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

BLOCKS = 3_000_000
AS_LIMIT = 200_000_000
CGROUP_LIMIT = 200 << 20
RUN_TIMEOUT = 120
OOM_LINE = "functracer: out of memory ("


def start_hoard(ck, binary, label):
    target = h.popen([binary, str(BLOCKS)], stdin=subprocess.PIPE)
    line = target.stdout.readline().decode(errors="replace").strip()
    if ck.check(line == "ready", f"{label}: the program did not start: {line!r}"):
        return target
    h.kill_all(target)
    return None


def tracer_pid(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None



def check_run(ck, label, target, cmd, preexec=None):
    started = time.monotonic()
    tracer = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=preexec)
    try:
        _, err = tracer.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        h.kill_all(tracer)
        _, err = tracer.communicate()
        ck.fail(f"{label}: functracer did not run out of memory within {RUN_TIMEOUT} s (killed)\n"
                f"command: {h.fmt_cmd(cmd)}\nstderr: {err.decode(errors='replace')[-1500:]}")
        return
    err = err.decode(errors="replace")
    took = time.monotonic() - started
    context = f"command: {h.fmt_cmd(cmd)}\nstderr: {err[-2000:]}"
    oom = [ln for ln in err.splitlines() if ln.startswith(OOM_LINE)]
    ck.check_eq(len(oom), 1, f"{label}: lines '{OOM_LINE}...' on stderr\n{context}")
    ck.check_eq(tracer.returncode, 1, f"{label}: functracer's exit status\n{context}")
    ck.check("terminate called" not in err and "Aborted" not in err, f"{label}: functracer aborted\n{context}")
    time.sleep(0.2)
    ck.check(target.poll() is None, f"{label}: the program ended ({target.returncode})\n{context}")
    ck.check_eq(tracer_pid(target.pid), 0, f"{label}: the program is still traced\n{context}")
    left = h.memfd_mappings(target.pid)
    ck.check(not left, f"{label}: the recorder's region is left in the program: {left}")
    print(f"{label}: functracer exit {tracer.returncode} after {took:.1f} s: {oom[:1]}", flush=True)
    return err


def finish(ck, label, target):
    try:
        out, err = target.communicate(input=b"", timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        h.kill_all(target)
        ck.fail(f"{label}: the program did not end within {RUN_TIMEOUT} s of the end of its input")
        return
    out = out.decode(errors="replace")
    ck.check(target.returncode == 0 and "done rounds=" in out,
             f"{label}: the program ended with {target.returncode}\nstdout: {out[-500:]!r}\n"
             f"stderr: {err.decode(errors='replace')[-1000:]!r}")
    print(f"{label}: the program ended: {out.strip().splitlines()[-1:]}", flush=True)


def address_space_case(ck, binary, tmp):
    label = "RLIMIT_AS"
    target = start_hoard(ck, binary, label)
    if target is None:
        return
    try:
        out = os.path.join(tmp, "as")
        cmd = ["prlimit", f"--as={AS_LIMIT}", h.functracer(), "-e", "memtrace", "-o", out, "-p", target.pid]
        err = check_run(ck, label, target, cmd)
        if err is not None:
            ck.check("no in-process recorder (functracer cannot map" in err,
                     f"{label}: no warning that the recorder's region could not be mapped\nstderr: {err[-1500:]}")
        finish(ck, label, target)
    finally:
        h.kill_all(target)


def memory_cgroup():
    """(directory of functracer's own cgroup to make a child in, limit file name) or a
    reason there is none."""
    if os.geteuid() != 0:
        return None, "not root: making a memory cgroup needs it"
    with open("/proc/self/cgroup") as f:
        lines = f.read().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            d = "/sys/fs/cgroup/memory" + path
            if os.access(d, os.W_OK):
                return (d, "memory.limit_in_bytes"), None
    for line in lines:
        if line.startswith("0::"):
            d = "/sys/fs/cgroup" + line[3:]
            try:
                with open("/sys/fs/cgroup/cgroup.controllers") as f:
                    has_memory = "memory" in f.read().split()
            except OSError:
                has_memory = False
            if has_memory and os.access(d, os.W_OK):
                return (d, "memory.max"), None
    return None, "no writable memory cgroup (v2 with the memory controller, or v1's memory hierarchy)"


def cgroup_case(ck, binary, tmp):
    label = "memory cgroup"
    where, why = memory_cgroup()
    if where is None:
        ck.skip(label, why)
        return
    base, limit_file = where
    group = os.path.join(base, f"ft-memory-limits-{os.getpid()}")
    try:
        os.mkdir(group)
        with open(os.path.join(group, limit_file), "w") as f:
            f.write(str(CGROUP_LIMIT))
    except OSError as e:
        # A v2 leaf with processes cannot have children ("no internal processes").
        ck.skip(label, f"a child cgroup with a memory limit cannot be made in {base}: {e}")
        try:
            os.rmdir(group)
        except OSError:
            pass
        return
    target = start_hoard(ck, binary, label)
    try:
        if target is None:
            return
        procs = os.path.join(group, "cgroup.procs")

        def enter():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        out = os.path.join(tmp, "cgroup")
        cmd = [h.functracer(), "-e", "memtrace", "-o", out, "-p", target.pid]
        check_run(ck, label, target, cmd, preexec=enter)
        finish(ck, label, target)
    finally:
        h.kill_all(target)
        for _ in range(50):
            try:
                os.rmdir(group)
                break
            except OSError:
                time.sleep(0.1)


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("memory-limits")
    h.require_tools("memory-limits", ["prlimit"], "util-linux")
    with h.TempDir(prefix="ft-memory-limits-") as tmp:
        address_space_case(ck, binary, tmp)
        cgroup_case(ck, binary, tmp)
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: test_memory_limits.py HOARD_EXECUTABLE\n")
        sys.exit(2)
    main()

#!/usr/bin/env python3
"""A plugin that crashes (tests/plugins/crashtest.c) is one clear error line from
functracer, never a crash of functracer, and the traced program goes on unharmed.

usage: test_plugin_crash.py CRASHTEST_PLUGIN ATTACH_TARGET_EXECUTABLE

The target (tests/progs/attach.c) runs four threads that call traced functions,
check every result and print "done iterations=N threads=4" at the end; a broken
breakpoint or return address left behind would kill it or make a check fail.

  * launched: the plugin dereferences NULL, calls abort(), divides by zero or runs
    an undefined instruction, or overflows its stack, in its init, symbol, module, event, call, ret and
    finish callbacks: functracer says "plugin crashtest crashed (SIG... in CALLBACK)"
    in one line and exits 1; the program runs on untraced to its end (its own
    "done" line, nothing on its stderr), functracer waits for it, and no process of
    the run is left; the trace written so far is readable by the post-processor,
    holds exactly the records the plugin wrote before it crashed (it crashes right
    after writing the N-th), and ends with a detach record. A crash in init stops
    functracer before the program starts.
  * attached (-p): the same in call, ret, symbol (while attaching) and event: the
    program finishes correctly with exit status 0 after functracer let go of it.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

LAUNCH_ITERATIONS = 200   # about 0.2 s untraced
ATTACH_ITERATIONS = 2500  # about 2.5 s untraced: still running when the crash comes
TIMEOUT = 60

LINE = re.compile(r"^functracer: plugin crashtest crashed \((SIG[A-Z]+)( at 0x[0-9a-f]+)? in ([a-z_]+)\)")
SIGNALS = {"segv": "SIGSEGV", "abort": "SIGABRT", "fpe": "SIGFPE", "ill": "SIGILL", "stack": "SIGSEGV"}

# (kind, callback, N): crash at the N-th call of the callback.
LAUNCHED = [("abort", "init", 1), ("segv", "symbol", 10), ("ill", "module", 2), ("fpe", "event", 1),
            ("segv", "call", 50), ("abort", "ret", 30), ("fpe", "call", 7), ("ill", "ret", 1),
            ("stack", "call", 3), ("segv", "finish", 1)]
ATTACHED = [("segv", "call", 200), ("abort", "ret", 100), ("fpe", "symbol", 5), ("ill", "event", 1)]


def session_left(pgid):
    """Processes still in the process group functracer led."""
    left = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            left.append(int(d))
    return left


def check_line(ck, label, err, kind, callback):
    lines = [l for l in err.splitlines() if l.strip()]
    ours = [l for l in lines if "crashtest" in l]
    if not ck.check(len(ours) == 1, f"{label}: want one line about the crash, got {ours!r}\n"
                    f"stderr: {err[-2000:]}"):
        return
    m = LINE.match(ours[0])
    where = "functracer_plugin_init" if callback == "init" else callback
    if ck.check(m is not None, f"{label}: unclear crash line {ours[0]!r}"):
        ck.check_eq((m.group(1), m.group(3)), (SIGNALS[kind], where), f"{label}: signal and callback named")
        if kind == "segv":
            ck.check_eq(m.group(2), " at 0x0", f"{label}: faulting address")
    ck.check(not any("Segmentation" in l or "core dumped" in l or "Aborted" in l for l in lines),
             f"{label}: functracer itself crashed: {err[-1000:]}")


def check_trace(ck, label, outdir, callback, n):
    files = [os.path.join(outdir, f) for f in sorted(os.listdir(outdir))] if os.path.isdir(outdir) else []
    if callback == "init":
        ck.check_eq(files, [], f"{label}: trace files written although the program never started")
        return
    if not ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
        return
    records = h.dump_records(ck, files)
    if records is None:
        return
    types = [r.get("type") for r in records]
    calls, rets = types.count("crash_call"), types.count("crash_ret")
    print(f"{label}: trace readable, {len(records)} records, {calls} crash_call, {rets} crash_ret")
    if callback == "call":
        ck.check_eq(calls, n, f"{label}: crash_call records (written before the crash)")
    if callback == "ret":
        ck.check_eq(rets, n, f"{label}: crash_ret records (written before the crash)")
    if callback != "finish":
        ck.check(types and types[-1] == "detach", f"{label}: the trace does not end with a detach "
                 f"record: ...{types[-3:]}")


def launched(ck, plugin, target, tmp):
    print(f"=== launched, {len(LAUNCHED)} crashes")
    for kind, callback, n in LAUNCHED:
        label = f"launched, {kind} in {callback} #{n}"
        outdir = os.path.join(tmp, f"launch-{kind}-{callback}")
        cmd = [h.functracer(), "-e", plugin, "-a", "at_*", "--uncompressed", "-o", outdir, target, LAUNCH_ITERATIONS]
        env = dict(os.environ, FT_CRASHTEST=f"{kind}:{callback}:{n}")
        start = time.monotonic()
        p = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, preexec_fn=h._child_setup,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            ck.fail(f"{label}: functracer did not end within {TIMEOUT} s\ncommand: {h.fmt_cmd(cmd)}")
            continue
        out, err = out.decode(), err.decode()
        status = p.returncode if p.returncode >= 0 else 128 - p.returncode
        print(f"{label}: exit {status} after {time.monotonic() - start:.2f}s; "
              f"stderr {err.strip()[:200]!r}")
        ck.check_eq(status, 1, f"{label}: functracer exit status\ncommand: {h.fmt_cmd(cmd)}\n"
                    f"env FT_CRASHTEST={kind}:{callback}:{n}\nstderr: {err[-2000:]}")
        check_line(ck, label, err, kind, callback)
        if callback == "init":
            ck.check_eq(out, "", f"{label}: the program ran although the plugin never started")
        else:
            ck.check(f"done iterations={LAUNCH_ITERATIONS} threads=4" in out,
                     f"{label}: the program did not finish its work: stdout {out!r}\nstderr {err[-2000:]}")
            ck.check("CHECK" not in err and "check failed" not in err.lower(),
                     f"{label}: the program's own checks failed: {err[-2000:]}")
        left = session_left(p.pid)
        ck.check_eq(left, [], f"{label}: processes left behind")
        check_trace(ck, label, outdir, callback, n)


def attached(ck, plugin, target, tmp):
    print(f"=== attached, {len(ATTACHED)} crashes")
    for kind, callback, n in ATTACHED:
        label = f"attached, {kind} in {callback} #{n}"
        outdir = os.path.join(tmp, f"attach-{kind}-{callback}")
        prog = subprocess.Popen([str(target), str(ATTACH_ITERATIONS)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=h._child_setup)
        try:
            line = prog.stdout.readline().decode().strip()
            if not ck.check(line == "ready", f"{label}: target did not start: {line!r}"):
                continue
            cmd = [h.functracer(), "-e", plugin, "-a", "at_*", "--uncompressed", "-o", outdir, "-p", prog.pid]
            env = dict(os.environ, FT_CRASHTEST=f"{kind}:{callback}:{n}")
            r = h.run(cmd, timeout=TIMEOUT, env=env)
            print(f"{label}: functracer exit {r.status} after {r.seconds:.2f}s; stderr {r.err.strip()[:200]!r}")
            ck.check_eq(r.status, 1, f"{label}: functracer exit status\nenv FT_CRASHTEST={kind}:{callback}:{n}\n"
                        + r.describe())
            check_line(ck, label, r.err, kind, callback)
            ck.check(prog.poll() is None, f"{label}: the target ended with functracer "
                     f"(status {prog.returncode})")
            try:
                out, err = prog.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                ck.fail(f"{label}: the target did not finish after functracer let go of it (stopped?)")
                continue
            out, err = out.decode(), err.decode()
            status = prog.returncode if prog.returncode >= 0 else 128 - prog.returncode
            ck.check_eq(status, 0, f"{label}: target exit status\nstdout: {out}\nstderr: {err}")
            ck.check(f"done iterations={ATTACH_ITERATIONS} threads=4" in out,
                     f"{label}: the target did not finish its work: {out!r} {err!r}")
            check_trace(ck, label, outdir, callback, n)
        finally:
            if prog.poll() is None:
                prog.kill()
                prog.wait()


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    plugin, target = sys.argv[1], sys.argv[2]
    ck = h.Checker("plugin-crash")
    start = time.monotonic()
    with h.TempDir() as tmp:
        launched(ck, plugin, target, tmp)
        attached(ck, plugin, target, tmp)
    print(f"run time {time.monotonic() - start:.1f}s")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

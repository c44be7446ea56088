#!/usr/bin/env python3
"""Attach mode (design §4): functracer -p PID seizes every thread of a running
program, and SIGINT or SIGTERM to functracer detaches cleanly: functracer exits
0, and the program runs on unharmed, although traced frames (with replaced
return addresses) are on all of its stacks at attach and at detach time.

usage: test_attach.py ATTACH_TARGET_EXECUTABLE"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ITERATIONS = 1500  # about 3 s untraced
TRACE_SECONDS = 1.0


def attach_once(ck, binary, sig, tmp):
    label = f"attach, detach with {signal.Signals(sig).name}"
    print(f"=== {label}")
    target = subprocess.Popen([binary, str(ITERATIONS)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, preexec_fn=h._child_setup)
    try:
        line = target.stdout.readline().decode().strip()
        if not ck.check(line == "ready", f"{label}: target did not start: {line!r}"):
            return
        outdir = os.path.join(tmp, f"attach-{sig}")
        cmd = [h.functracer(), "-e", "calltrace", "-a", "at_*", "-o", outdir,
               "-p", str(target.pid)]
        tracer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  preexec_fn=h._child_setup)
        time.sleep(TRACE_SECONDS)
        if tracer.poll() is not None or target.poll() is not None:
            if tracer.poll() is None:
                tracer.kill()
            _, terr = tracer.communicate()
            ck.fail(f"{label}: tracer or target ended early (tracer {tracer.returncode}, "
                    f"target {target.poll()})\ncommand: {h.fmt_cmd(cmd)}\n"
                    f"functracer stderr: {terr.decode()[-2000:]}")
            return
        sent = time.monotonic()
        tracer.send_signal(sig)
        try:
            tout, terr = tracer.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tout, terr = tracer.communicate()
            ck.fail(f"{label}: functracer did not detach within 60 s of the signal\n"
                    f"command: {h.fmt_cmd(cmd)}\nstderr: {terr.decode()[-2000:]}")
            return
        print(f"functracer exited {tracer.returncode} {time.monotonic() - sent:.2f}s after "
              f"the signal; stderr: {terr.decode().strip()[:500]!r}")
        ck.check_eq(tracer.returncode, 0, f"{label}: functracer exit status after detach\n"
                    f"command: {h.fmt_cmd(cmd)}\nstderr: {terr.decode()[-2000:]}")
        ck.check(target.poll() is None or target.returncode == 0,
                 f"{label}: target died at detach (status {target.returncode})")
        try:
            out, err = target.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            target.kill()
            out, err = target.communicate()
            ck.fail(f"{label}: target did not finish after detach (stopped?)")
            return
        status = target.returncode if target.returncode >= 0 else 128 - target.returncode
        ck.check_eq(status, 0, f"{label}: target exit status after detach\n"
                    f"stdout: {out.decode()}\nstderr: {err.decode()}")
        ck.check(f"done iterations={ITERATIONS}" in out.decode(),
                 f"{label}: target did not finish its work: {out.decode()!r} {err.decode()!r}")

        files = [os.path.join(outdir, f) for f in sorted(os.listdir(outdir))
                 if f.endswith(".trace")] if os.path.isdir(outdir) else []
        if not ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
            return
        records = h.dump_records(ck, files)
        if records is None:
            return
        a = h.analyze(records)
        h.report_problems(ck, a, label)
        tids = {t.tid for t in a.threads if t.calls["at_work"]}
        print(f"trace: {a.calls['at_work']} calls of at_work on {len(tids)} threads, "
              f"{dict(a.types)}")
        ck.check(a.calls["at_work"] > 0, f"{label}: no call of at_work traced in "
                 f"{TRACE_SECONDS} s")
        ck.check(len(tids) == 3, f"{label}: calls traced on {len(tids)} threads, want all 3")
    finally:
        for p in (target,):
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("attach")
    with h.TempDir() as tmp:
        attach_once(ck, binary, signal.SIGINT, tmp)
        attach_once(ck, binary, signal.SIGTERM, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

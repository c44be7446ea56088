#!/usr/bin/env python3
"""--disabled and SIGUSR1: tracing starts off and each SIGUSR1 to functracer
switches it; breakpoints stay, events stop.

usage: test_toggle.py ATTACH_TARGET_EXECUTABLE

The target (tests/progs/attach.c in "read" mode) calls at_line once per line
it reads and prints the result, so the test knows exactly which calls happened
while tracing was on: lines 1-2 with tracing off, 3-5 on, 6-7 off again. Both
for a launched program and for an attached one; the program's output must be
the untraced one, and exactly 3 calls of at_line must be in the trace.
"""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

LINES = [f"line {i}" for i in range(1, 8)]
ON = {3, 4, 5}


def line_hash(s):
    v = 5381
    for b in s.encode():
        v = (v * 33 + b) & 0xFFFFFFFFFFFFFFFF
    return v


def wait_for(ck, stream, text, what):
    """Reads functracer's stderr up to a line containing text."""
    seen = []
    while True:
        line = stream.readline().decode()
        if not line:
            ck.fail(f"{what}: functracer's stderr ended before {text!r}: {seen}")
            return False
        seen.append(line.rstrip())
        if text in line:
            return True


def run(ck, label, binary, tmp, attach):
    print(f"=== {label}")
    outdir = os.path.join(tmp, label)
    base = [h.functracer(), "--disabled", "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir]
    target = tracer = None
    try:
        if attach:
            target = subprocess.Popen([binary, "read"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, preexec_fn=h._child_setup)
            tracer = subprocess.Popen(base + ["-p", str(target.pid)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, preexec_fn=h._child_setup)
            prog = target
        else:
            tracer = subprocess.Popen(base + [binary, "read"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, preexec_fn=h._child_setup)
            prog = tracer  # the program's stdin and stdout are functracer's
        if not ck.check(prog.stdout.readline().decode().strip() == "ready", f"{label}: target did not start"):
            return
        if attach and not wait_for(ck, tracer.stderr, "attached to process", label):
            return
        got = []
        for i, s in enumerate(LINES, 1):
            if i in (min(ON), max(ON) + 1):
                tracer.send_signal(signal.SIGUSR1)
                state = "enabled" if i in ON else "disabled"
                if not wait_for(ck, tracer.stderr, f"tracing {state}", label):
                    return
            prog.stdin.write((s + "\n").encode())
            prog.stdin.flush()
            got.append(prog.stdout.readline().decode().rstrip("\n"))
        if attach:
            tracer.send_signal(signal.SIGINT)
            tracer.communicate(timeout=60)
            ck.check_eq(tracer.returncode, 0, f"{label}: functracer status after detach")
        out, _ = prog.communicate(input=b"", timeout=60)
        got += out.decode().splitlines()
        want = [f"{s} {line_hash(s)}" for s in LINES] + [f"done lines={len(LINES)}"]
        ck.check_eq(got, want, f"{label}: program output")
        ck.check_eq(prog.returncode, 0, f"{label}: program status")
        files = [os.path.join(outdir, f) for f in os.listdir(outdir) if f.endswith(".trace")]
        records = h.dump_records(ck, files)
        if records is None:
            return
        a = h.analyze(records)
        h.report_problems(ck, a, label)
        print(f"{label}: {a.calls['at_line']} calls of at_line traced")
        ck.check_eq(a.calls["at_line"], len(ON), f"{label}: calls of at_line traced (lines {sorted(ON)} "
                    f"were read with tracing on)")
    finally:
        h.kill_all(tracer, target)


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("toggle")
    with h.TempDir() as tmp:
        run(ck, "launched", binary, tmp, attach=False)
        run(ck, "attached", binary, tmp, attach=True)
    ck.finish()


if __name__ == "__main__":
    main()

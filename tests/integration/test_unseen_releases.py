#!/usr/bin/env python3
"""A release memtrace did not see is never silent: an allocation that returns an address
still live in the trace is counted, said on stderr at the end, and written as an
`untraced` record, which every report then warns about.

usage: test_unseen_releases.py HOARD_EXECUTABLE

The program is `hoard steps` (tests/progs/hoard.c), which allocates and frees a 64-byte
block on command. Traced with memtrace and switched off (SIGUSR1) around the free, then
on again for the next allocation: glibc gives the same address back (the block comes
out of its thread cache), which memtrace still holds as live. Run on the stop path
(FT_FAST_PATH=0): the recorder does not follow the switch yet (a bug of its own).

Wanted: the second address equals the first (else the program's allocator did not
reuse it and nothing is shown: a failure, since glibc does); functracer's stderr has
"memtrace: process PID: 1 allocation returned an address still live in the trace";
`functracer-postproc dump --json` has the untraced record (function "free"); `leaks`
warns that its totals are incomplete.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402


def wait_for(stream_lines, what, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(what in ln for ln in stream_lines):
            return True
        time.sleep(0.02)
    return False


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("unseen-releases")
    with h.TempDir(prefix="ft-unseen-") as tmp:
        out = os.path.join(tmp, "t")
        cmd = [h.functracer(), "-e", "memtrace", "--uncompressed", "-o", out, binary, "steps"]
        env = dict(os.environ, FT_FAST_PATH="0")
        ft = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        err_lines = []

        import threading
        reader = threading.Thread(target=lambda: err_lines.extend(
            ln.decode(errors="replace") for ln in iter(ft.stderr.readline, b"")), daemon=True)
        reader.start()

        def step(c):
            ft.stdin.write((c + "\n").encode())
            ft.stdin.flush()
            return ft.stdout.readline().decode().strip()

        try:
            first = step("a")
            ft.send_signal(signal.SIGUSR1)
            ck.check(wait_for(err_lines, "tracing disabled"), f"functracer did not say 'tracing disabled': {err_lines}")
            step("f")
            ft.send_signal(signal.SIGUSR1)
            ck.check(wait_for(err_lines, "tracing enabled"), f"functracer did not say 'tracing enabled': {err_lines}")
            second = step("a")
            ft.stdin.close()
            ft.wait(timeout=30)
            reader.join(timeout=5)
        finally:
            h.kill_all(ft)
        err = "".join(err_lines)
        ck.check_eq(ft.returncode, 0, f"functracer's exit status\nstderr: {err[-1500:]}")
        if not ck.check(first == second and first.startswith("a 0x"),
                        f"the allocator did not give the address back: {first!r}, then {second!r}"):
            ck.finish()
        ck.check("1 allocation returned an address still live in the trace" in err,
                 f"no line about the release memtrace did not see\nstderr: {err[-1500:]}")
        files = h.trace_files(out)
        dump = h.run_postproc(["dump", "--json"] + files)
        recs = [json.loads(ln) for ln in dump.out.splitlines() if ln.strip()]
        untraced = [r for r in recs if r.get("type") == "untraced"]
        ck.check(any(r.get("function") == "free" for r in untraced), f"no untraced record for free: {untraced}")
        leaks = h.run_postproc(["leaks"] + files)
        ck.check("free was not traced" in leaks.err and "totals are incomplete" in leaks.err,
                 f"leaks does not warn that its totals are incomplete\nstderr: {leaks.err[-800:]}")
        print(f"{first} / {second}: said on stderr, in the trace and by leaks", flush=True)
    ck.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: test_unseen_releases.py HOARD_EXECUTABLE\n")
        sys.exit(2)
    main()

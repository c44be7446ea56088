#!/usr/bin/env python3
"""Another tool's uprobe put on a traced function while functracer runs, and taken off
again before the program ends (bpftrace here; perf probe writes the same int3).

The kernel writes its int3 over the first byte of the function in every process that
maps the file, runs the file's first instruction out of line at each hit and goes on
at the second; taking the uprobe off writes the file's first byte back. An entry
patched with a jump must survive both: the first instruction stays in place under
the patch (arch/entry_patch.h), so the program goes on into the jump after the
kernel's copy and the byte written back is the one there.

usage: test_uprobe_during_run.py LOAD_EXECUTABLE

  * calltrace -a ld_mid,ld_leaf on a private copy of load (tests/progs/load.c,
    sixteen threads): bpftrace attaches a uprobe to ld_mid of that copy once the
    program runs and detaches it while it still runs. The program exits 0 with its
    self-check, bpftrace counted hits, and `calls --json` has exactly the program's
    own ld_mid and ld_leaf totals: no call lost while the uprobe was there or after.
  * the same on the stop path (FT_FAST_PATH=0: a breakpoint on ld_mid, which the
    kernel takes for its own int3 and, taking the uprobe off, overwrites with the
    file's byte): the calls made while the uprobe was on are missing, and that is
    said once on stderr even with -q, recorded (an `untraced` record, reason
    "breakpoint taken away"), warned about by the calls report, and the breakpoint
    is planted again: ld_mid calls are traced after the gap was found.
  * memtrace on load with a private copy of the C library (LD_LIBRARY_PATH): uprobes
    on its malloc and free for a while, the same way. The program exits 0 with its
    self-check, bpftrace counted hits on both, and for every worker thread the trace
    has exactly the program's own count of malloc, calloc, realloc and free calls.

Skipped (loudly) without a usable bpftrace (root, bpftrace installed by .ci/run).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

SECONDS = 30         # how long the program runs at most (load -i: until its input ends)
START_AFTER = 1.0    # the uprobe is put on after the program has run this long
HOLD = 1.0           # and taken off this much later (after bpftrace's attach)
AFTER = 1.0          # and the program's input closed this much later


def probe_hits(text):
    """Hits per probe from bpftrace's map print (`@n[probe]: N` or `@n: N`)."""
    return {m.group(1) or "": int(m.group(2)) for m in re.finditer(r"^@n(?:\[(.*?)\])?: (\d+)$", text, re.M)}


def run_with_uprobe(ck, label, cmd, probe, env=None):
    """Runs cmd (load -i); once the program has run START_AFTER s, bpftrace's `probe`
    is put on for HOLD s and taken off, and AFTER s later the program's input is
    closed, which ends it. Returns (status, stdout, stderr, hits) or None."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    output = []
    time.sleep(START_AFTER)
    with h.bpftrace_uprobe(probe, output=output) as attached:
        if not attached:
            h.kill_all(proc)
            ck.skip(label, "bpftrace could not attach its uprobe here")
            return None
        time.sleep(HOLD)
        running_when_removed = proc.poll() is None
    time.sleep(AFTER)
    out, err = proc.communicate(timeout=h.TRACED_TIMEOUT)
    if not ck.check(running_when_removed,
                    f"{label}: functracer ended (status {proc.returncode}) before the uprobe was taken off "
                    f"(a crash, or SECONDS too short)\nstderr: {err.decode(errors='replace')[-2000:]}"):
        return None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), probe_hits("".join(output))


def program_lines(ck, label, status, out, err):
    if not ck.check(status == 0 and "check ok threads=16" in out,
                    f"{label}: the program did not pass its own checks (status {status})\n"
                    f"stdout tail: {out[-400:]}\nstderr: {err[-2000:]}"):
        return False
    return ck.check(h.without_gaps(err.encode()) == b"", f"{label}: stderr is not empty:\n{err[-2000:]}")


def calltrace_with_uprobe(ck, label, exe, tmp, name, env=None):
    """calltrace -a ld_mid,ld_leaf on a private copy of load (tmp/NAME, its traces in
    tmp/NAME.out) with bpftrace's uprobe on the copy's ld_mid for a while: as
    run_with_uprobe, plus the trace directory."""
    copy = os.path.join(tmp, name)
    shutil.copy2(exe, copy)
    outdir = copy + ".out"
    cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", "ld_mid,ld_leaf", "--uncompressed", "-o", outdir,
           copy, "-i", str(SECONDS)]
    got = run_with_uprobe(ck, label, cmd, f'uprobe:"{copy}":ld_mid {{ @n = count(); }}', env=env)
    return (got, outdir)


def check_calltrace(ck, exe, tmp):
    label = "calltrace, uprobe on ld_mid"
    got, outdir = calltrace_with_uprobe(ck, label, exe, tmp, "load")
    if got is None:
        return
    status, out, err, hits = got
    if not program_lines(ck, label, status, out, err):
        return
    ck.check(sum(hits.values()) > 0, f"{label}: bpftrace counted no hit: {hits}")
    totals = re.search(r"^calls .*\bld_mid=(\d+) ld_leaf=(\d+)", out, re.M)
    funcs = h.calls_report(ck, h.trace_files(outdir))
    if not ck.check(totals is not None and funcs is not None, f"{label}: no totals line or no calls report"):
        return
    for name, expected in (("ld_mid", int(totals.group(1))), ("ld_leaf", int(totals.group(2)))):
        ck.check_eq(h.find_calls_entry(funcs, name), expected, f"{label}: {name} calls in the trace")
    ck.note(f"{label}: {hits} uprobe hits; every call traced")


def check_breakpoint(ck, exe, tmp):
    label = "calltrace on the stop path, uprobe on ld_mid"
    got, outdir = calltrace_with_uprobe(ck, label, exe, tmp, "load-bp", env=dict(os.environ, FT_FAST_PATH="0"))
    if got is None:
        return
    status, out, err, hits = got
    if not ck.check(status == 0 and "check ok threads=16" in out,
                    f"{label}: the program did not pass its own checks (status {status})\n"
                    f"stdout tail: {out[-400:]}\nstderr: {err[-2000:]}"):
        return
    ck.check(sum(hits.values()) > 0, f"{label}: bpftrace counted no hit: {hits}")
    # While the uprobe was on, its int3 took the calls: they are missing, and said to be.
    said = [line for line in err.splitlines() if line.startswith("functracer: cannot trace ld_mid for part of the run")]
    ck.check_eq(len(said), 1, f"{label}: lines on stderr (-q) naming ld_mid's gap\n{err[-2000:]}")
    records = [r for f in h.trace_files(outdir) for r in parse_trace(f)]
    gaps = [r for r in records if r["type"] == "untraced" and r.get("function") == "ld_mid"]
    if not ck.check(len(gaps) == 1 and str(gaps[0].get("reason", "")).startswith("breakpoint taken away"),
                    f"{label}: untraced records of ld_mid: {gaps}"):
        return
    gap_ts = int(gaps[0]["ts"])
    mid = [r for r in records if r["type"] == "call" and r.get("function") == "ld_mid"]
    after = sum(1 for r in mid if int(r["ts"]) > gap_ts)
    totals = re.search(r"^calls .*\bld_mid=(\d+) ld_leaf=(\d+)", out, re.M)
    ck.check(totals is not None and 0 < len(mid) < int(totals.group(1)),
             f"{label}: ld_mid calls in the trace {len(mid)}, the program's {totals and totals.group(1)}: "
             "some, not all")
    ck.check(after > 0, f"{label}: no ld_mid call traced after the gap was found (its breakpoint not planted again)")
    res = h.run_postproc(["calls"] + h.trace_files(outdir))
    ck.check(res.status == 0 and "ld_mid was not traced (breakpoint taken away" in res.err,
             f"{label}: the calls report does not warn about ld_mid\n{res.describe()}")
    ck.note(f"{label}: {hits} uprobe hits; {len(mid)} of {totals and totals.group(1)} calls traced, "
            f"{after} after the gap was found; the gap recorded and said")


def check_memtrace(ck, exe, tmp):
    label = "memtrace, uprobes on malloc and free"
    libdir, libc = h.private_libc(tmp)
    if not libc:
        ck.skip(label, "ldd names no libc.so.6")
        return
    outdir = os.path.join(tmp, "heap")
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    cmd = [h.functracer(), "-q", "-e", "memtrace", "-b", "4", "--uncompressed", "-o", outdir, exe, "-i",
           str(SECONDS)]
    probe = f'uprobe:"{libc}":malloc,uprobe:"{libc}":free {{ @n[probe] = count(); }}'
    got = run_with_uprobe(ck, label, cmd, probe, env=env)
    if got is None:
        return
    status, out, err, hits = got
    if not program_lines(ck, label, status, out, err):
        return
    for fn in ("malloc", "free"):
        ck.check(any(k.endswith(":" + fn) and v > 0 for k, v in hits.items()),
                 f"{label}: bpftrace counted no hit on {fn}: {hits}")
    counts = {}
    function = re.compile(r'function="(\w+)"')
    for path in h.trace_files(outdir):
        with open(path, errors="replace") as f:
            for line in f:
                p = line.split(" ", 4)
                if len(p) == 5 and p[3] in ("alloc", "free"):
                    m = function.match(p[4])
                    if m:
                        key = (int(p[1]), p[3], m.group(1))
                        counts[key] = counts.get(key, 0) + 1
    threads = 0
    for line in out.splitlines():
        if not line.startswith("thread "):
            continue
        fields = dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)
        tid = int(fields["tid"])
        threads += 1
        for fn, kind in (("malloc", "alloc"), ("calloc", "alloc"), ("realloc", "alloc"), ("free", "free")):
            ck.check_eq(counts.get((tid, kind, fn), 0), int(fields[fn]), f"{label}: thread {tid}'s {fn} calls")
    ck.check_eq(threads, 16, f"{label}: worker threads reported")
    ck.note(f"{label}: {hits} uprobe hits; every allocation and release traced")


def main():
    ck = h.Checker("uprobe-during-run")
    ok, why = h.bpftrace_usable()
    if not ok:
        ck.skip("uprobes during the run", why)
        ck.finish()
    exe = sys.argv[1]
    with h.TempDir(prefix="ft-uprobe-run-") as tmp:
        check_calltrace(ck, exe, tmp)
        check_breakpoint(ck, exe, tmp)
        check_memtrace(ck, exe, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

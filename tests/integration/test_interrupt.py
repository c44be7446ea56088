#!/usr/bin/env python3
"""functracer itself interrupted or killed at random moments (doc/functracer.1,
SIGNALS): the traced programs live on, or end the way they would without
functracer, and the traces written so far are readable.

usage: test_interrupt.py ATTACH_TARGET INTERRUPT_TARGET

The moments are drawn with a seeded random generator; the seed is printed, and
FT_SEED=N runs the same draw again.

  * attach: a busy 4-thread program (attach.c) is attached to again and again,
    with `at_*,malloc,free` or every function of libc traced, and functracer
    gets SIGINT or SIGTERM after a random delay: right after it starts (while
    it attaches and plants breakpoints) or amid heavy tracing. functracer exits
    0 (or, had the signal come before it could handle it, died of it without
    having touched the program), the program runs on and finishes with its own
    checks passed, and each trace reads as complete: every call closed,
    unwound frames with reason detach, a detach record at the end.
  * launch, handled: interrupt.c with SIGINT/SIGTERM handlers prints what it
    caught and how often, and exits 64+N; under functracer, with the signal sent
    to functracer alone or to the whole process group (functracer and program,
    as `kill -INT -PGID` or a shell's job control does), its output and status
    are those of an untraced run that gets the same signal the same way: it gets
    the signal exactly once.
  * launch, not handled: the program without handlers, functracer signalled at
    a random moment from its start on (also before the program runs): the program
    dies of the signal and functracer's status is 128+N, as for any death; a
    trace, when the program got to exec, is consistent (every call closed, the
    frames open at the end unwound with reason exit) and ends in a killed record.
  * SIGKILL: functracer killed at a random moment while tracing the program
    (with two plugins), and with -f while tracing a family of five processes;
    no process started under functracer is left, and each died of SIGKILL
    (PTRACE_O_EXITKILL, also on the children it traces), not of SIGTRAP at a
    breakpoint left in its code; every trace file present is read by dump, calls and
    leaks with one warning that it was cut short, holds a consistent record
    stream up to the cut, and holds records up to shortly before the kill (the
    writer flushes records older than 100 ms); a copy cut in the middle of a
    line is read too, with a warning.
"""

import ctypes
import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

# How far behind the kill the last record on disk may be: the writer's 100 ms,
# plus room for a busy machine (functracer descheduled between two flushes).
FLUSH_LAG_NS = 600_000_000
EXIT_TIMEOUT = 30
PR_SET_CHILD_SUBREAPER = 36


def popen(cmd, stdin=subprocess.DEVNULL, new_session=True):
    return subprocess.Popen([str(c) for c in cmd], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=h._child_setup,
                            start_new_session=new_session)


def status_of(proc):
    rc = proc.returncode
    return 128 - rc if rc < 0 else rc


def trace_files(outdir):
    if not os.path.isdir(outdir):
        return []
    return [os.path.join(outdir, f) for f in sorted(os.listdir(outdir)) if f.endswith(".trace")]


def session_members(sid):
    """Live (not zombie) processes of session sid."""
    return [(p, f[0]) for p, f in h.proc_stats() if len(f) > 3 and int(f[3]) == sid and f[0] != "Z"]


def reap_orphans(statuses):
    """The test is the subreaper of the programs functracer leaves: reaps them, and
    adds {pid: how it ended} to statuses."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = (f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
                         if os.WIFSIGNALED(status) else f"exit {os.waitstatus_to_exitcode(status)}")


def finish(proc, timeout=EXIT_TIMEOUT):
    """communicate() with a timeout; kills the session on timeout. (out, err, timed_out)"""
    try:
        out, err = proc.communicate(timeout=timeout)
        return out.decode(errors="replace"), err.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return out.decode(errors="replace"), err.decode(errors="replace"), True


def delay(rng, startup_share=0.35, short=0.05, long=1.2):
    """A random moment: in the first `short` seconds (starting, attaching, planting
    breakpoints) for a share of the rounds, otherwise anywhere up to `long`."""
    return rng.uniform(0, short) if rng.random() < startup_share else rng.uniform(short, long)


def consistent(ck, label, records, open_ok):
    """Structure of dump --json: balanced per thread. open_ok: calls still open at the
    end are allowed (a trace cut short)."""
    a = h.analyze(records)
    problems = [p for p in a.problems if not (open_ok and "never closed" in p)]
    if problems:
        ck.fail(f"{label}: {len(problems)} structural problem(s) in dump --json:\n  " +
                "\n  ".join(problems[:10]))
    return a


# --------------------------------------------------------------------------


def attach_rounds(ck, rng, binary, tmp, budget):
    print("=== attach: SIGINT/SIGTERM at random moments, while attaching and while tracing")
    rounds = 0
    for target_no in (1,):
        # About budget + 3 s untraced (1 ms sleep per iteration and thread): rounds
        # start while the target has well over two seconds of work left.
        iterations = int((budget + 3) * 1000)
        target = popen([binary, iterations], new_session=False)
        started = time.monotonic()
        try:
            line = target.stdout.readline().decode().strip()
            if not ck.check(line == "ready", f"attach: target did not start: {line!r}"):
                return
            while time.monotonic() - started < budget and target.poll() is None:
                rounds += 1
                sig = rng.choice((signal.SIGINT, signal.SIGTERM))
                patterns = rng.choice(("at_*,malloc,free", "*@libc.so,at_*"))
                wait = delay(rng, short=0.2)
                label = (f"attach round {rounds} ({signal.Signals(sig).name} after {wait * 1000:.0f} ms, "
                         f"-a {patterns})")
                outdir = os.path.join(tmp, f"attach-{rounds}")
                cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", patterns, "--uncompressed", "-o", outdir,
                       "-p", target.pid]
                tracer = popen(cmd)
                time.sleep(wait)
                tracer.send_signal(sig)
                sent = time.monotonic()
                _, err, timed_out = finish(tracer)
                status = status_of(tracer)
                files = trace_files(outdir)
                print(f"{label}: functracer status {status} {time.monotonic() - sent:.2f} s after the "
                      f"signal, {len(files)} trace file(s)")
                if not ck.check(not timed_out, f"{label}: functracer did not exit within "
                                f"{EXIT_TIMEOUT} s of the signal\ncommand: {h.fmt_cmd(cmd)}\n"
                                f"stderr: {err[-2000:]}"):
                    return
                if status == 128 + sig and not files:
                    print(f"{label}: the signal came before functracer could handle it; the target "
                          "was not touched")
                else:
                    ck.check_eq(status, 0, f"{label}: functracer exit status\ncommand: "
                                f"{h.fmt_cmd(cmd)}\nstderr: {err[-2000:]}")
                time.sleep(0.05)
                if not ck.check(target.poll() is None, f"{label}: target ended (status "
                                f"{target.returncode}); stderr of functracer: {err[-1000:]}"):
                    return
                if files:
                    check_detached_trace(ck, label, files, target.pid)
        finally:
            if target.poll() is None:
                out, err, timed_out = finish(target, timeout=120)
                ck.check(not timed_out, f"attach target {target_no}: did not finish (stopped?)")
            else:
                out, err = (s.decode(errors="replace") for s in target.communicate())
        ck.check_eq(status_of(target), 0, f"attach target {target_no}: exit status\nstdout: {out}\n"
                    f"stderr: {err}")
        ck.check(f"done iterations={iterations} threads=4" in out,
                 f"attach target {target_no}: did not finish its work: {out!r} {err!r}")
    print(f"attach: {rounds} rounds")
    ck.check(rounds >= 3, f"attach: only {rounds} rounds in {budget} s")


def check_detached_trace(ck, label, files, pid):
    if not ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
        return
    records = h.dump_records(ck, files)
    if not records:
        return
    consistent(ck, label, records, open_ok=False)
    types = [r.get("type") for r in records]
    ck.check(types[-1] == "detach", f"{label}: the trace does not end with a detach record: "
             f"...{types[-3:]}")
    reasons = {r.get("reason") for r in records if r.get("type") == "unwound"}
    ck.check(reasons <= {"detach"}, f"{label}: frames unwound for {reasons}, want only detach")
    ck.check(records[0].get("pid") == pid, f"{label}: trace of pid {records[0].get('pid')}, "
             f"want {pid}")


# --------------------------------------------------------------------------


def handled_rounds(ck, rng, binary, tmp):
    print("=== launch: a program that handles SIGINT/SIGTERM, with and without functracer")
    n = 0
    for sig in (signal.SIGINT, signal.SIGTERM):
        for to_group in (False, True):
            n += 1
            # Up to 0.2 s: the trace (about 1.5 million events a second) is read back whole.
            wait = rng.uniform(0.0, 0.2)
            how = "process group" if to_group else "functracer alone"
            label = f"handled {n} ({signal.Signals(sig).name} to the {how}, {wait * 1000:.0f} ms after ready)"
            results = []
            for traced in (False, True):
                outdir = os.path.join(tmp, f"handled-{n}")
                cmd = ([h.functracer(), "-q", "-e", "calltrace", "-a", "ir_*,malloc,free", "--uncompressed", "-o", outdir]
                       if traced else []) + [binary, "handler", 20]
                proc = popen(cmd)
                line = proc.stdout.readline().decode()
                time.sleep(wait)
                if to_group:
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)
                out, err, timed_out = finish(proc)
                results.append((line + out, status_of(proc)))
                ck.check(not timed_out, f"{label}: {'traced' if traced else 'untraced'} run did not "
                         f"end\ncommand: {h.fmt_cmd(cmd)}\nstderr: {err[-2000:]}")
                if traced:
                    files = trace_files(outdir)
                    if ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
                        records = h.dump_records(ck, files) or []
                        consistent(ck, label, records, open_ok=False)
                        ends = [(r.get("type"), r.get("status")) for r in records
                                if r.get("type") in ("exit", "killed", "detach")]
                        ck.check_eq(ends, [("exit", 64 + sig)], f"{label}: end records of the trace")
                        got = [r.get("signal") for r in records if r.get("type") == "signal"]
                        ck.check_eq(got, [sig], f"{label}: signals recorded in the trace")
            print(f"{label}: untraced {results[0]}, traced {results[1]}")
            want = (f"ready\ncaught {signal.Signals(sig).name} count=1\n", 64 + sig)
            ck.check_eq(results[0], want, f"{label}: the untraced run (the oracle itself)")
            ck.check_eq(results[1], results[0], f"{label}: traced run (stdout, status) differs "
                        "from the untraced one")


def unhandled_rounds(ck, rng, binary, tmp, rounds):
    print("=== launch: a program without handlers, functracer signalled at random moments")
    for n in range(1, rounds + 1):
        sig = rng.choice((signal.SIGINT, signal.SIGTERM))
        # Up to 0.4 s: the trace (about 1.5 million events a second) is read back whole.
        wait = delay(rng, startup_share=0.4, short=0.1, long=0.4)
        label = f"unhandled {n} ({signal.Signals(sig).name} after {wait * 1000:.0f} ms)"
        outdir = os.path.join(tmp, f"unhandled-{n}")
        cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", "ir_*,malloc,free", "--uncompressed", "-o", outdir,
               binary, "plain", 8]
        proc = popen(cmd)
        time.sleep(wait)
        proc.send_signal(sig)
        out, err, timed_out = finish(proc)
        status = status_of(proc)
        files = trace_files(outdir)
        print(f"{label}: status {status}, stdout {out!r}, {len(files)} trace file(s)")
        if not ck.check(not timed_out, f"{label}: functracer did not end\ncommand: {h.fmt_cmd(cmd)}\n"
                        f"stderr: {err[-2000:]}"):
            continue
        ck.check_eq(status, 128 + sig, f"{label}: exit status\ncommand: {h.fmt_cmd(cmd)}\n"
                    f"stderr: {err[-2000:]}")
        ck.check("done" not in out, f"{label}: the program did not get the signal: {out!r}")
        if not files:
            continue
        records = h.dump_records(ck, files) or []
        consistent(ck, label, records, open_ok=False)
        if records:
            ends = [(r.get("type"), r.get("signal")) for r in records
                    if r.get("type") in ("exit", "killed", "detach")]
            ck.check_eq(ends, [("killed", sig)], f"{label}: end records of the trace")
            reasons = {r.get("reason") for r in records if r.get("type") == "unwound"}
            ck.check(reasons <= {"exit"}, f"{label}: frames unwound for {reasons}, want exit")


# --------------------------------------------------------------------------


def postproc_warns(ck, label, args, paths):
    """Runs a report on traces that were cut short: it works, and says so in one
    warning line per file."""
    res = h.run_postproc(args + paths)
    ok = ck.check(res.status == 0 and not res.timed_out,
                  f"{label}: {args[0]} failed\n{res.describe()}")
    warnings = [line for line in res.err.splitlines() if "warning" in line]
    for path in paths:
        cut = [w for w in warnings if os.path.basename(path) + ":" in w and
               ("cut short" in w or "without an exit" in w)]
        ck.check(len(cut) == 1, f"{label}: {args[0]}: want one warning naming "
                 f"{os.path.basename(path)} and saying it was cut short, got {cut}\n{res.describe()}")
    return res if ok else None


def check_killed_trace(ck, label, path, killed_ns, follow):
    """dump --json of one trace of a killed functracer; its records, or None."""
    name = os.path.basename(path)
    if not ck.check(os.path.getsize(path) > 0, f"{label}: {name} is empty"):
        return None
    res = postproc_warns(ck, f"{label}: {name}", ["dump", "--json"], [path])
    if res is None:
        return None
    records = []
    for line in res.out.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            ck.fail(f"{label}: {name}: dump --json line is not JSON: {line[:200]!r}")
            return None
    consistent(ck, f"{label}: {name}", records, open_ok=True)
    ck.check(not any(r.get("type") in ("exit", "killed", "detach") for r in records),
             f"{label}: {name} has an end record, but functracer was killed")
    # Records reach the disk within the writer's bound: the program calls traced
    # functions all the time. (Without -f: a child of the family may have been
    # created just before the kill and made no record yet.)
    calls = [r for r in records if r.get("type") in ("call", "return", "alloc", "free")]
    if calls and not follow:
        lag = killed_ns - max(int(r["ts_ns"]) for r in records)
        print(f"{label}: {name}: {len(records)} records, the last one {lag / 1e6:.1f} ms before the kill")
        ck.check(lag <= FLUSH_LAG_NS, f"{label}: {name}: the last record on disk is {lag / 1e6:.0f} ms "
                 f"older than the kill (want at most {FLUSH_LAG_NS / 1e6:.0f} ms)")
    return records


def check_reports(ck, label, files):
    """calls and leaks on all the traces of a killed functracer at once."""
    res = postproc_warns(ck, label, ["calls", "--json"], files)
    if res is not None:
        try:
            ck.check("functions" in json.loads(res.out), f"{label}: calls --json lacks functions")
        except ValueError:
            ck.fail(f"{label}: calls --json is not JSON\n{res.describe()}")
    res = postproc_warns(ck, label, ["leaks", "--json"], files)
    if res is not None:
        try:
            ck.check("leaked_bytes" in json.loads(res.out), f"{label}: leaks --json lacks leaked_bytes")
        except ValueError:
            ck.fail(f"{label}: leaks --json is not JSON\n{res.describe()}")


def sigkill_rounds(ck, rng, binary, tmp, rounds):
    print("=== SIGKILL at random moments: launched programs and their traced children die too")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    cut_checked = False
    for n in range(1, rounds + 1):
        follow = n % 2 == 0
        # Up to 0.45 s (the program is ready after 0.1-0.2 s): each trace is read back
        # whole (dump --json, reports), and the program records about 1.5 million
        # events a second on the in-process recorder.
        wait = delay(rng, startup_share=0.3, short=0.05, long=0.45)
        label = f"sigkill {n} ({'-f family' if follow else 'program'}, after {wait * 1000:.0f} ms)"
        outdir = os.path.join(tmp, f"sigkill-{n}")
        cmd = [h.functracer(), "-q", "-e", "calltrace", "-e", "memtrace", "-a", "ir_*", "--uncompressed", "-o", outdir]
        cmd += ["-f", binary, "family", 30] if follow else [binary, "plain", 30]
        proc = popen(cmd)
        time.sleep(wait)
        proc.kill()
        killed_ns = time.monotonic_ns()
        out, err, _ = finish(proc)
        sid = proc.pid
        deadline = time.monotonic() + 5
        ended = {}
        left = session_members(sid)
        while left and time.monotonic() < deadline:
            time.sleep(0.02)
            reap_orphans(ended)
            left = session_members(sid)
        reap_orphans(ended)
        files = trace_files(outdir)
        print(f"{label}: {len(files)} trace file(s), stdout {out.strip()[:80]!r}, "
              f"the programs: {sorted(set(ended.values()))}")
        ck.check(not left, f"{label}: processes left running after functracer was killed: {left}")
        # Killed by the kernel with functracer (PTRACE_O_EXITKILL), not let go to die
        # of a breakpoint left in their code (SIGTRAP).
        ck.check(all(v == "killed by SIGKILL" for v in ended.values()),
                 f"{label}: the programs did not die of SIGKILL with functracer: {ended}")
        ck.check("done" not in out, f"{label}: the program ran to its end: {out!r}")
        for f in files:
            records = check_killed_trace(ck, label, f, killed_ns, follow)
            if records and not cut_checked and os.path.getsize(f) > 4096:
                cut_checked = True
                cut_mid_line(ck, label, f, len(records))
        if files:
            check_reports(ck, label, files)
    ck.check(cut_checked, "sigkill: no trace was large enough to cut in the middle of a line")


def cut_mid_line(ck, label, path, nrecords):
    data = open(path, "rb").read()
    at = data.rfind(b"\n", 0, len(data) // 2) + 5  # a few bytes into a line
    cut = path + ".cut.trace"
    with open(cut, "wb") as f:
        f.write(data[:at])
    res = postproc_warns(ck, f"{label}: cut mid-line", ["dump", "--json"], [cut])
    if res is not None:
        n = len(res.out.splitlines())
        ck.check(0 < n < nrecords, f"{label}: cut mid-line: {n} records of {nrecords}")
        ck.check(any("incomplete" in line for line in res.err.splitlines()),
                 f"{label}: cut mid-line: no warning about the incomplete line\n{res.describe()}")
    os.unlink(cut)


def main():
    attach_binary = os.path.abspath(sys.argv[1])
    binary = os.path.abspath(sys.argv[2])
    seed = int(os.environ.get("FT_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"seed {seed} (FT_SEED={seed} repeats this run)")
    rng = random.Random(seed)
    ck = h.Checker("interrupt")
    start = time.monotonic()
    # The rounds that read a heavily traced program's trace back whole, four by
    # default and eight under FT_FULL=1 (tests/README.md): each is a fresh random
    # moment for the same checks.
    heavy = 8 if h.FULL else 4
    with h.TempDir() as tmp:
        for part in (lambda: attach_rounds(ck, rng, attach_binary, tmp, budget=6),
                     lambda: handled_rounds(ck, rng, binary, tmp),
                     lambda: unhandled_rounds(ck, rng, binary, tmp, rounds=heavy),
                     lambda: sigkill_rounds(ck, rng, binary, tmp, rounds=heavy)):
            began = time.monotonic()
            part()
            print(f"({time.monotonic() - began:.1f} s)")
    print(f"seed {seed}, {time.monotonic() - start:.1f} s")
    ck.finish()


if __name__ == "__main__":
    main()

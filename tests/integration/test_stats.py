#!/usr/bin/env python3
"""--stats prints events, stops and time per event (design §3 "Count stops").

usage: test_stats.py RECURSION_EXECUTABLE

fib(18) (8361 calls) traced with calltrace, twice:
  * by default, calls recorded in the traced process (doc/internals.md §8b): the
    summary says fib's entry was patched and that every call and return was
    recorded in the process (but the first, where the thread gets its buffer); the stops are those of the run's control (exec,
    libraries, exit), a few dozen, not one per call;
  * with FT_FAST_PATH=0, a stop per entry (the return is handled in the process,
    §8a): at least one stop per call, never more than two.
Both runs give the untraced program's stdout and at least two events per call."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

N = 18  # fib(18): 8361 calls


def number_near(text, word):
    """The integer printed next to `word` ("stops: 123", "123 stops", "stops=123")."""
    m = re.search(r"([0-9][0-9,]*)\s+(?:[a-z-]+\s+)?" + word, text, re.I)
    if not m:
        m = re.search(r"\b" + word + r"\w*\s*[:=]\s*([0-9][0-9,]*)", text, re.I)
    return int(m.group(1).replace(",", "")) if m else None


CALL_LINE = re.compile(r"(\d+) function entries patched for the in-process recorder, (\d+) kept a breakpoint; "
                       r"(\d+) calls and (\d+) returns recorded in the process, (\d+) lost to full buffers")


def traced(ck, label, binary, fast, expected_stdout, calls, tmp):
    """Runs fib(N) under calltrace --stats; (stops, recorder line match or None)."""
    env = dict(os.environ)
    if fast:
        env.pop("FT_FAST_PATH", None)  # the default
    else:
        env["FT_FAST_PATH"] = "0"
    out = os.path.join(tmp, label)
    res = h.run([h.functracer(), "-q", "-e", "calltrace", "-a", "fib", "--uncompressed", "-o", out, "--stats",
                 binary, str(N)], timeout=h.TRACED_TIMEOUT, env=env)
    print(f"{label}:\n{res.describe()}")
    ck.check_eq(res.status, 0, f"{label}: exit status with --stats")
    ck.check_eq(res.stdout, expected_stdout, f"{label}: stdout with --stats")
    err = res.err
    ck.check(err.strip(), f"{label}: -q --stats printed no summary on stderr")
    events = number_near(err, "events")
    stops = number_near(err, "stops")
    ck.check(events is not None, f"{label}: no event count in the --stats summary: {err!r}")
    ck.check(stops is not None, f"{label}: no stop count in the --stats summary: {err!r}")
    ck.check(re.search(r"(µs|us|usec)", err), f"{label}: no time per event in the summary: {err!r}")
    if events is not None:
        ck.check(events >= 2 * calls, f"{label}: {events} events for {calls} calls (each has a call and a return)")
    if stops is not None:
        print(f"{label}: {calls} traced calls: {stops} stops, {stops / calls:.3f} stops per call, "
              f"{res.seconds / calls * 1e6:.1f} µs per call (wall)")
    return stops, CALL_LINE.search(err)


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("stats")
    untraced = h.run([binary, str(N)])
    calls = h.parse_expectations(untraced.out).calls["fib"]
    with h.TempDir() as tmp:
        stops, rec = traced(ck, "in process (default)", binary, True, untraced.stdout, calls, tmp)
        if ck.check(rec, "default run: no line about the in-process recorder in --stats"):
            patched, kept, rcalls, rreturns, lost = map(int, rec.groups())
            ck.check_eq((patched, kept), (1, 0), "default run: fib patched, (patched, kept a breakpoint)")
            # A thread's first call takes a stop (it gets its ring there).
            ck.check(calls - 10 <= rcalls <= calls and calls - 10 <= rreturns <= calls,
                     f"default run: {rcalls} calls and {rreturns} returns of {calls} recorded in the process")
            ck.check_eq(lost, 0, "default run: records lost to full buffers")
        if stops is not None:
            ck.check(stops <= 100, f"default run: {stops} stops for {calls} calls recorded in the process")
        stops, rec = traced(ck, "stop per entry (FT_FAST_PATH=0)", binary, False, untraced.stdout, calls, tmp)
        ck.check(rec is None, "FT_FAST_PATH=0: functions were patched for the in-process recorder")
        if stops is not None:
            ck.check(stops >= calls, f"FT_FAST_PATH=0: {stops} stops cannot cover {calls} entry breakpoints")
            ck.check(stops <= 2 * calls + 500,
                     f"FT_FAST_PATH=0: {stops} stops for {calls} calls: more than two stops per traced call")
    ck.finish()


if __name__ == "__main__":
    main()

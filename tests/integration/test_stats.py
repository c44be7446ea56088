#!/usr/bin/env python3
"""--stats prints events, stops and time per event; a traced call should cost
two ptrace stops (entry and return, design §3 "Count stops").

usage: test_stats.py RECURSION_EXECUTABLE"""

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


def main():
    binary = os.path.abspath(sys.argv[1])
    ck = h.Checker("stats")
    untraced = h.run([binary, str(N)])
    calls = h.parse_expectations(untraced.out).calls["fib"]
    with h.TempDir() as tmp:
        tr = h.trace([binary, str(N)], "fib", os.path.join(tmp, "out"), extra=["--stats"])
        res = tr.result
        print(res.describe())
        ck.check_eq(res.status, 0, "exit status with --stats")
        ck.check_eq(res.stdout, untraced.stdout, "stdout with --stats")
        err = res.err
        ck.check(err.strip(), "-q --stats printed no summary on stderr")
        events = number_near(err, "events")
        stops = number_near(err, "stops")
        ck.check(events is not None, f"no event count in the --stats summary: {err!r}")
        ck.check(stops is not None, f"no stop count in the --stats summary: {err!r}")
        ck.check(re.search(r"(µs|us|usec)", err), f"no time per event in the summary: {err!r}")
        if events is not None:
            ck.check(events >= 2 * calls,
                     f"{events} events for {calls} calls (each has a call and a return event)")
        if stops is not None:
            per_call = stops / calls
            print(f"{calls} traced calls: {stops} stops, {per_call:.3f} stops per call, "
                  f"{res.seconds / calls * 1e6:.1f} µs per call (wall)")
            ck.check(stops >= calls, f"{stops} stops cannot cover {calls} entry breakpoints")
            ck.check(stops <= 2 * calls + 500,
                     f"{stops} stops for {calls} calls: more than two stops per traced call")
    ck.finish()


if __name__ == "__main__":
    main()

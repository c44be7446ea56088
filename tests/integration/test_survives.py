#!/usr/bin/env python3
"""Programs that are hard on the return trampoline run under tracing exactly as
without, and every call is in the trace: frames suspended and resumed
(tests/progs/coroutine.c), or every function of every library traced ('*') under
C++ exceptions, where the unwinder's own functions are traced too.

usage: test_survives.py EXECUTABLE PATTERNS

Checked: stdout and exit status identical to an untraced run; the trace's call
records for each function of the program's own "calls NAME=N" line equal N; every call is
closed (by a return or an unwound record). How suspended frames are classified is
not checked: the tracer cannot tell a suspended stack from an abandoned one.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402


def main():
    ck = h.Checker("survives")
    binary, patterns = os.path.abspath(sys.argv[1]), sys.argv[2]
    ft, pp = h.functracer(), h.postproc()
    plain = h.run([binary])
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        traced = h.run([ft, "-q", "-a", patterns, "--uncompressed", "-o", out, binary])
        ck.check(traced.status == plain.status and traced.out == plain.out,
                 f"traced run differs\n--- untraced\n{plain.describe()}\n--- traced\n{traced.describe()}")
        want = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)",
                    next((l for l in plain.out.splitlines() if l.startswith("calls ")), "")))
        traces = [os.path.join(out, f) for f in sorted(os.listdir(out))]
        dump = h.run([pp, "dump", "--json"] + traces)
        ck.check(dump.status == 0, f"dump failed\n{dump.describe()}")
        import json
        calls, closes = {}, 0
        for line in dump.out.splitlines():
            r = json.loads(line)
            if r["type"] == "call":
                name = h.base_name(h.record_function(r))
                calls[name] = calls.get(name, 0) + 1
            elif r["type"] in ("return", "unwound"):
                closes += 1
        got = {k: calls.get(k, 0) for k in want}
        ck.check(got == want, f"calls in the trace {got}, the program counted {want}")
        ck.check(closes == sum(calls.values()), f"{sum(calls.values())} calls but {closes} returns/unwound")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""calltrace without -a traces every function defined in the executable.

usage: test_trace_all.py EXECUTABLE [ARGS...]

The program must behave exactly as untraced; its own counts must show up in the
trace, main must be called once, and every thread must be balanced. For a static
executable "every function defined in the executable" includes all of libc."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402


def main():
    binary, args = os.path.abspath(sys.argv[1]), sys.argv[2:]
    label = os.path.basename(binary) + " (no -a)"
    ck = h.Checker(label)
    untraced = h.run([binary] + args)
    exp = h.parse_expectations(untraced.out)
    if not ck.check(exp.calls, f"no 'calls' line\n{untraced.describe()}"):
        ck.finish()
    with h.TempDir() as tmp:
        tr = h.trace([binary] + args, None, os.path.join(tmp, "out"))
        res = tr.result
        print(f"traced in {res.seconds:.2f}s")
        ck.check(not res.timed_out, f"{label}: timed out\n{res.describe()}")
        ck.check_eq(res.status, untraced.status, f"{label}: exit status\n{res.describe()}")
        ck.check(res.stdout == untraced.stdout,
                 f"{label}: stdout differs\n--- untraced ---\n{untraced.out}\n{res.describe()}")
        ck.check(res.stderr == untraced.stderr,
                 f"{label}: stderr differs\n--- untraced ---\n{untraced.err}\n{res.describe()}")
        if ck.check(tr.files, f"{label}: no trace file\n{res.describe()}"):
            records = h.dump_records(ck, tr.files)
            if records is not None:
                a = h.analyze(records)
                h.report_problems(ck, a, label)
                print(f"dump: {len(records)} records, {len(a.calls)} distinct functions called")
                for n, want in exp.calls.items():
                    ck.check_eq(a.calls[n], want, f"{label}: call records of {n}")
                ck.check_eq(a.calls["main"], 1, f"{label}: call records of main")
                for reason, per in exp.unwound.items():
                    for n, want in per.items():
                        got = sum(a.unwound[r][n] for r in reason.split("|"))
                        ck.check_eq(got, want, f"{label}: unwound {reason} {n}")
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Structure arguments with DWARF, one level deep (tests/progs/structs.cc).

usage: test_structs.py EXECUTABLE

The program prints "expect FUNCTION ARGUMENTS" for each traced call, the arguments
written from its own values: a C struct by pointer (&{...}) and by value in two
registers ({...}), NULL and a pointer that cannot be read (shown as pointers), a C++
method's `this`, and std::string by value, reference and pointer (its text). With
--struct-depth=1 the live call log and functracer-postproc tree (and tree --json's
argument list) must show exactly these; without it, the same calls show plain
pointers.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

PATTERNS = "st_*,Counter::add*"


def expectations(stdout):
    out = []
    for line in stdout.splitlines():
        if line.startswith("expect "):
            _, fn, args = line.split(" ", 2)
            out.append((fn, args))
    return out


def json_calls(nodes):
    for n in nodes:
        if "function" in n:
            yield n
        yield from json_calls(n.get("calls", []))


def main():
    ck = h.Checker("structs")
    binary = os.path.abspath(sys.argv[1])
    ft = h.functracer()
    pp = h.postproc()
    plain = h.run([binary])
    ck.check(plain.status == 0, f"the program failed on its own\n{plain.describe()}")
    expected = expectations(plain.out)
    ck.check(len(expected) == 8, f"the program printed {len(expected)} expectations\n{plain.out}")

    live = h.run([ft, "--struct-depth=1", "-a", PATTERNS, binary])
    ck.check(live.status == 0, f"live run failed\n{live.describe()}")
    ck.check(live.out == plain.out, "the traced program printed something else")
    for fn, args in expected:
        want = f"{fn}({args})"
        ck.check(any(want in l for l in live.err.splitlines()), f"live call log lacks {want!r}\n{live.err}")

    # Without the option: no member is read; the pointer is shown.
    off = h.run([ft, "-a", PATTERNS, binary])
    ck.check(off.status == 0, f"run without --struct-depth failed\n{off.describe()}")
    ck.check("{x=" not in off.err and "st_point_by_pointer(0x" in off.err,
             f"without --struct-depth the struct pointer should be a plain pointer\n{off.err}")

    bad = h.run([ft, "--struct-depth=2", "-a", PATTERNS, binary])
    ck.check(bad.status == 2 and "structure depth" in bad.err, f"--struct-depth=2 accepted\n{bad.describe()}")

    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        res = h.run([ft, "-q", "--struct-depth=1", "-a", PATTERNS, "--uncompressed", "-o", out, binary])
        ck.check(res.status == 0, f"traced run failed\n{res.describe()}")
        traces = [os.path.join(out, f) for f in sorted(os.listdir(out))]
        tree = h.run([pp, "tree", "--no-callsite"] + traces)
        ck.check(tree.status == 0, f"tree failed\n{tree.describe()}")
        # The trace does not record parameter names: tree shows `this` without its label.
        expected = [(fn, args.replace("this=", "")) for fn, args in expected]
        for fn, args in expected:
            want = f"{fn}({args})"
            ck.check(any(want in l for l in tree.out.splitlines()), f"tree lacks {want!r}\n{tree.out}")
        tj = h.run([pp, "tree", "--json"] + traces)
        ck.check(tj.status == 0, f"tree --json failed\n{tj.describe()}")
        if tj.status == 0:
            calls = list(json_calls(json.loads(tj.out)["processes"][0]["threads"][0]["calls"]))
            by_fn = {c["function"]: c for c in calls}
            for fn, args in expected:
                c = by_fn.get(fn)
                ck.check(c is not None, f"tree --json lacks {fn}")
                if c is None:
                    continue
                values = ", ".join(a["value"] for a in c.get("arglist", []))
                ck.check(values == args, f"tree --json arglist of {fn}: {values!r}, expected {args!r}")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

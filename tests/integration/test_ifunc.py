#!/usr/bin/env python3
"""IFUNCs are traced at the implementation their resolver picked, under their own
name, for calls from the program and calls inside the library alike.

usage: test_ifunc.py EXECUTABLE [LIBRARY]

EXECUTABLE is tests/progs/ifuncs.c in one build variant; LIBRARY its dlopen'd
library with an IFUNC of its own (dynamic builds). The program is run with two
values of N under `-a strlen,memcpy,if_twice,if_lib_add`. Checks:
  * traced and untraced runs print the same and exit 0;
  * if_twice and if_lib_add (nobody else calls them) are traced exactly N times;
  * strlen and memcpy are traced 2 N times more per extra N: once through the
    pointer, once inside strdup (libc's own call); libc's other calls of them
    (start-up, stdio) are the same in both runs and cancel out;
  * the traced strlen is not at the address of the strlen symbol (the resolver).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

PATTERNS = "strlen,memcpy,if_twice,if_lib_add"
N1, N2 = 40, 140


def libc_strlen_resolver(path):
    out = h.run(["nm", "-D", path]).out
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "i" and parts[2].split("@")[0] == "strlen":
            return int(parts[0], 16)
    return None


def traced_counts(ck, label, args, tmp):
    outdir = os.path.join(tmp, label)
    plain = h.run(args)
    run = h.trace(args, patterns=PATTERNS, outdir=outdir)
    res = run.result
    ck.check_eq((res.status, res.out), (plain.status, plain.out),
                f"{label}: traced run differs from the untraced one\n{res.describe()}")
    ck.check_eq(plain.status, 0, f"{label}: untraced status\n{plain.describe()}")
    files = [os.path.join(outdir, f) for f in os.listdir(outdir) if f.endswith(".trace")]
    records = h.dump_records(ck, files)
    if records is None:
        return None, None
    a = h.analyze(records)
    h.report_problems(ck, a, label)
    return a, records


def main():
    binary = os.path.abspath(sys.argv[1])
    lib = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
    ck = h.Checker("ifunc " + os.path.basename(binary))
    with h.TempDir() as tmp:
        got = {}
        for n in (N1, N2):
            args = [binary, str(n)] + ([lib] if lib else [])
            a, records = traced_counts(ck, f"N={n}", args, tmp)
            if a is None:
                ck.finish()
                return
            got[n] = a
            print(f"N={n}: " + ", ".join(f"{f}={a.calls[f]}" for f in PATTERNS.split(",")))
            ck.check_eq(a.calls["if_twice"], n, f"N={n}: calls of if_twice (the program's IFUNC)")
            if lib:
                ck.check_eq(a.calls["if_lib_add"], n, f"N={n}: calls of if_lib_add (IFUNC of a dlopen'd library)")
            for f in ("strlen", "memcpy"):
                ck.check(a.calls[f] >= 2 * n, f"N={n}: {a.calls[f]} calls of {f}, want at least {2 * n}")
            if n == N1:
                check_address(ck, records)
        for f in ("strlen", "memcpy"):
            ck.check_eq(got[N2].calls[f] - got[N1].calls[f], 2 * (N2 - N1),
                        f"calls of {f} added by {N2 - N1} more iterations")
    ck.finish()


def check_address(ck, records):
    """The breakpoint is on the implementation, not on the resolver."""
    calls = [r for r in records if r.get("type") == "call" and r.get("function") == "strlen"]
    mods = [r for r in records if r.get("type") == "module"]
    if not calls:
        return
    addr = int(str(calls[0]["address"]), 0)
    home = None
    for m in mods:
        if int(str(m["base"]), 0) <= addr < int(str(m["end"]), 0):
            home = m
    if not ck.check(home is not None, f"strlen at {addr:#x} is in no module"):
        return
    path = home["path"]
    if "libc" not in os.path.basename(path):
        return  # static: strlen lives in the program
    resolver = libc_strlen_resolver(path)
    if resolver is not None:
        offset = addr - int(str(home["base"]), 0)
        ck.check(offset != resolver, f"strlen traced at the resolver ({resolver:#x}), not the implementation")
        print(f"strlen traced at {path}+{offset:#x}; its resolver is at {resolver:#x}")


if __name__ == "__main__":
    main()

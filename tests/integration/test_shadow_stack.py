#!/usr/bin/env python3
"""A program marked for a shadow stack (x86 CET) under functracer.

usage: test_shadow_stack.py SHSTK_PROGRAM

tests/progs/shstk.c is built with -fcf-protection=full and linked with -z shstk;
each of its traced functions checks that its return address is in the program's
own code, as a return checked against a shadow stack would, and the program fails
when one is not. glibc turns the shadow stack on for such a program when the kernel
offers shadow stacks (the user_shstk flag of /proc/cpuinfo); FT_ASSUME_SHADOW_STACKS=1
makes functracer assume it does on this machine too.

- With the assumption (or on a machine that offers shadow stacks): functracer says
  once that the process will run with a shadow stack, catches the returns at their
  sites, and the program's output and exit status are the untraced run's; the
  calls per function are the program's own counts and every call is closed by its
  return, in LIFO order.
- Without it, on a machine that offers none: the stack mode replaces return
  addresses, and the program's own check sees it (it exits 1): the check works.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

SAID = "with a shadow stack (x86 CET"


def kernel_offers_shadow_stacks():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return "user_shstk" in line.split()
    return False


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    exe = os.path.abspath(sys.argv[1])
    ck = h.Checker("shadow-stack")
    untraced = h.run([exe])
    if not ck.check(untraced.status == 0, f"untraced run failed\n{untraced.describe()}"):
        return ck.finish()
    exp = h.parse_expectations(untraced.out)

    os.environ["FT_ASSUME_SHADOW_STACKS"] = "1"
    with h.TempDir() as tmp:
        outdir = os.path.join(tmp, "traces")
        res = h.trace([exe], "sk_*", outdir, quiet=False).result
        said = [line for line in res.err.splitlines() if SAID in line]
        ck.check(len(said) == 1 and "will run" in said[0] and "return instructions" in said[0],
                 f"want one line saying the process will run with a shadow stack, got {said}\n{res.describe()}")
        ck.check(res.status == 0 and res.stdout == untraced.stdout and not res.timed_out,
                 f"traced run differs from the untraced one\nuntraced:\n{untraced.describe(1500)}\n"
                 f"traced:\n{res.describe(1500)}")
        files = h.trace_files(outdir)
        records = h.dump_records(ck, files) if ck.check(len(files) == 1, f"want one trace file, got {files}") else None
    if records is not None:
        a = h.analyze(records)
        h.report_problems(ck, a, "shadow-stack")
        calls = collections.Counter(h.record_function(r) for r in records if r.get("type") == "call")
        for name, want in exp.calls.items():
            ck.check_eq(calls[name], want, f"calls of {name}")
        unwound = [r for r in records if r.get("type") == "unwound"]
        ck.check(not unwound, f"frames left without returning: {unwound[:5]}")
        print(f"with a shadow stack: {sum(calls.values())} calls, returns caught at their sites")

    del os.environ["FT_ASSUME_SHADOW_STACKS"]
    if kernel_offers_shadow_stacks():
        print("this kernel offers shadow stacks: the stack mode is not tried")
    else:
        res = h.trace([exe], "sk_*", None).result
        ck.check(res.status == 1 and b"is not in the program's code" in res.stderr,
                 f"the stack mode should replace return addresses, which the program sees\n{res.describe()}")
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

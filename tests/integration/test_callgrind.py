#!/usr/bin/env python3
"""The callgrind report, read by valgrind's callgrind_annotate.

usage: test_callgrind.py RECURSION MUTUAL LIBCHAIN

Each program is traced with calltrace on its own functions (libchain: also those of
its two libraries), `functracer-postproc callgrind` writes the profile, and
callgrind_annotate reads it. Oracles, none of them from functracer-postproc:

  * callgrind_annotate parses the file: exit status 0, no warning about a malformed
    line;
  * its PROGRAM TOTALS equal the sum of the self times of every activation, replayed
    here from the raw trace records (tracefile.py);
  * with --inclusive=yes, each function's cost equals its wall time replayed from the
    raw records: the inclusive times of its outermost activations (recursion not
    counted twice);
  * with --tree=caller, the call counts into each function, summed over its callers,
    equal the program's own counts (it prints them), recursive calls included;
  * the file of each function is the one addr2line gives for the function's address
    in its module file (the address from nm);
  * two runs of mutual in one profile: totals and call counts add up.
"""

import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

PROGRAMS = [
    # (argv index, patterns, function -> name of its count in the program's output)
    ("recursion", "fib,rec_deep,rec_hidden_helper",
     {"fib": "fib", "rec_deep": "rec_deep", "rec_hidden_helper": "rec_hidden_helper"}),
    ("mutual", "is_even,is_odd", {"is_even": "is_even", "is_odd": "is_odd"}),
    ("libchain", "lc_main,lca_*,lcb_*",
     {f: f for f in ["lc_main", "lca_run", "lca_step", "lca_leaf", "lcb_mix", "lcb_fold",
                     "lcb_apply"]}),
]


def replay(files):
    """Per function: calls, self ns, wall ns (outermost activations); total self."""
    calls = collections.Counter()
    self_ns = collections.Counter()
    wall_ns = collections.Counter()
    for path in files:
        stacks = collections.defaultdict(list)  # tid -> [[fn, call ts, children ns]]
        last_ts = 0

        def close(tid, ts):
            fn, start, children = stacks[tid].pop()
            incl = max(ts - start, 0)
            self_ns[fn] += max(incl - children, 0)
            if all(f[0] != fn for f in stacks[tid]):
                wall_ns[fn] += incl
            if stacks[tid]:
                stacks[tid][-1][2] += incl

        for r in parse_trace(path):
            last_ts = max(last_ts, r["ts"])
            if r["type"] == "call":
                calls[r["function"]] += 1
                stacks[r["tid"]].append([r["function"], r["ts"], 0])
            elif r["type"] in ("return", "unwound"):
                close(r["tid"], r["ts"])
            elif r["type"] == "thread_exit":
                while stacks[r["tid"]]:
                    close(r["tid"], r["ts"])
            elif r["type"] in ("exit", "killed", "exec", "detach"):
                for tid in list(stacks):
                    while stacks[tid]:
                        close(tid, r["ts"])
        for tid in list(stacks):
            while stacks[tid]:
                close(tid, last_ts)
    return calls, self_ns, wall_ns, sum(self_ns.values())


def number(s):
    return int(s.replace(",", ""))


# "1,234  /path/file.c:fib [/path/module]" (the object part is optional)
FN_LINE = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*([\d.]+%)\)\s+)?(\S.*?):(\S+?)(?:\s+\[(.*)\])?\s*$")


def annotate(ck, profile, *extra):
    # Run where no source file lies below: callgrind_annotate shortens fl= names that
    # start with the current directory, but not cfl= names, and then takes a function
    # and its callers' view of it for two different functions.
    res = h.run(["callgrind_annotate", "--threshold=100", *extra, profile],
                cwd=os.path.dirname(profile))
    ok = ck.check(res.status == 0, f"callgrind_annotate {' '.join(extra)} failed\n"
                  f"{res.describe()}")
    ck.check("WARNING" not in res.err,
             f"callgrind_annotate {' '.join(extra)} warns about our file\n{res.describe()}")
    return res.out if ok else ""


def totals(text):
    m = re.search(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?PROGRAM TOTALS", text, re.M)
    return number(m.group(1)) if m else None


def function_costs(text):
    """{function: (cost, file)} from the function list of callgrind_annotate."""
    out = {}
    lines = text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if "file:function" in l)
    except StopIteration:
        return out
    for line in lines[start + 2:]:
        if line.startswith("---") or "Auto-annotated source" in line:
            break
        m = FN_LINE.match(line)
        if m:
            out[m.group(4)] = (number(m.group(1)), m.group(3))
    return out


def tree_callers(text):
    """{function: {caller: calls}} from callgrind_annotate --tree=caller."""
    out = collections.defaultdict(dict)
    pending = []
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?<\s+(\S.*?):(.+?)\s+\(([\d,]+)x\)",
                     line)
        if m:
            pending.append((m.group(3), number(m.group(4))))
            continue
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?\*\s+(\S.*?):(.+?)(?:\s+\[.*\])?\s*$",
                     line)
        if m:
            fn = m.group(3)
            for caller, n in pending:
                out[fn][caller] = out[fn].get(caller, 0) + n
            pending = []
            continue
        if not line.strip():
            pending = []
    return out


def nm_address(module, fn):
    res = h.run(["nm", "--defined-only", module])
    for line in res.out.splitlines():
        w = line.split()
        if len(w) == 3 and w[2] == fn and w[1] in "tT":
            return int(w[0], 16)
    return None


def addr2line_file(module, address):
    res = h.run(["addr2line", "-e", module, hex(address)])
    return res.out.strip().rsplit(":", 1)[0]


def module_of(records, fn):
    """The module file of a traced function: the module record its address lies in."""
    call = next(r for r in records if r["type"] == "call" and r["function"] == fn)
    for r in records:
        if r["type"] == "module" and r["base"] <= call["address"] < r["end"]:
            found = r["path"]
    return found


def check_program(ck, name, exe, patterns, counted, work):
    untraced = h.run([exe])
    ck.check(untraced.status == 0, f"{name} failed untraced\n{untraced.describe()}")
    own = dict(re.findall(r"(\w+)=(\d+)", untraced.out.splitlines()[-1]))
    outdir = os.path.join(work, name)
    tr = h.trace([exe], patterns=patterns, outdir=outdir)
    if not ck.check(tr.result.status == 0, f"traced {name} failed\n{tr.result.describe()}"):
        return None
    ck.check_eq(tr.result.out, untraced.out, f"{name}: traced output")
    calls, self_ns, wall_ns, total = replay(tr.files)
    records = [r for f in tr.files for r in parse_trace(f)]
    for fn, key in counted.items():
        ck.check_eq(calls[fn], int(own[key]), f"{name}: call records of {fn} (sanity)")

    profile = os.path.join(work, name + ".callgrind")
    res = h.run_postproc(["callgrind", "-o", profile, outdir])
    if not ck.check(res.status == 0, f"{name}: callgrind report failed\n{res.describe()}"):
        return None

    flat = annotate(ck, profile)
    ck.check_eq(totals(flat), total, f"{name}: PROGRAM TOTALS vs the raw records' self times")
    costs = function_costs(flat)
    for fn in counted:
        ck.check_eq(costs.get(fn, (None,))[0], self_ns[fn], f"{name}: self time of {fn}")

    inclusive = function_costs(annotate(ck, profile, "--inclusive=yes"))
    for fn in counted:
        ck.check_eq(inclusive.get(fn, (None,))[0], wall_ns[fn],
                    f"{name}: inclusive time of {fn} vs its outermost activations")

    tree = tree_callers(annotate(ck, profile, "--tree=caller"))
    for fn, key in counted.items():
        got = sum(tree.get(fn, {}).values())
        ck.check_eq(got, int(own[key]),
                    f"{name}: calls into {fn} in the caller tree (callers {tree.get(fn)})")

    for fn in counted:
        module = module_of(records, fn)
        address = nm_address(module, fn)
        if not ck.check(address is not None, f"{name}: nm finds no {fn} in {module}"):
            continue
        want = addr2line_file(module, address)
        got = costs.get(fn, (None, None))[1]
        ck.check_eq(got and os.path.realpath(got), os.path.realpath(want),
                    f"{name}: file of {fn} (addr2line on {module} {address:#x})")
    ck.note(f"{name}: {sum(calls.values())} calls, {total} ns of self time")
    return outdir, total, own


def check_two_processes(ck, exe, first, work):
    """Two runs of a program in one profile: their costs and calls add up."""
    outdir, total, own = first
    second = os.path.join(work, "mutual-again")
    tr = h.trace([exe], patterns="is_even,is_odd", outdir=second)
    if not ck.check(tr.result.status == 0, f"traced mutual failed\n{tr.result.describe()}"):
        return
    total += replay(tr.files)[3]
    profile = os.path.join(work, "two.callgrind")
    res = h.run_postproc(["callgrind", "-o", profile, outdir, second])
    if not ck.check(res.status == 0, f"two processes: callgrind failed\n{res.describe()}"):
        return
    ck.check_eq(totals(annotate(ck, profile)), total, "two processes: PROGRAM TOTALS")
    tree = tree_callers(annotate(ck, profile, "--tree=caller"))
    for fn in ("is_even", "is_odd"):
        ck.check_eq(sum(tree.get(fn, {}).values()), 2 * int(own[fn]),
                    f"two processes: calls into {fn}")
    ck.note(f"two processes of mutual: {total} ns of self time")


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        sys.exit(2)
    h.require_tools("callgrind", ["callgrind_annotate"], "valgrind")
    ck = h.Checker("callgrind")
    with h.TempDir() as work:
        runs = {}
        for (name, patterns, counted), exe in zip(PROGRAMS, sys.argv[1:]):
            runs[name] = check_program(ck, name, exe, patterns, counted, work)
        if runs.get("mutual"):
            check_two_processes(ck, sys.argv[2], runs["mutual"], work)
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""No silent gaps: a function functracer was asked to trace and could not is named
once on stderr (even with -q), recorded in the trace (an `untraced` record), and
every report built from that trace warns on stderr that its totals are incomplete,
while what it writes on stdout stays as it is (JSON that parses).

usage: test_untraced.py RECURSION-O0

  * vDSO: glibc's time and gettimeofday are IFUNCs whose resolvers choose code in the
    vDSO, which no module holds and functracer does not patch. recursion-O0 traced
    with calltrace -q -a 'main,fib,time,gettimeofday': the program's output and status
    are those of an untraced run, stderr names both functions once and the vDSO, the
    trace has one untraced record for each, the summary of a run without -q names the
    functions the trace records as untraced, and every call report (calls, tree,
    callgrind, gprof, flamegraph, speedscope, chrome, dot; with --json where it takes
    it) warns once per function and file, its JSON parsing. With -f and the program run
    twice by sh, the gap is said once and recorded in each process's trace.
  * uprobe (skipped without bpftrace or root): a uprobe of bpftrace on fib while
    calltrace runs with -q: stderr names fib and a uprobe of bpftrace or perf as the
    likely cause, once; the trace has an untraced record whose reason starts with
    "int3"; the calls report warns.
  * An instruction that cannot be relocated: a C program compiled by the test whose
    never-called ft_refused starts with hlt, traced with -a 'ft_refused,ft_ok':
    stderr names ft_refused and hlt once, the trace records it, the calls report
    warns, ft_ok's 5 calls are traced, the output is the untraced run's.
  * fileops (skipped as above): a uprobe on fopen of a private copy of the C library,
    loaded by the program alone through LD_LIBRARY_PATH: stderr names fopen and the
    uprobe once, the trace has its untraced record, and the fds report warns.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

CALL_REPORTS = ["calls", "tree", "callgrind", "gprof", "flamegraph", "speedscope", "chrome", "dot"]
VDSO_FUNCTIONS = ["time", "gettimeofday"]


def untraced_records(files):
    return [r for f in files for r in parse_trace(f) if r["type"] == "untraced"]


def check_reports(ck, label, files, functions, tmp):
    """Every call report of `files` warns once per function in `functions`, on stderr;
    its JSON on stdout parses."""
    for report in CALL_REPORTS:
        for as_json in (False, True):
            out = os.path.join(tmp, f"{label}-{report}.out")
            args = [report] + (["--json"] if as_json else ["-o", out]) + files
            res = h.run_postproc(args)
            if as_json and res.status == 2 and "--json" in res.err:
                continue  # the report has no --json
            what = f"{label}: {report}{' --json' if as_json else ''}"
            if not ck.check(res.status == 0, f"{what} failed\n{res.describe()}"):
                continue
            for fn in functions:
                said = re.findall(rf": {re.escape(fn)} was not traced \(.*\): the totals are incomplete$",
                                  res.err, re.M)
                ck.check(len(said) == len(files),
                         f"{what}: warned {len(said)} times that {fn} was not traced, not once per file "
                         f"({len(files)})\n{res.describe()}")
            ck.check("was not traced" not in res.out, f"{what}: the warning is on stdout\n{res.describe()}")
            if as_json:
                try:
                    json.loads(res.out)
                except ValueError as e:
                    ck.fail(f"{what}: stdout is not JSON ({e})\n{res.describe()}")


def check_vdso(ck, exe, tmp):
    plain = h.run([exe])
    out = os.path.join(tmp, "vdso")
    r = h.trace([exe], "main,fib," + ",".join(VDSO_FUNCTIONS), outdir=out, quiet=True)
    res = r.result
    ck.check(res.status == plain.status and res.stdout == plain.stdout,
             f"vdso: the traced program does not behave as untraced\n{res.describe()}")
    for fn in VDSO_FUNCTIONS:
        said = [line for line in res.err.splitlines() if "cannot trace" in line and re.search(rf"\b{fn}\b", line)]
        ck.check(len(said) == 1 and "vDSO" in said[0],
                 f"vdso: with -q, stderr does not name {fn} and the vDSO once\n{res.describe()}")
    recs = untraced_records(r.files)
    for fn in VDSO_FUNCTIONS:
        mine = [x for x in recs if x.get("function") == fn]
        ck.check(len(mine) == 1 and "vDSO" in mine[0].get("reason", ""),
                 f"vdso: {len(mine)} untraced records for {fn} (one naming the vDSO expected): {recs}")
    # -f, two processes of the program (and the shell): said once, recorded in each.
    f = h.trace(["sh", "-c", f"{exe} >/dev/null; {exe} >/dev/null"], "main,fib,time", outdir=out + "-f",
                quiet=True, extra=["-f"])
    said = [line for line in f.result.err.splitlines() if "cannot trace" in line]
    ck.check(len(said) == 1, f"vdso -f: the gap is not said once\n{f.result.describe()}")
    with_gap = [p for p in f.files if any(x.get("function") == "time" for x in untraced_records([p]))]
    ck.check(len(with_gap) >= 2, f"vdso -f: {len(with_gap)} of {len(f.files)} traces record that time is missing")
    # Without -q, the run's summary ends with what was not traced: the functions its
    # trace records as untraced, named.
    loud = h.trace([exe], "main,fib," + ",".join(VDSO_FUNCTIONS), outdir=out + "-loud", quiet=False)
    names = sorted({x.get("function") for x in untraced_records(loud.files)})
    said = re.findall(r"^functracer: not traced: (\d+) functions? \((.*); their calls are missing",
                      loud.result.err, re.M)
    if ck.check(len(said) == 1, f"vdso: no 'not traced:' line in the summary\n{loud.result.describe()}"):
        ck.check_eq((int(said[0][0]), sorted(said[0][1].split(", "))), (len(names), names),
                    "vdso: the summary's untraced functions = the trace's untraced records")
        ck.check(set(VDSO_FUNCTIONS) <= set(names), f"vdso: the trace records {names}")
    if r.files:
        check_reports(ck, "vdso", r.files, VDSO_FUNCTIONS, tmp)
        # Two traces given together (a copy under another name): one warning per
        # function and file.
        copy = os.path.join(tmp, "copy.trace")
        shutil.copyfile(r.files[0], copy)
        check_reports(ck, "vdso-twice", [r.files[0], copy], VDSO_FUNCTIONS[:1], tmp)


def check_uprobe(ck, exe, tmp):
    ok, why = h.bpftrace_usable()
    if not ok:
        ck.skip("uprobe", why)
        return
    copy = os.path.join(tmp, os.path.basename(exe))  # the uprobe stays out of other tests
    shutil.copy2(exe, copy)
    with h.bpftrace_uprobe(f'uprobe:"{copy}":fib {{ @n = count(); }}') as attached:
        if not attached:
            ck.skip("uprobe", "bpftrace could not attach its uprobe here")
            return
        r = h.trace([copy], "main,fib", outdir=os.path.join(tmp, "uprobe"), quiet=True)
        said = re.findall(r"cannot trace fib: .*uprobe of bpftrace or perf", r.result.err)
        ck.check(len(said) == 1, f"uprobe: with -q, stderr does not name fib and a uprobe once\n{r.result.describe()}")
        recs = [x for x in untraced_records(r.files) if x.get("function") == "fib"]
        ck.check(len(recs) == 1 and recs[0].get("reason", "").startswith("int3"),
                 f"uprobe: no untraced record for fib with an int3 reason: {recs}")
        rep = h.run_postproc(["calls"] + r.files)
        ck.check(re.search(r"fib was not traced \(int3.*\): the totals are incomplete", rep.err),
                 f"uprobe: the calls report does not warn\n{rep.describe()}")


# A function whose first instruction cannot be relocated (hlt is privileged on
# x86-64, refused on AArch64 too); it is never called. ft_ok is.
UNRELOCATABLE_C = r"""
#include <stdio.h>
__asm__(".text\n.globl ft_refused\n.type ft_refused, @function\nft_refused:\n"
#if defined(__aarch64__)
        "hlt #0\nret\n"
#else
        "hlt\nret\n"
#endif
        ".size ft_refused, .-ft_refused\n");
__attribute__((noinline)) int ft_ok(int x) { return x * 3; }
int main(void) {
  int sum = 0;
  for (int i = 0; i < 5; ++i) sum += ft_ok(i);
  printf("sum=%d\n", sum);
  return 0;
}
"""


def check_unrelocatable(ck, tmp):
    """An instruction functracer cannot relocate at a function's entry: the function
    is named once with the reason, recorded, and the calls report warns; the rest is
    traced."""
    cc = shutil.which("cc")
    if not cc:
        ck.skip("unrelocatable", "no C compiler")
        return
    src = os.path.join(tmp, "unrelocatable.c")
    exe = os.path.join(tmp, "unrelocatable")
    with open(src, "w") as f:
        f.write(UNRELOCATABLE_C)
    built = h.run([cc, "-O1", "-g", "-o", exe, src])
    if not ck.check(built.status == 0, f"unrelocatable: cc\n{built.describe()}"):
        return
    plain = h.run([exe])
    r = h.trace([exe], "ft_refused,ft_ok", outdir=os.path.join(tmp, "unrelocatable-out"), quiet=True)
    ck.check(r.result.status == 0 and r.result.out == plain.out, f"unrelocatable: traced run\n{r.result.describe()}")
    said = re.findall(r"cannot trace ft_refused at 0x[0-9a-f]+: .*hlt", r.result.err)
    ck.check(len(said) == 1, f"unrelocatable: stderr does not name ft_refused and hlt once\n{r.result.describe()}")
    recs = [x for x in untraced_records(r.files) if x.get("function") == "ft_refused"]
    ck.check(len(recs) == 1 and "hlt" in recs[0].get("reason", ""),
             f"unrelocatable: no untraced record for ft_refused naming hlt: {recs}")
    calls = json.loads(h.run_postproc(["calls", "--json"] + r.files).out)
    ok = [f["calls"] for f in calls["functions"] if f["name"] == "ft_ok"]
    ck.check_eq(ok, [5], "unrelocatable: calls of ft_ok")
    rep = h.run_postproc(["calls"] + r.files)
    ck.check(re.search(r"ft_refused was not traced \(.*hlt.*\): the totals are incomplete", rep.err),
             f"unrelocatable: the calls report does not warn\n{rep.describe()}")


def check_fileops_uprobe(ck, exe, tmp):
    """fileops too: a uprobe on fopen of a private copy of the C library, which the
    program alone loads (LD_LIBRARY_PATH)."""
    with h.libc_uprobe(ck, "fileops uprobe", "fopen", tmp) as libdir:
        if not libdir:
            return
        out = os.path.join(tmp, "fileops-uprobe")
        plain = h.run([exe])
        r = h.run([h.functracer(), "-q", "-e", "fileops", "--uncompressed", "-o", out, exe],
                  env=dict(os.environ, LD_LIBRARY_PATH=libdir), timeout=h.TRACED_TIMEOUT)
        ck.check(r.status == plain.status and r.out == plain.out, f"fileops uprobe: the program's run\n{r.describe()}")
        said = re.findall(r"cannot trace fopen: .*uprobe of bpftrace or perf", r.err)
        ck.check(len(said) == 1, f"fileops uprobe: with -q, stderr does not name fopen and a uprobe once\n{r.describe()}")
        files = h.trace_files(out)
        recs = [x for x in untraced_records(files) if x.get("function") == "fopen"]
        ck.check(len(recs) == 1 and recs[0].get("reason", "").startswith("int3"),
                 f"fileops uprobe: no untraced record for fopen with an int3 reason: {recs}")
        for args in (["fds"], ["fds", "--json"]):
            rep = h.run_postproc(args + files)
            ck.check(rep.status == 0 and re.search(r"fopen was not traced \(int3.*\): the totals are incomplete",
                                                   rep.err) and "not traced" not in rep.out,
                     f"fileops uprobe: {' '.join(args)} does not warn on stderr\n{rep.describe()}")


def main():
    ck = h.Checker("untraced")
    exe = sys.argv[1]
    with h.TempDir(prefix="ft-untraced-") as tmp:
        check_vdso(ck, exe, tmp)
        check_uprobe(ck, exe, tmp)
        check_fileops_uprobe(ck, exe, tmp)
        check_unrelocatable(ck, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

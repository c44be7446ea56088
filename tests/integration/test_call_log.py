#!/usr/bin/env python3
"""The call log's options, each against a tool that has the same option on the same
program, or against what the program knows of itself (tests/progs/calllog/calllog.c,
built here: -O0 -g, and -pg for uftrace):

  -c              counts equal `ltrace -c`'s for the functions both trace (libc and
                  libcalllog.so calls the program makes: -l with --from-program), and
                  `ltrace -x 'cl_*' -c`'s for the program's own functions (-x); errors
                  equal the failures the program counts
  -T, -t/-tt/-ttt each call's time covers the known 100 ms sleeps, as ltrace -T's does;
                  timestamps have ltrace's formats and lie within the run
  -s N            a string argument cut to N bytes, '"..."...' as ltrace shows it
  -C              names equal c++filt's without their parameters; --no-demangle the
                  symbol table's
  -l, -x          per-function counts equal ltrace -l / ltrace -x's
  --from-program  `-a strlen ls` keeps the calls ls makes: as many as ltrace -e strlen
  -D N            the calls and their nesting equal `uftrace replay -D N`'s
  --time-filter   the calls kept equal `uftrace replay -t DUR`'s
  live log        the same lines as functracer-postproc tree on a trace of the run;
                  tree --json has the tree's calls, nesting and values
  command line    -tt is an option, an unknown option in a group is named as typed
  postproc        --version; each REPORT --help lists exactly the options it accepts

A part whose tool (ltrace, uftrace, c++filt) is missing is skipped with a loud SKIP
line, and the test then ends as SKIP, never as a pass.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "progs", "calllog")

OWN = {"cl_outer": 2, "cl_middle": 6, "cl_leaf": 14, "cl_sleep": 2, "cl_fail": 5, "cl_str": 1}
LIBC = {"strlen": 8, "getenv": 3, "atoi": 1, "dup": 1}
LIB = {"cl_lib_a": 4, "cl_lib_b": 2}  # made from the program
# A valid value for each post-processor option: a refusal is then about the report.
VALUES = {"--output": "=/dev/null", "--time-filter": "=1ms", "--tid": "=1", "--sort": "=x", "--metric": "=x",
          "--top": "=1", "--size": "=64", "--from": "=1s", "--to": "=2s", "--at": "=1s", "--function": "=x",
          "--suppressions": "=x", "--sysroot": "=/", "--debug-dir": "=/", "--kinds": "=all",
          "--error-exitcode": "=3"}
PREFIX = re.compile(r"^\[pid \d+\] ")


def build(ck, work):
    """The tracee and its library; the -pg build when gcc can make one."""
    lib = os.path.join(work, "libcalllog.so")
    cmds = [["gcc", "-O1", "-g", "-shared", "-fPIC", "-o", lib, os.path.join(SRC, "calllog_lib.c")]]
    exe = os.path.join(work, "calllog")
    pg = os.path.join(work, "calllog-pg")
    cxx = os.path.join(work, "calllog_cxx")
    for out, extra in ((exe, []), (pg, ["-pg"])):
        cmds.append(["gcc", "-O0", "-g", *extra, "-o", out, os.path.join(SRC, "calllog.c"), "-L", work,
                     "-lcalllog", "-Wl,-rpath," + work])
    cmds.append(["g++", "-O0", "-g", "-o", cxx, os.path.join(SRC, "calllog_cxx.cc")])
    for cmd in cmds:
        res = h.run(cmd)
        if res.status != 0:
            ck.fail(f"cannot build the tracee\n{res.describe()}")
            return None
    return exe, pg, cxx


def log_lines(err):
    """The call log's lines without their "[pid N] " prefix."""
    return [PREFIX.sub("", l) for l in err.splitlines() if PREFIX.match(l) and "+++" not in l]


def calls_of_log(lines):
    """(nesting, name) of each call line of a call log or tree."""
    out = []
    for l in lines:
        body = l.lstrip(" ")
        if not body or body[0] in "}<" or "(" not in body:
            continue
        out.append(((len(l) - len(body)) // 2, body[:body.index("(")]))
    return out


def summary_counts(text):
    """function -> calls of an `ltrace -c` or `functracer -c` table."""
    counts = {}
    for l in text.splitlines():
        f = l.split()
        if len(f) >= 5 and re.match(r"^\d+\.\d+$", f[0]) and f[-1] != "total":
            counts[f[-1]] = int(f[3])
    return counts


def summary_errors(text):
    errors = {}
    for l in text.splitlines():
        f = l.split()
        if len(f) == 6 and re.match(r"^\d+\.\d+$", f[0]):
            errors[f[-1]] = int(f[4])
    return errors


def check_command_line(ck, ft, pp, exe):
    print("=== -tt, unknown options named as typed")
    res = h.run([ft, "-tt", "-q", "/bin/true"])
    ck.check(res.status == 0 and "unknown option" not in res.err, f"-tt refused\n{res.describe()}")
    for args, named in ((["-qZ"], "'-Z'"), (["-Z"], "'-Z'"), (["--no-such-option"], "'--no-such-option'"),
                        (["-q", "-tZ"], "'-Z'")):
        res = h.run([ft, *args, "/bin/true"])
        ck.check(res.status == 2 and f"unknown option {named}" in res.err,
                 f"{args}: want \"unknown option {named}\"\n{res.describe()}")
    res = h.run([ft, "-e"])
    ck.check(res.status == 2 and "option '-e' needs an argument" in res.err, f"-e alone\n{res.describe()}")
    res = h.run([ft, "--time-filter=5", exe])
    ck.check(res.status == 2 and "bad duration" in res.err, f"--time-filter without unit\n{res.describe()}")

    print("=== functracer --help, functracer-postproc --version and per-report help")
    helptext = h.run([ft, "--help"]).out
    for opt in ("-c, --summary", "-T, --durations", "-t, --timestamps", "-s, --string-size", "-C, --demangle",
                "-l, --library", "-x, --exe-functions", "-D, --depth", "--time-filter", "--from-program"):
        ck.check(opt in helptext, f"functracer --help lacks {opt}")
    res = h.run([pp, "--version"])
    ck.check(res.status == 0 and re.match(r"^functracer-postproc \d+\.\d+", res.out),
             f"--version\n{res.describe()}")
    global_help = h.run([pp, "--help"]).out
    all_opts = sorted(set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", global_help, re.M)) - {"--help", "--version"})
    reports = re.findall(r"^  ([a-z]+) {2,}", global_help.split("Options")[0], re.M)
    ck.check("tree" in reports and "leaks" in reports, f"reports not found in --help\n{global_help}")
    for report in reports:
        rhelp = h.run([pp, report, "--help"])
        listed = set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", rhelp.out, re.M))
        for opt in all_opts:
            # An option a report refuses is refused before any trace is read.
            res = h.run([pp, report, opt + VALUES.get(opt, ""), "/nonexistent.trace"])
            refused = "does not take" in res.err or "has no --json" in res.err
            ck.check(refused == (opt not in listed),
                     f"{report} --help {'lists' if opt in listed else 'omits'} {opt}, which it "
                     f"{'refuses' if refused else 'accepts'}\n{rhelp.out}\n{res.describe()}")


def check_summary(ck, ft, exe, have_ltrace):
    print("=== -c")
    res = h.run([ft, "-c", "-l", "libc.so", "-l", "libcalllog", "--from-program", exe], timeout=h.TRACED_TIMEOUT)
    ck.check(res.status == 0, f"-c run failed\n{res.describe()}")
    ours = summary_counts(res.err)
    ck.check(not log_lines(res.err), f"-c printed a call log\n{res.err}")
    for name, n in {**LIBC, **LIB}.items():
        ck.check_eq(ours.get(name), n, f"-c calls of {name} (the program's count)\n{res.err}")
    own = h.run([ft, "-c", "-x", "cl_*", exe], timeout=h.TRACED_TIMEOUT)
    own_counts = summary_counts(own.err)
    for name, n in OWN.items():
        ck.check_eq(own_counts.get(name), n, f"-c -x calls of {name} (the program's count)\n{own.err}")
    ck.check_eq(summary_errors(own.err).get("cl_fail"), 3, f"-c errors of cl_fail (returned -1)\n{own.err}")
    if not have_ltrace:
        return
    lt = h.run(["ltrace", "-c", exe], timeout=h.TRACED_TIMEOUT)
    theirs = summary_counts(lt.err + lt.out)
    both = set(ours) & set(theirs)
    ck.check(set(LIBC) | set(LIB) <= both, f"-c: functions both trace {sorted(both)}\n{lt.describe()}")
    for name in sorted(both):
        ck.check_eq(ours[name], theirs[name], f"-c calls of {name}: functracer vs ltrace -c\n{res.err}\n{lt.err}")
    ltx = h.run(["ltrace", "-c", "-x", "cl_*", exe], timeout=h.TRACED_TIMEOUT)
    theirs = summary_counts(ltx.err + ltx.out)
    for name in OWN:
        ck.check_eq(own_counts.get(name), theirs.get(name), f"-x -c calls of {name}: functracer vs ltrace -x -c")
    print("=== -l: per-function counts of the log vs ltrace -l")
    # ltrace -l shows every call into the library through a PLT, the library's own
    # calls of its exported functions too (cl_lib_b -> cl_lib_a): functracer's -l
    # without --from-program, which adds the 2 made inside the library.
    log = h.run([ft, "-l", "libcalllog", "--from-program", exe], timeout=h.TRACED_TIMEOUT)
    names = [n for _, n in calls_of_log(log_lines(log.err))]
    all_lib = h.run([ft, "-l", "libcalllog", exe], timeout=h.TRACED_TIMEOUT)
    all_names = [n for _, n in calls_of_log(log_lines(all_lib.err))]
    ltl = h.run(["ltrace", "-l", "libcalllog.so", exe], timeout=h.TRACED_TIMEOUT)
    lt_names = re.findall(r"(?:^|->)(cl_lib_[ab])\(", ltl.err, re.M)
    for name, n in LIB.items():
        ck.check_eq(names.count(name), n, f"-l --from-program calls of {name}\n{log.err}")
        ck.check_eq(all_names.count(name), n + (2 if name == "cl_lib_a" else 0), f"-l calls of {name}\n{all_lib.err}")
        ck.check_eq(all_names.count(name), lt_names.count(name), f"-l calls of {name} vs ltrace -l\n{ltl.err}")


def check_times(ck, ft, exe, have_ltrace):
    print("=== -T, -t, -tt, -ttt")
    res = h.run([ft, "-T", "-x", "cl_sleep,cl_fail", exe], timeout=h.TRACED_TIMEOUT)
    durations = re.findall(r"cl_sleep\(100\) = 101 <([\d.]+) (ns|us|ms|s)>", "\n".join(log_lines(res.err)))
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}
    ck.check_eq(len(durations), 2, f"-T: two cl_sleep lines with a duration\n{res.err}")
    for v, unit in durations:
        ck.check(float(v) * scale[unit] >= 0.100, f"-T: cl_sleep took {v} {unit}, less than its 100 ms sleep")
    if have_ltrace:
        lt = h.run(["ltrace", "-T", "-x", "cl_sleep", exe], timeout=h.TRACED_TIMEOUT)
        lt_d = [float(x) for x in re.findall(r"cl_sleep.*<(\d+\.\d+)>", lt.err)]
        ck.check(len(lt_d) == 2 and all(d >= 0.100 for d in lt_d), f"ltrace -T disagrees with the sleeps\n{lt.err}")
    formats = {1: r"\d\d:\d\d:\d\d ", 2: r"\d\d:\d\d:\d\d\.\d{6} ", 3: r"\d{10}\.\d{6} "}
    for n, pattern in formats.items():
        before = time.time()
        res = h.run([ft, "-" + "t" * n, "-x", "cl_outer", exe], timeout=h.TRACED_TIMEOUT)
        after = time.time()
        lines = log_lines(res.err)
        ck.check(len(lines) == 2 and all(re.match(pattern + "cl_outer", l) for l in lines),
                 f"-{'t' * n}: lines not like ltrace's {pattern!r}\n{res.err}")
        if n == 3:
            stamps = [float(l.split()[0]) for l in lines]
            ck.check(all(before - 1 <= s <= after + 1 for s in stamps), f"-ttt {stamps} not within the run "
                     f"[{before}, {after}]")
        if have_ltrace and n > 0:
            lt = h.run(["ltrace", "-" + "t" * n, "-x", "cl_outer", exe], timeout=h.TRACED_TIMEOUT)
            ck.check(any(re.match(pattern + "cl_outer", l) for l in lt.err.splitlines()),
                     f"ltrace -{'t' * n} does not have the format expected of it\n{lt.err}")


def check_strings_and_names(ck, ft, exe, cxx, have_ltrace):
    print("=== -s N")
    res = h.run([ft, "-s", "5", "-x", "cl_str", exe], timeout=h.TRACED_TIMEOUT)
    ck.check('cl_str("abcde"...) = 26' in log_lines(res.err), f"-s 5\n{res.err}")
    res = h.run([ft, "-x", "cl_str", exe], timeout=h.TRACED_TIMEOUT)
    ck.check('cl_str("abcdefghijklmnopqrstuvwxyz") = 26' in log_lines(res.err), f"no -s\n{res.err}")
    if have_ltrace:
        lt = h.run(["ltrace", "-s", "5", "-e", "strlen", exe], timeout=h.TRACED_TIMEOUT)
        ck.check(re.search(r'strlen\("[^"]{5}"\.\.\.\)', lt.err),
                 f"ltrace -s 5 does not show strings as '\"abcde\"...'\n{lt.err}")
    print("=== -C, --no-demangle")
    if not shutil.which("c++filt") or not shutil.which("nm"):
        ck.skip("-C", "c++filt or nm not installed (Debian package binutils)")
        return
    syms = [l.split()[-1] for l in h.run(["nm", cxx]).out.splitlines() if "bump" in l or "cl_over" in l]
    demangled = h.run(["c++filt"] + syms).out.split("\n")
    expect = sorted(re.sub(r"\(.*$", "", d) for d in demangled if d)
    for flag, want in ((["-C"], expect), ([], expect), (["--no-demangle"], sorted(syms))):
        res = h.run([ft, *flag, "-a", "*bump*,*cl_over*", cxx], timeout=h.TRACED_TIMEOUT)
        names = sorted(set(n for _, n in calls_of_log(log_lines(res.err))))
        ck.check_eq(names, sorted(set(want)), f"names with {flag or 'no flag'}\n{res.err}")


def check_from_program(ck, ft, have_ltrace):
    print("=== --from-program: -a strlen ls")
    if not have_ltrace:
        return
    with h.TempDir() as d:
        for i in range(5):
            open(os.path.join(d, f"file-{i}.txt"), "w").close()
        ours = h.run([ft, "-a", "strlen", "--from-program", "ls", "-l"], cwd=d, timeout=h.TRACED_TIMEOUT)
        every = h.run([ft, "-a", "strlen", "ls", "-l"], cwd=d, timeout=h.TRACED_TIMEOUT)
        lt = h.run(["ltrace", "-e", "strlen", "ls", "-l"], cwd=d, timeout=h.TRACED_TIMEOUT)
        n_ours = sum(1 for l in log_lines(ours.err) if l.startswith("strlen("))
        n_every = sum(1 for l in log_lines(every.err) if l.startswith("strlen("))
        n_lt = len(re.findall(r"strlen\(", lt.err))
        ck.check_eq(n_ours, n_lt, f"--from-program strlen calls of ls vs ltrace -e strlen\n{ours.err}")
        ck.check(n_every > n_ours, f"without --from-program: {n_every} calls, not more than {n_ours}")
        print(f"ls -l: {n_every} strlen calls in all, {n_ours} from ls itself, ltrace {n_lt}")


def uftrace_calls(text):
    out = []
    for l in text.splitlines():
        if "|" not in l or l.startswith("#"):
            continue
        body = l.split("|", 1)[1][1:]
        stripped = body.lstrip(" ")
        if not stripped or stripped[0] == "}" or stripped.startswith("/*") or "(" not in stripped:
            continue
        out.append(((len(body) - len(stripped)) // 2, stripped[:stripped.index("(")]))
    return out


def check_uftrace(ck, ft, pg):
    print("=== -D and --time-filter vs uftrace replay")
    if not shutil.which("uftrace"):
        ck.skip("-D, --time-filter vs uftrace", "uftrace not installed (Debian package uftrace)")
        return
    with h.TempDir() as d:
        data = os.path.join(d, "uftrace.data")
        # cwd: the -pg program writes gmon.out there.
        rec = h.run(["uftrace", "record", "-d", data, "--no-libcall", pg], cwd=d, timeout=h.TRACED_TIMEOUT)
        if rec.status != 0:
            ck.skip("-D, --time-filter vs uftrace", f"uftrace record does not run here\n{rec.describe()}")
            return
        for args, ours_args in ((["-D", "1"], ["-D", "1"]), (["-D", "2"], ["-D", "2"]), (["-D", "3"], ["-D", "3"]),
                                (["-t", "50ms"], ["--time-filter=50ms"])):
            rep = h.run(["uftrace", "replay", "-d", data, *args])
            theirs = uftrace_calls(rep.out)
            res = h.run([ft, *ours_args, pg], cwd=d, timeout=h.TRACED_TIMEOUT)
            # Before main, functions of the -pg start-up code uftrace does not see.
            ours = [c for c in calls_of_log(log_lines(res.err)) if c[1] in OWN or c[1] == "main"]
            ck.check(len(theirs) > 0, f"uftrace replay {args} shows no calls\n{rep.describe()}")
            ck.check_eq(ours, theirs, f"calls with {ours_args} vs uftrace replay {args}\n{res.err}\n{rep.out}")


def check_tree(ck, ft, pp, exe):
    print("=== live log == tree; tree --json; --time-filter in both")
    with h.TempDir() as d:
        out = os.path.join(d, "out")
        args = ["-x", "cl_*", "-l", "libcalllog"]
        live = h.run([ft, *args, exe], timeout=h.TRACED_TIMEOUT)
        rec = h.run([ft, "-q", *args, "-o", out, exe], timeout=h.TRACED_TIMEOUT)
        ck.check(live.status == 0 and rec.status == 0, f"runs failed\n{live.describe()}\n{rec.describe()}")
        # The live log has no line tables at hand: call sites are the post-processor's.
        tree = h.run([pp, "tree", "--no-callsite", out])
        tree_lines = [l for l in tree.out.splitlines() if not l.startswith("== ")]
        ck.check(len(tree_lines) > 20, f"tree too short\n{tree.describe()}")
        # Two runs: addresses differ (ASLR), nothing else may.
        def masked(lines):
            return [re.sub(r"0x[0-9a-f]+", "0x?", l) for l in lines]

        ck.check_eq(masked(log_lines(live.err)), masked(tree_lines), "live log vs functracer-postproc tree")
        js = h.run([pp, "tree", "--json", out])
        try:
            doc = json.loads(js.out)
        except ValueError as e:
            ck.fail(f"tree --json is not JSON: {e}\n{js.describe()}")
            return
        flat = []

        def walk(calls, level):
            for c in calls:
                if "function" in c:
                    flat.append((level, c["function"], c["args"], c["return"]))
                    ck.check(isinstance(c["duration_ns"], int) and isinstance(c["start_ns"], int),
                             f"tree --json call without times: {c}")
                    walk(c["calls"], level + 1)

        procs = doc["processes"]
        ck.check_eq(len(procs), 1, "tree --json processes")
        for t in procs[0]["threads"]:
            walk(t["calls"], 0)
        ck.check_eq([(lv, n) for lv, n, _, _ in flat], calls_of_log(tree_lines), "tree --json calls vs tree")
        ck.check(any(n == "cl_fail" and r == "-1" for _, n, _, r in flat), "tree --json: cl_fail = -1 missing")
        ck.check(any(n == "cl_str" and a == '"abcdefghijklmnopqrstuvwxyz"' for _, n, a, _ in flat),
                 "tree --json: cl_str's string argument missing")
        # The live run: every call shown lasted 50 ms or more (-T), the two 100 ms
        # sleeps among them. The recorded run: the calls tree --time-filter keeps are
        # those the unfiltered tree --json says lasted that long, with their callers.
        live_f = h.run([ft, "-T", "--time-filter=50ms", *args, exe], timeout=h.TRACED_TIMEOUT)
        kept = calls_of_log(log_lines(live_f.err))
        ck.check_eq([c for c in kept if c[1] == "cl_sleep"], [(0, "cl_sleep"), (0, "cl_sleep")],
                    f"--time-filter=50ms live: the sleeps\n{live_f.err}")
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}
        for v, unit in re.findall(r"<([\d.]+) (ns|us|ms|s)>$", live_f.err, re.M):
            ck.check(float(v) * scale[unit] >= 0.050, f"--time-filter=50ms live shows a call of {v} {unit}")
        expected = []

        def long_calls(calls, level):
            for c in calls:
                if "function" in c and c["duration_ns"] >= 50_000_000:
                    expected.append((level, c["function"]))
                    long_calls(c["calls"], level + 1)

        for t in procs[0]["threads"]:
            long_calls(t["calls"], 0)
        ck.check(expected.count((0, "cl_sleep")) == 2, f"tree --json: the sleeps lasted less than 50 ms {expected}")
        tree_f = h.run([pp, "tree", "--time-filter=50ms", out])
        ck.check_eq(calls_of_log([l for l in tree_f.out.splitlines() if not l.startswith("== ")]), expected,
                    f"tree --time-filter=50ms\n{tree_f.out}")
        js_f = json.loads(h.run([pp, "tree", "--json", "--time-filter=50ms", out]).out)
        ck.check_eq([c["function"] for c in js_f["processes"][0]["threads"][0]["calls"] if "function" in c],
                    [n for lv, n in expected if lv == 0], "tree --json --time-filter=50ms")


def main():
    ck = h.Checker("call-log")
    ft = h.functracer()
    pp = h.postproc()
    have_ltrace = bool(shutil.which("ltrace"))
    if not have_ltrace:
        ck.skip("comparisons with ltrace", "ltrace not installed (Debian package ltrace)")
    with h.TempDir() as work:
        built = build(ck, work)
        if not built:
            return ck.finish()
        exe, pg, cxx = built
        check_command_line(ck, ft, pp, exe)
        check_summary(ck, ft, exe, have_ltrace)
        check_times(ck, ft, exe, have_ltrace)
        check_strings_and_names(ck, ft, exe, cxx, have_ltrace)
        check_from_program(ck, ft, have_ltrace)
        check_uftrace(ck, ft, pg)
        check_tree(ck, ft, pp, exe)
    return ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Traces one tracee program of tests/progs in one build variant.

usage: test_prog.py PROGRAM VARIANT EXECUTABLE

For every run of the program (some programs are run with several argument
lists) it checks:
  * traced (-q) and untraced runs give the same stdout, stderr and exit status
    (and the exit status is the one the program is meant to have);
  * one trace file named <exe-basename>.<pid>.trace;
  * `dump --json`: well-formed records, every call on every thread closed by
    exactly one return or unwound record, in LIFO order, with consistent depths;
  * the number of call records per function equals the program's own count,
    `unwound` records per reason and function equal what the program expects,
    and per-thread counts where the program states them;
  * with -f and "proc_calls" lines: one trace file per process, holding exactly
    that process's counts, with its parent's pid and its exec;
  * `calls --json` agrees;
  * `tree` works.
For -O2 builds that keep their symbol table it also compares the program's
counts (or its "follow calls", which count the children too) with kernel
uprobe counts (bpftrace), unless bpftrace is unusable
("SKIP bpftrace"). Program-specific checks (tail jmps in the code, the crash
report, fib's return values) are at the end.
"""

import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402


class Run:
    def __init__(self, args=(), status=0, patterns=None, pattern_file=None, follow=False):
        self.follow = follow  # -f: children traced, counts from "follow calls"
        self.args = list(args)
        self.status = status
        self.patterns = patterns  # instead of the program's usual patterns
        self.pattern_file = pattern_file  # lines of an -a @FILE, instead of patterns


class Prog:
    def __init__(self, patterns, runs=None, tail_jumps=None, no_uprobes=None,
                 uprobes_follow=False):
        self.patterns = patterns
        self.runs = runs or [Run()]
        # why kernel uprobe counts cannot be compared (None: they can)
        self.no_uprobes = no_uprobes
        # uprobes count the calls of every process running the executable, the
        # untraced children included: compare them with "follow calls"
        self.uprobes_follow = uprobes_follow
        # function -> function it must reach with a tail jmp at -O2 ("*" = indirect jmp)
        self.tail_jumps = tail_jumps or {}


WORDFREQ_FUNCS = ("count_words,next_word,normalize,table_add,hash_word,sort_table,"
                  "compare_entries,print_top")

PROGRAMS = {
    "recursion": Prog("fib,rec_hidden_helper,rec_deep", [Run(), Run(["18"])]),
    "mutual": Prog("is_even,is_odd", tail_jumps={"is_even": "is_odd", "is_odd": "is_even"}),
    "threads": Prog("th_*"),
    "many_threads": Prog("mt_*"),
    "tailcall": Prog("tc_*", tail_jumps={"tc_middle": "tc_leaf", "tc_outer": "tc_middle",
                                         "tc_frame": "tc_leaf", "tc_indirect": "*"}),
    # The second run also traces the setjmp family itself: functions that return
    # twice, whose saved return address must not be the tracer's trampoline.
    "longjmp": Prog("lj_*,sj_*", [Run(), Run(patterns="lj_*,sj_*,_setjmp,setjmp,__sigsetjmp,"
                                              "sigsetjmp,longjmp,_longjmp,siglongjmp")]),
    "signals": Prog("sg_*"),
    "jumped": Prog("nc_*"),
    # The second run names the functions through -a @FILE in every form a user
    # may write: mangled, mangled glob, demangled with parameters (commas
    # included, which only a file allows), bare names.
    "exceptions": Prog("xt_*", [Run(), Run(pattern_file=[
        "_Z9xt_throw1i", "_Z9xt_throw[2-5]i", "xt_mid?(int)", "xt_re*",
        "xt_vec_at(std::vector<int, std::allocator<int> > const&, int)", "xt_after_catch"])]),
    "crash": Prog("cr_*", [Run([], 139)]),
    "exitcode": Prog("ec_*", [Run([], 3), Run(["abort"], 134), Run(["term"], 143)]),
    "wordfreq": Prog(WORDFREQ_FUNCS),
    # The second run also traces what the children run: fork itself (whose
    # return in the child goes through a hijacked slot), system/posix_spawn.
    "forks": Prog("fk_*", [Run(), Run(patterns="fk_*,fork,_Fork,system,posix_spawn*,__spawni*,"
                                               "execve,sigaction,__sigaction,waitpid"),
                           Run(follow=True)],
                  uprobes_follow=True),
    # Processes that exec the program again (fork+exec, vfork+exec, posix_spawn),
    # two and four levels deep; with -f, one trace file per process.
    "execchain": Prog("xc_*", [Run(), Run(follow=True), Run(["1"]), Run(["4"], follow=True)],
                      uprobes_follow=True),
    # Calls from the program into a library, from there into another library and
    # back; every library function is counted by the library itself.
    # The second run names each function exactly (no glob) through -a @FILE.
    "libchain": Prog("lc_*,lca_*,lcb_*", [Run(), Run(["2"], pattern_file=[
        "lc_main", "lca_run", "lca_step", "lca_leaf", "lcb_mix", "lcb_fold", "lcb_apply"])]),
    "unwinding": Prog("bt_*,pe_*"),
    "dlopen": Prog("dl_*,dll_*", [Run(["@PROGS@/dlopen_lib.so"])]),
    # dlsym and dlopen live in libc: uprobes on this binary cannot count them.
    "floats": Prog("fl_*"),
    "fastret": Prog("fr_*"),
    "dlcaller": Prog("dc_*,dlsym,dlopen", no_uprobes="dlsym and dlopen are in libc"),
}


def traceable_names(binary, names):
    """Which of `names` a tracer can find by name in this binary."""
    if not h.is_stripped(binary):
        return set(names)
    exported = {h.base_name(d) for _, d in h.symbols(binary, dynamic=True)}
    return {n for n in names if n in exported}


def check_no_clones(ck, binary, names):
    """-O2 must not have made extra entry points (.isra/.constprop/.part clones)
    for the functions under test, or the program's counts would not be the
    counts of calls to the symbol."""
    for mangled, demangled in h.symbols(binary):
        base = h.base_name(demangled.split(" [clone")[0]).split(".")[0]
        if base in names and re.search(r"\.(isra|constprop|part|lto_priv)\.", mangled):
            ck.fail(f"{binary}: clone {mangled} of a function under test; "
                    f"the TRACED attributes did not hold")


def check_tail_jumps(ck, binary, prog):
    syms = {h.base_name(d): m for m, d in h.symbols(binary) if "." not in m}
    for fn, target in prog.tail_jumps.items():
        lines = h.disassemble(binary, syms.get(fn, fn))
        if not ck.check(lines, f"objdump: no code for {fn} in {binary}"):
            continue
        text = "\n".join(lines)
        if target == "*":
            ok = re.search(r"\bjmp\s+\*%", text)
        else:
            tsym = re.escape(syms.get(target, target))
            ok = re.search(r"\bjmp\s+[0-9a-f]+ <" + tsym + r">", text)
            ck.check(not re.search(r"\bcall\s+[0-9a-f]+ <" + tsym + r">", text),
                     f"{fn} calls {target} instead of jumping to it:\n{text}")
        ck.check(ok, f"{binary}: {fn} has no tail jmp to {target}:\n{text}")
    if prog.tail_jumps:
        print(f"objdump: tail jmps present in {', '.join(prog.tail_jumps)}")


def compare_with_bpftrace(ck, binary, run_args, want_calls, names):
    usable, why = h.bpftrace_usable()
    if not usable:
        ck.skip("bpftrace", why)
        return
    sym_of = {}
    for mangled, demangled in h.symbols(binary):
        if "." in mangled:
            continue
        base = h.base_name(demangled)
        if base in names:
            sym_of.setdefault(base, []).append(mangled)
    for n in names:
        ck.check(len(sym_of.get(n, [])) <= 1,
                 f"{binary}: expected one symbol for {n}, found {sym_of.get(n)}")
    outside = [n for n in names if n not in sym_of]
    if outside:
        print(f"bpftrace: not counting {', '.join(outside)}: not defined in the executable")
        names = [n for n in names if n in sym_of]
    # Kernel uprobes refuse instructions with a LOCK prefix (arch/x86/kernel/
    # uprobes.c, is_prefix_bad()); bpftrace then silently counts nothing.
    refused = set()
    for n, syms_n in sym_of.items():
        for s in syms_n:
            insn = h.first_instruction(binary, s)
            if insn.startswith("lock"):
                refused.add(n)
                print(f"bpftrace: not counting {n}: first instruction {insn!r} cannot be uprobed")
    names = [n for n in names if n not in refused]
    syms = sorted(s for n, v in sym_of.items() if n not in refused for s in v)
    if not syms:
        return
    counts, res = h.bpftrace_counts(binary, syms, run_args)
    if counts is None:
        ck.skip("bpftrace", f"could not attach uprobes\n{res.describe(1500)}")
        return
    mism = []
    for n in names:
        got = sum(counts.get(s, 0) for s in sym_of.get(n, []))
        if got != want_calls[n]:
            mism.append(f"{n}: program says {want_calls[n]}, uprobes counted {got}")
    if mism:
        ck.fail("bpftrace uprobe counts differ from the program's own counts:\n  " +
                "\n  ".join(mism) + f"\n{res.describe(1500)}")
    else:
        print(f"bpftrace: uprobe counts agree for {len(names)} functions")


def check_fib_values(ck, analysis):
    """fib's return value must be fib(first argument), when the trace's argument
    and return value formats can be read as integers."""
    memo = {0: 0, 1: 1}

    def fib(n):
        if n not in memo:
            memo[n] = fib(n - 1) + fib(n - 2)
        return memo[n]

    def first_arg(call):
        args = call.get("args")
        if isinstance(args, list) and args:
            v = args[0]
            if isinstance(v, dict):
                v = v.get("value")
            return h._as_int(v)
        if isinstance(args, str):
            m = re.match(r"\s*(?:\w+\s*=\s*)?(-?(?:0x[0-9a-fA-F]+|\d+))", args)
            return int(m.group(1), 0) if m else None
        return None

    checked = seen = 0
    wrong = []
    for call, close in analysis.pairs:
        if h.base_name(h.record_function(call)) != "fib" or close.get("type") != "return":
            continue
        seen += 1
        n = first_arg(call)
        ret = close.get("retval")
        if isinstance(ret, dict):
            ret = ret.get("value")
        r = h._as_int(ret)
        if n is None or r is None or not 0 <= n <= 60:
            continue
        n &= 0xFFFFFFFF  # int argument in a 64-bit register
        checked += 1
        if r != fib(n) and len(wrong) < 5:
            wrong.append(f"fib({n}) returned {r} (call seq {call.get('seq')})")
    if wrong:
        ck.fail("wrong argument/return values in the trace: " + "; ".join(wrong))
    elif checked:
        print(f"fib: {checked} argument/return value pairs consistent")
    elif seen:
        print("NOTE: could not read fib's argument/return values from the trace "
              "(format not understood), value check not done")


def check_lifecycle(ck, label, records, status, exp):
    """exit/killed records carry the program's fate; every thread the program
    created and joined has a thread and a thread_exit record."""
    pid = h.main_pid(records)
    exits = [r for r in records if r.get("type") == "exit" and r.get("pid") == pid]
    killed = [r for r in records if r.get("type") == "killed" and r.get("pid") == pid]
    if status < 128:
        if ck.check(len(exits) == 1 and not killed,
                    f"{label}: want one exit record and no killed record, got {exits} {killed}"):
            code = next((exits[0][k] for k in ("status", "code", "exit_code") if k in exits[0]),
                        None)
            ck.check(code is None or h._as_int(code) == status,
                     f"{label}: exit record says {code}, the program exited {status}")
    else:
        if ck.check(len(killed) == 1 and not exits,
                    f"{label}: want one killed record and no exit record, got {exits} {killed}"):
            sig = killed[0].get("signal")
            ck.check(sig is None or h._as_int(sig) == status - 128 or sig == f"SIG{status - 128}",
                     f"{label}: killed record says signal {sig}, want {status - 128}")
    for name, per, tids in exp.per_thread:
        created = {r.get("tid") for r in records if r.get("type") == "thread"}
        ended = {r.get("tid") for r in records if r.get("type") == "thread_exit"}
        ck.check(len(created) >= tids,
                 f"{label}: {len(created)} thread records for {tids} threads created")
        ck.check(created <= ended,
                 f"{label}: threads without thread_exit record: {sorted(created - ended)[:10]}")


def check_per_process(ck, label, files, exp, traceable, binary):
    """-f with "proc_calls LABEL ..." lines: one trace file per process, each
    holding exactly the calls of one line (the program makes the counts of its
    processes differ, so the counts tell which process a file is about). LABEL
    is PARENT/NAME: the file's process record must name the parent's pid. A
    process that exec'd the program has one exec record, the launched one none."""
    want = exp.proc_calls
    names = sorted({n for counts in want.values() for n in counts})
    by_key = {}
    for plabel, counts in want.items():
        key = tuple(counts.get(n, 0) if n in traceable else 0 for n in names)
        by_key.setdefault(key, []).append(plabel)
    for key, plabels in by_key.items():
        ck.check(len(plabels) == 1,
                 f"{label}: processes {plabels} print the same counts; the program must "
                 f"tell its processes apart")
    ck.check(len(files) == len(want),
             f"{label}: {len(want)} processes printed proc_calls lines, found {len(files)} "
             f"trace files: {[os.path.basename(f) for f in files]}")

    pid_of = {}  # process label -> pid
    info = {}  # process label -> (file name, ppid, exec records)
    for f in files:
        fname = os.path.basename(f)
        records = h.dump_records(ck, [f])
        if records is None:
            continue
        headers = [r for r in records if r.get("type") == "header"]
        pids = {r.get("pid") for r in records}
        m = re.search(r"\.(\d+)\.trace$", fname)
        if not ck.check(len(headers) == 1 and len(pids) == 1,
                        f"{label}: {fname}: want one header and one pid, got "
                        f"{len(headers)} header(s), pids {sorted(pids)}"):
            continue
        pid = headers[0].get("pid")
        ck.check(m and int(m.group(1)) == pid,
                 f"{label}: {fname}: file name does not carry the header's pid {pid}")
        a = h.analyze(records)
        h.report_problems(ck, a, f"{label} {fname}")
        got = tuple(a.calls[n] for n in names)
        plabels = by_key.get(got)
        if not plabels:
            ck.fail(f"{label}: {fname} (pid {pid}) holds calls that are no process's: "
                    + " ".join(f"{n}={c}" for n, c in zip(names, got)) + "\n  processes:\n  "
                    + "\n  ".join(f"{pl} " + " ".join(f"{n}={c.get(n, 0)}" for n in names)
                                   for pl, c in want.items()))
            continue
        plabel = plabels[0]
        if not ck.check(plabel not in pid_of,
                        f"{label}: {fname} and the file of pid {pid_of.get(plabel)} both hold "
                        f"the calls of process {plabel}"):
            continue
        pid_of[plabel] = pid
        procs = [r for r in records if r.get("type") == "process"]
        execs = [r for r in records if r.get("type") == "exec"]
        info[plabel] = (fname, procs[0].get("ppid") if len(procs) == 1 else None, execs)
        ck.check(len(procs) == 1, f"{label}: {fname}: want one process record, got {len(procs)}")

    missing = [pl for pl in want if pl not in pid_of]
    ck.check(not missing, f"{label}: no trace file holds the calls of process(es) {missing}")
    real = os.path.realpath(binary)
    for plabel, (fname, ppid, execs) in info.items():
        parent = plabel.rpartition("/")[0]
        if parent:
            ck.check(parent in pid_of and ppid == pid_of[parent],
                     f"{label}: {fname} (process {plabel}): parent pid {ppid}, want the pid "
                     f"{pid_of.get(parent)} of {parent}")
            ck.check(len(execs) == 1 and os.path.realpath(str(execs[0].get("exe"))) == real,
                     f"{label}: {fname} (process {plabel}): want one exec record of {real}, "
                     f"got {execs}")
        else:
            ck.check(not execs, f"{label}: {fname} (the launched process): exec records {execs}")
    if not missing and len(files) == len(want):
        print(f"per process: {len(files)} trace files, each with the calls of one process")


def check_crash_report(ck, binary, run_args):
    """Without -q, functracer reports the fatal signal and the faulting address."""
    with h.TempDir() as tmp:
        tr = h.trace([binary] + run_args, "cr_*", os.path.join(tmp, "out"), quiet=False)
        res = tr.result
        ck.check_eq(res.status, 139, f"exit status of traced crash (not -q)\n{res.describe()}")
        err = res.err
        ck.check("SIGSEGV" in err or "Segmentation fault" in err,
                 f"stderr does not name SIGSEGV\n{res.describe()}")
        addrs = {int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]+)", err)}
        ck.check(0x10 in addrs, f"stderr does not give the faulting address 0x10\n{res.describe()}")
        for line in err.splitlines():
            if line.strip() and not line.startswith("functracer:"):
                ck.fail(f"stderr line without the functracer: prefix: {line!r}")
                break
        if tr.files:
            recs = h.dump_records(ck, tr.files) or []
            killed = [r for r in recs if r.get("type") in ("killed", "signal")]
            ck.check(killed, "no killed/signal record in the trace of the crash")
            ok = any(r.get("signal") in (11, "11", "SIGSEGV") or "SIGSEGV" in str(r) for r in killed)
            ck.check(ok, f"no signal/killed record names SIGSEGV: {killed[:3]}")


def check_unmatched_reported(ck, binary, run_args, prog, traceable):
    """In a stripped binary, a pattern that finds nothing is reported on stderr."""
    names = []
    for pat in prog.patterns.split(","):
        if not any(fnmatch.fnmatchcase(n, pat) for n in traceable):
            names.append(pat)
    if not names:
        return
    with h.TempDir() as tmp:
        tr = h.trace([binary] + run_args, prog.patterns, os.path.join(tmp, "out"), quiet=False)
        for pat in names:
            ck.check(pat in tr.result.err,
                     f"pattern {pat!r} matches nothing in the stripped binary but stderr does "
                     f"not say so\n{tr.result.describe()}")
        print(f"stripped: unmatched pattern(s) {names} reported")


def expand_args(args):
    return [a.replace("@PROGS@", os.path.abspath(h.progs_dir())) for a in args]


def check_run(ck, prog_name, variant, binary, prog, run, first):
    run.args = expand_args(run.args)
    patterns = run.patterns or prog.patterns
    label = f"{prog_name}-{variant} {' '.join(run.args)}".strip()
    if run.patterns:
        label += f" (-a {run.patterns})"
    if run.pattern_file:
        label += f" (-a @FILE: {run.pattern_file})"
    if run.follow:
        label += " (-f)"
    print(f"=== {label}")
    untraced = h.run([binary] + run.args)
    if not ck.check(untraced.status == run.status and not untraced.timed_out,
                    f"{label}: untraced run should exit {run.status}\n{untraced.describe()}"):
        return
    exp = h.parse_expectations(untraced.out)
    if not ck.check(exp.calls, f"{label}: program printed no 'calls' line\n{untraced.describe()}"):
        return
    if run.follow:
        exp.calls.update(exp.follow_calls)
    names = exp.names()
    traceable = traceable_names(binary, names)
    stripped = h.is_stripped(binary)

    with h.TempDir() as tmp:
        outdir = os.path.join(tmp, "traces")  # functracer must create it
        if run.pattern_file:
            patterns = "@" + os.path.join(tmp, "patterns.txt")
            with open(patterns[1:], "w") as f:
                f.write("\n".join(run.pattern_file) + "\n")
        tr = h.trace([binary] + run.args, patterns, outdir,
                     extra=["-f"] if run.follow else [])
        res = tr.result
        print(f"traced in {res.seconds:.2f}s (untraced {untraced.seconds:.2f}s)")
        if res.timed_out:
            ck.fail(f"{label}: traced run timed out\n{res.describe()}")
            return
        ck.check(res.status == untraced.status,
                 f"{label}: exit status differs: untraced {untraced.status}, traced "
                 f"{res.status}\n{res.describe()}")
        ck.check(res.stdout == untraced.stdout,
                 f"{label}: stdout differs\n--- untraced ---\n{untraced.out}\n{res.describe()}")
        ck.check(res.stderr == untraced.stderr,
                 f"{label}: stderr differs in a -q run\n--- untraced ---\n{untraced.err}\n"
                 f"{res.describe()}")
        nfiles_ok = len(tr.files) > 1 if run.follow else len(tr.files) == 1
        if not ck.check(nfiles_ok,
                        f"{label}: expected {'several trace files' if run.follow else 'one trace file'}"
                        f" in {outdir}, found "
                        f"{[os.path.basename(f) for f in tr.files]}\n{res.describe()}"):
            if not tr.files:
                return
        base = os.path.basename(binary)
        for f in ([] if run.follow else tr.files):
            ck.check(re.fullmatch(re.escape(base) + r"\.\d+\.trace", os.path.basename(f)),
                     f"{label}: trace file name {os.path.basename(f)!r} is not "
                     f"{base}.<pid>.trace")

        records = h.dump_records(ck, tr.files)
        if records is None:
            return
        a = h.analyze(records)
        h.report_problems(ck, a, label)
        ck.check(a.types.get("header", 0) >= 1, f"{label}: no header record")
        print(f"dump: {len(records)} records, {dict(a.types)}")

        wrong = []
        for n in names:
            want = exp.calls[n] if n in traceable else 0
            if a.calls[n] != want:
                wrong.append(f"{n}: want {want}, trace has {a.calls[n]}")
        if wrong:
            ck.fail(f"{label}: call records per function differ from the program's counts:\n  " +
                    "\n  ".join(wrong))
        else:
            print(f"dump: call counts agree for {len(names)} functions"
                  f"{' (traceable: ' + ','.join(sorted(traceable)) + ')' if stripped else ''}")

        for (pid, image, n), addrs in sorted(a.addresses.items()):
            if n in names and len(addrs) > 1:
                ck.fail(f"{label}: calls of {n} in pid {pid}"
                        f"{f' (after exec {image})' if image else ''} reported at several "
                        f"addresses {[hex(x) for x in sorted(addrs)]}")

        # unwound records: exactly the ones the program expects, for its functions.
        # An expectation may accept several reasons ("exit|exception").
        groups = [(tuple(k.split("|")), v) for k, v in exp.unwound.items()]
        covered = {r for g, _ in groups for r in g}
        groups += [((r,), {}) for r in a.unwound if r not in covered]
        wrong = []
        for reasons, per in groups:
            for n in names:
                want = per.get(n, 0) if n in traceable else 0
                got = sum(a.unwound.get(r, {}).get(n, 0) for r in reasons)
                if got != want:
                    wrong.append(f"{n} reason {'|'.join(map(str, reasons))}: want {want}, "
                                 f"trace has {got}")
        if wrong:
            ck.fail(f"{label}: unwound records differ from what the program expects:\n  " +
                    "\n  ".join(wrong))
        elif any(exp.unwound.values()):
            print("dump: unwound records agree " +
                  ", ".join(f"{r}={sum(v.values())}" for r, v in exp.unwound.items()))

        check_lifecycle(ck, label, records, run.status, exp)

        for name, per, tids in exp.per_thread:
            if name not in traceable:
                continue
            counts = [t.calls[name] for t in a.threads if t.calls[name]]
            ck.check(len(counts) == tids and all(c == per for c in counts),
                     f"{label}: want {tids} threads each calling {name} {per} times, trace "
                     f"shows {len(counts)} threads with counts {sorted(set(counts))}")

        funcs = h.calls_report(ck, tr.files)
        if funcs is not None:
            wrong = []
            for n in names:
                want = exp.calls[n] if n in traceable else 0
                got = h.find_calls_entry(funcs, n)
                if got != want:
                    wrong.append(f"{n}: want {want}, calls --json says {got}")
            if wrong:
                ck.fail(f"{label}: calls --json differs from the program's counts:\n  " +
                        "\n  ".join(wrong))
            else:
                print("calls --json: counts agree")
            for f in funcs:
                if h.base_name(f.get("name")) in names:
                    ck.check(0 <= int(f["self_ns"]) <= int(f["total_ns"]),
                             f"{label}: calls --json self_ns > total_ns or negative: {f}")

        tree = h.run_postproc(["tree"] + tr.files)
        ck.check(tree.status == 0, f"{label}: tree report failed\n{tree.describe()}")
        some = [n for n in names if n in traceable and exp.calls[n] > 0]
        if tree.status == 0 and some:
            ck.check(any(n in tree.out for n in some),
                     f"{label}: tree report names none of {some}\n{tree.describe()}")

        if run.follow and exp.proc_calls:
            check_per_process(ck, label, tr.files, exp, traceable, binary)

        if prog_name == "recursion":
            check_fib_values(ck, a)

    if first and "O2" in variant and not stripped:
        check_no_clones(ck, binary, set(names))
        check_tail_jumps(ck, binary, prog)
        if prog.no_uprobes:
            print(f"bpftrace: not compared: {prog.no_uprobes}")
        else:
            want_calls = dict(exp.calls)
            if prog.uprobes_follow:
                want_calls.update(exp.follow_calls)
                print("bpftrace: comparing with the counts over all processes (follow calls)")
            compare_with_bpftrace(ck, binary, run.args, want_calls, names)
    if prog_name == "crash":
        check_crash_report(ck, binary, run.args)
    if stripped and first:
        check_unmatched_reported(ck, binary, run.args, prog, traceable)


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    prog_name, variant, binary = sys.argv[1:]
    binary = os.path.abspath(binary)
    prog = PROGRAMS[prog_name]
    ck = h.Checker(f"{prog_name}-{variant}")
    for i, run in enumerate(prog.runs):
        check_run(ck, prog_name, variant, binary, prog, run, first=(i == 0))
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What version 2 of the plugin API added, through tests/plugins/apitest.c.

usage: test_plugin_api.py APITEST_SO DLOPEN_LIB DLOPEN_PROG... PLUGINAPI_PROG...

(programs are told apart by name: dlopen-* and pluginapi-*)

apitest writes what it sees into the trace; the records are judged here against
the programs' own statements and the binaries (nm, readelf):

pluginapi-* (tests/progs/pluginapi.c: known write(2) calls, a chain
main -> pa_top -> pa_mid -> pa_leaf):
  * syscall: the entries of write(2) on fd 1 are the program's writes on fd 1 (it
    says how many), their byte counts add up to its stdout, their exits return
    those counts; the one write on fd 2 and the one on a closed descriptor (result
    -9, -EBADF) are reported with their own fd; host->arg/retval agree with
    ft_syscall; entries and exits alternate per thread with the same number; each
    write on fd 1 lies between the call and the return of pa_writer;
  * tags: every call and return event carries the tag apitest gave its function
    (0 for the first pattern, never set), distinct per function; *tag is 0 when
    `symbol` is called; with a second copy of the plugin loaded next to it, each
    copy sees its own tags and all the events;
  * backtrace: at the call and the return of pa_leaf the frames name pa_mid,
    pa_top, main in that order (resolved with nm on the program, whose base comes
    from the module records), likewise one level less for pa_mid and pa_top; the
    return's first frame is the call's; at a write(2) stop the first frame is in
    libc and the next in pa_writer;
  * module: the program, the dynamic linker and libc are announced (build-id of the
    program as readelf says), every symbol offered between two `module` calls
    belongs to the module announced by the first of them, and the program and libc
    are announced before any call;
  * events: FT_EVENT_PROCESS_CREATED with value 0, address 0 and text "launch" for
    the launched program, FT_EVENT_EXITED with status 0 last;
  * cost: with apitest next to calltrace, --stats counts exactly one more ptrace
    stop per system call entry and exit than with calltrace alone.
dlopen-* (tests/progs/dlopen.c loads, uses and unloads dlopen_lib.so three times):
  * the library is announced loaded, then unloaded at the same base, three times;
    its symbols are offered right after each load and only then; every call of its
    functions lies between a load and the next unload, inside that load's range;
  * a backtrace taken in the `module` callback of the library reaches dl_round,
    the program's function that called dlopen / dlclose.
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from test_plugin_example import read_trace  # noqa: E402

RUN_TIMEOUT = 300
SYS_WRITE, SYS_EXIT, SYS_EXIT_GROUP = 1, 60, 231
EBADF = 9
EV_PROCESS_CREATED, EV_EXITED = 0, 5
CHAIN = ["pa_top", "pa_mid", "pa_leaf"]
PLUGINAPI_PATTERNS = ["pa_writer"] + CHAIN
DLOPEN_PATTERNS = ["dl_round", "dll_outer", "dll_inner"]


def tag_of(patterns, name, instance):
    """The tag apitest gives a function (see tests/plugins/apitest.c)."""
    i = patterns.index(name)
    return 0 if i == 0 else (i << 8) | len(instance)


class Symbols:
    """Function ranges of an ELF file, from nm, and its load address."""

    def __init__(self, path):
        self.path = path
        out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                             text=True, check=False).stdout
        syms = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "Tt":
                syms.append((int(f[0], 16), int(f[1], 16), f[3]))
            elif len(f) == 3 and f[1] in "Tt":
                syms.append((int(f[0], 16), 0, f[2]))
        self.syms = sorted(syms)
        loads = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                               check=False).stdout
        vaddrs = [int(m.group(1), 16) for m in
                  re.finditer(r"^\s*LOAD\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", loads, re.M)]
        self.min_vaddr = (min(vaddrs) if vaddrs else 0) & ~0xfff
        notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True,
                               check=False).stdout
        m = re.search(r"Build ID:\s*([0-9a-f]+)", notes)
        self.build_id = m.group(1) if m else ""

    def function_at(self, vaddr):
        best = None
        for i, (start, size, name) in enumerate(self.syms):
            if start > vaddr:
                break
            end = start + size if size else (self.syms[i + 1][0] if i + 1 < len(self.syms)
                                             else start + 1)
            if vaddr < end:
                best = name
        return best


def resolve(addr, modules, symbols):
    """'name' for an address in a module with known symbols, 'MODULE-BASENAME' for
    another announced module, '?' outside every announced module. Frames are
    return addresses (or a pc just after an instruction): addr - 1 is looked up."""
    for m in modules:
        if m["base"] <= addr - 1 < m["end"]:
            syms = symbols.get(m["path"])
            if syms is None:
                return os.path.basename(m["path"])
            return syms.function_at(addr - 1 - m["base"] + syms.min_vaddr) or "?"
    return "?"


def loaded_modules(records):
    return [r for r in records if r["type"] == "api_module" and r.get("loaded") == 1]


def run_traced(ck, plugins, patterns, argv, tmp, name):
    outdir = os.path.join(tmp, name)
    cmd = [h.functracer(), "-q"]
    for p in plugins:
        cmd += ["-e", p]
    cmd += ["-a", ",".join(patterns), "--uncompressed", "-o", outdir] + argv
    res = h.run(cmd, timeout=RUN_TIMEOUT)
    untraced = h.run(argv)
    ok = ck.check(res.status == 0, f"{name}: functracer failed\n{res.describe()}")
    ok &= ck.check_eq(res.stdout, untraced.stdout, f"{name}: traced stdout")
    ok &= ck.check_eq(res.stderr, untraced.stderr, f"{name}: traced stderr")
    files = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    if not ck.check(len(files) == 1, f"{name}: one trace file expected, got {files}"):
        return None, untraced
    try:
        records = read_trace(os.path.join(outdir, files[0]))
    except (ValueError, KeyError, IndexError) as e:
        ck.fail(f"{name}: cannot read the trace: {e}")
        return None, untraced
    return records, untraced


def mine(records, instance):
    return [r for r in records if r["type"].startswith("api_") and r.get("plugin") == instance]


# --------------------------------------------------------------------------
# Checks shared by both programs.


def check_offers_and_modules(ck, recs, name, program):
    """Symbols offered only after their module's announcement; program, dynamic
    linker and libc announced; the program first, with its build-id."""
    mods = [r for r in recs if r["type"] == "api_module"]
    if not ck.check(mods, f"{name}: no api_module records"):
        return
    first = mods[0]
    ck.check(first.get("path") == program and first.get("main") == 1 and first.get("loaded") == 1,
             f"{name}: the first module announced is not the program: {first}")
    ck.check_eq(first.get("build_id"), Symbols(program).build_id, f"{name}: program's build-id")
    ck.check(sum(1 for m in mods if m.get("main") == 1) == 1,
             f"{name}: more than one module announced as the main program")
    paths = [m.get("path", "") for m in loaded_modules(recs)]
    for what, pat in (("the dynamic linker", r"/ld-linux[^/]*\.so"), ("libc", r"/libc\.so\.6$")):
        ck.check(any(re.search(pat, p) for p in paths), f"{name}: {what} never announced: {paths}")

    # api_offers comes before every api_module record and at the end: it counts the
    # offers since the module announced before it.
    last_module = None
    offered = {}
    for r in recs:
        if r["type"] == "api_module":
            last_module = r
        elif r["type"] == "api_offers":
            n, stray = r.get("n"), r.get("stray")
            ck.check(stray == 0, f"{name}: {stray} of {n} symbols offered after the announcement "
                                 f"of {r.get('module')!r} were not in that module (seq {r['seq']})")
            if last_module is None or last_module.get("loaded") != 1:
                ck.check(n == 0, f"{name}: {n} symbols offered with no module announced "
                                 f"(after {last_module})")
            else:
                ck.check_eq(r.get("module"), last_module.get("path"),
                            f"{name}: api_offers after the announcement of a module")
                offered.setdefault(last_module.get("path"), []).append(n)
    for path in [program] + [p for p in paths if re.search(r"/libc\.so\.6$", p)]:
        ck.check(offered.get(path) and all(n > 0 for n in offered[path]),
                 f"{name}: no symbols offered right after the announcement of {path}: "
                 f"{offered.get(path)}")
    calls = [r for r in recs if r["type"] == "api_call"]
    libc = [m for m in loaded_modules(recs) if re.search(r"/libc\.so\.6$", m.get("path", ""))]
    if calls and libc:
        ck.check(libc[0]["seq"] < calls[0]["seq"], f"{name}: libc announced after the first call")


def check_events(ck, recs, name):
    evs = [r for r in recs if r["type"] == "api_event"]
    if not ck.check(evs, f"{name}: no api_event records"):
        return
    created = [e for e in evs if e.get("kind") == EV_PROCESS_CREATED]
    ck.check(len(created) == 1 and created[0] is evs[0],
             f"{name}: FT_EVENT_PROCESS_CREATED should come once, first: {evs[:3]}")
    if created:
        ck.check(created[0].get("value") == 0 and created[0].get("address") == 0 and
                 created[0].get("text") == "launch",
                 f"{name}: FT_EVENT_PROCESS_CREATED of the launched program should have value 0 "
                 f"(no traced parent), address 0 (not attached) and text \"launch\": {created[0]}")
    ck.check(evs[-1].get("kind") == EV_EXITED and evs[-1].get("value") == 0,
             f"{name}: the last event should be FT_EVENT_EXITED with status 0: {evs[-1]}")


def check_tags(ck, recs, name, patterns, instance):
    seen = {}
    for r in recs:
        if r["type"] not in ("api_call", "api_return"):
            continue
        fn = r.get("function")
        if fn not in patterns:
            ck.fail(f"{name}: event of {fn}, which no pattern names")
            continue
        seen.setdefault(fn, set()).add(r.get("tag"))
    want = {fn: {tag_of(patterns, fn, instance)} for fn in patterns}
    ck.check_eq(seen, want, f"{name}: tags in the call and return events of {instance}")
    checks = [r for r in recs if r["type"] == "api_checks"]
    ck.check(checks and all(c.get("tag_not_zero") == 0 for c in checks),
             f"{name}: `symbol` was called with *tag != 0: {checks}")


def check_counts(ck, recs, name, want):
    for rtype in ("api_call", "api_return"):
        got = {fn: sum(1 for r in recs if r["type"] == rtype and r.get("function") == fn)
               for fn in want}
        ck.check_eq(got, want, f"{name}: {rtype} records per function")


# --------------------------------------------------------------------------
# pluginapi-*


def check_syscalls(ck, recs, name, untraced):
    exp = h.parse_expectations(untraced.out)
    m = re.search(r"^writes fd1=(\d+) closed_fd=(\d+)$", untraced.out, re.M)
    if not ck.check(m, f"{name}: the program did not say how many writes it made"):
        return
    writes, closed_fd = int(m.group(1)), int(m.group(2))
    sys_recs = [r for r in recs if r["type"] == "api_sys"]
    entries = [r for r in sys_recs if r.get("phase") == "entry"]
    exits = [r for r in sys_recs if r.get("phase") == "exit"]

    # Pairing: per thread, entry then exit of the same call.
    open_entry = {}
    for r in sys_recs:
        tid = r["tid"]
        if r.get("phase") == "entry":
            prev = open_entry.get(tid)
            ck.check(prev is None, f"{name}: entry of system call {r.get('nr')} while "
                                   f"{prev and prev.get('nr')} has not returned (seq {r['seq']})")
            open_entry[tid] = r
        else:
            prev = open_entry.pop(tid, None)
            ck.check(prev is not None and prev.get("nr") == r.get("nr"),
                     f"{name}: exit of system call {r.get('nr')} without its entry "
                     f"(open: {prev and prev.get('nr')}, seq {r['seq']})")
    for tid, r in open_entry.items():
        ck.check(r.get("nr") in (SYS_EXIT, SYS_EXIT_GROUP),
                 f"{name}: system call {r.get('nr')} of thread {tid} never returned")

    def exit_of(entry):
        for r in exits:
            if r["tid"] == entry["tid"] and r["seq"] > entry["seq"]:
                return r
        return None

    fd1 = [r for r in entries if r.get("nr") == SYS_WRITE and r.get("fd") == 1]
    ck.check_eq(len(fd1), writes, f"{name}: write(2) entries on fd 1 (the program made {writes})")
    ck.check_eq(sum(r.get("count", 0) for r in fd1), len(untraced.stdout),
                f"{name}: bytes asked by the write(2) calls on fd 1 (= the program's stdout)")
    rets = [exit_of(r) for r in fd1]
    ck.check_eq(sum(x.get("ret", 0) for x in rets if x), len(untraced.stdout),
                f"{name}: results of the write(2) calls on fd 1")
    fd2 = [r for r in entries if r.get("nr") == SYS_WRITE and r.get("fd") == 2]
    ck.check_eq([(r.get("count"), (exit_of(r) or {}).get("ret")) for r in fd2],
                [(len(untraced.stderr), len(untraced.stderr))],
                f"{name}: the write(2) on fd 2 (count, result)")
    bad = [r for r in entries if r.get("nr") == SYS_WRITE and r.get("fd") == closed_fd]
    ck.check_eq([(r.get("count"), (exit_of(r) or {}).get("ret")) for r in bad], [(1, -EBADF)],
                f"{name}: the write(2) on closed fd {closed_fd} (count, result)")

    summary = [r for r in recs if r["type"] == "api_writes"]
    ck.check_eq([(s.get("calls"), s.get("bytes_asked"), s.get("bytes_written")) for s in summary],
                [(writes, len(untraced.stdout), len(untraced.stdout))],
                f"{name}: the plugin's own count of write(2) on fd 1 (calls, asked, written)")
    checks = [r for r in recs if r["type"] == "api_checks"]
    ck.check(checks and all(c.get("arg_mismatch") == 0 and c.get("retval_mismatch") == 0
                            for c in checks),
             f"{name}: host->arg/retval disagree with ft_syscall at system call stops: {checks}")

    # Every write on fd 1 comes from pa_writer, between its call and its return.
    writer_open = None
    inside = 0
    for r in recs:
        if r["type"] == "api_call" and r.get("function") == "pa_writer":
            writer_open = r
        elif r["type"] == "api_return" and r.get("function") == "pa_writer":
            writer_open = None
        elif r in fd1:
            inside += writer_open is not None
    ck.check_eq(inside, len(fd1), f"{name}: write(2) calls on fd 1 inside pa_writer")
    ck.check_eq(exp.calls.get("pa_writer"), writes, f"{name}: the program's pa_writer count")
    return fd1


def check_backtraces(ck, recs, name, program, fd1):
    mods = loaded_modules(recs)
    symbols = {program: Symbols(program)}

    def names(r, n):
        return [resolve(a, mods, symbols) for a in r.get("frames", [])[:n]]

    want = {"pa_leaf": ["pa_mid", "pa_top", "main"], "pa_mid": ["pa_top", "main"],
            "pa_top": ["main"]}
    bad = []
    checked = 0
    calls = {}
    for r in recs:
        if r["type"] not in ("api_call", "api_return") or r.get("function") not in want:
            continue
        w = want[r["function"]]
        got = names(r, len(w))
        checked += 1
        if got != w:
            bad.append(f"{r['type']} {r['function']} (seq {r['seq']}): frames {got}, want {w}; "
                       f"raw {[hex(a) for a in r.get('frames', [])]}")
        if r["type"] == "api_call":
            calls.setdefault(r["function"], []).append(r)
        else:
            c = calls.get(r["function"], [])
            if c:
                opened = c.pop()
                if opened.get("frames", [None])[:1] != r.get("frames", [None])[:1]:
                    bad.append(f"return of {r['function']} (seq {r['seq']}): first frame "
                               f"{r.get('frames', [])[:1]}, at the call "
                               f"{opened.get('frames', [])[:1]}")
    ck.check(checked > 0, f"{name}: no call/return events of the chain")
    ck.check(not bad, f"{name}: backtraces at calls/returns of the chain:\n  " +
             "\n  ".join(bad[:8]))
    if checked and not bad:
        print(f"{name}: {checked} backtraces at calls and returns name the callers "
              f"(pa_leaf: pa_mid, pa_top, main)")

    bad = []
    for r in fd1:
        got = names(r, 2)
        if len(got) != 2 or not got[0].startswith("libc.so") or got[1] != "pa_writer":
            bad.append(f"seq {r['seq']}: {got}; raw {[hex(a) for a in r.get('frames', [])]}")
    ck.check(not bad, f"{name}: backtraces at write(2) stops should start in libc, then "
                      f"pa_writer:\n  " + "\n  ".join(bad[:5]))


def test_pluginapi(ck, apitest, program, tmp):
    name = os.path.basename(program)
    records, untraced = run_traced(ck, [apitest], PLUGINAPI_PATTERNS, [program], tmp, name)
    if records is None:
        return
    ck.check(untraced.status == 0, f"{name}: untraced run failed\n{untraced.describe()}")
    exp = h.parse_expectations(untraced.out)
    recs = mine(records, "apitest")
    ck.check(len(recs) == sum(1 for r in records if r["type"].startswith("api_")),
             f"{name}: api_ records of an instance other than apitest")
    check_events(ck, recs, name)
    check_offers_and_modules(ck, recs, name, program)
    check_counts(ck, recs, name, {fn: exp.calls.get(fn) for fn in PLUGINAPI_PATTERNS})
    check_tags(ck, recs, name, PLUGINAPI_PATTERNS, "apitest")
    fd1 = check_syscalls(ck, recs, name, untraced)
    if fd1 is not None:
        check_backtraces(ck, recs, name, program, fd1)


def test_two_instances(ck, apitest, program, tmp):
    """A second copy of the plugin: each instance its own tags, all events to both."""
    second = os.path.join(tmp, "apitest_second.so")
    shutil.copyfile(apitest, second)
    name = os.path.basename(program) + " with two instances"
    records, untraced = run_traced(ck, [apitest, second], PLUGINAPI_PATTERNS, [program], tmp,
                                   "two-instances")
    if records is None:
        return
    exp = h.parse_expectations(untraced.out)
    for instance in ("apitest", "apitest_second"):
        recs = mine(records, instance)
        what = f"{name}, {instance}"
        check_counts(ck, recs, what, {fn: exp.calls.get(fn) for fn in PLUGINAPI_PATTERNS})
        check_tags(ck, recs, what, PLUGINAPI_PATTERNS, instance)
        summary = [r for r in recs if r["type"] == "api_writes"]
        ck.check_eq([s.get("bytes_written") for s in summary], [len(untraced.stdout)],
                    f"{what}: bytes written on fd 1")
    print(f"{name}: tags {sorted({r.get('tag') for r in records if r['type'] == 'api_call'})}")


def test_syscall_cost(ck, apitest, program, tmp):
    """A `syscall` callback costs exactly the stops of the system calls: one at each
    entry and one at each exit (--stats, calltrace alone and with apitest)."""
    name = os.path.basename(program) + " --stats"
    stops = []
    # Entries at a breakpoint and returns through the trampoline in both runs:
    # calltrace alone would have its calls recorded in the process, which apitest (a
    # plugin that does not declare what it reads) turns off for the functions it
    # shares, so the difference would also count those calls' stops.
    env = dict(os.environ, FT_FAST_RETURNS="0", FT_FAST_PATH="0")
    for plugins in (["calltrace"], ["calltrace", apitest]):
        outdir = os.path.join(tmp, f"stats-{len(plugins)}")
        cmd = [h.functracer(), "-q", "--stats"]
        for p in plugins:
            cmd += ["-e", p]
        res = h.run(cmd + ["-a", ",".join(PLUGINAPI_PATTERNS), "--uncompressed", "-o", outdir, program],
                    timeout=RUN_TIMEOUT, env=env)
        m = re.search(r"(\d+) ptrace stops", res.err)
        if not ck.check(res.status == 0 and m, f"{name}: no stop count\n{res.describe()}"):
            return
        stops.append(int(m.group(1)))
    files = os.listdir(outdir)
    try:
        recs = mine(read_trace(os.path.join(outdir, files[0])), "apitest") if len(files) == 1 else []
    except (ValueError, KeyError, IndexError):
        recs = []
    sys_recs = [r for r in recs if r["type"] == "api_sys"]
    entries = sum(1 for r in sys_recs if r.get("phase") == "entry")
    ck.check(entries > 0, f"{name}: no system calls reported")
    ck.check_eq(len(sys_recs), 2 * entries - 1,
                f"{name}: entries and exits (every call returns but exit_group)")
    ck.check_eq(stops[1] - stops[0], len(sys_recs),
                f"{name}: stops added by the `syscall` callback (stops {stops[0]} -> {stops[1]}), "
                f"one per system call entry and exit")
    print(f"{name}: {entries} system calls: {stops[0]} -> {stops[1]} ptrace stops")


# --------------------------------------------------------------------------
# dlopen-*


def test_dlopen(ck, apitest, program, lib, tmp):
    name = os.path.basename(program)
    records, untraced = run_traced(ck, [apitest], DLOPEN_PATTERNS, [program, lib], tmp, name)
    if records is None:
        return
    exp = h.parse_expectations(untraced.out)
    recs = mine(records, "apitest")
    lib = os.path.realpath(lib)
    check_events(ck, recs, name)
    check_offers_and_modules(ck, recs, name, program)
    check_counts(ck, recs, name, {fn: exp.calls.get(fn) for fn in DLOPEN_PATTERNS})
    check_tags(ck, recs, name, DLOPEN_PATTERNS, "apitest")

    lib_mods = [r for r in recs if r["type"] == "api_module" and r.get("path") == lib]
    ck.check_eq([m.get("loaded") for m in lib_mods], [1, 0] * exp.calls.get("dl_round", 0),
                f"{name}: announcements of {lib} (1: loaded, 0: unloaded)")
    for load, unload in zip(lib_mods[0::2], lib_mods[1::2]):
        ck.check((load.get("base"), load.get("end")) == (unload.get("base"), unload.get("end")),
                 f"{name}: unloaded at another place than loaded: {load} / {unload}")

    # Calls of the library's functions: inside a load window and its range; dlopen
    # and dlclose run inside dl_round.
    windows = []
    for i, m in enumerate(lib_mods):
        if m.get("loaded") == 1:
            end_seq = lib_mods[i + 1]["seq"] if i + 1 < len(lib_mods) else float("inf")
            windows.append((m["seq"], end_seq, m["base"], m["end"]))
    outside = []
    for r in recs:
        if r["type"] == "api_call" and r.get("function") in ("dll_outer", "dll_inner"):
            ok = r.get("module") == lib and any(
                s < r["seq"] < e and b <= r.get("address", -1) < end for s, e, b, end in windows)
            if not ok:
                outside.append(f"{r.get('function')} seq {r['seq']} at {hex(r.get('address', 0))}")
    ck.check(not outside, f"{name}: calls of the library outside its load windows: {outside[:5]}")
    depth_in_round = 0
    bad = []
    for r in recs:
        if r.get("function") == "dl_round":
            depth_in_round += 1 if r["type"] == "api_call" else -1 if r["type"] == "api_return" else 0
        elif r in lib_mods and depth_in_round != 1:
            bad.append(r["seq"])
    ck.check(not bad, f"{name}: the library announced outside dl_round: seq {bad}")

    # The backtrace in the `module` callback reaches the program's dl_round.
    mods = loaded_modules(recs)
    symbols = {program: Symbols(program)}
    bad = []
    for m in lib_mods:
        got = [resolve(a, mods, symbols) for a in m.get("frames", [])]
        if not got or not got[0].startswith("ld-linux") or "dl_round" not in got:
            bad.append(f"{'load' if m.get('loaded') else 'unload'} (seq {m['seq']}): {got}; raw "
                       f"{[hex(a) for a in m.get('frames', [])]}")
    ck.check(not bad, f"{name}: backtraces taken in the `module` callback of {lib} should start "
                      f"in the dynamic linker and reach dl_round:\n  " + "\n  ".join(bad[:6]))
    if lib_mods:
        print(f"{name}: {len(lib_mods)} announcements of {os.path.basename(lib)}")


def main():
    if len(sys.argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    apitest, dlopen_lib = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    progs = [os.path.abspath(p) for p in sys.argv[3:]]
    ck = h.Checker("plugin-api")
    h.require_tools("plugin-api", ["nm", "readelf"], "binutils")
    with h.TempDir(prefix="ft-plugin-api-") as tmp:
        for p in progs:
            base = os.path.basename(p)
            if base.startswith("pluginapi-"):
                test_pluginapi(ck, apitest, p, tmp)
            elif base.startswith("dlopen-"):
                test_dlopen(ck, apitest, p, dlopen_lib, tmp)
            else:
                ck.fail(f"unknown program {p}")
        pa = [p for p in progs if os.path.basename(p).startswith("pluginapi-")]
        if pa:
            test_two_instances(ck, apitest, pa[-1], tmp)
            test_syscall_cost(ck, apitest, pa[-1], tmp)
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

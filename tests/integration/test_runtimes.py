#!/usr/bin/env python3
"""Language runtimes that walk their threads' native stacks themselves, traced with
broad patterns (tests/progs/runtimes): a JVM under `-a '*@libjvm.so'` and node under
`-a '*'`.

usage: test_runtimes.py jvm|node

Both died before their functions' returns were caught at their exits (HotSpot of
SIGSEGV in frame::sender, which met functracer's trampoline address on a native
stack; node of SIGSEGV after V8 moved hijacked return addresses). Checked:
- the traced run's output, exit status and stderr (functracer's lines about
  functions it cannot trace aside) equal the untraced run's;
- call counts of functions the program determines equal kernel uprobe counts
  (bpftrace, on private copies of libjvm.so and of node, in an untraced run) and the
  program's own: JNI_CreateJavaVM once, JVM_StartThread per Java thread started,
  JVM_FillInStackTrace per exception made (at least the ones the program caught);
  V8's Runtime_Throw per JavaScript throw;
- every call in the trace is closed by a return or an unwound record, and no return
  went through a moved return address (no `lost` record).
Without bpftrace (or root) the counts are checked against the program's own numbers
only, and the test says so. Skipped (status 77) without java/javac (Debian package
default-jdk-headless) or node (nodejs). These runs take minutes (every call and
return of the runtime's code is a ptrace stop): the test is in the suite `runtimes`
(tests/README.md), run by `bash .ci/run runtimes`.
"""

import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

PROGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "progs", "runtimes")
EXIT_STATUS = 3
TIMEOUT = 3000


def private_jdk(tmp):
    """A JDK whose libjvm.so is a private copy (a uprobe on it counts this test's java
    alone): the launcher finds the JVM next to its own file, so bin/java and
    lib/server/libjvm.so are copies, everything else a symbolic link to the system's."""
    home = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("java"))))
    jdk = os.path.join(tmp, "jdk")

    def mirror(src, dst, copies):
        os.makedirs(dst)
        for name in os.listdir(src):
            s, d = os.path.join(src, name), os.path.join(dst, name)
            if name in copies and isinstance(copies[name], dict):
                mirror(s, d, copies[name])
            elif name in copies:
                shutil.copy2(s, d)
            else:
                os.symlink(s, d)

    mirror(home, jdk, {"bin": {"java": True}, "lib": {"server": {"libjvm.so": True}}})
    return os.path.join(jdk, "bin", "java"), os.path.join(jdk, "lib", "server", "libjvm.so")


def scan_trace(ck, label, outdir):
    """Streams `dump --json` of the traces (millions of records): record types, and
    calls left open per thread at the end."""
    cmd = [h.postproc(), "dump", "--json", outdir]
    types = collections.Counter()
    open_calls = collections.Counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        for line in proc.stdout:
            rec = json.loads(line)
            kind = rec.get("type")
            types[kind] += 1
            if kind == "call":
                open_calls[rec.get("tid")] += 1
            elif kind in ("return", "unwound"):
                open_calls[rec.get("tid")] -= 1
        status = proc.wait()
    ck.check(status == 0, f"{label}: functracer-postproc dump failed (status {status})")
    unbalanced = {tid: n for tid, n in open_calls.items() if n != 0}
    ck.check(not unbalanced, f"{label}: calls not closed by a return or unwound record, per thread: "
                             f"{dict(list(unbalanced.items())[:10])}")
    ck.check(types["lost"] == 0, f"{label}: {types['lost']} lost records (returns through a moved "
                                 f"return address, or events that could not be recorded)")
    ck.check(types["call"] > 0, f"{label}: no calls in the trace")
    print(f"{label}: {sum(types.values())} records: {dict(types)}")
    return types


def traced_run(ck, label, cmd, pattern, outdir, untraced, cwd=None):
    tr = h.trace(cmd, pattern, outdir, timeout=TIMEOUT, compressed=True, cwd=cwd)
    res = tr.result
    same = (not res.timed_out and res.status == untraced.status and res.stdout == untraced.stdout
            and h.without_gaps(res.stderr) == untraced.stderr)
    ck.check(same, f"{label}: traced run differs from the untraced one\nuntraced:\n"
                   f"{untraced.describe(3000)}\ntraced:\n{res.describe(3000)}")
    return same


def calls_of(ck, outdir, names):
    funcs = h.calls_report(ck, [outdir])
    if funcs is None:
        return None
    return {name: h.find_calls_entry(funcs, name) for name in names}


def uprobe_counts(ck, label, probed, symbols, cmd, cwd=None):
    ok, why = h.bpftrace_usable()
    if not ok:
        print(f"NOTE {label}: {why}: call counts checked against the program's own numbers only",
              flush=True)
        return None
    counts, res = h.bpftrace_file_counts(probed, symbols, cmd)
    if not ck.check(counts is not None, f"{label}: bpftrace could not count\n{res.describe()}"):
        return None
    return {s: counts.get(s, 0) for s in symbols}


def jvm(ck, tmp):
    h.require_tools("runtimes-jvm", ["java", "javac"], "default-jdk-headless")
    built = h.run(["javac", "-d", tmp, os.path.join(PROGS, "Workers.java")], timeout=600)
    if not ck.check(built.status == 0, f"javac failed\n{built.describe()}"):
        return
    java, libjvm = private_jdk(tmp)
    cmd = [java, "-cp", tmp, "Workers"]
    untraced = h.run(cmd, timeout=600)
    if not ck.check(untraced.status == EXIT_STATUS and b"nobody catches this" in untraced.stderr,
                    f"untraced run: want status {EXIT_STATUS} and the uncaught exception\n"
                    f"{untraced.describe()}"):
        return
    own = dict(line.split(" ", 1) for line in untraced.out.splitlines())
    names = ["JNI_CreateJavaVM", "JVM_StartThread", "JVM_FillInStackTrace"]
    kernel = uprobe_counts(ck, "jvm", libjvm, names, cmd)
    outdir = os.path.join(tmp, "traces")
    if not traced_run(ck, "jvm", cmd, "*@libjvm.so", outdir, untraced):
        return
    got = calls_of(ck, outdir, names)
    if got is None:
        return
    ck.check_eq(got["JNI_CreateJavaVM"], 1, "calls of JNI_CreateJavaVM")
    ck.check(got["JVM_StartThread"] >= int(own["threads"]),
             f"JVM_StartThread: {got['JVM_StartThread']} calls, the program started {own['threads']} threads")
    ck.check(got["JVM_FillInStackTrace"] > int(own["caught"]),
             f"JVM_FillInStackTrace: {got['JVM_FillInStackTrace']} calls, the program made "
             f"{int(own['caught']) + 1} exceptions")
    if kernel is not None:
        for name in names:
            ck.check_eq(got[name], kernel[name], f"calls of {name} (kernel uprobes: {kernel[name]})")
    scan_trace(ck, "jvm", outdir)


def node(ck, tmp):
    h.require_tools("runtimes-node", ["node"], "nodejs")
    copy = os.path.join(tmp, "node")
    shutil.copy2(os.path.realpath(shutil.which("node")), copy)
    cmd = [copy, os.path.join(PROGS, "workers.js")]
    untraced = h.run(cmd, timeout=600)
    if not ck.check(untraced.status == EXIT_STATUS, f"untraced run: want status {EXIT_STATUS}\n"
                                                    f"{untraced.describe()}"):
        return
    own = dict(line.split(" ", 1) for line in untraced.out.splitlines())
    throw = "_ZN2v88internal13Runtime_ThrowEiPmPNS0_7IsolateE"
    kernel = uprobe_counts(ck, "node", copy, [throw], cmd)
    outdir = os.path.join(tmp, "traces")
    if not traced_run(ck, "node", cmd, "*", outdir, untraced):
        return
    got = calls_of(ck, outdir, ["v8::internal::Runtime_Throw"])  # as demangled, without parameters
    if got is None:
        return
    n = next(iter(got.values()))
    ck.check_eq(n, int(own["caught"]), "calls of v8::internal::Runtime_Throw (the program's throws)")
    if kernel is not None:
        ck.check_eq(n, kernel[throw], "calls of v8::internal::Runtime_Throw (kernel uprobes)")
    scan_trace(ck, "node", outdir)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("jvm", "node"):
        sys.stderr.write(__doc__)
        return 2
    which = sys.argv[1]
    ck = h.Checker("runtimes-" + which)
    with h.TempDir() as tmp:
        (jvm if which == "jvm" else node)(ck, tmp)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Trace files as users meet them: compressed by default, read from files, stdin and
pipes, named after the program each process ran, and told about at the end of the
run.

usage: test_trace_files.py RECURSION_EXECUTABLE ATTACH_TARGET_EXECUTABLE

  * compressed: `-o` writes NAME.PID.trace.zst; the zstd tool (an independent
    decoder) checks it and decodes it, and functracer-postproc reports the same from
    the .trace.zst as from the text zstd decoded;
  * cut short: the .trace.zst cut at random byte offsets reads like its plain twin
    (the decoded text) cut at the same record: the records postproc dumps from the
    cut file are exactly the complete lines the zstd tool decodes from it, and a cut
    in the last part loses at most the records after the last flush;
  * stdin and pipes: `-` and `<(zstd -dc FILE)` give the same reports as the file,
    for a one-pass report (dump) and a two-pass one (massif);
  * names after exec: `functracer -f -o DIR sh -c 'ls | sort | head'` leaves one file
    per process, named sh, ls, sort and head (the programs the shell's children
    became), each holding its process's own pid;
  * summary: a launched and an attached run end with a summary on stderr: per
    process its events and trace file with the records (counted in the decoded file)
    and size (the file's), a total, and a postproc command that runs (calls for
    calltrace, leaks for memtrace); -q prints none.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

N = 20  # fib(20): 21891 calls, about 3 MB of text: a dozen flushes
CUTS = 12


def zstd_decode(path):
    """What the zstd tool decodes from a (possibly cut) file, as bytes."""
    p = subprocess.run(["zstd", "-dc", "--no-progress", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.stdout, p.returncode


def dump_lines(ck, what, args):
    res = h.run_postproc(["dump", "--json"] + list(args))
    ck.check(res.status == 0, f"{what}: dump failed\n{res.describe()}")
    return res.out.splitlines(), res


def human_size(n):
    units = ["B", "KiB", "MiB", "GiB"]
    v, u = float(n), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return f"{n} B" if u == 0 else f"{v:.1f} {units[u]}"


def compressed(ck, binary, tmp):
    print("=== compressed traces, whole and cut short")
    outdir = os.path.join(tmp, "zst")
    tr = h.trace([binary, str(N)], "fib", outdir, quiet=False, compressed=True)
    res = tr.result
    ck.check_eq(res.status, 0, f"traced exit status\n{res.describe()}")
    files = sorted(os.listdir(outdir))
    ck.check_eq(files, [f"{os.path.basename(binary)}.{files[0].split('.')[-3]}.trace.zst"] if files else ["?"],
                "-o writes one NAME.PID.trace.zst")
    if not files:
        return None
    zst = os.path.join(outdir, files[0])
    t = subprocess.run(["zstd", "-t", "-q", zst], capture_output=True)
    ck.check(t.returncode == 0, f"zstd -t rejects {zst}: {t.stderr!r}")
    text, rc = zstd_decode(zst)
    ck.check_eq(rc, 0, "zstd -dc of the whole trace")
    plain = os.path.join(tmp, "twin.trace")
    with open(plain, "wb") as f:
        f.write(text)
    ck.check(text.startswith(b"functracer-trace 2\n"), "the decoded trace starts with the magic line")
    lines = text.count(b"\n")
    print(f"{zst}: {os.path.getsize(zst)} bytes compressed, {len(text)} bytes, {lines} lines decoded")
    ck.check(len(text) > 4 * 256 * 1024, f"the trace spans several flushes ({len(text)} bytes)")

    whole, _ = dump_lines(ck, "whole .trace.zst", [zst])
    twin, _ = dump_lines(ck, "plain twin", [plain])
    ck.check_eq(len(whole), lines - 1, "records dumped from the .trace.zst vs lines zstd decoded")
    ck.check(whole == twin, "dump of the .trace.zst differs from the dump of its decoded text")
    for report in (["calls", "--json"], ["tree"]):
        a = h.run_postproc(report + [zst])
        b = h.run_postproc(report + [plain])
        ck.check(a.status == 0 and a.out == b.out, f"{report[0]}: .trace.zst and plain twin differ\n"
                 f"{a.describe(800)}\n{b.describe(800)}")

    # Cuts: random offsets, and a few in the last 64 KiB (after the last flush).
    rng = random.Random(2026)
    size = os.path.getsize(zst)
    data = open(zst, "rb").read()
    offsets = sorted({rng.randrange(64, size) for _ in range(CUTS)} | {size - 1, size - 17, 40})
    for off in offsets:
        cut = os.path.join(tmp, f"cut-{off}.trace.zst")
        with open(cut, "wb") as f:
            f.write(data[:off])
        decoded, _ = zstd_decode(cut)
        complete = decoded[:decoded.rfind(b"\n") + 1]
        want = complete.count(b"\n") - 1  # records: the magic line is not one
        res = h.run_postproc(["dump", "--json", cut])
        if want < 1:
            ck.check(res.status != 0 or not res.out.strip(),
                     f"cut at {off}: nothing decodable, yet postproc dumped records\n{res.describe(800)}")
            continue
        got = res.out.splitlines()
        ck.check_eq(res.status, 0, f"cut at {off}: postproc exit status\n{res.describe(800)}")
        ck.check_eq(len(got), want, f"cut at {off}: records read vs complete lines the zstd tool decodes")
        ck.check(got == twin[:len(got)], f"cut at {off}: records differ from the plain twin's first {len(got)}")
        ck.check("cut short" in res.err or off == size, f"cut at {off}: no warning that the trace was cut\n"
                 f"{res.err[-500:]}")
    return zst, plain, whole


def inputs(ck, zst, plain, whole):
    print("=== standard input and pipes")
    with open(zst, "rb") as f:
        res = h.run([h.postproc(), "dump", "--json", "-"], stdin=f.read(), timeout=h.POSTPROC_TIMEOUT)
    ck.check(res.status == 0 and res.out.splitlines() == whole,
             f"dump - (a .trace.zst on stdin) differs from the file's dump\n{res.describe(800)}")
    with open(plain, "rb") as f:
        res = h.run([h.postproc(), "dump", "--json", "-"], stdin=f.read(), timeout=h.POSTPROC_TIMEOUT)
    ck.check(res.status == 0 and res.out.splitlines() == whole,
             f"dump - (plain text on stdin) differs from the file's dump\n{res.describe(800)}")
    pp = h.postproc()
    for report in (["dump", "--json"], ["calls", "--json"], ["tree", "--time"]):
        script = f'exec "$0" {" ".join(report)} <(zstd -dc "$1")'
        res = h.run(["bash", "-c", script, pp, zst], timeout=h.POSTPROC_TIMEOUT)
        ref = h.run_postproc(report + [zst])
        ck.check(res.status == 0 and res.out == ref.out,
                 f"{report[0]} on <(zstd -dc FILE) differs from {report[0]} on the file\n{res.describe(800)}")
        print(f"  {report[0]} on a pipe: {len(res.out)} bytes, same as on the file")


def heap_twice(ck, tmp):
    """massif reads its trace twice: a pipe must be read once and kept."""
    print("=== a two-pass report on a pipe")
    outdir = os.path.join(tmp, "heap")
    tr = h.trace(["/bin/ls", "/"], None, outdir, quiet=False, plugin="memtrace", compressed=True)
    files = [os.path.join(outdir, f) for f in sorted(os.listdir(outdir))] if os.path.isdir(outdir) else []
    if not ck.check(tr.result.status == 0 and len(files) == 1, f"memtrace on ls\n{tr.result.describe()}"):
        return
    # memtrace's summary suggests the leak report, heaptrack-style, and that command runs.
    cmd = [x for x in tr.result.err.splitlines() if x.startswith("functracer: to read the traces: ")]
    if ck.check(cmd and cmd[0].endswith(f"functracer-postproc leaks {outdir}"),
                f"memtrace: the summary does not suggest leaks {outdir}\n{tr.result.err[-1500:]}"):
        got = h.run_postproc(cmd[0].split("functracer-postproc ", 1)[1].split() + ["--json"])
        ref = h.run_postproc(["leaks", "--json", files[0]])
        ck.check(got.status == 0 and got.out == ref.out and "leaked_bytes" in got.out,
                 f"the suggested leaks command\n{got.describe(800)}\n{ref.describe(800)}")
    ref = h.run_postproc(["massif", "-o", os.path.join(tmp, "ref.massif"), files[0]])
    out = os.path.join(tmp, "pipe.massif")
    res = h.run(["bash", "-c", 'exec "$0" massif -o "$2" <(cat "$1")', h.postproc(), files[0], out],
                timeout=h.POSTPROC_TIMEOUT)
    ok = ref.status == 0 and res.status == 0
    ck.check(ok, f"massif on a file and on a pipe\n{ref.describe(800)}\n{res.describe(800)}")
    if ok:
        a = open(os.path.join(tmp, "ref.massif")).read()
        b = open(out).read()
        strip = lambda s: re.sub(r"^desc: .*$", "", s, flags=re.M)  # noqa: E731  (names the input)
        ck.check(strip(a) == strip(b) and "snapshot=" in a, "massif on a pipe differs from massif on the file")


def exec_names(ck, tmp):
    print("=== -f: files named after the program each process became")
    outdir = os.path.join(tmp, "pipeline")
    tr = h.trace(["/bin/sh", "-c", "ls / | sort | head -3"], "main", outdir, extra=["-f"], compressed=True)
    ck.check_eq(tr.result.status, 0, f"traced pipeline\n{tr.result.describe()}")
    sh = os.path.basename(os.path.realpath("/bin/sh"))
    names = {}
    for f in sorted(os.listdir(outdir)):
        m = re.fullmatch(r"(.+)\.(\d+)\.trace\.zst", f)
        if not ck.check(m, f"unexpected file name {f}"):
            continue
        names[m.group(1)] = names.get(m.group(1), 0) + 1
        text, _ = zstd_decode(os.path.join(outdir, f))
        header = text.split(b"\n")[1].decode()
        ck.check(f" pid={m.group(2)} " in header, f"{f}: header of another pid: {header[:200]}")
        # The program a file is named after is the last one its process ran.
        execs = re.findall(rb' exec exe="([^"]*)"', text)
        exe = execs[-1].decode() if execs else re.search(r' exe="([^"]*)"', header).group(1)
        ck.check_eq(os.path.basename(exe), m.group(1), f"{f}: the program its process ran last")
    print(f"  files: {names}")
    ck.check_eq(names, {sh: 1, "ls": 1, "sort": 1, "head": 1}, "trace files of sh -c 'ls | sort | head'")


def summary_line(err, exe, pid):
    for line in err.splitlines():
        if line.startswith(f"functracer: {exe} [{pid}]: "):
            return line
    return None


def summary_launch(ck, binary, tmp):
    print("=== summary at the end of a launched run")
    untraced = h.run([binary, str(N)])
    calls = h.parse_expectations(untraced.out).calls["fib"]
    outdir = os.path.join(tmp, "summary")
    tr = h.trace([binary, str(N)], "fib", outdir, quiet=False, compressed=True)
    err = tr.result.err
    print(err)
    files = os.listdir(outdir)
    if not ck.check(len(files) == 1, f"one trace file: {files}"):
        return
    path = os.path.join(outdir, files[0])
    pid = int(files[0].split(".")[-3])
    exe = os.path.basename(binary)
    line = summary_line(err, exe, pid)
    if not ck.check(line, f"no summary line for {exe} [{pid}]:\n{err}"):
        return
    m = re.fullmatch(rf"functracer: {re.escape(exe)} \[{pid}\]: (\d+) events?, (.+) \((\d+) records?, (.+)\)", line)
    if not ck.check(m, f"summary line shape: {line!r}"):
        return
    events, named, records, size = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    ck.check(events >= 2 * calls, f"summary: {events} events for {calls} fib calls (entry and return each)")
    ck.check_eq(os.path.realpath(named), os.path.realpath(path), "summary: the trace file named")
    text, _ = zstd_decode(path)
    ck.check_eq(records, text.count(b"\n") - 1, "summary: records vs lines in the decoded file")
    ck.check_eq(size, human_size(os.path.getsize(path)), "summary: the file's size")
    total = [x for x in err.splitlines() if x.startswith("functracer: 1 process traced")]
    ck.check(total and "1 trace file" in total[0], f"summary: no total line\n{err}")
    cmd = [x for x in err.splitlines() if "functracer-postproc calls" in x]
    if ck.check(cmd, f"summary: no postproc command\n{err}"):
        words = cmd[0].split("functracer-postproc ", 1)[1].split()
        res = h.run_postproc(words)
        ck.check(res.status == 0 and "fib" in res.out, f"the suggested command fails\n{res.describe(800)}")
    quiet = h.trace([binary, "5"], "fib", os.path.join(tmp, "quiet"), quiet=True, compressed=True)
    ck.check_eq(quiet.result.err, "", "-q: nothing on stderr, no summary")
    # memtrace without -o: a short summary per process, not every allocation.
    mem = h.trace(["/bin/ls", "/"], None, None, quiet=False, plugin="memtrace")
    mlines = mem.result.err.splitlines()
    ck.check(any("memtrace:" in x and "still allocated" in x for x in mlines),
             f"memtrace without -o: no leak summary\n{mem.result.err[-1500:]}")
    ck.check(not any(re.search(r"\bmalloc\(\d+\) = 0x", x) for x in mlines),
             f"memtrace without -o printed allocation lines without --log\n{mem.result.err[-1500:]}")
    for extra, plugin in ((["--log"], "memtrace"), ([], "memtrace:log")):
        logged = h.trace(["/bin/ls", "/"], None, None, quiet=True, plugin=plugin, extra=extra)
        ck.check(any(re.search(r"\bmalloc\(\d+\) = 0x", x) for x in logged.result.err.splitlines()),
                 f"{plugin} {extra}: no allocation lines\n{logged.result.err[-1500:]}")


def summary_attach(ck, target_bin, tmp):
    print("=== summary at the end of an attached run")
    outdir = os.path.join(tmp, "attached")
    target = h.popen([target_bin, "20000"])
    tracer = None
    try:
        if not ck.check(target.stdout.readline().decode().strip() == "ready", "attach target did not start"):
            return
        cmd = [h.functracer(), "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir, "-p", target.pid]
        tracer = h.popen(cmd)
        if not ck.check(h.wait_attached(outdir), "functracer did not attach"):
            return
        time.sleep(0.5)
        tracer.send_signal(signal.SIGINT)
        _, err = tracer.communicate(timeout=120)
        err = err.decode()
        print(err)
        ck.check_eq(tracer.returncode, 0, "functracer exit status after detach")
        path = os.path.join(outdir, f"{os.path.basename(target_bin)}.{target.pid}.trace")
        line = summary_line(err, os.path.basename(target_bin), target.pid)
        if ck.check(line, f"attached: no summary line for the process\n{err}") and os.path.exists(path):
            records = sum(1 for _ in open(path, "rb")) - 1
            ck.check(f"{path} ({records} records, {human_size(os.path.getsize(path))})" in line,
                     f"attached: summary line {line!r} vs the file ({records} records)")
            ck.check(any(f"functracer-postproc calls {outdir}" in x for x in err.splitlines()),
                     f"attached: no postproc command\n{err}")
    finally:
        h.kill_all(tracer, target)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    h.require_tools("trace-files", ["zstd", "bash"], "zstd")
    binary = os.path.abspath(sys.argv[1])
    target = os.path.abspath(sys.argv[2])
    ck = h.Checker("trace-files")
    with h.TempDir() as tmp:
        got = compressed(ck, binary, tmp)
        if got:
            inputs(ck, *got)
        heap_twice(ck, tmp)
        exec_names(ck, tmp)
        summary_launch(ck, binary, tmp)
        summary_attach(ck, target, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

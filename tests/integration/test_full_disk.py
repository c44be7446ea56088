#!/usr/bin/env python3
"""A trace the file system stops taking: a full disk, a disk full from the start, a
file size limit. The program must not notice; the user must.

usage: test_full_disk.py LOAD_EXECUTABLE

The program is `load` (tests/progs/load.c, sixteen threads allocating and freeing,
ending with "check ok") under memtrace, whose records outgrow a small file system
within a second.

  * filling mid-run: `-o` on a 2 MiB tmpfs (mounted in a private mount namespace:
    `unshare --mount`, root only) that fills while the program runs. The program runs
    to its end, its output that of an untraced run; functracer's stderr has exactly
    one line naming the file and the error (`writing trace FILE: No space left on
    device; the trace ends after N records`); the file holds exactly N records, on a
    record boundary (the decoded text's lines); the summary gives N, says the file is
    cut, and does not claim the records produced; the exit status is 1;
    `functracer-postproc dump` reads the cut trace up to the cut, warning that it was
    cut short; `leaks` says it is incomplete (text and `cut_short` in `--json`)
    instead of calling what was freed after the cut leaked.
  * full from the start: the same tmpfs filled before functracer starts: no file is
    left (neither empty nor temporary), one line says nothing could be written and
    the file is removed, the summary names no file and prints no command to read
    traces, exit status 1, the program's output intact.
  * a file size limit: functracer alone under RLIMIT_FSIZE (1 MiB, SIGXFSZ at its
    default action, which functracer must not die of) attached with `-p` to `load
    -i` (not under the limit: it ends when its input is closed), a plain trace: the
    one line with `File too large`, the file cut at a record boundary holding the N
    records it says, exit status 1, the program's own end intact. This part needs no
    privilege.

Without root (or where a mount namespace is refused) the tmpfs parts are skipped
with a line saying why; the file size limit part runs everywhere.
"""

import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ITERATIONS = 20000  # per thread: about 2 million records, ten times what 2 MiB holds
FULL_ITERATIONS = 2000
FSIZE_LIMIT = 1 << 20
TMPFS_SIZE = "2m"

# Runs "$@" (functracer) with its trace directory on a new tmpfs of its own mount
# namespace, then copies out what the directory holds (the tmpfs goes with the
# namespace). $3 = 1 fills the tmpfs first; the free blocks left are written to $4.
IN_TMPFS = r'''
mnt=$1 copy=$2 fill=$3 avail=$4
shift 4
mount -t tmpfs -o size=''' + TMPFS_SIZE + r''' ft-full-disk "$mnt" || exit 97
mkdir "$mnt/t" || exit 97
if [ "$fill" = 1 ]; then dd if=/dev/zero of="$mnt/fill" bs=4096 2>/dev/null; fi
stat -f -c %a "$mnt" > "$avail"
"$@"
rc=$?
cp -a "$mnt/t/." "$copy/" || exit 98
exit $rc
'''

WRITE_LINE = re.compile(r"^functracer: writing trace (\S+): (.+?); (.*)$")


def normalized(out):
    """load's output without its thread ids, the one thing that differs between runs."""
    return re.sub(r"tid=\d+", "tid=T", out)


def untraced_output(ck, load, args):
    res = h.run([load] + args)
    ck.check_eq(res.status, 0, f"untraced load {args}\n{res.describe()}")
    return normalized(res.out)


def tmpfs_usable(tmp):
    """None when a tmpfs can be mounted in a private mount namespace here; else why not."""
    if os.geteuid() != 0:
        return "not root: mounting a tmpfs in a mount namespace (unshare --mount) needs it"
    mnt = os.path.join(tmp, "probe")
    os.mkdir(mnt)
    res = h.run(["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o size={TMPFS_SIZE} ft-probe {mnt}"])
    if res.status != 0:
        return f"unshare --mount + mount -t tmpfs refused: {res.err.strip() or res.status}"
    return None


def write_lines(ck, label, err):
    """functracer's lines about a failed trace write; exactly one is wanted."""
    lines = [m for m in (WRITE_LINE.match(line) for line in err.splitlines()) if m]
    ck.check_eq(len(lines), 1, f"{label}: lines 'functracer: writing trace ...' on stderr\nstderr:\n{err[-3000:]}")
    return lines[0] if lines else None


def summary_line(err, path):
    for line in err.splitlines():
        if line.startswith("functracer: ") and path in line and "events" in line:
            return line
    return None


def decoded_lines(ck, label, path):
    """The complete lines the file holds, decoded (the magic line included); None when
    it cannot be read here."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".zst"):
        if not h.shutil.which("zstd"):
            ck.skip(f"{label}: the file's own record count", "zstd not installed (Debian package zstd)")
            return None
        p = subprocess.run(["zstd", "-dc", "--no-progress", path], capture_output=True)
        data = p.stdout  # a cut frame: zstd decodes what it holds and says "premature end"
    ck.check(data.endswith(b"\n"), f"{label}: the file does not end on a record boundary: ...{data[-80:]!r}")
    return data.split(b"\n")[:-1]


def check_cut_trace(ck, label, path, records):
    """The cut trace, read back: `records` records, up to the cut, said to be cut."""
    lines = decoded_lines(ck, label, path)
    if lines is not None:
        ck.check(lines[0].startswith(b"functracer-trace "), f"{label}: the file has no magic line: {lines[:1]!r}")
        ck.check_eq(len(lines) - 1, records, f"{label}: records in the cut file (its decoded lines) = the count said")
        ck.check(not any(b" exit " in line or b" detach " in line for line in lines[-3:]),
                 f"{label}: the cut file ends with an end record: {lines[-3:]!r}")
    dump = h.run_postproc(["dump", "--json", path])
    ck.check_eq(dump.status, 0, f"{label}: dump --json of the cut trace\n{dump.describe(600)}")
    dumped = len(dump.out.splitlines())
    # dump gives every record but the `stack` ones, which are kept, not reported.
    ck.check(0 < dumped <= records, f"{label}: dump read {dumped} records of the {records} the file holds")
    ck.check("cut short" in dump.err, f"{label}: dump does not warn that the trace was cut short\n{dump.err[-800:]}")
    leaks = h.run_postproc(["leaks", path])
    ck.check_eq(leaks.status, 0, f"{label}: leaks of the cut trace\n{leaks.describe(800)}")
    ck.check("live at the end" in leaks.out and "incomplete: 1 trace cut short" in leaks.out
             and " leaked (" not in leaks.out.splitlines()[0] if leaks.out else False,
             f"{label}: leaks does not say that the trace is incomplete\n{leaks.out[:800]}")
    lj = h.run_postproc(["leaks", "--json", path])
    try:
        cut = h.json.loads(lj.out).get("cut_short")
    except ValueError:
        cut = f"not JSON: {lj.out[:200]!r}"
    ck.check_eq(cut, 1, f"{label}: leaks --json cut_short")
    print(f"{label}: {records} records in the cut file, {dumped} dumped; leaks: {leaks.out.splitlines()[:2]}")


def check_program(ck, label, res, want_out):
    """The program ran to its end, its output that of the untraced run."""
    ck.check_eq(normalized(res.out), want_out, f"{label}: the program's output (thread ids aside) = untraced")
    ck.check("check ok threads=16" in res.out, f"{label}: the program did not end with its check\n{res.describe(800)}")


def run_in_tmpfs(tmp, name, fill, args):
    mnt, copy = os.path.join(tmp, name + "-mnt"), os.path.join(tmp, name + "-files")
    avail = os.path.join(tmp, name + "-avail")
    os.mkdir(mnt)
    os.mkdir(copy)
    cmd = ["unshare", "--mount", "sh", "-c", IN_TMPFS, "sh", mnt, copy, "1" if fill else "0", avail,
           h.functracer(), "-e", "memtrace", "-o", os.path.join(mnt, "t")] + args
    res = h.run(cmd, timeout=h.TRACED_TIMEOUT)
    free = open(avail).read().strip() if os.path.exists(avail) else "?"
    return res, os.path.join(mnt, "t"), copy, free


def filling_mid_run(ck, load, tmp):
    label = "tmpfs filling mid-run"
    print(f"=== {label}")
    args = [load, "-n", str(ITERATIONS), "60"]
    want = untraced_output(ck, load, args[1:])
    res, outdir, copy, _ = run_in_tmpfs(tmp, "mid", False, args)
    ck.check(res.status not in (97, 98), f"{label}: the tmpfs could not be set up\n{res.describe()}")
    ck.check_eq(res.status, 1, f"{label}: functracer's exit status\n{res.describe(2000)}")
    check_program(ck, label, res, want)
    files = sorted(os.listdir(copy))
    ck.check_eq(len(files), 1, f"{label}: files left in the trace directory: {files}")
    if not files:
        return
    name = files[0]
    path = os.path.join(copy, name)
    size = os.path.getsize(path)
    ck.check(0 < size <= 2 << 20, f"{label}: {name} is {size} bytes")
    line = write_lines(ck, label, res.err)
    if not line:
        return
    ck.check_eq(line.group(1), os.path.join(outdir, name), f"{label}: the file the line names")
    ck.check_eq(line.group(2), "No space left on device", f"{label}: the error the line names")
    m = re.fullmatch(r"the trace ends after (\d+) records", line.group(3))
    if not ck.check(m, f"{label}: the line does not say where the trace ends: {line.group(0)!r}"):
        return
    records = int(m.group(1))
    summary = summary_line(res.err, os.path.join(outdir, name))
    ck.check(summary is not None, f"{label}: no summary line names {name}\n{res.err[-2000:]}")
    if summary:
        sm = re.search(r"\((\d+) records, [0-9.]+ \w+; cut short: No space left on device, (\d+) records not written\)",
                       summary)
        if ck.check(sm, f"{label}: the summary line does not say the file is cut: {summary!r}"):
            ck.check_eq(int(sm.group(1)), records, f"{label}: the summary's records = those the file holds")
            ck.check(int(sm.group(2)) > records, f"{label}: fewer records dropped than kept ({summary!r}): "
                     "the disk did not fill early enough to test anything")
    ck.check("exit status 1: a trace is incomplete (the program's own exit status was 0)" in res.err,
             f"{label}: the summary does not say why the status is 1\n{res.err[-1500:]}")
    check_cut_trace(ck, label, path, records)


def full_from_the_start(ck, load, tmp):
    label = "tmpfs full from the start"
    print(f"=== {label}")
    args = [load, "-n", str(FULL_ITERATIONS), "60"]
    want = untraced_output(ck, load, args[1:])
    res, outdir, copy, free = run_in_tmpfs(tmp, "full", True, args)
    ck.check(res.status not in (97, 98), f"{label}: the tmpfs could not be set up\n{res.describe()}")
    ck.check_eq(free, "0", f"{label}: free blocks of the filled tmpfs")
    ck.check_eq(res.status, 1, f"{label}: functracer's exit status\n{res.describe(2000)}")
    check_program(ck, label, res, want)
    ck.check_eq(sorted(os.listdir(copy)), [], f"{label}: files left in the trace directory (none, not even empty)")
    line = write_lines(ck, label, res.err)
    if line:
        ck.check(line.group(1).startswith(outdir + "/load"), f"{label}: the file the line names: {line.group(1)}")
        ck.check_eq(line.group(2), "No space left on device", f"{label}: the error the line names")
        ck.check_eq(line.group(3), "no record could be written, the file is removed", f"{label}: what the line says")
    ck.check("to read the traces" not in res.err, f"{label}: a command to read traces that do not exist\n{res.err}")
    ck.check(re.search(r"no trace file \(\S+: No space left on device; nothing could be written, removed\)", res.err),
             f"{label}: the summary does not say that no file is left\n{res.err[-1500:]}")
    ck.check(f"; no trace file in {outdir}; incomplete: " in res.err,
             f"{label}: the summary's total claims a file\n{res.err[-1500:]}")


def limited(limit):
    def setup():
        h._child_setup()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        # SIGXFSZ keeps its default action (the shell's): functracer has to ignore it itself.
    return setup


def file_size_limit(ck, load, tmp):
    label = "file size limit, attached"
    print(f"=== {label}")
    outdir = os.path.join(tmp, "fsize")
    target = h.popen([load, "-i", "60"], stdin=subprocess.PIPE)
    cmd = [h.functracer(), "-e", "memtrace", "--uncompressed", "-o", outdir, "-p", str(target.pid)]
    tracer = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=limited(FSIZE_LIMIT))
    try:
        attached = h.wait_attached(outdir)
        # Sixteen threads allocating outgrow 1 MiB of text in well under a second.
        end = time.monotonic() + 20
        files = h.trace_files(outdir)
        while time.monotonic() < end and files and os.path.getsize(files[0]) < FSIZE_LIMIT - (256 << 10):
            time.sleep(0.1)
        time.sleep(1)
        ck.check(attached, f"{label}: functracer did not attach")
        ck.check(tracer.poll() is None, f"{label}: functracer ended while the program ran (status {tracer.poll()})")
        target.stdin.close()  # the program ends, and functracer with it
        target.stdin = None
        tout, terr = target.communicate(timeout=120)
        _, err = tracer.communicate(timeout=120)
    finally:
        h.kill_all(target, tracer)
    err = err.decode("utf-8", "replace")
    out = tout.decode("utf-8", "replace")
    ck.check_eq(target.returncode, 0, f"{label}: the program's exit status\n{terr.decode()[-800:]}")
    ck.check("check ok threads=16" in out, f"{label}: the program did not end with its check\n{out[-800:]}")
    ck.check_eq(tracer.returncode, 1, f"{label}: functracer's exit status\nstderr:\n{err[-2000:]}")
    files = h.trace_files(outdir)
    ck.check_eq(len(files), 1, f"{label}: trace files {files} (and all: {os.listdir(outdir)})")
    ck.check_eq(len(os.listdir(outdir)), 1, f"{label}: files in the trace directory: {os.listdir(outdir)}")
    if not files:
        return
    size = os.path.getsize(files[0])
    ck.check(0 < size <= FSIZE_LIMIT, f"{label}: the file is {size} bytes, the limit {FSIZE_LIMIT}")
    line = write_lines(ck, label, err)
    if not line:
        return
    ck.check_eq(line.group(1), files[0], f"{label}: the file the line names")
    ck.check_eq(line.group(2), "File too large", f"{label}: the error the line names")
    m = re.fullmatch(r"the trace ends after (\d+) records", line.group(3))
    if ck.check(m, f"{label}: the line does not say where the trace ends: {line.group(0)!r}"):
        check_cut_trace(ck, label, files[0], int(m.group(1)))


def main():
    ck = h.Checker("full-disk")
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    load = sys.argv[1]
    with h.TempDir() as tmp:
        why = tmpfs_usable(tmp)
        if why:
            ck.skip("tmpfs filling mid-run, tmpfs full from the start", why)
        else:
            filling_mid_run(ck, load, tmp)
            full_from_the_start(ck, load, tmp)
        file_size_limit(ck, load, tmp)
    ck.finish()


if __name__ == "__main__":
    main()

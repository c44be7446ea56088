"""What the benchmarks in tests/bench share.

Finding functracer and functracer-postproc, compiling the benchmark programs,
timed runs (best of N), optional peer tools, scratch directories and the result
tables. Python 3 standard library only; imported by the scripts next to it.
"""

import contextlib
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FUNCTRACER_REL = "core/functracer"
POSTPROC_REL = "postproc/functracer-postproc"


def find_built(rel):
    """The most recently built ROOT/<builddir>/<rel>."""
    found = [p for p in glob.glob(os.path.join(ROOT, "*", rel)) if os.access(p, os.X_OK)]
    found.sort(key=os.path.getmtime, reverse=True)
    return found[0] if found else None


def add_common_args(ap, n_help, n_default=20000, repeats_default=3, n=True, cc=True,
                    keep_help="keep the scratch directory"):
    """-n, -r/--repeats, --functracer, --postproc, --build, --cc, --keep."""
    if n:
        ap.add_argument("-n", type=int, default=n_default, help=n_help)
    ap.add_argument("-r", "--repeats", "--repeat", dest="repeats", metavar="N", type=int,
                    default=repeats_default, help="runs per tool, best kept")
    ap.add_argument("--functracer", metavar="PATH", help="default: $FUNCTRACER, else "
                    "BUILD/core/functracer, else the newest build*/core/functracer")
    ap.add_argument("--postproc", metavar="PATH", help="default: $FUNCTRACER_POSTPROC, else "
                    "BUILD/postproc/functracer-postproc, else the newest build*/postproc/...")
    ap.add_argument("--build", metavar="DIR", help="meson build directory to take functracer "
                    "and functracer-postproc from")
    if cc:
        ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--keep", action="store_true", help=keep_help)


def resolve_tools(args):
    """Fills in args.functracer and args.postproc: the option, else the
    environment variable, else --build DIR, else the newest build in the tree."""
    for attr, env, rel in (("functracer", "FUNCTRACER", FUNCTRACER_REL),
                           ("postproc", "FUNCTRACER_POSTPROC", POSTPROC_REL)):
        if getattr(args, attr):
            continue
        path = os.environ.get(env)
        if not path and args.build:
            cand = os.path.join(args.build, rel)
            path = cand if os.access(cand, os.X_OK) else None
        setattr(args, attr, path or find_built(rel))


def require_functracer(args):
    if not args.functracer:
        sys.exit("functracer not found; build it (meson/ninja) or pass --functracer PATH")


def run(cmd, timeout=3600):
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    return p, time.monotonic() - start


def compile_program(cc, source, outdir):
    """Compiles tests/bench/<source> with cc -O2 -g into outdir; exits on failure."""
    binary = os.path.join(outdir, os.path.splitext(source)[0])
    p, _ = run([cc, "-O2", "-g", "-o", binary, os.path.join(HERE, source)])
    if p.returncode != 0:
        sys.exit(f"cannot build {source}:\n{p.stderr.decode()}")
    return binary


def skipped(what, why):
    """One loud line for a comparison that cannot run here (.ci/run installs the peers)."""
    print(f"SKIP {what}: {why}", flush=True)


def optional_tool(name, missing="not installed"):
    """The path of an optional peer tool, or None after saying it is skipped."""
    path = shutil.which(name)
    if not path:
        skipped(name, f"{missing} (Debian package {name})")
    return path


@contextlib.contextmanager
def scratch_dir(keep):
    tmp = tempfile.mkdtemp(prefix="ft-bench-")
    try:
        yield tmp
    finally:
        if keep:
            print(f"(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def loop_ns(program, text):
    """The loop time a benchmark program prints: "PROGRAM: n=N loop_ns=T"."""
    m = re.search(re.escape(program) + r": n=(\d+) loop_ns=(\d+)", text)
    return int(m.group(2)) if m else None


class Measure:
    def __init__(self, name):
        self.name = name
        self.loop_ns = []
        self.wall = []
        self.extra = {}
        self.error = None

    def best_loop(self):
        return min(self.loop_ns) if self.loop_ns else None

    def best_wall(self):
        return min(self.wall) if self.wall else None


def measure(name, cmd, repeats, program, expect_stdout, check=None, prepare=None,
            timeout=3600):
    """Runs cmd `repeats` times; each run must exit 0, print expect_stdout and
    the program's loop time, and pass check(out, err, measure) (None when good)."""
    m = Measure(name)
    for _ in range(repeats):
        if prepare:
            prepare()
        try:
            p, wall = run(cmd, timeout)
        except subprocess.TimeoutExpired:
            m.error = "timed out"
            return m
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        ns = loop_ns(program, err) or loop_ns(program, out)
        if p.returncode != 0 or ns is None or expect_stdout not in out:
            m.error = (f"failed (status {p.returncode}): {shlex.join(cmd)}\n"
                       f"stdout: {out[-500:]}\nstderr: {err[-800:]}")
            return m
        if check:
            problem = check(out, err, m)
            if problem:
                m.error = problem
                return m
        m.loop_ns.append(ns)
        m.wall.append(wall)
    return m


def traced_calls(postproc, files, function):
    """Calls of `function` in the traces, by functracer-postproc calls --json; an
    error message (str) when the report cannot be had."""
    p, _ = run([postproc, "calls", "--json"] + list(files), 1800)
    try:
        funcs = json.loads(p.stdout.decode())["functions"]
    except (ValueError, KeyError, TypeError):
        return f"functracer-postproc calls --json failed: {p.stderr.decode()[-500:]}"
    return sum(f["calls"] for f in funcs if f["name"].split("(")[0] == function)


def trace_lines(trace_file):
    """The lines of a functracer trace file, plain or zstd-compressed (decoded by the
    zstd tool)."""
    with open(trace_file, "rb") as f:
        compressed = f.read(4) == b"\x28\xb5\x2f\xfd"
    if not compressed:
        with open(trace_file, "rb") as f:
            yield from f
        return
    p = subprocess.Popen(["zstd", "-dc", "--no-progress", trace_file], stdout=subprocess.PIPE)
    yield from p.stdout
    p.wait()


def count_records(trace_file):
    """Records per type in a functracer trace file."""
    counts = {}
    for line in trace_lines(trace_file):
        parts = line.split(b" ", 4)
        if len(parts) >= 4:
            t = parts[3].decode()
            counts[t] = counts.get(t, 0) + 1
    return counts


def ratio(num, den, fmt="{:.1f}"):
    """num / den formatted, or "-" when either is missing or den is not positive."""
    if num is None or den is None or den <= 0:
        return "-"
    return fmt.format(num / den)


class Table:
    """A fixed-width table: the first column left-aligned, the others right.

    columns: (title, width) pairs. Rows are strings already formatted."""

    def __init__(self, columns):
        self.columns = columns

    def _line(self, cells):
        (_, w0), rest = self.columns[0], self.columns[1:]
        return f"{cells[0]:<{w0}}" + "".join(f"{c:>{w}}" for c, (_, w) in zip(cells[1:], rest))

    def header(self):
        print(self._line([t for t, _ in self.columns]))

    def row(self, *cells):
        print(self._line([str(c) for c in cells]))

    def error(self, name, message):
        print(f"{name:<{self.columns[0][1]}}  ERROR: {message}")


def functracer_run(err, m, outdir):
    """What a check of a functracer run with -o outdir and --stats starts with: its
    --stats line and ptrace stops into m.extra, no record lost to full buffers, one
    trace file. Returns (problem, records per type of that file): problem is None
    when all is well."""
    m.extra["stats"] = stats_line(err)
    lost = re.search(r"(\d+) lost", err)
    if lost and int(lost.group(1)) != 0:
        return f"functracer lost {lost.group(1)} records to full buffers", {}
    stops = stats_stops(err)
    if stops is not None:
        m.extra["stops"] = stops
    files = glob.glob(os.path.join(outdir, "*.trace*"))
    if len(files) != 1:
        return f"functracer wrote {len(files)} trace files", {}
    return None, count_records(files[0])


def stats_line(err, words=("stops",)):
    """The last line of functracer's --stats output that has one of words."""
    lines = [ln for ln in err.splitlines() if any(w in ln for w in words)]
    return lines[-1].strip() if lines else "(no --stats line)"


def stats_stops(err):
    s = re.search(r"(\d+)\s+(?:ptrace\s+)?stops", err)
    return int(s.group(1)) if s else None


def run_rusage(cmd, stdout=subprocess.DEVNULL, timeout=3600):
    """Runs cmd as a fresh child and reaps it with wait4, which gives that
    child's own resource usage: (exit code, wall seconds, user+sys CPU seconds,
    max RSS in KiB of the child and of the children it waited for, stderr text).
    stdout goes to the given file object, or nowhere."""
    with tempfile.TemporaryFile() as errf:
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=errf)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        if wall >= timeout:
            raise subprocess.TimeoutExpired(cmd, timeout)
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, err

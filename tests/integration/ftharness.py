"""Helpers shared by the integration tests.

The tests run the built `functracer` and `functracer-postproc` on the programs
of tests/progs and on ordinary system programs, and judge the results against
oracles that do not come from functracer itself: the programs' own call counts,
their untraced output and exit status, objdump, and kernel uprobes (bpftrace).

Paths come from the environment (set by tests/integration/meson.build):
  FUNCTRACER           the functracer executable
  FUNCTRACER_POSTPROC  the functracer-postproc executable
  FT_PROGS_DIR         the directory holding the built tracee programs
FT_FULL=1 (`bash .ci/run full`) runs the long versions of the tests that bound
their runs by default (FULL below; tests/README.md lists them).
"""

import collections
import contextlib
import glob
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

UNTRACED_TIMEOUT = 120
TRACED_TIMEOUT = 900
POSTPROC_TIMEOUT = 300
BPFTRACE_TIMEOUT = 600

# The long versions of the bounded tests (tests/README.md, "Bounded runs").
FULL = os.environ.get("FT_FULL") == "1"

# Exit status used by meson for "skipped": `meson test` shows SKIP for it, never OK.
SKIP_STATUS = 77


def skip_test(name, why):
    """Skips a whole test that cannot run here: one loud line saying what is missing,
    then exit status 77 (meson: SKIP)."""
    print(f"SKIP {name}: {why}", flush=True)
    sys.exit(SKIP_STATUS)


def require_tools(name, tools, package):
    """Skips the test (skip_test) unless every program in `tools` is on PATH; `package`
    names the Debian package that installs them (.ci/run installs it)."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        skip_test(name, f"{', '.join(missing)} not installed (Debian package {package})")


def env_path(name):
    value = os.environ.get(name)
    if not value:
        sys.stderr.write(f"{name} is not set; run this through `meson test`\n")
        sys.exit(2)
    return value


def functracer():
    return env_path("FUNCTRACER")


def postproc():
    return env_path("FUNCTRACER_POSTPROC")


def progs_dir():
    return env_path("FT_PROGS_DIR")


def fmt_cmd(cmd):
    return shlex.join(str(c) for c in cmd)


# --------------------------------------------------------------------------
# Failure collection: a test keeps going after a failed check so that one run
# reports everything it found; finish() sets the exit status.


class Checker:
    def __init__(self, name):
        self.name = name
        self.failures = []
        self.notes = []
        self.skips = []

    def fail(self, msg):
        self.failures.append(msg)
        print(f"FAIL: {msg}", flush=True)

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)
        return bool(cond)

    def check_eq(self, actual, expected, what):
        """`what` may go on with details after its first line."""
        if actual != expected:
            title, _, detail = what.partition("\n")
            self.fail(f"{title}: expected {expected!r}, got {actual!r}" +
                      (f"\n{detail}" if detail else ""))
            return False
        return True

    def note(self, msg):
        self.notes.append(msg)
        print(msg, flush=True)

    def skip(self, what, why):
        """A part of the test that cannot run here: a tool is missing, or the environment
        refuses (no uprobes in a container, no other user). One loud line now; the test
        goes on with the rest and ends with status 77 (meson: SKIP) unless a check failed,
        so a run that left something out never shows as a pass."""
        self.skips.append(f"{what}: {why}")
        print(f"SKIP {what}: {why}", flush=True)

    def finish(self):
        print()
        if self.failures:
            print(f"{self.name}: {len(self.failures)} failure(s):")
            for f in self.failures:
                print(f"  - {f.splitlines()[0] if f else f}")
            sys.exit(1)
        if self.skips:
            print(f"SKIP {self.name}: the checks that ran passed; {len(self.skips)} part(s) "
                  "could not run here:")
            for s in self.skips:
                print(f"  - {s.splitlines()[0]}")
            sys.exit(SKIP_STATUS)
        print(f"{self.name}: OK")
        sys.exit(0)


# --------------------------------------------------------------------------
# Running processes.


class Result:
    def __init__(self, cmd, status, stdout, stderr, seconds, timed_out=False):
        self.cmd = cmd
        self.status = status  # shell convention: 128+N when killed by signal N
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.timed_out = timed_out

    @property
    def out(self):
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self):
        return self.stderr.decode("utf-8", "replace")

    def describe(self, limit=3000):
        def clip(s):
            s = s.decode("utf-8", "replace")
            return s if len(s) <= limit else s[:limit] + f"\n... ({len(s)} chars)"

        return (f"command: {fmt_cmd(self.cmd)}\n"
                f"exit status: {self.status}{' (TIMED OUT)' if self.timed_out else ''}"
                f" after {self.seconds:.2f}s\n"
                f"--- stdout ---\n{clip(self.stdout)}\n--- stderr ---\n{clip(self.stderr)}")


def _child_setup():
    # No core files from the crash tests, default signal dispositions.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def run(cmd, timeout=UNTRACED_TIMEOUT, stdin=None, cwd=None, env=None):
    """Runs cmd, returns a Result. stdin: bytes or None (then /dev/null)."""
    cmd = [str(c) for c in cmd]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            preexec_fn=_child_setup,
            start_new_session=True,
        )
    except OSError as e:
        return Result(cmd, -1, b"", f"cannot start: {e}".encode(), 0.0)
    timed_out = False
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    seconds = time.monotonic() - start
    status = proc.returncode
    if status < 0:
        status = 128 - status
    return Result(cmd, status, out, err, seconds, timed_out)


class TempDir:
    """A scratch directory, removed at the end unless FT_KEEP_TMP is set."""

    def __init__(self, prefix="ft-it-"):
        base = os.environ.get("FT_TMPDIR") or None
        self.path = tempfile.mkdtemp(prefix=prefix, dir=base)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if os.environ.get("FT_KEEP_TMP"):
            print(f"(kept {self.path})")
        else:
            shutil.rmtree(self.path, ignore_errors=True)


# --------------------------------------------------------------------------
# What a tracee program says about itself (see tests/progs/tracee.h).


class Expectations:
    def __init__(self):
        self.calls = collections.OrderedDict()  # name -> count
        self.unwound = collections.defaultdict(dict)  # reason -> {name: count}
        self.per_thread = []  # (name, count, tids)
        self.follow_calls = collections.OrderedDict()  # counts over all processes (-f)
        self.proc_calls = collections.OrderedDict()  # process label -> its own counts (-f)

    def names(self):
        return list(self.calls.keys())


def _pairs(words):
    out = collections.OrderedDict()
    for w in words:
        k, _, v = w.partition("=")
        out[k] = int(v)
    return out


def heap_manifest(text):
    """heapshape's statements about its heap: {"allocs"|"leak"|"peak_live"|"temporary":
    {function: [numbers...]}, "peak": [numbers...]}."""
    m = collections.defaultdict(dict)
    for line in text.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] in ("peak_live", "temporary", "allocs", "leak"):
            m[w[0]][w[1]] = [int(x) for x in w[2:]]
        elif w and w[0] == "peak":
            m["peak"] = [int(x) for x in w[1:]]
    return m


def parse_expectations(stdout_text):
    exp = Expectations()
    for line in stdout_text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "calls":
            exp.calls.update(_pairs(words[1:]))
        elif words[0] == "unwound" and len(words) >= 2:
            exp.unwound[words[1]].update(_pairs(words[2:]))
        elif words[:2] == ["follow", "calls"]:
            exp.follow_calls.update(_pairs(words[2:]))
        elif words[0] == "proc_calls" and len(words) >= 2:
            exp.proc_calls.setdefault(words[1], collections.OrderedDict()).update(
                _pairs(words[2:]))
        elif words[0] == "per_thread":
            d = _pairs(words[1:])
            tids = d.pop("tids")
            for name, n in d.items():
                exp.per_thread.append((name, n, tids))
    return exp


# --------------------------------------------------------------------------
# Names. Records carry demangled names ("xt_re1(int)"); the programs print
# plain names ("xt_re1"). Fragments such as "f.cold" or "f(int) [clone .cold]"
# are not function entries (the hot part jumps into them) and must never be
# reported as called. Clones (.isra, .constprop, .part) are real entries.


def base_name(fn):
    if fn is None:
        return None
    fn = str(fn)
    i = fn.find("(")
    return fn if i < 0 else fn[:i]


_COLD = re.compile(r"\.cold\b")


def is_fragment(fn):
    fn = str(fn or "")
    return ".cold" in fn and _COLD.search(fn) is not None


def record_function(rec):
    for key in ("function_demangled", "demangled", "function", "name", "symbol"):
        if key in rec and rec[key] is not None:
            return rec[key]
    return None


# --------------------------------------------------------------------------
# functracer and functracer-postproc.


class TraceRun:
    def __init__(self, result, outdir):
        self.result = result
        self.outdir = outdir
        self.files = sorted(glob.glob(os.path.join(outdir, "*.trace")))


def trace(program_args, patterns=None, outdir=None, quiet=True, plugin="calltrace",
          extra=(), timeout=TRACED_TIMEOUT, stdin=None, cwd=None, compressed=False):
    """Runs functracer; with outdir, plain-text traces (--uncompressed) unless
    compressed is true (then the files are *.trace.zst)."""
    cmd = [functracer()]
    if quiet:
        cmd.append("-q")
    if plugin:
        cmd += ["-e", plugin]
    if patterns is not None:
        cmd += ["-a", patterns]
    if outdir is not None:
        cmd += ["-o", outdir] if compressed else ["--uncompressed", "-o", outdir]
    cmd += list(extra)
    cmd += list(program_args)
    res = run(cmd, timeout=timeout, stdin=stdin, cwd=cwd)
    return TraceRun(res, outdir) if outdir is not None else TraceRun(res, "/nonexistent")


GAP_LINE = re.compile(rb"^functracer: (cannot trace |the functions of .+ are not traced |process \d+ ended before |process \d+: no recorder)")


def without_gaps(stderr):
    """A traced run's stderr without functracer's lines about functions it could not
    trace, which it prints even with -q (glibc's time and gettimeofday choose the
    vDSO, so `*@libc.so` always has two): what is left is the program's own."""
    return b"".join(line for line in stderr.splitlines(keepends=True) if not GAP_LINE.match(line))


def run_postproc(args, timeout=POSTPROC_TIMEOUT):
    return run([postproc()] + list(args), timeout=timeout)


def stream_records(ck, files, visit, timeout=POSTPROC_TIMEOUT):
    """Runs `dump --json` on the trace files and calls visit(record) for each record
    as it is read, without holding them all: a fast-path trace of a few seconds has
    millions. A line that is not a JSON object is reported as a failure and skipped.
    True when the dump itself succeeded."""
    cmd = [str(c) for c in [postproc(), "dump", "--json"] + list(files)]
    start = time.monotonic()
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                                preexec_fn=_child_setup, start_new_session=True)
        timer = threading.Timer(timeout, lambda: _kill_group(proc))
        timer.start()
        bad = 0
        try:
            for n, raw in enumerate(proc.stdout, 1):
                line = raw.decode("utf-8", "replace")
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    rec = None
                    why = f"is not JSON ({e})"
                else:
                    why = "is not an object"
                if not isinstance(rec, dict):
                    bad += 1
                    if bad <= 3:
                        ck.fail(f"dump --json line {n} {why}: {line[:200]!r}\ncommand: {fmt_cmd(cmd)}")
                    continue
                visit(rec)
        finally:
            proc.stdout.close()
            status = proc.wait()
            timer.cancel()
        errf.seek(0)
        err = errf.read()
    timed_out = time.monotonic() - start >= timeout
    res = Result(cmd, 128 - status if status < 0 else status, b"", err, time.monotonic() - start, timed_out)
    return ck.check(res.status == 0 and not timed_out, f"functracer-postproc dump failed\n{res.describe()}")


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def dump_records(ck, files):
    """`dump --json` of the trace files, as a list of dicts (None when the dump
    failed)."""
    records = []
    return records if stream_records(ck, files, records.append) else None


def calls_report(ck, files):
    """`calls --json`: list of function entries (None on failure)."""
    res = run_postproc(["calls", "--json"] + list(files))
    if not ck.check(res.status == 0 and not res.timed_out,
                    f"functracer-postproc calls failed\n{res.describe()}"):
        return None
    try:
        doc = json.loads(res.out)
    except ValueError as e:
        ck.fail(f"calls --json output is not JSON ({e})\n{res.describe()}")
        return None
    funcs = doc.get("functions") if isinstance(doc, dict) else None
    if not ck.check(isinstance(funcs, list),
                    f"calls --json has no \"functions\" list\n{res.describe()}"):
        return None
    for f in funcs:
        for key in ("name", "calls", "total_ns", "self_ns"):
            if not ck.check(isinstance(f, dict) and key in f,
                            f"calls --json entry lacks {key!r}: {str(f)[:300]}"):
                return None
    return funcs


# --------------------------------------------------------------------------
# Analysis of dump records.

COMMON_KEYS = ("pid", "tid", "seq", "ts_ns", "type")
REQUIRED_KEYS = {
    "call": ("function", "address", "depth"),
    "return": ("function", "depth", "retval"),
    "unwound": ("function", "depth", "reason"),
}
UNWIND_REASONS = ("longjmp", "exception", "exit", "detach", "jump", "panic")


class ThreadLog:
    def __init__(self, pid, tid, instance):
        self.pid = pid
        self.tid = tid
        self.instance = instance
        self.stack = []  # list of call records
        self.depth_offset = None
        self.calls = collections.Counter()  # base name -> count


class Analysis:
    def __init__(self):
        self.calls = collections.Counter()
        self.returns = collections.Counter()
        self.unwound = collections.defaultdict(collections.Counter)  # reason -> name -> n
        self.types = collections.Counter()
        self.threads = []  # every ThreadLog
        self.problems = []
        self.fragments = collections.Counter()
        self.pairs = []  # (call record, closing record)
        # (pid, image, base name) -> call addresses; image counts the process's
        # exec records, as an exec'd image may be mapped elsewhere (ASLR)
        self.addresses = collections.defaultdict(set)

    def problem(self, msg):
        self.problems.append(msg)


def _as_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return None
    return None


def analyze(records):
    """Checks the structure of the event stream and counts per function."""
    a = Analysis()
    current = {}  # (pid, tid) -> ThreadLog
    last_seq = {}
    instances = collections.Counter()
    images = collections.Counter()  # pid -> exec records so far

    def thread_for(key):
        t = current.get(key)
        if t is None:
            instances[key] += 1
            t = ThreadLog(key[0], key[1], instances[key])
            current[key] = t
            a.threads.append(t)
        return t

    common = frozenset(COMMON_KEYS)
    required = {t: frozenset(keys) for t, keys in REQUIRED_KEYS.items()}
    for rec in records:
        rtype = rec.get("type")
        a.types[rtype] += 1
        if not common <= rec.keys():
            missing = [k for k in COMMON_KEYS if k not in rec]
            a.problem(f"record lacks {missing}: {json.dumps(rec)[:300]}")
            continue
        pid, tid = rec["pid"], rec["tid"]
        seq = _as_int(rec["seq"])
        if seq is not None:
            prev = last_seq.get(pid)
            if prev is not None and seq <= prev:
                a.problem(f"seq not increasing in pid {pid}: {prev} then {seq}")
            last_seq[pid] = seq
        req = required.get(rtype)
        if req is not None and not req <= rec.keys():
            missing = [k for k in REQUIRED_KEYS[rtype] if k not in rec]
            a.problem(f"{rtype} record lacks {missing}: {json.dumps(rec)[:300]}")
        key = (pid, tid)
        if rtype == "thread":
            t = current.get(key)
            if t is not None and t.stack:
                a.problem(f"new thread record for tid {tid} while it has {len(t.stack)} open "
                          f"frames ({[record_function(c) for c in t.stack][-5:]})")
            if t is not None:
                del current[key]
            thread_for(key)
            continue
        if rtype == "exec":
            images[pid] += 1
        if rtype not in ("call", "return", "unwound"):
            continue
        t = thread_for(key)
        fn = record_function(rec)
        base = base_name(fn)
        depth = _as_int(rec.get("depth"))
        if rtype == "call":
            if is_fragment(fn):
                a.fragments[str(fn)] += 1
            a.calls[base] += 1
            t.calls[base] += 1
            addr = _as_int(rec.get("address"))
            if addr is not None:
                a.addresses[(pid, images[pid], base)].add(addr)
            if depth is not None:
                off = depth - len(t.stack)
                if t.depth_offset is None:
                    t.depth_offset = off
                elif off != t.depth_offset:
                    a.problem(f"tid {tid}: call of {fn} at depth {depth} with {len(t.stack)} "
                              f"open frames (earlier calls had depth = open frames + "
                              f"{t.depth_offset}); seq {rec.get('seq')}")
                    t.depth_offset = off
            t.stack.append(rec)
            continue
        # return / unwound
        if not t.stack:
            a.problem(f"tid {tid}: {rtype} of {fn} with no open call (seq {rec.get('seq')})")
            continue
        opened = t.stack.pop()
        ofn = record_function(opened)
        if ofn != fn:
            a.problem(f"tid {tid}: {rtype} of {fn} closes call of {ofn} "
                      f"(call seq {opened.get('seq')}, {rtype} seq {rec.get('seq')})")
        cdepth = _as_int(opened.get("depth"))
        if depth is not None and cdepth is not None and depth != cdepth:
            a.problem(f"tid {tid}: {rtype} of {fn} at depth {depth}, its call was at {cdepth}")
        if rtype == "return":
            a.returns[base] += 1
        else:
            reason = rec.get("reason")
            if reason not in UNWIND_REASONS:
                a.problem(f"unwound record with reason {reason!r}: {json.dumps(rec)[:300]}")
            a.unwound[reason][base] += 1
        a.pairs.append((opened, rec))

    for t in a.threads:
        if t.stack:
            a.problem(f"pid {t.pid} tid {t.tid}: {len(t.stack)} call(s) never closed, innermost "
                      f"{[record_function(c) for c in t.stack][-5:]}")
    return a


def main_pid(records):
    """The launched process: the one whose parent is not in the trace."""
    pids = {r.get("pid") for r in records}
    for r in records:
        if r.get("type") == "process" and r.get("ppid") not in pids:
            return r.get("pid")
    return records[0].get("pid") if records else None


def report_problems(ck, analysis, what, limit=12):
    if analysis.problems:
        shown = "\n  ".join(analysis.problems[:limit])
        more = len(analysis.problems) - limit
        ck.fail(f"{what}: {len(analysis.problems)} structural problem(s) in dump --json:\n  "
                f"{shown}" + (f"\n  ... and {more} more" if more > 0 else ""))
    if analysis.fragments:
        ck.fail(f"{what}: calls reported for code fragments that are not function entries: "
                f"{dict(analysis.fragments)}")


def find_calls_entry(funcs, name):
    """Sums the calls --json entries whose demangled name is `name`."""
    total = 0
    found = False
    for f in funcs:
        if base_name(f.get("name")) == name and not is_fragment(f.get("name")):
            total += int(f.get("calls", 0))
            found = True
    return total if found else 0


# --------------------------------------------------------------------------
# Attach mode (functracer -p): test_attach.py, test_attach_repeat.py.

DETACH_TIMEOUT = 60


def status_text(rc):
    """A Popen returncode in words."""
    if rc is None:
        return "running"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def memfd_mappings(pid):
    """The lines of /proc/PID/maps that are functracer's recorder regions."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return [ln.strip() for ln in f if "/memfd:functracer" in ln]
    except OSError:
        return []


def popen(cmd, stdin=None):
    return subprocess.Popen([str(c) for c in cmd], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_child_setup)


def kill_all(*procs):
    """Kills and reaps the processes (Popen or None) still running."""
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def trace_files(outdir):
    if not os.path.isdir(outdir):
        return []
    return [os.path.join(outdir, f) for f in sorted(os.listdir(outdir)) if f.endswith(".trace")]


def wait_attached(outdir, timeout=30):
    """Waits until functracer wrote the module map: attaching is done."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for f in trace_files(outdir):
            with open(f, "rb") as fh:
                if b" module " in fh.read():
                    return True
        time.sleep(0.05)
    return False


def detach(ck, label, tracer, sig, cmd):
    """Sends sig to functracer; True when it exited 0 in time."""
    sent = time.monotonic()
    tracer.send_signal(sig)
    try:
        _, terr = tracer.communicate(timeout=DETACH_TIMEOUT)
    except subprocess.TimeoutExpired:
        tracer.kill()
        _, terr = tracer.communicate()
        ck.fail(f"{label}: functracer did not detach within {DETACH_TIMEOUT} s of the signal\n"
                f"command: {fmt_cmd(cmd)}\nstderr: {terr.decode()[-2000:]}")
        return False
    print(f"{label}: functracer exited {tracer.returncode} {time.monotonic() - sent:.2f}s after "
          f"{signal.Signals(sig).name}; stderr: {terr.decode().strip()[:300]!r}")
    return ck.check_eq(tracer.returncode, 0, f"{label}: functracer exit status after detach\n"
                       f"command: {fmt_cmd(cmd)}\nstderr: {terr.decode()[-2000:]}")


def check_trace(ck, label, outdir, pid):
    files = trace_files(outdir)
    if not ck.check(len(files) == 1, f"{label}: want one trace file, found {files}"):
        return None
    records = dump_records(ck, files)
    if records is None:
        return None
    a = analyze(records)
    report_problems(ck, a, label)
    types = [r.get("type") for r in records]
    ck.check(types and types[-1] == "detach", f"{label}: the trace does not end with a detach "
             f"record: ...{types[-3:]}")
    procs = [r for r in records if r.get("type") == "process"]
    ck.check(procs and procs[0].get("pid") == pid,
             f"{label}: no process record for pid {pid}: {procs[:1]}")
    return a


def attach_window(ck, label, cmd, outdir, target, seconds, timeout=30):
    """Starts functracer -p (cmd), waits until it has attached, lets it trace for
    `seconds`. Returns the running tracer, or None after a failure is reported (not
    attached, or the tracer or the target ended early)."""
    tracer = popen(cmd)
    attached = wait_attached(outdir, timeout=timeout)
    time.sleep(seconds)
    if attached and tracer.poll() is None and target.poll() is None:
        return tracer
    if tracer.poll() is None:
        tracer.kill()
    _, terr = tracer.communicate()
    ck.fail(f"{label}: not attached, or tracer or target ended early (tracer "
            f"{tracer.returncode}, target {target.poll()})\ncommand: {fmt_cmd(cmd)}\n"
            f"functracer stderr: {terr.decode()[-2000:]}")
    return None


def text_matches_file(ck, pid, exe, label):
    """The executable's mapped text (every executable mapping of exe in /proc/PID/maps)
    equals the file's bytes: no breakpoint or jump left after a detach. Returns the number
    of bytes compared."""
    checked = 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem, open(exe, "rb") as f:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or "x" not in fields[1] or os.path.realpath(fields[5]) != os.path.realpath(exe):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            mem.seek(start)
            live = mem.read(end - start)
            f.seek(offset)
            disk = f.read(end - start)
            n = min(len(live), len(disk))
            diff = next((i for i in range(n) if live[i] != disk[i]), None)
            ck.check(diff is None, f"{label}: the text differs from the file at {start + (diff or 0):#x} "
                     f"(file offset {offset + (diff or 0):#x}) after the detach")
            checked += n
    ck.check(checked > 0, f"{label}: no executable mapping of {exe} found in /proc/{pid}/maps")
    return checked


def proc_stats():
    """(pid, fields of /proc/PID/stat after the command name: state, ppid, pgrp,
    session, ...) of every process that can be read."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        yield int(entry), stat[stat.rfind(")") + 2:].split()


def areas(pid):
    """functracer's out-of-line areas in the process: anonymous r-x 1 MiB mappings."""
    n = 0
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if fields[1] == "r-xp" and len(fields) == 5 and end - start == 1 << 20:
                n += 1
    return n


# --------------------------------------------------------------------------
# Binary inspection.


def load_segments(path):
    """[(p_offset, p_vaddr, p_filesz)] of the PT_LOAD segments."""
    res = run(["readelf", "-lW", path])
    segs = []
    for line in res.out.splitlines():
        w = line.split()
        if w and w[0] == "LOAD":
            segs.append((int(w[1], 16), int(w[2], 16), int(w[4], 16)))
    return segs


def symbols(binary, dynamic=False):
    """Defined text symbols: list of (mangled, demangled)."""
    base = ["nm", "--defined-only"] + (["-D"] if dynamic else [])
    plain = run(base + [binary])
    demangled = run(base + ["-C", binary])
    if plain.status != 0 or demangled.status != 0:
        return []
    out = []
    for p, d in zip(plain.out.splitlines(), demangled.out.splitlines()):
        pf = p.split(maxsplit=2)
        df = d.split(maxsplit=2)
        if len(pf) == 3 and len(df) == 3 and pf[1] in "TtWi":
            out.append((pf[2], df[2]))
    return out


def is_stripped(binary):
    res = run(["readelf", "-S", "-W", binary])
    return ".symtab" not in res.out


_disassembly = {}


def disassembly(binary):
    """{symbol: [instruction lines]} for the whole text of binary (cached)."""
    if binary not in _disassembly:
        res = run(["objdump", "-d", "--no-show-raw-insn", binary], timeout=600)
        funcs = {}
        current = None
        header = re.compile(r"^[0-9a-f]+ <(.+)>:$")
        for line in res.out.splitlines():
            m = header.match(line)
            if m:
                current = funcs.setdefault(m.group(1), [])
                continue
            if current is not None:
                if not line.strip():
                    current = None
                    continue
                current.append(line)
        _disassembly[binary] = funcs
    return _disassembly[binary]


def disassemble(binary, function):
    """objdump lines of one function (by mangled name), or []."""
    return disassembly(binary).get(function, [])


def first_instruction(binary, function):
    """The first instruction of a function as objdump prints it ("" if unknown)."""
    lines = disassemble(binary, function)
    if not lines:
        return ""
    parts = lines[0].split("\t", 1)
    return parts[1].strip() if len(parts) > 1 else lines[0].strip()


# --------------------------------------------------------------------------
# Kernel uprobes through bpftrace: an independent count of function entries.

_bpftrace_state = None


def bpftrace_usable():
    """(True, "") if bpftrace can attach probes here, else (False, reason)."""
    global _bpftrace_state
    if _bpftrace_state is None:
        exe = shutil.which("bpftrace")
        if not exe:
            _bpftrace_state = (False, "bpftrace not installed")
        elif os.geteuid() != 0:
            _bpftrace_state = (False, "not root")
        else:
            res = run([exe, "-e", "BEGIN { exit(); }"], timeout=120)
            if res.status != 0:
                _bpftrace_state = (False, f"bpftrace does not work here (status {res.status}: "
                                   f"{res.err.strip()[:200]})")
            else:
                _bpftrace_state = (True, "")
    return _bpftrace_state


def bpftrace_counts(binary, symbols_list, args=(), timeout=BPFTRACE_TIMEOUT):
    """Runs binary under bpftrace with one uprobe per symbol.
    Returns (counts: {symbol: n} or None, Result).

    A uprobe counts every process that runs the file it is placed on, and other tests
    run the same programs at the same time: the probes go on a private copy."""
    with TempDir() as tmp:
        copy = os.path.join(tmp, os.path.basename(binary))
        shutil.copy2(binary, copy)
        return bpftrace_file_counts(copy, symbols_list, [copy] + list(args), timeout)


def bpftrace_file_counts(probed, symbols_list, cmd, timeout=BPFTRACE_TIMEOUT):
    """Runs cmd under bpftrace with one uprobe per symbol of the file `probed` (a
    private copy of a library or program that cmd runs). Returns (counts: {symbol: n}
    or None, Result)."""
    probes = ", ".join(f'uprobe:"{probed}":{s}' for s in symbols_list)
    script = probes + " { @[probe] = count(); }"
    res = run(["bpftrace", "-e", script, "-c", fmt_cmd(cmd)], timeout=timeout)
    counts = {}
    seen_attach = "Attaching" in res.out or "Attaching" in res.err
    for line in res.out.splitlines():
        m = re.match(r"^@\[(.*)\]:\s*(\d+)\s*$", line.strip())
        if m:
            sym = m.group(1).rsplit(":", 1)[-1]
            counts[sym] = counts.get(sym, 0) + int(m.group(2))
    if not seen_attach or res.timed_out:
        return None, res
    return counts, res


def private_libc(tmp):
    """A copy of the C library the programs here load, in tmp/libc: a program run with
    LD_LIBRARY_PATH set to that directory loads the copy, so that a uprobe placed on it
    is in that program alone (a uprobe is in every process that maps its file, other
    tests' included). Returns (directory, path of the copy), or (None, None) when ldd
    names no libc.so.6."""
    res = run(["ldd", sys.executable])
    m = re.search(r"libc\.so\.6 => (\S+)", res.out)
    if res.status != 0 or not m:
        return None, None
    directory = os.path.join(tmp, "libc")
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, "libc.so.6")
    shutil.copy2(os.path.realpath(m.group(1)), copy)
    return directory, copy


@contextlib.contextmanager
def libc_uprobe(ck, label, function, tmp):
    """A bpftrace uprobe on `function` of a private copy of the C library
    (private_libc) for the length of the block. Yields the directory to put in the
    program's LD_LIBRARY_PATH, or None after a skip (no usable bpftrace, no libc.so.6,
    the uprobe not attached)."""
    ok, why = bpftrace_usable()
    libdir, libc = private_libc(tmp) if ok else (None, None)
    if not ok or not libc:
        ck.skip(label, why or "ldd names no libc.so.6")
        yield None
        return
    with bpftrace_uprobe(f'uprobe:"{libc}":{function} {{ @n = count(); }}') as attached:
        if not attached:
            ck.skip(label, "bpftrace could not attach its uprobe here")
        yield libdir if attached else None


@contextlib.contextmanager
def bpftrace_uprobe(probe, attach_timeout=60, output=None):
    """Runs `bpftrace -e PROBE` for the length of the block (a uprobe's int3 is in every
    process that maps the file, other tests' included: a private copy keeps it to the
    test). Yields True once bpftrace has attached, False if it could not; stops it at
    the end, and then appends what it printed to the list `output` if one is given."""
    proc = subprocess.Popen(["bpftrace", "-e", probe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=_child_setup)
    try:
        deadline = time.monotonic() + attach_timeout
        attached = False
        while time.monotonic() < deadline and proc.poll() is None:
            if "Attaching" in proc.stdout.readline().decode():
                attached = True
                break
        if attached:
            time.sleep(0.5)
        yield attached
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = proc.communicate()[0]
        if output is not None:
            output.append((rest or b"").decode(errors="replace"))

#!/usr/bin/env python3
"""The fileops plugin on tests/progs/fdleaks.c, which opens, releases and leaks
descriptors and streams in every way fileops follows and lists its own open
descriptors from /proc/self/fd at the end.

usage: test_fileops.py VARIANT=EXECUTABLE...

For each build of the program:
  * -o run: traced output and exit status equal to an untraced run; every line of
    the trace well-formed (parsed here, independently of functracer's own reader,
    and by `functracer-postproc dump --json`); every fileops record has the fields
    doc/trace-format.md §3.6 gives it; the records per type and function are
    exactly what the program counted (so failed calls, and the calls libc makes
    inside fopen, fclose, popen or tmpfile, are not recorded); at each
    file_open of fopen/freopen/tmpfile/popen the stream's descriptor is not open
    in the trace (the inner open was not recorded); the descriptors open at the
    end according to the fd_open/fd_close/file_open/file_close records are the
    program's /proc/self/fd list, each opened by the function the program says,
    and so are the streams; every fd_open and file_open has frames, no release
    has frames (no -A); the innermost frame of each leak is in the program
    function that made the call (nm of the executable).
  * streaming run (no -o): the per-call lines and the end-of-process summary
    (count, and each fd and stream with the function that opened it).
  * fileops and calltrace -a fd_marker together, -b 0: both plugins in the
    header, calltrace's calls of fd_marker only, fileops's records unchanged (the
    opens inside the traced fd_marker are recorded), no frames anywhere.
  * -f -A -b 4: the forked child's trace shows it replacing an fd inherited from
    the parent with dup2 (an fd_close it can only write if it got the parent's
    state) and closing another; releases have frames, none more than 4.
  * --stats, with and without returns handled in the process (FT_FAST_RETURNS=0):
    the same records, fewer stops, and the returns of calls whose result is their
    return value (open, close, dup...) taken without a stop.
  * `functracer-postproc fds --json` on the -o trace: the fds left open are the
    program's, each in a group of the function that opened it; the streams are the
    program's plus those its exec took with the old image (as many as the program
    counted); each group's first frame is in the program function that made the
    call, and its function and file:line are what addr2line says.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

FILEOPS_TYPES = ("fd_open", "fd_close", "file_open", "file_close")
FUNCTIONS = {
    "fd_open": {"open", "openat", "creat", "dup", "dup2", "dup3", "fcntl", "pipe", "pipe2",
                "socketpair", "socket", "accept", "accept4", "eventfd", "timerfd_create",
                "signalfd", "epoll_create", "epoll_create1", "inotify_init", "inotify_init1",
                "memfd_create"},
    "fd_close": {"close", "dup2", "dup3", "close_range", "fclose", "pclose", "freopen", "exec"},
    "file_open": {"fopen", "fdopen", "freopen", "tmpfile", "popen"},
    "file_close": {"fclose", "pclose", "freopen", "exec"},
}
# field -> kind, and which fields must be there
FIELDS = {
    "fd_open": ({"function": "str", "fd": "int", "path": "str", "name": "str", "frames": "list"},
                {"function", "fd"}),
    "fd_close": ({"function": "str", "fd": "int", "frames": "list"}, {"function", "fd"}),
    "file_open": ({"function": "str", "stream": "hex", "fd": "int", "path": "str", "mode": "str",
                   "command": "str", "frames": "list"}, {"function", "stream", "fd"}),
    "file_close": ({"function": "str", "stream": "hex", "frames": "list"}, {"function", "stream"}),
}
# Streams whose descriptor libc opens inside the call.
INNER_FD = {"fopen", "freopen", "tmpfile", "popen"}

# ---------------------------------------------------------------------------
# The trace format (doc/trace-format.md §2), parsed strictly.

INT = r"(?:0|-?[1-9][0-9]*)"
HEX = r"(?:0x(?:0|[1-9a-f][0-9a-f]*))"
LIST = r"(?:\[(?:" + HEX + r"(?:," + HEX + r")*)?\])"
STR = r'(?:"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\\"ntr]|\\x[0-9a-f]{2})*")'
VALUE = "(?:" + "|".join((STR, LIST, HEX, INT)) + ")"
LINE_RE = re.compile(r"^(0|[1-9][0-9]*) (" + INT + r") (0|[1-9][0-9]*) ([a-z0-9_]+)"
                     r"((?: [a-z0-9_]+=" + VALUE + r")*)$")
FIELD_RE = re.compile(r" ([a-z0-9_]+)=(" + VALUE + r")")


def decode_string(s):
    out = bytearray()
    i = 1
    while i < len(s) - 1:
        c = s[i]
        if c == "\\":
            e = s[i + 1]
            if e == "x":
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out += {"\\": b"\\", '"': b'"', "n": b"\n", "t": b"\t", "r": b"\r"}[e]
            i += 2
            continue
        out += c.encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


def decode(v):
    if v.startswith('"'):
        return ("str", decode_string(v))
    if v.startswith("["):
        return ("list", [int(x, 16) for x in v[1:-1].split(",")] if v != "[]" else [])
    if v.startswith("0x"):
        return ("hex", int(v, 16))
    return ("int", int(v))


class Rec:
    def __init__(self, lineno, seq, tid, ts, rtype, fields, kinds):
        self.lineno, self.seq, self.tid, self.ts, self.type = lineno, seq, tid, ts, rtype
        self.f = fields
        self.kinds = kinds

    def __repr__(self):
        return f"#{self.seq} {self.type} {self.f}"


def parse_trace(ck, path):
    """Every line of the file, strictly; returns the records (None if unreadable)."""
    name = os.path.basename(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if not ck.check(data.endswith(b"\n"), f"{name}: does not end with a newline"):
        return None
    lines = data[:-1].split(b"\n")
    if not ck.check(lines[0] in (b"functracer-trace 1", b"functracer-trace 2"),
                    f"{name}: magic line is {lines[0][:40]!r}"):
        return None
    stacks = {} if lines[0].endswith(b" 2") else None  # version 2: stack id -> frames
    recs = []
    bad = []
    for n, raw in enumerate(lines[1:], 2):
        try:
            line = raw.decode("ascii")
        except UnicodeDecodeError:
            bad.append(f"line {n}: not ASCII")
            continue
        m = LINE_RE.match(line)
        if not m:
            bad.append(f"line {n}: {line[:160]!r}")
            continue
        fields, kinds = {}, {}
        for fm in FIELD_RE.finditer(m.group(5)):
            key = fm.group(1)
            if key in fields:
                bad.append(f"line {n}: field {key} twice")
            kinds[key], fields[key] = decode(fm.group(2))
        rec = Rec(n, int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4), fields, kinds)
        if stacks is not None and rec.type == "stack":
            if kinds.get("id") != "int" or kinds.get("frames") != "list":
                bad.append(f"line {n}: stack record without an id or frames")
            else:
                stacks[fields["id"]] = fields["frames"]
            continue
        if stacks is not None and "stack" in fields:
            ref = fields.pop("stack")
            kinds.pop("stack")
            if ref not in stacks:
                bad.append(f"line {n}: refers to stack {ref}, which no earlier record holds")
            else:
                fields["frames"], kinds["frames"] = stacks[ref], "list"
        recs.append(rec)
    ck.check(not bad, f"{name}: {len(bad)} malformed line(s):\n  " + "\n  ".join(bad[:10]))
    for a, b in zip(recs, recs[1:]):
        if not ck.check(b.seq > a.seq, f"{name}: SEQ {b.seq} (line {b.lineno}) after {a.seq}"):
            break
    ck.check(recs and recs[0].type == "header" and recs[0].seq == 1,
             f"{name}: first record is not the header with SEQ 1")
    return recs


def check_fileops_fields(ck, label, recs):
    problems = []
    for r in recs:
        if r.type not in FILEOPS_TYPES:
            continue
        allowed, required = FIELDS[r.type]
        missing = required - set(r.f)
        if missing:
            problems.append(f"line {r.lineno}: {r.type} lacks {sorted(missing)}")
        for k, kind in r.kinds.items():
            if k not in allowed:
                problems.append(f"line {r.lineno}: {r.type} has unexpected field {k}")
            elif allowed[k] != kind:
                problems.append(f"line {r.lineno}: {r.type} field {k} is {kind}, want {allowed[k]}")
        fn = r.f.get("function")
        if fn not in FUNCTIONS[r.type]:
            problems.append(f"line {r.lineno}: {r.type} with function {fn!r}")
        if "fd" in r.f and isinstance(r.f["fd"], int) and r.f["fd"] < (-1 if r.type == "file_open" else 0):
            problems.append(f"line {r.lineno}: {r.type} with fd {r.f['fd']}")
        if r.type.startswith("file") and r.f.get("stream") == 0:
            problems.append(f"line {r.lineno}: {r.type} of a NULL stream")
    ck.check(not problems, f"{label}: {len(problems)} malformed fileops record(s):\n  " +
             "\n  ".join(problems[:12]))


# ---------------------------------------------------------------------------
# What the program says.


class Program:
    def __init__(self, out):
        self.expect = collections.Counter()  # (type, function) -> n
        self.marker_calls = 0
        self.leak_fds = {}  # fd -> (function, where)
        self.leak_streams = collections.Counter()  # (function, fd, where) -> n
        self.listing = {}  # fd -> kind
        self.child = {}  # "dup2"/"close" -> fd
        for line in out.splitlines():
            w = line.split()
            if not w:
                continue
            if w[0] == "expect":
                for kv in w[2:]:
                    k, _, v = kv.partition("=")
                    self.expect[(w[1], k)] += int(v)
            elif w[0] == "calls":
                for kv in w[1:]:
                    k, _, v = kv.partition("=")
                    if k == "fd_marker":
                        self.marker_calls += int(v)
            elif w[:2] == ["leak", "fd"]:
                self.leak_fds[int(w[2])] = (w[3], w[4])
            elif w[:2] == ["leak", "stream"]:
                self.leak_streams[(w[2], int(w[4]), w[5])] += 1
            elif w[:2] == ["open", "fd"]:
                self.listing[int(w[2])] = " ".join(w[3:])
            elif w[0] == "child":
                self.child[w[1]] = int(w[3])


def check_program_output(ck, label, prog):
    ok = ck.check(prog.listing and prog.leak_fds and prog.leak_streams and prog.expect,
                  f"{label}: the program's output lacks its listing, leaks or counts")
    stream_fds = {fd for (_, fd, _) in prog.leak_streams}
    ck.check_eq(sorted(prog.listing), sorted(set(prog.leak_fds) | stream_fds),
                f"{label}: the program's leak list against its own /proc/self/fd list")
    return ok


# ---------------------------------------------------------------------------
# Replaying the records.


class Replay:
    """Descriptors and streams open according to the fileops records of one process."""

    def __init__(self):
        self.fds = {}  # fd -> its fd_open record
        self.streams = {}  # stream -> [file_open record, fd or None]
        self.counts = collections.Counter()
        self.nested = []  # problems: a stream's inner descriptor seen open
        self.exe_base = None  # load address of the executable when each record was written
        self.exec_closed = []  # [file_open record, fd or None] of the streams an exec closed

    def feed(self, r, exe_real):
        if r.type == "module" and os.path.realpath(str(r.f.get("path"))) == exe_real:
            self.exe_base = r.f.get("base")
        if r.type not in FILEOPS_TYPES:
            return
        r.exe_base = self.exe_base
        self.counts[(r.type, r.f.get("function"))] += 1
        fd = r.f.get("fd")
        if r.type == "fd_open":
            self.fds[fd] = r
        elif r.type == "fd_close":
            self.fds.pop(fd, None)
            for s in self.streams.values():
                if s[1] == fd:
                    s[1] = None
        elif r.type == "file_open":
            fn = r.f.get("function")
            if fn in INNER_FD and fd in self.fds:
                self.nested.append(f"line {r.lineno}: {fn} returned a stream on fd {fd}, which the "
                                   f"trace has open since {self.fds[fd]!r}")
            if fn == "fdopen" and fd not in self.fds:
                self.nested.append(f"line {r.lineno}: fdopen of fd {fd}, not open in the trace")
            self.streams[r.f.get("stream")] = [r, fd if fd >= 0 else None]
        elif r.type == "file_close":
            s = self.streams.pop(r.f.get("stream"), None)
            if s is not None and r.f.get("function") == "exec":
                self.exec_closed.append(s)

    def open_fds(self):
        return set(self.fds) | {s[1] for s in self.streams.values() if s[1] is not None}


class Symbols:
    """Function symbols of the executable, to say which function a frame is in."""

    def __init__(self, exe):
        with open(exe, "rb") as fh:
            hdr = fh.read(18)
        self.pie = int.from_bytes(hdr[16:18], "little") == 3  # ET_DYN
        res = h.run(["nm", "--defined-only", "-S", exe])
        self.syms = []
        for line in res.out.splitlines():
            p = line.split()
            if len(p) == 4 and p[2] in "Tt":
                self.syms.append((int(p[0], 16), int(p[1], 16), p[3]))

    def function_at(self, addr, base):
        if self.pie:
            if base is None:
                return None
            addr -= base
        for start, size, name in self.syms:
            if start <= addr < start + size:
                return name
        return None


def only_trace(ck, label, outdir):
    files = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    files = [os.path.join(outdir, f) for f in files if f.endswith(".trace")]
    if not ck.check(len(files) == 1, f"{label}: want one trace file, got {files}"):
        return None, None
    return files[0], parse_trace(ck, files[0])


def analyse(ck, label, recs, prog, exe, frames_wanted=True, releases_with_frames=False,
            max_frames=10):
    """The checks on the main process's trace; returns the replay."""
    check_fileops_fields(ck, label, recs)
    exe_real = os.path.realpath(exe)
    rp = Replay()
    for r in recs:
        rp.feed(r, exe_real)

    # Counts per record type and function: the program's own.
    diff = [f"{t} {fn}: program {prog.expect[(t, fn)]}, trace {rp.counts[(t, fn)]}"
            for (t, fn) in sorted(set(rp.counts) | set(prog.expect), key=repr)
            if rp.counts[(t, fn)] != prog.expect[(t, fn)]]
    ck.check(not diff, f"{label}: fileops records per (type, function) differ from the program's "
             f"counts:\n  " + "\n  ".join(diff))
    ck.check(not rp.nested, f"{label}: calls made inside fopen/freopen/tmpfile/popen were "
             f"recorded:\n  " + "\n  ".join(rp.nested[:8]))

    # The leaks.
    ck.check_eq(sorted(rp.open_fds()), sorted(prog.listing),
                f"{label}: descriptors open at exit in the trace against the program's "
                f"/proc/self/fd list")
    got_fn = {fd: r.f.get("function") for fd, r in rp.fds.items()}
    want_fn = {fd: fn for fd, (fn, _) in prog.leak_fds.items()}
    ck.check_eq(got_fn, want_fn, f"{label}: function that opened each leaked descriptor")
    got_streams = collections.Counter((s[0].f.get("function"), s[1]) for s in rp.streams.values())
    want_streams = collections.Counter()
    for (fn, fd, _), n in prog.leak_streams.items():
        want_streams[(fn, fd)] += n
    ck.check_eq(sorted(got_streams.items(), key=repr), sorted(want_streams.items(), key=repr),
                f"{label}: streams open at exit (function, fd)")

    # Frames.
    opens = [r for r in recs if r.type in ("fd_open", "file_open")]
    releases = [r for r in recs if r.type in ("fd_close", "file_close") and r.f.get("function") != "exec"]
    if frames_wanted:
        bare = [r for r in opens if not r.f.get("frames")]
        ck.check(not bare, f"{label}: {len(bare)} of {len(opens)} fd_open/file_open records "
                 f"without frames, first {bare[:2]}")
    else:
        ck.check(not any("frames" in r.f for r in recs if r.type in FILEOPS_TYPES),
                 f"{label}: frames written with -b 0")
    long = [r for r in recs if len(r.f.get("frames", [])) > max_frames]
    ck.check(not long, f"{label}: records with more than {max_frames} frames: {long[:2]}")
    with_frames = [r for r in releases if r.f.get("frames")]
    if releases_with_frames:
        ck.check(len(with_frames) == len(releases) and releases,
                 f"{label}: with -A, {len(releases) - len(with_frames)} of {len(releases)} releases "
                 f"lack frames")
    else:
        ck.check(not with_frames, f"{label}: releases with frames without -A: {with_frames[:2]}")
    exec_frames = [r for r in recs if r.type in FILEOPS_TYPES and r.f.get("function") == "exec"
                   and "frames" in r.f]
    ck.check(not exec_frames, f"{label}: close-on-exec releases with frames: {exec_frames[:2]}")

    if frames_wanted:
        syms = Symbols(exe)
        wrong = []
        leaks = [(r, prog.leak_fds[fd][1]) for fd, r in rp.fds.items() if fd in prog.leak_fds]
        where_of = {}
        for (fn, fd, where) in prog.leak_streams:
            where_of[(fn, fd)] = where
        leaks += [(s[0], where_of.get((s[0].f.get("function"), s[1]))) for s in rp.streams.values()]
        for r, where in leaks:
            frames = r.f.get("frames") or [0]
            got = syms.function_at(frames[0] - 1, r.exe_base)
            if got != where:
                wrong.append(f"{r!r}: innermost frame {frames[0]:#x} is in {got}, want {where}")
        ck.check(not wrong, f"{label}: leak backtraces do not start in the calling function:\n  " +
                 "\n  ".join(wrong[:8]))
        if not wrong:
            print(f"{label}: the innermost frame of each of {len(leaks)} leaks is in its caller")
    return rp


def dump_check(ck, label, path, recs):
    """functracer-postproc's reader accepts every line, with the same fields."""
    res = h.run_postproc(["dump", "--json", path])
    if not ck.check(res.status == 0 and not res.timed_out and not res.err.strip(),
                    f"{label}: functracer-postproc dump --json\n{res.describe(1500)}"):
        return
    got = []
    for line in res.out.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            ck.fail(f"{label}: dump --json line is not JSON: {line[:200]!r}")
            return
        if d.get("type") in FILEOPS_TYPES:
            got.append((d.get("seq"), d.get("type"), d.get("function"), d.get("fd")))
    want = [(r.seq, r.type, r.f.get("function"), r.f.get("fd")) for r in recs if r.type in FILEOPS_TYPES]
    ck.check_eq(got, want, f"{label}: fileops records as functracer-postproc dump reads them")


def addr2line(exe, vaddr):
    """(function, file, line) at vaddr in exe per addr2line -f: the innermost function
    when the code there was inlined."""
    res = h.run(["addr2line", "-f", "-e", exe, hex(vaddr)])
    lines = res.out.splitlines()
    if len(lines) < 2:
        return None, None, None
    loc = lines[1].split(" (discriminator")[0].strip()
    file, _, line = loc.rpartition(":")
    return lines[0].strip(), file, int(line) if line.isdigit() else None


def fds_report_check(ck, label, path, recs, prog, exe, rp):
    """`functracer-postproc fds --json` on the trace against the program's own list of
    what it left open: the same fds, each in a group of the function that opened it;
    the same streams, plus the ones the exec took with the old image (the program
    counts them, the trace's file_close "exec" records say which); each group's first
    frame in the program function that made the call, as nm and addr2line see it."""
    res = h.run_postproc(["fds", "--json", path])
    if not ck.check(res.status == 0 and not res.timed_out and not res.err.strip(),
                    f"{label}: functracer-postproc fds --json\n{res.describe(1500)}"):
        return
    try:
        doc = json.loads(res.out)
    except ValueError as e:
        ck.fail(f"{label}: fds --json is not JSON ({e})\n{res.describe(1500)}")
        return
    groups = doc.get("groups") or []
    cut = [(g["function"], g["count"], len(g["open"])) for g in groups if len(g["open"]) != g["count"]]
    ok = ck.check(not cut, f"{label}: fds --json groups whose listing is cut: {cut}")

    got_fds = collections.Counter()
    got_fn = {}
    got_streams = collections.Counter()
    for g in groups:
        for e in g["open"]:
            if g["kind"] == "fd":
                got_fds[e["fd"]] += 1
                got_fn[e["fd"]] = g["function"]
            else:
                got_streams[(g["function"], e["fd"])] += 1
    ok &= ck.check(all(n == 1 for n in got_fds.values()),
                   f"{label}: fds listed more than once: {[fd for fd, n in got_fds.items() if n > 1]}")
    ok &= ck.check_eq(got_fn, {fd: fn for fd, (fn, _) in prog.leak_fds.items()},
                      f"{label}: fds --json: the fds left open and the function that opened "
                      f"each, against the program's list")
    ok &= ck.check_eq(len(rp.exec_closed), prog.expect[("file_close", "exec")],
                      f"{label}: streams closed by the exec in the trace against the program's "
                      f"count")
    want_streams = collections.Counter()
    for (fn, fd, _), n in prog.leak_streams.items():
        want_streams[(fn, fd)] += n
    for r, _ in rp.exec_closed:
        fd = r.f.get("fd")
        want_streams[(r.f.get("function"), fd if fd >= 0 else None)] += 1
    ok &= ck.check_eq(sorted(got_streams.items(), key=repr),
                      sorted(want_streams.items(), key=repr),
                      f"{label}: fds --json: streams left open (function, fd): the program's, "
                      f"and those the exec took with the old image")
    ok &= ck.check_eq((doc.get("open_fds"), doc.get("open_streams"), doc.get("processes"),
                       doc.get("groups_total")),
                      (len(prog.leak_fds), sum(want_streams.values()), 1, len(groups)),
                      f"{label}: fds --json (open_fds, open_streams, processes, groups_total)")
    counts = [g["count"] for g in groups]
    ok &= ck.check(counts == sorted(counts, reverse=True),
                   f"{label}: fds --json groups are not sorted by count: {counts}")

    # Which program function each group comes from: the program says so for what it
    # lists; for the streams the exec took, nm on their records' first frame.
    syms = Symbols(exe)
    base_of = {}
    for r in recs:
        if r.type in ("fd_open", "file_open") and r.f.get("frames"):
            base_of.setdefault(r.f["frames"][0], getattr(r, "exe_base", None))
    # (function, fd) -> where; a set, as a stream the exec took and one of the new
    # image may have had the same fd.
    where_of_stream = collections.defaultdict(set)
    for (fn, fd, where) in prog.leak_streams:
        where_of_stream[(fn, fd)].add(where)
    for r, _ in rp.exec_closed:
        frames = r.f.get("frames") or [0]
        where_of_stream[(r.f.get("function"), r.f.get("fd"))].add(
            syms.function_at(frames[0] - 1, getattr(r, "exe_base", None)))
    exe_real = os.path.realpath(exe)
    wrong = []
    checked = 0
    for g in groups:
        if g["kind"] == "fd":
            each = [{prog.leak_fds.get(e["fd"], (None, None))[1]} for e in g["open"]]
        else:
            each = [where_of_stream.get((g["function"], e["fd"]), set()) for e in g["open"]]
        wheres = set.intersection(*each) - {None} if each else set()
        text = f"{g['kind']} group of {g['function']} {[e['fd'] for e in g['open']]}"
        if not wheres:
            wrong.append(f"{text}: its members come from different functions: {each}")
            continue
        frames = g.get("frames") or []
        outer = [f for f in frames if not f.get("inlined")]
        if not frames or not outer:
            wrong.append(f"{text}: no frames")
            continue
        if h.base_name(outer[0].get("function")) not in wheres:
            wrong.append(f"{text}: first frame {outer[0]} is not in {' or '.join(sorted(wheres))}")
        if os.path.realpath(str(frames[0].get("module"))) != exe_real:
            wrong.append(f"{text}: first frame module {frames[0].get('module')!r}, want {exe_real}")
            continue
        addr = int(frames[0]["address"], 16)
        base = base_of.get(addr)
        if syms.pie and base is None:
            wrong.append(f"{text}: no raw record has the first frame {addr:#x}")
            continue
        fn, file, line = addr2line(exe, addr - 1 - (base if syms.pie else 0))
        got = (h.base_name(frames[0].get("function")), os.path.basename(str(frames[0].get("file"))),
               frames[0].get("line"))
        if got != (fn, os.path.basename(str(file)), line):
            wrong.append(f"{text}: first frame {got}, addr2line says {(fn, file, line)}")
            continue
        checked += 1
    ok &= ck.check(not wrong, f"{label}: fds --json frames:\n  " + "\n  ".join(wrong[:10]))
    if ok:
        print(f"{label}: fds --json: {len(got_fn)} fds and {sum(got_streams.values())} streams "
              f"as the program says; {checked} groups start in the calling function per addr2line")


# ---------------------------------------------------------------------------


def untraced(ck, label, exe):
    res = h.run([exe])
    if not ck.check(res.status == 0 and not res.timed_out, f"{label}: untraced run\n{res.describe()}"):
        return None, None
    prog = Program(res.out)
    if not check_program_output(ck, label, prog):
        return None, None
    return res, prog


def same_as_untraced(ck, label, res, ref):
    ck.check_eq(res.status, ref.status, f"{label}: exit status\n{res.describe()}")
    ck.check(res.stdout == ref.stdout, f"{label}: stdout differs from the untraced run\n"
             f"{res.describe()}\n--- untraced stdout ---\n{ref.out[:2000]}")


def run_with_output(ck, label, exe, ref, prog):
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        tr = h.trace([exe], None, out, plugin="fileops")
        same_as_untraced(ck, label, tr.result, ref)
        ck.check(tr.result.stderr == ref.stderr, f"{label}: stderr differs\n{tr.result.describe()}")
        path, recs = only_trace(ck, label, out)
        if not recs:
            return
        hdr = recs[0].f
        ck.check_eq(hdr.get("plugins"), "fileops", f"{label}: header plugins")
        rp = analyse(ck, label, recs, prog, exe)
        dump_check(ck, label, path, recs)
        fds_report_check(ck, label, path, recs, prog, exe, rp)


def run_streaming(ck, label, exe, ref, prog):
    res = h.trace([exe], None, None, plugin="fileops").result
    same_as_untraced(ck, label, res, ref)
    lines = [re.sub(r"^\[pid \d+\] ", "", line) for line in res.err.splitlines()]
    heads = [line for line in lines if re.match(r"fileops: \d+ fds? and \d+ streams? still open$", line)]
    if not ck.check(len(heads) == 1, f"{label}: want one summary line, got {heads}\n{res.describe()}"):
        return
    nfds, nstreams = map(int, re.findall(r"\d+", heads[0]))
    ck.check_eq((nfds, nstreams), (len(prog.leak_fds), sum(prog.leak_streams.values())),
                f"{label}: summary counts (fds, streams)")
    fds = {}
    streams = collections.Counter()
    for line in lines:
        m = re.match(r"fileops:   fd (\d+) ([a-z0-9_]+)", line)
        if m:
            fds[int(m.group(1))] = m.group(2)
        m = re.match(r"fileops:   stream 0x[0-9a-f]+ fd (-?\d+) ([a-z0-9_]+)", line)
        if m:
            streams[(m.group(2), int(m.group(1)))] += 1
    ck.check_eq(fds, {fd: fn for fd, (fn, _) in prog.leak_fds.items()},
                f"{label}: summary lines of open descriptors")
    want_streams = collections.Counter()
    for (fn, fd, _), n in prog.leak_streams.items():
        want_streams[(fn, fd)] += n
    ck.check_eq(sorted(streams.items(), key=repr), sorted(want_streams.items(), key=repr),
                f"{label}: summary lines of open streams")
    # One line per successful call: the opens of open(2), and what the exec closed.
    opens = [line for line in lines if re.match(r'open\("[^"]*", 0x[0-9a-f]+\) = \d+$', line)]
    ck.check_eq(len(opens), prog.expect[("fd_open", "open")], f"{label}: lines for open() calls")
    m = [re.match(r"exec: closed (\d+) close-on-exec fds", line) for line in lines]
    m = [x for x in m if x]
    ck.check(len(m) == 1 and int(m[0].group(1)) == prog.expect[("fd_close", "exec")],
             f"{label}: want one 'exec: closed {prog.expect[('fd_close', 'exec')]} close-on-exec fds' "
             f"line\n{res.describe()}")


def run_with_calltrace(ck, label, exe, ref, prog):
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        tr = h.trace([exe], "fd_marker", out, plugin="fileops", extra=["-e", "calltrace", "-b", "0"])
        same_as_untraced(ck, label, tr.result, ref)
        _, recs = only_trace(ck, label, out)
        if not recs:
            return
        ck.check_eq(recs[0].f.get("plugins"), "fileops,calltrace", f"{label}: header plugins")
        ck.check_eq(recs[0].f.get("backtrace_depth"), 0, f"{label}: header backtrace_depth")
        calls = collections.Counter(r.f.get("function") for r in recs if r.type == "call")
        returns = collections.Counter(r.f.get("function") for r in recs if r.type == "return")
        ck.check_eq(dict(calls), {"fd_marker": prog.marker_calls}, f"{label}: calltrace call records")
        ck.check_eq(dict(returns), {"fd_marker": prog.marker_calls}, f"{label}: calltrace return records")
        analyse(ck, label, recs, prog, exe, frames_wanted=False)


def run_follow(ck, label, exe, ref, prog):
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")
        tr = h.trace([exe], None, out, plugin="fileops", extra=["-f", "-A", "-b", "4"])
        same_as_untraced(ck, label, tr.result, ref)
        files = [os.path.join(out, f) for f in sorted(os.listdir(out))] if os.path.isdir(out) else []
        traces = {}
        for f in files:
            recs = parse_trace(ck, f)
            if recs:
                traces[f] = recs
        main = [f for f, recs in traces.items()
                if any(r.type == "process" and r.f.get("ppid") not in
                       {x.f.get("pid") for rs in traces.values() for x in rs if x.type == "header"}
                       for r in recs)]
        if not ck.check(len(main) == 1, f"{label}: want one launched process among {list(traces)}"):
            return
        main_recs = traces[main[0]]
        main_pid = main_recs[0].f.get("pid")
        ck.check_eq(main_recs[0].f.get("backtrace_depth"), 4, f"{label}: header backtrace_depth")
        analyse(ck, label, main_recs, prog, exe, releases_with_frames=True, max_frames=4)
        # The forked child: the parent's pid, no exec (the popen children exec a shell).
        children = [recs for recs in traces.values()
                    if any(r.type == "process" and r.f.get("ppid") == main_pid for r in recs)
                    and not any(r.type == "exec" for r in recs)]
        if not ck.check(len(children) == 1, f"{label}: want one forked child that does not exec, "
                        f"got {len(children)}"):
            return
        recs = children[0]
        check_fileops_fields(ck, f"{label} child", recs)
        ops = [(r.type, r.f.get("function"), r.f.get("fd")) for r in recs if r.type in FILEOPS_TYPES]
        a, b = prog.child.get("dup2"), prog.child.get("close")
        want = [("fd_close", "dup2", a), ("fd_open", "dup2", a), ("fd_close", "close", b)]
        ck.check_eq(ops, want, f"{label}: the forked child's records (dup2 onto a descriptor "
                    f"inherited open, close of another)")


# The functions whose result is in memory at the return: their returns take a stop.
RETURN_READS_MEMORY = {"pipe", "pipe2", "socketpair", "fopen", "tmpfile", "popen", "freopen"}


def run_cost(ck, label, exe, ref, prog):
    """--stats with returns handled in the process and with every return caught by a
    stop (FT_FAST_RETURNS=0): the same records (frames counted, not compared: the
    addresses move with ASLR; analyse() checks where they point), fewer stops, and
    at least one return without a stop per record of a call whose result is its
    return value."""
    runs = {}
    with h.TempDir() as tmp:
        for fast in (True, False):
            out = os.path.join(tmp, f"out-{int(fast)}")
            env = dict(os.environ)
            if not fast:
                env["FT_FAST_RETURNS"] = "0"
            res = h.run([h.functracer(), "-q", "--stats", "-e", "fileops", "--uncompressed", "-o", out, exe],
                        timeout=h.TRACED_TIMEOUT, env=env)
            same_as_untraced(ck, f"{label} fast={fast}", res, ref)
            stops = re.search(r"(\d+) ptrace stops", res.err)
            quick = re.search(r"(\d+) returns hooked in the process, (\d+) of them returned without a stop",
                              res.err)
            _, recs = only_trace(ck, f"{label} fast={fast}", out)
            if not ck.check(stops and recs, f"{label} fast={fast}: no --stats or no trace\n{res.describe()}"):
                return
            # The program's scratch directory has a new name in each run.
            ops = [(r.type, r.f.get("function"), r.f.get("fd"),
                    re.sub(r"/fdleaks-[^/]+", "/fdleaks-*", r.f.get("path") or ""), len(r.f.get("frames", [])))
                   for r in recs if r.type in FILEOPS_TYPES]
            runs[fast] = (int(stops.group(1)), int(quick.group(2)) if quick else 0, ops)
    (fast_stops, without_stop, fast_ops), (slow_stops, slow_without, slow_ops) = runs[True], runs[False]
    diff = next((i for i, (a, b) in enumerate(zip(fast_ops, slow_ops)) if a != b), None)
    if diff is None and len(fast_ops) != len(slow_ops):
        diff = min(len(fast_ops), len(slow_ops))
    ck.check(diff is None, f"{label}: fileops records with returns handled in the process against "
             f"returns caught by a stop ({len(fast_ops)} and {len(slow_ops)} records): record {diff} is "
             f"{fast_ops[diff:diff + 3] if diff is not None else ''} against "
             f"{slow_ops[diff:diff + 3] if diff is not None else ''}")
    ck.check_eq(slow_without, 0, f"{label}: returns without a stop with FT_FAST_RETURNS=0")
    by_value = sum(1 for op in fast_ops if op[1] not in RETURN_READS_MEMORY and op[1] != "exec")
    ck.check(without_stop >= by_value > 0,
             f"{label}: {without_stop} returns without a stop, {by_value} records of calls whose result "
             f"is their return value")
    ck.check(fast_stops < slow_stops, f"{label}: {fast_stops} stops, {slow_stops} with FT_FAST_RETURNS=0")
    print(f"{label}: {len(fast_ops)} records either way; {fast_stops} stops against {slow_stops}, "
          f"{without_stop} returns without a stop")


def main():
    ck = h.Checker("fileops")
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds:
        sys.stderr.write("usage: test_fileops.py VARIANT=EXECUTABLE...\n")
        sys.exit(2)
    for variant, exe in builds:
        label = f"fdleaks-{variant}"
        print(f"=== {label}")
        ref, prog = untraced(ck, label, exe)
        if ref is None:
            continue
        run_with_output(ck, f"{label} -o", exe, ref, prog)
        run_streaming(ck, f"{label} streaming", exe, ref, prog)
        run_with_calltrace(ck, f"{label} -e calltrace", exe, ref, prog)
        run_follow(ck, f"{label} -f -A", exe, ref, prog)
        run_cost(ck, f"{label} --stats", exe, ref, prog)
    ck.finish()


if __name__ == "__main__":
    main()

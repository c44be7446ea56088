#!/usr/bin/env python3
"""memtrace on programs that know what they leak (tests/progs/leaks.c, leaks_cxx.cc).

usage: test_memtrace.py PROGRAM VARIANT EXECUTABLE

The oracle is the program's own manifest (see the head of leaks.c): one line per
leaking function with its blocks, bytes per block and allocator entry point, the
totals, the allocations that fail, and (leaks.c) how many allocations and releases
it made. The untraced run gives the manifest, the expected output and the exit
status. Every traced run is checked for:

  * the same stdout, stderr and exit status as the untraced run;
  * one trace file; the header's backtrace_depth; the end record;
  * the live set computed here from the raw trace file (this script parses the
    trace format itself, doc/trace-format.md 2): no alloc at a live address, no
    free of an address that is not live, every frames list within the depth;
    the blocks live at the end have exactly the manifest's totals, and exactly
    its (entry point, size) pairs; the numbers of alloc and free records equal
    the program's counts (leaks.c); alloc_failed records per entry point equal
    the program's failures; no bad_free (or, in `badfree` mode, exactly one
    "double" on the block released twice and one "unknown");
  * entry points that are one function in the traced process's libraries (the
    same address in the same file: memalign and aligned_alloc in glibc < 2.38)
    are taken as one, since no tracer can tell which name the program used;
  * `functracer-postproc leaks --json`: leaked_bytes and leaked_blocks equal the
    manifest's totals; groups sorted by bytes.

With backtraces (the default depth 10) also:

  * every alloc record has frames, no free record has any (unless -A);
  * the blocks each manifest line names are live at the end with a first frame
    in the leaking function (for strdup: the first frame is in libc's strdup,
    the second in the leaking function), all from one call site, with the
    manifest's size, entry point and alignment, and the instruction before that
    return address (objdump of the executable) calls the entry point (or strdup);
  * each alloc_failed record's first frame is the return address of the failing
    call in fail_allocs (the instruction before it calls that entry point);
  * each manifest line has exactly one report group whose first frame names the
    leaking function, with its blocks and bytes and the raw records' return
    address, and addr2line (run here on the executable, with the load bias from
    the trace's module records) gives the same function, file and line as the
    report; one group per manifest line and no other: no group has a frame in a
    function that frees what it allocates (pairs_*, fail_*, bad_*).

Other runs: -b 0 (no frames anywhere, totals exact), -A -b 4 (frames on releases
too, at most 4), -M SIZES (frames only on allocations of those sizes), and for
leaks.c the `badfree` mode.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
from tracefile import parse_trace  # noqa: E402

FREEING_FUNCS = re.compile(r"^(pairs_|fail_|bad_)")
DEFAULT_DEPTH = 10

# --------------------------------------------------------------------------
# Resolving return addresses here: module records + program headers + addr2line
# (for the executable, which has DWARF) or the dynamic symbol table (libraries).


class Resolver:
    def __init__(self, records):
        self.modules = []  # (base, end, offset, path), later records first
        for r in records:
            if r["type"] == "module":
                self.modules.insert(0, (r["base"], r["end"], r["offset"], r["path"]))
        self._segs = {}
        self._dynsyms = {}
        self._a2l = {}
        self._calls = {}

    def module_of(self, addr):
        for base, end, offset, path in self.modules:
            if base <= addr < end:
                return base, offset, path
        return None

    def file_address(self, addr):
        """(path, address in the ELF file's own vaddr space) or None."""
        m = self.module_of(addr)
        if m is None:
            return None
        base, offset, path = m
        if path not in self._segs:
            self._segs[path] = h.load_segments(path) if os.path.exists(path) else []
        for p_offset, p_vaddr, p_filesz in self._segs[path]:
            page_off = p_offset & ~0xfff
            if page_off <= offset < p_offset + max(p_filesz, 1):
                bias = base - (p_vaddr - (p_offset - offset))
                return path, addr - bias
        return None

    def addr2line(self, path, vaddrs):
        """{vaddr: (function, file, line)} from addr2line -f -C."""
        todo = [a for a in vaddrs if (path, a) not in self._a2l]
        if todo:
            res = h.run(["addr2line", "-f", "-C", "-e", path] + [hex(a) for a in todo])
            lines = res.out.splitlines()
            for i, a in enumerate(todo):
                fn = lines[2 * i] if 2 * i < len(lines) else "??"
                loc = lines[2 * i + 1] if 2 * i + 1 < len(lines) else "??:0"
                loc = loc.split(" (discriminator")[0]
                file, _, line = loc.rpartition(":")
                self._a2l[(path, a)] = (fn, file, int(line) if line.isdigit() else None)
        return {a: self._a2l[(path, a)] for a in vaddrs}

    def call_target(self, path, ret_vaddr):
        """The function a call instruction just before ret_vaddr calls, as objdump
        names it without @plt ("" for an indirect call, None if the instruction
        before ret_vaddr is not a call)."""
        if path not in self._calls:
            calls = {}
            prev = None
            insn = re.compile(r"^\s*([0-9a-f]+):\t(?:[0-9a-f]{2} )+\s*\t(\S+)\s*(.*)$")
            for line in h.run(["objdump", "-d", "-w", path], timeout=600).out.splitlines():
                m = insn.match(line)
                if not m:
                    continue
                addr = int(m.group(1), 16)
                if prev is not None:
                    calls[addr] = prev
                prev = None
                if m.group(2).startswith("call"):
                    t = re.search(r"<([^>+]+)", m.group(3))
                    prev = t.group(1).split("@")[0] if t else ""
            self._calls[path] = calls
        return self._calls[path].get(ret_vaddr)

    def dynsyms_of(self, path):
        """[(start, size, name)] of the defined dynamic function symbols."""
        if path not in self._dynsyms:
            res = h.run(["nm", "-D", "--defined-only", "-S", path])
            syms = []
            for line in res.out.splitlines():
                w = line.split()
                if len(w) == 4 and w[2] in "TtWwi":
                    syms.append((int(w[0], 16), int(w[1], 16), w[3].split("@")[0]))
            self._dynsyms[path] = syms
        return self._dynsyms[path]

    def dynsym(self, path, vaddr):
        return sorted({name for start, size, name in self.dynsyms_of(path)
                       if start <= vaddr < start + size})

    def names(self, ret_addr):
        """Names of the function a return address is in (looked up at ret_addr - 1):
        (module path, [names], file, line)."""
        fa = self.file_address(ret_addr - 1)
        if fa is None:
            return None, [], None, None
        path, vaddr = fa
        fn, file, line = self.addr2line(path, [vaddr])[vaddr]
        names = [] if fn == "??" else [h.base_name(fn)]
        if not names:
            names = self.dynsym(path, vaddr)
        return path, names, file, line


# --------------------------------------------------------------------------
# The program's manifest.


class Manifest:
    def __init__(self):
        self.leaks = []  # dicts: fn, blocks, bytes, entry, align, inner
        self.total = None  # (blocks, bytes)
        self.failed = {}  # entry -> count
        self.events = None  # (allocs, frees)
        self.bad_free = {}  # reason -> count


def parse_manifest(text):
    m = Manifest()
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
        if w[0] == "leak":
            m.leaks.append({"fn": w[1], "blocks": int(kv["blocks"]), "bytes": int(kv["bytes"]),
                            "entry": kv["entry"], "align": int(kv.get("align", 0)),
                            "inner": kv.get("inner")})
        elif w[0] == "leak_total":
            m.total = (int(kv["blocks"]), int(kv["bytes"]))
        elif w[0] == "alloc_failed":
            m.failed = {k: int(v) for k, v in kv.items()}
        elif w[0] == "events":
            m.events = (int(kv["allocs"]), int(kv["frees"]))
        elif w[0] == "bad_free":
            m.bad_free = {k: int(v) for k, v in kv.items()}
    return m


def alias_classes(resolver, names):
    """{name: class} for allocator entry points: names that are one function in
    the traced process's libraries (the same address in the same file, as
    memalign and aligned_alloc in glibc before 2.38) share a class, since a
    tracer cannot tell which of them the program called. Every other name is its
    own class."""
    where = collections.defaultdict(set)
    for path in {m[3] for m in resolver.modules}:
        if os.path.exists(path):
            for start, _, name in resolver.dynsyms_of(path):
                if name in names:
                    where[name].add((path, start))
    canon = {}
    for n in names:
        same = sorted(m for m in names if where[n] & where[m])
        canon[n] = "|".join(same) if len(same) > 1 else n
    return canon


# --------------------------------------------------------------------------
# Checks on the raw records.


class Live:
    """The heap as the records describe it."""

    def __init__(self):
        self.live = collections.OrderedDict()  # address -> alloc record
        self.released = set()  # addresses freed and not allocated since
        self.ever = set()  # addresses ever allocated
        self.allocs = 0
        self.frees = 0
        self.failed = collections.Counter()
        self.bad_free = []
        self.problems = []
        self.frames_on = collections.Counter()  # record type -> records with frames
        self.records_of = collections.Counter()
        self.max_frames = 0


def replay(records, depth):
    L = Live()
    for r in records:
        t = r["type"]
        if t not in ("alloc", "free", "alloc_failed", "bad_free"):
            continue
        L.records_of[t] += 1
        frames = r.get("frames")
        if frames:
            L.frames_on[t] += 1
            L.max_frames = max(L.max_frames, len(frames))
            if len(frames) > depth:
                L.problems.append(f"seq {r['seq']}: {len(frames)} frames, depth is {depth}")
        if "function" not in r:
            L.problems.append(f"seq {r['seq']}: {t} record without function")
        if t == "alloc":
            a = r["address"]
            if a in L.live:
                L.problems.append(f"seq {r['seq']}: alloc at {a:#x}, which is live since seq "
                                  f"{L.live[a]['seq']} (a release was missed)")
            L.live[a] = r
            L.released.discard(a)
            L.ever.add(a)
            L.allocs += 1
        elif t == "free":
            a = r["address"]
            if a not in L.live:
                L.problems.append(f"seq {r['seq']}: free record ({r.get('function')}) of "
                                  f"{a:#x}, which is not live: that is a bad_free")
            else:
                del L.live[a]
                L.released.add(a)
            L.frees += 1
        elif t == "alloc_failed":
            L.failed[r.get("function")] += 1
        elif t == "bad_free":
            L.bad_free.append(r)
    return L


def describe_block(res, r):
    frames = r.get("frames") or []
    where = []
    for a in frames[:4]:
        path, names, file, line = res.names(a)
        where.append(f"{'/'.join(names) or '??'}" + (f" ({os.path.basename(path)})" if path else ""))
    at = f" at {r['address']:#x}" if "address" in r else ""
    return (f"{r.get('function')} size={r.get('size')}{at} seq {r['seq']}"
            f" <- {' <- '.join(where) or '(no frames)'}")


def leak_function_of(res, r, leak):
    """Checks an alloc record's backtrace against a manifest line; returns the
    name it shows for the leaking function, or None."""
    frames = r.get("frames") or []
    if leak["inner"]:
        if len(frames) < 2:
            return None
        path, names, _, _ = res.names(frames[0])
        if not any(n.endswith(leak["inner"]) for n in names):
            return None
        frames = frames[1:]
    if not frames:
        return None
    _, names, _, _ = res.names(frames[0])
    return leak["fn"] if leak["fn"] in names else None


# --------------------------------------------------------------------------


class Run:
    def __init__(self, label, args=(), extra=(), depth=DEFAULT_DEPTH, all_frees=False,
                 monitor=None, full=False):
        self.label = label
        self.args = list(args)
        self.extra = list(extra)
        self.depth = depth
        self.all_frees = all_frees  # -A
        self.monitor = monitor  # -M sizes
        self.full = full  # the group / addr2line checks


def leaks_report(ck, label, files):
    res = h.run_postproc(["leaks", "--json"] + files)
    if not ck.check(res.status == 0 and not res.timed_out,
                    f"{label}: functracer-postproc leaks --json failed\n{res.describe()}"):
        return None
    try:
        doc = json.loads(res.out)
    except ValueError as e:
        ck.fail(f"{label}: leaks --json is not JSON ({e})\n{res.describe()}")
        return None
    ok = isinstance(doc, dict) and all(k in doc for k in ("leaked_bytes", "leaked_blocks",
                                                          "groups"))
    if not ck.check(ok, f"{label}: leaks --json lacks leaked_bytes/leaked_blocks/groups\n"
                        f"{res.describe()}"):
        return None
    for g in doc["groups"]:
        for k in ("bytes", "blocks", "frames"):
            ck.check(k in g, f"{label}: leaks --json group without {k!r}: {json.dumps(g)[:300]}")
        for f in g.get("frames", []):
            for k in ("address", "function", "file", "line", "module"):
                ck.check(k in f, f"{label}: leaks --json frame without {k!r}: {json.dumps(f)}")
    return doc


def group_text(g, n=4):
    fr = g.get("frames", [])[:n]
    return (f"{g.get('bytes')} bytes in {g.get('blocks')} blocks by {g.get('function')!r}: " +
            " <- ".join(f"{f.get('function')}@{f.get('address')}" for f in fr))


def check_run(ck, binary, base_manifest_text, base, run):
    label = run.label
    print(f"--- {label}: functracer -e memtrace {' '.join(run.extra)} {binary} "
          f"{' '.join(run.args)}", flush=True)
    with h.TempDir() as tmp:
        out = os.path.join(tmp, "traces")
        tr = h.trace([binary] + run.args, plugin="memtrace", outdir=out, extra=run.extra)
        res = tr.result
        same = (res.stdout == base.stdout and res.stderr == base.stderr and
                res.status == base.status)
        ck.check(same, f"{label}: traced run differs from the untraced one (status "
                       f"{base.status} untraced)\n--- untraced stdout ---\n{base.out[-1500:]}\n"
                       f"--- untraced stderr ---\n{base.err[-800:]}\n{res.describe()}")
        if res.timed_out or not tr.files:
            ck.fail(f"{label}: no trace file in {out}\n{res.describe()}")
            return
        ck.check(len(tr.files) == 1, f"{label}: want one trace file, got {tr.files}")
        manifest = parse_manifest(res.out if same else base_manifest_text)
        try:
            records = parse_trace(tr.files[0])
        except (ValueError, UnicodeDecodeError) as e:
            ck.fail(f"{label}: {e}")
            return
        check_records(ck, run, binary, manifest, records)
        doc = leaks_report(ck, label, tr.files)
        if doc is not None:
            check_report(ck, run, binary, manifest, records, doc)


def check_records(ck, run, binary, manifest, records):
    label = run.label
    header = records[0] if records else {}
    ck.check(header.get("type") == "header", f"{label}: first record is not a header")
    ck.check("memtrace" in str(header.get("plugins", "")).split(","),
             f"{label}: header plugins={header.get('plugins')!r}, want memtrace")
    ck.check_eq(header.get("backtrace_depth"), run.depth, f"{label}: header backtrace_depth")
    ends = [r for r in records if r["type"] in ("exit", "killed", "detach")]
    ck.check(len(ends) == 1 and ends[0]["type"] == "exit" and ends[0].get("status") == 0,
             f"{label}: want one exit record with status 0, got "
             f"{[(r['type'], r.get('status')) for r in ends]}")
    lost = [r for r in records if r["type"] == "lost"]
    ck.check(not lost, f"{label}: lost records: {lost[:3]}")

    L = replay(records, run.depth)
    res = Resolver(records)
    if L.problems:
        ck.fail(f"{label}: {len(L.problems)} inconsistencies in the alloc/free records:\n  " +
                "\n  ".join(L.problems[:12]))

    # Totals and (entry point, size) pairs of the blocks live at the end.
    want_blocks, want_bytes = manifest.total
    live = list(L.live.values())
    got = (len(live), sum(r.get("size", 0) for r in live))
    if not ck.check_eq(got, (want_blocks, want_bytes),
                       f"{label}: (blocks, bytes) live at the end of the raw records vs the "
                       f"program's leak_total"):
        for r in live[:40]:
            print(f"  live: {describe_block(res, r)}")
    names = ({lk["entry"] for lk in manifest.leaks} | set(manifest.failed) |
             {r.get("function") for r in records if r["type"] in ("alloc", "alloc_failed")})
    canon = alias_classes(res, names)
    classes = sorted({c for c in canon.values() if "|" in c})
    if classes:
        print(f"{label}: entry points that are one function here: {', '.join(classes)}")
    want_pairs = collections.Counter()
    for lk in manifest.leaks:
        want_pairs[(canon[lk["entry"]], lk["bytes"])] += lk["blocks"]
    got_pairs = collections.Counter((canon[r.get("function")], r.get("size")) for r in live)
    ck.check_eq(dict(got_pairs), dict(want_pairs),
                f"{label}: (entry point, size) of the live blocks vs the manifest")

    # Counts.
    want_failed = collections.Counter()
    for e, n in manifest.failed.items():
        if n:
            want_failed[canon[e]] += n
    got_failed = collections.Counter({canon[fn]: n for fn, n in L.failed.items()})
    ck.check_eq(dict(got_failed), dict(want_failed), f"{label}: alloc_failed records per function")
    if manifest.events:
        ck.check_eq((L.allocs, L.frees), manifest.events,
                    f"{label}: (alloc, free) records vs the program's own counts")
    reasons = collections.Counter(r.get("reason") for r in L.bad_free)
    if not ck.check_eq(dict(reasons), manifest.bad_free, f"{label}: bad_free records by reason"):
        for r in L.bad_free[:10]:
            print(f"  bad_free {r.get('reason')}: {describe_block(res, r)}")
    if manifest.bad_free:
        for r in L.bad_free:
            ck.check(r.get("function") == "free",
                     f"{label}: bad_free by {r.get('function')!r}, the program called free")
            a = r.get("address")
            if r.get("reason") == "double":
                ck.check(a in L.released,
                         f"{label}: bad_free double of {a:#x}, which was not released before")
                ck.check(any(x["type"] == "alloc" and x.get("address") == a and
                             x.get("size") == 256 * 1024 for x in records),
                         f"{label}: bad_free double of {a:#x} is not the 256 KiB block "
                         f"bad_double_free() released twice")
            elif r.get("reason") == "unknown":
                ck.check(a not in L.ever,
                         f"{label}: bad_free unknown of {a:#x}, which was allocated before")

    # Frames where they belong.
    if run.depth == 0:
        ck.check(not L.frames_on, f"{label}: -b 0 but records with frames: "
                                  f"{dict(L.frames_on)}")
        return
    if run.all_frees:
        ck.check_eq(L.frames_on["free"], L.records_of["free"],
                    f"{label}: -A: free records with frames (of {L.records_of['free']})")
    else:
        ck.check(L.frames_on["free"] == 0,
                 f"{label}: {L.frames_on['free']} free records have frames without -A")
    if run.monitor:
        wrong = [r for r in records if r["type"] == "alloc" and
                 bool(r.get("frames")) != (r.get("size") in run.monitor)]
        ck.check(not wrong, f"{label}: -M {run.monitor}: {len(wrong)} alloc records with "
                            f"frames where they should have none or the other way round, e.g. "
                            f"{[(r.get('size'), len(r.get('frames') or [])) for r in wrong[:5]]}")
    else:
        bare = [r for r in records if r["type"] == "alloc" and not r.get("frames")]
        ck.check(not bare, f"{label}: {len(bare)} alloc records without frames, e.g. "
                           f"{[describe_block(res, r) for r in bare[:3]]}")

    # A failed allocation's first frame is the return address of the failing
    # call in fail_allocs (trace-format.md 3.4).
    if not run.monitor:
        wrong = []
        for r in records:
            if r["type"] != "alloc_failed":
                continue
            frames = r.get("frames") or []
            path, names, _, _ = res.names(frames[0]) if frames else (None, [], None, None)
            target = None
            if path and os.path.realpath(path) == os.path.realpath(binary):
                target = res.call_target(path, res.file_address(frames[0])[1])
            if "fail_allocs" not in names or target is None or \
                    canon.get(target, target) != canon[r.get("function")]:
                wrong.append(f"{describe_block(res, r)}; the instruction before frames[0] "
                             f"calls {target!r}")
        ck.check(not wrong, f"{label}: {len(wrong)} alloc_failed records whose first frame "
                            f"is not the failing call in fail_allocs:\n  " +
                 "\n  ".join(wrong[:8]))

    # Every leaked block traced back to its function.
    for lk in manifest.leaks:
        if run.monitor and lk["bytes"] not in run.monitor:
            continue
        mine = [r for r in live if leak_function_of(res, r, lk)]
        ok = ck.check_eq((len(mine), sorted({r.get("size") for r in mine})),
                         (lk["blocks"], [lk["bytes"]]),
                         f"{label}: live blocks whose backtrace leads to {lk['fn']}"
                         + (f" (through {lk['inner']})" if lk["inner"] else ""))
        if not ok:
            for r in live:
                print(f"  live: {describe_block(res, r)}")
            continue
        for r in mine:
            ck.check(canon[r.get("function")] == canon[lk["entry"]],
                     f"{label}: {lk['fn']}: block recorded as {r.get('function')!r}, "
                     f"the entry point is {lk['entry']}")
            if lk["align"]:
                ck.check_eq(r.get("align"), lk["align"], f"{label}: {lk['fn']}: align field")
        for r in mine:
            ret = r["frames"][1] if lk["inner"] else r["frames"][0]
            fa = res.file_address(ret)
            target = res.call_target(fa[0], fa[1]) if fa else None
            want = lk["inner"] or lk["entry"]
            ck.check(target is not None and canon.get(target, target) == canon.get(want, want),
                     f"{label}: {lk['fn']}: the instruction before the return address "
                     f"{ret:#x} calls {target!r}, not {want}")
        sites = {r["frames"][0] for r in mine}
        ck.check(len(sites) == 1, f"{label}: {lk['fn']}: blocks from {len(sites)} call sites "
                                  f"{[hex(s) for s in sites]} (the program means one)")


def merge_kinds(groups):
    """One group per backtrace: a report with leak kinds splits a backtrace's blocks
    by kind (as memcheck's loss records are); this test counts blocks per backtrace."""
    merged = {}
    for g in groups:
        key = (g.get("mangled"), tuple(f.get("address") for f in g["frames"]))
        if key in merged:
            merged[key]["bytes"] += g["bytes"]
            merged[key]["blocks"] += g["blocks"]
        else:
            merged[key] = dict(g)
    return list(merged.values())


def check_report(ck, run, binary, manifest, records, doc):
    label = run.label
    want_blocks, want_bytes = manifest.total
    ok = ck.check_eq((doc["leaked_blocks"], doc["leaked_bytes"]), (want_blocks, want_bytes),
                     f"{label}: leaks --json (leaked_blocks, leaked_bytes) vs the program's "
                     f"leak_total")
    groups = doc["groups"]
    if not ok:
        for g in groups[:30]:
            print(f"  group: {group_text(g)}")
    ck.check(sum(g["bytes"] for g in groups) == doc["leaked_bytes"] or
             doc.get("groups_total", len(groups)) > len(groups),
             f"{label}: the groups' bytes do not add up to leaked_bytes")
    ck.check([g["bytes"] for g in groups] == sorted((g["bytes"] for g in groups), reverse=True),
             f"{label}: groups are not sorted by bytes: {[g['bytes'] for g in groups]}")
    if not run.full:
        return
    groups = merge_kinds(groups)

    res = Resolver(records)
    live_by_site = collections.defaultdict(list)
    L = replay(records, run.depth)
    for r in L.live.values():
        if r.get("frames"):
            live_by_site[r["frames"][0]].append(r)

    def frame_name(f):
        return h.base_name(f.get("function"))

    def owner(g):
        fr = [f for f in g["frames"] if not f.get("inlined")]
        if fr and str(frame_name(fr[0]) or "").endswith("strdup") and len(fr) > 1:
            return frame_name(fr[1])
        return frame_name(fr[0]) if fr else None

    ck.check_eq(len(groups), len(manifest.leaks),
                f"{label}: number of groups in leaks --json vs leaking functions\n" +
                "\n".join(group_text(g) for g in groups[:30]))
    for g in groups:
        bad = [frame_name(f) for f in g["frames"]
               if FREEING_FUNCS.match(str(frame_name(f) or ""))]
        ck.check(not bad, f"{label}: a group has frames in functions that leak nothing "
                          f"({bad}): {group_text(g)}")

    exe = os.path.realpath(binary)
    cross_checked = 0
    for lk in manifest.leaks:
        mine = [g for g in groups if owner(g) == lk["fn"]]
        if not ck.check(len(mine) == 1, f"{label}: want one group for {lk['fn']}, found "
                                        f"{len(mine)}:\n" + "\n".join(group_text(g) for g in groups)):
            continue
        g = mine[0]
        ck.check_eq((g["blocks"], g["bytes"]), (lk["blocks"], lk["blocks"] * lk["bytes"]),
                    f"{label}: group of {lk['fn']} (blocks, bytes)")
        fr = [f for f in g["frames"] if not f.get("inlined")]
        if lk["inner"]:
            ck.check(str(fr[0].get("module") or "").find("libc") >= 0,
                     f"{label}: {lk['fn']}: first frame {fr[0]} should be in libc's "
                     f"{lk['inner']}")
            fr = fr[1:]
        f0 = fr[0]
        addr = int(f0["address"], 16)
        ck.check(os.path.realpath(str(f0.get("module"))) == exe,
                 f"{label}: {lk['fn']}: frame module {f0.get('module')!r}, want {exe}")
        # The same return address in the raw records of the leaked blocks.
        if lk["inner"]:
            raw = {r["frames"][1] for s in live_by_site.values() for r in s
                   if len(r["frames"]) > 1 and leak_function_of(res, r, lk)}
        else:
            raw = {s for s, rs in live_by_site.items() if leak_function_of(res, rs[0], lk)}
        ck.check(raw == {addr} or raw == {addr + 1},
                 f"{label}: {lk['fn']}: report frame address {f0['address']}, the raw records "
                 f"say {[hex(a) for a in raw]}")
        # addr2line on the executable, at the return address - 1.
        ret = next(iter(raw)) if raw else addr
        fa = res.file_address(ret - 1)
        if not ck.check(fa is not None and os.path.realpath(fa[0]) == exe,
                        f"{label}: {hex(ret)} is not in the executable per the module records"):
            continue
        fn, file, line = res.addr2line(fa[0], [fa[1]])[fa[1]]
        ck.check_eq(h.base_name(fn), lk["fn"], f"{label}: addr2line -f on {hex(fa[1])}")
        ck.check_eq((os.path.basename(str(f0.get("file"))), f0.get("line")),
                    (os.path.basename(file), line),
                    f"{label}: {lk['fn']}: report file:line vs addr2line")
        ck.check(str(f0.get("file", "")).startswith("/"),
                 f"{label}: {lk['fn']}: file {f0.get('file')!r} is not an absolute path")
        cross_checked += 1
    print(f"{label}: {cross_checked} of {len(manifest.leaks)} groups agree with the manifest "
          f"and with addr2line")


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    prog, variant, binary = sys.argv[1:]
    binary = os.path.abspath(binary)
    ck = h.Checker(f"memtrace-{prog}-{variant}")
    modes = [[]] + ([["badfree"]] if prog == "leaks" else [])
    for mode in modes:
        base = h.run([binary] + mode)
        tag = "-".join([prog, variant] + mode)
        if not ck.check(base.status == 0 and not base.timed_out,
                        f"{tag}: untraced run failed\n{base.describe()}"):
            continue
        m = parse_manifest(base.out)
        ok = (m.total is not None and m.leaks and
              (sum(lk["blocks"] for lk in m.leaks),
               sum(lk["blocks"] * lk["bytes"] for lk in m.leaks)) == m.total)
        if not ck.check(ok, f"{tag}: the program's manifest is incomplete or does not add up\n"
                            f"{base.out}"):
            continue
        print(f"{tag}: the program leaks {m.total[0]} blocks, {m.total[1]} bytes, from "
              f"{len(m.leaks)} functions")
        sizes = sorted({lk["bytes"] for lk in m.leaks})
        monitor = [sizes[0], sizes[-1]]
        if mode:
            runs = [Run(tag, mode, full=True)]
        else:
            runs = [Run(tag, full=True),
                    Run(f"{tag} -b 0", extra=["-b", "0"], depth=0),
                    Run(f"{tag} -A -b 4", extra=["-A", "-b", "4"], depth=4, all_frees=True),
                    Run(f"{tag} -M {monitor[0]},{monitor[1]}",
                        extra=["-M", f"{monitor[0]},{monitor[1]}"], monitor=monitor)]
        for run in runs:
            check_run(ck, binary, base.out, base, run)
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Leaks across exec: the heap of an image that exec'd is gone with it, as valgrind
counts it.

usage: test_exec_heap.py LEAK_KINDS_EXE

Exec chains, each run twice:

  valgrind --leak-check=full --show-leak-kinds=all --trace-children=yes
           --run-libc-freeres=no --run-cxx-freeres=no --log-file=DIR/vg.%p CMD
      the log of the launched process (its "Parent PID" is this script) holds
      the summary of its last image: "in use at exit" and the LEAK SUMMARY;
  functracer -q -e memtrace -o DIR CMD   (one trace: the launched process and
      the images it exec'd; the shell's forked children are not followed)

and `functracer-postproc leaks --json` must give valgrind's in-use bytes and
blocks and its four leak kinds exactly; `histogram --json` the same leaked
blocks, and the last snapshot of `massif` the same bytes. The trace must hold the
exec records of the chain, with blocks live at the last exec (a shell always has
some), so the old image's heap is really there to be dropped.

  bash -c 'x=$(echo a); exec /bin/true'                valgrind: nothing in use
  launcher leak_kinds                                  a launcher script that execs
                                                       a program of known leaks
  bash -c 'x=$(echo a); exec launcher leak_kinds'      two execs
  launcher python3 -c ...                              a real interpreter

One block may differ in kind for a reason outside the tracer: glibc's
dl-find_object.c keeps only a pointer aligned up to 64 bytes into its malloc'd
segment, so the block is "possibly lost" when malloc's address is not a multiple
of 64 and "still reachable" when it is, and valgrind's allocator places blocks
elsewhere than glibc's. A block we call possibly lost is counted as valgrind's
still reachable when valgrind has a still-reachable record of the same size from
the same source line and our block's start is not 64-aligned (and the other way
round when ours is 64-aligned and valgrind's is possibly lost); the test says so.

Skips (status 77) when valgrind is not installed.
"""

import glob
import json
import os
import re
import shutil
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import test_leak_kinds as lk  # noqa: E402

VALGRIND_TIMEOUT = 900

LAUNCHER = """#!/bin/sh
# Prepares the environment and becomes the program, as launcher scripts do.
where=$(dirname "$0")
export EXEC_HEAP_LAUNCHER="$where"
exec "$@"
"""


def valgrind_last_image(cmd, logdir, env):
    """(in use at exit (bytes, blocks), kinds) of the launched process's last image."""
    for old in glob.glob(os.path.join(logdir, "vg.*")):
        os.remove(old)
    r = h.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all", "--trace-children=yes",
               "--run-libc-freeres=no", "--run-cxx-freeres=no",
               f"--log-file={os.path.join(logdir, 'vg.%p')}"] + cmd, timeout=VALGRIND_TIMEOUT, env=env)
    # An exec'd image writes its log over its predecessor's (same pid): the file of
    # the launched process is its last image's.
    for path in glob.glob(os.path.join(logdir, "vg.*")):
        with open(path, errors="replace") as f:
            text = f.read()
        if re.search(rf"Parent PID: {os.getpid()}\b", text):
            m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", text)
            if not m:
                return None, None, r, text
            in_use = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
            return in_use, lk.kinds_in(text), r, text
    return None, None, r, ""


def live_at_last_exec(records):
    """Blocks live when the last exec record came (a replay of alloc and free)."""
    live, at_exec, execs = set(), None, 0
    for r in records:
        t = r.get("type")
        if t == "alloc":
            live.add(r.get("address"))
        elif t == "free":
            live.discard(r.get("address"))
        elif t == "exec":
            execs += 1
            at_exec = len(live)
            live = set()
    return execs, at_exec


VG_KIND = {"possible": "possibly lost", "reachable": "still reachable"}


def vg_sites(text, words):
    """{(bytes, blocks): [stack text]} of valgrind's loss records of one kind."""
    sites = {}
    for m in re.finditer(rf"==\d+== ([\d,]+) bytes in ([\d,]+) blocks are {words} in loss record[^\n]*\n"
                         r"((?:==\d+==    (?:at|by) [^\n]*\n)+)", text):
        key = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
        sites.setdefault(key, []).append(m.group(3))
    return sites


def aligned_up_moves(doc, records, vtext):
    """Our groups that valgrind puts on the other side of possibly lost / still
    reachable because its allocator aligned the block differently (see the module's
    doc): {our kind: (bytes, blocks)} to move to the other kind."""
    starts = {r.get("address"): r for r in records if r.get("type") == "alloc"}
    moves = {}
    for ours, theirs in (("possible", "reachable"), ("reachable", "possible")):
        addresses = {r.get("address") for r in records if r.get("type") == "leak" and r.get("kind") == ours}
        sites = vg_sites(vtext, VG_KIND[theirs])
        moved = [0, 0]
        for g in doc["groups"]:
            if g.get("kind") != ours:
                continue
            lines = {f"{os.path.basename(f['file'])}:{f['line']}" for f in g.get("frames", []) if f.get("file")}
            same_site = any(line in stack for line in lines for stack in sites.get((g["bytes"], g["blocks"]), []))
            addrs = [int(a, 16) for a in addresses
                     if a in starts and int(starts[a].get("size", -1)) * g["blocks"] == g["bytes"]]
            # Possibly lost here: the start is not 64-aligned; reachable here: it is.
            explained = addrs and all((a % 64 != 0) == (ours == "possible") for a in addrs)
            if same_site and explained:
                moved[0] += g["bytes"]
                moved[1] += g["blocks"]
        moves[ours] = tuple(moved)
    return moves


def check_chain(ck, label, cmd, execs_wanted, env, tmp):
    tag = re.sub(r"[^A-Za-z0-9]+", "_", label)
    vgdir = os.path.join(tmp, tag + ".vg")
    os.mkdir(vgdir)
    in_use, kinds, vr, vtext = valgrind_last_image(cmd, vgdir, env)
    if not ck.check(vr.status == 0 and in_use is not None and kinds is not None,
                    f"{label}: valgrind gave no summary for the last image\n{vr.describe()}\n{vtext[-2000:]}"):
        return
    out = os.path.join(tmp, tag + ".traces")
    r = h.run([h.functracer(), "-q", "-e", "memtrace", "--uncompressed", "-o", out] + cmd,
              timeout=h.TRACED_TIMEOUT, env=env)
    files = h.trace_files(out)
    if not ck.check(r.status == 0 and len(files) == 1,
                    f"{label}: functracer failed or wrote {len(files)} traces\n{r.describe()}"):
        return
    records = h.dump_records(ck, files)
    if records is None:
        return
    execs, at_exec = live_at_last_exec(records)
    ck.check_eq(execs, execs_wanted, f"{label}: exec records in the trace")
    ck.check(at_exec, f"{label}: no block was live at the last exec ({at_exec}): nothing to drop")
    doc = json.loads(h.run_postproc(["leaks", "--json"] + files).out)
    ours = {k: (doc["kinds"][k]["bytes"], doc["kinds"][k]["blocks"]) for k in lk.KINDS} if "kinds" in doc else None
    print(f"{label}: {at_exec} blocks live at the exec; valgrind in use at exit {in_use}, "
          f"kinds {kinds}\n{' ' * len(label)}  memtrace leaked {(doc['leaked_bytes'], doc['leaked_blocks'])}, "
          f"kinds {ours}")
    ck.check_eq((doc["leaked_bytes"], doc["leaked_blocks"]), in_use, f"{label}: leaked vs valgrind's in use at exit")
    if ours:
        key = {"possible": "possibly_lost", "reachable": "still_reachable"}
        for kind, (nbytes, nblocks) in aligned_up_moves(doc, records, vtext).items():
            if nblocks == 0:
                continue
            other = "reachable" if kind == "possible" else "possible"
            print(f"{label}: {nbytes} bytes in {nblocks} blocks {VG_KIND[kind]} here, {VG_KIND[other]} under "
                  f"valgrind (same site; a pointer aligned up into a block the allocators placed differently)")
            b, n = ours[key[kind]]
            ours[key[kind]] = (b - nbytes, n - nblocks)
            b, n = ours[key[other]]
            ours[key[other]] = (b + nbytes, n + nblocks)
    ck.check_eq(ours, kinds, f"{label}: leak kinds vs valgrind")
    hist = json.loads(h.run_postproc(["histogram", "--json"] + files).out)
    ck.check_eq(hist["leaked_blocks"], in_use[1], f"{label}: histogram leaked_blocks vs valgrind")
    massif = h.run_postproc(["massif"] + files)
    heaps = re.findall(r"^mem_heap_B=(\d+)$", massif.out, re.M)
    ck.check(heaps and int(heaps[-1]) == in_use[0],
             f"{label}: massif's last snapshot holds {heaps[-1:]} bytes, valgrind {in_use[0]}\n{massif.describe()}")


def main():
    leak_kinds = os.path.abspath(sys.argv[1])
    ck = h.Checker("exec-heap")
    h.require_tools("exec-heap", ["valgrind"], "valgrind")
    bash = shutil.which("bash", path="/usr/bin:/bin")
    env = dict(os.environ)
    env["LC_ALL"] = "C.UTF-8"
    for v in ("LANGUAGE", "MALLOC_CHECK_", "MALLOC_PERTURB_"):
        env.pop(v, None)
    with h.TempDir(prefix="ft-exec-heap-") as tmp:
        launcher = os.path.join(tmp, "launcher")
        with open(launcher, "w") as f:
            f.write(LAUNCHER)
        os.chmod(launcher, os.stat(launcher).st_mode | stat.S_IXUSR)
        check_chain(ck, "bash exec true", [bash, "-c", "x=$(echo a); exec /bin/true"], 1, env, tmp)
        check_chain(ck, "launcher leak_kinds", [launcher, leak_kinds], 1, env, tmp)
        check_chain(ck, "bash launcher leak_kinds", [bash, "-c", f"x=$(echo a); exec {launcher} {leak_kinds}"],
                    2, env, tmp)
        python3 = shutil.which("python3", path="/usr/bin:/bin")
        if python3:
            check_chain(ck, "launcher python3",
                        [launcher, os.path.realpath(python3), "-c", "import json; print(json.dumps([1, 2]))"],
                        1, env, tmp)
        else:
            ck.skip("launcher python3", "python3 not installed in /usr/bin")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

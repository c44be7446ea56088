#!/usr/bin/env python3
"""The massif report, read by ms_print, against heapshape's own manifest and valgrind.

usage: test_massif.py HEAPSHAPE...

Each HEAPSHAPE build (tests/progs/heapshape.c) is traced with memtrace; its manifest
states its peak (bytes) and what each of its functions held at the peak. Checked:

  * ms_print (valgrind's own reader of massif.out) parses our file;
  * ms_print's peak snapshot (the one it lists as "(peak)") has the program's stated
    peak as its useful heap, and it is the largest snapshot;
  * the peak's tree, as ms_print prints it, names each of the program's functions
    that held memory at the peak, with the bytes the manifest states;
  * at most 100 snapshots, and some detailed ones besides the peak;
  * valgrind --tool=massif on the same program: its peak useful heap is within 1% of
    ours (massif finds its peak only to within --peak-inaccuracy, 1% by default), and
    its peak tree gives the program's functions the same bytes within 1%;
  * --tid of the thread that runs leaky_thread: a peak of that thread's blocks only;
  * two traces at once are refused with one line.
"""

import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

ROW = re.compile(r"^\s*(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s*$")
NODE = re.compile(r"->\s*[\d.]+% \(([\d,]+)B\) (0x[0-9A-Fa-f]+: .*)$")


def num(s):
    return int(s.replace(",", ""))


def manifest(text):
    m = {"peak": None, "peak_live": {}, "thread": None}
    for line in text.splitlines():
        w = line.split()
        if w and w[0] == "peak":
            m["peak"] = int(w[1])
        elif w and w[0] == "peak_live":
            m["peak_live"][w[1]] = int(w[2])
        elif w and w[0] == "thread":
            m["thread"] = int(w[1])
    return m


def ms_print(ck, path):
    """ms_print's view of a massif.out: {snapshot: useful heap}, the peak's number,
    the detailed numbers, and per snapshot the tree lines (bytes, label)."""
    res = h.run(["ms_print", path])
    if not ck.check(res.status == 0 and "Detailed snapshots:" in res.out,
                    f"ms_print {path} failed\n{res.describe()}"):
        return None
    heap, trees, current = {}, {}, None
    for line in res.out.splitlines():
        row = ROW.match(line)
        if row:
            current = int(row.group(1))
            heap[current] = num(row.group(4))
            continue
        node = NODE.search(line)
        if node and current is not None:
            trees.setdefault(current, []).append((num(node.group(1)), node.group(2)))
    det = re.search(r"Detailed snapshots: \[(.*)\]", res.out).group(1)
    peak = [int(x.split()[0]) for x in det.split(",") if "(peak)" in x]
    detailed = [int(x.split()[0]) for x in det.split(",")]
    return {"heap": heap, "trees": trees, "peak": peak[0] if peak else None, "detailed": detailed}


def function_bytes(tree, functions):
    """The bytes of the first (largest) tree line naming each function."""
    out = {}
    for nbytes, label in tree:
        m = re.match(r"0x[0-9A-Fa-f]+: (\S+) ", label + " ")
        if m and m.group(1) in functions and m.group(1) not in out:
            out[m.group(1)] = nbytes
    return out


def close(a, b, rel):
    return a is not None and b is not None and abs(a - b) <= rel * max(a, b)


def check_build(ck, exe, work):
    name = os.path.basename(exe)
    tr = h.trace([exe], outdir=os.path.join(work, name), plugin="memtrace")
    if not ck.check(tr.result.status == 0 and len(tr.files) == 1,
                    f"tracing {exe}\n{tr.result.describe()}"):
        return
    m = manifest(tr.result.out)
    ck.check(m["peak"] and m["peak_live"], f"{name}: manifest {m}")
    out = os.path.join(work, name + ".massif.out")
    res = h.run_postproc(["massif", "-o", out, tr.outdir])
    if not ck.check(res.status == 0, f"{name}: functracer-postproc massif\n{res.describe()}"):
        return
    ours = ms_print(ck, out)
    if ours is None:
        return
    ck.check(ours["peak"] is not None, f"{name}: ms_print lists a peak snapshot")
    if ours["peak"] is None:
        return
    ck.check_eq(ours["heap"].get(ours["peak"]), m["peak"], f"{name}: peak snapshot's useful heap")
    ck.check_eq(max(ours["heap"].values()), m["peak"], f"{name}: largest snapshot")
    ck.check(len(ours["heap"]) <= 100, f"{name}: {len(ours['heap'])} snapshots, at most 100")
    ck.check(len(ours["detailed"]) > 1, f"{name}: detailed snapshots {ours['detailed']}")
    got = function_bytes(ours["trees"].get(ours["peak"], []), set(m["peak_live"]))
    ck.check_eq(got, m["peak_live"], f"{name}: bytes per function in the peak's tree")

    # valgrind's massif on the same program
    vg_out = os.path.join(work, name + ".valgrind.massif.out")
    vg = h.run(["valgrind", "--tool=massif", f"--massif-out-file={vg_out}", exe], timeout=600)
    if ck.check(vg.status == 0, f"{name}: valgrind --tool=massif\n{vg.describe()}"):
        theirs = ms_print(ck, vg_out)
        if theirs and theirs["peak"] is not None:
            vg_peak = theirs["heap"][theirs["peak"]]
            ck.check(close(vg_peak, m["peak"], 0.01),
                     f"{name}: valgrind's peak {vg_peak} B vs ours {m['peak']} B (1% tolerance)")
            vg_fns = function_bytes(theirs["trees"].get(theirs["peak"], []), set(m["peak_live"]))
            for fn, b in got.items():
                ck.check(close(vg_fns.get(fn), b, 0.01),
                         f"{name}: {fn} at the peak: valgrind {vg_fns.get(fn)} B, ours {b} B")
            ck.note(f"{name}: peak {m['peak']} B; valgrind massif {vg_peak} B")

    # --tid: the thread's own blocks (3 x 72 bytes, leaked)
    if m["thread"]:
        tid_out = os.path.join(work, name + ".tid.massif.out")
        res = h.run_postproc(["massif", "--tid", str(m["thread"]), "-o", tid_out, tr.outdir])
        if ck.check(res.status == 0, f"{name}: massif --tid\n{res.describe()}"):
            t = ms_print(ck, tid_out)
            if t and t["peak"] is not None:
                ck.check_eq(t["heap"][t["peak"]], 3 * 72, f"{name}: massif --tid peak")
                ck.check_eq(function_bytes(t["trees"].get(t["peak"], []), {"leaky_thread"}),
                            {"leaky_thread": 3 * 72}, f"{name}: massif --tid tree")
    return tr.files[0]


def main():
    ck = h.Checker("massif")
    h.require_tools("massif", ["ms_print", "valgrind"], "valgrind")
    with tempfile.TemporaryDirectory(prefix="ft-massif-") as work:
        files = [f for f in (check_build(ck, exe, work) for exe in sys.argv[1:]) if f]
        if len(files) >= 2:
            res = h.run_postproc(["massif"] + files[:2])
            err = res.err.strip()
            ck.check(res.status == 1 and "one trace" in err and "\n" not in err,
                     f"massif with two traces: one line, exit 1\n{res.describe()}")
    ck.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The cost of the leak scan: a process with a large heap (-n blocks of --size bytes,
1 GiB in 1M blocks by default) classified by memtrace's scan at its exit, and by
valgrind's leak check on the same program.

functracer: the scan's own time, as the leak_scan record (elapsed_ns) and --stats
give it (tracing every allocation is not counted: -b 0, and the program's run
before the exit stop is the tracing cost measured elsewhere). valgrind: the run with
--leak-check=full --show-leak-kinds=all minus the run with --leak-check=no (the leak
check alone; both with --run-libc-freeres=no, as memtrace sees the heap at exit).
Both must find the same kinds (bytes and blocks): functracer's from
`functracer-postproc leaks --json` ("kinds"), valgrind's from its LEAK SUMMARY; a
difference is printed and the exit status is 1.

    tests/bench/leak_scan_cost.py                # 1M blocks of 1 KiB
    tests/bench/leak_scan_cost.py -n 100000      # a smaller heap
"""

import argparse
import glob
import json
import os
import re
import sys

import benchlib as bl


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bl.add_common_args(ap, "blocks", n_default=1 << 20, repeats_default=1)
    ap.add_argument("--size", type=int, default=1024, help="bytes per block")
    args = ap.parse_args()
    bl.resolve_tools(args)
    bl.require_functracer(args)
    with bl.scratch_dir(args.keep) as tmp:
        prog = bl.compile_program(args.cc, "bench_leak_scan.c", tmp)
        cmd = [prog, str(args.n), str(args.size)]
        best = None
        for r in range(args.repeats):
            out = os.path.join(tmp, f"tr{r}")
            p, wall = bl.run([args.functracer, "-q", "--stats", "-b", "0", "-e", "memtrace", "--uncompressed",
                               "-o", out] + cmd)
            text = "".join(open(f).read() for f in glob.glob(os.path.join(out, "*.trace")))
            m = re.search(r"leak_scan .*blocks=(\d+) bytes=(\d+) roots=(\d+) elapsed_ns=(\d+)", text)
            if p.returncode != 0 or not m:
                sys.exit(f"functracer run failed:\n{p.stderr.decode()[-2000:]}")
            ns = int(m.group(4))
            kinds = {}
            for k in re.findall(r' leak address=0x[0-9a-f]+ kind="(\w+)"', text):
                kinds[k] = kinds.get(k, 0) + 1
            best = ns if best is None else min(best, ns)
            print(f"functracer: scan of {m.group(1)} blocks ({int(m.group(2)) >> 20} MiB), roots {int(m.group(3)) >> 10} KiB:"
                  f" {ns / 1e9:.3f} s (run {wall:.1f} s); lost blocks by kind {kinds}")
            print("  " + [l for l in p.stderr.decode().splitlines() if "snapshot" in l][0])
            traces = glob.glob(os.path.join(out, "*.trace*"))
        ours = None
        if args.postproc:
            rep, _ = bl.run([args.postproc, "leaks", "--json"] + traces)
            if rep.returncode != 0:
                sys.exit(f"functracer-postproc leaks failed:\n{rep.stderr.decode()[-2000:]}")
            ours = {k: (v["bytes"], v["blocks"]) for k, v in json.loads(rep.stdout)["kinds"].items()}
            print(f"functracer kinds (bytes, blocks): {ours}")
        vg = bl.optional_tool("valgrind")
        if vg:
            _, no = bl.run([vg, "--run-libc-freeres=no", "--leak-check=no"] + cmd)
            p, full = bl.run([vg, "--run-libc-freeres=no", "--leak-check=full", "--show-leak-kinds=all"] + cmd)
            summary = re.findall(r"(definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+) bytes in ([\d,]+) blocks",
                                 p.stderr.decode())
            print(f"valgrind: leak check {full - no:.3f} s (runs {no:.1f} s without, {full:.1f} s with); {summary}")
            print(f"ratio valgrind / functracer scan: {(full - no) / (best / 1e9):.1f}x")
            if ours is not None:
                theirs = {k.replace(" ", "_"): (int(b.replace(",", "")), int(n.replace(",", "")))
                          for k, b, n in summary}
                for k in sorted(set(ours) | set(theirs)):
                    if ours.get(k, (0, 0)) != theirs.get(k, (0, 0)):
                        print(f"DIFFER {k}: functracer {ours.get(k, (0, 0))}, valgrind {theirs.get(k, (0, 0))}")
                        sys.exit(1)
                print("kinds agree with valgrind (bytes and blocks)")


if __name__ == "__main__":
    main()

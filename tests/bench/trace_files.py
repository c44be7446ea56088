#!/usr/bin/env python3
"""Trace size per event and the trace writer's cost per event, plain text against
zstd (doc/performance.md, "Trace files").

    tests/bench/trace_files.py [--build DIR] [-r ROUNDS]

Traces a few ordinary runs with --uncompressed and again compressed (the default),
and for each prints the records, the size of both files per record, and what
trace_writer_bench (BUILD/tests/bench/trace_writer_bench) measures on those records:
the writer's time per record, plain and compressed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

RUNS = [
    ("memtrace: ls -lR /usr/include", ["-e", "memtrace"], ["ls", "-lR", "/usr/include"]),
    ("memtrace: python3 -c pass", ["-e", "memtrace"], ["python3", "-c", "pass"]),
    ("calltrace: sort a 20k-line file", ["-e", "calltrace", "-a", "strcoll,memcpy@libc"], ["sort", "{input}"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(ap, "", n=False, cc=False, repeats_default=5)
    args = ap.parse_args()
    benchlib.resolve_tools(args)
    bench = os.path.join(os.path.dirname(os.path.dirname(args.functracer)), "tests", "bench", "trace_writer_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"trace_writer_bench not built next to {args.functracer}")
    tmp = tempfile.mkdtemp(prefix="ft-trace-files-")
    try:
        data = os.path.join(tmp, "input.txt")
        with open(data, "w") as f:
            for i in range(20000):
                f.write(f"line {(i * 7919) % 20000:05d} {'x' * (i % 37)}\n")
        print(f"{'run':34} {'records':>8} {'plain B/rec':>12} {'zstd B/rec':>11} {'ratio':>6} "
              f"{'plain ns/rec':>13} {'zstd ns/rec':>12}")
        for label, opts, argv in RUNS:
            argv = [a.replace("{input}", data) for a in argv]
            sizes = {}
            for fmt, extra in (("plain", ["--uncompressed"]), ("zstd", [])):
                out = os.path.join(tmp, fmt)
                shutil.rmtree(out, ignore_errors=True)
                subprocess.run([args.functracer, "-q", "-o", out] + extra + opts + argv,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                sizes[fmt] = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
            plain_dir = os.path.join(tmp, "plain")
            main_trace = max((os.path.join(plain_dir, f) for f in os.listdir(plain_dir)), key=os.path.getsize)
            p = subprocess.run([bench, main_trace, str(args.repeats)], capture_output=True, text=True, check=True)
            rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()[1:]}
            all_records = sum(sum(1 for _ in open(os.path.join(plain_dir, f), "rb")) - 1
                              for f in os.listdir(plain_dir))
            print(f"{label:34} {all_records:8d} {sizes['plain'] / all_records:12.1f} "
                  f"{sizes['zstd'] / all_records:11.1f} {sizes['plain'] / max(sizes['zstd'], 1):6.1f} "
                  f"{float(rows['plain'][4]):13.1f} {float(rows['zstd'][4]):12.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

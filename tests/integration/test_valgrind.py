#!/usr/bin/env python3
"""Leak totals of real programs: memtrace against valgrind.

usage: test_valgrind.py

For programs nobody here wrote -- sort (a generated input of a few thousand
lines), ls -l /usr/bin, awk (a word count), sed (a few substitutions) -- the
heap still in use when the program exits is measured twice:

  valgrind --run-libc-freeres=no --leak-check=no PROG ...
      "in use at exit: N bytes in M blocks" (valgrind replaces malloc & co.)
  functracer -q -e memtrace -o DIR PROG ...  +  functracer-postproc leaks --json
      leaked_bytes, leaked_blocks

and the two must be equal exactly: N == leaked_bytes, M == leaked_blocks. The
trace's own alloc/free records must be consistent (no allocation at a live
address, no free record of an address that is not live), and hold no bad_free
when valgrind reports no error. Both
runs get the same environment (LC_ALL=C.UTF-8), the same input, the same
working directory, and write their output to a file; the outputs must be the
same as an untraced run's. When the totals differ the test prints valgrind's
list of the blocks (--leak-check=full --show-leak-kinds=all) next to the leak
report, so the blocks in question can be found.

Skips (status 77) when valgrind is not installed.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402
import test_memtrace as mt  # noqa: E402

VALGRIND_TIMEOUT = 900


def make_inputs(d):
    """Deterministic inputs: numbers.txt (sort), words.txt (awk), edit.txt (sed)."""
    x = 12345
    lines = []
    for i in range(4000):
        x = (x * 1103515245 + 12345) % (1 << 31)
        lines.append(f"{x % 100000:05d} line {i} {'abcdefghij'[x % 10] * (1 + x % 7)}")
    with open(os.path.join(d, "numbers.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    words = ("the quick brown fox jumps over the lazy dog while seven wise owls watch "
             "from an old oak and count every word twice").split()
    with open(os.path.join(d, "words.txt"), "w") as f:
        for i in range(2500):
            x = (x * 1103515245 + 12345) % (1 << 31)
            n = 3 + x % 9
            f.write(" ".join(words[(x >> (3 + k)) % len(words)] + ("" if k % 4 else str(i % 37))
                             for k in range(n)) + "\n")
    with open(os.path.join(d, "edit.txt"), "w") as f:
        for i in range(3000):
            f.write(f"# comment {i}\n" if i % 10 == 0 else
                    f"foo {i} bar foo baz {i * 7} qux foo\n")


AWK_WORDCOUNT = "{ for (i = 1; i <= NF; i++) n[$i]++ } END { for (w in n) print w, n[w] }"

PROGRAMS = [
    ("sort", ["sort", "numbers.txt"]),
    ("ls -l /usr/bin", ["ls", "-l", "/usr/bin"]),
    ("awk word count", ["awk", AWK_WORDCOUNT, "words.txt"]),
    ("sed", ["sed", "-e", "s/foo/FOO/g", "-e", r"s/[0-9]\+/<&>/2", "-e", "/^#/d",
             "-e", "y/abc/xyz/", "edit.txt"]),
]


def run_to_file(cmd, cwd, env, out_path, timeout):
    """Runs cmd with stdout going to out_path; returns (Result, output bytes)."""
    with open(out_path, "wb") as out:
        start = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.PIPE, timeout=timeout,
                               preexec_fn=h._child_setup)
            status, err, timed_out = p.returncode, p.stderr, False
        except subprocess.TimeoutExpired as e:
            status, err, timed_out = -9, e.stderr or b"", True
    status = 128 - status if status < 0 else status
    res = h.Result(cmd, status, b"", err, time.monotonic() - start, timed_out)
    with open(out_path, "rb") as f:
        return res, f.read()


def in_use_at_exit(text):
    m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", text)
    if not m:
        return None
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


def main():
    ck = h.Checker("valgrind")
    h.require_tools("valgrind", ["valgrind"], "valgrind")  # the oracle of this test
    valgrind = shutil.which("valgrind")
    env = dict(os.environ)
    env.pop("LANGUAGE", None)
    env["LC_ALL"] = "C.UTF-8"
    env.pop("MALLOC_CHECK_", None)
    env.pop("MALLOC_PERTURB_", None)

    with h.TempDir(prefix="ft-valgrind-") as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        make_inputs(work)
        for name, cmd in PROGRAMS:
            exe = shutil.which(cmd[0])
            if not exe:
                ck.skip(name, f"{cmd[0]} not installed")
                continue
            cmd = [os.path.realpath(exe)] + cmd[1:]
            tag = name.replace(" ", "_").replace("/", "_")
            print(f"--- {name}: {h.fmt_cmd(cmd)}", flush=True)

            plain, plain_out = run_to_file(cmd, work, env, os.path.join(tmp, tag + ".plain"),
                                           h.UNTRACED_TIMEOUT)
            if not ck.check(plain.status == 0 and plain_out,
                            f"{name}: untraced run failed\n{plain.describe()}"):
                continue

            vlog = os.path.join(tmp, tag + ".valgrind")
            vres, vout = run_to_file([valgrind, "--run-libc-freeres=no", "--leak-check=no",
                                      f"--log-file={vlog}"] + cmd, work, env,
                                     os.path.join(tmp, tag + ".vg-out"), VALGRIND_TIMEOUT)
            with open(vlog, errors="replace") as f:
                vtext = f.read()
            totals = in_use_at_exit(vtext)
            if not ck.check(vres.status == 0 and totals is not None,
                            f"{name}: valgrind run failed or printed no heap summary\n"
                            f"{vres.describe()}\n--- valgrind log ---\n{vtext[-3000:]}"):
                continue
            ck.check(vout == plain_out, f"{name}: output under valgrind differs from the "
                                        f"untraced output")

            traces = os.path.join(tmp, tag + ".traces")
            fres, fout = run_to_file([h.functracer(), "-q", "-e", "memtrace", "--uncompressed", "-o", traces] + cmd,
                                     work, env, os.path.join(tmp, tag + ".ft-out"),
                                     h.TRACED_TIMEOUT)
            files = sorted(glob.glob(os.path.join(traces, "*.trace")))
            if not ck.check(fres.status == 0 and len(files) == 1,
                            f"{name}: functracer run failed or wrote {len(files)} trace files\n"
                            f"{fres.describe()}"):
                continue
            ck.check(fout == plain_out and fres.stderr == plain.stderr,
                     f"{name}: output under functracer differs from the untraced output\n"
                     f"{fres.describe()}")
            rep = h.run_postproc(["leaks", "--json"] + files)
            try:
                doc = json.loads(rep.out)
                got = (int(doc["leaked_bytes"]), int(doc["leaked_blocks"]))
            except (ValueError, KeyError, TypeError) as e:
                ck.fail(f"{name}: leaks --json unusable ({e})\n{rep.describe()}")
                continue
            # The records themselves: every release of a live block, no allocation
            # at a live address; no bad_free when valgrind saw no invalid free.
            try:
                live = mt.replay(mt.parse_trace(files[0]), 1 << 30)
            except (ValueError, UnicodeDecodeError) as e:
                ck.fail(f"{name}: {e}")
                continue
            ck.check(not live.problems, f"{name}: {len(live.problems)} inconsistencies in the "
                                        f"alloc/free records:\n  " +
                     "\n  ".join(live.problems[:10]))
            vg_errors = re.search(r"ERROR SUMMARY: (\d+) errors", vtext)
            if vg_errors and int(vg_errors.group(1)) == 0:
                ck.check(not live.bad_free,
                         f"{name}: valgrind saw no invalid free, the trace has "
                         f"{len(live.bad_free)} bad_free records: "
                         f"{[(r.get('reason'), hex(r.get('address', 0))) for r in live.bad_free[:5]]}")
            print(f"{name}: valgrind in use at exit {totals[0]} bytes in {totals[1]} blocks; "
                  f"memtrace {got[0]} bytes in {got[1]} blocks "
                  f"({len(doc.get('groups', []))} groups)")
            if ck.check_eq(got, totals, f"{name}: (leaked_bytes, leaked_blocks) vs valgrind's "
                                        f"in use at exit"):
                continue
            # Which blocks: valgrind's list next to the leak report.
            full_log = os.path.join(tmp, tag + ".valgrind-full")
            run_to_file([valgrind, "--run-libc-freeres=no", "--leak-check=full",
                         "--show-leak-kinds=all", "--num-callers=12", f"--log-file={full_log}"]
                        + cmd, work, env, os.path.join(tmp, tag + ".vg-out2"), VALGRIND_TIMEOUT)
            with open(full_log, errors="replace") as f:
                vfull = f.read()
            summary = vfull[vfull.find("HEAP SUMMARY"):]
            print(f"valgrind --leak-check=full --show-leak-kinds=all:\n{summary[:30000]}")
            text = h.run_postproc(["leaks"] + files)
            print("functracer-postproc leaks:")
            print(text.out[:20000])
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

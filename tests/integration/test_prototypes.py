#!/usr/bin/env python3
"""Arguments without DWARF: -F prototype files, the built-in libc prototypes, C++ types
from mangled names (doc/functracer.1, PROTOTYPES).

usage: test_prototypes.py PROTOTYPES_EXE PROTOS_FILE SHAPES_EXE

tests/progs/prototypes.c calls protolib (a library built without -g, described by the
prototype file) and the C library, whose debug files are hidden with
FUNCTRACER_DEBUG_DIR; tests/progs/shapes.cc calls a C++ library built without -g. Each
program prints every call it makes as "CALL name(args) = result", with the values it
passed and got: functracer's call log must show the same text. Where ltrace knows the
function too (open, strlen, setlocale), its strings and return values must agree.
A prototype file with a bad line is refused with FILE:LINE and a non-zero status.
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

CALL_LINE = re.compile(r"^\[pid \d+\] (\S.*)$")  # depth 0: no indentation


def has_dwarf(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
    return ".debug_info" in out


def calls_of(stderr):
    return [m.group(1) for m in map(CALL_LINE.match, stderr.splitlines()) if m]


def expected_of(stdout):
    return [l[len("CALL "):] for l in stdout.splitlines() if l.startswith("CALL ")]


def main():
    ck = h.Checker("prototypes")
    prog, protos, shapes = (os.path.abspath(a) for a in sys.argv[1:4])
    ft = h.functracer()
    libdir = os.path.dirname(prog)
    for lib in ("libprotolib.so", "libshapelib.so"):
        ck.check(not has_dwarf(os.path.join(libdir, lib)), f"{lib} was built with DWARF")

    with h.TempDir() as tmp:
        outfile = os.path.join(tmp, "written.txt")
        nodebug = os.path.join(tmp, "no-debug")  # an empty debug directory: libc has no DWARF
        os.mkdir(nodebug)
        env = dict(os.environ, FUNCTRACER_DEBUG_DIR=nodebug)
        args = [prog, "/etc/hostname", outfile]
        plain = h.run(args)
        ck.check(plain.status == 0, f"untraced run failed\n{plain.describe()}")
        expected = expected_of(plain.out)

        # protolib from the prototype file, open and pow from the built-ins; setlocale
        # and strlen alone (the C library calls strlen inside setlocale, snprintf and
        # the compiler's strlen in pl_strlen, which would show those calls open).
        runs = [(["-F", protos, "-a", "pl_*,open@libc,pow@libm"], lambda c: not c.startswith(("setlocale", "strlen"))),
                (["-a", "setlocale"], lambda c: c.startswith("setlocale")),
                (["-a", "strlen@libc"], lambda c: c.startswith("strlen"))]
        seen = []
        for opts, mine in runs:
            res = h.run([ft, "-d"] + opts + args, env=env)
            ck.check(res.status == 0, f"traced run failed\n{res.describe()}")
            ck.check_eq(expected_of(res.out), expected, "the traced program's own report")
            ck.check("parameters of open from DWARF" not in res.err and
                     "parameters of setlocale from DWARF" not in res.err,
                     "libc's DWARF was found although FUNCTRACER_DEBUG_DIR hides it")
            got = calls_of(res.err)
            seen += got
            for line in filter(mine, expected):
                ck.check(line in got, f"the call log lacks {line!r}\n{res.err[-3000:]}")
        for source, fn in (("the built-in prototypes", "setlocale"), ("the built-in prototypes", "open"),
                           ("a prototype file", "pl_scale")):
            ck.check(any(f"parameters of {fn} from {source}" in l for l in [open_log(ft, env, args, protos)]),
                     f"{fn}'s types did not come from {source}")

        # ltrace on the same program: the same strings and results where both know the function.
        if shutil.which("ltrace"):
            lt = h.run(["ltrace", "-e", "open+strlen+setlocale"] + args, env=env)
            for m in re.finditer(r"->(open|strlen|setlocale)\((.*)\)\s*= (\S+)", lt.err):
                name, targs, ret = m.groups()
                first = re.match(r'("[^"]*"|[A-Z_]+)', targs)
                if name == "strlen" and targs != '"copyright"':
                    continue
                want = [c for c in seen if c.startswith(name + "(" + (first.group(1) if first else ""))
                        and c.endswith("= " + ret)]
                ck.check(want, f"ltrace shows {name}({targs}) = {ret}; functracer does not\n{seen}")
        else:
            ck.skip("the comparison with ltrace", "ltrace not installed")

        # The trace file holds the same: the symbolic set in "types", the returned string.
        out = os.path.join(tmp, "traces")
        res = h.run([ft, "-q", "--uncompressed", "-o", out, "-a", "setlocale,open@libc"] + args, env=env)
        ck.check(res.status == 0, f"traced run with -o failed\n{res.describe()}")
        text = "".join(open(os.path.join(out, f)).read() for f in os.listdir(out))
        ck.check('retstr="C.UTF-8"' in text or "retstr=" in text, f"no retstr in the trace\n{text[-2000:]}")
        ck.check("i4=O_flags" in text and "i4=LC_category" in text, f"no symbolic sets in types\n{text[-2000:]}")
        tree = h.run([h.postproc(), "tree"] + [os.path.join(out, f) for f in os.listdir(out)])
        ck.check('open("/etc/hostname", O_RDONLY) = 3' in tree.out, f"tree lacks the flags\n{tree.out}")
        # A char * return shows as the string the trace holds for it (checked against
        # ltrace above), not as an address.
        for m in re.finditer(r'function="setlocale".*?retstr="([^"]*)"', text):
            ck.check(f'= "{m.group(1)}"' in tree.out, f'tree does not show setlocale\'s "{m.group(1)}"\n{tree.out}')

        # A bad prototype file: one line naming FILE:LINE, non-zero status, the program not run.
        bad = os.path.join(tmp, "bad.protos")
        with open(bad, "w") as f:
            f.write("// fine\nint ok(int a);\nint broken(frobnicate x);\n")
        res = h.run([ft, "-F", bad, "-a", "pl_*", prog])
        ck.check(res.status != 0, "a bad prototype file was accepted")
        lines = [l for l in res.err.splitlines() if l.strip()]
        ck.check(len(lines) == 1 and f"{bad}:3:" in lines[0] and "frobnicate" in lines[0],
                 f"the error does not name {bad}:3\n{res.err}")
        ck.check("CALL" not in res.out, "the program ran despite the bad prototype file")

    # C++ without DWARF: parameter types from the mangled names, `this` labelled. The
    # return types are not in the names: the values before " = " are compared.
    res = h.run([ft, "-a", "geo::*@shapelib", shapes])
    ck.check(res.status == 0, f"traced C++ run failed\n{res.describe()}")
    got = calls_of(res.err)
    for line in expected_of(res.out):
        call = line.split(" = ")[0]
        ck.check(any(c == call or c.startswith(call + " = ") for c in got),
                 f"the call log lacks {call!r}\n{res.err}")
    return ck.finish()


def open_log(ft, env, args, protos):
    res = h.run([ft, "-d", "-F", protos, "-a", "pl_scale,open@libc,setlocale"] + args, env=env)
    return res.err


if __name__ == "__main__":
    sys.exit(main())

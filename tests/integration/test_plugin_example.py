#!/usr/bin/env python3
"""The example plugin of doc/plugin-api.md, built out of tree against an installation.

usage: test_plugin_example.py DOC PROGRAM

DOC is doc/plugin-api.md, PROGRAM a build of tests/progs/recursion.c (it prints its
own call counts). FT_BUILD_ROOT (from meson.build) is the build directory.

  * `meson install --destdir` stages the installation in a scratch directory;
  * the C code block of the doc's section 9 (callcount.c) is taken from the doc
    itself, so the doc and this test cannot drift apart, and compiled with
    `cc -shared -fPIC -Wall -Wextra -Werror $(pkg-config --cflags functracer)`, the
    .pc file and header coming from the staged installation only
    (PKG_CONFIG_PATH / PKG_CONFIG_SYSROOT_DIR), also at -O2 as strict C11;
  * the installed functracer runs it (-e ./callcount.so) on the program with and
    without -a, with and without -o: the `count` records (or printed counts) equal
    the program's own counts, and the summary on stderr their sum;
  * plugins functracer must refuse, each with one clear line and exit status 1
    before the program runs: one built for API version 1, one whose table is
    smaller than this version's, a .so without the init function, and one whose
    init returns NULL (its own warning comes first).
"""

import glob
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

RUN_TIMEOUT = 300


# --------------------------------------------------------------------------
# Trace files (doc/trace-format.md, section 2), read without functracer's reader.

_ESCAPES = {"\\": b"\\", '"': b'"', "n": b"\n", "t": b"\t", "r": b"\r"}


def _value(s, i):
    if s[i] == '"':
        out = bytearray()
        i += 1
        while s[i] != '"':
            if s[i] == "\\":
                if s[i + 1] == "x":
                    out.append(int(s[i + 2:i + 4], 16))
                    i += 4
                else:
                    out += _ESCAPES[s[i + 1]]
                    i += 2
            else:
                out += s[i].encode()
                i += 1
        return out.decode("utf-8", "replace"), i + 1
    if s[i] == "[":
        j = s.index("]", i)
        body = s[i + 1:j]
        return ([int(x, 16) for x in body.split(",")] if body else []), j + 1
    j = s.find(" ", i)
    j = len(s) if j < 0 else j
    tok = s[i:j]
    return (int(tok, 16) if tok.startswith("0x") else int(tok)), j


def parse_record(line):
    """{"seq", "tid", "ts", "type", fields...} of one trace line."""
    seq, tid, ts, rtype, *_ = line.split(" ", 4)
    rec = {"seq": int(seq), "tid": int(tid), "ts": int(ts), "type": rtype}
    i = len(seq) + len(tid) + len(ts) + len(rtype) + 4
    while i < len(line):
        eq = line.index("=", i)
        key = line[i:eq]
        rec[key], i = _value(line, eq + 1)
        i += 1  # the space
    return rec


def read_trace(path):
    with open(path, encoding="ascii") as f:
        lines = f.read().split("\n")
    if not lines or not lines[0].startswith("functracer-trace "):
        raise ValueError(f"{path}: not a trace")
    recs = [parse_record(line) for line in lines[1:] if line]
    if lines[0] != "functracer-trace 2":
        return recs
    # Version 2: call stacks are written once (`stack id=N frames=[...]`) and records
    # refer to them (`stack=N`); give each record its frames, as version 1 wrote them.
    stacks, out = {}, []
    for r in recs:
        if r["type"] == "stack":
            stacks[r["id"]] = r["frames"]
            continue
        if "stack" in r:
            ref = r.pop("stack")
            if ref not in stacks:
                raise ValueError(f"{path}: seq {r['seq']} refers to stack {ref}, which no earlier record holds")
            r["frames"] = stacks[ref]
        out.append(r)
    return out


# --------------------------------------------------------------------------


def extract_example(ck, doc_path):
    """The first C code block of section 9 of the doc."""
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    m = re.search(r"^## 9\. .*?^```c\n(.*?)^```$", doc, re.S | re.M)
    if not ck.check(m, f"{doc_path}: no ```c block in section 9"):
        return None
    code = m.group(1)
    ck.check(code.startswith("/* callcount.c"),
             f"the C block of section 9 is not callcount.c: {code[:80]!r}")
    return code


def stage_install(ck, build_root, destdir):
    """meson install into destdir; returns the staged functracer (or None)."""
    meson = shutil.which("meson")
    cmd = [meson, "install", "-C", build_root, "--destdir", destdir, "--quiet"] if meson else \
        [sys.executable, "-m", "mesonbuild.mesonmain", "install", "-C", build_root,
         "--destdir", destdir, "--quiet"]
    res = h.run(cmd, timeout=1200)
    if not ck.check(res.status == 0, f"meson install failed\n{res.describe()}"):
        return None
    exes = glob.glob(os.path.join(destdir, "**", "bin", "functracer"), recursive=True)
    if not ck.check(len(exes) == 1, f"staged installation has functracer at {exes}"):
        return None
    return exes[0]


def pkg_config_env(ck, destdir):
    pcs = glob.glob(os.path.join(destdir, "**", "pkgconfig", "functracer.pc"), recursive=True)
    if not ck.check(len(pcs) == 1, f"staged installation has functracer.pc at {pcs}"):
        return None
    env = dict(os.environ)
    # Only the staged .pc file: PKG_CONFIG_LIBDIR replaces the system search path.
    env["PKG_CONFIG_PATH"] = os.path.dirname(pcs[0])
    env["PKG_CONFIG_LIBDIR"] = os.path.dirname(pcs[0])
    env["PKG_CONFIG_SYSROOT_DIR"] = destdir
    print(f"pkg-config file: {pcs[0]}")
    return env


def pkg_config(ck, env, args):
    res = h.run(["pkg-config"] + args + ["functracer"], env=env)
    if not ck.check(res.status == 0, f"pkg-config {' '.join(args)} failed\n{res.describe()}"):
        return None
    return res.out.strip()


def compile_plugin(ck, src, out, cflags, extra=(), what=None):
    cmd = ["cc", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror"] + list(extra) + \
        cflags.split() + ["-o", out, src]
    res = h.run(cmd)
    return ck.check(res.status == 0, f"{what or src} does not compile\n{res.describe()}")


def program_counts(ck, text, names):
    exp = h.parse_expectations(text)
    counts = {n: exp.calls.get(n) for n in names}
    ck.check(all(v is not None for v in counts.values()),
             f"the program did not print its counts of {names}:\n{text}")
    return counts


def check_count_records(ck, trace_dir, want, what, exact):
    files = sorted(glob.glob(os.path.join(trace_dir, "*.trace")))
    if not ck.check(len(files) == 1, f"{what}: one trace file expected, got {files}"):
        return
    try:
        records = read_trace(files[0])
    except (ValueError, KeyError, IndexError) as e:
        ck.fail(f"{what}: cannot read {files[0]}: {e}")
        return
    counts = {}
    exit_seq = None
    main_module = None
    for r in records:
        if r["type"] == "exit":
            exit_seq = r["seq"]
        if r["type"] == "module" and main_module is None:
            main_module = r  # the executable comes first
        if r["type"] != "count":
            continue
        ck.check(exit_seq is not None and r["seq"] > exit_seq,
                 f"{what}: count record before the exit record: {r}")
        name = r.get("function")
        ck.check(name not in counts, f"{what}: two count records for {name}")
        counts[name] = r.get("calls")
        if name in want and main_module is not None:
            ck.check(main_module["base"] <= r.get("address", -1) < main_module["end"],
                     f"{what}: address of {name} {r.get('address')} outside the executable "
                     f"({main_module.get('path')})")
    got = counts if exact else {n: counts.get(n) for n in want}
    ck.check_eq(got, want, f"{what}: count records")
    return counts


def check_refused(ck, functracer, plugin, program, cwd, expect_lines, what):
    """functracer must stop before running the program, with exactly these stderr
    lines (regexes), exit status 1."""
    res = h.run([functracer, "-e", plugin, program], cwd=cwd, timeout=RUN_TIMEOUT)
    ck.check_eq(res.status, 1, f"{what}: exit status\n{res.describe()}")
    ck.check(res.stdout == b"", f"{what}: the program ran\n{res.describe()}")
    lines = res.err.splitlines()
    ok = len(lines) == len(expect_lines) and all(
        re.fullmatch(pat, line) for pat, line in zip(expect_lines, lines))
    ck.check(ok, f"{what}: stderr should be {len(expect_lines)} line(s) matching "
                 f"{expect_lines}\n{res.describe()}")
    if ok:
        print(f"{what}: refused: {lines[-1]}")


REFUSED_PLUGINS = {
    # name: (source, expected stderr lines as regexes; {path} is the plugin's path)
    "old_version": ("""
#include <functracer/plugin.h>
static ft_plugin plugin = {
    .api_version = FT_PLUGIN_API_MIN_VERSION - 1,
    .size = sizeof(ft_plugin),
    .name = "old_version",
};
const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  (void)h;
  return &plugin;
}
""", [r"functracer: plugin {path} was built for plugin API version 1, "
      r"this functracer speaks versions 2 to 3"]),
    "small_table": ("""
#include <stddef.h>
#include <functracer/plugin.h>
static ft_plugin plugin = {
    .api_version = FT_PLUGIN_API_VERSION,
    .size = offsetof(ft_plugin, syscall),
    .name = "small_table",
};
const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  (void)h;
  return &plugin;
}
""", [r"functracer: plugin {path} has a plugin table of \d+ bytes, API version \d+ needs \d+"]),
    "no_init": ("""
#include <functracer/plugin.h>
const ft_plugin *plugin_init(const ft_host_api *h);
const ft_plugin *plugin_init(const ft_host_api *h) {
  (void)h;
  return 0;
}
""", [r"functracer: plugin {path} has no functracer_plugin_init function"]),
    "null_init": ("""
#include <functracer/plugin.h>
const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  if (h->api_version == FT_HOST_API_VERSION) h->warn("null_init: not today");
  return 0;
}
""", [r"functracer: null_init: not today", r"functracer: plugin {path} refused to start"]),
}


BEFORE_SNAPSHOT = """
#include <stddef.h>
#include <functracer/plugin.h>
static const ft_host_api *host;
static void on_finish(void *data) {
  (void)data;
  host->warn("before_snapshot: loaded");
}
static ft_plugin plugin = {
    .api_version = FT_PLUGIN_API_VERSION,
    .size = offsetof(ft_plugin, snapshot),
    .name = "before_snapshot",
    .finish = on_finish,
    /* beyond .size: must never be called */
    .snapshot = (void (*)(void *, ft_ctx *, const ft_snapshot *))1,
};
const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  host = h;
  return &plugin;
}
"""


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    doc_path, program = sys.argv[1], os.path.abspath(sys.argv[2])
    build_root = h.env_path("FT_BUILD_ROOT")
    ck = h.Checker("plugin-example")
    h.require_tools("plugin-example", ["cc", "pkg-config"], "build-essential, pkg-config")

    with h.TempDir(prefix="ft-plugin-example-") as tmp:
        code = extract_example(ck, doc_path)
        destdir = os.path.join(tmp, "stage")
        functracer = stage_install(ck, build_root, destdir)
        env = pkg_config_env(ck, destdir)
        if code is None or functracer is None or env is None:
            ck.finish()
        print(f"installed functracer: {functracer}")

        # The header must come from the staged installation, not from the tree.
        cflags = pkg_config(ck, env, ["--cflags"])
        if cflags is None:
            ck.finish()
        incdirs = [f[2:] for f in cflags.split() if f.startswith("-I")]
        ck.check(any(d.startswith(destdir) and
                     os.path.isfile(os.path.join(d, "functracer", "plugin.h")) for d in incdirs),
                 f"pkg-config --cflags ({cflags!r}) does not name the staged include directory "
                 f"holding functracer/plugin.h")
        plugindir = pkg_config(ck, env, ["--variable=plugindir"])
        if plugindir is not None:
            staged = plugindir if plugindir.startswith(destdir) else destdir + plugindir
            ck.check(os.path.isfile(os.path.join(staged, "calltrace.so")),
                     f"plugindir {plugindir!r} of functracer.pc does not hold the installed "
                     f"calltrace.so")

        src = os.path.join(tmp, "callcount.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(code)
        if not compile_plugin(ck, src, os.path.join(tmp, "callcount.so"), cflags,
                              what="the example of doc/plugin-api.md"):
            ck.finish()
        compile_plugin(ck, src, os.path.join(tmp, "callcount-O2.so"), cflags,
                       extra=["-O2", "-std=c11", "-pedantic-errors"],
                       what="the example of doc/plugin-api.md (-O2 -std=c11 -pedantic-errors)")
        print("callcount.c from the doc compiles with -Wall -Wextra -Werror")

        names = ["fib", "rec_hidden_helper", "rec_deep"]
        untraced = h.run([program])
        ck.check(untraced.status == 0, f"untraced run failed\n{untraced.describe()}")
        want = program_counts(ck, untraced.out, names)

        # With -a: exactly the program's counts, nothing else.
        tr = os.path.join(tmp, "tr-a")
        res = h.run([functracer, "-e", "./callcount.so", "-a", ",".join(names), "--uncompressed", "-o", tr, program],
                    cwd=tmp, timeout=RUN_TIMEOUT)
        if ck.check(res.status == 0, f"functracer -e ./callcount.so -a failed\n{res.describe()}"):
            ck.check_eq(res.stdout, untraced.stdout, "traced stdout")
            check_count_records(ck, tr, want, "-a " + ",".join(names), exact=True)
            m = re.search(r"^functracer: callcount: (\d+) calls counted$", res.err, re.M)
            ck.check(m and int(m.group(1)) == sum(want.values()),
                     f"summary line should say {sum(want.values())} calls\n{res.describe()}")
            print(f"-a: count records = the program's counts {want}")

        # Without -a: every function of the executable; main once.
        tr = os.path.join(tmp, "tr-all")
        res = h.run([functracer, "-e", "./callcount.so", "--uncompressed", "-o", tr, program], cwd=tmp,
                    timeout=RUN_TIMEOUT)
        if ck.check(res.status == 0, f"functracer -e ./callcount.so failed\n{res.describe()}"):
            counts = check_count_records(ck, tr, dict(want, main=1), "without -a", exact=False)
            if counts:
                print(f"without -a: {len(counts)} functions counted, "
                      f"{', '.join(sorted(counts))}")

        # Without -o: the counts are printed, one line per function.
        res = h.run([functracer, "-e", "./callcount.so", "-a", ",".join(names), program], cwd=tmp,
                    timeout=RUN_TIMEOUT)
        if ck.check(res.status == 0, f"functracer -e ./callcount.so (no -o) failed\n{res.describe()}"):
            printed = {m.group(1): int(m.group(2)) for m in
                       re.finditer(r"^\[pid \d+\] (\S+) called (\d+) times$", res.err, re.M)}
            ck.check_eq(printed, want, f"counts printed without -o\n{res.describe()}")

        # Plugins to refuse.
        for name, (source, expect) in REFUSED_PLUGINS.items():
            c = os.path.join(tmp, name + ".c")
            so = os.path.join(tmp, name + ".so")
            with open(c, "w", encoding="utf-8") as f:
                f.write(source)
            if not compile_plugin(ck, c, so, cflags):
                continue
            check_refused(ck, functracer, "./" + name + ".so", program, tmp,
                          [p.replace("{path}", re.escape("./" + name + ".so")) for p in expect],
                          name)

        # A version-2 table made before `snapshot` was added at its end still loads.
        c = os.path.join(tmp, "before_snapshot.c")
        so = os.path.join(tmp, "before_snapshot.so")
        with open(c, "w", encoding="utf-8") as f:
            f.write(BEFORE_SNAPSHOT)
        if compile_plugin(ck, c, so, cflags):
            res = h.run([functracer, "-e", "./before_snapshot.so", program], cwd=tmp, timeout=RUN_TIMEOUT)
            ck.check(res.status == 0 and "before_snapshot: loaded" in res.err,
                     f"a table of offsetof(ft_plugin, snapshot) bytes is refused\n{res.describe()}")

    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

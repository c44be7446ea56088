#!/usr/bin/env python3
"""Leak kinds (definitely, indirectly, possibly lost, still reachable): memtrace's scan
against valgrind memcheck, on a program of known leaks and on real programs.

usage: test_leak_kinds.py LEAK_KINDS_EXE... 

  * leak_kinds (tests/progs/leak_kinds.c) states its own definitely and indirectly
    lost blocks, and the possibly lost ones it makes (the C library may add one: a
    thread's DTV, pointed to from inside). Under functracer -e memtrace, leaks --json
    must give those, and its "kinds" must equal valgrind --leak-check=full
    --show-leak-kinds=all --run-libc-freeres=no, bytes and blocks of every kind.
    The text report lists the lost kinds first, sums the still reachable ones at the
    end.
  * --kinds=indirect, definite,possible, all and none select, a word that is no kind
    is refused; --error-exitcode=7 exits 7 with lost blocks, 0 when LeakSanitizer-
    style suppressions cover every lost group, 7 again when one group is left out.
  * The same comparison with valgrind for sort, ls -l, sed, find, python3 -c and
    git status (in a repository made for the test, with a changed and a new file),
    each traced with as many environment variables as valgrind gives it (git copies
    its environment into an array on the heap).
  * A trace without a leak scan (tests/unit/data/leaks-basic.trace) reports as it
    always did: no "kinds", no "kind".
  * A uprobe of bpftrace on calloc while memtrace runs: functracer says once that
    calloc could not be traced and why, the trace has an `untraced` record for it,
    and the leak report warns that its totals are incomplete (skipped without
    bpftrace or root). The uprobe is on a private copy of the C library, loaded
    through LD_LIBRARY_PATH, so that other programs running meanwhile keep calloc.
  * Attach: leak_kinds loop N is attached to while it leaks; at the detach its blocks
    are classified (the list and cycle lost, with backtraces naming the functions
    that made them), and the program runs on to its end unharmed.

Skips (status 77) when valgrind is not installed.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

VALGRIND_TIMEOUT = 900
KINDS = ["definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable"]
VG_WORDS = {"definitely lost": "definitely_lost", "indirectly lost": "indirectly_lost",
            "possibly lost": "possibly_lost", "still reachable": "still_reachable"}


def kinds_in(text):
    """The LEAK SUMMARY of a valgrind log as {kind: (bytes, blocks)}, or None."""
    kinds = {}
    for m in re.finditer(r"(definitely lost|indirectly lost|possibly lost|still reachable): "
                         r"([\d,]+) bytes in ([\d,]+) blocks", text):
        kinds[VG_WORDS[m.group(1)]] = (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")))
    if "All heap blocks were freed" in text:
        kinds = {k: (0, 0) for k in KINDS}
    for k in KINDS:
        kinds.setdefault(k, (0, 0))  # memcheck leaves out a kind it has nothing of
    return kinds if "HEAP SUMMARY" in text else None


def valgrind_kinds(cmd, cwd, env):
    """valgrind's LEAK SUMMARY as {kind: (bytes, blocks)}, or None."""
    r = h.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all", "--run-libc-freeres=no",
               "--run-cxx-freeres=no", "--log-fd=2"] + cmd, timeout=VALGRIND_TIMEOUT, cwd=cwd, env=env)
    return kinds_in(r.err), r


def our_kinds(ck, label, cmd, cwd, env, tmp):
    """Runs cmd under functracer -e memtrace; (kinds dict, leaks --json doc, files)."""
    out = os.path.join(tmp, label.replace(" ", "_").replace("/", "_"))
    r = h.run([h.functracer(), "-q", "--stats", "-e", "memtrace", "--uncompressed", "-o", out] + cmd, timeout=h.TRACED_TIMEOUT,
              cwd=cwd, env=env)
    files = h.trace_files(out)
    if not ck.check(len(files) == 1, f"{label}: functracer wrote {len(files)} traces\n{r.describe()}"):
        return None, None, files, r
    ck.check("memory snapshot" in r.err, f"{label}: --stats does not say how long the scan took\n{r.err}")
    rep = h.run_postproc(["leaks", "--json"] + files)
    try:
        doc = json.loads(rep.out)
        kinds = {k: (doc["kinds"][k]["bytes"], doc["kinds"][k]["blocks"]) for k in KINDS}
    except (ValueError, KeyError, TypeError) as e:
        ck.fail(f"{label}: leaks --json has no usable kinds ({e})\n{rep.describe()}")
        return None, None, files, r
    return kinds, doc, files, r


def expectation(text):
    m = re.search(r"expect definite=(\d+)/(\d+) indirect=(\d+)/(\d+) possible=(\d+)/(\d+)", text)
    if not m:
        return None
    v = [int(x) for x in m.groups()]
    return {"definitely_lost": (v[0], v[1]), "indirectly_lost": (v[2], v[3]), "possibly_lost": (v[4], v[5])}


def frames_name(group, names):
    fns = {f.get("function") for f in group.get("frames", [])}
    return any(n in fns for n in names)


def check_program(ck, exe, env, tmp):
    label = os.path.basename(exe)
    plain = h.run([exe], env=env)
    want = expectation(plain.out)
    if not ck.check(plain.status == 0 and want, f"{label}: untraced run\n{plain.describe()}"):
        return
    kinds, doc, files, traced = our_kinds(ck, label, [exe], None, env, tmp)
    if kinds is None:
        return
    ck.check_eq(traced.out, plain.out, f"{label}: output under functracer")
    ck.check_eq(kinds["definitely_lost"], want["definitely_lost"], f"{label}: definitely lost vs the program")
    ck.check_eq(kinds["indirectly_lost"], want["indirectly_lost"], f"{label}: indirectly lost vs the program")
    ck.check(kinds["possibly_lost"][0] >= want["possibly_lost"][0] and
             kinds["possibly_lost"][1] >= want["possibly_lost"][1],
             f"{label}: possibly lost {kinds['possibly_lost']}, the program made {want['possibly_lost']}")
    in_use = sum(b for b, _ in kinds.values()), sum(n for _, n in kinds.values())
    ck.check_eq((doc["leaked_bytes"], doc["leaked_blocks"]), in_use, f"{label}: leaked_* is every kind")
    vg, vr = valgrind_kinds([exe], None, env)
    if ck.check(vg is not None, f"{label}: valgrind printed no heap summary\n{vr.describe()}"):
        ck.check_eq(kinds, vg, f"{label}: kinds vs valgrind")
    # Every group has its kind; the lost ones carry the backtraces of their makers.
    ck.check(all(g.get("kind") in ("definite", "indirect", "possible", "reachable") for g in doc["groups"]),
             f"{label}: a group without a kind: {[g.get('kind') for g in doc['groups']]}")
    for kind, names in [("definite", ["leak_plain", "leak_list", "leak_cycle", "leak_through_freed"]),
                        ("indirect", ["leak_list", "leak_cycle"]), ("possible", ["possibly_lost"])]:
        ck.check(any(g["kind"] == kind and frames_name(g, names) for g in doc["groups"]),
                 f"{label}: no {kind} group allocated in {names}")
    # Text: lost kinds first, still reachable summed at the end.
    text = h.run_postproc(["leaks"] + files).out
    heads = re.findall(r"^\d+ bytes? in \d+ blocks? (definitely lost|indirectly lost|possibly lost|still reachable)",
                       text, re.M)
    ck.check(heads and "still reachable" not in heads and heads == sorted(
        heads, key=["definitely lost", "indirectly lost", "possibly lost"].index),
             f"{label}: text groups not lost-kinds-first: {heads}")
    ck.check(re.search(r"^still reachable: [\d,]+ bytes? in \d+ blocks?", text, re.M),
             f"{label}: no still-reachable sum at the end of the text\n{text[-800:]}")
    only = json.loads(h.run_postproc(["leaks", "--json", "--kinds=indirect"] + files).out)
    ck.check(only["groups"] and all(g["kind"] == "indirect" for g in only["groups"]),
             f"{label}: --kinds=indirect lists {[g['kind'] for g in only['groups']]}")
    both = json.loads(h.run_postproc(["leaks", "--json", "--kinds=definite,possible"] + files).out)
    ck.check_eq(sorted({g["kind"] for g in both["groups"]}), ["definite", "possible"],
                f"{label}: --kinds=definite,possible")
    ck.check_eq(both["kinds"], doc["kinds"], f"{label}: --kinds changes the kinds' totals")
    none = h.run_postproc(["leaks", "--kinds=none"] + files).out
    ck.check(not re.search(r"^\d+ bytes? in \d+ blocks? \w+ (lost|reachable)", none, re.M),
             f"{label}: --kinds=none lists groups\n{none[-800:]}")
    everything = json.loads(h.run_postproc(["leaks", "--json", "--kinds=all"] + files).out)
    ck.check_eq(len(everything["groups"]), len(doc["groups"]), f"{label}: --kinds=all against no --kinds")
    check_error_exitcode(ck, label, doc, files, tmp)
    bad = h.run_postproc(["leaks", "--kinds=lost"] + files)
    ck.check(bad.status == 2 and "lost" in bad.err, f"{label}: --kinds=lost is refused\n{bad.describe()}")


def check_error_exitcode(ck, label, doc, files, tmp):
    """--error-exitcode=N exits N while a lost block is left that no suppression
    covers, 0 once LeakSanitizer-style suppressions cover every lost group."""
    status = h.run_postproc(["leaks", "--error-exitcode=7"] + files).status
    ck.check_eq(status, 7, f"{label}: leaks --error-exitcode=7 with lost blocks")
    lost = [g for g in doc["groups"] if g["kind"] != "reachable"]
    # One pattern per lost group: the innermost named function of its backtrace (the
    # allocator's caller).
    patterns = set()
    for g in lost:
        caller = next((f.get("function") for f in g["frames"] if f.get("function")), None)
        if not ck.check(caller, f"{label}: a lost group without a named caller: {g}"):
            return
        patterns.add("^" + caller + "$")
    lost_blocks = sum(g["blocks"] for g in lost)
    supp = os.path.join(tmp, label + ".supp")
    with open(supp, "w") as f:
        f.write("# every lost group\n" + "".join(f"leak:{p}\n" for p in sorted(patterns)))
    res = h.run_postproc(["leaks", "--error-exitcode=7", "--suppressions", supp] + files)
    ck.check_eq(res.status, 0, f"{label}: --error-exitcode=7 with every lost group suppressed\n{res.describe()}")
    sdoc = json.loads(h.run_postproc(["leaks", "--json", "--suppressions", supp] + files).out)
    ck.check(sdoc["suppressed_blocks"] >= lost_blocks and
             all(sdoc["kinds"][k]["blocks"] == 0 for k in KINDS[:3]),
             f"{label}: suppressed {sdoc['suppressed_blocks']} blocks, {lost_blocks} lost; kinds {sdoc['kinds']}")
    # One lost group left out of the suppressions: the status is N again.
    kept = "^leak_cycle$"
    with open(supp, "w") as f:
        f.write("".join(f"leak:{p}\n" for p in sorted(patterns - {kept})))
    res = h.run_postproc(["leaks", "--error-exitcode=7", "--suppressions", supp] + files)
    ck.check(kept in patterns and res.status == 7,
             f"{label}: --error-exitcode=7 with leak_cycle's blocks not suppressed ({sorted(patterns)})\n"
             f"{res.describe()}")


def git_work_tree(work, env):
    """A git repository in work/repo with a commit, a changed and an untracked file;
    the environment keeps git from reading any configuration but its own."""
    repo = os.path.join(work, "repo")
    os.mkdir(repo)
    genv = dict(env, HOME=work, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
                GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org", GIT_OPTIONAL_LOCKS="0")
    for i in range(40):
        with open(os.path.join(repo, f"f{i}.txt"), "w") as f:
            f.write(f"file {i}\n" * (i + 1))
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-q", "-m", "files"]):
        r = h.run(cmd, cwd=repo, env=genv)
        if r.status != 0:
            return None, None
    with open(os.path.join(repo, "f3.txt"), "a") as f:
        f.write("changed\n")
    with open(os.path.join(repo, "new.txt"), "w") as f:
        f.write("new\n")
    return repo, genv


def valgrind_client_env(env):
    """The environment valgrind gives the programs it runs (it adds LD_PRELOAD,
    GLIBCXX_FORCE_NEW and a few more), with LD_PRELOAD emptied: the programs traced
    get as many variables, so that a block sized by them (git's setenv reallocates
    the environ array) is as large in both runs. None if valgrind cannot run env."""
    r = h.run(["valgrind", "-q", "--log-fd=2", "/usr/bin/env", "-0"], env=env)
    if r.status != 0:
        return None
    client = dict(item.split("=", 1) for item in r.out.split("\0") if "=" in item)
    if "LD_PRELOAD" in client:
        client["LD_PRELOAD"] = ""
    return client


def check_real_programs(ck, env, tmp):
    work = os.path.join(tmp, "work")
    os.mkdir(work)
    with open(os.path.join(work, "numbers.txt"), "w") as f:
        x = 12345
        for i in range(3000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            f.write(f"{x % 100000:05d} line {i}\n")
    with open(os.path.join(work, "edit.txt"), "w") as f:
        for i in range(500):
            f.write(f"# comment {i}\n" if i % 10 == 0 else f"foo {i} bar foo {i * 7}\n")
    programs = [("sort", ["sort", "numbers.txt"]), ("ls -l", ["ls", "-l", "/usr/bin"]),
                ("sed", ["sed", "-e", "s/foo/FOO/g", "-e", "/^#/d", "edit.txt"]),
                ("find", ["find", "/usr/share/doc", "-name", "*.gz"]),
                ("python3 -c", ["python3", "-c", "import json; print(json.dumps({'a': [1, 2, 3]}))"]),
                ("git status", ["git", "status"])]
    repo, genv = git_work_tree(work, env) if shutil.which("git") else (None, None)
    for name, cmd in programs:
        if name == "git status" and not repo:
            ck.skip(name, "git is not installed or could not make a repository")
            continue
        cwd, penv = (repo, genv) if name == "git status" else (work, env)
        traced_env = valgrind_client_env(penv)
        if not ck.check(traced_env is not None, f"{name}: valgrind could not run env"):
            continue
        exe = shutil.which(cmd[0], path="/usr/bin:/bin")
        if not exe:
            ck.skip(name, f"{cmd[0]} not installed")
            continue
        cmd = [os.path.realpath(exe)] + cmd[1:]
        kinds, _, _, r = our_kinds(ck, name, cmd, cwd, traced_env, tmp)
        if kinds is None:
            continue
        vg, vr = valgrind_kinds(cmd, cwd, penv)
        if not ck.check(vg is not None, f"{name}: valgrind printed no heap summary\n{vr.describe()}"):
            continue
        print(f"{name}: ours {kinds}\n{' ' * len(name)}  valgrind {vg}")
        ck.check_eq(kinds, vg, f"{name}: kinds vs valgrind")


def check_old_trace(ck):
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "data", "leaks-basic.trace")
    doc = json.loads(h.run_postproc(["leaks", "--json", data]).out)
    ck.check("kinds" not in doc and all("kind" not in g for g in doc["groups"]),
             f"a trace without a leak scan got kinds: {sorted(doc)}")


def check_attach(ck, exe, tmp):
    label = "attach " + os.path.basename(exe)
    target = subprocess.Popen([exe, "loop", "4000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, preexec_fn=h._child_setup)
    try:
        first = target.stdout.readline().decode()
        ready = target.stdout.readline().decode()
        want = expectation(first)
        if not ck.check(want and ready.strip() == "ready", f"{label}: target said {first!r} {ready!r}"):
            return
        out = os.path.join(tmp, "attach")
        cmd = [h.functracer(), "-q", "-e", "memtrace", "--uncompressed", "-o", out, "-p", str(target.pid)]
        tracer = h.attach_window(ck, label, cmd, out, target, 0.2)
        if tracer is None:
            return
        leaked = target.stdout.readline().decode()
        if not ck.check(leaked.strip() == "leaked", f"{label}: target said {leaked!r}"):
            tracer.kill()
            return
        if not h.detach(ck, label, tracer, signal.SIGINT, cmd):
            return
        target.stdin.write(b"go on\n")
        target.stdin.flush()
        rest, err = target.communicate(timeout=60)
        ck.check(target.returncode == 0 and rest.decode().strip() == "done",
                 f"{label}: after the detach the target ended {target.returncode}: {rest!r} {err!r}")
        files = h.trace_files(out)
        doc = json.loads(h.run_postproc(["leaks", "--json"] + files).out)
        kinds = {k: (doc["kinds"][k]["bytes"], doc["kinds"][k]["blocks"]) for k in KINDS} if "kinds" in doc else None
        print(f"{label}: {kinds}")
        if not ck.check(kinds is not None, f"{label}: no kinds after the detach: {sorted(doc)}"):
            return
        # The block whose only pointer lay in a released block may look reachable
        # after an attach (the heap outside known blocks is a root then).
        ck.check(kinds["definitely_lost"] in (want["definitely_lost"], (612, 3)),
                 f"{label}: definitely lost {kinds['definitely_lost']}, want {want['definitely_lost']}")
        ck.check_eq(kinds["indirectly_lost"], want["indirectly_lost"], f"{label}: indirectly lost")
        ck.check(kinds["possibly_lost"][1] >= want["possibly_lost"][1], f"{label}: possibly lost {kinds}")
        for kind, names in [("definite", ["leak_plain", "leak_list", "leak_cycle"]),
                            ("indirect", ["leak_list", "leak_cycle"])]:
            ck.check(any(g["kind"] == kind and frames_name(g, names) for g in doc["groups"]),
                     f"{label}: no {kind} group allocated in {names}")
    finally:
        if target.poll() is None:
            target.kill()
            target.communicate()


def check_uprobe(ck, exe, tmp):
    """A uprobe (bpftrace) on calloc while memtrace runs: functracer names calloc and
    the likely cause, the trace has an untraced record, the leak report warns. The
    uprobe is on a private copy of the C library that the program alone loads."""
    with h.libc_uprobe(ck, "uprobe", "calloc", tmp) as libdir:
        if not libdir:
            return
        out = os.path.join(tmp, "uprobe")
        env = dict(os.environ, LD_LIBRARY_PATH=libdir)
        r = h.run([h.functracer(), "-e", "memtrace", "--uncompressed", "-o", out, exe], timeout=h.TRACED_TIMEOUT,
                  env=env)
        ck.check(r.status == 0, f"uprobe: functracer run\n{r.describe()}")
        ck.check(re.search(r"cannot trace calloc: .*uprobe of bpftrace or perf", r.err),
                 f"uprobe: functracer does not say calloc is missing because of a uprobe\n{r.err}")
        ck.check(len(re.findall(r"cannot trace calloc", r.err)) == 1, f"uprobe: said more than once\n{r.err}")
        files = h.trace_files(out)
        text = "".join(open(f, errors="replace").read() for f in files)
        ck.check(re.search(r' untraced function="calloc" address=0x[0-9a-f]+ reason="int3', text),
                 "uprobe: no untraced record for calloc in the trace")
        rep = h.run_postproc(["leaks"] + files)
        ck.check(re.search(r"calloc was not traced .*the totals are incomplete", rep.err),
                 f"uprobe: the leak report does not warn\n{rep.describe()}")


def main():
    ck = h.Checker("leak-kinds")
    h.require_tools("leak-kinds", ["valgrind"], "valgrind")
    env = dict(os.environ)
    env["LC_ALL"] = "C.UTF-8"
    for k in ("LANGUAGE", "MALLOC_CHECK_", "MALLOC_PERTURB_", "PYTHONMALLOC"):
        env.pop(k, None)
    with h.TempDir(prefix="ft-leak-kinds-") as tmp:
        check_old_trace(ck)
        for exe in sys.argv[1:]:
            check_program(ck, exe, env, tmp)
        check_attach(ck, sys.argv[1], tmp)
        check_uprobe(ck, sys.argv[1], tmp)
        check_real_programs(ck, env, tmp)
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A Go program under functracer (tests/progs/go/goprog.go, built here with `go build`
into a temporary directory; SKIP when go is not installed).

usage: test_go.py GOPROG.go

`functracer -e calltrace -a 'main.*'` on it: its output and exit status equal the
untraced run's; the calls per function equal the program's own counts (it prints
them), Go names as Go prints them (main.(*Counter).Add); every goroutine's calls
(records with TID -N, the thread in `thread`) closed by one return or unwound
record, in LIFO order, goroutines moving between threads in the middle of calls;
arguments and results the values the program passed and returned (Go's register
ABI, typed from its DWARF: integers, a pointer receiver, a slice, a string, a bool); the frames the recovered
panic went through unwound with reason "panic", as many as the program says; the
only other frames left without returning are those open when the program exited
(os.Exit from main while the last goroutine finishes). Go's returns are caught at
the functions' exits (the stack is never written: the runtime copies the goroutine
stacks the deep recursion grows, and a hijacked return address would end it with
"unknown caller pc"), and `safe`'s named result set by its deferred recover is its
return value.
"""

import collections
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

EXIT_STATUS = 3


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    h.require_tools("go", ["go"], "golang-go")
    ck = h.Checker("go")
    with h.TempDir() as tmp:
        exe = build(ck, src, tmp)
        if not exe:
            return ck.finish()
        untraced = h.run([exe])
        if not ck.check(untraced.status == EXIT_STATUS,
                        f"untraced run should exit {EXIT_STATUS}\n{untraced.describe()}"):
            return ck.finish()
        exp = h.parse_expectations(untraced.out)
        outdir = os.path.join(tmp, "traces")
        tr = h.trace([exe], "main.*", outdir, timeout=600)
        res = tr.result
        same = (res.status == untraced.status and res.stdout == untraced.stdout
                and h.without_gaps(res.stderr) == untraced.stderr)
        if not ck.check(same and not res.timed_out,
                        f"traced run differs from the untraced one\nuntraced:\n"
                        f"{untraced.describe(1500)}\ntraced:\n{res.describe(1500)}"):
            return ck.finish()
        files = h.trace_files(outdir)
        if not ck.check(len(files) == 1, f"want one trace file, got {files}"):
            return ck.finish()
        records = h.dump_records(ck, files)
        if records is None:
            return ck.finish()
        check_memtrace(ck, exe)

    a = h.analyze(records)
    h.report_problems(ck, a, "go")
    calls = collections.Counter(h.record_function(r) for r in records if r.get("type") == "call")
    for name, want in exp.calls.items():
        ck.check_eq(calls[name], want, f"calls of {name}")
    unwound = collections.defaultdict(collections.Counter)
    for r in records:
        if r.get("type") == "unwound":
            unwound[r.get("reason")][h.record_function(r)] += 1
    for reason, per in exp.unwound.items():
        for name, want in per.items():
            ck.check_eq(unwound[reason][name], want, f"{name} unwound ({reason})")
    at_exit = {"main.main", "main.worker"}
    for reason, per in unwound.items():
        if reason in exp.unwound:
            continue
        odd = {n: c for n, c in per.items()
               if reason != "exit" or (n not in at_exit and not n.startswith("main.main.func"))}
        ck.check(not odd, f"frames unwound ({reason}) that the program does not explain: {odd}")
    moved = check_goroutines(ck, records)
    threads = {r.get("tid") for r in records if r.get("type") == "call"}
    # safe(n) returns -n: its deferred function recovered the panic and set its result.
    safe = [(c, r) for c, r in a.pairs if h.record_function(c) == "main.safe"]
    values = collections.Counter(h._as_int(r.get("retval")) for c, r in safe if r.get("type") == "return")
    want = collections.Counter({(-(i + 3)) & 0xFFFFFFFFFFFFFFFF: 4 for i in range(5)})
    ck.check_eq(dict(values), dict(want), "main.safe's return values (its named result)")
    check_arguments(ck, a)
    print(f"go: {sum(calls.values())} calls on {len(threads)} goroutines, {moved}, "
          f"{sum(unwound['panic'].values())} frames unwound by the recovered panics")
    return ck.finish()


def check_goroutines(ck, records):
    """Go frames are their goroutines': each record's TID is -N for goroutine N, the
    thread it ran on in `thread` (analyze() checks the nesting per TID, that is per
    goroutine). The workers' goroutines ran on several threads, and hop's sleep in the
    middle of a traced call let goroutines move to other threads or share one while a
    call was open; say how often."""
    events = [r for r in records if r.get("type") in ("call", "return", "unwound")]
    not_goroutine = [r for r in events if not (isinstance(r.get("tid"), int) and r["tid"] < 0
                                               and isinstance(r.get("thread"), int) and r["thread"] > 0)]
    ck.check(not not_goroutine, f"Go frames not kept as a goroutine's (TID -N, thread=T): {not_goroutine[:3]}")
    goroutines = {r["tid"] for r in events}
    ck.check(len(goroutines) >= 5, f"calls on {len(goroutines)} goroutines, want main's and the 4 workers'")
    threads = {r["thread"] for r in events if isinstance(r.get("thread"), int)}
    ck.check(len(threads) >= 2, f"goroutines ran on {len(threads)} threads, want several")
    # Moves: a goroutine's record on another thread than its previous one; shares: a
    # record of another goroutine on the thread a goroutine with open calls last ran on.
    last = {}
    open_calls = collections.Counter()
    moves = shares = 0
    for r in events:
        g, th = r["tid"], r.get("thread")
        if g in last and last[g] != th:
            moves += 1
        if any(o != g and last.get(o) == th and open_calls[o] > 0 for o in last):
            shares += 1
        last[g] = th
        open_calls[g] += 1 if r["type"] == "call" else -1
    ck.check(moves + shares > 0, "no goroutine moved to another thread or shared one in a traced call: "
                                 "the test did not exercise per-goroutine stacks")
    return f"{moves} moves between threads, {shares} records on a thread another goroutine's open calls left"


def check_arguments(ck, a):
    """Arguments and results in Go's registers, typed from Go's DWARF: the values the
    program passed and returned (goprog.go)."""
    want_types = {"main.leaf": "i8>i8", "main.safe": "i8>i8", "main.(*Counter).Add": "p,i8>i8",
                  "main.describe": "o24,o16,u1>i8", "main.greet": "o16>o"}
    names = {"alpha", "beta", "gamma", "delta"}
    bad = collections.Counter()
    seen = collections.Counter()
    for c, r in a.pairs:
        fn = h.record_function(c)
        if fn not in want_types:
            continue
        seen[fn] += 1
        args = [h._as_int(v) for v in c.get("args") or []]
        if c.get("types") != want_types[fn] or len(args) != 6:
            bad[f"{fn}: types {c.get('types')} args {c.get('args')}"] += 1
            continue
        rv = h._as_int(r.get("retval")) if r.get("type") == "return" else None
        if fn == "main.leaf":
            ok = args[0] in range(4) and rv == args[0] + 1  # leaf(p[0] = id) = id + 1
        elif fn == "main.safe":
            ok = args[0] in range(3, 8) and (rv is None or rv == (-args[0]) & 0xFFFFFFFFFFFFFFFF)
        elif fn == "main.greet":
            # greet(name) = "hi " + name: the argument's text and the result's.
            name = c.get("struct0", "").strip('"')
            ok = name in names and args[1] == len(name) and r.get("retstr") == "hi " + name
        elif fn == "main.(*Counter).Add":
            ok = args[0] != 0 and args[1] in range(5)  # the receiver, then k = i
        else:
            # describe(xs, name, on): xs = array, len, cap; name = text, length; on (u1:
            # its low byte)
            name = c.get("struct3", "")
            ok = (args[1] in range(5) and args[2] == 8 and name.strip('"') in names
                  and args[4] == len(name.strip('"')) and args[5] & 0xFF == 1 - args[1] % 2
                  and rv == 100 * args[1] + 10 * args[4] + (args[5] & 0xFF))
        if not ok:
            bad[f"{fn}: args {args} {c.get('struct3', '')} -> {rv}"] += 1
    ck.check(not bad, f"calls whose arguments or results are not the program's: {dict(bad.most_common(8))}")
    for fn in want_types:
        ck.check(seen[fn] > 0, f"no call of {fn} seen")


def build(ck, src, tmp):
    """goprog built into tmp (None after a failure)."""
    exe = os.path.join(tmp, "goprog")
    shutil.copy(src, os.path.join(tmp, "goprog.go"))
    # The build cache in the temporary directory; no module, no network.
    env = dict(os.environ, GOCACHE=os.path.join(tmp, "cache"), GO111MODULE="off",
               GOPATH=os.path.join(tmp, "gopath"), GOFLAGS="", CGO_ENABLED="0")
    built = h.run(["go", "build", "-o", exe, "goprog.go"], cwd=tmp, env=env, timeout=600)
    return exe if ck.check(built.status == 0, f"go build failed\n{built.describe()}") else None


def check_memtrace(ck, exe):
    """memtrace says once that Go's heap is not traced, and the program runs as untraced."""
    res = h.trace([exe], None, None, quiet=False, plugin="memtrace").result
    ck.check_eq(res.status, EXIT_STATUS, f"memtrace on a Go program: exit status\n{res.describe()}")
    said = [line for line in res.err.splitlines() if "is a Go program" in line]
    ck.check(len(said) == 1 and "not traced" in said[0],
             f"memtrace on a Go program: want one line saying Go's heap is not traced, got {said}\n"
             f"{res.describe()}")
    if len(said) == 1:
        print(f"memtrace: {said[0]}")


if __name__ == "__main__":
    sys.exit(main())

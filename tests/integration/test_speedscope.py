#!/usr/bin/env python3
"""The speedscope report (speedscope's own file format) on traced programs.

usage: test_speedscope.py RECURSION THREADS HEAPSHAPE

Each program is traced with the built functracer and `functracer-postproc
speedscope` writes one file, read back with Python's json module. Oracles: the
file format speedscope publishes (its JSON schema, file-format-schema.json, whose
rules are written out below and checked by hand; with the jsonschema module, the
same rules are also checked by a validator, and the schema speedscope's npm package
ships, when installed, too), speedscope itself (its npm package's page in headless
Chromium, when both are installed), the programs' own statements (call counts, heapshape's
manifest) and the other reports' JSON (`calls --json`, `leaks --json`, `allocators
--json`, `peak --json`, `temporary --json`) of the same traces. Checked:

  * the document: $schema, shared.frames (each with a string name, optional string
    file and numeric line), profiles of type evented or sampled with their required
    fields and a known unit; every frame index in range;
  * evented profiles (calltrace): events in non-decreasing time, open and close
    balanced and matching (what speedscope requires), one profile per thread; per
    function, the activations, total time (outermost activations) and self time
    replayed from the events equal `calls --json`, and the calls the program's own;
  * sampled profiles (memtrace): as many weights as samples; each metric's weights
    add up to the total of the report that counts it; leaked and allocated bytes per
    program function equal heapshape's manifest; the leaked stacks are the leaks
    report's groups (frames outermost first, the allocator as the leaf);
  * --tid keeps one thread's profile.
"""

import base64
import collections
import fnmatch
import html
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import ftharness as h  # noqa: E402

URL = "https://www.speedscope.app/file-format-schema.json"
UNITS = ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]

# The rules of speedscope's published schema, as a draft-07 schema.
NUMBER = {"type": "number"}
FRAME = {"type": "object", "required": ["name"],
         "properties": {"name": {"type": "string"}, "file": {"type": "string"},
                        "line": NUMBER, "col": NUMBER}}
EVENT = {"type": "object", "required": ["type", "frame", "at"],
         "properties": {"type": {"enum": ["O", "C"]}, "frame": NUMBER, "at": NUMBER}}
COMMON = {"name": {"type": "string"}, "unit": {"enum": UNITS}, "startValue": NUMBER,
          "endValue": NUMBER}
EVENTED = {"type": "object", "required": ["type", "name", "unit", "startValue", "endValue", "events"],
           "properties": dict(COMMON, type={"const": "evented"},
                              events={"type": "array", "items": EVENT})}
SAMPLED = {"type": "object",
           "required": ["type", "name", "unit", "startValue", "endValue", "samples", "weights"],
           "properties": dict(COMMON, type={"const": "sampled"},
                              samples={"type": "array", "items": {"type": "array", "items": NUMBER}},
                              weights={"type": "array", "items": NUMBER})}
SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "required": ["$schema", "shared", "profiles"],
          "properties": {"$schema": {"const": URL},
                         "shared": {"type": "object", "required": ["frames"],
                                    "properties": {"frames": {"type": "array", "items": FRAME}}},
                         "profiles": {"type": "array", "items": {"anyOf": [EVENTED, SAMPLED]}},
                         "name": {"type": "string"}, "activeProfileIndex": NUMBER,
                         "exporter": {"type": "string"}}}


def speedscope_release():
    """The dist/release directory of speedscope's npm package, when it is installed."""
    try:
        root = subprocess.run(["npm", "root", "-g"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=60, check=False).stdout.decode().strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = os.path.join(root, "speedscope", "dist", "release")
    return path if root and os.path.exists(os.path.join(path, "index.html")) else None


def published_schema(release):
    """file-format-schema.json from speedscope's npm package."""
    path = os.path.join(release, "file-format-schema.json") if release else ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return None


def open_in_speedscope(ck, release, path, label, work):
    """speedscope itself (its npm package's page, offline, in headless Chromium) opens
    the file as its command-line tool hands it a file: it shows the first profile's
    name above its flame chart, and no import error."""
    if release is None or browser.chromium() is None:
        ck.skip(f"{label}: speedscope opens it", "speedscope's npm package or chromium not installed")
        return
    with open(path, "rb") as f:
        data = f.read()
    js = os.path.join(work, label + ".js")
    with open(js, "w", encoding="utf-8") as f:
        f.write(f"speedscope.loadFileFromBase64({json.dumps(os.path.basename(path))}, "
                f"{json.dumps(base64.b64encode(data).decode())})")
    url = "file://" + os.path.join(release, "index.html") + "#localProfilePath=" + js
    dom = browser.dump_dom(url, width=1200, height=700)
    first = json.loads(data)["profiles"][0]["name"]
    ck.check(html.escape(first, quote=False) in dom and "<canvas" in dom
             and not re.search(r"(?i)something went wrong|unrecognized format|failed to", dom),
             f"{label}: speedscope shows profile {first!r}\n{dom[-1500:]}")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_rules(ck, doc, label):
    """The schema's rules by hand, and what speedscope's importer needs besides."""
    ok = ck.check(isinstance(doc, dict) and doc.get("$schema") == URL, f"{label}: $schema")
    frames = doc.get("shared", {}).get("frames") if ok else None
    ok = ck.check(isinstance(frames, list), f"{label}: shared.frames") and ok
    profiles = doc.get("profiles")
    ok = ck.check(isinstance(profiles, list) and profiles, f"{label}: profiles") and ok
    if not ok:
        return False
    for i, f in enumerate(frames):
        ok = ck.check(isinstance(f, dict) and isinstance(f.get("name"), str)
                      and isinstance(f.get("file", ""), str) and is_num(f.get("line", 0)),
                      f"{label}: frame {i} {f}") and ok
    n = len(frames)
    for p in profiles:
        kind = p.get("type")
        pl = f"{label}: profile {p.get('name')!r}"
        ok = ck.check(kind in ("evented", "sampled") and isinstance(p.get("name"), str)
                      and p.get("unit") in UNITS and is_num(p.get("startValue"))
                      and is_num(p.get("endValue")) and p["startValue"] <= p["endValue"],
                      f"{pl}: type, name, unit, startValue <= endValue") and ok
        if kind == "evented":
            stack, last, bad = [], p.get("startValue", 0), []
            for e in p.get("events", []):
                if not (e.get("type") in ("O", "C") and is_num(e.get("at")) and isinstance(e.get("frame"), int)
                        and 0 <= e["frame"] < n):
                    bad.append(f"malformed {e}")
                elif e["at"] < last:
                    bad.append(f"time goes back {e}")
                elif e["type"] == "O":
                    stack.append(e["frame"])
                elif not stack or stack.pop() != e["frame"]:
                    bad.append(f"close of a frame not open {e}")
                if e.get("at", 0) > p["endValue"]:
                    bad.append(f"after endValue {e}")
                last = e.get("at", last)
                if len(bad) > 3:
                    break
            if stack:
                bad.append(f"{len(stack)} frames left open")
            ok = ck.check_eq(bad, [], f"{pl}: events ordered and balanced") and ok
        elif kind == "sampled":
            samples, weights = p.get("samples", []), p.get("weights", [])
            ok = ck.check(len(samples) == len(weights), f"{pl}: samples and weights") and ok
            ok = ck.check(all(isinstance(s, list) and s and all(isinstance(k, int) and 0 <= k < n for k in s)
                              for s in samples), f"{pl}: frame indices") and ok
            ok = ck.check(all(is_num(w) and w > 0 for w in weights), f"{pl}: weights") and ok
            ok = ck.check(sum(weights) == p["endValue"] - p["startValue"], f"{pl}: endValue") and ok
    return ok


def validate(ck, doc, label, published):
    check_rules(ck, doc, label)
    try:
        import jsonschema  # Debian: python3-jsonschema
    except ImportError:
        ck.skip(f"{label}: validator", "python3-jsonschema not installed")
        return
    for name, schema in (("the schema's rules", SCHEMA), ("the published schema", published)):
        if schema is None:
            continue
        if name == "the published schema":
            schema = dict(schema, **{"$ref": "#/definitions/FileFormat.File"})
        errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)][:3]
        ck.check_eq(errors, [], f"{label}: valid against {name}")


def speedscope(ck, work, name, args):
    path = os.path.join(work, name + ".speedscope.json")
    res = h.run_postproc(["speedscope", "-o", path] + args)
    if not ck.check(res.status == 0 and res.out == "", f"speedscope {args}\n{res.describe()}"):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def postproc_json(ck, args):
    res = h.run_postproc(args + ["--json"])
    ck.check(res.status == 0, f"{args}\n{res.describe()}")
    return json.loads(res.out) if res.status == 0 else {}


def replay_calls(doc):
    """Per function name: [calls, total_ns (outermost activations), self_ns]."""
    frames = doc["shared"]["frames"]
    out = collections.defaultdict(lambda: [0, 0, 0])
    for p in doc["profiles"]:
        if p["type"] != "evented":
            continue
        stack = []  # [frame, at, children_ns]
        for e in p["events"]:
            if e["type"] == "O":
                stack.append([e["frame"], e["at"], 0])
                continue
            frame, at, children = stack.pop()
            incl = e["at"] - at
            name = frames[frame]["name"]
            out[name][0] += 1
            if all(f[0] != frame for f in stack):
                out[name][1] += incl
            out[name][2] += incl - children
            if stack:
                stack[-1][2] += incl
    return out


def check_calls(ck, work, exe, name, patterns, published, release):
    tr = h.trace([exe], patterns, os.path.join(work, name), plugin="calltrace")
    ck.check(tr.result.status == 0, f"traced {name}\n{tr.result.describe()}")
    doc = speedscope(ck, work, name, [tr.outdir])
    if doc is None:
        return None, None
    validate(ck, doc, name, published)
    open_in_speedscope(ck, release, os.path.join(work, name + ".speedscope.json"), name, work)
    got = replay_calls(doc)
    want = {f["name"]: [f["calls"], f["total_ns"], f["self_ns"]]
            for f in postproc_json(ck, ["calls", tr.outdir]).get("functions", [])}
    ck.check_eq(dict(got), want, f"{name}: calls, total_ns, self_ns per function = calls --json")
    stated = h.parse_expectations(tr.result.out).calls
    got_calls = collections.Counter()
    for fn, v in got.items():
        got_calls[h.base_name(fn)] += v[0]
    traced = {k: v for k, v in stated.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns.split(","))}
    ck.check_eq({k: got_calls[k] for k in traced}, traced, f"{name}: calls = the program's count")
    return tr, doc


def check_heap(ck, work, exe, published, release):
    tr = h.trace([exe], None, os.path.join(work, "heap"), plugin="memtrace")
    ck.check(tr.result.status == 0, f"traced heapshape\n{tr.result.describe()}")
    doc = speedscope(ck, work, "heap", [tr.outdir])
    if doc is None:
        return
    validate(ck, doc, "heapshape", published)
    open_in_speedscope(ck, release, os.path.join(work, "heap.speedscope.json"), "heapshape", work)
    frames = doc["shared"]["frames"]
    profiles = {p["name"]: p for p in doc["profiles"]}
    ck.check(all(p["type"] == "sampled" for p in doc["profiles"]), "heapshape: sampled profiles only")
    leaks = postproc_json(ck, ["leaks", tr.outdir])
    allocators = postproc_json(ck, ["allocators", tr.outdir])
    peak = postproc_json(ck, ["peak", tr.outdir])
    temporary = postproc_json(ck, ["temporary", tr.outdir])
    want = {"leaked": leaks.get("leaked_bytes"), "leaked blocks": leaks.get("leaked_blocks"),
            "allocated": allocators.get("allocated_bytes"), "allocations": allocators.get("allocations"),
            "peak": sum(p["peak_bytes"] for p in peak.get("processes", [])),
            "temporary": temporary.get("temporary_bytes"),
            "temporary allocations": temporary.get("temporary")}
    got = {k: sum(profiles[k]["weights"]) if k in profiles else 0 for k in want}
    ck.check_eq(got, want, "heapshape: each profile's total = the reports' --json")
    ck.check_eq({k: profiles[k]["unit"] for k in ("leaked", "allocations") if k in profiles},
                {"leaked": "bytes", "allocations": "none"}, "heapshape: units")

    m = h.heap_manifest(tr.result.out)
    functions = set(m["allocs"])

    def per_function(profile):
        out = collections.Counter()
        for s, w in zip(profile["samples"], profile["weights"]):
            fn = next((frames[k]["name"] for k in reversed(s) if frames[k]["name"] in functions), None)
            if fn:
                out[fn] += w
        return dict(out)

    ck.check_eq(per_function(profiles.get("leaked", {"samples": [], "weights": []})),
                {f: v[1] for f, v in m["leak"].items()}, "heapshape: leaked bytes per function = manifest")
    ck.check_eq(per_function(profiles.get("allocated", {"samples": [], "weights": []})),
                {f: v[1] for f, v in m["allocs"].items()},
                "heapshape: allocated bytes per function = manifest")

    def name(f):
        return f["function"] if f["function"] else None

    want_stacks = collections.Counter()
    for g in leaks.get("groups", []):
        names = [name(f) for f in reversed(g["frames"])] + [g["function"]]
        want_stacks[tuple(names)] += g["bytes"]
    got_stacks = collections.Counter()
    p = profiles.get("leaked", {"samples": [], "weights": []})
    for s, w in zip(p["samples"], p["weights"]):
        names = [frames[k]["name"] for k in s]
        # unresolved frames are MODULE+0xOFFSET in speedscope, null in leaks --json
        names = [None if "+0x" in n and n not in functions else n for n in names]
        got_stacks[tuple(names)] += w
    ck.check_eq(got_stacks, want_stacks, "heapshape: leaked stacks = leaks --json groups")
    files = [f for f in frames if f.get("file")]
    ck.check(any(f["name"] in functions and f["file"].endswith("heapshape.c") and f.get("line", 0) > 0
                 for f in files), "heapshape: frames carry file and line")


def main():
    ck = h.Checker("speedscope")
    recursion, threads, heapshape = sys.argv[1:4]
    release = speedscope_release()
    published = published_schema(release)
    if published is None:
        ck.skip("the published schema", "speedscope's npm package is not installed (.ci/run installs it with npm): "
                "its file-format-schema.json is not read")
    with tempfile.TemporaryDirectory(prefix="ft-speedscope-") as work:
        # rec_deep recurses thousands of frames deep: speedscope's importer, which
        # recurses per frame, runs out of JavaScript stack on it, so it is left out.
        check_calls(ck, work, recursion, "recursion", "fib,rec_hidden_helper", published, release)
        tr, doc = check_calls(ck, work, threads, "threads", "th_*", published, release)
        if doc:
            exp = h.parse_expectations(tr.result.out)
            evented = [p for p in doc["profiles"] if p["type"] == "evented"]
            for _, _, nthreads in exp.per_thread:
                ck.check(len(evented) >= nthreads, f"threads: a profile per thread ({len(evented)})")
            if evented:
                tid = evented[-1]["name"].rsplit(" ", 1)[-1]
                one = speedscope(ck, work, "one", ["--tid", tid, tr.outdir])
                if one:
                    names = [p["name"] for p in one["profiles"]]
                    ck.check_eq(names, [evented[-1]["name"]], "threads: --tid keeps one thread")
        check_heap(ck, work, heapshape, published, release)
        res = h.run_postproc(["speedscope", "/nonexistent/trace"])
        ck.check(res.status == 1 and "/nonexistent/trace" in res.err and res.err.count("\n") == 1,
                 f"a missing trace is one line naming it\n{res.describe()}")
    ck.finish()


if __name__ == "__main__":
    main()

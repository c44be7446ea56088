"""The trace format (doc/trace-format.md §2), read without functracer-postproc, so
that tests can check the post-processor against the raw records."""

import re


_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|\[[0-9a-fx,]*\]|0x[0-9a-f]+|-?[0-9]+')
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def _unescape(s):
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = s[i + 1]
        if n == "x":
            out.append(chr(int(s[i + 2:i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES[n])
            i += 2
    return "".join(out)


def _value(text):
    if text.startswith('"'):
        return text[1:-1] if "\\" not in text else _unescape(text[1:-1])
    if text.startswith("["):
        return [int(x, 16) for x in text[1:-1].split(",") if x]
    if text.startswith("0x"):
        return int(text, 16)
    return int(text)


# One field, for reading a whole well-formed line at once (parse_line): the key is
# what comes before the first "=", the value as _VALUE has it, then a space or the end.
_FIELD = re.compile(r'([^ =]*)=("(?:[^"\\]|\\.)*"|\[[0-9a-fx,]*\]|0x[0-9a-f]+|-?[0-9]+)(?= |\Z)')


class Record(dict):
    pass


def parse_line(line, where=""):
    """One record line (without its newline) as a Record. Raises ValueError."""
    parts = line.split(" ", 4)
    if len(parts) < 4:
        raise ValueError(f"{where}: malformed record {line[:200]!r}")
    rec = Record(seq=int(parts[0]), tid=int(parts[1]), ts=int(parts[2]), type=parts[3])
    rest = parts[4] if len(parts) > 4 else ""
    # Traces of long runs hold millions of records: the fields of a line are found
    # in one pass, and taken when, put back together, they are the whole line (every
    # line functracer writes); any other line is read field by field below, which
    # says what is wrong with it.
    fields = _FIELD.findall(rest)
    if " ".join(f"{k}={v}" for k, v in fields) == rest:
        for key, value in fields:
            rec[key] = _value(value)
        return rec
    pos = 0
    while pos < len(rest):
        eq = rest.index("=", pos)
        key = rest[pos:eq]
        m = _VALUE.match(rest, eq + 1)
        if not m:
            raise ValueError(f"{where}: bad value of {key}: {line[:200]!r}")
        rec[key] = _value(m.group(0))
        pos = m.end()
        if pos < len(rest):
            if rest[pos] != " ":
                raise ValueError(f"{where}: junk after {key}: {line[:200]!r}")
            pos += 1
    return rec


def iter_trace(path):
    """The records of a trace file one by one, without holding the file in memory
    (for traces of long runs). Raises ValueError on a malformed line.

    Version 2 writes each call stack once, as a `stack` record (id, frames), and
    records refer to it as `stack=ID`: the records come out as version 1 wrote them,
    with their `frames`, and without the `stack` records. A reference to a stack no
    earlier record holds raises ValueError."""
    with open(path, "rb") as f:
        first = f.readline().decode("ascii").rstrip("\n")
        if first not in ("functracer-trace 1", "functracer-trace 2"):
            raise ValueError(f"{path}: not a trace (first line {first[:60]!r})")
        interned = first.endswith(" 2")
        stacks = {}
        for n, raw in enumerate(f, 2):
            line = raw.decode("ascii").rstrip("\n")
            if not line:
                continue
            rec = parse_line(line, f"{path}:{n}")
            if interned and rec["type"] == "stack":
                stacks[rec["id"]] = rec["frames"]
                continue
            if interned and "stack" in rec:
                ref = rec.pop("stack")
                if ref not in stacks:
                    raise ValueError(f"{path}:{n}: refers to stack {ref}, which no earlier record holds")
                rec["frames"] = stacks[ref]
            yield rec


def parse_trace(path):
    """[Record] of a trace file: type, seq, tid, ts and the fields, values decoded
    (hex and hex lists as ints). Raises ValueError on a malformed line."""
    return list(iter_trace(path))

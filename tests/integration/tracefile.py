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
        return _unescape(text[1:-1])
    if text.startswith("["):
        return [int(x, 16) for x in text[1:-1].split(",") if x]
    if text.startswith("0x"):
        return int(text, 16)
    return int(text)


class Record(dict):
    pass


def parse_trace(path):
    """[Record] of a trace file: type, seq, tid, ts and the fields, values decoded
    (hex and hex lists as ints). Raises ValueError on a malformed line."""
    records = []
    with open(path, "rb") as f:
        lines = f.read().decode("ascii").split("\n")
    if lines[0] != "functracer-trace 1":
        raise ValueError(f"{path}: not a trace (first line {lines[0][:60]!r})")
    for n, line in enumerate(lines[1:], 2):
        if not line:
            continue
        parts = line.split(" ", 4)
        if len(parts) < 4:
            raise ValueError(f"{path}:{n}: malformed record {line[:200]!r}")
        rec = Record(seq=int(parts[0]), tid=int(parts[1]), ts=int(parts[2]), type=parts[3])
        rest = parts[4] if len(parts) > 4 else ""
        pos = 0
        while pos < len(rest):
            eq = rest.index("=", pos)
            key = rest[pos:eq]
            m = _VALUE.match(rest, eq + 1)
            if not m:
                raise ValueError(f"{path}:{n}: bad value of {key}: {line[:200]!r}")
            rec[key] = _value(m.group(0))
            pos = m.end()
            if pos < len(rest):
                if rest[pos] != " ":
                    raise ValueError(f"{path}:{n}: junk after {key}: {line[:200]!r}")
                pos += 1
        records.append(rec)
    return records

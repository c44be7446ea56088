"""Headless Chromium for the tests of the SVG and HTML outputs: screenshots and the
DOM after the page's scripts ran, and a PNG decoder (standard library only) to look
at the screenshot's pixels."""

import os
import shutil
import struct
import subprocess
import tempfile
import zlib

TIMEOUT = 120


def chromium():
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args, url):
    profile = tempfile.mkdtemp(prefix="ft-chromium-")
    try:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}"] + args + [url]
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                              check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def file_url(path, fragment=""):
    return "file://" + os.path.abspath(path) + (("#" + fragment) if fragment else "")


def screenshot(url, png, width, height):
    """Renders `url` into `png` at width x height; returns the decoded image."""
    res = _run([f"--screenshot={png}", f"--window-size={width},{height}"], url)
    if not os.path.exists(png):
        raise RuntimeError(f"chromium wrote no screenshot (status {res.returncode}):\n"
                           + res.stderr.decode(errors="replace")[-2000:])
    return read_png(png)


def dump_dom(url, budget_ms=5000, width=None, height=None):
    """The serialized DOM of `url` after its scripts ran (in a window of width x
    height, when given)."""
    size = [f"--window-size={width},{height}"] if width else []
    res = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom"] + size, url)
    if res.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom failed (status {res.returncode}):\n"
                           + res.stderr.decode(errors="replace")[-2000:])
    return res.stdout.decode("utf-8", errors="replace")


class Image:
    def __init__(self, width, height, rows):
        self.width = width
        self.height = height
        self.rows = rows  # rows[y][x] = (r, g, b)

    def pixel(self, x, y):
        return self.rows[y][x]


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos = 8
    idat = b""
    width = height = None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace != 0:
                raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xff
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xff
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xff
            elif ftype == 4:
                line[x] = (line[x] + _paeth(a, b, c)) & 0xff
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return Image(width, height, rows)

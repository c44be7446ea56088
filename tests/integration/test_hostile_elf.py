#!/usr/bin/env python3
"""functracer on damaged programs and plugins (design §4: errors are one line on
stderr naming the thing, exit 1; nothing crashes).

Usage: test_hostile_elf.py PROGRAM...   (real programs of tests/progs)

Each program is copied and damaged: truncated inside the ELF header, inside the
program headers, inside .text and just before the section headers; e_phoff and
e_shoff pointing past the end of the file, e_shnum huge, a .symtab whose sh_size
runs past the end of the file, e_machine of another architecture. The oracle is the
kernel: each copy is first run untraced.
 - If the kernel refuses to run it (execve fails), functracer must refuse it too:
   exit 1, exactly one line on stderr, naming the file, the program not run.
 - If the kernel runs it, functracer must run it with the same stdout and exit
   status as the untraced run; its own lines on stderr are warnings, and when the
   section headers or the symbol table cannot be read, one of them says so, naming
   the file.
Either way functracer itself never dies of a signal and never prints a sanitizer
report, an abort or an internal error.

Plugins (the cases test_plugin_example.py does not cover: it has a wrong API
version, a small table, no init function, an init returning NULL): a text file
named .so and truncated copies of a real plugin are refused with one line naming
the file, exit 1.
"""

import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

TIMEOUT = 120
EM_AARCH64 = 183

# What functracer must never print, whatever its input.
CRASH_MARKERS = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:",
                 "LeakSanitizer", "internal error", "terminate called", "Aborted",
                 "Segmentation fault", "core dumped")


class Elf:
    """The fields of a 64-bit little-endian ELF file this test damages."""

    def __init__(self, data):
        self.data = data
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        (self.e_phoff, self.e_shoff) = struct.unpack_from("<QQ", data, 0x20)
        (self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = struct.unpack_from("<HHHHH", data, 0x36)
        self.sections = []  # (name, header offset, sh_offset, sh_size)
        for i in range(self.e_shnum):
            off = self.e_shoff + i * self.e_shentsize
            name, _type, _flags, _addr, sh_offset, sh_size = struct.unpack_from(
                "<IIQQQQ", data, off)
            self.sections.append([name, off, sh_offset, sh_size])
        strtab = self.sections[self.e_shstrndx][2]
        for s in self.sections:
            end = data.index(b"\0", strtab + s[0])
            s[0] = data[strtab + s[0]:end].decode()

    def section(self, name):
        for s in self.sections:
            if s[0] == name:
                return s
        raise KeyError(name)


def patched(data, offset, fmt, value):
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def damaged_copies(data):
    """(label, bytes) for every damage."""
    elf = Elf(data)
    text = elf.section(".text")
    symtab = elf.section(".symtab")
    return [
        ("truncated in the ELF header (20 bytes)", data[:20]),
        ("truncated in the ELF header (40 bytes)", data[:40]),
        ("truncated in the program headers",
         data[:elf.e_phoff + elf.e_phentsize * (elf.e_phnum // 2) + 10]),
        ("truncated in .text", data[:text[2] + text[3] // 2]),
        ("truncated just before the section headers", data[:elf.e_shoff]),
        ("e_phoff past the end of the file", patched(data, 0x20, "<Q", len(data) + 4096)),
        ("e_phoff huge", patched(data, 0x20, "<Q", 0xFFFFFFFFFFFFF000)),
        ("e_shoff past the end of the file", patched(data, 0x28, "<Q", len(data) + 4096)),
        ("e_shoff huge", patched(data, 0x28, "<Q", 0xFFFFFFFFFFFFF000)),
        ("e_shnum huge", patched(data, 0x3C, "<H", 0xFFFF)),
        (".symtab sh_size past the end of the file",
         patched(data, symtab[1] + 0x20, "<Q", len(data) * 16)),
        (".symtab sh_size huge", patched(data, symtab[1] + 0x20, "<Q", 0xFFFFFFFFFFFFFF00)),
        ("e_machine AArch64", patched(data, 0x12, "<H", EM_AARCH64)),
    ]


def run_raw(cmd, cwd=None):
    """Like h.run, but keeps a death by signal apart (returncode < 0) and tells a
    failed execve (exec_error) from a program that ran."""
    try:
        p = subprocess.run([str(c) for c in cmd], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                           timeout=TIMEOUT, preexec_fn=h._child_setup)
    except OSError as e:
        return None, e
    return p, None


def describe(cmd, p):
    return (f"command: {h.fmt_cmd(cmd)}\nexit status: {p.returncode}\n"
            f"--- stdout ---\n{p.stdout.decode(errors='replace')[:2000]}\n"
            f"--- stderr ---\n{p.stderr.decode(errors='replace')[:3000]}")


def check_no_crash(ck, cmd, p, what):
    err = p.stderr.decode(errors="replace")
    ck.check(p.returncode >= 0, f"{what}: functracer died of signal {-p.returncode}\n"
             f"{describe(cmd, p)}")
    for marker in CRASH_MARKERS:
        ck.check(marker not in err, f"{what}: {marker!r} on stderr\n{describe(cmd, p)}")


def check_refused(ck, cmd, p, name, what):
    lines = [line for line in p.stderr.decode(errors="replace").splitlines() if line.strip()]
    ck.check_eq(p.returncode, 1, f"{what}: exit status\n{describe(cmd, p)}")
    ck.check(len(lines) == 1, f"{what}: want one line on stderr, got {len(lines)}\n"
             f"{describe(cmd, p)}")
    ck.check(all(line.startswith("functracer:") for line in lines),
             f"{what}: stderr lines must start with 'functracer:'\n{describe(cmd, p)}")
    ck.check(name in p.stderr.decode(errors="replace"),
             f"{what}: stderr does not name {name!r}\n{describe(cmd, p)}")
    ck.check(p.stdout == b"", f"{what}: the program ran\n{describe(cmd, p)}")
    if lines:
        print(f"  refused: {lines[0]}")


def check_program(ck, ft, tmp, program):
    data = open(program, "rb").read()
    base = os.path.basename(program)
    for n, (label, damaged) in enumerate(damaged_copies(data)):
        what = f"{base}: {label}"
        print(f"=== {what}")
        name = f"{base}-damaged-{n}"
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(damaged)
        os.chmod(path, 0o755)

        unreadable = label.startswith(("truncated just before", "e_shoff", "e_shnum", ".symtab"))
        untraced, exec_error = run_raw([path], cwd=tmp)
        outdir = os.path.join(tmp, f"out-{n}")
        for plugin in ("calltrace", "memtrace"):
            cmd = [ft, "-e", plugin, "--uncompressed", "-o", outdir]
            if plugin == "calltrace":
                cmd += ["-a", "*"]
            cmd.append(path)
            p, err = run_raw(cmd, cwd=tmp)
            if not ck.check(p is not None, f"{what}: cannot start functracer: {err}"):
                continue
            w = f"{what} ({plugin})"
            check_no_crash(ck, cmd, p, w)
            if exec_error is not None:
                print(f"  untraced: execve fails ({exec_error.strerror})")
                check_refused(ck, cmd, p, name, w)
                continue
            status = untraced.returncode if untraced.returncode >= 0 else 128 - untraced.returncode
            print(f"  untraced: exit status {status}; traced: {p.returncode}")
            if p.returncode == 1 and untraced.returncode != 1:
                # functracer refused what the kernel runs: allowed only for what it cannot
                # trace (another architecture), with one line naming the file.
                check_refused(ck, cmd, p, name, w)
                ck.check(label.startswith("e_machine"),
                         f"{w}: functracer refused a program the kernel runs\n"
                         f"{describe(cmd, p)}")
                continue
            ck.check_eq(p.returncode, status, f"{w}: exit status (untraced: {status})\n"
                        f"{describe(cmd, p)}")
            ck.check_eq(p.stdout, untraced.stdout, f"{w}: stdout differs from the untraced run\n"
                        f"{describe(cmd, p)}")
            own = set(untraced.stderr.decode(errors="replace").splitlines())
            extra = [line for line in p.stderr.decode(errors="replace").splitlines()
                     if line not in own]
            ck.check(all(line.startswith("functracer:") for line in extra),
                     f"{w}: stderr lines that are neither the program's nor functracer's\n"
                     f"{describe(cmd, p)}")
            if unreadable:
                # The program runs, but its symbols cannot be read: a warning says so.
                ck.check(any(name in line and "not traced" in line for line in extra),
                         f"{w}: no warning that {name} cannot be read\n{describe(cmd, p)}")


def compile_so(ck, tmp, name, source):
    cc = shutil.which("cc")
    if cc is None:
        ck.skip("damaged plugins", "cc not installed (Debian package build-essential)")
        return None
    src = os.path.join(tmp, name + ".c")
    out = os.path.join(tmp, name + ".so")
    with open(src, "w") as f:
        f.write(source)
    res = h.run([cc, "-shared", "-fPIC", "-o", out, src])
    if not ck.check(res.status == 0, f"cannot compile {name}\n{res.describe()}"):
        return None
    return out


def check_plugins(ck, ft, tmp, program):
    plugins = []
    text = os.path.join(tmp, "text-plugin.so")
    with open(text, "w") as f:
        f.write("this is not a shared object\n")
    plugins.append(("a text file named .so", text))
    real = compile_so(ck, tmp, "real-plugin", """
const void *functracer_plugin_init(const void *h);
const void *functracer_plugin_init(const void *h) { (void)h; return 0; }
""")
    if real is not None:
        data = open(real, "rb").read()
        elf = Elf(data)
        for label, cut in (("truncated in the ELF header", 30),
                           ("truncated in the program headers", elf.e_phoff + 60),
                           ("truncated in .text", elf.section(".text")[2] + 4)):
            path = os.path.join(tmp, f"cut-plugin-{cut}.so")
            with open(path, "wb") as f:
                f.write(data[:cut])
            plugins.append((f"a plugin {label}", path))
        # Section headers intact, the last PT_LOAD running past the end of the file.
        last_load = max(i for i in range(elf.e_phnum)
                        if struct.unpack_from("<I", data, elf.e_phoff + i * elf.e_phentsize)[0] == 1)
        ph = elf.e_phoff + last_load * elf.e_phentsize
        grown = patched(data, ph + 0x20, "<Q", len(data) + 65536)  # p_filesz
        grown = patched(grown, ph + 0x28, "<Q", len(data) + 65536)  # p_memsz
        path = os.path.join(tmp, "long-segment-plugin.so")
        with open(path, "wb") as f:
            f.write(grown)
        plugins.append(("a plugin whose last segment runs past the end of the file", path))
    for label, path in plugins:
        what = f"plugin: {label}"
        print(f"=== {what}")
        cmd = [ft, "-e", path, program]
        p, err = run_raw(cmd, cwd=tmp)
        if not ck.check(p is not None, f"{what}: cannot start functracer: {err}"):
            continue
        check_no_crash(ck, cmd, p, what)
        check_refused(ck, cmd, p, os.path.basename(path), what)


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    ck = h.Checker("hostile-elf")
    ft = h.functracer()
    with h.TempDir() as tmp:
        for program in sys.argv[1:]:
            check_program(ck, ft, tmp, program)
        check_plugins(ck, ft, tmp, sys.argv[1])
    ck.finish()


if __name__ == "__main__":
    main()

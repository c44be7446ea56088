#!/usr/bin/env python3
"""Command-line contract of functracer and functracer-postproc (design §4, §5):
error messages, exit statuses, -q, -o creating its directory, exit codes passed
through, and what the post-processor does with files that are not traces."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

TRUE = "/bin/true"


def stderr_lines(res):
    return [line for line in res.err.splitlines() if line.strip()]


def check_one_error_line(ck, res, status, must_name, what):
    ck.check_eq(res.status, status, f"{what}: exit status\n{res.describe()}")
    lines = stderr_lines(res)
    ck.check(len(lines) == 1, f"{what}: want exactly one line on stderr, got {len(lines)}\n"
             f"{res.describe()}")
    ck.check(must_name in res.err, f"{what}: stderr does not name {must_name!r}\n{res.describe()}")
    ck.check(all(line.startswith("functracer:") for line in lines),
             f"{what}: stderr lines must start with 'functracer:'\n{res.describe()}")


def unused_pid():
    try:
        pid_max = int(open("/proc/sys/kernel/pid_max").read())
    except OSError:
        pid_max = 4194304
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    return pid_max - 1


def main():
    ck = h.Checker("cli")
    ft = h.functracer()
    pp = h.postproc()

    with h.TempDir() as tmp:
        out = os.path.join(tmp, "out")

        print("=== nonexistent program")
        res = h.run([ft, "-e", "calltrace", "--uncompressed", "-o", out, "/nonexistent/dir/no_such_prog"])
        check_one_error_line(ck, res, 1, "/nonexistent/dir/no_such_prog", "nonexistent program")

        print("=== file that is not an executable")
        notexe = os.path.join(tmp, "not_a_program.txt")
        with open(notexe, "w") as f:
            f.write("just text\n")
        res = h.run([ft, "-e", "calltrace", "--uncompressed", "-o", out, notexe])
        check_one_error_line(ck, res, 1, "not_a_program.txt", "non-executable file")

        print("=== 32-bit ELF program")
        elf32 = os.path.join(tmp, "prog32")
        with open(elf32, "wb") as f:
            # A 32-bit little-endian ELF header for EM_386, padded: refused before it runs.
            f.write(bytes([0x7f, 0x45, 0x4c, 0x46, 1, 1, 1]) + bytes(9) + bytes([2, 0, 3, 0]) + bytes(44))
        os.chmod(elf32, 0o755)
        res = h.run([ft, "-e", "calltrace", "--uncompressed", "-o", out, elf32])
        check_one_error_line(ck, res, 1, "prog32", "32-bit ELF program")

        print("=== no such pid")
        pid = unused_pid()
        res = h.run([ft, "-e", "calltrace", "--uncompressed", "-o", out, "-p", str(pid)])
        check_one_error_line(ck, res, 1, str(pid), "no such pid")

        print("=== unknown plugin")
        res = h.run([ft, "-e", "no_such_plugin_xyz", TRUE])
        ck.check_eq(res.status, 1, f"unknown plugin: exit status\n{res.describe()}")
        ck.check("no_such_plugin_xyz" in res.err,
                 f"unknown plugin: stderr does not name it\n{res.describe()}")
        ck.check("calltrace" in res.err,
                 f"unknown plugin: stderr does not list the available plugins\n{res.describe()}")

        print("=== usage errors")
        for args, what in (([ft, "--no-such-option-xyz", TRUE], "unknown long option"),
                           ([ft, "-Z", TRUE], "unknown short option"),
                           ([ft], "no program and no pid"),
                           ([ft, "-e"], "option without its argument")):
            res = h.run(args)
            ck.check_eq(res.status, 2, f"{what}: exit status\n{res.describe()}")
            ck.check(res.err.strip(), f"{what}: nothing on stderr\n{res.describe()}")

        print("=== --version, --help")
        for flag in ("-V", "--version"):
            res = h.run([ft, flag])
            ck.check_eq(res.status, 0, f"{flag}: exit status\n{res.describe()}")
            ck.check((res.out + res.err).strip(), f"{flag}: prints nothing\n{res.describe()}")
        for flag in ("-h", "--help"):
            res = h.run([ft, flag])
            ck.check_eq(res.status, 0, f"{flag}: exit status\n{res.describe()}")
            ck.check("--audit" in res.out + res.err, f"{flag}: does not describe --audit\n"
                     f"{res.describe()}")

        print("=== pattern that matches nothing")
        res = h.run([ft, "-e", "calltrace", "-a", "xyz_nomatch_fn", "--uncompressed", "-o", out + "2", TRUE])
        ck.check_eq(res.status, 0, f"nomatch: exit status\n{res.describe()}")
        ck.check("xyz_nomatch_fn" in res.err,
                 f"nomatch: stderr does not report the pattern\n{res.describe()}")
        for line in stderr_lines(res):
            ck.check(line.startswith("functracer:"), f"message without prefix: {line!r}")
        res = h.run([ft, "-q", "-e", "calltrace", "-a", "xyz_nomatch_fn", "--uncompressed", "-o", out + "3", TRUE])
        ck.check_eq(res.status, 0, f"nomatch -q: exit status\n{res.describe()}")
        ck.check_eq(res.err, "", f"-q must silence functracer's messages\n{res.describe()}")

        print("=== an unknown value of an environment variable is named, not taken silently")
        env = dict(os.environ, FT_THREAD_POINTER="gs0")
        res = h.run([ft, "-e", "calltrace", "-a", "xyz_nomatch_fn", "--uncompressed", "-o", out + "4", TRUE],
                    env=env)
        ck.check_eq(res.status, 0, f"FT_THREAD_POINTER=gs0: exit status\n{res.describe()}")
        named = [line for line in stderr_lines(res) if "FT_THREAD_POINTER=gs0" in line]
        ck.check(len(named) == 1 and named[0].startswith("functracer:"),
                 f"FT_THREAD_POINTER=gs0: want one functracer: line naming it\n{res.describe()}")

        print("=== exit statuses pass through")
        for cmd, status in ((["/bin/false"], 1),
                            (["/bin/sh", "-c", "exit 42"], 42),
                            (["/bin/sh", "-c", "kill -TERM $$"], 143),
                            (["/bin/sh", "-c", "kill -KILL $$"], 137),
                            (["/bin/sh", "-c", "echo out; echo err >&2; exit 5"], 5),
                            # The program starts with the signal dispositions and
                            # mask it would have had untraced (ignored signals stay
                            # ignored across exec, so a tracer that ignores SIGPIPE
                            # itself must not pass that on).
                            (["/bin/sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"], 0),
                            (["/bin/sh", "-c", "yes | head -n 2"], 0)):
            res = h.run([ft, "-q", "-e", "calltrace", "-a", "xyz_nomatch_*",
                         "--uncompressed", "-o", os.path.join(tmp, "st"), *cmd])
            plain = h.run(cmd)
            ck.check_eq(plain.status, status, f"untraced {cmd}")
            ck.check_eq(res.status, status, f"traced {cmd}: exit status\n{res.describe()}")
            ck.check_eq(res.stdout, plain.stdout, f"traced {cmd}: stdout\n{res.describe()}")
            ck.check_eq(res.stderr, plain.stderr, f"traced {cmd}: stderr\n{res.describe()}")

        print("=== -o creates nested directories")
        deep = os.path.join(tmp, "a", "b", "c")
        res = h.run([ft, "-q", "-e", "calltrace", "-a", "xyz_nomatch_*", "--uncompressed", "-o", deep, TRUE])
        ck.check_eq(res.status, 0, f"-o nested: exit status\n{res.describe()}")
        ck.check(os.path.isdir(deep), f"-o {deep} was not created")

        print("=== post-processor: not a trace, missing file, truncated trace")
        junk = os.path.join(tmp, "junk.trace")
        with open(junk, "w") as f:
            f.write("this is not a trace file\n")
        for report in ("dump", "calls"):
            res = h.run([pp, report, "--json", junk])
            ck.check(res.status != 0, f"postproc {report} on junk: should fail\n{res.describe()}")
            ck.check("junk.trace" in res.err,
                     f"postproc {report} on junk: stderr does not name the file\n{res.describe()}")
        res = h.run([pp, "dump", "--json", os.path.join(tmp, "missing.trace")])
        ck.check(res.status != 0 and "missing.trace" in res.err,
                 f"postproc on a missing file should fail naming it\n{res.describe()}")
        res = h.run([pp, "no_such_report_xyz", junk])
        ck.check(res.status != 0, f"postproc with an unknown report should fail\n{res.describe()}")

        recursion = os.path.join(h.progs_dir(), "recursion-O0")
        tdir = os.path.join(tmp, "trunc")
        tr = h.trace([recursion], "fib", tdir)
        if ck.check(tr.result.status == 0 and len(tr.files) == 1,
                    f"tracing recursion-O0 failed\n{tr.result.describe()}"):
            full = h.dump_records(ck, tr.files) or []
            data = open(tr.files[0], "rb").read()
            cut = os.path.join(tmp, "cut.trace")
            # Cut in the middle of a line, well into the call records.
            with open(cut, "wb") as f:
                f.write(data[: len(data) * 2 // 3 + 7])
            res = h.run([pp, "dump", "--json", cut])
            ck.check(res.status == 0, f"dump of a truncated trace should still work\n"
                     f"{res.describe()}")
            n = len([line for line in res.out.splitlines() if line.strip()])
            ck.check(0 < n < len(full), f"truncated trace: {n} records, full trace "
                     f"{len(full)}\n{res.describe()}")
            ck.check(res.err.strip(), f"truncated trace: no warning on stderr\n{res.describe()}")
            res = h.run([pp, "calls", "--json", cut])
            ck.check(res.status == 0, f"calls on a truncated trace should still work\n"
                     f"{res.describe()}")

    ck.finish()


if __name__ == "__main__":
    main()

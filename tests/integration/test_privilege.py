#!/usr/bin/env python3
"""functracer never gives its user more than they had: trace files are private,
planted links are not followed, and a setuid program runs without its privileges.

usage: test_privilege.py WHOAMI_IDS_EXECUTABLE ATTACH_TARGET_EXECUTABLE

  * modes: under umask 000, the output directory functracer creates is 0700 and
    the trace file 0600;
  * planted symbolic link: a link at the trace file's name (attach mode, where the
    name is known in advance) pointing at another file is not followed: one line
    naming the trace file, exit 1, the file it points at unchanged, the process
    let go of and unharmed (it goes on reading and answering, and exits 0);
  * planted hard link and stale trace: a hard link to another file at the trace
    file's name is replaced by a new trace file (0600, a complete trace with its
    detach record), the other file unchanged;
  * setuid (as user nobody, through setpriv or runuser; SKIP without them, or when
    the temporary directory is mounted nosuid, or when setuid does not work here
    even untraced): a copy of whoami-ids made setuid-root runs with euid 0
    untraced, and with nobody's euid under functracer, which exits 0.
Attaching as an unprivileged user to another user's process is checked by
test_attach.py (errors).
"""

import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ftharness as h  # noqa: E402

TIMEOUT = 60


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def run_umask0(cmd):
    def setup():
        h._child_setup()
        os.umask(0)
    p = subprocess.run([str(c) for c in cmd], stdin=subprocess.DEVNULL, capture_output=True,
                       preexec_fn=setup, timeout=TIMEOUT)
    return p


def modes(ck, whoami, tmp):
    print("=== trace file and output directory modes under umask 000")
    outdir = os.path.join(tmp, "modes", "new")
    p = run_umask0([h.functracer(), "-q", "-e", "calltrace", "-a", "main", "--uncompressed", "-o", outdir, whoami])
    ck.check_eq(p.returncode, 0, f"modes: exit status; stderr {p.stderr.decode()!r}")
    if not ck.check(os.path.isdir(outdir), "modes: no output directory"):
        return
    ck.check_eq(oct(mode(outdir)), oct(0o700), "modes: the output directory's mode")
    files = os.listdir(outdir)
    if ck.check(len(files) == 1, f"modes: want one trace file, found {files}"):
        ck.check_eq(oct(mode(os.path.join(outdir, files[0]))), oct(0o600), "modes: the trace file's mode")
        print(f"modes: directory {oct(mode(outdir))}, {files[0]} {oct(mode(os.path.join(outdir, files[0])))}")


def start_reader(target):
    p = subprocess.Popen([str(target), "read"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=h._child_setup)
    line = p.stdout.readline().decode().strip()
    return p, line == "ready"


def finish_reader(ck, label, p):
    """Sends a line and end of input: the program answers and exits 0."""
    try:
        out, err = p.communicate(input=b"abc\n", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        ck.fail(f"{label}: the target did not answer (left stopped?)")
        return
    out = out.decode()
    ck.check(out.startswith("abc ") and out.endswith("done lines=1\n"),
             f"{label}: the target was disturbed: {out!r} {err.decode()!r}")
    ck.check_eq(p.returncode, 0, f"{label}: the target's exit status")


def symlink(ck, target, tmp):
    print("=== a symbolic link planted at the trace file's name")
    label = "symlink"
    outdir = os.path.join(tmp, "symlink")
    os.makedirs(outdir)
    victim = os.path.join(tmp, "victim-symlink")
    with open(victim, "w") as f:
        f.write("precious\n")
    p, ok = start_reader(target)
    try:
        if not ck.check(ok, f"{label}: target did not start"):
            return
        trace = os.path.join(outdir, f"{os.path.basename(str(target))}.{p.pid}.trace")
        os.symlink(victim, trace)
        r = h.run([h.functracer(), "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir, "-p", p.pid], timeout=TIMEOUT)
        print(f"{label}: exit {r.status}; stderr {r.err.strip()!r}")
        ck.check_eq(r.status, 1, f"{label}: functracer exit status\n{r.describe()}")
        lines = r.err.strip().splitlines()
        ck.check(len(lines) == 1 and trace in lines[0] and "symbolic link" in lines[0],
                 f"{label}: want one line naming {trace} and the link\n{r.describe()}")
        with open(victim) as f:
            ck.check_eq(f.read(), "precious\n", f"{label}: the file the link points at")
        ck.check_eq(oct(mode(victim)), oct(0o644 & ~current_umask()), f"{label}: the linked file's mode")
        ck.check(os.path.islink(trace), f"{label}: the link was removed or replaced")
        finish_reader(ck, label, p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def current_umask():
    u = os.umask(0)
    os.umask(u)
    return u


def hardlink(ck, target, tmp):
    print("=== a hard link planted at the trace file's name")
    label = "hardlink"
    outdir = os.path.join(tmp, "hardlink")
    os.makedirs(outdir)
    victim = os.path.join(tmp, "victim-hardlink")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o644)
    p, ok = start_reader(target)
    try:
        if not ck.check(ok, f"{label}: target did not start"):
            return
        trace = os.path.join(outdir, f"{os.path.basename(str(target))}.{p.pid}.trace")
        os.link(victim, trace)
        cmd = [h.functracer(), "-q", "-e", "calltrace", "-a", "at_*", "--uncompressed", "-o", outdir, "-p", str(p.pid)]
        tracer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=h._child_setup)
        # Attached once the module map is in the trace file.
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end and tracer.poll() is None:
            try:
                with open(trace, "rb") as f:
                    if b" module " in f.read():
                        break
            except OSError:
                pass
            time.sleep(0.05)
        tracer.send_signal(signal.SIGINT)
        try:
            _, terr = tracer.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            tracer.kill()
            _, terr = tracer.communicate()
        ck.check_eq(tracer.returncode, 0, f"{label}: functracer exit status; stderr {terr.decode()!r}")
        with open(victim) as f:
            ck.check_eq(f.read(), "precious\n", f"{label}: the hard-linked file")
        st = os.lstat(trace)
        ck.check(stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_ino != os.stat(victim).st_ino,
                 f"{label}: the trace file is not a new file of its own")
        ck.check_eq(oct(mode(trace)), oct(0o600), f"{label}: the trace file's mode")
        records = h.dump_records(ck, [trace])
        if records is not None:
            types = [r.get("type") for r in records]
            ck.check(types[:1] == ["header"] and types[-1:] == ["detach"],
                     f"{label}: incomplete trace: {types[:2]} ... {types[-2:]}")
            print(f"{label}: new trace file, {len(records)} records")
        finish_reader(ck, label, p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def as_nobody_prefix():
    if os.geteuid() != 0:
        return None, "not root: cannot switch to user nobody"
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None, "no user nobody"
    setpriv, runuser = shutil.which("setpriv"), shutil.which("runuser")
    if setpriv:
        prefix = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    elif runuser:
        prefix = [runuser, "-u", "nobody", "--"]
    else:
        return None, "neither setpriv nor runuser"
    if h.run(prefix + [h.functracer(), "--version"]).status != 0:
        return None, "user nobody cannot run functracer from this build directory"
    return (prefix, nobody), None


def setuid(ck, whoami, tmp):
    print("=== a setuid-root program launched by an unprivileged functracer")
    got, why = as_nobody_prefix()
    if got is None:
        ck.skip("setuid", why)
        return
    prefix, nobody = got
    d = os.path.join(tmp, "setuid")
    os.makedirs(d)
    os.chmod(tmp, 0o755)
    os.chmod(d, 0o777)
    if os.statvfs(d).f_flag & os.ST_NOSUID:
        ck.skip("setuid", f"{d} is on a file system mounted nosuid")
        return
    prog = os.path.join(d, "whoami-ids")
    shutil.copy(whoami, prog)
    os.chown(prog, 0, 0)
    os.chmod(prog, 0o4755)
    plain = h.run(prefix + [prog])
    if plain.out.strip() != f"uid={nobody.pw_uid} euid=0":
        ck.skip("setuid", f"the setuid bit does not work here even untraced: {plain.out.strip()!r}")
        return
    outdir = os.path.join(d, "out")
    r = h.run(prefix + [h.functracer(), "-q", "-e", "calltrace", "-a", "main", "--uncompressed", "-o", outdir, prog],
              timeout=TIMEOUT)
    print(f"setuid: untraced {plain.out.strip()!r}, traced {r.out.strip()!r}, exit {r.status}")
    ck.check_eq(r.status, 0, f"setuid: functracer exit status\n{r.describe()}")
    ck.check_eq(r.out.strip(), f"uid={nobody.pw_uid} euid={nobody.pw_uid}",
                f"setuid: ids of the traced program (it must not run as root)")
    files = os.listdir(outdir) if os.path.isdir(outdir) else []
    if ck.check(len(files) == 1, f"setuid: want one trace file, found {files}"):
        st = os.lstat(os.path.join(outdir, files[0]))
        ck.check_eq((st.st_uid, oct(stat.S_IMODE(st.st_mode))), (nobody.pw_uid, oct(0o600)),
                    "setuid: owner and mode of the trace file")


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    whoami, target = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    ck = h.Checker("privilege")
    start = time.monotonic()
    with h.TempDir() as tmp:
        modes(ck, whoami, tmp)
        symlink(ck, target, tmp)
        hardlink(ck, target, tmp)
        setuid(ck, whoami, tmp)
    print(f"run time {time.monotonic() - start:.1f}s")
    ck.finish()


if __name__ == "__main__":
    sys.exit(main())

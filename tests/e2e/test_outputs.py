"""End-to-end: the files `stats -o`, `stats -f csv -o PREFIX` and `report -o` write keep the
one policy of src/core/out_file.c (the trace writer's): symlinks followed, modes kept, the
umask honoured, devices and FIFOs written through, a FIFO without a reader refused at once,
an existing file replaced only with --force-overwrite, a set of CSV files all or nothing."""
import json
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, small_tmpfs  # noqa: E402

flagtrace, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])  # cases run elsewhere (cwd=)
WRAP = os.environ.get("FT_TEST_WRAPPER", "").split()  # e.g. valgrind (scripts/valgrind.sh)
TRACE = os.path.join(data, "sample_h200.json.gz")
SLOW = 600 if WRAP else 60  # a hang is a failure long before this; valgrind is slow
results = Results()


class Writer:
    """One command that writes files: its arguments for an output PATH, the files that
    PATH stands for, and the command's name in its messages."""

    def __init__(self, label, cmd, args, members):
        self.label, self.cmd, self.args, self.members = label, cmd, args, members

    def run(self, out, *extra, inputs=(TRACE,), timeout=SLOW, **kw):
        try:
            return subprocess.run([*WRAP, flagtrace, self.cmd, *self.args, "-o", out, *extra, *inputs],
                                  capture_output=True, text=True, timeout=timeout, **kw)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"hung: {e}") from None

    def stdout_reference(self, inputs=(TRACE,)):
        """What the command prints without -o (None for report, which always writes a file)."""
        if self.cmd == "report":
            return None
        r = subprocess.run([*WRAP, flagtrace, self.cmd, *self.args, *inputs], capture_output=True, text=True)
        assert r.returncode == 0, r
        return r.stdout


WRITERS = [
    Writer("stats -o FILE", "stats", [], lambda out: [out]),
    Writer("stats -f csv -o PREFIX", "stats", ["-f", "csv", "-r", "kernels,api"],
           lambda p: [p + "_kernels.csv", p + "_api.csv", p + "_files.csv"]),
    Writer("report -o FILE", "report", [], lambda out: [out]),
]


def one_line(r, status, *texts):
    assert r.returncode == status, r
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("flagtrace "), r.stderr
    for t in texts:
        assert t in r.stderr, (t, r.stderr)


def umask(m):
    return lambda: os.umask(m)


def big_trace(d):
    """A trace whose kernels report is large (400 long names) and the others small."""
    ev = [{"ph": "X", "cat": "kernel", "name": f"kernel_{i:03d}_" + "x" * 100, "ts": i * 10, "dur": 2, "pid": 0,
           "tid": 1} for i in range(400)]
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1, "pid": 0, "tid": 1})
    p = os.path.join(d, "big.json")
    with open(p, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return p


def read_fifo(path, into):
    with open(path, "rb") as f:  # blocks until the writer opens its end
        into.append(f.read())


for w in WRITERS:
    def new_files(w=w):
        for mask, mode in ((0o027, 0o640), (0o000, 0o666), (0o022, 0o644)):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out")
                r = w.run(out, preexec_fn=umask(mask))
                assert r.returncode == 0 and r.stderr == "", r
                assert sorted(os.listdir(d)) == sorted(os.path.basename(m) for m in w.members(out)), os.listdir(d)
                for m in w.members(out):
                    assert stat.S_IMODE(os.stat(m).st_mode) == mode, (m, oct(os.stat(m).st_mode), oct(mask))
    results.check(f"{w.label}: new files get 0666 less the umask", new_files)

    def existing(w=w):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            victim = w.members(out)[-1]
            with open(victim, "w") as f:
                f.write("precious")
            os.chmod(victim, 0o600)
            # refused before any input is read: the input named here does not exist
            r = w.run(out, inputs=[os.path.join(d, "missing.json")])
            assert r.returncode == 2 and r.stderr == f"flagtrace {w.cmd}: '{victim}' exists; --force-overwrite " \
                f"replaces it (see flagtrace {w.cmd} --help)\n", r
            assert os.listdir(d) == [os.path.basename(victim)] and open(victim).read() == "precious"
            r = w.run(out, "--force-overwrite")
            assert r.returncode == 0 and r.stderr == "", r
            assert open(victim).read() != "precious"
            for m in w.members(out):
                assert os.path.getsize(m) > 0, m
            assert stat.S_IMODE(os.stat(victim).st_mode) == 0o600, oct(os.stat(victim).st_mode)  # kept
            r = w.run(out, "--force-overwrite=yes")
            one_line(r, 2, "'--force-overwrite' takes no value")
    results.check(f"{w.label}: an existing file is replaced only with --force-overwrite, keeping its mode", existing)

    def symlinks(w=w):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            link, real = w.members(out)[0], os.path.join(d, "real")
            with open(real, "w") as f:
                f.write("old")
            os.chmod(real, 0o640)
            os.symlink("real", link)
            r = w.run(out)
            assert r.returncode == 2 and f"'{link}' exists; --force-overwrite" in r.stderr, r
            r = w.run(out, "--force-overwrite")
            assert r.returncode == 0 and r.stderr == "", r
            assert os.path.islink(link) and os.readlink(link) == "real"  # the link kept ...
            assert open(real).read() != "old" and stat.S_IMODE(os.stat(real).st_mode) == 0o640  # ... its target written
            files = sorted(os.listdir(d))
            # a dangling link: refused in one line before anything is read or written, left as it is
            os.remove(real)
            for extra in ((), ("--force-overwrite",)):
                r = w.run(out, *extra, inputs=[os.path.join(d, "missing.json")])
                one_line(r, 2, f"'{link}'", "symbolic link to a missing file")
                assert os.path.islink(link) and not os.path.exists(real)
                assert sorted(os.listdir(d)) == [f for f in files if f != "real"], os.listdir(d)
    results.check(f"{w.label}: a symlink is followed and kept; a dangling one refused in one line", symlinks)

    def read_only(w=w):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            ro = w.members(out)[0]
            with open(ro, "w") as f:
                f.write("keep")
            os.chmod(ro, 0o444)
            r = w.run(out, "--force-overwrite")
            if os.geteuid() == 0:  # root may write any file, as `>` would: replaced, still 0444
                assert r.returncode == 0 and open(ro).read() != "keep", r
            else:  # the permission `>` would need: --force-overwrite does not override it
                one_line(r, 2, f"'{ro}'", "read-only")
                assert open(ro).read() == "keep" and os.listdir(d) == [os.path.basename(ro)]
            assert stat.S_IMODE(os.stat(ro).st_mode) == 0o444
            if os.geteuid() == 0:  # the refusal too, as an ordinary user (nobody) owning a 0444 file
                os.chmod(d, 0o777)
                with open(ro, "w") as f:
                    f.write("keep")
                os.chown(ro, 65534, 65534)
                before = sorted(os.listdir(d))

                def nobody():
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                r = w.run(out, "--force-overwrite", preexec_fn=nobody)
                one_line(r, 2, f"'{ro}'", "read-only")
                assert open(ro).read() == "keep" and sorted(os.listdir(d)) == before, os.listdir(d)
    results.check(f"{w.label}: a read-only file is refused (unless root), its mode kept either way", read_only)

    def fifos(w=w):
        with tempfile.TemporaryDirectory() as d:
            # a set's PREFIX that is a FIFO is one stream, as stdout; a single output is the FIFO itself
            fifo = os.path.join(d, "pipe")
            os.mkfifo(fifo)
            t0 = time.monotonic()
            r = w.run(fifo)
            one_line(r, 2, f"'{fifo}'", "a FIFO with no reader")
            assert time.monotonic() - t0 < SLOW / 2
            assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(d) == ["pipe"]
            got = []
            reader = threading.Thread(target=read_fifo, args=(fifo, got))
            reader.start()
            for _ in range(SLOW * 10):  # until the reader has its end open
                r = w.run(fifo)
                if r.returncode == 0 or "no reader" not in r.stderr:
                    break
                time.sleep(0.1)
            reader.join(SLOW)
            assert r.returncode == 0 and not reader.is_alive() and len(got) == 1, r
            assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(d) == ["pipe"], os.listdir(d)
            ref = w.stdout_reference()
            if ref is not None:
                assert got[0].decode() == ref
            else:
                assert got[0].startswith(b"<!DOCTYPE html>") and got[0].rstrip().endswith(b"</html>"), got[0][:80]
    results.check(f"{w.label}: a FIFO is written through; without a reader refused at once", fifos)

    def devices(w=w):
        before = sorted(os.listdir("/dev"))
        with tempfile.TemporaryDirectory() as d:
            r = w.run("/dev/null", cwd=d)  # no --force-overwrite needed: nothing is replaced
            assert r.returncode == 0 and r.stderr == "", r
            assert os.listdir(d) == [] and sorted(os.listdir("/dev")) == before, "a file appeared beside /dev/null"
            r = w.run("/dev/full")
            one_line(r, 1, "'/dev/full'", "No space left on device")
            # /dev/stdout: the descriptor itself, a pipe here ...
            r = w.run("/dev/stdout")
            assert r.returncode == 0 and r.stderr == "", r
            ref = w.stdout_reference()
            if ref is not None:
                assert r.stdout == ref
            else:
                assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>"), r.stdout[-80:]
            # ... or a regular file: written at its offset, never replaced (the same inode, no --force-overwrite)
            log = os.path.join(d, "log")
            with open(log, "w") as f:
                f.write("head\n")
            ino = os.stat(log).st_ino
            with open(log, "a") as f:
                r = subprocess.run([*WRAP, flagtrace, w.cmd, *w.args, "-o", "/dev/stdout", TRACE], stdout=f,
                                   stderr=subprocess.PIPE, text=True, timeout=SLOW)
            assert r.returncode == 0 and r.stderr == "", r
            text = open(log).read()
            assert os.stat(log).st_ino == ino and text.startswith("head\n") and len(text) > 100, text[:80]
            if ref is not None:
                assert text == "head\n" + ref
    results.check(f"{w.label}: /dev/null, /dev/full and /dev/stdout are written through, nothing created", devices)

    def refused_kinds(w=w):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            target = w.members(out)[0]
            os.mkdir(target)
            one_line(w.run(out, "--force-overwrite"), 2, f"'{target}'", "a directory")
            os.rmdir(target)
            s = socket.socket(socket.AF_UNIX)
            s.bind(target)
            one_line(w.run(out, "--force-overwrite"), 2, f"'{target}'", "a socket")
            s.close()
            assert os.listdir(d) == [os.path.basename(target)], os.listdir(d)
            os.remove(target)
            blk = next((os.path.join("/dev", n) for n in sorted(os.listdir("/dev"))
                        if stat.S_ISBLK(os.lstat(os.path.join("/dev", n)).st_mode)), None)
            if blk and w.members(out) == [out]:
                one_line(w.run(blk, "--force-overwrite"), 2, f"'{blk}'", "a block device")
            # a missing directory, and a name with a newline and ESC: still one line, shown escaped
            bad = os.path.join(d, "no\ndir", "x\x1b[2J")
            r = w.run(bad)
            one_line(r, 2, "no\\ndir", "x\\x1b[2J", "No such file or directory")
            assert "\x1b" not in r.stderr
    results.check(f"{w.label}: directories, sockets, block devices and missing directories refused in one line",
                  refused_kinds)

    def too_large(w=w):
        """RLIMIT_FSIZE makes any file past the limit fail with EFBIG: a full disk for one file,
        without root. The kernels report is large; the other members are small and complete."""
        with tempfile.TemporaryDirectory() as d:
            src = big_trace(d)
            out = os.path.join(d, "out")

            def limit():
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG rather than the signal
                resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
            r = w.run(out, inputs=[src], preexec_fn=limit)
            one_line(r, 1, "File too large")
            assert os.listdir(d) == ["big.json"], os.listdir(d)  # none of the set, no temporary file
            r = w.run(out, inputs=[src])
            assert r.returncode == 0 and os.path.getsize(w.members(out)[0]) > 16384, r
    results.check(f"{w.label}: a write that fails leaves nothing (a set: none of its files)", too_large)


for w in WRITERS:
    def no_temporary_while_reading(w=w):
        """The outputs are checked before the input is read but created after it: a long
        read that a ^C ends leaves no temporary file behind."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            with open(os.path.join(data, "torch_cuda_2.11_reference.json.gz"), "rb") as f:
                text = f.read()
            p = subprocess.Popen([*WRAP, flagtrace, w.cmd, *w.args, "-o", out, "-"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            half = len(text) // 2
            p.stdin.write(text[:half])
            p.stdin.flush()
            deadline = time.monotonic() + SLOW
            while time.monotonic() < deadline:  # until it has read the half it was given
                with open(f"/proc/{p.pid}/io") as io:
                    if int(next(line for line in io if line.startswith("rchar:")).split()[1]) >= half:
                        break
                time.sleep(0.01)
            time.sleep(0.05)
            assert os.listdir(d) == [], os.listdir(d)
            p.stdin.write(text[half:])
            p.stdin.close()
            assert p.wait(SLOW) == 0, p.stderr.read()
            assert sorted(os.listdir(d)) == sorted(os.path.basename(m) for m in w.members(out))
    results.check(f"{w.label}: nothing is created while the input is read", no_temporary_while_reading)


@results.tmp_case("stats -f csv -o PREFIX: a full disk leaves none of the set (a 16 KiB tmpfs)")
def _(d):
    with small_tmpfs(d) as mnt:
        src = big_trace(d)
        r = WRITERS[1].run(os.path.join(mnt, "out"), inputs=[src])
        one_line(r, 1, "No space left on device")
        assert os.listdir(mnt) == [], os.listdir(mnt)


@results.tmp_case("stats -f csv -o /dev/null: the set written through to the device, nothing created")
def _(d):
    r = WRITERS[1].run("/dev/null", cwd=d)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == "", r
    assert not [n for n in os.listdir("/dev") if n.startswith("null_")]
    r = WRITERS[1].run("/dev/stdout")
    assert r.returncode == 0 and r.stdout.startswith("# files\n") and "\n# kernels\n" in r.stdout, r.stdout[:200]


@results.tmp_case("report -o /dev/stdout: the page alone on stdout (no 'wrote' line in it)")
def _(d):
    r = WRITERS[2].run("/dev/stdout")
    assert r.returncode == 0 and "flagtrace report: wrote" not in r.stdout, r.stdout[-200:]
    out = os.path.join(d, "r.html")
    r = WRITERS[2].run(out)
    assert r.returncode == 0 and r.stdout == f"flagtrace report: wrote {out}\n", r


results.finish()

"""End-to-end: gzip traces (every deflate backend, with and without worker threads,
and multi-member files) read back by gzip -d, Python's gzip and `flagtrace stats`,
byte for byte the plain JSON written from the same session."""
import gzip
import os
import subprocess
import sys
import tempfile
import zlib

writer, ft = sys.argv[1], sys.argv[2]
passed = 0


def check(cond, what):
    global passed
    assert cond, what
    passed += 1


def stats(path):
    r = subprocess.run([ft, "stats", path], capture_output=True, text=True)
    assert r.returncode == 0, r
    return r.stdout.replace(path, "TRACE")


with tempfile.TemporaryDirectory() as tmp:
    for deflate in ("zlib", "isal"):
        for threads in ("0", "3"):
            d = os.path.join(tmp, f"{deflate}-{threads}")
            os.mkdir(d)
            env = dict(os.environ, FLAGOS_TRACE_DEFLATE=deflate, FLAGOS_TRACE_GZIP_THREADS=threads)
            # 40 k launches: a ~20 MB JSON, dozens of blocks
            r = subprocess.run([writer, "--write", d, "40000"], env=env, capture_output=True, text=True)
            assert r.returncode == 0, r
            plain = open(os.path.join(d, "trace.json"), "rb").read()
            gz = os.path.join(d, "trace.json.gz")
            data = open(gz, "rb").read()
            what = f"{deflate}, {threads} threads"
            check(len(plain) > 8 * 512 * 1024 and len(data) < len(plain) // 4, what)
            check(subprocess.run(["gzip", "-dc", gz], capture_output=True).stdout == plain, f"gzip -d: {what}")
            check(gzip.decompress(data) == plain, f"Python gzip: {what}")
            # one member, nothing after it (readers that stop after a member see it all)
            z = zlib.decompressobj(31)
            check(z.decompress(data) == plain and z.eof and z.unused_data == b"", f"one member: {what}")
            check(stats(gz) == stats(os.path.join(d, "trace.json")), f"stats: {what}")
    # a multi-member file (gzip(1) concatenations, other writers): the same text
    cuts = [0, 1, len(plain) // 3, len(plain) // 3 + 7, len(plain)]
    multi = os.path.join(tmp, "multi.json.gz")
    with open(multi, "wb") as f:
        for a, b in zip(cuts, cuts[1:]):
            f.write(gzip.compress(plain[a:b], 1))
    check(subprocess.run(["gzip", "-dc", multi], capture_output=True).stdout == plain, "gzip -d: multi-member")
    check(gzip.decompress(open(multi, "rb").read()) == plain, "Python gzip: multi-member")
    check(stats(multi) == stats(os.path.join(tmp, "isal-3", "trace.json")), "stats: multi-member")
print(f"{passed} passed, 0 failed")

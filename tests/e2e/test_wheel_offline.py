"""The wheel `make` builds (cmake/wheel.cmake, scripts/build_wheel.py; issue 52): one
flagtrace-VERSION-py3-none-linux_ARCH.whl in BUILD/dist, its RECORD true to its files, that every
python3 here with pip (this one, and Debian's /usr/bin/python3) installs offline with
`pip install --no-deps --no-index --target`, and whose package then reads a committed trace through
its bundled command (flagtrace.analysis.load) and runs the `flagtrace` console script.
usage: test_wheel_offline.py SOURCE_DIR BUILD_DIR VERSION"""
import base64
import glob
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import zipfile

src, build, version = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
passed = 0


def ok(cond, what):
    global passed
    if not cond:
        sys.exit(f"FAIL: {what}")
    passed += 1


wheels = glob.glob(os.path.join(build, "dist", "*.whl"))
name = f"flagtrace-{version}-py3-none-linux_{platform.machine().lower()}.whl"
ok([os.path.basename(w) for w in wheels] == [name], f"BUILD/dist holds {wheels}, not {name}")
whl = wheels[0]
with zipfile.ZipFile(whl) as z:
    names = z.namelist()
    info = f"flagtrace-{version}.dist-info"
    for need in ("flagtrace/__init__.py", "flagtrace/analysis.py", "flagtrace/_version.py",
                 "flagtrace/lib/libflagtrace.so.0", "flagtrace/bin/flagtrace", f"{info}/METADATA", f"{info}/WHEEL",
                 f"{info}/RECORD", f"{info}/entry_points.txt", f"{info}/LICENSE"):
        ok(need in names, f"the wheel lacks {need}")
    ok(z.read(f"{info}/WHEEL").decode().splitlines()[-1] == f"Tag: py3-none-linux_{platform.machine().lower()}",
       "the WHEEL tag")
    ok(z.getinfo("flagtrace/bin/flagtrace").external_attr >> 16 == 0o100755, "flagtrace/bin/flagtrace not executable")
    record = {}
    for line in z.read(f"{info}/RECORD").decode().splitlines():
        path, digest, size = line.rsplit(",", 2)
        record[path] = (digest, size)
    ok(sorted(record) == sorted(names), "RECORD does not list exactly the wheel's files")
    for n in names:
        if n.endswith("/RECORD"):
            continue
        data = z.read(n)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        ok(record[n] == (want, str(len(data))), f"RECORD's hash or size of {n}")
    meta = z.read(f"{info}/METADATA").decode()
    ok(meta.startswith(f"Metadata-Version: 2.1\nName: flagtrace\nVersion: {version}\n"), "METADATA's head")
    ok(z.read(f"{info}/entry_points.txt").decode() == "[console_scripts]\nflagtrace = flagtrace._cli:main\n",
       "entry_points.txt")

pythons = [sys.executable] + [p for p in ("/usr/bin/python3",) if os.path.exists(p)]
trace = os.path.join(src, "tests", "data", "sample_h200.json.gz")
ran = 0
for py in dict.fromkeys(os.path.realpath(p) for p in pythons):
    if subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode:
        print(f"{py}: no pip, not tried")
        continue
    with tempfile.TemporaryDirectory() as target:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and not k.startswith("PIP_")}
        r = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q",
                            "--target", target, whl], capture_output=True, text=True, env=env)
        ok(r.returncode == 0, f"{py} -m pip install --target: {r.stderr[-2000:]}")
        env["PYTHONPATH"] = target
        env.pop("FLAGTRACE_EXE", None)
        code = ("import flagtrace, flagtrace.analysis as a\n"
                "s = a.load(__import__('sys').argv[1], reports='gpu')\n"
                "print(flagtrace.__version__, a.find_exe() == __import__('sys').argv[2], s.files[0]['events'])\n")
        r = subprocess.run([py, "-c", code, trace, os.path.join(target, "flagtrace", "bin", "flagtrace")],
                           capture_output=True, text=True, env=env, cwd=target)
        ok(r.returncode == 0, f"{py}: import and load: {r.stderr[-2000:]}")
        ok(r.stdout == f"{version} True 139\n", f"{py}: version, bundled command, events: {r.stdout!r}")
        r = subprocess.run([os.path.join(target, "bin", "flagtrace"), "--version"], capture_output=True, text=True,
                           env=env)
        ok(r.returncode == 0 and r.stdout.startswith(f"flagtrace {version}"), f"{py}: the console script: {r}")
        ran += 1
ok(ran >= 1, "no python3 with pip to install the wheel")
print(f"{passed} passed, 0 failed ({ran} python(s))")

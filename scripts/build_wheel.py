#!/usr/bin/env python3
"""Writes the flagtrace Python wheel (py3-none-PLATFORM) from a CMake build, with the standard library only:
no pip, setuptools or wheel, no network. The package (python/flagtrace) carries the build's libflagtrace.so.0 and,
when built, the injection and preload libraries in flagtrace/lib, and the flagtrace command in flagtrace/bin (run by
the `flagtrace` console script; flagtrace.analysis runs it too): the layout setup.py gives its wheel. Nothing in
the package is a Python extension, so one wheel serves every Python 3.
  build_wheel.py --build BUILD --source SRC --plat linux_x86_64 --out DIR
The zip's entries are sorted and dated SOURCE_DATE_EPOCH (else 1980-01-01): the same inputs give the same bytes."""
import argparse
import base64
import hashlib
import os
import re
import sys
import time
import zipfile

SHIP_LIB = ["libflagtrace.so.0", "libflagtrace_inject.so", "libflagtrace_preload.so", "libflagtrace_cuda_shim.so",
            "libflagtrace_cupti_guard.so"]


def fail(msg):
    sys.exit(f"build_wheel: {msg}")


def toml_fields(text):
    """The few pyproject.toml [project] fields the metadata needs (tomllib is 3.11+: this reads the file's own
    simple layout: one key = "string" or a list of strings, and the [project.urls] table)."""
    out, section = {}, None
    lines = iter(text.splitlines())
    for line in lines:
        line = line.split(" #")[0].rstrip() if not line.lstrip().startswith("#") else ""
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            section = m[1]
            continue
        m = re.match(r'^([\w-]+)\s*=\s*(.*)$', line)
        if not m:
            continue
        key, value = m[1], m[2]
        if value.startswith("[") and not value.endswith("]"):
            for more in lines:
                value += more.strip()
                if more.strip().endswith("]"):
                    break
        out[f"{section}.{key}"] = value
    return out


def strings(value):
    return re.findall(r'"([^"]*)"', value)


def metadata(src, version):
    with open(os.path.join(src, "python", "pyproject.toml")) as f:
        t = toml_fields(f.read())
    with open(os.path.join(src, "python", "README.md")) as f:
        readme = f.read()
    author = re.search(r'name\s*=\s*"([^"]*)"', t["project.authors"])[1]
    licence = re.search(r'text\s*=\s*"([^"]*)"', t["project.license"])[1]
    lines = ["Metadata-Version: 2.1", "Name: flagtrace", f"Version: {version}",
             f"Summary: {strings(t['project.description'])[0]}", f"Author: {author}", f"License: {licence}"]
    lines += [f"Project-URL: {k.split('.', 2)[2]}, {strings(v)[0]}" for k, v in t.items() if k.startswith("project.urls.")]
    lines += [f"Classifier: {c}" for c in strings(t["project.classifiers"])]
    lines.append(f"Requires-Python: {strings(t['project.requires-python'])[0]}")
    for k, v in t.items():  # extras: flagtrace[torch]
        if k.startswith("project.optional-dependencies."):
            extra = k.split(".", 2)[2]
            lines.append(f"Provides-Extra: {extra}")
            lines += [f'Requires-Dist: {d} ; extra == "{extra}"' for d in strings(v)]
    lines += ["License-File: LICENSE", "Description-Content-Type: text/markdown", "", readme]
    scripts = {k.split(".", 2)[2]: strings(v)[0] for k, v in t.items() if k.startswith("project.scripts.")}
    return "\n".join(lines), scripts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the CMake build directory (libflagtrace.so.0, flagtrace)")
    ap.add_argument("--source", required=True, help="the repository (python/, CMakeLists.txt, LICENSE)")
    ap.add_argument("--plat", required=True, help="the platform tag, e.g. linux_x86_64")
    ap.add_argument("--out", required=True, help="the directory the wheel is written to")
    a = ap.parse_args()
    with open(os.path.join(a.source, "CMakeLists.txt")) as f:
        version = re.search(r"project\(flagtrace VERSION ([0-9.]+)", f.read())[1]
    meta, scripts = metadata(a.source, version)
    files = []  # (name in the wheel, bytes, executable)
    pkg = os.path.join(a.source, "python", "flagtrace")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") and name != "_version.py":
            with open(os.path.join(pkg, name), "rb") as f:
                files.append((f"flagtrace/{name}", f.read(), False))
    files.append(("flagtrace/_version.py",
                  f'"""Written by scripts/build_wheel.py from CMakeLists.txt."""\n__version__ = "{version}"\n'.encode(),
                  False))
    exe = os.path.join(a.build, "flagtrace")
    if not os.path.isfile(exe):
        fail(f"no {exe}: build the flagtrace command first")
    for name in SHIP_LIB:
        path = os.path.join(a.build, name)
        if os.path.exists(path):  # only libflagtrace.so.0 on a cpu build
            with open(path, "rb") as f:  # a link (the SONAME's) becomes the file
                files.append((f"flagtrace/lib/{name}", f.read(), False))
    if not any(n == "flagtrace/lib/libflagtrace.so.0" for n, _, _ in files):
        fail(f"no {a.build}/libflagtrace.so.0: build the library first")
    with open(exe, "rb") as f:
        files.append(("flagtrace/bin/flagtrace", f.read(), True))
    info = f"flagtrace-{version}.dist-info"
    with open(os.path.join(a.source, "LICENSE"), "rb") as f:
        files.append((f"{info}/LICENSE", f.read(), False))
    files.append((f"{info}/METADATA", meta.encode(), False))
    files.append((f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: flagtrace scripts/build_wheel.py\n"
                                    f"Root-Is-Purelib: false\nTag: py3-none-{a.plat}\n").encode(), False))
    files.append((f"{info}/entry_points.txt",
                  ("[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode(), False))
    files.append((f"{info}/top_level.txt", b"flagtrace\n", False))
    record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
              for n, d, _ in files]
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), False))
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(a.out, exist_ok=True)
    whl = os.path.join(a.out, f"flagtrace-{version}-py3-none-{a.plat}.whl")
    tmp = whl + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, executable in files:  # RECORD last, as the spec recommends
            zi = zipfile.ZipInfo(name, date)
            zi.external_attr = (0o100755 if executable else 0o100644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, whl)
    print(whl)


if __name__ == "__main__":
    main()

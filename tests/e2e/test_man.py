"""The man pages: flagtrace(1) and one flagtrace-CMD(1) per command the main --help lists.
Each holds its --help text whole (paragraph by paragraph, in the section its heading names),
has NAME, SYNOPSIS, DESCRIPTION, OPTIONS, ENVIRONMENT, EXIT STATUS, FILES, EXAMPLES and
SEE ALSO in that order and a date, renders in groff without a warning; flagtrace(1) names
every FLAGTRACE_*/FLAGOS_* variable the sources read; the date follows SOURCE_DATE_EPOCH.
usage: test_man.py FLAGTRACE_EXE MAN_DIR SOURCE_DIR CMAKE GEN_MAN"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

exe, man_dir, src, cmake, gen = sys.argv[1:6]
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "FILES", "EXAMPLES",
            "SEE ALSO"]
HEADINGS = {"SYNOPSIS": ["usage: "], "OPTIONS": ["options:\n"], "ENVIRONMENT": ["environment:\n"],
            "EXIT STATUS": ["exit status: "], "EXAMPLES": ["example: ", "example:\n", "examples:\n"],
            "DESCRIPTION": [""]}


def help_text(*args):
    return subprocess.run([exe, *args, "--help"], capture_output=True, text=True, check=True).stdout


def unroff(block):
    lines = [line[2:] if line.startswith("\\&") else line for line in block.split("\n")]
    return "\n".join(lines).replace("\\-", "-").replace("\\e", "\\")


def sections_of(roff):
    """(title, body) in order."""
    parts = re.split(r'^\.SH (?:"([^"]+)"|(.+))\n', roff, flags=re.M)
    return [(parts[i] or parts[i + 1], parts[i + 2]) for i in range(1, len(parts), 3)]


main = help_text()
cmds = re.findall(r"^  ([a-z]+) ", main.split("\ncommands:\n")[1].split("\n\n")[0], re.M)
assert {"record", "stats", "report", "diff", "capture"} <= set(cmds), cmds
pages = {"flagtrace": (main, None)}
pages.update({f"flagtrace-{c}": (help_text(c), c) for c in cmds})
assert sorted(f for f in os.listdir(man_dir) if f.endswith(".1")) == sorted(p + ".1" for p in pages), \
    os.listdir(man_dir)

for name, (want, cmd) in pages.items():
    path = os.path.join(man_dir, name + ".1")
    roff = open(path).read()
    th = re.search(r'^\.TH (\S+) 1 "(\d{4}-\d\d-\d\d)" "flagtrace [0-9.]+" "User Commands"$', roff, re.M)
    assert th and th[1] == name.upper(), (name, roff[:300])
    secs = sections_of(roff)
    titles = [t for t, _ in secs]
    assert [t for t in titles if t in SECTIONS] == SECTIONS, (name, titles)
    for t, body in secs:
        assert body.strip(), (name, t, "empty section")
    if cmd:  # NAME is the main help's one-line summary of the command
        summary = re.search(rf"^  {cmd} .*?  +(\S.*)$", main, re.M)[1]
        assert unroff(dict(secs)["NAME"]) == f"{name} - {summary}\n", dict(secs)["NAME"]
    # the --help text whole: paragraph N, less its K-character heading, in the section the heading names
    paras = [p + "\n" for p in want[:-1].split("\n\n")] if want.endswith("\n") else want.split("\n\n")
    seen = {}
    for title, body in secs:
        for n, k, block in re.findall(r'^\.\\" help (\d+) (\d+)\n\.nf\n(.*?)^\.fi\n', body, re.S | re.M):
            n, k = int(n), int(k)
            assert n not in seen, (name, n)
            seen[n] = True
            assert paras[n][:k] in HEADINGS[title], (name, title, paras[n][:k])
            assert unroff(block) == paras[n][k:], (name, n, unroff(block), paras[n][k:])
    assert sorted(seen) == list(range(len(paras))), (name, sorted(seen), len(paras))
    # every option --help lists is in OPTIONS
    options = dict(secs)["OPTIONS"].replace("\\-", "-")
    for opt in set(re.findall(r"^ +(?:-[a-zA-Z], )?(--[a-z-]+)", want, re.M)):
        assert opt in options, (name, opt)
    # SEE ALSO names every other page
    see = dict(secs)["SEE ALSO"].replace("\\-", "-")
    for other in pages:
        if other != name:
            assert f".BR {other} (1)" in see, (name, other, see)
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, (name, r)

# flagtrace(1)'s ENVIRONMENT names every FLAGTRACE_*/FLAGOS_* variable the sources read
env = dict(sections_of(open(os.path.join(man_dir, "flagtrace.1")).read()))["ENVIRONMENT"]
names = set()
for top in ("src", "python/flagtrace"):
    for d, _, files in os.walk(os.path.join(src, top)):
        for f in files:
            if f.endswith((".c", ".h", ".cc", ".cpp", ".py")):
                names |= set(re.findall(r'"((?:FLAGTRACE|FLAGOS)_[A-Z0-9_]+)"', open(os.path.join(d, f)).read()))
assert len(names) >= 25, sorted(names)
missing = sorted(n for n in names if n not in env)
assert not missing, f"flagtrace(1) ENVIRONMENT lacks {missing}"

# the date: SOURCE_DATE_EPOCH's when set, the same bytes from two runs
outs = []
for _ in range(2):
    d = tempfile.mkdtemp()
    subprocess.run([cmake, f"-DGEN={gen}", f"-DEXE={exe}", "-DVERSION=9.9.9", f"-DSRC={src}", f"-DOUTDIR={d}/man",
                    "-P", os.path.join(src, "cmake", "gen_man.cmake")], check=True,
                   env={**os.environ, "SOURCE_DATE_EPOCH": "86400"})
    outs.append({f: open(os.path.join(d, "man", f)).read() for f in os.listdir(os.path.join(d, "man"))})
    shutil.rmtree(d)
assert outs[0] == outs[1] and '.TH FLAGTRACE 1 "1970-01-02" "flagtrace 9.9.9"' in outs[0]["flagtrace.1"], outs[0].keys()
# a command added to the main --help's list gets its page, every section there, with no .roff yet
with tempfile.TemporaryDirectory() as d:
    fake = os.path.join(d, "flagtrace")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\ncase \"$1\" in\n"
                "--help) printf 'usage: flagtrace <command>\\n\\ncommands:\\n  zap [options] FILE   zap a trace\\n"
                "\\noptions:\\n  -h, --help  show this help\\n' ;;\n"
                "zap) printf 'usage: flagtrace zap FILE\\n\\nZaps a trace.\\n\\noptions:\\n"
                "  -n, --dry-run  change nothing\\n' ;;\nesac\n")
    os.chmod(fake, 0o755)
    os.mkdir(os.path.join(d, "extras"))
    os.mkdir(os.path.join(d, "man"))
    subprocess.run([gen, fake, "1.0", "2000-01-01", os.path.join(d, "extras"), os.path.join(d, "man")], check=True)
    assert sorted(os.listdir(os.path.join(d, "man"))) == ["flagtrace-zap.1", "flagtrace.1"], os.listdir(d)
    zap = open(os.path.join(d, "man", "flagtrace-zap.1")).read()
    titles = [t for t, _ in sections_of(zap)]
    assert titles == SECTIONS, titles
    assert unroff(dict(sections_of(zap))["NAME"]) == "flagtrace-zap - zap a trace\n", zap
    assert "\\-\\-dry\\-run" in dict(sections_of(zap))["OPTIONS"], zap
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(d, "man", "flagtrace-zap.1")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r
print("1 passed, 0 failed")

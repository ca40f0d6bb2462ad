"""flagtrace(1) says exactly what --help says: each no-fill block of the man page,
unescaped, is one --help text (the main one, then each command's), and groff renders
it without a warning."""
import re
import shutil
import subprocess
import sys

exe, man = sys.argv[1], sys.argv[2]


def help_text(*args):
    return subprocess.run([exe, *args, "--help"], capture_output=True, text=True, check=True).stdout


main = help_text()
cmds = re.findall(r"^  ([a-z]+) ", main.split("\ncommands:\n")[1].split("\n\n")[0], re.M)
assert cmds == ["record", "stats"] or len(cmds) >= 2, cmds
want = [main] + [help_text(c) for c in cmds]

roff = open(man).read()
blocks = re.findall(r"^\.nf\n(.*?)^\.fi\n", roff, re.S | re.M)


def unroff(block):
    lines = [line[2:] if line.startswith("\\&") else line for line in block.split("\n")]
    return "\n".join(lines).replace("\\-", "-").replace("\\e", "\\")


got = [unroff(b) for b in blocks]
assert len(got) == len(want), f"{man}: {len(got)} help blocks, --help gives {len(want)}"
for g, w, name in zip(got, want, ["flagtrace"] + cmds):
    assert g == w, f"{man} differs from `flagtrace {name} --help`:\n{g!r}\n!=\n{w!r}"
for c in cmds:
    assert f'.SH "FLAGTRACE {c.upper()}"' in roff, c
assert re.search(r"^\.TH FLAGTRACE 1 ", roff, re.M) and "\n.SH NAME\nflagtrace \\- " in roff

if shutil.which("groff"):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", man], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r
print("1 passed, 0 failed")

"""Every shell example of README.md and docs/*.md that needs no GPU runs, and succeeds.

A fenced block's info string says what it is (CONTRIBUTING.md states the rule):
  ```sh         runs here: from a copy of the repository root (its files linked, what a
                block writes stays in a temporary directory), `flagtrace` on PATH being
                the build's, each page's blocks in order in one directory, `bash -e -o pipefail`
  ```sh gpu     needs an accelerator: not run
  ```sh no-ci   not run here for another reason, which the paragraph right after the
                block gives: it starts "(Not run by the documentation check:"
Any other shell fence (bash, shell, console) or word after sh is an error, so that no
example escapes the check by its spelling. The README itself stays at most 300 lines, with
the two set-up commands, and no page points into ../shared/ (a clone lacks it).
usage: test_doc_examples.py FLAGTRACE_EXE SOURCE_DIR [PAGE...]   (default: every page)"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

exe, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
pages = sys.argv[3:] or [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
SHELLS = {"bash", "shell", "console", "shell-session", "zsh"}
NO_CI_REASON = "(Not run by the documentation check:"


def blocks(path):
    """(line number, info words, text, the first non-empty line after the block) per fence."""
    lines = open(path).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(```+)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m[1], m[2].split(), i + 1
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        after = next((x for x in lines[j + 1:] if x.strip()), "")
        out.append((start, info, "\n".join(lines[i + 1:j]) + "\n", after))
        i = j + 1
    return out


def sandbox():
    """A directory that reads as the repository root; what is written there stays there."""
    d = tempfile.mkdtemp(prefix="ft-doc-")
    for name in os.listdir(src):
        if not name.startswith(".") and not name.startswith("build"):
            os.symlink(os.path.join(src, name), os.path.join(d, name))
    return d


env = {**os.environ, "PATH": os.path.dirname(exe) + os.pathsep + os.environ.get("PATH", "")}
env.pop("FLAGTRACE_STATS_THREADS", None)
errors, ran, skipped = [], 0, {"gpu": 0, "no-ci": 0}
for page in pages:
    rel = os.path.relpath(page, src)
    work = None
    for line, info, text, after in blocks(page):
        if not info:
            continue
        lang, words = info[0], info[1:]
        where = f"{rel}:{line}"
        if lang in SHELLS:
            errors.append(f"{where}: a shell example is fenced as ```{lang}: use ```sh (and gpu or no-ci)")
            continue
        if lang != "sh":
            continue
        if words not in ([], ["gpu"], ["no-ci"]):
            errors.append(f"{where}: ```sh takes nothing, gpu or no-ci after it, not {' '.join(words)!r}")
            continue
        if words == ["no-ci"] and not after.startswith(NO_CI_REASON):
            errors.append(f"{where}: a ```sh no-ci block is followed by a paragraph starting {NO_CI_REASON!r}")
        if words:
            skipped[words[0]] += 1
            continue
        work = work or sandbox()
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env, capture_output=True,
                           text=True, timeout=120)
        ran += 1
        if r.returncode:
            errors.append(f"{where}: exit {r.returncode}\n{text}--- stderr:\n{r.stderr[-2000:]}")
    if work:
        shutil.rmtree(work)

if not sys.argv[3:]:  # the README stays a front door: short, the two set-up commands, no path a clone lacks
    readme = open(os.path.join(src, "README.md")).read()
    if readme.count("\n") > 300:
        errors.append(f"README.md: {readme.count(chr(10))} lines, more than 300: move the manual's text to docs/")
    setup = [b for _, info, b, _ in blocks(os.path.join(src, "README.md")) if info[:1] == ["sh"]]
    if not any(re.search(r"^make demo\b", b, re.M) and re.search(r"^make test\b", b, re.M) for b in setup):
        errors.append("README.md: no sh block with the two set-up commands, make demo and make test")
    for page in pages:
        if "../shared/" in open(page).read():
            errors.append(f"{os.path.relpath(page, src)}: points into ../shared/, which a clone does not have")

for e in errors:
    print("FAIL", e, file=sys.stderr)
print(f"doc examples: {ran} run, {skipped['gpu']} need a GPU, {skipped['no-ci']} not run in CI (reason given)")
assert ran >= (1 if sys.argv[3:] else 10), f"only {ran} examples ran: the check would prove nothing"
if errors:
    sys.exit(1)
print("1 passed, 0 failed")

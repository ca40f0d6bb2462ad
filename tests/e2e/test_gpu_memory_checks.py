"""The GPU memory checks' reading of flagtrace's output (tests/gpu/memory_checks.py) without a GPU: traces
in the programs' shape written by hand (its synth mode, answers worked out by hand) checked with the real
binary, so that a renamed JSON field of `stats -r ops`/`-r memory` or `advise` fails here, not on the GPU;
then the leak check's fallback (stats -r memory's leak candidates, as when advise has no leak finding).
Usage: test_gpu_memory_checks.py FLAGTRACE"""
import io
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
import memory_checks  # noqa: E402


def main():
    ft = os.path.abspath(sys.argv[1])
    prog = os.path.join(HERE, "..", "gpu", "memory_checks.py")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, prog, "synth", d], check=True)
        r = subprocess.run([sys.executable, prog, "--flagtrace", ft, "--out-dir", d, "--check"],
                           capture_output=True, text=True)
        print(r.stdout, end="")
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("PASS", "FAIL", "SKIP"))]
        want = 12  # (a) 2 x 2, (b) 2, (c) cupy 2 + jax 2, (d) 2
        if r.returncode or len(lines) != want or any(not ln.startswith("PASS") for ln in lines):
            sys.exit(f"memory checks on the synthetic traces: exit {r.returncode}, {len(lines)} lines (want {want} "
                     f"PASS)\n{r.stderr[-2000:]}")
        memory_checks.FIELDS["leak_rules"] = ("no such rule",)  # advise without a leak finding
        c = memory_checks.Checks()
        out = io.StringIO()
        with redirect_stdout(out):
            for mode in ("profile", "record"):
                memory_checks.check_leak(c, ft, d, mode)
        print(out.getvalue(), end="")
        if (c.passed, c.failed) != (2, 0) or "leak candidates at" not in out.getvalue():
            sys.exit(f"the leak check's fallback: {c.passed} passed, {c.failed} failed")
    print("gpu memory checks on synthetic traces: 14 of 14")


if __name__ == "__main__":
    main()

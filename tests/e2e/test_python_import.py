"""`import flagtrace.torch` where torch (or a GPU) is missing: one line, no traceback."""
import os
import subprocess
import sys

python_dir = sys.argv[1]
env = dict(os.environ, PYTHONPATH=python_dir)
r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None\n"
                    "import flagtrace.torch as ft; print(ft.available)"], capture_output=True, text=True, env=env)
assert r.returncode == 0, r
assert r.stdout == "False\n", r.stdout
assert r.stderr == "flagtrace.torch: PyTorch is not installed: nothing to profile\n", r.stderr
print("1 passed, 0 failed")

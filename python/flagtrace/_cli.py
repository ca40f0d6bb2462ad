"""The `flagtrace` console command: runs the flagtrace binary this package ships."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "flagtrace")
    if not os.access(exe, os.X_OK):
        sys.exit(f"flagtrace: the bundled command {exe} is missing; reinstall: pip install --no-build-isolation ./python")
    os.execv(exe, [exe, *sys.argv[1:]])

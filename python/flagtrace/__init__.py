"""flagtrace: vendor-neutral GPU activity profiling. `import flagtrace.torch` makes
torch.profiler record device activity through flagtrace; the `flagtrace` command
records and summarizes traces of any program."""

try:
    from ._version import __version__  # written by setup.py from CMakeLists.txt
except ImportError:  # a source checkout on PYTHONPATH: the same number, read directly
    import os as _os
    import re as _re

    try:
        with open(_os.path.join(_os.path.dirname(__file__), "..", "..", "CMakeLists.txt")) as _f:
            __version__ = _re.search(r"project\(flagtrace VERSION ([0-9.]+)", _f.read())[1]
    except (OSError, TypeError):
        __version__ = "unknown"

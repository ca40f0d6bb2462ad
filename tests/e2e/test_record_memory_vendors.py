"""End-to-end, vendors (MSPTI, roctracer): `flagtrace record --inject=preload` records a program's device memory on
the builds whose fake has memory records (MSPTI, roctracer): the [memory] instants and
Memory counter samples of the written trace, key for key, linked to their calls.
usage: test_record_memory.py FLAGTRACE MEMORY_DRIVER FAKE_RUNTIME TRACER"""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, load, xs  # noqa: E402

flagtrace, driver, fake_runtime = (os.path.abspath(a) for a in sys.argv[1:4])
tracer = sys.argv[4]
results = Results()
signal.signal(signal.SIGINT, signal.SIG_DFL)

help_text = subprocess.run([flagtrace, "record", "--help"], capture_output=True, text=True).stdout
RUNTIME = re.findall(r"\b(lib[\w.-]+\.so)\b", help_text.split("preload:")[1].split("(default here")[0])[0]
# MSPTI's allocation records, like its copies, need libmspti loaded at process start
EXTRA_ENV = {"LD_PRELOAD": os.environ["FLAGOS_TRACER_LIBRARY"]} if tracer == "mspti" else {}
CALLS = {"mspti": ("aclrtMalloc", "aclrtFree"), "roctracer": ("hipMalloc", "hipFree")}[tracer]


def record(d, *args):
    rt = os.path.join(d, RUNTIME)  # the fake runtime under the vendor runtime's name
    os.symlink(fake_runtime, rt)
    env = dict(os.environ, FAKE_RUNTIME=rt, **EXTRA_ENV)
    return subprocess.run([flagtrace, "record", "--inject=preload", *args], capture_output=True, text=True, env=env)


@results.tmp_case("record: an allocation, its free and a second allocation become [memory] instants and counters")
def _(d):
    out = os.path.join(d, "mem.json")
    r = record(d, "-o", out, "--", driver)
    assert r.returncode == 0 and r.stdout == "memory_driver: done\n", r
    doc = load(out)
    rt = [e for e in xs(doc, ("privateuse1_runtime",)) if e["name"] in CALLS]
    assert [e["name"] for e in rt] == [CALLS[0], CALLS[1], CALLS[0]], [e["name"] for e in rt]
    assert not [e for e in xs(doc, ("privateuse1_runtime",)) if e["name"] == "hipGetDevice"]  # ours, left out
    mem = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("name") == "[memory]"]
    want = [(0x1000000, 4096, 4096, "alloc"), (0x1000000, -4096, 0, "free"), (0x2000000, 8192, 8192, "alloc")]
    assert len(mem) == 3, mem
    for m, call, (addr, nbytes, total, op) in zip(mem, rt, want):
        assert m["cat"] == "cpu_instant_event" and m["s"] == "t" and m["tid"] == call["tid"], (m, call)
        assert call["ts"] <= m["ts"] <= call["ts"] + call["dur"] + 0.001, (m, call)
        assert m["args"] == {"Device Type": 20, "Device Id": 1, "Addr": addr, "Bytes": nbytes,
                             "Total Allocated": total, "Total Reserved": total,
                             "correlation": call["args"]["correlation"], "Kind": "device", "Op": op}, m
    counters = [e for e in doc["traceEvents"] if e.get("ph") == "C" and e.get("name") == "Memory"]
    assert [(c["pid"], c["args"]) for c in counters] == [(1, {"Allocated": w[2], "Reserved": w[2]}) for w in want], \
        counters


results.finish()

"""End-to-end: `flagtrace record` on a program that is itself a CUPTI client (as JAX's
profiler is), with the fake libcupti under libcupti's soname. The program takes CUPTI
over mid-run and frees every buffer it is handed (one of flagtrace's would abort it):
it must run to its end, record's trace must keep what came before, and record's line
must say from when device activity is missing. Usage: FLAGTRACE CLIENT CLIENT_LINKED"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from trace_checks import Results, check_flows_paired, load, xs  # noqa: E402

flagtrace, client, linked = sys.argv[1:4]
results = Results()
LOST = re.compile(r"^flagtrace: wrote (\S+) \((\d+) events, 0 dropped; device activity after [0-9.]+ s is missing: "
                  r"another CUPTI client \((\S+), calling (\w+)\) took over the cupti activity API; flagtrace "
                  r"stepped aside then, so the program keeps running and its own profiler works\)$", re.M)


def run(prog, d, *record_args, env=None):
    out = os.path.join(d, "t.json")
    return out, subprocess.run([flagtrace, "record", *record_args, "-o", out, "--", prog],
                               capture_output=True, text=True, env=dict(os.environ, **(env or {})))


# memory from records: the tracer holds no callback subscriber, the client's subscription is
# simply made and its first takeover is its buffer callbacks; from callbacks the tracer holds
# CUPTI's one slot, so the client's cuptiSubscribe finds it taken and the tracer steps aside there
for (name, prog), (mem, first) in [(p, m) for p in (("dlopen of libcupti by path (as XLA's loader)", client),
                                                    ("linked against libcupti", linked))
                                   for m in (("records", "cuptiActivityRegisterCallbacks"),
                                             ("callbacks", "cuptiSubscribe"))]:
    @results.tmp_case(f"record --inject=cuda, another CUPTI client ({name}, memory from {mem}): it runs to its end "
                      "with all its buffers and its subscription; the trace keeps what came before and says from "
                      "when the rest is missing")
    def _(d, prog=prog, mem=mem, first=first):
        native = subprocess.run([prog], capture_output=True, text=True,
                                env={k: v for k, v in os.environ.items() if k != "CUDA_INJECTION64_PATH"})
        assert native.returncode == 0 and "of its own" in native.stdout, native
        out, r = run(prog, d, "--inject=cuda", env={"FLAGTRACE_CUPTI_MEMORY": mem})
        assert r.returncode == 0, r  # never an abort
        m = re.fullmatch(r"foreign_client: subscribe ok; (\d+) records in (\d+) buffers of its own\n", r.stdout)
        assert m and int(m[1]) >= 3, r.stdout  # its three kernels reached it
        lines = LOST.findall(r.stderr)
        assert len(lines) == 1, r.stderr
        path, events, who, fn = lines[0]
        assert path == out and fn == first, lines
        assert os.path.basename(who) == os.path.basename(prog), who
        doc = load(out)
        names = [e["name"] for e in xs(doc, ("kernel",))]
        assert names == ["before_takeover"], names
        check_flows_paired(doc)
        meta = doc["flagtrace"]
        assert meta["device_activity_lost_ns"] >= meta["capture_window_ns"][0], meta
        assert "took over the cupti activity API" in meta["device_activity_lost"], meta


@results.tmp_case("record: the libcupti shim and the guard's symbols are there, and only under record")
def _(d):
    lib = os.path.dirname(os.environ["FLAGTRACE_INJECT_LIBRARY"])
    nm = subprocess.run(["nm", "-D", "--defined-only", os.path.join(lib, "libflagtrace_preload.so")],
                        capture_output=True, text=True).stdout
    guarded = sorted(l.split()[-1] for l in nm.splitlines() if " T cupti" in l)
    assert guarded == sorted(["cuptiActivityDisable", "cuptiActivityDisableContext", "cuptiActivityEnable",
                              "cuptiActivityEnableContext", "cuptiActivityRegisterCallbacks",
                              "cuptiActivityRegisterTimestampCallback", "cuptiFinalize", "cuptiSubscribe"]), guarded
    r = subprocess.run(["readelf", "-d", os.path.join(lib, "libflagtrace_cupti_guard.so")], capture_output=True, text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", r.stdout)
    assert needed[:2] == ["libflagtrace_preload.so", "libcupti.so.13"], needed  # the guard first, then CUPTI
    r = subprocess.run([flagtrace, "record", "--inject=cuda", "--", "sh", "-c", 'echo "[$FLAGTRACE_CUPTI_GUARD]"'],
                       capture_output=True, text=True)
    assert re.fullmatch(r"\[/\S+/libflagtrace_cupti_guard\.so\]\n", r.stdout), r


results.finish()

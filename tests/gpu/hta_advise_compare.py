"""The numbers `flagtrace advise` shares with Holistic Trace Analysis, against HTA itself on
the same traces (issue 50): HTA's idle-time breakdown (host wait, kernel wait, other per
stream, get_idle_time_breakdown) and its critical path's length (critical_path_analysis
through the window its own tests use on its test traces, else the whole trace).

  hta_advise_compare.py --hta /path/to/HolisticTraceAnalysis --flagtrace build/flagtrace TRACE...

flagtrace's numbers come from `flagtrace _hta` (the event model's ft__hta_idle_streams and
ft__critical_path_ns). HTA runs with its rounding off (HTA_DISABLE_NS_ROUNDING=1), without
its iteration filter, and its idle breakdown is read before its final round(2). Times then
agree to the ns but for HTA's float64 error (us timestamps as doubles). Kernel launch delay
is compared by tests/gpu/hta_analyses.py (`stats -r launch`). Prints one PASS or FAIL line
per number and a summary line per trace; exits 1 when a number differs, but for the known
differences (KNOWN below: printed as FAIL with their reason).
docs/advise.md "Against HTA" explains each definition and every known difference.
"""
import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import traceback
from contextlib import redirect_stderr, redirect_stdout

NS = 1e-3  # one ns in us

# The windows HTA's tests/test_critical_path_analysis.py analyses, by the trace's path's end:
# (annotation, instance); "" is the whole trace
ALEXNET = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
HTA_CP = {"critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz": (ALEXNET, 1),
          "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": (ALEXNET, 1),
          "critical_path/cuda_event_sync/event_sync_trace.json.gz": ("ProfilerStep", 0),
          "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz": ("", None),
          "critical_path/end_to_end/simple_add/input/trace.json.gz": ("", 0),
          "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": ("ProfilerStep", 1),
          "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": ("ProfilerStep", 1)}


# Differences docs/advise.md "Against HTA" explains, by the trace's path's end: reported as
# FAIL with the reason, left out of the exit status
KNOWN = {"critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz":
         "cudaStreamWaitEvent edges need the sync's wait_on_* args, which the event model does not hold",
         "critical_path/cuda_event_sync/event_sync_trace.json.gz":
         "cudaEventSynchronize edges need the sync's wait_on_* args, which the event model does not hold",
         "mtia_inference_trace/mtia_inference_rank_0.json.gz":
         "HTA's graph leaves mtia_runtime calls out (it names CUDA's categories only); ours has every runtime's"}


def known(trace):
    return next((why for tail, why in KNOWN.items() if trace.replace(os.sep, "/").endswith(tail)), "")


def cp_window(trace):
    for tail, w in HTA_CP.items():
        if trace.replace(os.sep, "/").endswith(tail):
            return w
    return "", None


def hta_run(hta_path, trace, annotation, instance):
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    sys.path.insert(0, hta_path)
    import logging
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis
    logging.getLogger("hta").setLevel(logging.CRITICAL)
    logging.getLogger().setLevel(logging.CRITICAL)
    if not hasattr(Trace, "_ft_unfiltered"):  # every event, as flagtrace analyses them
        Trace._filter_irrelevant_gpu_kernels = lambda self, *a, **k: None
        Trace._ft_unfiltered = True
    if not hasattr(BreakdownAnalysis, "_ft_raw"):  # each stream's breakdown before round(2)
        orig = BreakdownAnalysis._analyze_idle_time_for_stream.__func__

        def keep(cls, stream, *a, **k):
            res = orig(cls, stream, *a, **k)
            BreakdownAnalysis._ft_raw.append(res[0].copy())
            return res
        BreakdownAnalysis._analyze_idle_time_for_stream = classmethod(keep)
    BreakdownAnalysis._ft_raw = []
    out = {}
    with tempfile.TemporaryDirectory() as d:
        os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            t = TraceAnalysis(trace_dir=d)
            rank = sorted(t.t.traces)[0]
            df = t.t.get_trace(rank)
            out["max_ts"] = float(t.t.min_ts + df["end"].max()) if "end" in df else 0.0
            out["float_ts"] = df["ts"].dtype.kind == "f"
            out["n_gpu"] = int((df["stream"] != -1).sum())
            try:
                t.get_idle_time_breakdown(ranks=[rank], visualize=False)
            except Exception as e:  # noqa: BLE001 - HTA fails on traces without device work
                out["idle_error"] = f"{type(e).__name__}: {e}"
            idle = {}
            for r in BreakdownAnalysis._ft_raw:
                for cat, row in r.iterrows():
                    s = idle.setdefault(str(int(row["stream"])), {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0})
                    s[{0: "host_wait", 1: "kernel_wait", 2: "other"}.get(int(cat), str(cat))] = float(row["idle_time"])
            out["idle"] = idle
            if annotation:  # the window HTA takes: the instance-th event whose name holds the annotation
                ids = [v for k, v in t.t.symbol_table.get_sym_id_map().items() if annotation in k]
                ann = df[df["name"].isin(ids)]
                if instance < len(ann):
                    a0 = ann.iloc[instance]
                    out["window_us"] = (float(a0["ts"]) + t.t.min_ts, float(a0["ts"] + a0["dur"]) + t.t.min_ts)
            try:
                res = t.critical_path_analysis(rank=rank, annotation=annotation, instance_id=instance)
            except AssertionError as e:  # critical_path(): "assert len(critical_path_nodes) >= 2"
                res = None
                if "critical_path_nodes" in traceback.format_exc():
                    out["cp_us"], out["cp_note"] = 0.0, "HTA asserts on a path of one node: length 0"
                else:
                    out["cp_error"] = f"AssertionError: {e}"
            except Exception as e:  # noqa: BLE001
                res, out["cp_error"] = None, f"{type(e).__name__}: {e}"
            if res is not None and res[1]:
                g = res[0]
                nodes = g.critical_path_nodes
                out["cp_us"] = sum(float(g.edges[u, v]["weight"]) for u, v in zip(nodes, nodes[1:]))
                out["cp_edges"] = len(nodes) - 1
            elif "cp_error" not in out and "cp_us" not in out:
                out["cp_error"] = "HTA found no critical path"
    return out


def ours(flagtrace, trace, annotation):
    cmd = [flagtrace, "_hta"]
    if annotation not in ("", "ProfilerStep"):
        cmd += ["--step", annotation]
    r = subprocess.run(cmd + [trace], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"flagtrace _hta: {r.stderr.strip()}")
    return json.loads(r.stdout)


class Cmp:
    def __init__(self, name):
        self.name, self.rows, self.bad, self.known = name, [], 0, 0

    def check(self, what, ref_us, got_ns, tol_us, why="", known_why=""):
        got = got_ns * NS
        ok = ref_us is not None and abs(got - ref_us) <= tol_us
        if not ok and known_why:
            self.known += 1
            why = f"known difference: {known_why}"
        else:
            self.bad += not ok
        ref = "none" if ref_us is None else f"{ref_us:.4f}"
        print(f"  {'PASS' if ok else 'FAIL'} {what:<40} HTA {ref:>16} us  flagtrace {got:>16.4f} us"
              f"{'  (' + why + ')' if why else ''}")
        self.rows.append(ok)


def compare(a, trace):
    annotation, instance = cp_window(trace)
    h = hta_run(a.hta, trace, annotation, instance)
    f = ours(a.flagtrace, trace, annotation)
    print(f"\n== {trace}")
    c = Cmp(trace)
    ulp = math.ulp(abs(h["max_ts"])) if h["float_ts"] else 0.0
    n_gpu = max(h["n_gpu"], 1)
    tol = max(NS, 2 * n_gpu * ulp)  # a sum of n gaps, each two doubles off by an ulp at most
    got = {str(r["stream"]): r for r in f["idle"]}
    if "idle_error" in h:
        print(f"  (HTA's idle breakdown failed: {h['idle_error']})")
    streams = sorted(set(h["idle"]) | set(got), key=int)
    for s in streams:
        r, g = h["idle"].get(s), got.get(s)
        for cat, key in (("host_wait", "host_wait_ns"), ("kernel_wait", "kernel_wait_ns"), ("other", "other_ns")):
            c.check(f"idle stream {s} {cat}", None if r is None else r[cat], 0 if g is None else g[key], tol)
    if annotation == "":
        mine, label = f["critical_path_ns"], "the whole trace"
    else:
        steps = f["steps"]
        mine = steps[instance]["critical_path_ns"] if instance < len(steps) else 0
        label = f"{annotation[:24]} #{instance}"
        w = h.get("window_us")
        ours_w = (steps[instance]["start"] * NS, steps[instance]["end"] * NS) if instance < len(steps) else None
        if not w or not ours_w or any(abs(x - y) > max(NS, 2 * math.ulp(x)) for x, y in zip(w, ours_w)):
            h.pop("cp_us", None)  # another window: no comparison
            h["cp_note"] = f"windows differ: HTA's {w}, our step's {ours_w} (us)"
    if "cp_error" in h:
        print(f"  (HTA's critical path failed: {h['cp_error']})")
    # each edge's weight: two doubles, each off by half an ulp at most
    c.check(f"critical path, {label}", h.get("cp_us"), mine, max(NS, ulp * h.get("cp_edges", 1)), h.get("cp_note", ""),
            known(trace))
    n_ok = sum(c.rows)
    print(f"  {'PASS' if n_ok == len(c.rows) else 'FAIL'}: {n_ok} of {len(c.rows)} numbers agree"
          f"{f' ({c.known} known difference)' if c.known else ''}")
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta", required=True, help="HolisticTraceAnalysis's source (the folder holding hta/)")
    ap.add_argument("--flagtrace", required=True, help="the flagtrace binary")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    bad = 0
    for tr in a.traces:
        try:
            bad += compare(a, tr).bad
        except Exception as e:  # noqa: BLE001 - one trace HTA cannot read does not stop the rest
            print(f"\n== {tr}\n  SKIPPED: {type(e).__name__}: {e}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

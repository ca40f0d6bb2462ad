"""`flagtrace stats -r temporal,overlap,launch,queue` against Holistic Trace Analysis itself
on the same traces (issue 36): HTA's temporal breakdown, comm/compute overlap, CUDA kernel
launch statistics and queue length summary, number by number.

  hta_analyses.py --hta /path/to/HolisticTraceAnalysis --flagtrace build/flagtrace TRACE...

HTA runs with its rounding off (HTA_DISABLE_NS_ROUNDING=1: it would otherwise round
each event of a ns trace inwards to whole us) and, unless --hta-filter, without its
iteration filter (with two or more ProfilerStep#N it keeps only GPU events launched
before the last step began; flagtrace analyses every event). Times then agree to the ns
but for HTA's float64 error (us timestamps near 1.7e12 as doubles: steps of 0.24 ns);
HTA's percentages are rounded to 2 decimals, our medians past 256 values come from a
histogram (within 0.4 %). Every other difference is a failure. docs/analyses.md explains
each definition. HTA is not part of this repository: `fetch` it outside and pass its path
(numpy, pandas, plotly, networkx: Debian's python3-* packages).
"""
import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout

NS = 1e-3  # one ns in us


def hta_run(hta_path, trace, keep_filter):
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    sys.path.insert(0, hta_path)
    import logging
    from hta.analyzers.trace_counters import TraceCounters
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis
    logging.getLogger("hta").setLevel(logging.ERROR)
    if not keep_filter and not hasattr(Trace, "_ft_unfiltered"):
        Trace._filter_irrelevant_gpu_kernels = lambda self, *a, **k: None
        Trace._ft_unfiltered = True
    with tempfile.TemporaryDirectory() as d:
        os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            t = TraceAnalysis(trace_dir=d)
            rank = sorted(t.t.traces)[0]
            out = {"rank": rank,
                   "temporal": t.get_temporal_breakdown(visualize=False),
                   "overlap": t.get_comm_comp_overlap(visualize=False),
                   "launch": t.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False).get(rank),
                   "queue": t.get_queue_length_summary(ranks=[rank]),
                   "series": TraceCounters._get_queue_length_time_series_for_rank(t.t, rank),
                   "max_ts": float(t.t.min_ts + t.t.get_trace(rank)["end"].max()),
                   "float_ts": t.t.get_trace(rank)["ts"].dtype.kind == "f",
                   "index0": index0(t.t.get_trace(rank))}
    return out


def index0(df):
    """The stream of the trace's first event when it is a GPU event with a correlation id:
    HTA's queue then leaves its launch out (index_correlation 0 means "not in the trace",
    and 0 is also that event's index). None otherwise."""
    first = df[df["index"] == 0]
    if first.empty or int(first["stream"].iloc[0]) == -1 or int(first["correlation"].iloc[0]) == -1:
        return None
    return str(int(first["stream"].iloc[0]))


def ours(flagtrace, trace):
    r = subprocess.run([flagtrace, "stats", "-r", "temporal,overlap,launch,queue", "-f", "json", "-n", "0",
                        "--by-rank", trace], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"flagtrace stats: {r.stderr.strip()}")
    return json.loads(r.stdout)


class Cmp:
    def __init__(self, name):
        self.name, self.rows, self.bad, self.n_equal = name, [], 0, 0

    def check(self, what, ref, got, tol, why=""):
        ref, got = float(ref), float(got)
        if math.isnan(ref):
            ok, diff = got == 0, 0.0  # HTA's 0/0; ours is 0 (json has no NaN)
            why = why or "HTA NaN (0/0), ours 0"
        else:
            diff = abs(got - ref)
            ok = diff <= tol
        self.bad += not ok
        # equal: HTA's number rounds to ours (we print 3 decimals: ns, or thousandths)
        verdict = "equal" if diff <= 0.0005 + 1e-9 else "within tolerance" if ok else "DIFFERENT"
        self.n_equal += verdict == "equal"
        self.rows.append((what, ref, got, diff, verdict, why))

    def show(self):
        print(f"\n== {self.name}")
        for what, ref, got, diff, verdict, why in self.rows:
            print(f"  {what:<34} HTA {ref:>16.4f}  flagtrace {got:>16.4f}  |diff| {diff:<10.4g} {verdict}"
                  f"{'  (' + why + ')' if why else ''}")


def ordered_ties(series):
    """HTA's queue series with the steps at one timestamp put as flagtrace puts them
    (an event's start before a call's): HTA sorts with an unstable sort, so such
    ties fall in no fixed order. Per stream: {stream: (samples, steps at tied times)}."""
    out = {}
    if series is None:
        return out
    for stream, g in series.groupby("stream", sort=False):
        q = g["queue_length"].to_numpy()
        step = [int(q[0])] + [int(q[i] - q[i - 1]) for i in range(1, len(q))]
        ts = g["ts"].to_numpy()
        order = sorted(range(len(q)), key=lambda i: (ts[i], step[i]))  # -1 (an event) first
        run, samples = 0, []
        for i in order:
            run += step[i]
            samples.append(run)
        tied = sum(1 for i in range(len(q)) if (i and ts[i] == ts[i - 1]) or (i + 1 < len(q) and ts[i] == ts[i + 1]))
        out[str(int(stream))] = (samples, tied)
    return out


def compare(a, trace):
    h = hta_run(a.hta, trace, a.hta_filter)
    f = ours(a.flagtrace, trace)
    c = Cmp(trace)
    tt = h["temporal"].iloc[0]
    ft = f["temporal"][0]
    n_ev = max(ft["gpu_events"], 1)
    # HTA holds each us timestamp as a float64: a step of ulp (0.24 ns near 1.7e12 us,
    # 0.25 us near 1.7e15) at each; a sum of n interval ends is off by n of them at worst
    ulp = math.ulp(abs(h["max_ts"])) if h["float_ts"] else 0.0  # whole us: read exactly
    ftol = max(NS, n_ev * ulp)
    for k_h, k_f in (("kernel_time(us)", "window_us"), ("idle_time(us)", "idle_us"),
                     ("compute_time(us)", "compute_us"), ("non_compute_time(us)", "non_compute_us")):
        c.check(f"temporal {k_f}", tt[k_h], ft[k_f], ftol)
    for k in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"):
        c.check(f"temporal {k}", tt[k], ft[k.replace("_time_pctg", "_pct")], 0.005 + 1e-9, "HTA rounds to 2 decimals")
    c.check("overlap_pct", h["overlap"].iloc[0]["comp_comm_overlap_pctg"], f["overlap"][0]["overlap_pct"],
            0.005 + 1e-9)
    lh, lf = h["launch"], f["launch"][0]
    c.check("launch pairs", len(lh) if lh is not None else 0, lf["launches"], 0)
    if lh is not None and len(lh):
        big = len(lh) > 256
        for col, key in (("cpu_duration", "cpu"), ("gpu_duration", "gpu"), ("launch_delay", "delay")):
            c.check(f"launch {key} mean (us)", lh[col].mean(), lf[f"{key}_avg_us"], 0.0005 + 3 * ulp)
            med = float(lh[col].median())
            c.check(f"launch {key} median (us)", med, lf[f"{key}_median_us"],
                    max(NS, 0.004 * med) if big else max(NS, 3 * ulp), "a histogram's past 256 pairs" if big else "")
        c.check("launch delay max (us)", lh["launch_delay"].max(), lf["delay_max_us"], max(NS, 3 * ulp))
        c.check("launch short kernels", ((lh.cpu_duration <= 50) & (lh.gpu_duration < lh.cpu_duration)).sum(),
                lf["short_kernels"], 0)
        c.check("launch runtime outliers (>50us)", (lh.cpu_duration > 50).sum(), lf["runtime_outliers"], 0)
        c.check("launch delay outliers (>100us)", (lh.launch_delay > 100).sum(), lf["delay_outliers"], 0)
    qh = h["queue"]
    ties = ordered_ties(h["series"])
    qf = {r["stream"]: r for r in f["queue"]}
    hs = {} if qh is None else {str(int(s)): row for (_, s), row in qh["queue_length"].iterrows()}
    c.check("queue streams", len(hs), len(qf), 0)
    for s in sorted(set(hs) | set(qf), key=int):
        if s not in hs or s not in qf:
            c.check(f"queue stream {s} present", s in hs, s in qf, 0)
            continue
        r, g = hs[s], qf[s]
        big = r["count"] > 256
        if h["index0"] == s:  # HTA left out one launch and its event: 2 samples fewer, the rest moves
            c.check(f"queue {s} samples", r["count"] + 2, g["samples"], 0,
                    "HTA leaves out the launch of the trace's event 0")
            continue
        c.check(f"queue {s} samples", r["count"], g["samples"], 0)
        samples, tied = ties.get(s, ([], 0))
        # each step at a tied time moves one sample by 2 at most, in HTA's arbitrary order
        why = f"{tied} steps at tied times, in HTA's unstable order" if tied else ""
        c.check(f"queue {s} mean", r["mean"], g["mean"], 0.0005 + 2 * tied / r["count"], why)
        c.check(f"queue {s} stddev", 0 if math.isnan(r["std"]) else r["std"], g["stddev"],
                0.0005 + 2 * tied / max(r["count"] - 1, 1) ** 0.5, why)
        if tied:  # HTA's own series, ties ordered as ours: then equal
            n = len(samples)
            mean = sum(samples) / n
            sd = (sum((x - mean) ** 2 for x in samples) / (n - 1)) ** 0.5 if n > 1 else 0.0
            # where HTA's doubles cannot tell events under a ns apart (ulp > 1 ns), its order
            # of such events is its rounding's, not the trace's: the raw bound stays
            loose = ulp > NS
            w = f"HTA's float64 steps {ulp:g} us here" if loose else ""
            c.check(f"queue {s} mean, ties ordered", mean, g["mean"],
                    0.0005 + (2 * tied / r["count"] if loose else 0), w)
            c.check(f"queue {s} stddev, ties ordered", sd, g["stddev"],
                    0.0005 + (2 * tied / max(r["count"] - 1, 1) ** 0.5 if loose else 0), w)
        hist = big and r["50%"] >= 64
        mtol = max(0.5, 0.004 * r["50%"]) if hist else 0
        c.check(f"queue {s} min", r["min"], g["min"], 1 if tied else 0, why)
        c.check(f"queue {s} median", r["50%"], g["median"], mtol + (1 if tied else 0),
                "a histogram's past 256 samples" if hist else why)
        c.check(f"queue {s} max", r["max"], g["max"], 1 if tied else 0, why)
        if tied:
            srt = sorted(samples)
            med = (srt[(len(srt) - 1) // 2] + srt[len(srt) // 2]) / 2
            c.check(f"queue {s} min, ties ordered", srt[0], g["min"], 0)
            c.check(f"queue {s} median, ties ordered", med, g["median"], mtol)
            c.check(f"queue {s} max, ties ordered", srt[-1], g["max"], 0)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta", required=True, help="HolisticTraceAnalysis's source (the folder holding hta/)")
    ap.add_argument("--flagtrace", required=True, help="the flagtrace binary")
    ap.add_argument("--hta-filter", action="store_true", help="keep HTA's iteration filter (differences expected)")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    bad = 0
    for tr in a.traces:
        try:
            c = compare(a, tr)
        except Exception as e:  # noqa: BLE001 - one trace HTA cannot read does not stop the rest
            print(f"\n== {tr}\n  SKIPPED: {type(e).__name__}: {e}")
            continue
        c.show()
        bad += c.bad
        print(f"  {'PASS' if not c.bad else 'FAIL'}: {len(c.rows) - c.bad} of {len(c.rows)} numbers agree, "
              f"{c.n_equal} equal to the digits shown")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

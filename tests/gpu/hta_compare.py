"""Holistic Trace Analysis over a flagtrace trace and a torch-cuda trace of the same
run (issue 13): temporal breakdown, kernel breakdown, GPU user-annotation breakdown
and CUDA kernel launch statistics must agree; only timing may differ, within the
tolerances below (two runs never take the same nanoseconds).

  hta_compare.py --hta /path/to/HolisticTraceAnalysis DIR
      DIR holds torch_cuda*.json[.gz] and flagtrace*.json[.gz] (torch_train_step.py --out)
  hta_compare.py --hta PATH --pair A B     any two traces (A is the reference)

HTA is not part of this repository: `fetch` its source outside it and pass its path
(it needs numpy, pandas, plotly, networkx, pydot: Debian's python3-* packages).
"""
import argparse
import glob
import io
import math
import os
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import Results  # noqa: E402

ALL = 10 ** 6  # "every kernel / annotation": no top-N summarizing, which depends on timing


def analyse(hta_path, trace):
    """The four HTA analyses of one trace, read alone (HTA takes a folder of ranks)."""
    sys.path.insert(0, hta_path)
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as d:
        os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
        with redirect_stdout(io.StringIO()):  # HTA prints its progress
            t = TraceAnalysis(trace_dir=d)
            out = {
                "temporal": t.get_temporal_breakdown(visualize=False),
                "kernels": t.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=ALL),
                "annotations": t.get_gpu_user_annotation_breakdown(visualize=False, duration_ratio=1.0,
                                                                   num_kernels=ALL),
                "launches": t.get_cuda_kernel_launch_stats(visualize=False),
            }
    return out


class Tol:
    def __init__(self, a):
        self.rel, self.us, self.pct = a.time_rel, a.time_abs_us, a.pct_abs

    def time(self, what, ref, got):
        """Times (µs) agree within the relative tolerance or the absolute floor."""
        if not (math.isfinite(ref) and math.isfinite(got)):
            assert ref == got or (math.isnan(ref) and math.isnan(got)), f"{what}: {got} vs {ref}"
            return
        assert abs(got - ref) <= max(self.rel * abs(ref), self.us), f"{what}: {got:.1f} us vs {ref:.1f} us"

    def share(self, what, ref, got):
        assert abs(got - ref) <= self.pct, f"{what}: {got:.2f} % vs {ref:.2f} %"


def one_rank(df):
    ranks = sorted(set(df["rank"]))
    assert len(ranks) == 1, f"one rank per trace expected, got {ranks}"
    return df.drop(columns=["rank"])


def cmp_temporal(ref, got, tol):
    r, g = one_rank(ref["temporal"]).iloc[0], one_rank(got["temporal"]).iloc[0]
    for col in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"):
        tol.share(col, float(r[col]), float(g[col]))
    for col in ("compute_time(us)", "non_compute_time(us)"):
        tol.time(col, float(r[col]), float(g[col]))


def cmp_kernels(ref, got, tol):
    (rt, rk), (gt, gk) = ref["kernels"], got["kernels"]
    rtypes, gtypes = dict(zip(rt["kernel_type"], rt["percentage"])), dict(zip(gt["kernel_type"], gt["percentage"]))
    assert set(rtypes) == set(gtypes), f"kernel types {sorted(gtypes)} vs {sorted(rtypes)}"
    for k in rtypes:
        tol.share(f"{k} share", float(rtypes[k]), float(gtypes[k]))
    rk, gk = one_rank(rk).set_index("name"), one_rank(gk).set_index("name")
    assert set(rk.index) == set(gk.index), \
        f"kernels only in flagtrace: {sorted(set(gk.index) - set(rk.index))[:5]}, " \
        f"only in torch-cuda: {sorted(set(rk.index) - set(gk.index))[:5]}"
    for name in rk.index:
        assert rk.loc[name, "kernel_type"] == gk.loc[name, "kernel_type"], name
        tol.time(f"{name[:60]} total", float(rk.loc[name, "sum (us)"]), float(gk.loc[name, "sum (us)"]))


def cmp_annotations(ref, got, tol):
    r, g = ref["annotations"], got["annotations"]
    if r is None or g is None:
        assert r is None and g is None, \
            f"gpu_user_annotation breakdown: {'none' if g is None else len(g)} rows vs {'none' if r is None else len(r)}"
        return "none in either trace"
    r, g = one_rank(r).set_index("name"), one_rank(g).set_index("name")
    assert set(r.index) == set(g.index), f"annotations {sorted(g.index)} vs {sorted(r.index)}"
    for name in r.index:
        tol.time(f"{name} total", float(r.loc[name, "sum (us)"]), float(g.loc[name, "sum (us)"]))
    return f"{len(r)} annotations: {', '.join(sorted(r.index)[:6])}"


def cmp_launches(ref, got, tol):
    r, g = ref["launches"], got["launches"]
    assert sorted(r) == sorted(g), f"ranks {sorted(g)} vs {sorted(r)}"
    for rank in r:
        a, b = r[rank], g[rank]
        assert len(a) == len(b), f"rank {rank}: {len(b)} launch/kernel pairs vs {len(a)}"
        for col in ("cpu_duration", "gpu_duration", "launch_delay"):
            if len(a):
                tol.time(f"rank {rank} median {col}", float(a[col].median()), float(b[col].median()))
    return f"{sum(len(v) for v in r.values())} launch/kernel pairs"


def pick(d, pattern):
    found = sorted(glob.glob(os.path.join(d, pattern + ".json")) + glob.glob(os.path.join(d, pattern + ".json.gz")))
    if len(found) != 1:
        sys.exit(f"hta_compare: want one {pattern}.json[.gz] in {d}, found {found}")
    return found[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta", required=True, help="path of HolisticTraceAnalysis's source (the folder holding hta/)")
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--pair", nargs=2, metavar=("REFERENCE", "OTHER"))
    ap.add_argument("--time-rel", type=float, default=0.25, help="relative tolerance on times (default 0.25)")
    ap.add_argument("--time-abs-us", type=float, default=20.0, help="absolute floor on times in µs (default 20)")
    ap.add_argument("--pct-abs", type=float, default=5.0, help="tolerance on percentages, in points (default 5)")
    a = ap.parse_args()
    if a.pair:
        ref_path, got_path = a.pair
    elif a.dir:
        ref_path, got_path = pick(a.dir, "torch_cuda*"), pick(a.dir, "flagtrace*")
    else:
        ap.error("give DIR or --pair A B")
    print(f"reference: {ref_path}\ncompared:  {got_path}")
    ref, got = analyse(a.hta, ref_path), analyse(a.hta, got_path)
    tol = Tol(a)
    res = Results()
    res.check("HTA temporal breakdown", cmp_temporal, ref, got, tol)
    res.check("HTA kernel breakdown (types and every kernel)", cmp_kernels, ref, got, tol)
    notes = {}

    def annotations():
        notes["ann"] = cmp_annotations(ref, got, tol)

    def launches():
        notes["launch"] = cmp_launches(ref, got, tol)

    res.check("HTA gpu user-annotation breakdown", annotations)
    res.check("HTA cuda kernel launch statistics", launches)
    for v in notes.values():
        print(f"     {v}")
    res.finish()


if __name__ == "__main__":
    main()

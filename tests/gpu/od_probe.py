"""Probe (issue 39), a diagnostic not run by gpu-check.sh: where does the step time
between on-demand captures come from? (its results: docs/measurements.md, 2026-12-05)
Runs the torch_on_demand loop bare and under record --on-demand (one capture at AT s),
1 and 2 ranks, with and without CUPTI's finalize, and writes per-second median step
times of each run to OUT/probe.json.

  od_probe.py --flagtrace BUILD/flagtrace --out-dir DIR [--seconds S] [--only NAME,...]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "torch_on_demand.py")


def cmd(ranks, secs, log):
    args = ["train", "--seconds", str(secs), "--step-log", log]
    if ranks == 1:
        return [sys.executable, LOOP, *args]
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}", LOOP, *args]


def one(ft, out, name, ranks, od, secs, at, extra_env):
    env = dict(os.environ, FLAGTRACE_CONTROL_DIR=os.path.join(out, "ctl"), **extra_env)
    log = os.path.join(out, f"{name}-%r.json")
    t0 = time.time()
    caps = []
    if not od:
        subprocess.run(cmd(ranks, secs, log), env=env, check=True, timeout=secs + 120)
    else:
        rec = subprocess.Popen([ft, "record", "--on-demand", "-o", os.path.join(out, f"{name}-%r-%p-%n.json.gz"), "--",
                                *cmd(ranks, secs, log)], env=env)
        for _ in range(600):
            r = subprocess.run([ft, "capture", "--list"], capture_output=True, text=True, env=env)
            rows = [ln.split() for ln in r.stdout.splitlines()[1:] if ln.split()[1:2] == [str(rec.pid)]]
            ranked = [x for x in rows if x[2] != "-" or ranks == 1]
            if len(ranked) >= ranks:
                break
            time.sleep(0.1)
        pids = [x[0] for x in ranked][:ranks] if ranks > 1 else [x[0] for x in rows][-1:]
        ready = time.time()
        for a in at:
            time.sleep(max(0, ready + a - time.time()))
            r = subprocess.run([ft, "capture", "--pid", ",".join(pids), "--duration", "3s"], capture_output=True,
                               text=True, env=env, timeout=120)
            print(r.stdout + r.stderr, end="")
            caps.append(r.stdout)
        rec.wait(timeout=secs + 120)
    res = {"ranks": {}, "captures": caps, "wall_s": time.time() - t0}
    for rk in range(ranks):
        d = json.load(open(log.replace("%r", str(rk))))
        st = d["steps"]
        first = st[0][1]
        bins = {}
        for _, a, b in st:
            bins.setdefault(int((a - first) // 1e9), []).append(b - a)
        res["ranks"][rk] = {"first_ns": first, "n": len(st),
                            "per_s_median_us": [round(statistics.median(bins[k]) / 1e3, 1) for k in sorted(bins)]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flagtrace", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seconds", type=float, default=35)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    out = os.path.abspath(a.out_dir)
    os.makedirs(out, exist_ok=True)
    ft = os.path.abspath(a.flagtrace)
    s = a.seconds
    runs = [("bare1", 1, False, {}), ("od1", 1, True, {}), ("od1_nofin", 1, True, {"FLAGTRACE_CUPTI_FINALIZE": "0"}),
            ("bare2", 2, False, {}), ("od2", 2, True, {})]
    only = set(a.only.split(",")) if a.only else None
    results = {}
    for name, ranks, od, env in runs:
        if only and name not in only:
            continue
        results[name] = one(ft, out, name, ranks, od, s, (10,), env)
        for rk, v in results[name]["ranks"].items():
            print(name, rk, v["n"], v["per_s_median_us"], flush=True)
        json.dump(results, open(a.json, "w"))


if __name__ == "__main__":
    main()

"""`flagtrace record --on-demand` on the GPU (issue 39): a 2-rank torchrun training loop
(both ranks on one GPU, no NCCL) runs 90 s under record --on-demand; `flagtrace capture`
takes two 3-second windows of both ranks together, then one of 5 steps (--steps, NVTX
step ranges), then 5 steps of the whole job (--job: the launcher, which never steps, must
not hold it; issue 49). torchrun's launcher loads CUDA too: `capture --list` shows it in the job
without a rank, and the ranks are captured by pid. Checks each trace: its kernels inside
its window, every kernel linked to its launch and attributed to the NVTX op range open
at the launch, distributedInfo per rank, the ranks' windows together. Then a loop that
runs torch.profiler's schedule (off: ProfilerStep# ranges only) is captured for 5 of its
ProfilerStep# steps, counted through the kineto adaptor's RecordFunction watch.

Step time: the same 2-rank job runs bare *beside* the recorded one, started together, so
that both see the same machine. This loop's step time drifts 10-20 % over a minute on
the H200 host with nothing else running (measured 2026-12-04, bare, one rank), so runs
one after the other cannot be compared within 3 %: each second's median step of a
recorded rank is divided by that second's median of the bare job, before the first
capture and between the captures; the ratio's median and its bootstrap 95 % interval
are judged against 1.03 (an interval straddling it is "within noise").

  torch_on_demand.py run --flagtrace BUILD/flagtrace --out-dir DIR   (the whole check, ~2.5 min)
  torch_on_demand.py train --seconds S --step-log PATH [--profiler-steps]   (one rank's loop)"""
import argparse
import bisect
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_checks import check_flows_paired, check_window, load, xs  # noqa: E402

LOOP_S = 90
CAPTURES_AT = (25, 55)  # seconds after both ranks can be captured (their loops start ~7 s later)
STEPS_AT = 80
JOB_STEPS_AT = 84  # the ranks' loops end ~97 s after t0: a capture held to the job's end shows
WINDOW_S = 3


def train(seconds, log_path, profiler_steps=False):
    """A small MLP trained on random data: launch-bound (many small kernels), so what
    waiting costs a launch shows in the step time. Each step an NVTX range, each phase
    (forward, backward, optimizer) one inside it; the step synchronizes, so its time is
    the step's own. profiler_steps: the steps are torch.profiler's instead (a schedule
    that never records, as a program keeps its profiler in place but off): each is a
    ProfilerStep#N record_function, and no NVTX step range is pushed."""
    import contextlib
    import torch
    rank = int(os.environ.get("RANK", "0"))
    torch.manual_seed(rank)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(64, 512, device="cuda")
    y = torch.randn(64, 512, device="cuda")
    nvtx = torch.cuda.nvtx
    steps = []
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(wait=10 ** 9, warmup=1, active=1)) if profiler_steps else None
    with prof if prof is not None else contextlib.nullcontext():
        print(f"rank {rank}: ready", flush=True)
        loop(torch, model, opt, x, y, nvtx, prof, seconds, steps)
    with open(log_path, "w") as f:
        json.dump({"rank": rank, "steps": steps}, f)


def loop(torch, model, opt, x, y, nvtx, prof, seconds, steps):
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        t0 = time.time_ns()
        if prof is None:
            nvtx.range_push(f"train_step#{i}")
        nvtx.range_push("forward")
        loss = torch.nn.functional.mse_loss(model(x), y)
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=False)
        nvtx.range_pop()
        if prof is None:
            nvtx.range_pop()
        torch.cuda.synchronize()
        steps.append((i, t0, time.time_ns()))
        i += 1
        if prof is not None:
            prof.step()


def torchrun(script_args, port):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}",
            os.path.abspath(__file__), *script_args]


def per_second(logs, lo_ns, hi_ns):
    """{second: median step time (ns)} of the steps of logs that lie in [lo_ns, hi_ns)."""
    bins = {}
    for log in logs:
        for _, a, b in log["steps"]:
            if a >= lo_ns and b < hi_ns:
                bins.setdefault(a // 10 ** 9, []).append(b - a)
    return {k: statistics.median(v) for k, v in bins.items() if len(v) >= 20}


def paired_ratio(od, bare, lo_ns, hi_ns):
    """The median over seconds of (recorded rank's median step / bare job's median step
    that second), with a bootstrap 95 % interval over the seconds; None below 8 seconds."""
    o, b = per_second([od], lo_ns, hi_ns), per_second(bare, lo_ns, hi_ns)
    r = [o[k] / b[k] for k in sorted(o) if k in b]
    if len(r) < 8:
        return None
    rng = random.Random(39)
    boot = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
    return statistics.median(r), boot[50], boot[1949], len(r)


def capturable(ft, env, job):
    r = subprocess.run([ft, "capture", "--list"], capture_output=True, text=True, env=env)
    return [ln.split() for ln in r.stdout.splitlines()[1:] if ln.split()[1:2] == [str(job)]]


def capture(ft, env, pids, *args):
    r = subprocess.run([ft, "capture", "--pid", ",".join(pids), *args], capture_output=True, text=True, env=env,
                       timeout=300)
    print(r.stdout + r.stderr, end="")
    assert r.returncode == 0, r
    got = re.findall(r"^pid (\d+): capture (\d+): wrote (\S+) \((\d+) events, (\d+) dropped\)$", r.stdout, re.M)
    assert len(got) == 2, f"two ranks, two traces: {r.stdout}"
    return got


def capture_job_steps(ft, env, rec, job, pids, n):
    """`capture --job J --steps n` (issue 49): the job's launcher never begins a step, yet the
    capture must end once both ranks wrote their n steps, well before the job ends, exit 0,
    and say the launcher left out. Returns the ranks' (pid, no, path, events, dropped)."""
    t = time.monotonic()
    r = subprocess.run([ft, "capture", "--job", str(rec.pid), "--steps", str(n), "--step-range", "train_step#",
                        "--timeout", "30s"], capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - t
    running = rec.poll() is None
    print(r.stdout + r.stderr, end="")
    assert r.returncode == 0, r
    assert running and took < 8, f"capture --job --steps {n} took {took:.1f} s, the job {'ran on' if running else 'ended'}"
    got = re.findall(r"^pid (\d+): capture (\d+): wrote (\S+) \((\d+) events, (\d+) dropped\)$", r.stdout, re.M)
    assert sorted(g[0] for g in got) == sorted(pids), f"the two ranks, each one trace: {r.stdout}"
    launchers = [row[0] for row in job if row[0] not in pids]
    assert r.stderr == "".join(f"flagtrace capture: pid {p}: left out: it began no step while the others wrote theirs "
                               "(a process without steps, as torchrun's launcher; its capture closed empty)\n"
                               for p in launchers), r.stderr
    print(f"PASS capture --job {rec.pid} --steps {n}: exit 0 in {took:.1f} s with the job running, "
          f"{len(launchers)} launcher left out")
    return got


def attributed(doc, step_prefix="train_step#"):
    """Of the kernels launched by the loop's thread (the one with the step ranges): those
    whose External id is the innermost NVTX range open there at the launch, those launched
    outside any recorded range (before the window's first), those attributed wrongly; and
    the kernels other threads launched (autograd's backward thread, where no range is
    pushed: attributed to none, as torch-cuda without a profiler's ranges there)."""
    launches = {e["args"]["correlation"]: e for e in xs(doc, ("cuda_runtime", "cuda_driver"))
                if "correlation" in e.get("args", {})}
    ranges = {}
    for r in xs(doc, ("user_annotation",)):
        ranges.setdefault(r["tid"], []).append((r["ts"], r["ts"] + r["dur"], r["args"].get("External id")))
    for v in ranges.values():
        v.sort()
    loop_tids = {r["tid"] for r in xs(doc, ("user_annotation",)) if r["name"].startswith(step_prefix)}
    assert len(loop_tids) == 1, loop_tids
    ok = outside = wrong = others = 0
    for k in xs(doc, ("kernel",)):
        call = launches.get(k["args"].get("correlation"))
        assert call is not None, f"kernel {k['name'][:60]} without its launch"
        if call["tid"] not in loop_tids:
            others += 1
            assert "External id" not in k["args"] or any(
                lo <= call["ts"] <= hi for lo, hi, _ in ranges.get(call["tid"], [])), k
            continue
        rs = ranges.get(call["tid"], [])
        i = bisect.bisect_right(rs, (call["ts"], float("inf"), 0))
        inner = None
        for lo, hi, ext in reversed(rs[:i]):  # the innermost: the latest start still open
            if hi >= call["ts"] + call["dur"]:
                inner = ext
                break
        if inner is None:
            outside += 1
        elif k["args"].get("External id") == inner:
            ok += 1
        else:
            wrong += 1
    return ok, outside, wrong, others


def check_trace(path, rank):
    doc = load(path)
    lo, hi = doc["flagtrace"]["capture_window_ns"]
    check_window(doc)
    kernels = xs(doc, ("kernel",))
    assert len(kernels) > 1000, f"{path}: {len(kernels)} kernels"
    assert check_flows_paired(doc) == len(kernels), f"{path}: every kernel linked to its launch"
    ok, outside, wrong, others = attributed(doc)
    mine = ok + outside + wrong
    assert wrong == 0 and ok >= 0.95 * mine and mine >= 0.3 * len(kernels), \
        f"{path}: of {mine} kernels the loop's thread launched, {ok} attributed, {outside} outside a range, " \
        f"{wrong} wrong; {others} launched by other threads"
    assert doc["distributedInfo"]["rank"] == rank and doc["distributedInfo"]["world_size"] == 2, doc["distributedInfo"]
    assert doc["flagtrace"]["device_status"] == "collected", doc["flagtrace"]
    print(f"PASS {os.path.basename(path)}: rank {rank}, window {(hi - lo) / 1e9:.3f} s, {len(kernels)} kernels "
          f"({ok} of the loop thread's attributed to their op range, {outside} launched before the first range the "
          f"window holds; {others} by autograd's thread), "
          f"{doc['flagtrace']['dropped_records']} dropped, {doc['flagtrace']['window_discarded']} outside the window")
    return doc, lo, hi


def run(ft, out):
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, FLAGTRACE_CONTROL_DIR=os.path.join(out, "ctl"))
    for f in glob.glob(os.path.join(out, "od-*")) + glob.glob(os.path.join(out, "bare-*")):
        os.unlink(f)
    # the same job bare beside it (one GPU, four ranks in all), started first and ending
    # after it, so that every second of the recorded job has the bare job's beside it
    bare = subprocess.Popen(torchrun(["train", "--seconds", str(LOOP_S + 15), "--step-log",
                                      os.path.join(out, "bare-log-%r.json")], 29511), env=env)
    rec = subprocess.Popen([ft, "record", "--on-demand", "-o", os.path.join(out, "od-%r-%p-%n.json.gz"), "--",
                            *torchrun(["train", "--seconds", str(LOOP_S), "--step-log",
                                       os.path.join(out, "od-log-%r.json")], 29512)], env=env)
    # torchrun's launcher loads CUDA too (it counts devices): a process of the job, without
    # a rank and without work; the ranks are captured by pid, together
    for _ in range(1200):
        job = capturable(ft, env, rec.pid)
        rows = [r for r in job if r[2] in ("0", "1")]
        if len(rows) == 2:
            break
        assert rec.poll() is None, f"record ended ({rec.returncode}) before its ranks could be captured"
        time.sleep(0.1)
    assert len(rows) == 2 and sorted(r[2] for r in rows) == ["0", "1"], job
    assert all(r[2] == "-" for r in job if r not in rows) and len(job) <= 3, job
    print(f"capturable: {len(job)} processes of job {rec.pid} ({', '.join(r[0] + ' rank ' + r[2] for r in job)})")
    pids = [r[0] for r in rows]
    t0 = time.time()
    caps = []
    for at in CAPTURES_AT:
        time.sleep(max(0, t0 + at - time.time()))
        caps.append(capture(ft, env, pids, "--duration", f"{WINDOW_S}s"))
    time.sleep(max(0, t0 + STEPS_AT - time.time()))
    steps = capture(ft, env, pids, "--steps", "5", "--step-range", "train_step#", "--timeout", "30s")
    time.sleep(max(0, t0 + JOB_STEPS_AT - time.time()))
    job_steps = capture_job_steps(ft, env, rec, job, pids, 5)
    assert rec.wait(timeout=300) == 0, f"record exited {rec.returncode}"

    rank_of = {int(r[0]): int(r[2]) for r in rows}
    windows = []
    for n, cap in enumerate(caps, 1):
        spans = {}  # rank: its window
        for pid, no, path, _, _ in cap:
            assert int(no) == n, cap
            doc, lo, hi = check_trace(path, rank_of[int(pid)])
            assert abs((hi - lo) / 1e9 - WINDOW_S) < 0.3, f"{path}: a {(hi - lo) / 1e9:.3f} s window"
            spans[rank_of[int(pid)]] = (lo, hi)
        together = min(h for _, h in spans.values()) - max(lo for lo, _ in spans.values())
        assert together > (WINDOW_S - 0.5) * 1e9, f"capture {n}: the ranks' windows overlap {together / 1e9:.3f} s"
        windows.append(spans)
        print(f"PASS capture {n}: both ranks, windows together for {together / 1e9:.3f} s")
    for pid, no, path, _, _ in steps:
        doc = load(path)
        names = sorted(e["name"] for e in xs(doc, ("user_annotation",)) if e["name"].startswith("train_step#"))
        nums = sorted(int(s.split("#")[1]) for s in names)
        assert int(no) == 3 and len(nums) == 5 and nums == list(range(nums[0], nums[0] + 5)), (path, names)
        print(f"PASS capture --steps 5, rank {rank_of[int(pid)]}: steps {nums[0]}..{nums[-1]} exactly")
    for pid, no, path, _, _ in job_steps:
        doc = load(path)
        check_window(doc)
        names = sorted(e["name"] for e in xs(doc, ("user_annotation",)) if e["name"].startswith("train_step#"))
        nums = sorted(int(s.split("#")[1]) for s in names)
        assert int(no) == 4 and len(nums) == 5 and nums == list(range(nums[0], nums[0] + 5)), (path, names)
        assert doc["distributedInfo"]["rank"] == rank_of[int(pid)], doc["distributedInfo"]
        print(f"PASS capture --job --steps 5, rank {rank_of[int(pid)]}: steps {nums[0]}..{nums[-1]} exactly")

    # step time: waiting before any capture, and between captures (after CUPTI's finalize),
    # second by second against the bare job running beside it
    assert bare.wait(timeout=300) == 0, f"the bare job exited {bare.returncode}"
    bare_logs = [json.load(open(os.path.join(out, f"bare-log-{rank}.json"))) for rank in (0, 1)]
    verdicts = []
    for rank in (0, 1):
        od = json.load(open(os.path.join(out, f"od-log-{rank}.json")))
        first = od["steps"][0][1]
        spans = {"before the first capture": (first + 3 * 10 ** 9, windows[0][rank][0] - 10 ** 9),
                 "between the captures": (windows[0][rank][1] + 3 * 10 ** 9, windows[1][rank][0] - 10 ** 9)}
        for what, (lo, hi) in spans.items():
            got = paired_ratio(od, bare_logs, lo, hi)
            if got is None:
                print(f"rank {rank} {what}: FAIL, fewer than 8 seconds of both jobs' steps to compare")
                verdicts.append("FAIL")
                continue
            m, c_lo, c_hi, n = got
            verdict = "pass" if c_hi <= 1.03 else "FAIL" if c_lo > 1.03 else "within noise"
            print(f"rank {rank} {what}: step time {m:.3f} [{c_lo:.3f}, {c_hi:.3f}] of the bare job's, second by "
                  f"second ({n} s): {verdict}")
            if what.startswith("between"):
                verdicts.append(verdict)
    profiler_steps(ft, env, out)  # also when the step time failed: a separate check
    assert "FAIL" not in verdicts, "the step time between captures is above bare's by more than 3 %"
    print("PASS the loop's step time between captures equals bare's within 3 % "
          f"({', '.join(verdicts)})")


def profiler_steps(ft, env, out):
    """torch.profiler's ProfilerStep# ranges (its schedule off) count a capture's steps:
    the kineto adaptor's RecordFunction watch, added for the capture only."""
    for f in glob.glob(os.path.join(out, "ps-*")):
        os.unlink(f)
    rec = subprocess.Popen([ft, "record", "--on-demand", "-o", os.path.join(out, "ps-%p-%n.json.gz"), "--",
                            sys.executable, os.path.abspath(__file__), "train", "--seconds", "25", "--profiler-steps",
                            "--step-log", os.path.join(out, "ps-log.json")], env=env)
    for _ in range(1200):
        job = capturable(ft, env, rec.pid)
        if job:
            break
        assert rec.poll() is None, f"record ended ({rec.returncode}) before it could be captured"
        time.sleep(0.1)
    time.sleep(5)
    r = subprocess.run([ft, "capture", "--pid", job[0][0], "--steps", "5", "--timeout", "30s"], capture_output=True,
                       text=True, env=env, timeout=120)
    print(r.stdout + r.stderr, end="")
    assert r.returncode == 0, r
    path = re.findall(r"^pid \d+: capture 1: wrote (\S+) \(\d+ events, \d+ dropped\)$", r.stdout, re.M)[0]
    assert rec.wait(timeout=120) == 0, f"record exited {rec.returncode}"
    doc = load(path)
    check_window(doc)
    names = [e["name"] for e in xs(doc, ("user_annotation",)) if e["name"].startswith("ProfilerStep#")]
    nums = sorted(int(n.split("#")[1]) for n in names)
    assert len(nums) == 5 and nums == list(range(nums[0], nums[0] + 5)), names
    kernels = xs(doc, ("kernel",))
    assert check_flows_paired(doc) == len(kernels) and len(kernels) > 100, f"{path}: {len(kernels)} kernels"
    ok, outside, wrong, others = attributed(doc, "ProfilerStep#")
    assert wrong == 0 and ok >= 0.95 * (ok + outside + wrong), (ok, outside, wrong, others)
    print(f"PASS capture --steps 5 by torch.profiler's ProfilerStep# ranges (its schedule off): steps "
          f"{nums[0]}..{nums[-1]} exactly, {len(kernels)} kernels, {ok} of the loop thread's attributed to their "
          f"op range, {wrong} wrong")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("run", "train"))
    ap.add_argument("--flagtrace")
    ap.add_argument("--out-dir")
    ap.add_argument("--seconds", type=float, default=LOOP_S)
    ap.add_argument("--step-log")
    ap.add_argument("--profiler-steps", action="store_true")
    a = ap.parse_args()
    if a.mode == "train":
        train(a.seconds, a.step_log.replace("%r", os.environ.get("RANK", "0")), a.profiler_steps)
    else:
        try:
            import torch
            if not torch.cuda.is_available():
                raise ImportError("no CUDA device")
        except ImportError as e:
            print(f"SKIP: {e}")
            sys.exit(77)
        run(os.path.abspath(a.flagtrace), os.path.abspath(a.out_dir))


if __name__ == "__main__":
    main()

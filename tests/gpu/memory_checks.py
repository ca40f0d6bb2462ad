"""Device memory on the GPU (issue 51's H100/H200 checks); one PASS/FAIL line per check, with its numbers.

  (a) profile  a small MLP trained 5 steps under torch.profiler(profile_memory=True), natively and with
               `import flagtrace.torch`: every op's memory columns of `stats -r ops` equal key_averages()'
               (self and total device memory, CPU memory where ours has it), and `stats -r memory`'s peak
               allocated equals torch.cuda.max_memory_allocated() over the window (reset before it)
  (b) record   the same model under `flagtrace record` without torch.profiler (and a large temporary freed
               by empty_cache): peak reserved equals torch.cuda.max_memory_reserved(); every segment of
               torch.cuda.memory_snapshot() is an allocation in the trace (address and size)
  (c) cupy/jax CuPy (no pool: its cudaMallocs by address and size, one freed) and JAX (preallocation: one
               allocation of its pool's bytes_limit; XLA_PYTHON_CLIENT_PREALLOCATE=false: its pool's peak)
               under `record`; each skipped, with a line saying so, where the module is not installed
  (d) leak     a loop that keeps one tensor per step: `advise` finds the leak with its bytes per step and
               the op/call (else `stats -r memory`'s leak candidates), under torch.profiler + flagtrace.torch
               (ProfilerStep#N) and under `record` (NVTX "step")

  memory_checks.py --flagtrace FT --out-dir DIR [--only a,b,c,d]    run the programs, then check
  memory_checks.py --flagtrace FT --out-dir DIR --check [--only ..]  check what DIR holds already
  memory_checks.py prog-NAME DIR ...                                 the programs themselves
  memory_checks.py synth DIR      traces in the programs' shape written by hand, for --check without a GPU

The names of flagtrace's JSON fields (stats -r memory, the ops memory columns, advise's memory findings)
are read in one place, MEM_REPORT, FIELDS, field() and mem_summary() below: fix them there when the readers rename them."""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

ME = os.path.abspath(__file__)
STEPS = 5  # (a), (b): training steps in the window
LEAK_STEPS = 12  # (d): steps that each keep one tensor
# (d) the kept tensor: a size no other tensor of the loop has, a multiple of 512 (the caching
# allocator's rounding, what torch's [memory] events carry)
LEAK_PROF_BYTES = 3 * 1024 * 1024 + 3 * 512
# under record the caching allocator's cudaMalloc is what is seen: above 10 MiB a request is rounded
# to 2 MiB and gets a segment of its own, so each step makes exactly one cudaMalloc of this size
LEAK_REC_BYTES = 26 * 1024 * 1024
# the ops/calls a leak finding may name: the range around the kept tensor, the ops inside it, the call
LEAK_PROF_WHERE = ("keep_tensor", "aten::clone", "aten::empty_like", "aten::empty_strided", "aten::empty")
LEAK_REC_WHERE = ("keep_tensor", "cudaMalloc")
CUPY_SIZES = (1 << 20, 3 * (1 << 20) + 123, 64 << 20)

# ---- flagtrace's JSON field names: the one place to fix them (docs/memory.md, docs/stats.md) ----
MEM_REPORT = "memory"  # `stats -r memory -f json`: key "memory", rows {rank, device, what, bytes, count, ..., op, call}
FIELDS = {
    # stats -r ops -f json: each op row's memory columns (bytes; torch's key_averages() rules)
    "self_device_mem": ("self_device_mem_bytes",),
    "device_mem": ("device_mem_bytes",),
    "self_cpu_mem": ("self_cpu_mem_bytes",),
    "cpu_mem": ("cpu_mem_bytes",),
    # advise -f json: the memory findings' rule names and the leak's bytes a step (the slope)
    "leak_rules": ("leak",),
    "per_step": ("bytes",),
    "where": ("where",),
}


def field(row, key, default=None):
    """row's value under the first of FIELDS[key]'s names it has (default when none)."""
    for name in FIELDS[key]:
        if isinstance(row, dict) and name in row and row[name] != "":
            return row[name]
    return default


def mem_summary(doc, device=None):
    """`stats -r memory -f json` of one device (the first that is not the CPU unless named):
    {device, peak_allocated, peak_reserved, live_at_end, live: [{bytes, op, call}], skipped}."""
    rows = doc.get(MEM_REPORT, [])
    devs = [r["device"] for r in rows if r.get("device") and r["device"] != "cpu"]
    dev = device or (devs[0] if devs else None)
    out = {"device": dev, "live": [], "skipped": None}
    for r in rows:
        if r.get("what") == "skipped":
            out["skipped"] = r.get("op")
        if r.get("device") != dev:
            continue
        w = r.get("what")
        if w in ("peak_allocated", "peak_reserved", "live_at_end"):
            out[w] = r.get("mem_bytes")  # the report's key (a table keeps it at any width)
        elif w == "live":  # a leak candidate: one live allocation, largest first
            out["live"].append({"bytes": r.get("mem_bytes"), "op": r.get("op") or "", "call": r.get("call") or ""})
    return out


def stats_mem(ft, trace, keep):
    return mem_summary(ft_json(ft, ["stats", "-r", MEM_REPORT, "-n", "0"], trace, keep))


# ---- the programs ----

def mlp(torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # momentum: buffers made at step 1
    x = torch.randn(64, 512, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)  # the grads are allocated again every step
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def dump(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def prog_profile(out, mode):
    """(a): native or with flagtrace.torch; the trace, key_averages' memory columns, the window's peak."""
    if mode == "flagtrace":
        import flagtrace.torch  # noqa: F401  (before the first profile)
        assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    step = mlp(torch)
    step()  # warm-up: cuBLAS's workspace and the optimizer's state exist before the window
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        for i in range(STEPS):
            with record_function(f"ProfilerStep#{i}"):
                step()
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    prof.export_chrome_trace(os.path.join(out, f"profile-{mode}.json"))
    rows = []
    for e in prof.key_averages():
        r = {"key": e.key, "count": e.count, "device_type": str(e.device_type)}
        for a in ("self_device_memory_usage", "device_memory_usage", "self_cpu_memory_usage", "cpu_memory_usage"):
            r[a] = getattr(e, a, None)
        if r["self_device_memory_usage"] is None:  # older names
            r["self_device_memory_usage"] = getattr(e, "self_cuda_memory_usage", 0)
            r["device_memory_usage"] = getattr(e, "cuda_memory_usage", 0)
        rows.append(r)
    dump(os.path.join(out, f"profile-{mode}.expect.json"),
         {"max_memory_allocated": peak, "allocated_at_start": start, "key_averages": rows})


def prog_record(out):
    """(b): no profiler; a large temporary released by empty_cache, so that the peak is not the end."""
    import torch
    step = mlp(torch)
    for _ in range(STEPS):
        step()
    big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # its own 256 MiB segment
    torch.cuda.synchronize()
    segs = {(s["address"], s["total_size"]) for s in torch.cuda.memory_snapshot()}
    del big
    torch.cuda.empty_cache()  # a cudaFree: the peak reserved is above the end's
    for _ in range(STEPS):
        step()
    torch.cuda.synchronize()
    segs |= {(s["address"], s["total_size"]) for s in torch.cuda.memory_snapshot()}
    dump(os.path.join(out, "record.expect.json"),
         {"max_memory_reserved": torch.cuda.max_memory_reserved(), "max_memory_allocated":
          torch.cuda.max_memory_allocated(), "reserved_at_end": torch.cuda.memory_reserved(),
          "segments": sorted([a, n] for a, n in segs)})


def prog_cupy(out):
    import cupy
    cupy.cuda.set_allocator(None)  # no pool: every array is a cudaMalloc of its own size
    arrays = [cupy.empty(n, dtype=cupy.uint8) for n in CUPY_SIZES]
    got = [[a.data.ptr, a.nbytes] for a in arrays]
    cupy.cuda.Device().synchronize()
    freed = got[1]
    del arrays[1]  # its cudaFree
    cupy.cuda.Device().synchronize()
    dump(os.path.join(out, "cupy.expect.json"), {"allocations": got, "freed": freed})


def prog_jax(out, mode):
    import jax
    import jax.numpy as jnp
    x = jnp.ones((2048, 2048), dtype=jnp.float32)
    y = (x @ x).block_until_ready()
    stats = jax.devices()[0].memory_stats() or {}
    dump(os.path.join(out, f"jax-{mode}.expect.json"), {"memory_stats": stats, "sum": float(y[0, 0])})


def prog_leak_profile(out):
    import flagtrace.torch  # noqa: F401
    assert flagtrace.torch.available, flagtrace.torch.reason
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule
    w = torch.randn(1024, 1024, device="cuda")
    src = torch.randn(LEAK_PROF_BYTES // 4, device="cuda")
    kept = []
    path = os.path.join(out, "leak-profile.json.gz")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
                 schedule=schedule(wait=1, warmup=1, active=LEAK_STEPS, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(LEAK_STEPS + 2):
            h = torch.relu(torch.randn(256, 1024, device="cuda") @ w)  # freed at the next step
            with record_function("keep_tensor"):
                kept.append(src.clone())
            h.sum().item()
            prof.step()
    dump(os.path.join(out, "leak-profile.expect.json"), {"bytes_per_step": LEAK_PROF_BYTES, "steps": LEAK_STEPS})


def prog_leak_record(out):
    import torch
    nvtx = torch.cuda.nvtx
    w = torch.randn(1024, 1024, device="cuda")
    kept = []
    for i in range(LEAK_STEPS + 2):
        nvtx.range_push("step" if i >= 2 else "warmup")
        h = torch.relu(torch.randn(256, 1024, device="cuda") @ w)
        nvtx.range_push("keep_tensor")
        kept.append(torch.empty(LEAK_REC_BYTES, dtype=torch.uint8, device="cuda"))
        nvtx.range_pop()
        h.sum().item()
        nvtx.range_pop()
    dump(os.path.join(out, "leak-record.expect.json"), {"bytes_per_step": LEAK_REC_BYTES, "steps": LEAK_STEPS})


# ---- the checks ----

class Checks:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def say(self, ok, text):
        print(f"{'PASS' if ok else 'FAIL'} {text}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def skip(self, text):
        print(f"SKIP {text}", flush=True)
        self.skipped += 1


def load(path):
    with open(path) as f:
        return json.load(f)


def events(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def as_int(v):
    """An Addr or a byte count: an integer, or a string ("0x7f...", "123")."""
    return int(v, 0) if isinstance(v, str) else int(v)


def mem_events(path, kind="device", with_time=False):
    """The trace's [memory] instants as (op, addr, bytes) where the Kind is kind (or absent); with_time:
    (ts, op, addr, bytes, total reserved) in time order."""
    out = []
    for e in events(path):
        if e.get("name") != "[memory]" or e.get("ph") != "i":
            continue
        a = e.get("args", {})
        if a.get("Kind", kind) != kind or a.get("Device Type", 1) not in (1, 20):
            continue
        b = as_int(a.get("Bytes", 0))
        op = a.get("Op") or ("alloc" if b > 0 else "free" if b < 0 else "other")
        row = (op, as_int(a.get("Addr", 0)), b)
        out.append((float(e.get("ts", 0)),) + row + (as_int(a.get("Total Reserved", 0)),) if with_time else row)
    return sorted(out) if with_time else out


def ft_json(ft, args, trace, keep=None):
    cmd = [ft] + args + ["-f", "json", trace]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    if keep:
        with open(keep, "w") as f:
            f.write(r.stdout)
    return json.loads(r.stdout)


def check_profile(c, ft, out, mode):
    trace = os.path.join(out, f"profile-{mode}.json")
    want = load(os.path.join(out, f"profile-{mode}.expect.json"))
    try:
        ops = ft_json(ft, ["stats", "-r", "ops", "-n", "0"], trace, os.path.join(out, f"ops-{mode}.json"))["ops"]
        mem = stats_mem(ft, trace, os.path.join(out, f"mem-{mode}.json"))
    except (RuntimeError, ValueError, KeyError) as e:
        c.say(False, f"(a) [{mode}] stats failed: {e}")
        return
    ours = {}
    for r in ops:  # key_averages() keys every ProfilerStep#N "ProfilerStep*": their rows summed (docs/ops.md)
        name = "ProfilerStep*" if r["name"].startswith("ProfilerStep#") else r["name"]
        if name in ours:
            ours[name] = {k: (ours[name][k] + v if isinstance(v, (int, float)) and k in ours[name] else v)
                          for k, v in r.items()}
        else:
            ours[name] = dict(r)
    ours.setdefault("[memory]", ours.get("(no op)"))  # torch's unattributed [memory] row; ours may say (no op)
    bad, n, n_mem, cpu_cols = [], 0, 0, 0
    for e in want["key_averages"]:
        if not e["device_type"].endswith("CPU"):
            continue  # a kernel's row: no memory
        r = ours.get(e["key"])
        if r is None:
            if e["self_device_memory_usage"] or e["device_memory_usage"]:
                bad.append(f"{e['key']}: not in stats -r ops (key_averages: self {e['self_device_memory_usage']}, "
                           f"total {e['device_memory_usage']})")
            continue
        n += 1
        n_mem += bool(e["self_device_memory_usage"] or e["device_memory_usage"])
        pairs = [("self device", field(r, "self_device_mem"), e["self_device_memory_usage"]),
                 ("device total", field(r, "device_mem"), e["device_memory_usage"])]
        if field(r, "self_cpu_mem") is not None:
            cpu_cols += 1
            pairs += [("self cpu", field(r, "self_cpu_mem"), e["self_cpu_memory_usage"]),
                      ("cpu total", field(r, "cpu_mem"), e["cpu_memory_usage"])]
        for col, got, exp in pairs:
            if got is None or exp is None or int(got) != int(exp):
                bad.append(f"{e['key']}: {col} {got} vs key_averages {exp}")
    for line in bad[:40]:
        print(f"     MISMATCH [{mode}] {line}")
    c.say(not bad and n_mem > 0, f"(a) [{mode}] ops memory columns vs key_averages(): {n} rows compared ({n_mem} "
          f"with device memory, CPU memory columns on {cpu_cols}), {len(bad)} mismatches")
    peak = mem.get("peak_allocated")
    c.say(peak is not None and int(peak) == want["max_memory_allocated"],
          f"(a) [{mode}] {mem['device']}: peak allocated {peak} vs torch.cuda.max_memory_allocated() "
          f"{want['max_memory_allocated']} over the window (allocated at its start {want['allocated_at_start']}; "
          f"skipped: {mem['skipped']})")


def check_record(c, ft, out):
    trace = os.path.join(out, "record.json.gz")
    want = load(os.path.join(out, "record.expect.json"))
    try:
        mem = stats_mem(ft, trace, os.path.join(out, "mem-record.json"))
    except (RuntimeError, ValueError) as e:
        c.say(False, f"(b) stats -r {MEM_REPORT} failed: {e}")
        mem = {"device": None}
    peak_r, peak_a = mem.get("peak_reserved"), mem.get("peak_allocated")
    ev = mem_events(trace)
    allocs = {(a, b) for op, a, b in ev if op == "alloc"}
    segs = [tuple(s) for s in want["segments"]]
    missing = [s for s in segs if s not in allocs]
    seg_addrs = {a for a, _ in segs}
    # The trace sees every cudaMalloc of the process, torch's caching allocator's segments and what
    # others allocate themselves (each thread's cuBLAS handle: 64 MiB + 129 KiB of workspace, measured
    # on an H100), so torch's max_memory_reserved() is the peak of its segments' allocations in the
    # trace, and stats' peak reserved is the trace's own highest Total Reserved.
    timed = mem_events(trace, with_time=True)
    cur = torch_peak = 0
    for _, op, a, b, _ in timed:
        if a in seg_addrs and op in ("alloc", "free"):
            cur += b
            torch_peak = max(torch_peak, cur)
    own_peak = max((r for *_, r in timed), default=None)
    c.say(torch_peak == want["max_memory_reserved"] and peak_r is not None and int(peak_r) == own_peak,
          f"(b) {mem['device']}: torch's segments in the trace peak at {torch_peak} vs "
          f"torch.cuda.max_memory_reserved() {want['max_memory_reserved']}; stats' peak reserved {peak_r} = the "
          f"trace's highest Total Reserved {own_peak} (torch's and the rest of the process's: "
          f"{(int(peak_r) - torch_peak) if peak_r is not None else None} bytes more; ours: peak allocated {peak_a}; "
          f"torch: reserved at the end {want['reserved_at_end']}; skipped: {mem.get('skipped')})")
    others = sorted(b for op, a, b in ev if op == "alloc" and a not in seg_addrs)
    c.say(not missing and segs, f"(b) {len(segs) - len(missing)} of {len(segs)} segments of memory_snapshot() are "
          f"allocations in the trace (address and size); missing: {[(hex(a), n) for a, n in missing[:8]]}; "
          f"{len(allocs)} device allocations in all, {len(others)} outside torch's segments "
          f"({sum(others)} bytes: {others[:8]})")


def check_cupy(c, out):
    trace = os.path.join(out, "cupy.json.gz")
    want = load(os.path.join(out, "cupy.expect.json"))
    ev = mem_events(trace)
    allocs = {(a, b) for op, a, b in ev if op == "alloc"}
    frees = {a for op, a, _ in ev if op == "free"}
    missing = [g for g in want["allocations"] if tuple(g) not in allocs]
    c.say(not missing, f"(c) cupy: {len(want['allocations']) - len(missing)} of {len(want['allocations'])} arrays "
          f"are allocations of their address and size (sizes {[n for _, n in want['allocations']]}); missing "
          f"{missing}")
    c.say(want["freed"][0] in frees, f"(c) cupy: the deleted array's free at {hex(want['freed'][0])} "
          f"{'present' if want['freed'][0] in frees else 'absent'} ({len(frees)} frees)")


def check_jax(c, ft, out, mode):
    trace = os.path.join(out, f"jax-{mode}.json.gz")
    stats = load(os.path.join(out, f"jax-{mode}.expect.json"))["memory_stats"]
    sizes = sorted((b for op, _, b in mem_events(trace) if op == "alloc"), reverse=True)
    if mode == "prealloc":
        limit = stats.get("bytes_limit")
        ok = limit is not None and limit in sizes
        c.say(ok, f"(c) jax preallocation: an allocation of the pool's bytes_limit {limit}: "
              f"{'present' if ok else 'absent'} (largest allocations {sizes[:3]}, "
              f"{len(sizes)} in all; memory_stats {stats})")
        return
    try:
        peak = stats_mem(ft, trace, os.path.join(out, f"mem-jax-{mode}.json")).get("peak_allocated")
    except (RuntimeError, ValueError) as e:
        c.say(False, f"(c) jax without preallocation: stats -r {MEM_REPORT} failed: {e}")
        return
    pool = stats.get("peak_pool_bytes")
    if pool is not None:
        # The pool grows by whole regions. Measured on the H100 (jax 0.x, CUDA 13): the regions
        # come through the runtime's cudaMalloc, not the driver's cuMemAlloc, beside others'
        # allocations (the cuBLAS handle XLA makes: 64 MiB + 128 KiB + ...), so the pool's regions
        # are found by their sizes: some of the trace's device allocations add up to
        # peak_pool_bytes exactly (subset sums, bounded by the pool).
        sums = {0}
        for b in sizes:
            sums |= {x + b for x in sums if x + b <= pool}
        ok = pool in sums and peak is not None and int(peak) >= pool
        what = (f"the pool's peak_pool_bytes {pool}: {'some' if pool in sums else 'no'} set of the trace's "
                f"{len(sizes)} device allocations adds up to it (the peak also holds others' allocations: "
                f"{int(peak or 0) - pool} bytes)")
    else:
        pool = stats.get("peak_bytes_in_use", 0)
        ok = peak is not None and int(peak) >= pool > 0
        what = f"at least peak_bytes_in_use {pool} (no peak_pool_bytes in memory_stats)"
    c.say(ok, f"(c) jax without preallocation: peak allocated {peak} vs {what}; no allocation of bytes_limit "
          f"{stats.get('bytes_limit')}: {stats.get('bytes_limit') not in sizes} (largest {sizes[:3]})")


def check_leak(c, ft, out, mode):
    trace = os.path.join(out, f"leak-{mode}.json.gz")
    want = load(os.path.join(out, f"leak-{mode}.expect.json"))
    size, where_ok = want["bytes_per_step"], LEAK_PROF_WHERE if mode == "profile" else LEAK_REC_WHERE
    step = [] if mode == "profile" else ["--step", "step"]
    try:
        adv = ft_json(ft, ["advise"] + step, trace, os.path.join(out, f"advise-leak-{mode}.json"))
    except (RuntimeError, ValueError) as e:
        c.say(False, f"(d) [{mode}] advise failed: {e}")
        adv = {}
    found = [f for f in adv.get("findings", []) if f.get("rule") in FIELDS["leak_rules"]]
    if found:
        f = found[0]
        per, where = field(f, "per_step"), str(field(f, "where", ""))
        ok = per is not None and int(round(float(per))) == size and any(w in where for w in where_ok)
        c.say(ok, f"(d) [{mode}] advise's {f.get('rule')} finding: {per} bytes per step (kept: {size}) at "
              f"'{where}' (expected one of {where_ok}); rules found: {[x.get('rule') for x in adv['findings']]}")
        return
    # no memory finding in advise: stats -r memory's leak candidates (allocations live at the window's end)
    print(f"     [{mode}] advise has no leak finding (rules: {[x.get('rule') for x in adv.get('findings', [])]}); "
          f"stats -r {MEM_REPORT}'s leak candidates instead")
    try:
        cands = stats_mem(ft, trace, os.path.join(out, f"mem-leak-{mode}.json"))["live"]
    except (RuntimeError, ValueError) as e:
        c.say(False, f"(d) [{mode}] stats -r {MEM_REPORT} failed: {e}")
        return

    def at(x):
        return f"{x['op']} {x['call']}"
    mine = [x for x in cands if x["bytes"] == size and any(w in at(x) for w in where_ok)]
    live = sum(int(x["bytes"]) for x in mine)
    steps = want["steps"] if mode == "profile" else want["steps"] + 2  # record: the warm-up steps keep theirs too
    top = at(cands[0]) if cands else ""
    c.say(live == steps * size and any(w in top for w in where_ok),
          f"(d) [{mode}] leak candidates at {where_ok}: {live} bytes live at the end = {live / size:.2f} x {size} "
          f"(expected {steps} x); the largest candidate at '{top}' ({len(cands)} candidates)")


# ---- traces in the programs' shape written by hand, for --check without a GPU ----

def synth_mem(ts, addr, nbytes, total, reserved, ours=None, tid=1):
    args = {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": nbytes, "Total Allocated": total,
            "Total Reserved": reserved}
    args.update(ours or {})
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": args}


def synth_op(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def synth(out):
    """(a): op A [0, 100] around B [10, 50]; +1000 B at 20 (in B), +512 at 60 and -1000 at 80 (in A), +256
    at 200 (in no op: torch's [memory] row): B self = total = 1000; A total 512, self -488; [memory] 256.
    Peak allocated 4096 + 1512 = 5608. (b)/(c): our own events, two segments and a freed one.
    (d): 12 ProfilerStep#N / NVTX "step" ranges, each keeping one allocation (the profiler's in an op
    keep_tensor > aten::empty_strided, record's by cudaMalloc), beside one freed in the step."""
    ev = [synth_op("A", 0, 100), synth_op("B", 10, 40), synth_mem(20, 0x7000, 1000, 5096, 8192),
          synth_mem(60, 0x8000, 512, 5608, 8192), synth_mem(80, 0x7000, -1000, 4608, 8192),
          synth_mem(200, 0x9000, 256, 4864, 8192)]
    rows = [{"key": "A", "count": 1, "device_type": "DeviceType.CPU", "self_device_memory_usage": -488,
             "device_memory_usage": 512, "self_cpu_memory_usage": 0, "cpu_memory_usage": 0},
            {"key": "B", "count": 1, "device_type": "DeviceType.CPU", "self_device_memory_usage": 1000,
             "device_memory_usage": 1000, "self_cpu_memory_usage": 0, "cpu_memory_usage": 0},
            {"key": "[memory]", "count": 1, "device_type": "DeviceType.CPU", "self_device_memory_usage": 256,
             "device_memory_usage": 256, "self_cpu_memory_usage": 0, "cpu_memory_usage": 0}]
    for mode in ("native", "flagtrace"):
        with open(os.path.join(out, f"profile-{mode}.json"), "w") as f:
            json.dump({"traceEvents": ev}, f)
        dump(os.path.join(out, f"profile-{mode}.expect.json"),
             {"max_memory_allocated": 5608, "allocated_at_start": 4096, "key_averages": rows})

    def ours(op, kind="device"):
        return {"Kind": kind, "Op": op, "correlation": 7, "stream": 0}

    seg = [(0x7f0000000000, 2 << 20), (0x7f0000200000, 20 << 20), (0x7f0002000000, 256 << 20)]
    ev, tot = [], 0
    for k, (a, n) in enumerate(seg):
        tot += n
        ev.append(synth_mem(10 + k, a, n, tot, tot, ours("alloc")))
    tot -= seg[2][1]
    ev.append(synth_mem(20, seg[2][0], -seg[2][1], tot, tot, ours("free")))
    ev.append(synth_mem(21, 0x1000, 4096, tot, tot, ours("alloc", "pinned")))
    with gzip.open(os.path.join(out, "record.json.gz"), "wt") as f:
        json.dump({"traceEvents": ev}, f)
    dump(os.path.join(out, "record.expect.json"),
         {"max_memory_reserved": sum(n for _, n in seg), "max_memory_allocated": 1 << 20,
          "reserved_at_end": tot, "segments": [list(x) for x in seg]})
    cupy = [[0x7e0000000000 + (k << 28), n] for k, n in enumerate(CUPY_SIZES)]
    ev = [synth_mem(10 + k, a, n, 0, 0, ours("alloc")) for k, (a, n) in enumerate(cupy)]
    ev.append(synth_mem(20, cupy[1][0], -cupy[1][1], 0, 0, ours("free")))
    with gzip.open(os.path.join(out, "cupy.json.gz"), "wt") as f:
        json.dump({"traceEvents": ev}, f)
    dump(os.path.join(out, "cupy.expect.json"), {"allocations": cupy, "freed": cupy[1]})
    # JAX: a pool of bytes_limit at once; without preallocation two regions, the pool's peak their sum
    limit = 60 << 30
    ev = [synth_mem(10, 0x7d0000000000, limit, limit, limit, ours("alloc"))]
    with gzip.open(os.path.join(out, "jax-prealloc.json.gz"), "wt") as f:
        json.dump({"traceEvents": ev}, f)
    dump(os.path.join(out, "jax-prealloc.expect.json"), {"memory_stats": {"bytes_limit": limit, "bytes_in_use": 1 << 24}})
    # (the pool's regions, 2 + 16 MiB, and a cuBLAS handle's 64 MiB workspace, all by the runtime's cudaMalloc
    # as measured on the H100)
    ev = [synth_mem(10, 0x7d0000000000, 2 << 20, 2 << 20, 2 << 20, dict(ours("alloc"), correlation=1)),
          synth_mem(11, 0x7d0000200000, 16 << 20, 18 << 20, 18 << 20, dict(ours("alloc"), correlation=2)),
          synth_mem(12, 0x7d0001200000, 64 << 20, 82 << 20, 82 << 20, dict(ours("alloc"), correlation=3))]
    ev += [dict(synth_op(name, t, 1, cat="cuda_" + kind), args={"correlation": corr})
           for name, t, kind, corr in (("cudaMalloc", 10, "runtime", 1), ("cudaMalloc", 11, "runtime", 2),
                                       ("cudaMalloc", 12, "runtime", 3))]
    with gzip.open(os.path.join(out, "jax-noprealloc.json.gz"), "wt") as f:
        json.dump({"traceEvents": ev}, f)
    dump(os.path.join(out, "jax-noprealloc.expect.json"),
         {"memory_stats": {"bytes_limit": limit, "peak_pool_bytes": 18 << 20, "peak_bytes_in_use": 16 << 20}})
    for mode in ("profile", "record"):
        size = LEAK_PROF_BYTES if mode == "profile" else LEAK_REC_BYTES
        ev, tot, t = [], 1 << 20, 1000
        for i in range(LEAK_STEPS):
            name = f"ProfilerStep#{i + 2}" if mode == "profile" else "step"
            ev.append(synth_op(name, t, 100, "user_annotation"))
            ev.append(synth_op("aten::randn", t + 5, 10))
            tot += 1 << 20
            ev.append(synth_mem(t + 6, 0x5000 + i, 1 << 20, tot, 1 << 30, ours("alloc") if mode == "record" else None))
            if mode == "profile":
                ev.append(synth_op("keep_tensor", t + 20, 30, "user_annotation"))
                ev.append(synth_op("aten::empty_strided", t + 25, 10))
            tot += size
            if mode == "record":  # the cudaMalloc call the allocation links to
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 1, "ts": t + 28,
                           "dur": 5, "args": {"correlation": 100 + i}})
            ev.append(synth_mem(t + 30, 0x100000 * (i + 1), size, tot, 1 << 30,
                                dict(ours("alloc"), correlation=100 + i) if mode == "record" else None))
            tot -= 1 << 20
            ev.append(synth_mem(t + 60, 0x5000 + i, -(1 << 20), tot, 1 << 30,
                                ours("free") if mode == "record" else None))
            t += 200
        with gzip.open(os.path.join(out, f"leak-{mode}.json.gz"), "wt") as f:
            json.dump({"traceEvents": ev}, f)
        dump(os.path.join(out, f"leak-{mode}.expect.json"),
             {"bytes_per_step": size, "steps": LEAK_STEPS if mode == "profile" else LEAK_STEPS - 2})


# ---- running them ----

def have(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def run(cmd, env=None):
    t = time.perf_counter()
    e = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    # expandable segments map memory with cuMemMap, which no allocation record shows: torch's default
    e.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    r = subprocess.run(cmd, env=e)
    print(f"     ran {' '.join(cmd[-3:])}: exit {r.returncode} in {time.perf_counter() - t:.1f} s", flush=True)
    return r.returncode == 0


def record(ft, out, name, prog, *args, env=None):
    trace = os.path.join(out, name + ".json.gz")
    return run([ft, "record", "--force-overwrite", "-o", trace, "--", sys.executable, ME, prog, out, *args], env)


PROGS = {"prog-profile": lambda a: prog_profile(a[0], a[1]), "prog-record": lambda a: prog_record(a[0]),
         "prog-cupy": lambda a: prog_cupy(a[0]), "prog-jax": lambda a: prog_jax(a[0], a[1]),
         "prog-leak-profile": lambda a: prog_leak_profile(a[0]), "prog-leak-record": lambda a: prog_leak_record(a[0])}


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in PROGS:
        return PROGS[sys.argv[1]](sys.argv[2:])
    if len(sys.argv) == 3 and sys.argv[1] == "synth":
        os.makedirs(sys.argv[2], exist_ok=True)
        return synth(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flagtrace", required=True, help="the flagtrace binary")
    ap.add_argument("--out-dir", required=True, help="traces, stats' and advise's JSON go here")
    ap.add_argument("--only", default="a,b,c,d", help="which checks: a,b,c (cupy and jax),cupy,jax,d (comma-separated)")
    ap.add_argument("--check", action="store_true", help="only check what --out-dir holds")
    a = ap.parse_args()
    only = set(a.only.split(","))
    os.makedirs(a.out_dir, exist_ok=True)
    out, ft = os.path.abspath(a.out_dir), os.path.abspath(a.flagtrace)
    c, t0, ran = Checks(), time.perf_counter(), {}
    torch_env = {}

    def step(key, fn):
        ran[key] = True if a.check else fn()
        if not ran[key]:
            c.say(False, f"{key}: its program failed (above)")
        return ran[key]

    if "a" in only:
        for mode in ("native", "flagtrace"):
            if step(f"(a) {mode}", lambda m=mode: run([sys.executable, ME, "prog-profile", out, m], torch_env)):
                check_profile(c, ft, out, mode)
    if "b" in only and step("(b)", lambda: record(ft, out, "record", "prog-record", env=torch_env)):
        check_record(c, ft, out)
    if "c" in only or "cupy" in only:
        if not (os.path.exists(os.path.join(out, "cupy.expect.json")) if a.check else have("cupy")):
            c.skip("(c) cupy: CuPy is not installed on this machine (pip install cupy-cuda13x where there is a "
                   "network, or carry its wheel)")
        elif step("(c) cupy", lambda: record(ft, out, "cupy", "prog-cupy")):
            check_cupy(c, out)
    if "c" in only or "jax" in only:
        if not (os.path.exists(os.path.join(out, "jax-prealloc.expect.json")) if a.check else have("jax")):
            c.skip("(c) jax: JAX is not installed on this machine")
        else:
            for mode, env in (("prealloc", {}), ("noprealloc", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})):
                if step(f"(c) jax {mode}", lambda m=mode, e=env: record(ft, out, f"jax-{m}", "prog-jax", m, env=e)):
                    check_jax(c, ft, out, mode)
    if "d" in only:
        if step("(d) profile", lambda: run([sys.executable, ME, "prog-leak-profile", out], torch_env)):
            check_leak(c, ft, out, "profile")
        if step("(d) record", lambda: record(ft, out, "leak-record", "prog-leak-record", env=torch_env)):
            check_leak(c, ft, out, "record")
    print(f"memory checks: {c.passed} passed, {c.failed} failed, {c.skipped} skipped "
          f"({time.perf_counter() - t0:.0f} s)")
    return 1 if c.failed or not (c.passed or c.skipped) else 0


if __name__ == "__main__":
    sys.exit(main() or 0)

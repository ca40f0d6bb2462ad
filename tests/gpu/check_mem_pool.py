"""Holds `flagtrace record`'s trace of mem_pool_probe against what CUDA said after each call
(issue 51): every allocation and free at its pointer and size, and each pool's reserved bytes
(the sum of its reserve/unreserve "Pool Bytes" up to the call) equal to the pool's
cudaMemPoolAttrReservedMemCurrent. A mismatch in the pool's bytes means CUPTI's pool sizes
read otherwise than docs/memory.md ("Capture: CUDA") assumes: every one is printed.

usage: check_mem_pool.py TRACE PROBE_OUTPUT"""
import json
import sys

from trace_checks import load, xs

MIB = 1 << 20


def ns(us):
    """A trace time in microseconds (3 decimals) as whole nanoseconds."""
    return round(us * 1000)


def main(trace, probe_path):
    doc = load(trace)
    probe = [json.loads(line) for line in open(probe_path) if line.strip()]
    names = {p["call"] for p in probe}
    calls = sorted((e for e in xs(doc, ("cuda_runtime",)) if e["name"] in names), key=lambda e: e["ts"])
    # the probe's calls are a name's last ones: the CUDA runtime makes its own before them
    # (cudaFree(0) at context creation), which the probe does not print
    matched = []
    for name in names:
        lines = [p for p in probe if p["call"] == name]
        mine = [e for e in calls if e["name"] == name][-len(lines):]
        matched += [(e["args"]["correlation"], p, e["ts"] + e["dur"]) for e, p in zip(mine, lines)]
    matched.sort(key=lambda m: m[2])
    matched = [(c, p) for c, p, _ in matched]
    # in whole ns: an instant written at its call's end must compare equal to ts + dur
    # (the microsecond floats' sum is off by an ulp at today's epoch times)
    ends = {c: ns(e["ts"]) + ns(e["dur"]) for e in calls for c in [e["args"]["correlation"]]}
    assert len(matched) == len(probe), f"{len(matched)} of the probe's {len(probe)} calls found in the trace"
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    by_corr = {}
    for e in mem:
        by_corr.setdefault(e["args"]["correlation"], []).append(e)
    problems = []

    def ops(corr, op):
        return [e["args"] for e in by_corr.get(corr, []) if e["args"]["Op"] == op]

    created = next((c for c, p in matched if p["call"] == "cudaMemPoolCreate"), None)
    pool = None
    for corr, p in matched:
        call, ptr = p["call"], p["ptr"]
        want_op = {"cudaMalloc": "alloc", "cudaMallocFromPoolAsync": "alloc", "cudaMallocAsync": "alloc",
                   "cudaFree": "free", "cudaFreeAsync": "free"}.get(call)
        if want_op:
            got = ops(corr, want_op)
            if len(got) != 1 or got[0]["Addr"] != ptr:
                problems.append(f"{call} (correlation {corr}): want one {want_op} at {ptr:#x}, got {got}")
            elif call in ("cudaMallocFromPoolAsync",):
                pool = pool or got[0].get("Pool")
                if got[0].get("Pool") != pool or not pool:
                    problems.append(f"{call}: Pool {got[0].get('Pool')}, the created pool's is {pool}")
            elif call in ("cudaMalloc", "cudaFree") and (got[0].get("Pool", 0) or abs(got[0]["Bytes"]) != MIB):
                problems.append(f"{call}: want 1 MiB outside any pool, got {got[0]}")
    if created is not None:
        made = ops(created, "reserve")
        if len(made) != 1:
            problems.append(f"cudaMemPoolCreate: want one reserve, got {by_corr.get(created)}")
        elif pool and made[0].get("Pool") != pool:
            problems.append(f"cudaMemPoolCreate's pool {made[0].get('Pool')} is not its allocations' {pool}")
    # each pool's reserved level after each call, from the trace's reserve/unreserve; the
    # created pool's after each of its calls, the default pool's after its allocation only
    # (its release at the synchronization after the free makes no record: docs/memory.md)
    # (every reserve/unreserve up to the call's end counts: the default pool's is made by
    # cudaDeviceGetDefaultMemPool, a call the probe does not print)
    level, default_pool, moves = {}, None, sorted((e for e in mem if e["args"]["Op"] in ("reserve", "unreserve")),
                                                   key=lambda e: e["ts"])
    for i, (corr, p) in enumerate(matched):
        while moves and ns(moves[0]["ts"]) <= ends[corr]:
            a = moves.pop(0)["args"]
            level[a.get("Pool", 0)] = level.get(a.get("Pool", 0), 0) + a["Pool Bytes"]
        if p["call"] == "cudaMallocAsync":
            default_pool = next((a.get("Pool") for a in ops(corr, "alloc")), None)
            subject = default_pool
        elif default_pool is not None or p["reserved"] < 0:
            continue
        else:
            subject = pool if pool is not None else next((a.get("Pool") for a in ops(corr, "reserve")), None)
        if not subject:
            problems.append(f"after {p['call']} (#{i}): no pool named in the trace")
        elif level.get(subject, 0) != p["reserved"]:
            problems.append(f"after {p['call']} (#{i}): the trace reserves {level.get(subject, 0)} for pool "
                            f"{subject:#x}, CUDA says {p['reserved']} reserved ({p['used']} used)")
    for line in problems:
        print("MISMATCH", line)
    print(f"{len(matched)} calls, {len(mem)} [memory] instants, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

"""The cross-backend profiler contract: rows gated by a capability table per platform,
each skip stating why, and an unconditional floor so a gate can never make the
contract assert nothing. Reads the shared capture (conftest.py)."""
import pytest

from conftest import DEVICE_CATS, flow_halves, runtime_events, xs

ROWS = ("kernel", "runtime", "flow", "linkage", "metadata", "memcpy", "memset", "cbid")
# platform -> row -> None (asserted) or the reason it is not
CAPABILITIES = {
    "cuda": {row: None for row in ROWS},
}
PLATFORM = "cuda"
KERNEL_FIELDS = {"External id", "device", "stream", "correlation", "queued", "context", "registers per thread",
                 "shared memory", "blocks per SM", "warps per SM", "grid", "block", "est. achieved occupancy %"}


def gate(row):
    reason = CAPABILITIES[PLATFORM][row]
    if reason:
        pytest.skip(f"{PLATFORM} {row}: {reason}")


def test_floor():
    asserted = [r for r in ROWS if CAPABILITIES[PLATFORM][r] is None]
    assert len(asserted) >= 4, f"only {asserted} asserted on {PLATFORM}"


def test_kernel(capture):
    gate("kernel")
    k = xs(capture["doc"], ("kernel",))
    assert k and all(e["dur"] >= 0 and e["args"].get("grid") for e in k)


def test_runtime(capture):
    gate("runtime")
    rt = runtime_events(capture["doc"])
    assert any(e["name"].startswith("cudaLaunchKernel") for e in rt), sorted({e["name"] for e in rt})


def test_flow(capture):
    gate("flow")
    halves = flow_halves(capture["doc"])
    assert halves and all(sorted(h) == ["f", "s"] for h in halves.values())


def test_linkage(capture):
    gate("linkage")
    ops = {e["args"]["External id"]: e["name"] for e in xs(capture["doc"], ("cpu_op",))}
    kernels = xs(capture["doc"], ("kernel",))
    linked = [k for k in kernels if k["args"].get("External id") in ops]
    assert len(linked) == len(kernels), "every kernel here is launched inside an op and must carry its External id"
    assert {ops[k["args"]["External id"]] for k in linked} >= {"aten::mm", "aten::sort", "flagtrace_test::odd_block"}


def test_metadata(capture):
    gate("metadata")
    for k in xs(capture["doc"], ("kernel",)):
        assert KERNEL_FIELDS <= set(k["args"]), sorted(KERNEL_FIELDS - set(k["args"]))
    blocks = {tuple(k["args"]["block"]) for k in xs(capture["doc"], ("kernel",))}
    assert (100, 1, 1) in blocks, blocks


def test_memcpy(capture):
    gate("memcpy")
    m = [e for e in xs(capture["doc"], ("gpu_memcpy",)) if e["name"].startswith("Memcpy HtoD")]
    assert any(e["args"]["bytes"] == 65536 for e in m), [(e["name"], e["args"]["bytes"]) for e in m]


def test_memset(capture):
    gate("memset")
    m = xs(capture["doc"], ("gpu_memset",))
    assert any(e["args"]["bytes"] == 4 << 20 for e in m), [e["args"] for e in m]


def test_cbid(capture):
    gate("cbid")
    rt = runtime_events(capture["doc"])
    assert rt and all(isinstance(e["args"].get("cbid"), int) for e in rt)
    assert all(set(e["args"]) >= {"correlation", "cbid"} for e in rt)  # the floor under the gate

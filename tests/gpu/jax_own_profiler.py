"""`flagtrace record` on a JAX program that runs JAX's own profiler (issue 34): a jitted
matmul loop inside jax.profiler.trace(DIR). Natively it writes its trace; under record it
used to abort in free() (JAX's buffer callback was handed flagtrace's buffers). It must
run to its end with JAX's trace written, and record must say from when it stepped aside.

  prog DIR          the program
  check DIR STDERR  JAX's trace files exist; record's line names the takeover"""
import glob
import os
import re
import sys


def prog(d):
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda a: jnp.tanh(a @ a))
    a = jnp.ones((512, 512))
    f(a).block_until_ready()
    with jax.profiler.trace(d):
        for _ in range(20):
            a = f(a)
        a.block_until_ready()
    print("jax done", float(a[0, 0]))


def check(d, stderr_path):
    err = open(stderr_path).read()
    files = [p for p in glob.glob(os.path.join(d, "**", "*"), recursive=True) if os.path.isfile(p)]
    assert any(p.endswith((".xplane.pb", ".trace.json.gz")) for p in files), files
    w = re.findall(r"^flagtrace: wrote \S+ \((\d+) events, \d+ dropped(.*)\)$", err, re.M)
    assert len(w) == 1, err
    lost = w[0][1]
    assert "another CUPTI client" in lost and "took over" in lost, lost
    print(f"PASS JAX ran to its end under record; its trace: {len(files)} files; record: {w[0][0]} events{lost}")


if __name__ == "__main__":
    {"prog": lambda: prog(sys.argv[2]), "check": lambda: check(sys.argv[2], sys.argv[3])}[sys.argv[1]]()

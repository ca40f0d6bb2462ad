#!/usr/bin/env bash
# Builds from scratch on the GPU machine and runs every GPU test and benchmark in
# one go; logs and traces go to $OUT (at most 8 files come back from the device).
# Carry .gpu (Debian's libyajl .debs, see docs/development.md) when the machine lacks yajl.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
: >"$LOG"
pass=0
fail=0
ONLY=${GPU_CHECK_ONLY:-} # a regex: run only the matching steps (when iterating on one part)
SKIP=${GPU_CHECK_SKIP:-} # a regex: skip the matching steps (to split a run over two calls)
step() { # step NAME CMD...: runs CMD, logs it, counts it
  local name=$1
  shift
  if { [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; } || { [ -n "$SKIP" ] && [[ $name =~ $SKIP ]]; }; then
    echo "SKIP $name (GPU_CHECK_ONLY / GPU_CHECK_SKIP)" | tee -a "$LOG"
    return
  fi
  echo "=== $name" | tee -a "$LOG"
  "$@" >>"$LOG" 2>&1
  local rc=$? # taken here: inside an if's else, $? is the if's own status (0)
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1))
    echo "PASS $name" | tee -a "$LOG"
  else
    fail=$((fail + 1))
    echo "FAIL $name (exit $rc)" | tee -a "$LOG"
    tail -n 30 "$LOG" | sed 's/^/    /'
  fi
}

{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -n 2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} | tee -a "$LOG"

# The .debs are unpacked outside .gpu: a device call that carries .gpu replaces it,
# and a later bench call on the same warm machine would lose ISA-L (measured: the
# gzip rows fell back to zlib, 1.34 M ev/s instead of 5.5)
DEPS=build-deps/root
mkdir -p $DEPS # dpkg -x makes only the last directory
if [ ! -f /usr/include/yajl/yajl_parse.h ] && ls .gpu/debs/*.deb >/dev/null 2>&1; then
  for d in .gpu/debs/*.deb; do dpkg -x "$d" $DEPS; done
  export YAJL_ROOT=$PWD/$DEPS
fi
# ISA-L's gzip (libisal-dev + libisal2 .debs in .gpu/debs): CMake finds the headers
# through ISAL_ROOT; the library is loaded from there at run time (else zlib)
if [ ! -f /usr/include/isa-l/igzip_lib.h ] && ls .gpu/debs/libisal*.deb >/dev/null 2>&1; then
  for d in .gpu/debs/libisal*.deb; do dpkg -x "$d" $DEPS; done
  export ISAL_ROOT=$PWD/$DEPS
fi
export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
BUILD=build-gpu
FT=$BUILD/flagtrace
# from scratch; a run that skips this step reuses the last build (a warm machine keeps it)
# FT_WITH_TORCH: the kineto adaptor beside the injection library, so that record hands a
# torch program's own torch.profiler flagtrace's device activity (GPU_CHECK_TORCH=OFF: without it,
# a shorter build for a run of steps that need no adaptor, e.g. the memory probe and P7)
step build bash -c "rm -rf $BUILD && cmake -S . -B $BUILD -DFT_BUILD_TESTS=OFF -DFT_BUILD_GPU_TESTS=ON -DFT_CUDA_ARCHITECTURES=90 \
  -DFT_WITH_TORCH=${GPU_CHECK_TORCH:-ON} -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build $BUILD -j \$(nproc)"
LIB=$(ls "$BUILD"/libflagtrace.so.* 2>/dev/null | head -n 1)

# named ranges attributed by time: CUPTI took our clock (design.md §2)
step "C API workload (named ranges, attributed by time)" bash -c "
  FLAGOS_TRACE=1 $BUILD/tests/gpu/gpu_workload $OUT/workload_trace.json.gz $BUILD/workload_expect.json 2>$BUILD/workload.err;
  rc=\$?; cat $BUILD/workload.err; [ \$rc = 0 ] && grep -q 'ids attributed by time' $BUILD/workload.err &&
  python3 tests/gpu/check_workload_trace.py $OUT/workload_trace.json.gz $BUILD/workload_expect.json"
step "C API workload (named ranges, FLAGTRACE_CUPTI_EXTERNAL_CORRELATION=1: CUPTI's records)" bash -c "
  FLAGTRACE_CUPTI_EXTERNAL_CORRELATION=1 $BUILD/tests/gpu/gpu_workload $BUILD/workload_records.json.gz $BUILD/workload_expect.json &&
  python3 tests/gpu/check_workload_trace.py $BUILD/workload_records.json.gz $BUILD/workload_expect.json"
step "record the CUDA sample (whole run)" bash -c "
  $FT record --force-overwrite -o $OUT/sample_h200.json.gz -- $BUILD/tests/gpu/sample &&
  python3 tests/gpu/check_sample_trace.py $OUT/sample_h200.json.gz whole"
step "record the CUDA sample (--inject=preload: LD_PRELOAD, armed when libcuda loads)" bash -c "
  set -o pipefail && rm -f $BUILD/sample_preload.json.gz &&
  $FT record --inject=preload -o $BUILD/sample_preload.json.gz -- $BUILD/tests/gpu/sample 2>&1 | tee $BUILD/preload.log &&
  grep -q '^flagtrace: wrote .*/sample_preload.json.gz ([0-9]* events, 0 dropped)\$' $BUILD/preload.log &&
  python3 tests/gpu/check_sample_trace.py $BUILD/sample_preload.json.gz whole &&
  $FT record --inject=preload -- python3 -c pass 2>&1 | tee $BUILD/preload-none.log &&
  grep -q 'wrote no trace (no process of it loaded libcuda.so or libcudart.so)' $BUILD/preload-none.log"
# torch loads libcudart with dlopen from its own RUNPATH: the preload library must arm there
step "record --inject=preload a torch process: armed at torch's dlopen, its kernel in the trace" bash -c "
  rm -rf $BUILD/tp && mkdir -p $BUILD/tp &&
  $FT record --inject=preload -o $BUILD/tp/t-%p.json.gz -- python3 tests/gpu/torch_preload.py run &&
  python3 tests/gpu/torch_preload.py check $BUILD/tp"
# --capture-range defaults to preload: the sample's (static) cudart dlopens libcuda and
# gets the shim, whose wrapped cuProfilerStart starts the session (no CUPTI before it)
step "record the CUDA sample (--capture-range=cudaProfilerApi: the libcuda shim)" bash -c "
  FLAGOS_TRACE=1 $FT record --force-overwrite --capture-range=cudaProfilerApi -o $BUILD/sample_range.json.gz -- $BUILD/tests/gpu/sample --profiler-range 2>$BUILD/range.log &&
  grep -q 'waiting for cudaProfilerStart through the loader' $BUILD/range.log && grep -q 'shim. wrapped cuProfilerStart' $BUILD/range.log &&
  python3 tests/gpu/check_sample_trace.py $BUILD/sample_range.json.gz range"
step "record the CUDA sample (--inject=cuda --capture-range: CUPTI's callbacks watch)" bash -c "
  $FT record --force-overwrite --inject=cuda --capture-range=cudaProfilerApi -o $BUILD/sample_range_cupti.json.gz -- $BUILD/tests/gpu/sample --profiler-range &&
  python3 tests/gpu/check_sample_trace.py $BUILD/sample_range_cupti.json.gz range"
# issue 51: device memory on hardware (from CUPTI's callbacks, the default: levels read at
# synchronizations and trims, docs/memory.md): each allocation at CUDA's pointer, each pool's
# reserved bytes equal to cudaMemPoolAttrReservedMemCurrent after each call
step "record the memory probe: [memory] instants vs CUDA's pointers and pool sizes" bash -c "
  FLAGOS_TRACE=1 $FT record --force-overwrite -o $OUT/mem_pool_probe.json.gz -- $BUILD/tests/gpu/mem_pool_probe $BUILD/mem_probe.jsonl 2>$BUILD/mem_probe.log;
  rc=\$?; grep -E 'memory|pool' $BUILD/mem_probe.log; cat $BUILD/mem_probe.jsonl; [ \$rc = 0 ] &&
  python3 tests/gpu/check_mem_pool.py $OUT/mem_pool_probe.json.gz $BUILD/mem_probe.jsonl"
# the same probe from CUPTI's MEMORY2 / MEMORY_POOL records (FLAGTRACE_CUPTI_MEMORY=records)
step "record the memory probe from records: [memory] instants vs CUDA's pointers and pool sizes" bash -c "
  FLAGTRACE_CUPTI_MEMORY=records FLAGOS_TRACE=1 $FT record --force-overwrite -o $OUT/mem_pool_probe_rec.json.gz -- $BUILD/tests/gpu/mem_pool_probe $BUILD/mem_probe_rec.jsonl 2>$BUILD/mem_probe_rec.log;
  rc=\$?; grep -E 'memory|pool' $BUILD/mem_probe_rec.log; [ \$rc = 0 ] &&
  python3 tests/gpu/check_mem_pool.py $OUT/mem_pool_probe_rec.json.gz $BUILD/mem_probe_rec.jsonl"
# a torch process (shared cudart, libcuda dlopened by torch first) under the shim
step "record --capture-range a torch process: torch.cuda.profiler.start opens the range through the shim" bash -c "
  rm -rf $BUILD/tr && mkdir -p $BUILD/tr &&
  FLAGOS_TRACE=1 $FT record --capture-range=cudaProfilerApi -o $BUILD/tr/t.json.gz -- python3 tests/gpu/torch_preload.py range 2>$BUILD/tr/log &&
  grep -q 'shim. wrapped cuProfilerStart' $BUILD/tr/log && python3 tests/gpu/torch_preload.py check-range $BUILD/tr/t.json.gz"
# issue 39: a 2-rank torchrun loop (one GPU, no NCCL) under record --on-demand, captured
# twice for 3 s and once for 5 NVTX steps by `flagtrace capture --pid`, then 5 steps of the
# whole job by --job (issue 49: the launcher, which never steps, must not hold it), the same
# job bare beside it for the step time; then 5 torch.profiler ProfilerStep# steps; ~2.5 min
step "record --on-demand: 2-rank torch loop, two 3 s captures + 5 NVTX steps + 5 steps of the job (--job) + 5 ProfilerStep# steps, step time vs bare beside it" \
  env PYTHONUNBUFFERED=1 python3 tests/gpu/torch_on_demand.py run --flagtrace "$FT" --out-dir "$BUILD/od"
step "torch kernel fields: flagtrace vs torch.profiler" \
  python3 tests/gpu/torch_kernel_fields.py --lib "$LIB" --out-dir "$OUT"
gzip -f "$OUT/torch_native_trace.json" 2>/dev/null
step "record + emit_nvtx: per-op self device time vs key_averages (5%)" \
  env PYTHONUNBUFFERED=1 python3 tests/gpu/torch_emit_nvtx.py --flagtrace "$FT" --out-dir "$BUILD"
step "record a 2-process torchrun job: one trace per rank" bash -c "
  rm -rf $BUILD/mp && mkdir -p $BUILD/mp &&
  $FT record -o $BUILD/mp/mp-%r-%p.json.gz -- python3 -m torch.distributed.run --nproc_per_node=2 tests/gpu/torch_mp.py &&
  python3 tests/gpu/check_mp_traces.py $BUILD/mp"
# issue 41's one-GPU part: the job's ranks in one report (one clock) and rank 0 diffed against rank 1
step "report and diff of the 2-process job: ranks on one clock, rank 0 vs rank 1 kernel for kernel" \
  python3 tests/gpu/check_job_views.py "$FT" "$BUILD/mp" mp "$OUT"
step "1 M kernels, default buffers: all there, 0 dropped" bash -c "
  $BUILD/tests/gpu/stress burst 1000000 | tee $BUILD/burst.log && grep -q ' 0 dropped, 0 missing' $BUILD/burst.log"
step "1 M kernels, tiny buffers: every record in the trace or counted as dropped" \
  env FLAGTRACE_CUPTI_BUFFER_BYTES=65536 FLAGTRACE_CUPTI_DEVICE_BUFFER_BYTES=262144 $BUILD/tests/gpu/stress burst 1000000
step "16 threads x 10 k kernels, own ranges and streams" $BUILD/tests/gpu/stress threads 16 10000
step "stats: parse workers print what one thread prints (a 300 k-kernel capture, ~100 MB of text)" bash -c "
  $BUILD/bench/gpu/capture_bench 300000 $BUILD/big 1 >/dev/null && rm -f $BUILD/big.json &&
  FLAGTRACE_STATS_THREADS=0 $FT stats -f json $BUILD/big.json.gz > $BUILD/st0.json &&
  FLAGTRACE_STATS_THREADS=4 $FT stats -f json $BUILD/big.json.gz > $BUILD/st4.json && cmp $BUILD/st0.json $BUILD/st4.json &&
  python3 -c 'import json,sys; k=sum(r[\"calls\"] for r in json.load(open(sys.argv[1]))[\"kernels\"]); print(k, \"kernels in both\"); sys.exit(k < 300000)' $BUILD/st0.json"
step "stats on torch.profiler's and flagtrace's traces vs independent totals" \
  python3 tests/e2e/test_stats.py "$FT" "$OUT" torch_native_trace.json.gz sample_h200.json.gz torch_flagtrace_trace.json.gz
step "python package: pip install --no-build-isolation ./python" \
  python3 -m pip install --no-build-isolation --no-deps ./python
# issue 36: the ops report against key_averages() of the same profile, column by column
step "stats ops vs key_averages(): torch-cuda's profile (plain and by input shapes)" \
  python3 tests/gpu/torch_key_averages.py --flagtrace "$FT" --out "$BUILD/ka"
step "stats ops vs key_averages(): flagtrace.torch's profile (PrivateUse1 adaptor)" \
  python3 tests/gpu/torch_key_averages.py --flagtrace "$FT" --out "$BUILD/ka" --import-flagtrace
# issue 51: the ops' memory columns against key_averages() of a profile_memory=True profile, byte for byte
step "stats ops memory columns vs key_averages(): torch-cuda's profile_memory=True" \
  python3 tests/gpu/torch_ops_memory.py --flagtrace "$FT" --out "$BUILD/ka"
step "profiler baseline from native torch-cuda (tests/data/gen_profiler_baseline.py)" bash -c "
  python3 tests/data/gen_profiler_baseline.py && cp tests/data/profiler_cuda_baseline.json $OUT/"
# one pytest process per mode: torch's privateuse1 backend is renamed before the first
# profile of its process (tests/integration/conftest.py)
step "PyTorch integration [CPU, CUDA]: parity (7 + naming + every op's self time), contract, usage" \
  env FLAGTRACE_TEST_MODE=cuda PYTHONUNBUFFERED=1 python3 -m pytest -v -p no:cacheprovider tests/integration
step "PyTorch integration [CPU, PrivateUse1] renamed 'flagos': parity (7 + naming + every op's self time), contract, usage" \
  env FLAGTRACE_TEST_MODE=privateuse1 PYTHONUNBUFFERED=1 python3 -m pytest -v -p no:cacheprovider tests/integration
# ---- issue 34: a program's own profiler under record, and PyTorch's own profiler tests ----
# the reference: the program's profile with `import flagtrace.torch`; then under record
# with each injection (the adaptor the injection installs when libtorch loads)
step "record a torch program that runs torch.profiler itself (--inject=cuda and preload): both traces whole" bash -c "
  rm -rf $BUILD/own && mkdir -p $BUILD/own &&
  FT_IMPORT_FLAGTRACE=1 python3 tests/gpu/torch_own_profiler.py prog $BUILD/own/ref.json &&
  for inj in cuda preload; do
    $FT record --inject=\$inj -o $BUILD/own/rec-\$inj.json.gz -- python3 tests/gpu/torch_own_profiler.py prog $BUILD/own/prof-\$inj.json 2>$BUILD/own/err-\$inj;
    rc=\$?; cat $BUILD/own/err-\$inj; [ \$rc = 0 ] || exit \$rc;
    python3 tests/gpu/torch_own_profiler.py check $BUILD/own/rec-\$inj.json.gz $BUILD/own/prof-\$inj.json $BUILD/own/ref.json $BUILD/own/err-\$inj || exit 1;
  done"
step "record a JAX program that runs JAX's own profiler: it runs to its end, its trace written, the takeover said" bash -c "
  rm -rf $BUILD/jax && mkdir -p $BUILD/jax && python3 -c 'import jax' 2>/dev/null || { echo 'no jax'; exit 1; }
  $FT record -o $BUILD/jax/rec.json.gz -- python3 tests/gpu/jax_own_profiler.py prog $BUILD/jax/trace 2>$BUILD/jax/err;
  rc=\$?; cat $BUILD/jax/err; [ \$rc = 0 ] && python3 tests/gpu/jax_own_profiler.py check $BUILD/jax/trace $BUILD/jax/err"
# PyTorch's own profiler tests (../shared/peer/pytorch-profiler, carried in .gpu/peer, never
# committed): natively and with flagtrace, compared test by test; passes when every
# natively-passing test passes with flagtrace
step "PyTorch's own profiler tests (peer suite): every natively-passing test passes with flagtrace" bash -c "
  [ -f .gpu/peer/run.sh ] || { echo 'no .gpu/peer (copy ../shared/peer/pytorch-profiler there)'; exit 1; }
  bash .gpu/peer/run.sh $BUILD/peer > $BUILD/peer.log 2>&1; cat $BUILD/peer.log; cp $BUILD/peer/compare.txt $OUT/peer_compare.txt;
  tail -n 1 $BUILD/peer.log | grep -Eq '^peer suite: ([0-9]+) of \\1 natively-passing'"
# ---- issue 13: CUDA-graph replays and a training step against torch-cuda (one GPU) ----
step "record CUDA-graph replays: 25 of 25 nodes linked" bash -c "
  $FT record -o $BUILD/graph_record.json.gz -- python3 tests/gpu/torch_graph_replay.py workload &&
  python3 tests/gpu/torch_graph_replay.py check $BUILD/graph_record.json.gz"
step "torch.profiler CUDA-graph replays: 25 of 25 nodes linked" bash -c "
  python3 tests/gpu/torch_graph_replay.py profile $BUILD/graph_prof.json.gz &&
  python3 tests/gpu/torch_graph_replay.py check $BUILD/graph_prof.json.gz"
# torch_cuda.json.gz and flagtrace.json.gz come back in $OUT/hta for tests/gpu/hta_compare.py
step "training step: torch-cuda vs flagtrace (device events, gpu_user_annotation, API rows)" \
  python3 tests/gpu/torch_train_step.py --out "$OUT/hta"
# issue 37: the batch 8/16 pair recorded now (both captures), then diff's checks of the committed pair on it
step "diff: batch 8 vs 16 recorded now: ~2x device time on aten::mm/addmm, equal calls; torch-cuda = flagtrace.torch op for op" \
  bash -c "python3 tests/gpu/torch_batch_pair.py --out '$OUT/diff' &&
  FT_DIFF_PAIR_DIR='$OUT/diff' FT_TEST_ONLY='batch_8_vs_16|same_step' python3 tests/e2e/test_diff.py $FT tests/data"
# issue 50: torch programs with one bottleneck planted each (.item() per layer, pageable blocking
# copies, a loop of tiny kernels, a sleep at the step's start) and the clean GEMM loop, through
# torch.profiler + flagtrace.torch and through record: advise's first finding is the plant, its
# cost within 20 % of the plant's (timed beside it), the clean loop has none over 5 % (~1 min).
# flagtrace.torch comes from the python package step: installed here when that step was not run
step "advise plants: the planted cause first, its cost within 20 %, the clean loop clean (profiler + record)" bash -c "
  { python3 -c 'import flagtrace._C' 2>/dev/null || python3 -m pip install --no-build-isolation --no-deps ./python >/dev/null; } &&
  PYTHONUNBUFFERED=1 python3 tests/gpu/advise_plants.py --flagtrace $FT --out-dir $BUILD/plants;
  rc=\$?; mkdir -p $OUT/plants && cp $BUILD/plants/*.json* $OUT/plants/ 2>/dev/null; exit \$rc"

# ---- issue 51: device memory (GPU_CHECK_ONLY='^build$|^memory' runs these; docs/measurements.md) ----
# flagtrace.torch from the python package step, installed here when that step was not run
PKG="{ python3 -c 'import flagtrace._C' 2>/dev/null || python3 -m pip install --no-build-isolation --no-deps ./python >/dev/null; }"
MEM=$BUILD/mem
step "memory (a): profile_memory=True native and with flagtrace.torch: ops memory columns = key_averages(), peak = max_memory_allocated()" \
  bash -c "$PKG && mkdir -p $MEM && PYTHONUNBUFFERED=1 python3 tests/gpu/memory_checks.py --flagtrace $FT --out-dir $MEM --only a"
step "memory (b): record a torch model: peak reserved = max_memory_reserved(), every segment an allocation" \
  env PYTHONUNBUFFERED=1 python3 tests/gpu/memory_checks.py --flagtrace "$FT" --out-dir "$MEM" --only b
for m in cupy jax; do
  if python3 -c "import $m" 2>/dev/null; then
    step "memory (c): record a $m program: its allocations present" \
      env PYTHONUNBUFFERED=1 python3 tests/gpu/memory_checks.py --flagtrace "$FT" --out-dir "$MEM" --only "$m"
  else
    echo "SKIP memory (c): record a $m program: $m is not installed on this machine (no network there to install it)" | tee -a "$LOG"
  fi
done
step "memory (d): a tensor kept per step: the leak found with its bytes per step and op/call (profiler and record)" \
  bash -c "$PKG && PYTHONUNBUFFERED=1 python3 tests/gpu/memory_checks.py --flagtrace $FT --out-dir $MEM --only d"
# (b)-(d) again with memory from CUPTI's records (torch, CuPy, JAX's preallocation, the leak)
step "memory (b)-(d) from records (FLAGTRACE_CUPTI_MEMORY=records)" \
  bash -c "$PKG && FLAGTRACE_CUPTI_MEMORY=records PYTHONUNBUFFERED=1 python3 tests/gpu/memory_checks.py --flagtrace $FT --out-dir $MEM-rec --only b,c,d"
# (the committed trace CI reads torch's [memory] events from, tests/data/torch_memory_h100.json.gz, was
# written by tests/data/gen_torch_memory.py: `OUT=DIR python3 tests/data/gen_torch_memory.py` remakes it)
# PyTorch's memory-profiler tests (.gpu/peer-memory, never committed) through the peer runner (.gpu/peer)
step "memory peer: PyTorch's memory profiler, execution trace, kineto, tidy, C++ thread tests: every natively-passing test passes with flagtrace" bash -c "
  $PKG; bash tests/gpu/peer_memory.sh $BUILD/peer-memory > $BUILD/peer-memory.log 2>&1; cat $BUILD/peer-memory.log;
  tail -n 1 $BUILD/peer-memory.log | grep -Eq '^peer suite: ([1-9][0-9]*) of \\1 natively-passing'"
# P7: the allocation loop under record --memory=on vs off (target <= 1.05, ~1 min); then P1-P3, which
# memory capture, on by default, must leave unchanged (~4-5 min: GPU_CHECK_SKIP='P1-P3' leaves them to a
# second call on the warm machine). FT_MEMORY_BENCH_ARGS: more bench/run.py arguments for both
# bench_judged DIR ROWS ARGS...: bench/run.py --only ROWS into DIR, then fails when its table has a
# MISS (a row whose whole interval is past its target; "within noise" passes, as the bench rules say)
bench_judged() {
  local dir=$1 rows=$2
  shift 2
  rm -f "$dir"/*-gpu.md
  env PYTHONUNBUFFERED=1 python3 bench/run.py --gpu --build "$BUILD" --out "$dir" --only "$rows" "$@" || return
  ! grep -h '| MISS |$' "$dir"/*-gpu.md
}
# shellcheck disable=SC2086
step "memory bench: P7 allocation loop, record --memory=on vs off (<= 1.05)" \
  bench_judged "$BUILD/membench" P7 ${FT_MEMORY_BENCH_ARGS:-}
# shellcheck disable=SC2086
step "memory bench: P7 with memory from records (FLAGTRACE_CUPTI_MEMORY=records; not judged)" \
  env FLAGTRACE_CUPTI_MEMORY=records PYTHONUNBUFFERED=1 python3 bench/run.py --gpu --build "$BUILD" --out "$BUILD/membench-rec" --only P7 ${FT_MEMORY_BENCH_ARGS:-}
# shellcheck disable=SC2086
step "memory bench P1-P3: launch and torch loops with memory capture on by default" \
  bench_judged "$BUILD/membench-p1p3" P1,P2,P3 ${FT_MEMORY_BENCH_ARGS:-}
# one file back for all of them (the device returns few files): stats', advise's and the checks' JSON,
# the peer suite's compare.txt and logs, the bench table
MEM_LOGS=$(cd "$BUILD" 2>/dev/null && ls -d mem mem-rec peer-memory/result peer-memory.log membench membench-rec membench-p1p3 2>/dev/null)
if [ -n "$MEM_LOGS" ]; then
  # shellcheck disable=SC2086
  tar -czf "$OUT/memory-logs.tar.gz" -C "$BUILD" --exclude='*.json.gz' --exclude='profile-*.json' $MEM_LOGS &&
    echo "memory logs: $OUT/memory-logs.tar.gz (" $MEM_LOGS ")" | tee -a "$LOG"
fi

# ---- issue 13: two GPUs (nvidia-h200-x2); the rest of this script needs one ----
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NGPU" -ge 2 ]; then
  step "2 GPUs: record one process on both devices (rows, PtoP copies, flows, deviceProperties)" bash -c "
    $FT record -o $BUILD/two_gpus.json.gz -- python3 tests/gpu/torch_two_gpus.py workload &&
    python3 tests/gpu/torch_two_gpus.py check-record $BUILD/two_gpus.json.gz"
  step "2 GPUs: torch.profiler one process on both devices vs torch-cuda" \
    python3 tests/gpu/torch_two_gpus.py compare "$BUILD"
  step "2 GPUs: record a 2-rank NCCL DDP job, then stats over both ranks" bash -c "
    rm -rf $BUILD/ddp && mkdir -p $BUILD/ddp &&
    $FT record -o $BUILD/ddp/ddp-%r-%p.json.gz -- python3 -m torch.distributed.run --nproc_per_node=2 tests/gpu/torch_ddp.py &&
    python3 tests/gpu/check_mp_traces.py $BUILD/ddp --prefix ddp --nccl --stats $FT"
  step "2 GPUs: torch.profiler 2-rank NCCL DDP job, then stats over both ranks" bash -c "
    rm -rf $BUILD/ddp-prof && mkdir -p $BUILD/ddp-prof &&
    python3 -m torch.distributed.run --nproc_per_node=2 tests/gpu/torch_ddp.py --profile $BUILD/ddp-prof &&
    python3 tests/gpu/check_mp_traces.py $BUILD/ddp-prof --prefix ddp-prof --nccl --stats $FT"
else
  echo "SKIP 2 GPUs: skipped: $NGPU GPU" | tee -a "$LOG"
fi
# gzip traces with ISA-L (P4): needs libisal-dev + libisal2 in .gpu/debs, else zlib
step "gzip: ISA-L's igzip loaded" bash -c "$BUILD/bench/bench_writer --quick | grep -m1 'ISA-L loaded'"
# P1-P6 against their baselines (bench/run.py: 343 and 437 s on 1b0926a, one H200;
# run it in a call of its own, with FT_BENCH_COMMIT set: the device copy's .git may
# lag); the table DATE-COMMIT-gpu.md
# and its rows (.json) land in $OUT; copied to bench/results/, `bench/run.py
# --readme-from bench/results/DATE-COMMIT-gpu.json` puts the rows in docs/performance.md.
# FT_BENCH_ARGS: more arguments for bench/run.py, e.g. '--only P1,P3' (rows a change may move)
# shellcheck disable=SC2086
step "bench: P1-P6 (bench/run.py --gpu)" env PYTHONUNBUFFERED=1 python3 bench/run.py --gpu --build "$BUILD" --out "$OUT" ${FT_BENCH_ARGS:-}
rm -f "$OUT/torch_flagtrace_trace.json.gz"

echo "$pass passed, $fail failed" | tee -a "$LOG"
[ "$fail" -eq 0 ]

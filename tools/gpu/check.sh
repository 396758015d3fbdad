#!/usr/bin/env bash
# Runs on the GPU machine, from the folder made by tools/gpu/bundle.sh:
# the CUDA device tests, the runtime tests, the end-to-end packages on
# --device ${DEVICE:-cuda} compared with the host's results (fp32, and the bf16
# mixed-precision packages), rematerialization on the GPU (bit-identical
# losses, predicted vs measured peak), throughput runs of the main job's
# package in fp32 and bf16 (random data, since the dataset does not travel),
# kernel microbenchmarks against a device copy and cuBLAS, and the
# training-step benchmark against PyTorch (test/benchmarks/gpu).
# SECTIONS (default "tests e2e mp remat mlp kernels attention bench") picks what runs; every
# command has a time limit, so one hang cannot eat the lease. BENCH_MODELS
# (e.g. "resnet18") picks the benchmark's models, BENCH_T its time limit in
# seconds (default 400): torch.compile of ResNet-18 in two modes and two
# precisions may want a call of its own.
set -uo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
SECTIONS=${SECTIONS:-tests e2e mp remat mlp kernels attention bench}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
if [ -f payload.tar.xz ]; then tar -xJf payload.tar.xz && rm payload.tar.xz; fi
CUDNN_LIB=$($PY -c 'import os, nvidia.cudnn as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD/lib:${CUDNN_LIB}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export DLRT_CACHE_DIR=${DLRT_CACHE_DIR:-/tmp/dlrt-cache}
T=${T:-120}
status=0
fail() { echo "!! FAILED: $*"; status=1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader || true
if want tests; then
  echo "== dlrt-cuda-tests"; timeout $T bin/dlrt-cuda-tests || fail dlrt-cuda-tests
  echo "== dlrt-runtime-tests"; timeout $T bin/dlrt-runtime-tests --gtest_brief=1 || fail dlrt-runtime-tests
  # NCCL (issue 12): one rank's all-reduce on the GPU (NCCL from the CUDA
  # toolkit's lib64 or the pip nvidia-nccl package) and its load errors.
  NCCL_LIB=$($PY -c 'import os, nvidia.nccl as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
  echo "== dlrt-comm-tests Nccl.*"
  LD_LIBRARY_PATH="$LD_LIBRARY_PATH:${NCCL_LIB}" timeout $T bin/dlrt-comm-tests --gtest_filter='Nccl.*' || fail Nccl
fi
if want e2e; then
  for d in e2e/*/; do
    name=$(basename "$d")
    echo "== $name: train 5 steps on cuda"
    rm -f "$d/cuda.jsonl"
    timeout $T bin/dlrt train "$d/train.dlcp" --data "$d/batch.npz" --steps 5 --no-shuffle \
      --device ${DEVICE:-cuda} --log-jsonl "$d/cuda.jsonl" --log-every 1 || { fail "$name train"; continue; }
    $PY compare.py losses "$d/train.jsonl" "$d/cuda.jsonl" || fail "$name losses"
    echo "== $name: inference on cuda"
    timeout $T bin/dlrt run "$d/infer.dlcp" --inputs "$d/inputs.npz" --outputs "$d/cuda-out.npz" --device ${DEVICE:-cuda} || { fail "$name run"; continue; }
    $PY compare.py outputs "$d/outputs.npz" "$d/cuda-out.npz" || fail "$name outputs"
  done
fi
if want mp; then
  for d in mixed_precision/*/; do
    [ -f "$d/bf16.dlcp" ] || continue
    name=$(basename "$d")
    # 5 steps, as the stand-in e2e tests: over 20 Adam steps on one batch the
    # CNN's trajectories drift apart (3.5e-3 at step 20 on the stand-in).
    echo "== mixed precision $name: bf16, 5 steps on cuda against the host's bf16 losses"
    rm -f "$d/cuda.jsonl"
    head -5 "$d/bf16.jsonl" > "$d/host5.jsonl"
    timeout $T bin/dlrt train "$d/bf16.dlcp" --data "$d/batch.npz" --steps 5 --no-shuffle \
      --device ${DEVICE:-cuda} --log-jsonl "$d/cuda.jsonl" --log-every 5 || { fail "mp $name train"; continue; }
    $PY compare.py losses "$d/host5.jsonl" "$d/cuda.jsonl" || fail "mp $name losses"
  done
fi
if want remat; then
  for d in remat/*/; do
    name=$(basename "$d")
    echo "== remat $name: none, sqrt and the budget plan, 5 steps on cuda"
    # none runs twice ("none2"): its losses must repeat bit for bit, or the
    # plans' comparison below measures run-to-run noise, not the plans.
    for tag in none none2 sqrt budget; do
      pkg=${tag%2}
      [ -f "$d/$pkg.dlcp" ] || continue
      rm -f "$d/cuda-$tag.jsonl"
      timeout $T bin/dlrt train "$d/$pkg.dlcp" --data "$d/batch.npz" --steps 5 --no-shuffle \
        --device ${DEVICE:-cuda} --log-jsonl "$d/cuda-$tag.jsonl" --quiet \
        --memory-report "$d/cuda-$tag-memory.json" || fail "remat $name $tag"
    done
    $PY compare.py remat "$d" || fail "remat $name"
  done
fi
if want mlp; then
  echo "== main job package on cuda (random data, 60000 samples, 1 epoch), fp32 then bf16"
  $PY -c "import numpy as np; r = np.random.default_rng(0); np.savez('/tmp/fm.npz', input=r.random((60000, 1, 28, 28), dtype=np.float32), labels=r.integers(0, 10, 60000))"
  for pkg in mlp.dlcp mlp-bf16.dlcp; do
    [ -f "$pkg" ] || continue
    timeout $T bin/dlrt train "$pkg" --data /tmp/fm.npz --epochs 1 --device ${DEVICE:-cuda} \
      --log-every 300 | tee "/tmp/$pkg.log" || fail "$pkg"
  done
  # The step-time ratio bf16/fp32 from the epochs' throughput (samples/s).
  $PY compare.py step-time /tmp/mlp.dlcp.log /tmp/mlp-bf16.dlcp.log || true
fi
if want kernels && [ -d kernels ]; then
  echo "== kernels against a device copy and cuBLAS (test/benchmarks/gpu/kernels.py)"
  timeout 300 $PY kernels.py run --dlrt bin/dlrt --dir kernels ${OUT:+--json $OUT/kernels.json} || fail kernels
fi
if want attention && [ -d attention ]; then
  echo "== fused attention against PyTorch SDPA (test/benchmarks/gpu/attention.py)"
  timeout ${ATTENTION_T:-400} $PY attention.py run --dlrt bin/dlrt --dir attention \
    ${OUT:+--json $OUT/attention.json} || fail attention
fi
if want bench && [ -d bench ]; then
  echo "== training step against PyTorch eager and torch.compile (test/benchmarks/gpu/train_step.py)"
  timeout ${BENCH_T:-400} $PY train_step.py run --dlrt bin/dlrt --dir bench ${BENCH_MODELS:+--models $BENCH_MODELS} \
    ${OUT:+--json $OUT/bench.json} || fail bench
fi
echo "exit status $status"
exit $status

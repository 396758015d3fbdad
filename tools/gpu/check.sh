#!/usr/bin/env bash
# Runs on the GPU machine, from the folder made by tools/gpu/bundle.sh:
# the CUDA device tests, the runtime tests, the end-to-end packages on
# --device ${DEVICE:-cuda} compared with the host's results (fp32, and the bf16
# mixed-precision packages), and throughput runs of the main job's package
# in fp32 and bf16 with their step-time ratio (random data, since the
# dataset does not travel).
set -uo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
CUDNN_LIB=$($PY -c 'import os, nvidia.cudnn as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD/lib:${CUDNN_LIB}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export DLRT_CACHE_DIR=${DLRT_CACHE_DIR:-/tmp/dlrt-cache}
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "== dlrt-cuda-tests"; bin/dlrt-cuda-tests || status=1
echo "== dlrt-runtime-tests"; bin/dlrt-runtime-tests --gtest_brief=1 || status=1
# NCCL (issue 12): one rank's all-reduce on the GPU (NCCL from the CUDA
# toolkit's lib64 or the pip nvidia-nccl package) and its load errors.
NCCL_LIB=$($PY -c 'import os, nvidia.nccl as m; print(os.path.join(os.path.dirname(m.__file__), "lib"))' 2>/dev/null || true)
echo "== dlrt-comm-tests Nccl.*"
LD_LIBRARY_PATH="$LD_LIBRARY_PATH:${NCCL_LIB}" bin/dlrt-comm-tests --gtest_filter='Nccl.*' || status=1
for d in e2e/*/; do
  name=$(basename "$d")
  echo "== $name: train 5 steps on cuda"
  rm -f "$d/cuda.jsonl"
  bin/dlrt train "$d/train.dlcp" --data "$d/batch.npz" --steps 5 --no-shuffle \
    --device ${DEVICE:-cuda} --log-jsonl "$d/cuda.jsonl" --log-every 1 || { status=1; continue; }
  $PY compare.py losses "$d/train.jsonl" "$d/cuda.jsonl" || status=1
  echo "== $name: inference on cuda"
  bin/dlrt run "$d/infer.dlcp" --inputs "$d/inputs.npz" --outputs "$d/cuda-out.npz" --device ${DEVICE:-cuda} || { status=1; continue; }
  $PY compare.py outputs "$d/outputs.npz" "$d/cuda-out.npz" || status=1
done
for d in mixed_precision/*/; do
  [ -f "$d/bf16.dlcp" ] || continue
  name=$(basename "$d")
  # 5 steps, as the stand-in e2e tests: over 20 Adam steps on one batch the
  # CNN's trajectories drift apart (3.5e-3 at step 20 on the stand-in).
  echo "== mixed precision $name: bf16, 5 steps on cuda against the host's bf16 losses"
  rm -f "$d/cuda.jsonl"
  head -5 "$d/bf16.jsonl" > "$d/host5.jsonl"
  bin/dlrt train "$d/bf16.dlcp" --data "$d/batch.npz" --steps 5 --no-shuffle \
    --device ${DEVICE:-cuda} --log-jsonl "$d/cuda.jsonl" --log-every 5 || { status=1; continue; }
  $PY compare.py losses "$d/host5.jsonl" "$d/cuda.jsonl" || status=1
done
echo "== main job package on cuda (random data, 60000 samples, 1 epoch), fp32 then bf16"
$PY -c "import numpy as np; r = np.random.default_rng(0); np.savez('/tmp/fm.npz', input=r.random((60000, 1, 28, 28), dtype=np.float32), labels=r.integers(0, 10, 60000))"
for pkg in mlp.dlcp mlp-bf16.dlcp; do
  [ -f "$pkg" ] || continue
  bin/dlrt train "$pkg" --data /tmp/fm.npz --epochs 1 --device ${DEVICE:-cuda} \
    --log-every 200 | tee "/tmp/$pkg.log" || status=1
done
# The step-time ratio bf16/fp32 from the epochs' throughput (samples/s).
$PY compare.py step-time /tmp/mlp.dlcp.log /tmp/mlp-bf16.dlcp.log || true
echo "exit status $status"
exit $status

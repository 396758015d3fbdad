#!/usr/bin/env bash
# Runs on the GPU machine, from the folder made by tools/gpu/bundle.sh:
# the CUDA device tests, the runtime tests, the end-to-end packages on
# --device ${DEVICE:-cuda} compared with the host's results, and a throughput run of
# the main job's package (random data, since the dataset does not travel).
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
echo "== main job package on cuda (random data, 60000 samples, 1 epoch)"
$PY -c "import numpy as np; r = np.random.default_rng(0); np.savez('/tmp/fm.npz', input=r.random((60000, 1, 28, 28), dtype=np.float32), labels=r.integers(0, 10, 60000))"
bin/dlrt train mlp.dlcp --data /tmp/fm.npz --epochs 1 --device ${DEVICE:-cuda} --log-every 200 || status=1
echo "exit status $status"
exit $status

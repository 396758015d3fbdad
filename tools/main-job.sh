#!/usr/bin/env bash
# The main job: builds dlc, compiles the bundled MLP (examples/mlp/mlp.onnx)
# into a training package, and trains it with dlrt on Fashion-MNIST for one
# epoch (Adam, lr 1e-3, batch 64), printing progress, loss, throughput and
# test accuracy. Extra arguments go to `dlrt train` (e.g. --device cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
BUILD_DIR=${DLC_BUILD_DIR:-build}
mkdir -p "$BUILD_DIR/main-job"
"$BUILD_DIR/bin/dlc" examples/mlp/mlp.onnx --train --loss softmax-cross-entropy \
  --optimizer adam --lr 1e-3 --batch-size 64 --stats \
  -o "$BUILD_DIR/main-job/mlp.dlcp"
"$BUILD_DIR/bin/dlrt" train "$BUILD_DIR/main-job/mlp.dlcp" --dataset fashion-mnist \
  --epochs 1 --log-jsonl "$BUILD_DIR/main-job/train.jsonl" \
  --save "$BUILD_DIR/main-job/mlp.ckpt" "$@"

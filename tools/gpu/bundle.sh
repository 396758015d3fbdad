#!/usr/bin/env bash
# Prepares a GPU check on a machine that has CUDA but no MLIR (the lent GPU
# machine): copies the runtime binaries and their non-CUDA libraries, and the
# end-to-end packages (compiled here with embedded sm_80/sm_90 cubins) with
# their host-device losses, into .device-carry/. Then run tools/gpu/check.sh
# there with .device-carry carried along.
# Needs a finished build (tools/setup.sh) and the e2e tests having run once
# (ctest -L e2e), which leave their packages in build/test/e2e/.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${DLC_BUILD_DIR:-build}
OUT=.device-carry
rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/e2e"
cp "$BUILD_DIR"/bin/{dlrt,dlrt-cuda-tests,dlrt-runtime-tests,dlrt-comm-tests} "$OUT/bin/"
# The binaries need libdlrt under its soname (libdlrt.so.<major>).
soname=$(objdump -p "$BUILD_DIR/lib/libdlrt.so" | awk '$1 == "SONAME" { print $2 }')
cp -L "$BUILD_DIR/lib/$soname" "$OUT/lib/"
for lib in libdnnl.so.2 libOpenCL.so.1 libgomp.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$OUT/lib/"
done
# Gloo (the host communicator, issue 12) and what Debian's libgloo0 needs.
for lib in $(ldd "$BUILD_DIR/lib/libdlrt.so" | awk '/libgloo|libhiredis|libibverbs|libnl-/ { print $3 }'); do
  cp -L "$lib" "$OUT/lib/"
done
# ResNet-18's packages hold 45 MB of weights each: they do not fit in one
# 64 MiB carry with the rest, so they are left out unless DLC_GPU_E2E names
# them (a glob over the folder names, e.g. DLC_GPU_E2E='arch_resnet18').
for d in "$BUILD_DIR"/test/e2e/*_*/; do
  name=$(basename "$d")
  [ -f "$d/train.dlcp" ] || continue
  if [ -n "${DLC_GPU_E2E:-}" ]; then
    case "$name" in $DLC_GPU_E2E) ;; *) continue ;; esac
  elif [ "$name" = arch_resnet18 ]; then
    continue
  fi
  mkdir -p "$OUT/e2e/$name"
  cp "$d"/{train.dlcp,infer.dlcp,batch.npz,inputs.npz,outputs.npz,train.jsonl} "$OUT/e2e/$name/"
done
# Mixed precision (issue 10): the bf16 packages of test/e2e/mixed_precision.py
# (cubins for sm_80/sm_90 embedded) with their host losses, and the main
# job's MLP in fp32 and bf16 for the bf16/fp32 step-time ratio.
for d in "$BUILD_DIR"/test/e2e/mixed_precision/*/; do
  name=$(basename "$d")
  [ -f "$d/bf16.dlcp" ] || continue
  mkdir -p "$OUT/mixed_precision/$name"
  cp "$d"/{bf16.dlcp,batch.npz,bf16.jsonl} "$OUT/mixed_precision/$name/"
done
for p in fp32 bf16; do
  "$BUILD_DIR/bin/dlc" examples/mlp/mlp.onnx --train --optimizer adam --lr 1e-3 \
    --batch-size 64 --precision $p --target sm_90 --quiet \
    -o "$OUT/mlp$([ $p = bf16 ] && echo -bf16).dlcp"
done
# Rematerialization (issue 11): test/e2e/remat.py's packages (none, sqrt and
# the budget plan) with the host's losses, for the bit-identity and the
# predicted/measured peak on the GPU. ResNet-18's are too large to carry.
for d in "$BUILD_DIR"/test/e2e/remat/{mlp,cnn,gpt}/; do
  [ -f "$d/none.dlcp" ] || continue
  name=$(basename "$d")
  mkdir -p "$OUT/remat/$name"
  cp "$d"/{none,sqrt,budget}.dlcp "$d"/batch.npz "$d"/none.jsonl "$OUT/remat/$name/"
done
# The training-step benchmark against PyTorch (issue 14 item 5): packages
# compiled here for sm_90, carried without their weights (train_step.py
# rebuilds them there from the same seeded PyTorch models and checks their
# SHA-256), so ResNet-18's travel too; the PyTorch side builds the same
# models there.
if [ -z "${DLC_GPU_NO_BENCH:-}" ]; then
  /usr/bin/python3 test/benchmarks/gpu/train_step.py prepare --dlc "$BUILD_DIR/bin/dlc" \
    --out "$OUT/bench" --models "${DLC_GPU_BENCH_MODELS:-gpt,resnet18}"
  cp test/benchmarks/gpu/train_step.py test/e2e/arch_models.py "$OUT/"
fi
# Kernel microbenchmarks against a device copy and cuBLAS (issue 14 item 5):
# forward packages without weights, inputs made there.
if [ -z "${DLC_GPU_NO_KERNELS:-}" ]; then
  /usr/bin/python3 test/benchmarks/gpu/kernels.py prepare --dlc "$BUILD_DIR/bin/dlc" \
    --out "$OUT/kernels"
  cp test/benchmarks/gpu/kernels.py "$OUT/"
fi
# Fused attention against PyTorch's scaled_dot_product_attention (issue 36):
# packages without inputs (made there).
if [ -z "${DLC_GPU_NO_ATTENTION:-}" ]; then
  /usr/bin/python3 test/benchmarks/gpu/attention.py prepare --dlc "$BUILD_DIR/bin/dlc" \
    --out "$OUT/attention"
  cp test/benchmarks/gpu/attention.py test/benchmarks/gpu/kernels.py "$OUT/"
fi
cp tools/gpu/check.sh tools/gpu/compare.py "$OUT/"
du -sh "$OUT"/* | sort -h | tail -6
# The carry is limited to 64 MiB: everything but check.sh travels as one xz
# archive (libdnnl and the kernel sources compress well; weights do not),
# which check.sh unpacks.
(cd "$OUT" && ls | grep -vx check.sh | XZ_OPT="-6 -T$(nproc)" tar -cJf payload.tar.xz -T - &&
  ls | grep -vx -e check.sh -e payload.tar.xz | xargs rm -rf)
du -sh "$OUT"

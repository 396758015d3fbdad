#!/usr/bin/env bash
# Installs what dlc needs on a fresh Debian 12 machine (apt) and builds it
# into build/ with Ninja and ccache. Safe to run again: apt and the build
# skip what is already done. With --tests (tools/run-tests.sh) it also builds
# the test virtualenv (tools/test-venv.sh) before it configures.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TEST_VENV=0
for arg in "$@"; do
  case "$arg" in
    --tests) WITH_TEST_VENV=1 ;;
    *) echo "setup: error: unknown argument '$arg' (only --tests)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git file
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libonnx-dev libonnx-testdata protobuf-compiler libprotobuf-dev
  libflatbuffers-dev flatbuffers-compiler
  libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgloo-dev libasio-dev openmpi-bin
  clang-22 libclang-rt-22-dev
  python3-torch python3-torchvision python3-onnx python3-numpy
  # `python3 -m venv` for the test virtualenv (tools/test-venv.sh): Debian's
  # python3 has no ensurepip without it.
  python3-venv
  # An optimized BLAS for the PyTorch baseline of the host benchmarks:
  # Debian's python3-torch is built with BLAS_INFO=generic and otherwise runs
  # its GEMMs on the reference libblas3 (test/benchmarks/host_steps.py).
  libopenblas0-pthread
  dataset-fashion-mnist
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA 13 toolkit (nvcc, NVRTC, cuBLASLt, cuDNN headers) is expected
# under /usr/local/cuda; the driver is not needed to build or to test.
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: error: the CUDA 13 toolkit was not found (expected /usr/local/cuda)" >&2
  exit 1
fi
export PATH="/usr/local/cuda/bin:$PATH"

# The test virtualenv (onnx 1.23, torch 2.15, transformers from PyPI; cached
# under ~/.cache/dlc, built once per change of test/requirements*.txt) for
# the tests that need newer packages than Debian's. DLC_SKIP_TEST_VENV=1
# leaves it out; CMake then skips those tests and says which. The main job
# (tools/main-job.sh) does not need it.
if [ "$WITH_TEST_VENV" = 1 ] && [ -z "${DLC_SKIP_TEST_VENV:-}" ]; then
  bash tools/test-venv.sh
fi

BUILD_DIR=${DLC_BUILD_DIR:-build}
export CCACHE_BASEDIR="$PWD"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
else
  # Configure again (about a second): it adds the virtualenv's tests once
  # the virtualenv exists.
  cmake -S . -B "$BUILD_DIR" >/dev/null
fi
ninja -C "$BUILD_DIR" -j"$(nproc)"

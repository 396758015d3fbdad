#!/usr/bin/env bash
# Fuzzing with the libFuzzer targets of test/fuzz (docs/testing.md).
#
#   tools/fuzz.sh --build
#       configures and builds build-fuzz/ (clang-22, ASan+UBSan, libFuzzer,
#       ccache): only the fuzz targets and what they need.
#   tools/fuzz.sh TARGET SECONDS [libFuzzer flags...]
#       a campaign of SECONDS (0: until stopped or -runs=N) on one core for
#       TARGET (onnx, package, safetensors, npy, npz, idx). The corpus grows
#       in build-fuzz/fuzz-corpus/TARGET (seeded from test/fuzz/corpus/TARGET);
#       crashes, leaks and timeouts land in build-fuzz/fuzz-artifacts/TARGET/.
#       Fix the parser, then add the input to test/fuzz/regressions/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${DLC_FUZZ_BUILD_DIR:-build-fuzz}
export PATH="/usr/local/cuda/bin:$PATH"
export CCACHE_BASEDIR="$PWD"

build() {
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DDLC_SANITIZE=address,undefined -DDLC_FUZZ=ON
  fi
  ninja -C "$BUILD_DIR" -j"${DLC_FUZZ_JOBS:-$(nproc)}" fuzz-targets
}

if [ "${1:-}" = "--build" ]; then
  build
  exit 0
fi
if [ $# -lt 2 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
[ -f "test/fuzz/$target.cpp" ] || { echo "fuzz.sh: no target '$target' in test/fuzz" >&2; exit 2; }
build
corpus="$BUILD_DIR/fuzz-corpus/$target"
artifacts="$BUILD_DIR/fuzz-artifacts/$target"
mkdir -p "$corpus" "$artifacts"
dict=()
[ -f "test/fuzz/dict/$target.dict" ] && dict=("-dict=test/fuzz/dict/$target.dict")
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
exec "$BUILD_DIR/bin/fuzz-$target" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2560 -max_len=8192 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "${dict[@]}" "$@" "$corpus" "test/fuzz/corpus/$target"

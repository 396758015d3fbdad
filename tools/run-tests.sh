#!/usr/bin/env bash
# Sets up, builds and runs every test (lit, GoogleTest, end-to-end against
# PyTorch, NVRTC compile checks). Tests that need a GPU skip without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests
BUILD_DIR=${DLC_BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"

# The parsers' fuzz targets under ASan+UBSan (clang-22, build-fuzz/, only
# what they need): short fixed-seed runs and the regression replays.
# DLC_SKIP_FUZZ=1 leaves them out.
if [ -z "${DLC_SKIP_FUZZ:-}" ]; then
  bash tools/fuzz.sh --build
  ctest --test-dir "${DLC_FUZZ_BUILD_DIR:-build-fuzz}" --output-on-failure \
    -L fuzz -j"$(nproc)"
fi

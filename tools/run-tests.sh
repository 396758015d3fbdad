#!/usr/bin/env bash
# Sets up, builds and runs every test (lit, GoogleTest, end-to-end against
# PyTorch, NVRTC compile checks). Tests that need a GPU skip without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
BUILD_DIR=${DLC_BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"

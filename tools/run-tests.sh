#!/usr/bin/env bash
# Sets up, builds and runs every test (lit, GoogleTest, end-to-end against
# PyTorch, NVRTC compile checks). Tests that need a GPU skip without one.
# Prints the wall time of each phase (setup and build, ctest, fuzz) at the
# end, whether the run passed or failed.
set -euo pipefail
cd "$(dirname "$0")/.."

phase_times=()
phase_start=$SECONDS
phase_name=""
# Ends the running phase and starts |$1| ("" starts none).
phase() {
  if [ -n "$phase_name" ]; then
    phase_times+=("$(printf '  %-24s %6d s' "$phase_name" $((SECONDS - phase_start)))")
  fi
  phase_name=$1
  phase_start=$SECONDS
}
report() {
  status=$?
  phase ""
  echo "run-tests: phase times (wall):"
  printf '%s\n' "${phase_times[@]}"
  printf '  %-24s %6d s\n' "total" "$SECONDS"
  exit $status
}
trap report EXIT

phase "setup and build"
bash tools/setup.sh --tests
BUILD_DIR=${DLC_BUILD_DIR:-build}
phase "ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"

# The parsers' fuzz targets under ASan+UBSan (clang-22, build-fuzz/, only
# what they need): short fixed-seed runs and the regression replays.
# DLC_SKIP_FUZZ=1 leaves them out.
if [ -z "${DLC_SKIP_FUZZ:-}" ]; then
  phase "fuzz build"
  bash tools/fuzz.sh --build
  phase "fuzz"
  ctest --test-dir "${DLC_FUZZ_BUILD_DIR:-build-fuzz}" --output-on-failure \
    -L fuzz -j"$(nproc)"
fi

#!/usr/bin/env bash
# Makes the Debian package `dlc` (cmake/Packaging.cmake) from a finished build
# and prints the path of the .deb:
#   tools/make-deb.sh [BUILD_DIR]   (default: $DLC_BUILD_DIR, else build/ here)
# cpack's log goes to stderr; `dpkg-deb -I` on the result shows its Depends.
set -euo pipefail
if [ $# -gt 0 ]; then
  BUILD_DIR=$(cd "$1" && pwd)
else
  BUILD_DIR=$(cd "$(dirname "$0")/.." && cd "${DLC_BUILD_DIR:-build}" && pwd)
fi
OUT="$BUILD_DIR/deb"
rm -rf "$OUT"
cpack -G DEB --config "$BUILD_DIR/CPackConfig.cmake" -B "$OUT" >&2
ls "$OUT"/*.deb

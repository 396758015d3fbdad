#!/usr/bin/env bash
# The `install` test (test/install/CMakeLists.txt):
#   check-install.sh BUILD_DIR WORK_DIR
# 1. `cmake --install BUILD_DIR` into WORK_DIR/prefix; the expected files are
#    there and the CMake package and dlrt.pc do not point into the tree.
# 2. The installed dlc compiles examples/mlp/mlp.onnx (batch 2, inference)
#    from the prefix; installed binaries resolve libdlrt to the prefix's copy.
# 3. examples/embed builds out of tree against the prefix, once through
#    find_package(dlrt) (CMAKE_PREFIX_PATH) and once through pkg-config
#    (PKG_CONFIG_PATH).
# 4. Both embed binaries print the same forward outputs (on zero inputs, host
#    device) as the installed `dlrt run` writes for the same zero inputs.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix
# Only the installed run paths may find the libraries.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
python=/usr/bin/python3 # Debian's, with numpy

fail() {
  echo "install: FAIL: $*" >&2
  exit 1
}
# Prints the file that the loader picks for library $2 of binary $1.
resolved() {
  local path
  path=$(ldd "$1" | awk -v lib="$2" 'index($1, lib) == 1 { print $3 }')
  [ -n "$path" ] && [ "$path" != "not" ] || fail "$1: $2 not found: $(ldd "$1")"
  realpath "$path"
}

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/dlc bin/dlrt lib/libdlrt.so include/dlrt/dlrt.h \
  include/dlrt/dlrt.hpp lib/cmake/dlrt/dlrtConfig.cmake \
  lib/cmake/dlrt/dlrtConfigVersion.cmake lib/cmake/dlrt/dlrtTargets.cmake \
  lib/pkgconfig/dlrt.pc; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
(cd "$prefix" && find . -type f -o -type l | sort)
if grep -n "$src" "$prefix"/lib/cmake/dlrt/*.cmake "$prefix/lib/pkgconfig/dlrt.pc"; then
  fail "the installed CMake package or dlrt.pc names the source or build tree"
fi
if readelf -d "$prefix/lib/libdlrt.so" | grep NEEDED |
  grep -E -i 'cuda|nvrtc|cublas|cudnn|nccl|LLVM|MLIR'; then
  fail "the installed libdlrt links a CUDA or LLVM/MLIR library"
fi
lib=$(realpath "$prefix/lib/libdlrt.so")
[ "$(resolved "$prefix/bin/dlrt" libdlrt.so)" = "$lib" ] ||
  fail "the installed dlrt does not load the installed libdlrt"

echo "== installed dlc: examples/mlp/mlp.onnx --batch-size 2"
"$prefix/bin/dlc" "$src/examples/mlp/mlp.onnx" --batch-size 2 --quiet \
  -o "$work/mlp.dlcp"

echo "== examples/embed through find_package(dlrt)"
cmake -S "$src/examples/embed" -B "$work/embed-cmake" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/embed-cmake.log"
grep -qx "dlrt_DIR:PATH=$prefix/lib/cmake/dlrt" "$work/embed-cmake/CMakeCache.txt" ||
  fail "find_package(dlrt) did not use $prefix: $(grep dlrt_DIR "$work/embed-cmake/CMakeCache.txt")"
cmake --build "$work/embed-cmake" >>"$work/embed-cmake.log"
embed_cmake=$work/embed-cmake/dlrt-embed-example

echo "== examples/embed through pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
echo "pkg-config dlrt $(pkg-config --modversion dlrt): $(pkg-config --cflags --libs dlrt)"
embed_pc=$work/embed-pc
cc -std=c99 -o "$embed_pc" "$src/examples/embed/embed.c" \
  $(pkg-config --cflags --libs dlrt) -Wl,-rpath,"$(pkg-config --variable=libdir dlrt)"

for exe in "$embed_cmake" "$embed_pc"; do
  [ "$(resolved "$exe" libdlrt.so)" = "$lib" ] ||
    fail "$exe does not load the installed libdlrt"
done

echo "== embed vs dlrt run on zero inputs (host)"
"$embed_cmake" "$work/mlp.dlcp" host >"$work/embed-cmake.txt"
"$embed_pc" "$work/mlp.dlcp" host >"$work/embed-pc.txt"
cat "$work/embed-cmake.txt"
cmp "$work/embed-cmake.txt" "$work/embed-pc.txt" ||
  fail "the find_package and pkg-config builds of embed print different outputs"

# embed prints "  input  NAME: [D, ...] DTYPE" per input, and per output that
# line followed by its first 8 values (%g: 6 significant digits).
"$python" - "$work" <<'PY'
import re, sys
import numpy as np
work = sys.argv[1]
lines = open(f"{work}/embed-cmake.txt").read().splitlines()
info = re.compile(r"  (input |output) (\S+): \[([0-9, ]*)\] (\w+)$")
dtypes = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "bool": np.bool_}
inputs = {}
for line in lines:
    m = info.match(line)
    if m and m[1] == "input ":
        shape = [int(d) for d in m[3].split(",")] if m[3] else []
        inputs[m[2]] = np.zeros(shape, dtypes[m[4]])
assert inputs, "embed printed no inputs"
np.savez(f"{work}/zeros.npz", **inputs)
PY
"$prefix/bin/dlrt" run "$work/mlp.dlcp" --inputs "$work/zeros.npz" \
  --outputs "$work/out.npz" --device host
"$python" - "$work" <<'PY'
import re, sys
import numpy as np
work = sys.argv[1]
lines = open(f"{work}/embed-cmake.txt").read().splitlines()
info = re.compile(r"  output (\S+): \[([0-9, ]*)\] (\w+)$")
ref = np.load(f"{work}/out.npz")
seen = []
for i, line in enumerate(lines):
    m = info.match(line)
    if not m:
        continue
    name, shape = m[1], [int(d) for d in m[2].split(",")] if m[2] else []
    want = ref[name]
    assert list(want.shape) == shape, (name, want.shape, shape)
    printed = lines[i + 1].split()
    if printed[-1] == "...":
        printed = printed[:-1]
    got = np.array([float(v) for v in printed])
    want = want.reshape(-1)[: len(got)].astype(np.float64)
    assert len(got) == min(8, want.size), (name, got)
    # %g keeps 6 significant digits: relative error below 5e-6.
    assert np.allclose(got, want, rtol=1e-5, atol=0), (name, got, want)
    assert np.any(want != 0), f"{name}: all zeros, the comparison shows nothing"
    seen.append(name)
assert sorted(seen) == sorted(ref.keys()), (seen, list(ref.keys()))
print(f"embed matches dlrt run: {', '.join(seen)}")
PY
echo "install: OK"

#!/usr/bin/env bash
# test-venv.sh: builds (once) the Python virtualenv of the tests that need
# newer packages than Debian's (test/requirements.txt: ONNX 1.23, onnxruntime,
# transformers; test/requirements-torch.txt: PyTorch 2.15 and its dynamo
# exporter), in a cache folder keyed by those files' hash, and reuses it.
#
# Usage: tools/test-venv.sh            build it unless complete
#        tools/test-venv.sh --python   only print where its python is (or will be)
#
# torch is installed --no-deps with the few NVIDIA wheels the CUDA 13 toolkit
# lacks (test/requirements-torch.txt says why); where `import torch` then
# fails, or with DLC_TEST_VENV_TORCH=full, with all of torch's requirements
# (~3 GB more: cuBLAS, cuDNN, ... from PyPI, found through torch's RPATH).
#
# The folder is ${DLC_VENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dlc/venv-<sha>},
# <sha> the first 16 hex digits of sha256(requirements.txt,
# requirements-torch.txt, python version). It is complete once its stamp file
# `dlc-venv-complete` exists (written last) and holds that key; an incomplete
# or other one is removed and built again. CMake runs `--python` at configure time (DLC_TEST_VENV_PYTHON)
# and adds the tests that need it only when the stamp is there.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
REQ="$REPO/test/requirements.txt"
REQ_TORCH="$REPO/test/requirements-torch.txt"
PY=/usr/bin/python3
STAMP=dlc-venv-complete

die() { echo "test-venv: error: $*" >&2; exit 1; }

[ -x "$PY" ] || die "$PY not found (Debian's python3)"
KEY=$( { cat "$REQ" "$REQ_TORCH"; "$PY" -c 'import sys; print(sys.version)'; } |
  sha256sum | cut -c1-16)
if [ -z "${DLC_VENV_DIR:-}" ] && [ -z "${XDG_CACHE_HOME:-}" ] && [ -z "${HOME:-}" ]; then
  die "neither HOME nor XDG_CACHE_HOME is set; set DLC_VENV_DIR to the venv's folder"
fi
VENV=${DLC_VENV_DIR:-${XDG_CACHE_HOME:-${HOME:-}/.cache}/dlc/venv-$KEY}

if [ "${1:-}" = "--python" ]; then
  echo "$VENV/bin/python"
  exit 0
elif [ $# -gt 0 ]; then
  die "unknown argument '$1' (usage: test-venv.sh [--python])"
fi

if [ -f "$VENV/$STAMP" ] && ! grep -qx "key: $KEY" "$VENV/$STAMP"; then
  # DLC_VENV_DIR names a folder, not a version: its stamp holds the key.
  echo "test-venv: $VENV was built for other requirements; building it again"
elif [ -f "$VENV/$STAMP" ]; then
  # A stamped venv is trusted only while the tests' packages import: a venv
  # whose torch takes CUDA libraries from the system toolkit (see
  # requirements-torch.txt) breaks when that toolkit changes, and a venv
  # can be damaged after it was stamped.
  if "$VENV/bin/python" -c 'import onnx, onnxruntime, torch, transformers, timm' 2>/dev/null; then
    echo "test-venv: $VENV is complete"
    exit 0
  fi
  echo "test-venv: an import of onnx, onnxruntime, torch, transformers or timm fails in $VENV (damaged, or the CUDA toolkit changed?); building it again"
fi

echo "test-venv: building $VENV (several minutes, ~2.5 GB; once per change of test/requirements*.txt)"
if [ -e "$VENV" ] && [ ! -f "$VENV/pyvenv.cfg" ] && [ ! -f "$VENV/$STAMP" ] &&
    [ -n "$(ls -A "$VENV")" ]; then
  die "$VENV exists and is not a virtualenv; not removing it (set DLC_VENV_DIR elsewhere)"
fi
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV" ||
  die "'$PY -m venv' failed; on Debian install python3-venv (tools/setup.sh does)"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

step() {
  echo "test-venv: $1"
  shift
  "$@" || die "'$*' failed (see pip's output above); $VENV is left incomplete and will be rebuilt on the next run (without PyPI: DLC_SKIP_TEST_VENV=1 makes tools/run-tests.sh leave it and the tests that need it out)"
}

step "installing test/requirements.txt" "${PIP[@]}" install -q -r "$REQ"
step "installing test/requirements-torch.txt (--no-deps)" \
  "${PIP[@]}" install -q --no-deps -r "$REQ_TORCH"
TORCH_LIBS="toolkit (the CUDA 13 toolkit's libraries on the library path)"
if [ "${DLC_TEST_VENV_TORCH:-}" = full ]; then
  step "DLC_TEST_VENV_TORCH=full: installing torch's full requirements" \
    "${PIP[@]}" install -q "$(grep -E '^torch==' "$REQ_TORCH")"
  TORCH_LIBS="PyPI (torch's full requirements)"
elif ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  # No CUDA 13 toolkit on the library path (a fresh machine mounts it without
  # an ld.so.conf entry): take torch's whole CUDA stack from PyPI instead
  # (~3 GB more).
  step "import torch failed with the toolkit's CUDA libraries; installing torch's full requirements" \
    "${PIP[@]}" install -q "$(grep -E '^torch==' "$REQ_TORCH")"
  TORCH_LIBS="PyPI (torch's full requirements)"
fi
step "checking the imports" "$VENV/bin/python" -c '
import numpy, onnx, onnxruntime, onnxscript, timm, torch, torchvision, transformers
print("test-venv: onnx %s, onnxruntime %s, torch %s, transformers %s, numpy %s"
      % (onnx.__version__, onnxruntime.__version__, torch.__version__,
         transformers.__version__, numpy.__version__))'
"${PIP[@]}" freeze > "$VENV/pip-freeze.txt"
printf 'key: %s\ntorch: %s\n' "$KEY" "$TORCH_LIBS" > "$VENV/$STAMP"
echo "test-venv: $VENV is complete ($(du -sh "$VENV" | cut -f1))"

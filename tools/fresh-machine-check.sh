#!/usr/bin/env bash
# fresh-machine-check.sh: runs the README's two commands inside a new minimal
# Debian 12 root, as they would run on a newcomer's machine, then installs the
# .deb they build into a second new root and runs a model with it.
#
# Usage: tools/fresh-machine-check.sh [--workdir DIR] [--cuda DIR]
#          [--apt-cache DIR] [--keep] [--skip-tests] [--skip-deb]
#
#   --workdir DIR    roots and logs go here (default /var/tmp/dlc-fresh); a
#                    previous run's roots there are removed first
#   --cuda DIR       CUDA 13 toolkit bind-mounted read-only at /usr/local/cuda
#                    in the roots (default /usr/local/cuda)
#   --apt-cache DIR  keep downloaded .deb files in DIR between runs (saves the
#                    downloads only; every root still installs and builds
#                    everything from nothing)
#   --keep           leave the roots in place afterwards (for a look inside)
#   --skip-tests     run the main job and the .deb check, not every test
#   --skip-deb       do not build and check the .deb
#
# What it checks is the committed HEAD of this checkout (a clean clone):
# uncommitted changes are not part of it. Needs root (mmdebstrap in root mode,
# chroot, bind mounts in a private mount namespace) and Debian's mmdebstrap;
# apt sources are taken from this machine's /etc/apt, and pip's CA bundle
# and index from its pip configuration. Takes tens of minutes:
# it is not part of .ci/run, but is run before an issue that changes
# dependencies is called resolved. Exit status 0 only if every step passed.
# The installed dlc also NVRTC-compiles the kernels for sm_90 into the package.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORKDIR=/var/tmp/dlc-fresh
CUDA_DIR=/usr/local/cuda
APT_CACHE=""
KEEP=0
RUN_TESTS=1
RUN_DEB=1

die() { echo "fresh-machine-check: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --workdir) WORKDIR=${2:?--workdir needs a folder}; shift 2 ;;
    --cuda) CUDA_DIR=${2:?--cuda needs a folder}; shift 2 ;;
    --apt-cache) APT_CACHE=${2:?--apt-cache needs a folder}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --skip-tests) RUN_TESTS=0; shift ;;
    --skip-deb) RUN_DEB=0; shift ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap root mode, chroot and bind mounts)"
command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install mmdebstrap"
[ -x "$CUDA_DIR/bin/nvcc" ] || die "no CUDA toolkit at $CUDA_DIR (expected $CUDA_DIR/bin/nvcc; use --cuda DIR)"
git -C "$REPO" rev-parse --verify -q HEAD >/dev/null || die "$REPO is not a git checkout with a commit"

COMMIT=$(git -C "$REPO" rev-parse --short HEAD)
if [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine-check: note: uncommitted changes in $REPO are not checked (HEAD $COMMIT is)"
fi

# This machine's apt sources, so the roots reach the same archive.
SOURCES=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && SOURCES+=("$f")
done

mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)
LOGS=$WORKDIR/logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
if [ -n "$APT_CACHE" ]; then
  mkdir -p "$APT_CACHE"
  APT_CACHE=$(cd "$APT_CACHE" && pwd)
fi

SUMMARY=()
FAILED=0
# record NAME SECONDS RC: one line of the closing summary.
record() {
  local result=passed
  [ "$3" -eq 0 ] || { result="FAILED (exit $3)"; FAILED=1; }
  SUMMARY+=("$(printf '%-34s %6ss  %s' "$1" "$2" "$result")")
  echo "fresh-machine-check: $1: $result in $2 s"
}

# new_root DIR: a minimal Debian 12 root (mmdebstrap --variant=minbase).
new_root() {
  rm -rf "$1"
  mmdebstrap --quiet --variant=minbase \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --aptopt='Acquire::Check-Date "false"' \
    bookworm "$1" "${SOURCES[@]}" > "$LOGS/mmdebstrap-$(basename "$1").log" 2>&1 \
    || die "mmdebstrap failed (log: $LOGS/mmdebstrap-$(basename "$1").log)"
  mkdir -p "$1/usr/local/cuda" "$1/work"
  # This machine's way to PyPI, as for apt: the CA bundle pip verifies
  # with (a proxy's certificate may be in it) and the index it uses. The
  # root's own bundle is rebuilt by its ca-certificates package, so pip's
  # gets a file of its own.
  local cert index
  cert=${PIP_CERT:-$(pip3 config get global.cert 2>/dev/null || true)}
  index=${PIP_INDEX_URL:-$(pip3 config get global.index-url 2>/dev/null || true)}
  if [ -n "$cert" ] && [ -f "$cert" ] || [ -n "$index" ]; then
    mkdir -p "$1/etc/ssl"
    {
      echo "[global]"
      if [ -n "$cert" ] && [ -f "$cert" ]; then
        cp "$cert" "$1/etc/ssl/dlc-host-pip-ca.crt"
        echo "cert = /etc/ssl/dlc-host-pip-ca.crt"
      fi
      [ -z "$index" ] || echo "index-url = $index"
    } > "$1/etc/pip.conf"
  fi
}

# in_root DIR LOG COMMAND: runs COMMAND with bash -c inside the root DIR, in a
# private mount namespace (the bind mounts vanish with it), with a minimal
# environment as on a new machine; output goes to LOG and is not shown.
in_root() {
  local root=$1 log=$2 cmd=$3
  unshare --mount --propagation private bash -c '
    set -e
    root=$1 cuda=$2 cache=$3 cmd=$4
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount --bind "$cuda" "$root/usr/local/cuda"
    mount -o remount,bind,ro "$root/usr/local/cuda"
    if [ -n "$cache" ]; then mount --bind "$cache" "$root/var/cache/apt/archives"; fi
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "$cmd"
  ' in-root "$root" "$CUDA_DIR" "$APT_CACHE" "$cmd" > "$log" 2>&1
}

# step NAME ROOT COMMAND: runs and times one step, records its result.
step() {
  local name=$1 root=$2 cmd=$3 log start rc
  log="$LOGS/$(echo "$name" | tr -c 'A-Za-z0-9.+-' '_' | sed 's/__*/_/g; s/_$//').log"
  LAST_LOG=$log
  echo "fresh-machine-check: $name: running (log: $log)"
  start=$(date +%s)
  rc=0
  in_root "$root" "$log" "$cmd" || rc=$?
  record "$name" "$(( $(date +%s) - start ))" "$rc"
  if [ "$rc" -ne 0 ]; then
    echo "---- last lines of $log ----"
    tail -n 25 "$log"
    echo "----"
  fi
  return "$rc"
}

cleanup() {
  if [ "$KEEP" -eq 0 ]; then rm -rf "$WORKDIR/build-root" "$WORKDIR/deb-root"; fi
}
trap cleanup EXIT

echo "fresh-machine-check: checking $REPO at $COMMIT in new Debian 12 roots under $WORKDIR"

# 1. The README's two commands in a new root, from a clean clone.
BUILD_ROOT=$WORKDIR/build-root
start=$(date +%s)
new_root "$BUILD_ROOT"
record "new root (mmdebstrap minbase)" "$(( $(date +%s) - start ))" 0
git clone -q --no-hardlinks "$REPO" "$BUILD_ROOT/work/dlc"
git -C "$BUILD_ROOT/work/dlc" checkout -q "$COMMIT"

if step "README: bash tools/main-job.sh" "$BUILD_ROOT" "cd /work/dlc && bash tools/main-job.sh"; then
  accuracy=$(grep -o 'test accuracy [0-9.]*%' "$LAST_LOG" | tail -n 1 || true)
  SUMMARY+=("  main job: ${accuracy:-no accuracy line}")
fi
if [ "$RUN_TESTS" -eq 1 ]; then
  if step "README: bash tools/run-tests.sh" "$BUILD_ROOT" "cd /work/dlc && bash tools/run-tests.sh"; then
    # One totals line per ctest run (the main build, then the fuzz build).
    while IFS= read -r totals; do
      SUMMARY+=("  ctest: $totals")
    done < <(grep -E 'tests passed, [0-9]+ tests failed' "$LAST_LOG" || echo "no ctest totals line")
  fi
fi

# 2. The .deb: made in the build root, installed with apt into a second new
# root that has nothing else, where its dlc compiles the bundled MLP and its
# dlrt runs it; the outputs must match the build tree's dlrt on the same input.
if [ "$RUN_DEB" -eq 1 ]; then
  if step "build the .deb (tools/make-deb.sh)" "$BUILD_ROOT" \
      "cd /work/dlc && bash tools/make-deb.sh build > /work/deb-path.txt && cat /work/deb-path.txt
       mkdir -p /work/deb-check && cd /work/deb-check
       cp /work/dlc/examples/mlp/mlp.onnx .
       python3 -c 'import numpy as np; np.random.seed(0); np.savez(\"x.npz\", input=np.random.rand(4, 1, 28, 28).astype(np.float32))'
       /work/dlc/build/bin/dlc mlp.onnx --batch-size 4 -o ref.dlcp
       /work/dlc/build/bin/dlrt run ref.dlcp --inputs x.npz --outputs ref.npz --device host"; then
    DEB_ROOT=$WORKDIR/deb-root
    new_root "$DEB_ROOT"
    deb=$(cat "$BUILD_ROOT/work/deb-path.txt")
    mkdir -p "$DEB_ROOT/work/deb-check"
    cp "$BUILD_ROOT/$deb" "$DEB_ROOT/work/"
    cp "$BUILD_ROOT/work/deb-check/"{mlp.onnx,x.npz} "$DEB_ROOT/work/deb-check/"
    if step "apt-get install ./$(basename "$deb")" "$DEB_ROOT" \
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /work/$(basename "$deb")"; then
      if step "installed dlc + dlrt run the MLP" "$DEB_ROOT" \
          "cd /work/deb-check && dlc --version && dlc mlp.onnx --batch-size 4 --target sm_90 -o mlp.dlcp &&
           dlrt info mlp.dlcp && dlrt run mlp.dlcp --inputs x.npz --outputs y.npz --device host"; then
        cp "$DEB_ROOT/work/deb-check/y.npz" "$BUILD_ROOT/work/deb-check/y.npz"
        step "installed outputs == build tree's" "$BUILD_ROOT" \
          "cd /work/deb-check && python3 -c '
import numpy as np
a, b = np.load(\"y.npz\"), np.load(\"ref.npz\")
assert sorted(a.files) == sorted(b.files), (a.files, b.files)
for k in a.files:
    d = float(np.max(np.abs(a[k] - b[k])))
    print(k, a[k].shape, \"max abs diff\", d)
    assert a[k].shape == b[k].shape and d == 0.0, k
'" || true
      fi
    fi
  fi
fi

echo
echo "fresh-machine-check: $REPO at $COMMIT"
for line in "${SUMMARY[@]}"; do echo "  $line"; done
echo "  logs: $LOGS"
if [ "$FAILED" -ne 0 ]; then
  echo "fresh-machine-check: FAILED"
  exit 1
fi
echo "fresh-machine-check: all steps passed"

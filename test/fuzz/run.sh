#!/bin/sh
# The fuzz ctests (test/fuzz/CMakeLists.txt).
#   run.sh seeded BIN SEEDS WORKDIR RUNS [-dict=FILE]
#       a fixed-seed libFuzzer run of RUNS executions starting from the seed
#       corpus SEEDS (read only; new inputs go to WORKDIR/corpus, crashes to
#       WORKDIR/). Fails on any crash, leak, sanitizer report or timeout.
#   run.sh replay BIN DIR
#       runs every file of DIR through BIN once (libFuzzer or StandaloneMain).
set -eu
mode=$1 bin=$2
# Stack traces for UBSan reports (fatal with -fno-sanitize-recover).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
case $mode in
seeded)
  seeds=$3 work=$4 runs=$5
  shift 5
  rm -rf "$work"
  mkdir -p "$work/corpus"
  exec "$bin" -seed=1 -runs="$runs" -timeout=10 -rss_limit_mb=2560 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$work/" "$@" \
    "$work/corpus" "$seeds"
  ;;
replay)
  dir=$3
  set -- $(find "$dir" -type f | sort)
  if [ $# -eq 0 ]; then
    echo "run.sh: no files under $dir" >&2
    exit 1
  fi
  exec "$bin" -timeout=20 -rss_limit_mb=2560 "$@"
  ;;
*)
  echo "usage: run.sh seeded|replay ..." >&2
  exit 2
  ;;
esac

#!/usr/bin/python3
"""Compile-time benchmark (issue 15, "Cold compile ... warm ... printed by the
benchmark"): dlc compiles each model twice with a fresh --cache-dir, cold (an
empty compile cache) and warm (the same model again), and prints the wall and
user CPU seconds of each run, dlc's --time-phases, the load average before
each run and PASS/MISS against the issue's targets.

    /usr/bin/python3 test/benchmarks/compile_times.py --dlc build/bin/dlc \\
        --workdir /tmp/compile-times [--models densenet121,gpt2] [--quick]
        [--onnx-dir DIR]

Models (exported as test/benchmarks/host_steps.py exports them, with its
build/export helpers; --onnx-dir reuses DIR/<name>.onnx instead):
  densenet121  torchvision DenseNet-121, batch 2 of 3x64x64, SGD, host target;
               targets: cold <= 15 s, warm <= 2 s
  gpt2         the GPT-2-sized TinyGPT (162 M parameters), batch 2, AdamW,
               --target sm_90 (host library + NVRTC cubins; NVRTC needs no
               GPU); targets: cold <= 20 s, warm <= 2 s
  mlp          the bundled MLP, batch 64, Adam (--quick; no time targets)

Targets are wall seconds on 2 cores; user CPU seconds are printed beside them
because other processes on the machine stretch wall time (the load average
says how busy it was). Every run also checks, and fails on, what must hold
whatever the timings: the warm compile hits the cache for every object
(no misses) and writes a package byte-identical to the cold one. Exit status
1 on such a failure; a MISS of a time target is printed, not an error.
"""
import argparse
import filecmp
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import host_steps  # noqa: E402 (build/export helpers and MODELS)

# name: extra dlc flags, cold and warm targets in wall seconds (None: none).
MODELS = {
    "densenet121": dict(flags=[], cold=15.0, warm=2.0),
    "gpt2": dict(flags=["--target", "sm_90"], cold=20.0, warm=2.0),
    "mlp": dict(flags=[], cold=None, warm=None),
}


def dlc_command(args, name, onnx_path, pkg, cache):
    spec = host_steps.MODELS[name]
    cmd = [args.dlc, onnx_path, "--batch-size", str(spec["batch"]), "--train",
           "--loss", "softmax-cross-entropy", "--optimizer", spec["opt"],
           "--lr", repr(spec["lr"]), "--cache-dir", cache, "--time-phases",
           "-o", pkg]
    if "momentum" in spec:
        cmd += ["--momentum", repr(spec["momentum"])]
    return cmd + MODELS[name]["flags"]


def timed(cmd):
    """(rc, output, wall s, user s, sys s) of |cmd| (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.returncode, r.stdout, wall, after.ru_utime - before.ru_utime,
            after.ru_stime - before.ru_stime)


def phases(out):
    """dlc --time-phases' 'phase seconds' lines and its cache line."""
    lines, cache = [], None
    take = False
    for ln in out.splitlines():
        if ln.startswith("dlc: phase times"):
            take = True
            continue
        if ln.startswith("dlc: cache:"):
            cache = ln[len("dlc: "):]
            take = False
            continue
        if take and re.match(r"^\s+\S.*\s[0-9.]+$", ln):
            lines.append(ln.strip())
    return lines, cache


def verdict(secs, target):
    if target is None:
        return ""
    return f"{'PASS' if secs <= target else 'MISS'} (target <= {target:g} s)"


def measure(args, name, onnx_path):
    """Cold then warm compile of |name|; list of failure messages."""
    failures = []
    cache = os.path.join(args.workdir, f"{name}-cache")
    shutil.rmtree(cache, ignore_errors=True)
    pkgs = {}
    for run in ("cold", "warm"):
        pkg = os.path.join(args.workdir, f"{name}-{run}.dlcp")
        if os.path.exists(pkg):
            os.remove(pkg)
        load = os.getloadavg()
        rc, out, wall, user, sys_s = timed(dlc_command(args, name, onnx_path, pkg, cache))
        if rc != 0:
            failures.append(f"{name} {run}: dlc exit {rc}: {out[-1500:]}")
            return failures
        pkgs[run] = pkg
        target = MODELS[name][run]
        print(f"{name} {run}: {wall:.2f} s wall, {user:.2f} s user, {sys_s:.2f} s sys "
              f"(load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}) "
              f"{verdict(wall, target)}")
        lines, cache_line = phases(out)
        for ln in lines:
            print(f"    {ln}")
        if cache_line:
            print(f"    {cache_line}")
        if run == "warm":
            m = re.search(r"(\d+) hits, (\d+) misses", cache_line or "")
            if not m or int(m.group(1)) == 0 or int(m.group(2)) != 0:
                failures.append(f"{name} warm: not a cache hit ({cache_line!r})")
    if not filecmp.cmp(pkgs["cold"], pkgs["warm"], shallow=False):
        failures.append(f"{name}: the warm package differs from the cold one")
    else:
        print(f"{name}: warm package byte-identical to cold "
              f"({os.path.getsize(pkgs['warm'])} bytes)")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--workdir", default="/tmp/dlc-compile-times")
    ap.add_argument("--models", default="densenet121,gpt2",
                    help=f"comma list of {','.join(MODELS)}")
    ap.add_argument("--quick", action="store_true",
                    help="the bundled MLP only (the test suite's variant)")
    ap.add_argument("--onnx-dir", default=None,
                    help="use DIR/<name>.onnx instead of exporting")
    args = ap.parse_args()
    names = ["mlp"] if args.quick else args.models.split(",")
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n!r}; known: {', '.join(MODELS)}")
    os.makedirs(args.workdir, exist_ok=True)
    print(f"dlc {args.dlc}; {os.cpu_count()} cores")
    failures = []
    for name in names:
        onnx_path = os.path.join(args.onnx_dir, f"{name}.onnx") if args.onnx_dir else None
        if not onnx_path or not os.path.exists(onnx_path):
            onnx_path, _ = host_steps.export(
                name, lambda f: os.path.join(args.workdir, f))
        failures += measure(args, name, onnx_path)
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

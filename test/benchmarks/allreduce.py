#!/usr/bin/env python3
"""All-reduce bus bandwidth of the Gloo communicator on this host (loopback).

Starts W ranks of build/bin/dlrt-allreduce-bench (default W = 2 and 4) with
torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR=127.0.0.1, MASTER_PORT = a free port) and prints, for message
sizes from 1 KiB to 256 MiB (powers of 4 by default), the time of one f32
sum all-reduce, the algorithm bandwidth algbw = bytes / time and the bus
bandwidth busbw = algbw * 2(W-1)/W, the formula of nccl-tests
(github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md, "AllReduce"): the
traffic each rank's link carries in a ring all-reduce, comparable across W.

  python3 test/benchmarks/allreduce.py [--build build] [--ranks 2 4]
      [--min 1024] [--max 268435456] [--factor 4]
"""
import argparse
import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(bench, world, lo, hi, factor):
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [bench, str(lo), str(hi), str(factor)], env=env,
            stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL,
            text=True))
    out, _ = procs[0].communicate()
    codes = [procs[0].returncode] + [p.wait() for p in procs[1:]]
    if any(codes):
        sys.exit(f"allreduce.py: a rank failed with W={world} (exit codes {codes})")
    rows = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        b, count, iters, t_us, algbw, busbw = line.split()
        rows.append((int(b), int(iters), float(t_us), float(algbw), float(busbw)))
    return rows


def size_text(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b // scale} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build directory")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--min", type=int, default=1024, help="smallest size, bytes")
    ap.add_argument("--max", type=int, default=256 << 20, help="largest size, bytes")
    ap.add_argument("--factor", type=int, default=4, help="size step factor")
    args = ap.parse_args()
    bench = os.path.join(args.build, "bin", "dlrt-allreduce-bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"allreduce.py: {bench} not found; build it with "
                 f"ninja -C {args.build} dlrt-allreduce-bench")
    print(f"Gloo all-reduce (f32 sum) on loopback, {os.cpu_count()} CPUs; "
          "busbw = algbw * 2(W-1)/W (nccl-tests)")
    for w in args.ranks:
        rows = run(bench, w, args.min, args.max, args.factor)
        print(f"\nW = {w}")
        print(f"| size | iters | time (us) | algbw (GB/s) | busbw (GB/s) |")
        print(f"| ---: | ---: | ---: | ---: | ---: |")
        for b, iters, t, alg, bus in rows:
            print(f"| {size_text(b)} | {iters} | {t:.1f} | {alg:.3f} | {bus:.3f} |")


if __name__ == "__main__":
    main()

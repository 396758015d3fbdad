#!/usr/bin/python3
"""How much of the gradient all-reduce time the backward hides (issue 12).

Exports a GPT-style decoder (test/e2e/arch_models.py's TinyGPT; default 6
layers, d 256, sequence 64, vocabulary 512, batch 8 per rank) with PyTorch,
compiles its training step with `dlc --train --data-parallel --bucket-size S`
for each S of --bucket-sizes (default 1 MiB, where the model's 19 MiB of
gradients make many buckets, and DDP's 25 MiB, where they make one, issued
after the whole backward), trains each on W ranks (default 2) on the host
with `dlrt launch ... dlrt train --trace`, and reads each rank's trace:

  transfer   the time each bucket's all-reduce spent moving data (the
             communication lane: from when the communicator started it to
             when it finished)
  exposed    the part of it the step spent blocked in the waits for it
  hidden     transfer - exposed: communication that overlapped the rest of
             the backward

printed per rank as totals per step (the first step, with start-up, is
left out) and as the hidden share. All ranks run with --threads OpenMP
threads (default 1): two ranks on this project's 2-core machine already
share the cores, and the communicator's thread competes with them, so the
host figures say whether the schedule overlaps at all; the GPU (NCCL on its
own stream) is where the overlap pays.

A person runs this; it is not a ctest. About a minute at the defaults:

  /usr/bin/python3 test/benchmarks/data_parallel.py --dlc build/bin/dlc \\
      --dlrt build/bin/dlrt --workdir /tmp/dp-bench
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from arch_models import make_gpt  # noqa: E402


def overlap(a0, a1, spans):
    """Length of [a0, a1] covered by the (disjoint) |spans|."""
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in spans)


def analyse(path):
    """(steps, transfer, exposed, step time, buckets) per step, in us, from
    one rank's trace, leaving the first step out."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["cat"] == "step"), key=lambda e: e["ts"])
    if len(steps) < 2:
        sys.exit(f"data_parallel.py: {path} has {len(steps)} steps; need 2 or more")
    t0 = steps[1]["ts"]
    kept = [e for e in events if e["ts"] >= t0]
    waits = [(e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] == "wait"]
    transfers = [e for e in kept if e["tid"] == 1]
    n = len(steps) - 1
    transfer = sum(e["dur"] for e in transfers)
    exposed = sum(overlap(e["ts"], e["ts"] + e["dur"], waits) for e in transfers)
    step_time = sum(e["dur"] for e in steps[1:])
    return n, transfer / n, exposed / n, step_time / n, len(transfers) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--embed", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8, help="per rank")
    ap.add_argument("--bucket-sizes", default="1MiB,25MiB",
                    help="comma-separated --bucket-size values to compare")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    world = args.ranks
    model, x, y = make_gpt(args.batch * world, seq=args.seq, vocab=args.vocab,
                           embed=args.embed, heads=args.heads, layers=args.layers)
    params = sum(p.numel() for p in model.parameters())
    model.train()
    onnx_path = w("gpt.onnx")
    torch.onnx.export(model, x[: args.batch], onnx_path, input_names=["input"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())
    print(f"GPT: {args.layers} layers, d {args.embed}, seq {args.seq}, vocab "
          f"{args.vocab}, {params} parameters ({params * 4 / 2**20:.1f} MiB of "
          f"gradients); batch {args.batch} per rank, {world} ranks, "
          f"{args.threads} thread(s) each")
    for size in args.bucket_sizes.split(","):
        measure(args, w, onnx_path, size, world)


def measure(args, w, onnx_path, size, world):
    """Compiles with --bucket-size |size|, trains with traces, prints."""
    pkg = w(f"gpt-{size}.dlcp")
    r = subprocess.run([args.dlc, onnx_path, "--train", "--optimizer", "sgd",
                        "--batch-size", str(args.batch), "--data-parallel",
                        "--bucket-size", size, "--stats", "--quiet",
                        "-o", pkg], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"data_parallel.py: dlc failed:\n{r.stdout}{r.stderr}")
    buckets = [l for l in r.stdout.splitlines() if "gradient buckets" in l]
    print(f"\n--bucket-size {size}: "
          + (buckets[0] if buckets else "(no bucket line in dlc --stats)"))

    trace = w(f"trace-{size}.json")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    cmd = [args.dlrt, "launch", "--nproc-per-node", str(world), "--",
           args.dlrt, "train", pkg, "--data", w("batch.npz"), "--steps",
           str(args.steps), "--no-shuffle", "--quiet", "--device", "host",
           "--trace", trace]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"data_parallel.py: training failed:\n{r.stdout}{r.stderr}")

    print("per step (the first left out), microseconds:")
    print(f"{'rank':>4} {'step':>10} {'buckets':>8} {'transfer':>10} {'exposed':>10} "
          f"{'hidden':>10} {'hidden %':>9}")
    shares = []
    for rank in range(world):
        path = w(f"trace-{size}.rank{rank}.json") if world > 1 else trace
        n, transfer, exposed, step, nb = analyse(path)
        hidden = transfer - exposed
        share = 100.0 * hidden / transfer if transfer > 0 else 0.0
        shares.append(share)
        print(f"{rank:>4} {step:>10.0f} {nb:>8.0f} {transfer:>10.0f} {exposed:>10.0f} "
              f"{hidden:>10.0f} {share:>8.1f}%")
    print(f"hidden behind the backward: {sum(shares) / len(shares):.1f}% of the "
          f"all-reduce time (mean over ranks)")

if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The pipeline simulator's table for a GPT at S x 64 H100s (issue 13, item 4).

Exports a GPT-style decoder (test/e2e/arch_models.py's TinyGPT; default 8
equal pre-LayerNorm layers, d 512, 8 heads, sequence 256, vocabulary 1024,
micro-batch 8) with PyTorch and runs

  dlc model.onnx --train --batch-size B --pipeline-stages S --microbatches M
      --schedule X --simulate --replicas D --device-model h100

for S in {1, 2, 4, 8}, M in {1, 4, 16, 64}, X in {gpipe, 1f1b} (D = 64
data-parallel replicas of every stage by default: 8 x 64 = 512 GPUs at
S = 8). dlc splits @main by the roofline cost model (docs/pipeline.md) and
simulates one training step from the split; nothing is lowered or run.
Prints one table: the step time, the bubble fraction next to GPipe's
(S-1)/(M+S-1), the share of the step spent in the gradient all-reduce, and
the peak activation memory per stage (stage 0 first, MiB).

A person runs this; it is not a ctest. About a minute (mostly the 32 dlc
runs):

  /usr/bin/python3 test/benchmarks/pipeline_simulate.py --dlc build/bin/dlc \\
      --workdir /tmp/pipeline-sim
"""
import argparse
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from arch_models import make_gpt  # noqa: E402


def simulate(args, onnx_path, stages, micro, schedule):
    """Step time (s), pipeline time (s), bubble, ideal bubble, per-stage peak
    activation bytes, parsed from dlc --simulate's table."""
    cmd = [args.dlc, onnx_path, "--train", "--batch-size", str(args.batch), "--quiet",
           "--pipeline-stages", str(stages), "--microbatches", str(micro),
           "--schedule", schedule, "--simulate", "--replicas", str(args.replicas),
           "--device-model", args.device_model]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"error: exit status {r.returncode}: {' '.join(cmd)}\n{r.stdout}")
    out = r.stdout
    rows = re.findall(r"^\s*(\d+)\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\d+)$", out, re.M)
    bubble = re.search(r"^bubble fraction: ([\d.]+) \(GPipe, equal stages: "
                       r"\(S-1\)/\(M\+S-1\) = ([\d.]+)\)", out, re.M)
    step = re.search(r"^step time: (\S+) s \(pipeline (\S+) s", out, re.M)
    if len(rows) != stages or not bubble or not step:
        sys.exit(f"error: unexpected dlc --simulate output:\n{out}")
    return (float(step.group(1)), float(step.group(2)), float(bubble.group(1)),
            float(bubble.group(2)), [int(r[2]) for r in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--embed", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8, help="micro-batch size")
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--replicas", type=int, default=64, help="D")
    ap.add_argument("--device-model", default="h100")
    ap.add_argument("--stages", default="1,2,4,8")
    ap.add_argument("--microbatches", default="1,4,16,64")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)

    model, x, _ = make_gpt(args.batch, seq=args.seq, vocab=args.vocab, embed=args.embed,
                           heads=args.heads, layers=args.layers)
    params = sum(p.numel() for p in model.parameters())
    model.train()
    onnx_path = os.path.join(args.workdir, "gpt.onnx")
    torch.onnx.export(model, x, onnx_path, input_names=["input"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    print(f"GPT: {args.layers} pre-LN decoder layers, d {args.embed}, {args.heads} heads, "
          f"seq {args.seq}, vocab {args.vocab}, {params} parameters, micro-batch "
          f"{args.batch}; device model {args.device_model}, D = {args.replicas} replicas "
          f"of every stage")
    print()
    print("| schedule | S | M | GPUs | step (ms) | bubble | (S-1)/(M+S-1) | all-reduce share "
          "| peak activation per stage (MiB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for schedule in ("gpipe", "1f1b"):
        for s in (int(v) for v in args.stages.split(",")):
            for m in (int(v) for v in args.microbatches.split(",")):
                step, pipe, bubble, ideal, peaks = simulate(args, onnx_path, s, m, schedule)
                share = (step - pipe) / step if step > 0 else 0.0
                peak_text = " ".join(f"{p / (1 << 20):.0f}" for p in peaks)
                print(f"| {schedule} | {s} | {m} | {s * args.replicas} | {step * 1e3:.3f} "
                      f"| {bubble:.4f} | {ideal:.4f} | {share:.3f} | {peak_text} |",
                      flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Every --lr-schedule against docs/dlc.md's formulas (issue 16 item 1).

The MLP of test/e2e/models.py is compiled with each schedule (and a warm-up)
and trained by `dlrt train` past the end of the schedule; the `lr` that
train_step returns at each update (logged by --log-jsonl) must equal the
formula, evaluated in float64 here, within 1e-6 relative (dlc evaluates it
with a few f32 operations: ~1e-7).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from commands import run  # noqa: E402
from models import make_mlp  # noqa: E402

BASE = 0.1
TOL = 1e-6
STEPS = 9


def formula(kind, t, w, total=0, min_lr=0.0, k=1, gamma=0.1):
    if w > 0 and t <= w:
        return BASE * t / w
    if kind == "constant":
        return BASE
    if kind == "step":
        return BASE * gamma ** (t // k)
    if t > total:
        return min_lr
    if kind == "linear":
        return min_lr + (BASE - min_lr) * (total - t) / (total - w)
    return min_lr + (BASE - min_lr) * 0.5 * (1 + math.cos(math.pi * (t - w) / (total - w)))


CASES = [
    ("constant", ["--warmup-steps", "2"], dict(w=2)),
    ("linear", ["--warmup-steps", "2", "--total-steps", "6", "--min-lr", "0.01"],
     dict(w=2, total=6, min_lr=0.01)),
    ("cosine", ["--total-steps", "7", "--min-lr", "0.005"], dict(w=0, total=7, min_lr=0.005)),
    ("step", ["--warmup-steps", "1", "--step-size", "3", "--gamma", "0.5"],
     dict(w=1, k=3, gamma=0.5)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    model = make_mlp()
    onnx_path = w("mlp.onnx")
    torch.onnx.export(model.eval(), torch.zeros(1, 1, 28, 28), onnx_path,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    gen = torch.Generator().manual_seed(7)
    np.savez(w("data.npz"), input=torch.rand(4, 1, 28, 28, generator=gen).numpy(),
             labels=torch.randint(0, 10, (4,), generator=gen).numpy())
    ok = True
    for kind, flags, params in CASES:
        pkg = w(kind + ".dlcp")
        run([args.dlc, onnx_path, "--train", "--lr", repr(BASE), "--lr-schedule", kind, *flags,
             "--batch-size", "4", "--quiet", "-o", pkg])
        log = w(kind + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        run([args.dlrt, "train", pkg, "--data", w("data.npz"), "--no-shuffle", "--steps",
             str(STEPS), "--log-jsonl", log, "--device", "host", "--quiet"])
        with open(log) as f:
            ours = [json.loads(line)["lr"] for line in f if line.strip()]
        ref = [formula(kind, t, **params) for t in range(1, STEPS + 1)]
        rel = [abs(a - b) / b for a, b in zip(ours, ref)]
        good = len(ours) == STEPS and max(rel) <= TOL
        print(f"{kind} {' '.join(flags)}: dlc {[f'{v:.6g}' for v in ours]}")
        print(f"{' ' * len(kind)} formula {[f'{v:.6g}' for v in ref]}; max rel {max(rel):.2e} "
              f"{'ok' if good else 'MISMATCH'}")
        ok = ok and good
    if not ok:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()

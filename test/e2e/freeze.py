#!/usr/bin/python3
"""Frozen parameters (issue 16 item 4, its "done when" bullet).

The CNN of test/e2e/models.py (two convolutions with BatchNorm, a linear
head), exported by PyTorch here, is compiled with `dlc --train --optimizer
adam --freeze REGEX` where REGEX matches the convolutions' weights and bias
and trained by `dlrt train` for 5 steps on one fixed batch. PyTorch trains
the same model from the same weights with requires_grad=False on those
tensors.

Checks:
  - `dlc --stats` lists exactly the convolutions' tensors as frozen, with
    their element counts;
  - every step's loss within 1e-4 relative of PyTorch's (train_vs_torch.py's
    bound for this CNN and Adam; fp32 on both sides);
  - the frozen tensors in the checkpoint are bit-identical to the exported
    initializers, the trained ones are not;
  - the checkpoint has no optimizer state (exp_avg, exp_avg_sq) for a frozen
    tensor and has it for every trained one.
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.path.insert(0, os.path.dirname(__file__))
from commands import run  # noqa: E402
from models import make_cnn  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

FREEZE = r"^(0|4)\."  # nn.Sequential's two Conv2d modules
STEPS = 5
REL_TOL = 1e-4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model = make_cnn()
    onnx_path = w("cnn.onnx")
    torch.onnx.export(model.eval(), torch.zeros(1, 1, 28, 28), onnx_path,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.PRESERVE)
    initial = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(args.batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (args.batch,), generator=gen)
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())

    out = run([args.dlc, onnx_path, "--train", "--optimizer", "adam", "--lr", "1e-3",
               "--freeze", FREEZE, "--batch-size", str(args.batch), "--stats", "--quiet",
               "-o", w("cnn.dlcp")])
    frozen = {}
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("frozen tensors:"))
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        # "  name: elements (why)"
        m = re.match(r"  (.+): (\d+) \((.+)\)$", line)
        if not m or m.group(3) != "--freeze":
            sys.exit(f"FAIL: unexpected frozen-tensor line {line!r}")
        frozen[m.group(1)] = int(m.group(2))
    params = dict(model.named_parameters())
    expected = {n: p.numel() for n, p in params.items() if re.search(FREEZE, n)}
    ok = True
    print(f"frozen: {frozen}")
    if frozen != expected or not expected:
        print(f"MISMATCH: dlc froze {frozen}, expected the convolutions {expected}")
        ok = False

    log = w("train.jsonl")
    if os.path.exists(log):
        os.remove(log)
    run([args.dlrt, "train", w("cnn.dlcp"), "--data", w("batch.npz"), "--no-shuffle",
         "--steps", str(STEPS), "--log-jsonl", log, "--device", "host", "--quiet",
         "--save", w("cnn.safetensors")])
    with open(log) as f:
        ours = [json.loads(line)["loss"] for line in f if line.strip()]

    for n, p in params.items():
        p.requires_grad_(not re.search(FREEZE, n))
    opt = torch.optim.Adam([p for p in params.values() if p.requires_grad], lr=1e-3)
    model.train()
    ref = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        ref.append(loss.item())
    for i, (a, b) in enumerate(zip(ours, ref), 1):
        rel = abs(a - b) / abs(b)
        print(f"step {i}: dlrt {a:.8f}  torch {b:.8f}  rel {rel:.2e}  {'ok' if rel <= REL_TOL else 'MISMATCH'}")
        ok = ok and rel <= REL_TOL
    if len(ours) != STEPS:
        print(f"MISMATCH: {len(ours)} steps logged")
        ok = False

    ckpt, _ = read_safetensors(w("cnn.safetensors"))
    for n in params:
        state = [s for s in (n + ".exp_avg", n + ".exp_avg_sq") if s in ckpt]
        if n in expected:
            same = np.array_equal(ckpt[n], initial[n])
            print(f"frozen {n}: bit-identical {same}, optimizer state {state or 'none'}")
            ok = ok and same and not state
        else:
            moved = not np.array_equal(ckpt[n], initial[n])
            print(f"trained {n}: changed {moved}, optimizer state {len(state)} tensors")
            ok = ok and moved and len(state) == 2
    if not ok:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()

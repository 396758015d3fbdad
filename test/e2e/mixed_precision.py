#!/usr/bin/python3
"""bf16 mixed-precision training against fp32 and PyTorch autocast (issue 10).

For one model (--model mlp | cnn | gpt), exported by PyTorch in this script:
  - compiles it with `dlc --train` at --precision fp32 and bf16 (and prints
    `dlc --stats` for both; the bf16 and fp16 packages with every kernel
    NVRTC-compiled for sm_80 and sm_90), and checks that the bf16 step has no standalone
    cast kernel next to an elementwise kernel (one fusion could absorb);
  - trains both for --steps steps on one fixed batch with `dlrt train`, and
    trains PyTorch from the same weights under
    `torch.autocast("cpu", dtype=torch.bfloat16)`;
  - prints the three loss curves and checks every bf16 step's loss within
    --tol (2%, the issue's bound) of fp32 dlc's and of PyTorch autocast's;
  - with --max-memory-ratio R: checks that the bf16 step's planned
    activation arena is at most R times fp32's;
  - with --resume-check PRECISIONS: checks that training --steps steps in one
    run and in two (checkpoint after half, `dlrt train --resume`) gives
    bit-identical checkpoints, for each listed precision.

Why 2% and not tighter: bf16 keeps 8 significant bits (relative rounding
error up to 2^-9 = 0.2% per rounding), and dlc and PyTorch round at
different places (PyTorch per op, dlc once per fused kernel), so the two
bf16 trajectories are two samples of bf16 noise around the fp32 one.
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from commands import run  # noqa: E402
from arch_models import make_gpt  # noqa: E402
from models import MODELS  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402


def make(model_name, batch):
    """(model, x, y, export kwargs) with seeded weights and batch."""
    if model_name == "gpt":
        model, x, y = make_gpt(batch)
        return model, x, y, dict(training=torch.onnx.TrainingMode.TRAINING,
                                 do_constant_folding=False)
    model = MODELS[model_name]()
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    # PRESERVE keeps BatchNormalization as a node (dlc --train uses batch
    # statistics), as train_vs_torch.py does.
    return model.eval(), x, y, dict(training=torch.onnx.TrainingMode.PRESERVE)


def stats(text):
    s = {}
    for key, pattern in [("arena", r"activation arena: (\d+)"),
                         ("casts", r"standalone cast kernels: (\d+)"),
                         ("casts_next", r"standalone cast kernels: \d+ \((\d+) next"),
                         ("kernels", r"^kernels: (\d+)")]:
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit(f"FAIL: dlc --stats printed no '{key}':\n{text}")
        s[key] = int(m.group(1))
    return s


def torch_autocast_losses(model, x, y, lr, steps):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(
                out.float().reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def dlrt_losses(dlrt, package, data, steps, jsonl, extra=()):
    if os.path.exists(jsonl):
        os.remove(jsonl)
    run([dlrt, "train", package, "--data", data, "--steps", str(steps),
         "--no-shuffle", "--log-jsonl", jsonl, "--device", "host", *extra])
    with open(jsonl) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn", "gpt"], required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--tol", type=float, default=0.02)
    ap.add_argument("--max-memory-ratio", type=float, default=0.0)
    ap.add_argument("--resume-check", default="",
                    help="comma-separated precisions whose checkpoint/resume "
                         "must be bit-identical (e.g. bf16,fp16)")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model, x, y, export_kwargs = make(args.model, args.batch)
    onnx_path = w(f"{args.model}.onnx")
    torch.onnx.export(model, x, onnx_path, input_names=["input"],
                      output_names=["logits"], opset_version=17, **export_kwargs)
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())

    ok = True
    found = {}
    losses = {}
    precisions = ["fp32", "bf16"] + [p for p in args.resume_check.split(",")
                                     if p and p not in ("fp32", "bf16")]
    for p in precisions:
        # Every low-precision kernel is also NVRTC-compiled for sm_80 and
        # sm_90 (the package embeds the cubins; dlc fails if one does not
        # compile).
        target = ["--target", "sm_80,sm_90"] if p != "fp32" else []
        out = run([args.dlc, onnx_path, "--train", "--optimizer", "adam",
                   "--lr", repr(args.lr), "--batch-size", str(args.batch),
                   "--precision", p, "--stats", "--quiet", "-o", w(f"{p}.dlcp")]
                  + target)
        found[p] = stats(out)
        print(f"{p}: {found[p]}")
        if p in ("fp32", "bf16"):
            losses[p] = dlrt_losses(args.dlrt, w(f"{p}.dlcp"), w("batch.npz"),
                                    args.steps, w(f"{p}.jsonl"))

    if found["bf16"]["casts_next"] != 0:
        print(f"standalone cast kernels next to an elementwise kernel: "
              f"{found['bf16']['casts_next']} MISMATCH (expected 0)")
        ok = False
    model_ref, _, _, _ = make(args.model, args.batch)
    ref = torch_autocast_losses(model_ref, x, y, args.lr, args.steps)

    print(f"{'step':>4} {'dlc fp32':>12} {'dlc bf16':>12} {'torch autocast':>15}"
          f" {'vs fp32':>9} {'vs torch':>9}")
    if len(losses["fp32"]) != args.steps or len(losses["bf16"]) != args.steps:
        sys.exit("FAIL: dlrt logged the wrong number of steps")
    for i in range(args.steps):
        a, b, t = losses["fp32"][i], losses["bf16"][i], ref[i]
        ra, rt = abs(b - a) / abs(a), abs(b - t) / abs(t)
        flag = "ok" if ra <= args.tol and rt <= args.tol else "MISMATCH"
        ok &= flag == "ok"
        print(f"{i + 1:>4} {a:>12.6f} {b:>12.6f} {t:>15.6f} {ra:>9.2e} {rt:>9.2e} {flag}")
    if losses["bf16"][-1] >= losses["bf16"][0]:
        print("bf16 loss did not decrease MISMATCH")
        ok = False

    ratio = found["bf16"]["arena"] / found["fp32"]["arena"]
    print(f"planned activation arena: fp32 {found['fp32']['arena']} B, bf16 "
          f"{found['bf16']['arena']} B, ratio {ratio:.3f}")
    if args.max_memory_ratio and ratio > args.max_memory_ratio:
        print(f"memory ratio above {args.max_memory_ratio} MISMATCH")
        ok = False

    for p in [p for p in args.resume_check.split(",") if p]:
        half = args.steps // 2
        for f in ["straight.st", "first.st", "resumed.st"]:
            if os.path.exists(w(f"{p}-{f}")):
                os.remove(w(f"{p}-{f}"))
        pkg = w(f"{p}.dlcp")
        dlrt_losses(args.dlrt, pkg, w("batch.npz"), args.steps, w(f"{p}-a.jsonl"),
                    ["--save", w(f"{p}-straight.st")])
        dlrt_losses(args.dlrt, pkg, w("batch.npz"), half, w(f"{p}-b.jsonl"),
                    ["--save", w(f"{p}-first.st")])
        dlrt_losses(args.dlrt, pkg, w("batch.npz"), args.steps, w(f"{p}-c.jsonl"),
                    ["--resume", w(f"{p}-first.st"), "--save", w(f"{p}-resumed.st")])
        a = read_safetensors(w(f"{p}-straight.st"))[0]
        b = read_safetensors(w(f"{p}-resumed.st"))[0]
        same = sorted(a) == sorted(b) and all(
            a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a)
        print(f"{p}: checkpoint after {args.steps} steps, straight vs resumed at "
              f"{half}: {len(a)} tensors {'bit-identical' if same else 'DIFFER'}")
        ok &= same
    if not ok:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()

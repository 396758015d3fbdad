#!/usr/bin/python3
"""Gradient accumulation (issue 16 item 3, its "done when" bullet).

The MLP of test/e2e/models.py, exported by PyTorch here, is compiled twice
with momentum SGD and a warm-up + linear lr schedule over 2 updates:
  A: `dlc --train --accumulate 4 --batch-size B`
  B: `dlc --train --batch-size 4B`
and trained by `dlrt train` on the same 4B x 2 samples without shuffling:
A for 8 calls (2 updates), B for 2 steps.

Checks:
  - the mean of A's losses over calls 1-4 (5-8) equals B's loss of step 1
    (2) within 1e-6 relative: the mean loss over the 4 micro-batches is the
    loss of the 4B batch;
  - every tensor of the checkpoints (parameters, momentum buffers) agrees
    within 1e-6 of the largest magnitude of B's tensor (max |A - B| <=
    1e-6 max |B|), and A's accumulators are zero after the update;
  - A's step counter is 2 (updates, not calls), its call count 0, and A's
    logged lr is the schedule's rate of update 1 on calls 1-4 and of update
    2 on calls 5-8, equal to B's;
  - resuming A from a checkpoint after call 6 (mid-accumulation) gives a
    bit-identical checkpoint after call 8.
The tolerance 1e-6: A sums the 4 micro-batch gradients and scales by 1/4
(exact), B sums the 4B samples in one reduction, so the two differ only in
the order of f32 sums (~1e-7 relative).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from commands import run  # noqa: E402
from models import make_mlp  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

N = 4
TOL = 1e-6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4, help="A's micro-batch B")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model = make_mlp()
    onnx_path = w("mlp.onnx")
    torch.onnx.export(model.eval(), torch.zeros(1, 1, 28, 28), onnx_path,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    big = N * args.batch
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(2 * big, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (2 * big,), generator=gen)
    np.savez(w("data.npz"), input=x.numpy(), labels=y.numpy())

    recipe = ["--train", "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.1",
              "--lr-schedule", "linear", "--warmup-steps", "1", "--total-steps", "2",
              "--min-lr", "0.02", "--quiet"]
    run([args.dlc, onnx_path, *recipe, "--accumulate", str(N), "--batch-size", str(args.batch),
         "-o", w("acc.dlcp")])
    run([args.dlc, onnx_path, *recipe, "--batch-size", str(big), "-o", w("big.dlcp")])

    def train(package, steps, name, extra=()):
        log = w(name + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        run([args.dlrt, "train", package, "--data", w("data.npz"), "--no-shuffle",
             "--steps", str(steps), "--log-jsonl", log, "--device", "host", "--quiet",
             "--save", w(name + ".safetensors"), *extra])
        with open(log) as f:
            return [json.loads(line) for line in f if line.strip()]

    acc = train(w("acc.dlcp"), 2 * N, "acc")
    whole = train(w("big.dlcp"), 2, "big")
    ok = True
    for u in range(2):
        mean = float(np.mean([r["loss"] for r in acc[u * N:(u + 1) * N]], dtype=np.float64))
        ref = whole[u]["loss"]
        rel = abs(mean - ref) / abs(ref)
        good = rel <= TOL
        print(f"update {u + 1}: mean of {N} accumulated losses {mean:.9g}, one step on the "
              f"{N}x batch {ref:.9g}, rel {rel:.2e} {'ok' if good else 'MISMATCH'}")
        ok = ok and good
        lrs = {r["lr"] for r in acc[u * N:(u + 1) * N]}
        if lrs != {whole[u]["lr"]}:
            print(f"MISMATCH: update {u + 1}: lr of the accumulating calls {sorted(lrs)}, "
                  f"of the big step {whole[u]['lr']}")
            ok = False

    a, _ = read_safetensors(w("acc.safetensors"))
    b, _ = read_safetensors(w("big.safetensors"))
    worst = 0.0
    for name, ref in b.items():
        if name not in a:
            print(f"MISMATCH: the accumulating checkpoint has no '{name}'")
            ok = False
            continue
        scale = float(np.max(np.abs(ref))) or 1.0
        err = float(np.max(np.abs(a[name].astype(np.float64) - ref))) / scale
        worst = max(worst, err) if name != "__step" else worst
        if err > TOL:
            print(f"MISMATCH: '{name}': max |acc - big| / max |big| = {err:.3g}")
            ok = False
    print(f"checkpoint tensors ({len(b)}): max |acc - big| / max |big| = {worst:.3g} "
          f"(tolerance {TOL:g})")
    extra = sorted(set(a) - set(b))
    accumulators = [n for n in extra if n.endswith(".grad_accumulator")]
    print(f"accumulating checkpoint's own tensors: {extra}")
    if float(a["__step"]) != 2.0 or float(a.get("__accumulate_count", -1)) != 0.0:
        print(f"MISMATCH: __step {a['__step']} (expected 2 updates), __accumulate_count "
              f"{a.get('__accumulate_count')} (expected 0)")
        ok = False
    if len(accumulators) != len([n for n in b if n.endswith(".momentum_buffer")]) or \
            any(np.any(a[n] != 0) for n in accumulators):
        print("MISMATCH: expected one zeroed accumulator per parameter after the update")
        ok = False

    # Resume mid-accumulation: 6 calls, then 2 more from the checkpoint.
    train(w("acc.dlcp"), 6, "first")
    train(w("acc.dlcp"), 2 * N, "resumed", ["--resume", w("first.safetensors")])
    r, _ = read_safetensors(w("resumed.safetensors"))
    same = set(r) == set(a) and all(np.array_equal(r[n], a[n]) for n in a)
    print(f"resume after call 6 of 8: checkpoint {'bit-identical' if same else 'DIFFERS'}")
    ok = ok and same
    if not ok:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()

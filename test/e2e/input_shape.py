#!/usr/bin/python3
"""A model exported with a symbolic sequence length trains at another
length (issue 34 item 4): the e2e GPT (arch_models.make_gpt, causal mask
buffer of 8) exported with dynamic batch and sequence axes, compiled with
`dlc --batch-size 2 --input-shape input=?xT` for T = 6 and 8, trained 3
momentum-SGD steps by dlrt on one batch of length T; every loss within 1e-5
relative of PyTorch's on the same batch (both fp32, differing only in the
order of sums, ~1e-7).
"""
import argparse
import copy
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import make_gpt  # noqa: E402
from train_vs_torch import run, torch_losses  # noqa: E402

TOL = 1e-5
STEPS = 3
LR = 0.1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model, x, y = make_gpt(2, seq=8)
    state = copy.deepcopy(model.state_dict())
    model.train()
    torch.onnx.export(model, x, w("gpt.onnx"), input_names=["input"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING,
                      dynamic_axes={"input": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}})
    model.load_state_dict(state)
    ok = True
    for t in (6, 8):
        xt, yt = x[:, :t].contiguous(), y[:, :t].contiguous()
        np.savez(w(f"batch{t}.npz"), input=xt.numpy(), labels=yt.numpy())
        pkg, log = w(f"gpt{t}.dlcp"), w(f"gpt{t}.jsonl")
        run([args.dlc, w("gpt.onnx"), "--train", "--loss", "softmax-cross-entropy",
             "--optimizer", "sgd", "--momentum", "0.9", "--lr", repr(LR),
             "--batch-size", "2", "--input-shape", f"input=?x{t}", "--quiet",
             "-o", pkg])
        if os.path.exists(log):
            os.remove(log)
        run([args.dlrt, "train", pkg, "--data", w(f"batch{t}.npz"), "--steps",
             str(STEPS), "--no-shuffle", "--log-jsonl", log, "--device", "host",
             "--quiet"])
        with open(log) as f:
            ours = [json.loads(line)["loss"] for line in f if line.strip()]
        ref = torch_losses(copy.deepcopy(model), xt, yt, "sgd", LR, 0.9, STEPS)
        if len(ours) != STEPS:
            sys.exit(f"FAIL: dlrt logged {len(ours)} steps at T = {t}")
        for i, (a, b) in enumerate(zip(ours, ref), 1):
            rel = abs(a - b) / abs(b)
            ok &= rel <= TOL
            print(f"T = {t} step {i}: dlrt {a:.8f} torch {b:.8f} rel {rel:.2e} "
                  f"{'ok' if rel <= TOL else 'MISMATCH'}")
    if not ok:
        sys.exit(f"FAIL: losses differ from PyTorch beyond {TOL}")
    print("PASS")


if __name__ == "__main__":
    main()

"""Trains a model through CumSum (forward and reversed scans) and OneHot with
dlc --train + dlrt train and with PyTorch, from the same weights on one fixed
batch, and compares the losses step by step, for train-cumsum.test.

Usage: train_cumsum.py OUT_DIR [--break]
The model: token ids [B, S] (int64) -> F.one_hot(ids, V) (OneHot + Cast) ->
Linear (MatMul + Add) -> running sum over the sequence (CumSum) -> tanh ->
reversed running sum (flip, CumSum, flip: Slice with step -1) -> product of
the two scans -> mean over the sequence -> Linear (the logits), trained by
SGD with momentum 0.9, lr 0.1, 6 steps, exported at opset 13 and 17. Prints
one line per step; "ok" when within 1e-4 relative of PyTorch (fp32 on both
sides, differing in summation order only). --break changes the learning
rate given to dlc so that the check must fail (a self-test).
Then compiles the opset-17 training step's CUDA kernels with NVRTC for sm_80
and sm_90 (no GPU needed).
"""
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training, nvrtc_compiles  # noqa: E402

STEPS, LR, MOMENTUM, BATCH, SEQ, VOCAB, HIDDEN = 6, 0.1, 0.9, 4, 6, 7, 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(VOCAB, HIDDEN)
        self.fc = nn.Linear(HIDDEN, 5)

    def forward(self, ids):
        h = self.emb(F.one_hot(ids, VOCAB).float())          # [B, S, H]
        c = torch.cumsum(h, dim=1)                           # prefix sums
        r = torch.flip(torch.cumsum(torch.flip(torch.tanh(c), [1]), 1), [1])
        return self.fc((c * r).mean(dim=1))


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    y = torch.randint(0, 5, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), ids=ids.numpy(), labels=y.numpy())
    failed = False
    for opset in (13, 17):
        torch.manual_seed(1)
        model = Net()
        base = os.path.join(out, f"net_{opset}")
        export_training(model, (ids,), base + ".onnx", opset, ["ids"])
        failed |= compare_sgd(f"opset {opset}", base, model, (ids,), y,
                              os.path.join(out, "batch.npz"), lr=LR,
                              momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                              broken=broken)
    if not broken:
        # The scans, their reversed-scan gradients and the one-hot kernel
        # compile with NVRTC.
        failed |= nvrtc_compiles(os.path.join(out, "net_17"), BATCH)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

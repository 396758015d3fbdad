"""Trains a small self-attention model written with batched MatMul with
dlc --train + dlrt train and with PyTorch, from the same weights on one fixed
batch, and compares the losses step by step, for train-matmul.test.

Usage: train_matmul.py OUT_DIR [--break]
The model covers every MatMul form the lowering distinguishes: Linear on
[B, S, E] (a 2-D rhs: one GEMM), Q K^T and attention x V on [B, H, S, D]
(one batch dim), a per-head weight [H, D, D] broadcast over the batch (two
batch dims, stride 0), and a 1-D [S] lhs pooling the sequence. SGD with
momentum 0.9, lr 0.05, 6 steps, exported at opset 13 and 17; "ok" when
within 1e-4 relative of PyTorch (fp32 on both sides, differing in summation
order only). --break changes the learning rate given to dlc so that the
check must fail (a self-test).
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training  # noqa: E402

STEPS, LR, MOMENTUM, BATCH = 6, 0.05, 0.9, 4
SEQ, EMBED, HEADS, CLASSES = 5, 8, 2, 5


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(EMBED, 3 * EMBED)
        d = EMBED // HEADS
        self.head_w = nn.Parameter(torch.randn(HEADS, d, d) * 0.5)
        self.pool = nn.Parameter(torch.randn(SEQ) * 0.5)
        self.out = nn.Linear(EMBED, CLASSES)

    def forward(self, x):
        b, s, e = x.shape
        d = EMBED // HEADS
        q, k, v = self.qkv(x).split(e, dim=-1)
        q, k, v = (t.reshape(b, s, HEADS, d).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d), -1)
        h = torch.matmul(torch.matmul(att, v), self.head_w)
        h = torch.tanh(h.transpose(1, 2).reshape(b, s, e))
        return self.out(torch.matmul(self.pool, h))


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(BATCH, SEQ, EMBED)
    y = torch.randint(0, CLASSES, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), x=x.numpy(), labels=y.numpy())
    failed = False
    for opset in (13, 17):
        torch.manual_seed(1)
        model = Net()
        base = os.path.join(out, f"attn_{opset}")
        export_training(model, (x,), base + ".onnx", opset, ["x"])
        failed |= compare_sgd(f"opset {opset}", base, model, (x,), y,
                              os.path.join(out, "batch.npz"), lr=LR,
                              momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                              broken=broken)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

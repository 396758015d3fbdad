"""Trains an MLP built from the elementwise activations with dlc --train +
dlrt train and with PyTorch, from the same weights on one fixed batch, and
compares the losses step by step, for train-activations.test.

Usage: train_activations.py OUT_DIR [--break]
The model: Linear -> GELU -> Linear -> ELU -> Linear -> SELU -> Linear ->
LeakyReLU -> Linear -> Softplus -> Linear -> Hardswish -> PReLU -> Linear ->
GELU(tanh) * Hardsigmoid -> Linear (the logits), trained by SGD with
momentum 0.9, lr 0.05, 6 steps, exported at opset 13 and 17. Prints one line
per step; "ok" when within 1e-4 relative of PyTorch (fp32 on both sides,
differing in summation order only). --break changes the learning rate given
to dlc so that the check must fail (a self-test).
"""
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgd_check import compare_sgd, export_training  # noqa: E402

STEPS, LR, MOMENTUM, BATCH = 6, 0.05, 0.9, 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.ModuleList(nn.Linear(a, b) for a, b in
                                [(12, 16), (16, 16), (16, 16), (16, 16),
                                 (16, 16), (16, 16), (16, 16), (16, 5)])
        self.prelu = nn.PReLU(16, init=0.2)

    def forward(self, x):
        f = self.fc
        x = F.gelu(f[0](x))
        x = F.elu(f[1](x), 0.8)
        x = F.selu(f[2](x))
        x = F.leaky_relu(f[3](x), 0.1)
        x = F.softplus(f[4](x))
        x = self.prelu(F.hardswish(f[5](x) * 2))
        x = f[6](x)
        x = F.gelu(x, approximate="tanh") * F.hardsigmoid(x * 2)
        return f[7](x)


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(BATCH, 12)
    y = torch.randint(0, 5, (BATCH,))
    np.savez(os.path.join(out, "batch.npz"), x=x.numpy(), labels=y.numpy())
    failed = False
    for opset in (13, 17):
        torch.manual_seed(1)
        model = Net()
        base = os.path.join(out, f"net_{opset}")
        export_training(model, (x,), base + ".onnx", opset, ["x"])
        failed |= compare_sgd(f"opset {opset}", base, model, (x,), y,
                              os.path.join(out, "batch.npz"), lr=LR,
                              momentum=MOMENTUM, steps=STEPS, batch=BATCH,
                              broken=broken)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

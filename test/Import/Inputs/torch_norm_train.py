"""Trains a PyTorch model whose loss is computed in the model from
LayerNormalization (opset 17), InstanceNormalization, Expand, Tile, Mish and
Softsign, with
`dlc --train --loss-output loss` and `dlrt train`, and compares the logged
losses of 4 SGD steps with PyTorch's, for import-shape-norm.test.

Usage: torch_norm_train.py OUT_DIR [--break]
Prints "step <i>: ok|MISMATCH <ours> <torch>" per step (1e-4 relative: f32
against f32 with different summation orders) and "steps: <n>".
--break perturbs the reference so that the check must fail (a self-test).
"""
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_loss_train import check_loss_output  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 10)
        self.ln = nn.LayerNorm(10)
        self.inorm = nn.InstanceNorm1d(2, affine=True)
        self.head = nn.Linear(10, 5)
        self.b = nn.Parameter(torch.linspace(-0.5, 0.5, 10).view(1, 1, 10))

    def forward(self, x, t):
        h = self.ln(self.fc(x))                          # [8, 10]
        h = self.inorm(h.view(4, 2, 10)) + self.b.expand(4, 2, 10)
        h = F.mish(h) + F.softsign(h) + self.b.repeat(4, 2, 1) * h
        z = self.head(h.reshape(8, 10))
        return F.cross_entropy(z, t)


def main():
    check_loss_output(Net, sys.argv[1], 17)


if __name__ == "__main__":
    main()

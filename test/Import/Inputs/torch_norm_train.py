"""Trains a PyTorch model whose loss is computed in the model from
LayerNormalization (opset 17), InstanceNormalization, Expand, Tile, Mish and
Softsign, with
`dlc --train --loss-output loss` and `dlrt train`, and compares the logged
losses of 4 SGD steps with PyTorch's, for import-shape-norm.test.

Usage: torch_loss_train.py OUT_DIR [--break]
Prints "step <i>: ok|MISMATCH <ours> <torch>" per step (1e-4 relative: f32
against f32 with different summation orders) and "steps: <n>".
--break perturbs the reference so that the check must fail (a self-test).
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


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
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(8, 6)
    t = torch.tensor([0, 1, 2, 3, 4, 1, 0, 2])
    onnx_path = os.path.join(out, "loss.onnx")
    torch.onnx.export(net, (x, t), onnx_path, opset_version=17,
                      input_names=["x", "t"], output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    want = []
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(4):
        opt.zero_grad()
        loss = net(x, t)
        want.append(float(loss))
        loss.backward()
        opt.step()
    if "--break" in sys.argv:
        want[-1] *= 1.001
    pkg = os.path.join(out, "loss.dlcp")
    subprocess.run(["dlc", onnx_path, "--train", "--loss-output", "loss",
                    "--optimizer", "sgd", "--lr", "0.1", "--quiet", "-o", pkg],
                   check=True)
    data = os.path.join(out, "data.npz")
    np.savez(data, x=x.numpy(), t=t.numpy(), labels=t.numpy())
    log = os.path.join(out, "log.jsonl")
    subprocess.run(["dlrt", "train", pkg, "--data", data, "--steps", "4",
                    "--no-shuffle", "--device", "host", "--log-jsonl", log],
                   check=True, stdout=subprocess.DEVNULL)
    ours = [json.loads(line)["loss"] for line in open(log)]
    bad = len(ours) != len(want)
    for i, (a, e) in enumerate(zip(ours, want), 1):
        ok = abs(a - e) <= 1e-4 * abs(e)
        bad |= not ok
        print(f"step {i}: {'ok' if ok else 'MISMATCH'} {a:.7g} {e:.7g}")
    print(f"steps: {len(ours)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

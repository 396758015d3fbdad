"""Trains a PyTorch model whose loss is computed in the model
(SoftmaxCrossEntropyLoss with and without class weights and ignore_index,
NegativeLogLikelihoodLoss, ReduceLogSumExp, ReduceL2, ReduceMin) with
`dlc --train --loss-output loss` and `dlrt train`, and compares the logged
losses of 4 SGD steps with PyTorch's, for import-reductions.test.

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
        self.fc = nn.Linear(6, 5)
        self.register_buffer("w", torch.tensor([0.5, 1.0, 2.0, 0.25, 1.5]))

    def forward(self, x, t):
        z = self.fc(x)
        terms = [F.cross_entropy(z, t, weight=self.w, ignore_index=1),
                 0.1 * F.nll_loss(torch.tanh(z) - 1.0, t, reduction="sum"),
                 0.05 * torch.logsumexp(z, dim=1).mean(),
                 0.02 * torch.norm(z, p=2, dim=0).sum(),
                 -0.01 * z.amin(dim=1).sum(),
                 F.cross_entropy(z, t),
                 F.cross_entropy(z, t, weight=self.w),
                 F.cross_entropy(z, t, ignore_index=1),
                 F.nll_loss(F.log_softmax(z, 1) * 1.0, t, weight=self.w)]
        return sum(terms[1:], terms[0])


def check_loss_output(make_net, out, opset):
    """Exports make_net() (built after seeding 0) at |opset| with its loss as
    output "loss", trains 4 SGD steps (lr 0.1) with dlc --loss-output + dlrt
    and with PyTorch, prints one line per step, and exits 1 on a mismatch."""
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    net = make_net()
    x = torch.randn(8, 6)
    t = torch.tensor([0, 1, 2, 3, 4, 1, 0, 2])
    onnx_path = os.path.join(out, "loss.onnx")
    torch.onnx.export(net, (x, t), onnx_path, opset_version=opset,
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


def main():
    check_loss_output(Net, sys.argv[1], 13)


if __name__ == "__main__":
    main()

"""Exports PyTorch modules using reductions (sum, mean, amax, amin, L1/L2
norms, sum of squares, logsumexp, log of a sum) and losses (nll_loss and
cross_entropy with class weights, ignore_index and every reduction, on
[N, C] and [N, C, d1, d2] inputs), compiles them with dlc, runs them with
`dlrt run --device host` and compares with PyTorch, for
import-reductions.test.

Usage: torch_reductions.py OUT_DIR [--break]
Prints one line per model and opset: "ok <name> opset <n> max_err <e>" when
every output is within 1e-5 * (1 + |want|) of PyTorch's, else "MISMATCH ...".
Opsets 11 and 12 exercise the legacy forms (ReduceSum's axes attribute).
--break perturbs the reference so that the check must fail (a self-test).
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlc_compare import run_and_compare  # noqa: E402
import torch
from torch import nn
import torch.nn.functional as F


class Reductions(nn.Module):
    def forward(self, x):
        return (x.sum(dim=(1, 2)), x.mean(dim=-1, keepdim=True),
                x.amax(dim=1), x.amin(dim=(0, 3), keepdim=True),
                torch.norm(x, p=1, dim=2), torch.norm(x, p=2, dim=(1, 3)),
                (x * x).sum(dim=3), torch.logsumexp(x * 20, dim=2),
                torch.log(x.abs().sum(dim=1) + 1), x.sum(), x.mean())


class Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.tensor([0.5, 1.0, 2.0, 0.25, 1.5]))

    def forward(self, x, t, x4, t4):
        # Not a log_softmax: the exporter would fuse nll_loss into
        # SoftmaxCrossEntropyLoss.
        lp = torch.tanh(x) - 1.0
        outs = []
        for red in ("mean", "sum", "none"):
            outs += [F.nll_loss(lp, t, reduction=red),
                     F.nll_loss(lp, t, weight=self.w, ignore_index=1,
                                reduction=red),
                     F.cross_entropy(x, t, weight=self.w, reduction=red),
                     F.cross_entropy(x4, t4, ignore_index=2, reduction=red),
                     F.cross_entropy(x4, t4, weight=self.w, ignore_index=-100,
                                     reduction=red)]
        return tuple(outs)


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 6)
    lx = torch.randn(8, 5)
    lt = torch.tensor([0, 1, 2, 3, 4, 1, 0, 2])
    x4 = torch.randn(3, 5, 2, 4)
    t4 = torch.randint(0, 5, (3, 2, 4))
    cases = [("reductions", Reductions().eval(), (x,), ["x"], (11, 13, 17)),
             ("reductions_f64", Reductions().double().eval(), (x.double(),),
              ["x"], (13,)),
             ("losses", Losses().eval(), (lx, lt, x4, t4),
              ["x", "t", "x4", "t4"], (12, 13, 17))]
    failed = False
    for name, model, args, names, opsets in cases:
        with torch.no_grad():
            wants = [w.numpy().copy() for w in model(*args)]
        if broken:
            wants[-1].flat[0] += 1e-2
        outs = [f"out{k}" for k in range(len(wants))]
        for opset in opsets:
            base = os.path.join(out, f"{name}_{opset}")
            torch.onnx.export(model, args, base + ".onnx", opset_version=opset,
                              input_names=names, output_names=outs,
                              training=torch.onnx.TrainingMode.EVAL)
            subprocess.run(["dlc", base + ".onnx", "--quiet", "-o",
                            base + ".dlcp"], check=True)
            np.savez(base + ".in.npz",
                     **{n: a.numpy() for n, a in zip(names, args)})
            failed |= not run_and_compare(base, outs, wants, f"{name} opset {opset}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

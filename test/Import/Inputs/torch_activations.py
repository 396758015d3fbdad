"""Exports PyTorch modules using elementwise ops and activations, compiles them
with dlc, runs them with `dlrt run --device host` and compares with PyTorch,
for import-activations.test.

Usage: torch_activations.py OUT_DIR [--break]
Prints one line per model and opset: "ok <name> opset <n> max_err <e>" when
every output is within 1e-5 * (1 + |want|) of PyTorch's (f32 elementwise
math; the only differences are libm rounding), else "MISMATCH ...".
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


class Activations(nn.Module):
    """GELU (erf and tanh forms), ELU, SELU, LeakyReLU, Softplus,
    Hardsigmoid, Hardswish, PReLU (per-channel slope), sigmoid, tanh, abs,
    pow, reciprocal, clamp with tensor bounds, where, maximum/minimum."""

    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU(3)
        with torch.no_grad():
            self.prelu.weight.copy_(torch.tensor([0.1, -0.2, 0.3]))

    def forward(self, x, y):
        outs = [
            F.gelu(x), F.gelu(x, approximate="tanh"), F.elu(x, 0.7),
            F.selu(x), F.leaky_relu(x, 0.05), F.softplus(x),
            F.hardsigmoid(x * 3), F.hardswish(x * 3), self.prelu(x),
            torch.sigmoid(x) * torch.tanh(y), torch.abs(x) ** 1.5,
            torch.reciprocal(torch.abs(y) + 1), torch.exp(x) - torch.log(torch.abs(y) + 1),
            torch.sqrt(torch.abs(x)), torch.erf(y),
            torch.where(x > y, x, y * 2), torch.maximum(x, y) - torch.minimum(x, -y),
            torch.where((x >= 0) & ~(y < 0) | (x == y), x, -x),
        ]
        return tuple(outs)


class Casts(nn.Module):
    """Casts between f32, f64, int32, int64 and bool."""

    def forward(self, x):
        i = (x * 10).to(torch.int64)
        j = (x * 10).to(torch.int32)
        d = x.to(torch.float64)
        b = x > 0
        return (i.to(torch.float32) + j.to(torch.float32) + b.to(torch.float32)
                + torch.tanh(d).to(torch.float32)),


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 5)
    y = torch.randn(4, 3, 5, 5)
    cases = [("activations", Activations().eval(), (x, y)),
             ("activations_f64", Activations().double().eval(),
              (x.double(), y.double())),
             ("casts", Casts().eval(), (x,))]
    failed = False
    for name, model, args in cases:
        with torch.no_grad():
            wants = [w.numpy().copy() for w in model(*args)]
        if broken:
            wants[-1].flat[7] += 1e-2
        outs = [f"out{k}" for k in range(len(wants))]
        for opset in (13, 17):
            base = os.path.join(out, f"{name}_{opset}")
            names = ["x", "y"][: len(args)]
            torch.onnx.export(model, args, base + ".onnx", opset_version=opset,
                              input_names=names, output_names=outs)
            subprocess.run(["dlc", base + ".onnx", "--quiet", "-o",
                            base + ".dlcp"], check=True)
            np.savez(base + ".in.npz",
                     **{n: a.numpy() for n, a in zip(names, args)})
            failed |= not run_and_compare(base, outs, wants, f"{name} opset {opset}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

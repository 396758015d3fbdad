"""Exports T5's relative position buckets (the formula of T5's relative
attention bias, written here: Sub, Greater, Abs, Neg, Min, Less, Cast, Log,
Div, Mul, Add, Where on int64) with PyTorch, from run-time int64 query and
key positions, and checks dlc + `dlrt run --device host` against PyTorch's
own result.

Usage: t5_relative_buckets.py OUT_DIR [--break]
Prints "ok t5_relative_buckets <n> outputs" when every output equals
PyTorch's exactly (bucket indices: any difference is a bug), else
"MISMATCH ..."; --break perturbs one reference bucket (a self-test).
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402


def buckets(distance, bidirectional, count=32, max_distance=128):
    """T5's relative-position bucket of each key-minus-query |distance|
    (Raffel et al. 2020, section 2.1): the first half of a direction's
    buckets hold one distance each, the rest are spaced logarithmically up
    to |max_distance| and clamped to the last bucket; bidirectional buckets
    give positive distances their own half of |count|, causal ones keep only
    the past (distances <= 0). Written with the integer and float ops T5's
    export contains: Greater, Abs or Neg/Min, Less, Cast, Log, Div, Mul,
    Add, Where on int64."""
    offset = torch.zeros_like(distance)
    if bidirectional:
        count = count // 2
        offset = (distance > 0).long() * count
        steps = distance.abs()
    else:
        steps = -torch.minimum(distance, torch.zeros_like(distance))
    exact = count // 2
    scaled = (torch.log(steps.float() / exact) / math.log(max_distance / exact)
              * (count - exact)).long()
    far = torch.minimum(exact + scaled, torch.full_like(steps, count - 1))
    return offset + torch.where(steps < exact, steps, far)


class Buckets(torch.nn.Module):
    def forward(self, q, k):
        rel = k[None, :] - q[:, None]
        # Encoder (bidirectional) and decoder (causal) buckets.
        return buckets(rel, True), buckets(rel, False)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "t5_relative_buckets")
    q = torch.arange(96, dtype=torch.long)
    k = torch.arange(96, dtype=torch.long) * 3 - 100  # distances -195 .. 185
    names = ["enc", "dec"]
    torch.onnx.export(Buckets(), (q, k), base + ".onnx", opset_version=17,
                      input_names=["q", "k"], output_names=names)
    wants = [t.numpy().copy() for t in Buckets()(q, k)]
    np.savez(base + ".in.npz", q=q.numpy(), k=k.numpy())
    if "--break" in sys.argv:
        wants[1].flat[7] += 1
    run_and_compare(base, "t5_relative_buckets", names, wants)

if __name__ == "__main__":
    main()

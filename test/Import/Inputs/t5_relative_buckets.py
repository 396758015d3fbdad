"""Exports T5's relative position buckets (transformers' T5Attention.
_relative_position_bucket, copied below: Sub, Greater, Abs, Neg, Min, Less,
Cast, Log, Div, Mul, Add, Where on int64) with PyTorch, from run-time int64
query and key positions, and checks dlc + `dlrt run --device host` against
PyTorch's own result.

Usage: t5_relative_buckets.py OUT_DIR [--break]
Prints "ok t5_relative_buckets <n> outputs" when every output equals
PyTorch's exactly (bucket indices: any difference is a bug), else
"MISMATCH ..."; --break perturbs one reference bucket (a self-test).
"""
import math
import os
import subprocess
import sys

import numpy as np
import torch


def relative_position_bucket(relative_position, bidirectional=True,
                             num_buckets=32, max_distance=128):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position,
                                       torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large,
        torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position,
                                    relative_position_if_large)
    return relative_buckets


class Buckets(torch.nn.Module):
    def forward(self, q, k):
        rel = k[None, :] - q[:, None]
        # Encoder (bidirectional) and decoder (causal) buckets.
        return (relative_position_bucket(rel, True),
                relative_position_bucket(rel, False))


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
    subprocess.run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"],
                   check=True)
    subprocess.run(["dlrt", "run", base + ".dlcp", "--device", "host",
                    "--inputs", base + ".in.npz", "--outputs",
                    base + ".out.npz"], check=True, stdout=subprocess.DEVNULL)
    if "--break" in sys.argv:
        wants[1].flat[7] += 1
    got = np.load(base + ".out.npz")
    bad = 0
    for name, want in zip(names, wants):
        g = got[name]
        if (g.dtype != want.dtype or g.shape != want.shape or
                not np.array_equal(g, want)):
            bad += 1
            print(f"  {name}: got {g.dtype} {g.shape}, want {want.dtype} "
                  f"{want.shape}")
    if bad:
        print(f"MISMATCH t5_relative_buckets {bad} of {len(names)} outputs")
        sys.exit(1)
    print(f"ok t5_relative_buckets {len(names)} outputs")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Planned memory of a GPT-2-124M-shaped training step with and without the
fused attention (issue 36): no run, only `dlc --stats`.

Exports test/e2e/arch_models.py's TinyGPT at GPT-2 small's shape (12
pre-LayerNorm layers, 12 heads, d 768, sequence 1024, vocabulary 50257,
batch 8; 124 M parameters) in training mode, compiles its training step
(AdamW) twice with `dlc --train --stats` — once as is (`dlgraph-fuse-attention`
replaces each layer's attention by dlgraph.attention) and once with
`--fuse-attention=false` — and prints both planned peaks, the arena, the
fused-attention count and the difference. The fused plan must hold no
[B, H, T, T] buffer: the unfused step keeps 12 layers x 8 x 12 x 1024 x 1024
f32 probabilities (4.8 GB) for the backward. Also compares dlc's `model
FLOPs per step` with PaLM's hand count (6 N tokens + 12 L d T tokens). With
--check, exits 1 unless the fused peak is at least 4 GB (4e9 bytes) below
the unfused one, every attention was fused and the FLOPs agree within 5%.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from arch_models import make_gpt  # noqa: E402

PEAK = re.compile(r"predicted peak memory: (\d+) bytes")
ARENA = re.compile(r"activation arena: (\d+) bytes")
FUSED = re.compile(r"fused attentions: (\d+) of (\d+)")
FLOPS = re.compile(r"model FLOPs per step: (\d+)")


def stats(args, onnx_path, flags, tag):
    t = time.perf_counter()
    out = subprocess.run(
        [args.dlc, onnx_path, "--train", "--optimizer", "adamw", "--batch-size",
         str(args.batch), "--stats", "--quiet", "--emit=plan", "-o",
         os.path.join(args.workdir, tag + ".plan")] + flags,
        check=True, stdout=subprocess.PIPE, text=True).stdout
    peak, arena = PEAK.search(out), ARENA.search(out)
    if not peak or not arena:
        sys.exit(f"error: no peak in dlc --stats ({tag}):\n{out}")
    fused = FUSED.search(out)
    print(f"{tag}: compiled in {time.perf_counter() - t:.0f} s; predicted peak "
          f"{int(peak.group(1)) / 1e9:.3f} GB, arena {int(arena.group(1)) / 1e9:.3f} GB"
          + (f", fused attentions {fused.group(1)} of {fused.group(2)}" if fused else ""),
          flush=True)
    flops = FLOPS.search(out)
    return int(peak.group(1)), fused, int(flops.group(1)) if flops else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--embed", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(2)
    model, x, _ = make_gpt(args.batch, seq=args.seq, vocab=args.vocab, embed=args.embed,
                           heads=args.heads, layers=args.layers)
    params = sum(p.numel() for p in model.parameters())
    onnx_path = os.path.join(args.workdir, "gpt.onnx")
    t = time.perf_counter()
    torch.onnx.export(model, x, onnx_path, input_names=["input"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    print(f"GPT: {args.layers} layers, {args.heads} heads, d {args.embed}, sequence "
          f"{args.seq}, batch {args.batch}, vocabulary {args.vocab}: {params / 1e6:.1f} M "
          f"parameters; exported in {time.perf_counter() - t:.0f} s", flush=True)
    fused_peak, fused, flops = stats(args, onnx_path, [], "fused")
    plain_peak, _, plain_flops = stats(args, onnx_path, ["--fuse-attention=false"],
                                       "unfused")
    # dlc's model FLOPs against PaLM's hand count (Chowdhery et al. 2022,
    # appendix B): 6 N per token for the N weights of the matmuls (every
    # Linear, the untied head included), 12 L d T per token for attention.
    n = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    tokens = args.batch * args.seq
    hand = 6 * n * tokens + 12 * args.layers * args.embed * args.seq * tokens
    print(f"model FLOPs per step: dlc {flops:.4e} (unfused {plain_flops:.4e}), hand "
          f"count {hand:.4e} (6 x {n / 1e6:.1f} M x {tokens} tokens + attention): "
          f"ratio {flops / hand:.4f}")
    saved = plain_peak - fused_peak
    probs = args.layers * args.batch * args.heads * args.seq * args.seq * 4
    print(f"fused attention saves {saved / 1e9:.3f} GB of the planned peak "
          f"({saved / plain_peak:.1%}); the probabilities alone are {probs / 1e9:.3f} GB")
    if args.check:
        ok = (saved >= 4e9 and fused and fused.group(1) == fused.group(2) ==
              str(args.layers) and abs(flops / hand - 1) <= 0.05)
        print("attention memory:", "ok" if ok else "FAILED (want >= 4 GB saved, "
              f"{args.layers} of {args.layers} fused and model FLOPs within 5% of "
              "the hand count)")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

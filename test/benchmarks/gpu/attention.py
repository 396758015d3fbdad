#!/usr/bin/env python3
"""dlc's fused attention against PyTorch's scaled_dot_product_attention on one
GPU (issue 36), in TFLOP/s measured in one run on the same card.

Three commands, as kernels.py (dlc is built on the development machine; the
GPU machine has PyTorch and CUDA but no MLIR):

  attention.py prepare --dlc build/bin/dlc --out DIR [--small]
      (development machine) for each case below, writes a dlgraph module
      with one dlgraph.attention on [B, H, T, D] inputs (cast to bf16 for
      the bf16 cases; the recognition of exported forms is tested by
      test/e2e/attention_exports.py) and compiles it (`dlc --target sm_90`):
      DIR/<case>-fwd.dlcp (inference: O) and DIR/<case>-train.dlcp (training
      step with the model's own loss sum(O * O) and SGD at lr 0 on [D]
      biases added to Q, K and V, so a step is the forward, the fused
      backward in full and a no-op update of 3 x D numbers), with
      DIR/cases.json; no inputs travel (`run` makes them; `--small` writes
      them for `check`).
  attention.py run --dlrt .../dlrt --dir DIR [--json FILE]
      (GPU machine) forward: `dlrt run --device cuda --repeat R` (median of
      one forward, CUDA graph replay); forward+backward: `dlrt train` step
      time (median of windows). In the same process PyTorch's
      scaled_dot_product_attention on the same shapes and dtype, with its
      best backend (flash or cuDNN for bf16; the efficient or math kernel
      for f32), forward and forward+backward. Prints TFLOP/s of both
      (forward 4·B·H·T²·D FLOPs, halved when causal; backward 2.5x the
      forward, FlashAttention-2's accounting) and dlrt / PyTorch.
  attention.py check --dlrt .../dlrt --dir DIR [--device host|cuda]
      (development machine, ctest; DIR from `prepare --small`) each forward
      package runs and matches NumPy's float64 attention within 1e-4 of
      max |ref| (f32) or 1e-2 (bf16, issue 36: Q, K, V rounded to bf16), and
      each training package steps.

The cases: bf16 and f32; head dims 64 and 128; sequences 1k, 2k, 4k and 8k
(8k: bf16 only); causal and not; batch x heads = 16 x 16 / T * 1k tokens
(B·T = 16k), as FlashAttention-2's benchmark keeps the tokens fixed.
Issue 36's targets on an H100: bf16 forward+backward >= 0.9x PyTorch's best
backend, forward >= 350 TFLOP/s at head dim 128.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# One PyTorch timing for every GPU benchmark: wall time of a call and a
# device synchronize, as `dlrt run --repeat` times its forwards.
from kernels import time_torch  # noqa: E402

TOKENS = 16384


def cases(small):
    out = {}
    for dtype in ("bf16", "f32"):
        for d in (64, 128):
            for t in (1024, 2048, 4096, 8192):
                if dtype == "f32" and t > 4096:
                    continue
                for causal in (True, False):
                    heads = 2048 // d
                    b = max(1, TOKENS // t)
                    if small:
                        b, heads, t = 1, 2, 64 if t == 1024 else 33
                    name = f"{dtype}-d{d}-t{t}-{'causal' if causal else 'full'}"
                    out[name] = dict(dtype=dtype, batch=b, heads=heads, seq=t,
                                     dim=d, causal=causal)
                if small:
                    break
    return out


def flops(c, backward):
    f = 4.0 * c["batch"] * c["heads"] * c["seq"] ** 2 * c["dim"]
    if c["causal"]:
        f /= 2
    return f * (3.5 if backward else 1.0)


def module_text(c, train):
    """The case as a dlgraph module (dlc reads .mlir): Q, K, V inputs
    [B, H, T, D] f32 (cast to bf16 for the bf16 cases), one
    dlgraph.attention; for training, a [D] bias parameter added to each of
    Q, K and V (so the step computes dQ, dK and dV in full and updates 3 x D
    numbers) and the loss sum(O * O)."""
    b, h, t, d = c["batch"], c["heads"], c["seq"], c["dim"]
    f32 = f"tensor<{b}x{h}x{t}x{d}xf32>"
    low = f"tensor<{b}x{h}x{t}x{d}x{'bf16' if c['dtype'] == 'bf16' else 'f32'}>"
    lines = ["module {"]
    if train:
        lines += [f"  dlgraph.variable @bias_{n} : tensor<{d}xf32>" for n in "qkv"]
    out = "tensor<f32> {dlgraph.name = \"loss\"}" if train else f"{f32} {{dlgraph.name = \"o\"}}"
    lines.append(f"  func.func @main(%q: {f32} {{dlgraph.name = \"q\"}}, %k: {f32} "
                 f"{{dlgraph.name = \"k\"}}, %v: {f32} {{dlgraph.name = \"v\"}}) -> ({out}) {{")
    for n in "qkv":
        src = f"%{n}"
        if train:
            lines.append(f"    %w{n} = dlgraph.read_variable @bias_{n} : tensor<{d}xf32>")
            lines.append(f"    %a{n} = dlgraph.add %{n}, %w{n} : ({f32}, tensor<{d}xf32>) -> {f32}")
            src = f"%a{n}"
        if low != f32:
            lines.append(f"    %c{n} = dlgraph.cast {src} : {f32} to {low}")
            src = f"%c{n}"
        lines.append(f"    %x{n} = dlgraph.reshape {src} : {low} to {low}")
    causal = "true" if c["causal"] else "false"
    lines.append(f"    %o, %lse = dlgraph.attention %xq, %xk, %xv {{scale = "
                 f"{1.0 / math.sqrt(d):.17g} : f64, causal = {causal}}} : ({low}, {low}, "
                 f"{low}) -> ({low}, tensor<{b}x{h}x{t}xf32>)")
    res = "%o"
    if low != f32:
        lines.append(f"    %of = dlgraph.cast %o : {low} to {f32}")
        res = "%of"
    if train:
        lines.append(f"    %sq = dlgraph.mul {res}, {res} : ({f32}, {f32}) -> {f32}")
        lines.append(f"    %l = dlgraph.reduce_sum %sq {{axes = array<i64: 0, 1, 2, 3>}} : "
                     f"{f32} -> tensor<f32>")
        lines.append("    return %l : tensor<f32>")
    else:
        lines.append(f"    return {res} : {f32}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    meta = cases(args.small)
    for name, c in meta.items():
        for kind in ("fwd", "train"):
            src = os.path.join(args.out, f"{name}-{kind}.mlir")
            with open(src, "w") as f:
                f.write(module_text(c, kind == "train"))
            cmd = [args.dlc, src, "--target", "sm_90", "--quiet", "-o",
                   os.path.join(args.out, f"{name}-{kind}.dlcp")]
            if kind == "train":
                cmd += ["--train", "--loss-output", "loss", "--optimizer", "sgd",
                        "--lr", "0"]
            subprocess.run(cmd, check=True)
            os.remove(src)
        if args.small:  # full-size inputs are made on the GPU machine
            import numpy as np
            gen = np.random.default_rng(0)
            shape = (c["batch"], c["heads"], c["seq"], c["dim"])
            np.savez(os.path.join(args.out, f"{name}.npz"),
                     **{n: gen.standard_normal(shape, dtype=np.float32) for n in "qkv"})
        print(f"prepared {name}", flush=True)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)


def dlrt_forward_ms(args, d, name, device="cuda", repeat=None):
    r = subprocess.run([args.dlrt, "run", os.path.join(d, f"{name}-fwd.dlcp"),
                        "--inputs", os.path.join(d, f"{name}.npz"), "--outputs",
                        os.path.join(d, f"{name}-timed.npz"), "--device", device,
                        "--repeat", str(repeat or args.repeat)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"forward: \d+ runs, median ([\d.]+) ms", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(r.stdout)
    return float(m.group(1))


def dlrt_train_ms(args, d, name, c, device="cuda", steps=None, window=None):
    steps, window = steps or args.steps, window or args.window
    r = subprocess.run([args.dlrt, "train", os.path.join(d, f"{name}-train.dlcp"),
                        "--data", os.path.join(d, f"{name}.npz"), "--steps", str(steps),
                        "--batch-size", str(c["batch"]), "--no-shuffle", "--device",
                        device, "--log-every", str(window)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rates = [float(m) for m in re.findall(r"loss \S+\s+([0-9.]+) samples/s", r.stdout)]
    if r.returncode != 0 or not rates:
        raise RuntimeError(r.stdout)
    tail = rates[1:] or rates
    return statistics.median(1e3 * c["batch"] / v for v in tail)


def run(args):
    import torch
    F = torch.nn.functional
    meta = json.load(open(os.path.join(args.dir, "cases.json")))
    rows = []
    import numpy as np
    for name, c in meta.items():
        dtype = torch.bfloat16 if c["dtype"] == "bf16" else torch.float32
        shape = (c["batch"], c["heads"], c["seq"], c["dim"])
        npz = os.path.join(args.dir, f"{name}.npz")
        if not os.path.exists(npz):
            gen = np.random.default_rng(0)
            np.savez(npz, **{n: gen.standard_normal(shape, dtype=np.float32)
                             for n in "qkv"})
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
                   for _ in range(3))

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])

        def fwd_bwd():
            fwd().sum().backward()

        with torch.no_grad():
            t_fwd = time_torch(fwd, args.repeat, torch)
        t_fb = time_torch(fwd_bwd, args.repeat, torch)
        row = {"case": name, "torch_fwd_ms": t_fwd, "torch_fwd_bwd_ms": t_fb}
        try:
            row["dlrt_fwd_ms"] = dlrt_forward_ms(args, args.dir, name)
            row["dlrt_fwd_bwd_ms"] = dlrt_train_ms(args, args.dir, name, c)
        except RuntimeError as e:
            print(f"{name}: dlrt failed: {e}")
        for key, bwd in (("fwd", False), ("fwd_bwd", True)):
            f = flops(c, bwd)
            for who in ("dlrt", "torch"):
                ms = row.get(f"{who}_{key}_ms")
                row[f"{who}_{key}_tflops"] = f / ms / 1e9 if ms else None
        rows.append(row)
        fmt = lambda x: f"{x:7.1f}" if x else "   fail"  # noqa: E731
        print(f"{name:28s} fwd dlrt {fmt(row['dlrt_fwd_tflops'])} torch "
              f"{fmt(row['torch_fwd_tflops'])} TFLOP/s | fwd+bwd dlrt "
              f"{fmt(row['dlrt_fwd_bwd_tflops'])} torch {fmt(row['torch_fwd_bwd_tflops'])}",
              flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


def check(args):
    import numpy as np
    meta = json.load(open(os.path.join(args.dir, "cases.json")))
    ok = True
    for name, c in meta.items():
        x = np.load(os.path.join(args.dir, f"{name}.npz"))
        q, k, v = (x[n].astype(np.float64) for n in "qkv")
        s = q @ k.swapaxes(-1, -2) / math.sqrt(c["dim"])
        if c["causal"]:
            s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ v
        out = os.path.join(args.dir, f"{name}-out.npz")
        r = subprocess.run([args.dlrt, "run", os.path.join(args.dir, f"{name}-fwd.dlcp"),
                            "--inputs", os.path.join(args.dir, f"{name}.npz"),
                            "--outputs", out, "--device", args.device],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: dlrt run: {r.stdout}")
            ok = False
            continue
        err = float(np.max(np.abs(np.load(out)["o"].astype(np.float64) - ref))
                    / np.max(np.abs(ref)))
        tol = 1e-2 if c["dtype"] == "bf16" else 1e-4
        ms = dlrt_forward_ms(args, args.dir, name, args.device, repeat=2)
        step = dlrt_train_ms(args, args.dir, name, c, args.device, steps=2, window=1)
        good = err <= tol
        ok &= good
        print(f"{'ok' if good else 'FAIL'} {name}: max|o - ref| / max|ref| = {err:.2e} "
              f"(tolerance {tol:g}); forward {ms:.2f} ms, step {step:.2f} ms on {args.device}")
    print("attention check:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dlc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--small", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("--dlrt", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--repeat", type=int, default=20)
    r.add_argument("--steps", type=int, default=60)
    r.add_argument("--window", type=int, default=20)
    r.add_argument("--json")
    c = sub.add_parser("check")
    c.add_argument("--dlrt", required=True)
    c.add_argument("--dir", required=True)
    c.add_argument("--device", default="host")
    args = ap.parse_args()
    {"prepare": prepare, "run": run, "check": check}[args.cmd](args)


if __name__ == "__main__":
    main()

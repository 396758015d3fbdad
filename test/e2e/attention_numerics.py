#!/usr/bin/python3
"""The fused attention (dlgraph.attention, issue 36) against PyTorch.

For each configuration below, a small PyTorch module computes attention the
way exporters write it (matmul, scale, masks, softmax, matmul, with the
head split and merge as transposes and grouped-query K/V repeated by
unsqueeze / expand / reshape), exported to ONNX by the system PyTorch.
`dlc` must fuse it (`--stats`: "fused attentions: 1 of 1"), then:

  nvrtc     the training package compiled with --target sm_80,sm_90;
  forward   `dlrt run` of the inference package: max |O - O64| / max |O64|
            <= 1e-5, O64 PyTorch's float64 result on the same inputs;
  backward  the training package (`--loss-output loss`, the model's own
            loss sum(O * R) for a fixed random R, so dL/dO = R;
            `--expose-gradients`, one `dlrt train` step): for each of the
            Q, K and V parameters (zero-initialized and added to the
            inputs, so their gradients are dQ, dK, dV),
            e = max |g - g64| / max |g64| must be <= 2 x PyTorch fp32's own
            e + 1e-6. The floor: both errors are fp32 rounding noise of a
            few 1e-7 here, and twice a noise that happens to be tiny is not
            a bound worth failing on (gradient_accuracy.py uses the same).

The 16-bit configurations (CONFIGS16) put bf16 or f16 Q, K and V into
the op the way mixed precision does: `dlc --precision bf16|fp16` runs the
Q, K and V projections (identity weights, so Q, K and V are exactly the
inputs, which are given already rounded to the 16-bit type) on 16-bit
operands, and the attention reads their 16-bit results. The CUDA source of
the forward must use the tensor-core body (mma.sync.m16n8k16); the
forward is checked within FORWARD_TOL16 of float64 on the same rounded
inputs, the gradients of the projection weights within GRADIENT_TOL16
(below: the measured errors and why). With --standin, two dlgraph modules
of f16 attention (dropout, Sq != Skv, head sizes 72 and 256, rows of -inf
and of a finite fill) also compare the CUDA device's tensor-core kernels
with the host's portable ones.

on the host device and, with --standin, on the CUDA device backed by the
test-only stand-in (every generated CUDA kernel compiled for the host and
launched with the runtime's grid and block, threads in the emulation's
orders). Prints one line per check, "ok" or "MISMATCH"; exits 1 on any
mismatch. --break scales the inputs dlc gets, so every check must fail (a
self-test).
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from safetensors_np import read_safetensors  # noqa: E402

# name: (batch, q heads, kv heads, q length, kv length, head dim, value dim,
#        causal, mask kind, hosts only)
CONFIGS = {
    "causal_d64_s128": (2, 4, 4, 128, 128, 64, 64, True, None, False),
    "plain_d32_s17": (2, 2, 2, 17, 17, 32, 32, False, None, False),
    "additive_d80_s17": (1, 2, 2, 17, 17, 80, 80, False, "additive", False),
    "padding_d64_s128": (2, 2, 2, 128, 128, 64, 64, False, "padding", False),
    "gqa_d128_s128": (1, 8, 2, 128, 128, 128, 128, True, None, False),
    "mqa_d64_s17": (2, 4, 1, 17, 17, 64, 32, False, "padding", False),
    "kvcache_d64_s1": (2, 2, 2, 1, 17, 64, 64, True, None, False),
    # HF's padding masks: finfo.min added, whole query rows masked (leading
    # padding under a causal mask); the decomposition averages V there.
    "min_rows_d32_s17": (2, 2, 2, 17, 17, 32, 32, False, "min_rows", False),
    "causal_d64_s1000": (1, 2, 2, 1000, 1000, 64, 64, True, None, True),
    # The longest length the issue names, one head (host only: the stand-in
    # runs every CUDA thread as a fiber).
    "causal_d64_s4096": (1, 1, 1, 4096, 4096, 64, 64, True, None, True),
}
FORWARD_TOL = 1e-5
GRADIENT_FLOOR = 1e-6

# name: (configuration as above, dlc --precision). Ragged lengths (17, 33,
# 100: partial query and key tiles), causal, padding and additive masks,
# grouped- and multi-query heads, head dims 64 and 128.
CONFIGS16 = {
    "bf16_causal_d64_s100": ((1, 2, 2, 100, 100, 64, 64, True, None, False),
                             "bf16"),
    "bf16_padding_gqa_d128_s17": ((2, 4, 2, 17, 17, 128, 128, False,
                                   "padding", False), "bf16"),
    "f16_causal_gqa_d64_s33": ((1, 4, 2, 33, 33, 64, 64, True, None, False),
                               "fp16"),
    "f16_additive_mqa_d128_s17": ((1, 2, 1, 17, 17, 128, 128, False,
                                   "additive", False), "fp16"),
}
# The output is stored in the 16-bit type (relative rounding 2^-9 bf16,
# 2^-12 f16) and P is rounded to it before P V: max |O - O64| / max |O64|
# measured up to 2.3e-3 (bf16) and 3e-4 (f16) on the host and the stand-in.
FORWARD_TOL16 = 1e-2
# The backward reads O, dO = R and Q, K, V in the 16-bit type and rounds
# dQ, dK, dV to it before the projections' weight gradients (16-bit GEMM
# operands, f32 sums); the tensor-core bodies (the stand-in) also round P
# and dS to it before their products: a few roundings of 2^-9 (bf16) or
# 2^-12 (f16), measured up to 4.7e-3 (bf16) and 7.2e-4 (f16) relative to
# max |g64|; the bounds leave a factor of about 3.
GRADIENT_TOL16 = {"bf16": 1.5e-2, "fp16": 2e-3}


class Attention(torch.nn.Module):
    """Q, K, V parameters (zero) added to the inputs; Q and K stored
    [B, S, H, D] and transposed to heads, V stored [B, H, S, Dv]."""

    def __init__(self, cfg, loss_weights=None):
        super().__init__()
        b, hq, hkv, sq, skv, d, dv, causal, mask, _ = cfg
        self.cfg = cfg
        self.wq = torch.nn.Parameter(torch.zeros(b, sq, hq, d))
        self.wk = torch.nn.Parameter(torch.zeros(b, skv, hkv, d))
        self.wv = torch.nn.Parameter(torch.zeros(b, hkv, skv, dv))
        keep = torch.ones(sq, skv).tril(skv - sq).bool()
        self.register_buffer("causal_keep", keep, persistent=False)
        self.loss_weights = loss_weights

    def forward(self, xq, xk, xv, mask=None):
        q = (xq + self.wq).transpose(1, 2)
        k = (xk + self.wk).transpose(1, 2)
        return attend(self, q, k, xv + self.wv, mask)


def attend(m, q, k, v, mask):
    """Attention as exporters write it, of [B, H, S, D] q, k, v, for
    module |m| (its cfg, causal_keep and loss_weights)."""
    b, hq, hkv, sq, skv, d, dv, causal, kind, _ = m.cfg
    g = hq // hkv
    if g > 1 and hkv > 1:  # grouped-query heads repeated, as Llama does
        k = k[:, :, None].expand(b, hkv, g, skv, d).reshape(b, hq, skv, d)
        v = v[:, :, None].expand(b, hkv, g, skv, dv).reshape(b, hq, skv, dv)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if causal:
        s = s.masked_fill(~m.causal_keep, float("-inf"))
    if kind in ("additive", "min_rows"):
        s = s + mask
    elif kind == "padding":
        s = s.masked_fill(~mask, float("-inf"))
    o = torch.matmul(torch.softmax(s, dim=-1), v)
    o = o.transpose(1, 2).reshape(b, sq, hq * dv)
    if m.loss_weights is None:
        return o
    return (o * m.loss_weights).sum()


class Projected(torch.nn.Module):
    """Q, K, V projected by identity weights from [B, S, H * D] inputs (the
    projections are what --precision runs on 16-bit operands) and split
    into heads."""

    def __init__(self, cfg, loss_weights=None):
        super().__init__()
        b, hq, hkv, sq, skv, d, dv, causal, mask, _ = cfg
        self.cfg = cfg
        self.wq = torch.nn.Parameter(torch.eye(hq * d))
        self.wk = torch.nn.Parameter(torch.eye(hkv * d))
        self.wv = torch.nn.Parameter(torch.eye(hkv * dv))
        keep = torch.ones(sq, skv).tril(skv - sq).bool()
        self.register_buffer("causal_keep", keep, persistent=False)
        self.loss_weights = loss_weights

    def forward(self, xq, xk, xv, mask=None):
        b, hq, hkv, sq, skv, d, dv = self.cfg[:7]
        q = torch.matmul(xq, self.wq).reshape(b, sq, hq, d).transpose(1, 2)
        k = torch.matmul(xk, self.wk).reshape(b, skv, hkv, d).transpose(1, 2)
        v = torch.matmul(xv, self.wv).reshape(b, skv, hkv, dv).transpose(1, 2)
        return attend(self, q, k, v, mask)


def inputs(cfg, gen, precision=None):
    b, hq, hkv, sq, skv, d, dv, causal, kind, _ = cfg
    x = {"xq": torch.randn(b, sq, hq, d, generator=gen),
         "xk": torch.randn(b, skv, hkv, d, generator=gen),
         "xv": torch.randn(b, hkv, skv, dv, generator=gen)}
    if precision:
        # [B, S, H * D], rounded to the 16-bit type: the projections then
        # give Q, K and V exactly.
        t = torch.bfloat16 if precision == "bf16" else torch.float16
        x = {"xq": x["xq"].reshape(b, sq, hq * d),
             "xk": x["xk"].reshape(b, skv, hkv * d),
             "xv": x["xv"].transpose(1, 2).reshape(b, skv, hkv * dv)}
        x = {n: v.to(t).float() for n, v in x.items()}
    if kind == "additive":
        x["mask"] = torch.randn(b, 1, sq, skv, generator=gen)
    elif kind == "min_rows":
        mask = torch.zeros(b, 1, sq, skv)
        mask[-1, :, :3, :] = torch.finfo(torch.float32).min  # 3 rows masked
        mask[-1, :, 3:, :2] = torch.finfo(torch.float32).min
        x["mask"] = mask
    elif kind == "padding":
        keep = torch.ones(b, 1, 1, skv, dtype=torch.bool)
        keep[-1, ..., skv - max(1, skv // 3):] = False  # the last sample padded
        x["mask"] = keep
    return x


def run(cmd, env=None):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("FAILED: " + " ".join(cmd) + "\n" + r.stdout)
    return r.stdout


def rel_error(a, ref):
    return float(np.max(np.abs(a - ref)) / max(np.max(np.abs(ref)), 1e-30))


def check(name, ok, text):
    print(f"{'ok' if ok else 'MISMATCH'} {name}: {text}")
    return ok


def check_config(args, name, cfg, devices, precision=None):
    w = lambda f: os.path.join(args.workdir, name + "-" + f)  # noqa: E731
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    x = inputs(cfg, gen, precision)
    model = Projected if precision else Attention
    flags = ["--precision", precision, "--loss-scale", "none"] \
        if precision else []
    names = list(x)
    b, hq, hkv, sq, skv, d, dv = cfg[:7]
    r = torch.randn(b, sq, hq * dv, generator=gen)
    ok = True

    # Exports (the system PyTorch's TorchScript exporter, opset 17).
    infer, train = model(cfg), model(cfg, r)
    args_t = tuple(x[n] for n in names)
    torch.onnx.export(infer, args_t, w("infer.onnx"), opset_version=17,
                      input_names=names, output_names=["out"])
    torch.onnx.export(train, args_t, w("train.onnx"), opset_version=17,
                      input_names=names, output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    feed = {n: (t.numpy() * (1.5 if args.broken else 1.0)
                if t.dtype != torch.bool else t.numpy()) for n, t in x.items()}
    np.savez(w("inputs.npz"), **feed)

    stats = run([args.dlc, w("infer.onnx"), "--stats", "--quiet", "-o",
                 w("infer.dlcp")] + flags[:2])
    ok &= check(name + " fused", "fused attentions: 1 of 1" in stats,
                next((l for l in stats.splitlines() if "attention" in l),
                     "no 'fused attentions' line"))
    # Every kernel of the training step NVRTC-compiled for sm_80 and sm_90
    # (dlc fails otherwise).
    run([args.dlc, w("train.onnx"), "--train", "--loss-output", "loss",
         "--optimizer", "sgd", "--lr", "1", "--expose-gradients", "--quiet",
         "--target", "sm_80,sm_90", "-o", w("train.dlcp")] + flags)
    if precision:
        # The three attention kernels of the training step are the
        # tensor-core bodies.
        cuda = run([args.dlc, w("train.onnx"), "--train", "--loss-output",
                    "loss", "--optimizer", "sgd", "--lr", "1",
                    "--expose-gradients", "--quiet", "--emit=cuda"] + flags)
        kernels = {k.split(":")[0].split("_k", 1)[-1]: k
                   for k in cuda.split("// kernel ")
                   if "_attention" in k.split(":")[0]}
        mma = sorted(n for n, k in kernels.items()
                     if "mma.sync.aligned.m16n8k16.row.col.f32" in k and
                     "dlc_mma_" in k.split("__global__")[-1])
        ok &= check(name + " tensor cores", len(mma) == 3 and
                    len(kernels) == 3, "kernels calling mma.sync.m16n8k16: "
                    + ", ".join(mma))

    # References: float64, and PyTorch fp32's own error.
    def grads(dtype):
        m = model(cfg, r.to(dtype)).to(dtype)
        xs = [t.to(dtype) if t.dtype != torch.bool else t for t in args_t]
        m(*xs).backward()
        return {p: getattr(m, p).grad.numpy() for p in ("wq", "wk", "wv")}
    with torch.no_grad():
        m64 = model(cfg).double()
        o64 = m64(*[t.double() if t.dtype != torch.bool else t
                    for t in args_t]).numpy()
    g64, g32 = grads(torch.float64), grads(torch.float32)

    for device in devices:
        env = dict(os.environ)
        if device == "cuda":
            env["DLRT_CUDA_STANDIN"] = args.standin
        out = w(f"out-{device}.npz")
        run([args.dlrt, "run", w("infer.dlcp"), "--inputs", w("inputs.npz"),
             "--outputs", out, "--device", device], env)
        o = np.load(out)["out"].astype(np.float64)
        e = rel_error(o, o64)
        tol = FORWARD_TOL16 if precision else FORWARD_TOL
        ok &= check(f"{name} {device} forward", e <= tol,
                    f"max|O - O64| / max|O64| = {e:.2e} (tolerance "
                    f"{tol:g})")
        gdir = w(f"grad-{device}")
        run([args.dlrt, "train", w("train.dlcp"), "--data", w("inputs.npz"),
             "--steps", "1", "--batch-size", str(b), "--no-shuffle",
             "--device", device, "--save-gradients", gdir], env)
        got, _ = read_safetensors(os.path.join(gdir, "step-1.safetensors"))
        for p in ("wq", "wk", "wv"):
            key = next(k for k in got if k == p or k.startswith(p + "."))
            ours = rel_error(got[key].astype(np.float64), g64[p])
            theirs = rel_error(g32[p].astype(np.float64), g64[p])
            bound = GRADIENT_TOL16[precision] if precision \
                else 2 * theirs + GRADIENT_FLOOR
            ok &= check(f"{name} {device} d{p[1:]}", ours <= bound,
                        f"error {ours:.2e}, PyTorch fp32 {theirs:.2e}, bound "
                        f"{bound:.2e}")
    return ok


# What the ONNX configurations do not reach, as dlgraph modules of f16
# attention and its gradient: dropout, causal with Sq != Skv, grouped-query
# heads, head size 72 (not a multiple of 16), an additive mask with rows of
# -inf and rows of a finite fill (-3.4e38: the gradient's recomputed row
# statistics). The CUDA device (tensor-core bodies, on the stand-in) is
# compared with the host device (the portable bodies, float sums of the
# same f16 operands): they differ by the f16 rounding of P and dS before
# their products and the sums' order, measured 7.5e-4 (O), 1.6e-7 (lse, rows above -1e30),
# 1.1e-3 (dQ), 5.8e-4 (dK), 7.3e-4 (dV) relative to max |host|.
KERNEL_MODULE = """module {
  func.func @main(%q: tensor<2x4x40x72xf16> {dlgraph.name = "q"}, %k: tensor<2x2x70x72xf16> {dlgraph.name = "k"}, %v: tensor<2x2x70x40xf16> {dlgraph.name = "v"}, %m: tensor<2x1x40x70xf32> {dlgraph.name = "m"}, %s: tensor<f32> {dlgraph.name = "s"}, %do: tensor<2x4x40x40xf16> {dlgraph.name = "do"}) -> (tensor<2x4x40x40xf16> {dlgraph.name = "o"}, tensor<2x4x40xf32> {dlgraph.name = "lse"}, tensor<2x4x40x72xf16> {dlgraph.name = "dq"}, tensor<2x2x70x72xf16> {dlgraph.name = "dk"}, tensor<2x2x70x40xf16> {dlgraph.name = "dv"}) {
    %o, %lse = dlgraph.attention %q, %k, %v mask %m step %s {scale = 0.125 : f64, causal = true, dropout_ratio = 0.25 : f32, seed = 7 : i64} : (tensor<2x4x40x72xf16>, tensor<2x2x70x72xf16>, tensor<2x2x70x40xf16>, tensor<2x1x40x70xf32>, tensor<f32>) -> (tensor<2x4x40x40xf16>, tensor<2x4x40xf32>)
    %dq, %dk, %dv = dlgraph.attention_grad %q, %k, %v, %o, %lse, %do mask %m step %s {scale = 0.125 : f64, causal = true, dropout_ratio = 0.25 : f32, seed = 7 : i64} : (tensor<2x4x40x72xf16>, tensor<2x2x70x72xf16>, tensor<2x2x70x40xf16>, tensor<2x4x40x40xf16>, tensor<2x4x40xf32>, tensor<2x4x40x40xf16>, tensor<2x1x40x70xf32>, tensor<f32>) -> (tensor<2x4x40x72xf16>, tensor<2x2x70x72xf16>, tensor<2x2x70x40xf16>)
    return %o, %lse, %dq, %dk, %dv : tensor<2x4x40x40xf16>, tensor<2x4x40xf32>, tensor<2x4x40x72xf16>, tensor<2x2x70x72xf16>, tensor<2x2x70x40xf16>
  }
}
"""
KERNEL_TOL = {"o": 3e-3, "lse": 1e-5, "dq": 4e-3, "dk": 3e-3, "dv": 3e-3}
# The forward's largest head size, 256 (key tiles of 32), with Dv = 200 and
# a boolean padding mask, Sq != Skv without causality: measured 2.9e-4 (O)
# and 1.1e-7 (lse).
WIDE_MODULE = """module {
  func.func @main(%q: tensor<1x2x20x256xf16> {dlgraph.name = "q"}, %k: tensor<1x2x37x256xf16> {dlgraph.name = "k"}, %v: tensor<1x2x37x200xf16> {dlgraph.name = "v"}, %m: tensor<1x1x1x37xi1> {dlgraph.name = "m"}) -> (tensor<1x2x20x200xf16> {dlgraph.name = "o"}, tensor<1x2x20xf32> {dlgraph.name = "lse"}) {
    %o, %lse = dlgraph.attention %q, %k, %v mask %m {scale = 0.0625 : f64} : (tensor<1x2x20x256xf16>, tensor<1x2x37x256xf16>, tensor<1x2x37x200xf16>, tensor<1x1x1x37xi1>) -> (tensor<1x2x20x200xf16>, tensor<1x2x20xf32>)
    return %o, %lse : tensor<1x2x20x200xf16>, tensor<1x2x20xf32>
  }
}
"""
WIDE_TOL = {"o": 2e-3, "lse": 1e-5}


def kernel_modules():
    """name: (dlgraph module, inputs, tolerances, attention kernels)."""
    r = np.random.default_rng(1)
    mask = r.standard_normal((2, 1, 40, 70)).astype(np.float32)
    mask[1, 0, :5, :] = -np.inf
    mask[0, 0, :, 3] = -1e4
    mask[0, 0, 7:9, :] = -3.4e38
    feed = {"q": r.standard_normal((2, 4, 40, 72)),
            "k": r.standard_normal((2, 2, 70, 72)),
            "v": r.standard_normal((2, 2, 70, 40)),
            "do": r.standard_normal((2, 4, 40, 40))}
    feed = {n: x.astype(np.float16) for n, x in feed.items()}
    feed.update(m=mask, s=np.array(3, np.float32))
    keep = np.ones((1, 1, 1, 37), bool)
    keep[..., 30:] = False
    wide = {"q": r.standard_normal((1, 2, 20, 256)).astype(np.float16),
            "k": r.standard_normal((1, 2, 37, 256)).astype(np.float16),
            "v": r.standard_normal((1, 2, 37, 200)).astype(np.float16),
            "m": keep}
    return {"f16_dropout_gqa_d72_s40x70": (KERNEL_MODULE, feed, KERNEL_TOL, 3),
            "f16_padding_d256_s20x37": (WIDE_MODULE, wide, WIDE_TOL, 1)}


def check_kernel_module(args, name, module, feed, tols, kernels):
    w = lambda f: os.path.join(args.workdir, name + "-" + f)  # noqa: E731
    with open(w("model.mlir"), "w") as f:
        f.write(module)
    np.savez(w("inputs.npz"), **feed)
    run([args.dlc, w("model.mlir"), "--quiet", "--target", "sm_80,sm_90",
         "-o", w("model.dlcp")])
    ok = True
    cuda = run([args.dlc, w("model.mlir"), "--quiet", "--emit=cuda"])
    calls = sum("dlc_mma_f16(" in k.split("__global__")[-1]
                for k in cuda.split("// kernel "))
    ok &= check(name + " tensor cores", calls == kernels,
                f"{calls} of {kernels} attention kernels call "
                "mma.sync.m16n8k16")
    out = {}
    for device in ("host", "cuda"):
        env = dict(os.environ)
        if device == "cuda":
            env["DLRT_CUDA_STANDIN"] = args.standin
        run([args.dlrt, "run", w("model.dlcp"), "--inputs", w("inputs.npz"),
             "--outputs", w(f"out-{device}.npz"), "--device", device], env)
        out[device] = np.load(w(f"out-{device}.npz"))
    for n, tol in tols.items():
        a = out["host"][n].astype(np.float64)
        b = out["cuda"][n].astype(np.float64)
        finite = np.isfinite(a)
        same = bool((finite == np.isfinite(b)).all())
        if n == "lse":  # the fill rows' -3.4e38 would hide the others
            finite &= np.abs(a) < 1e30
        e = rel_error(b[finite], a[finite])
        ok &= check(f"{name} cuda {n}", same and e <= tol,
                    f"max|cuda - host| / max|host| = {e:.2e} (tolerance "
                    f"{tol:g}), -inf where the host has it: {same}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--standin", default="",
                    help="libdlrt-cuda-standin.so: also run on the CUDA device")
    ap.add_argument("--only", default="", help="comma-separated configurations")
    ap.add_argument("--break", dest="broken", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)
    ok = True
    configs = [(n, c, None) for n, c in CONFIGS.items()] + \
        [(n, c, p) for n, (c, p) in CONFIGS16.items()]
    for name, cfg, precision in configs:
        if args.only and name not in args.only.split(","):
            continue
        devices = ["host"]
        if args.standin and not cfg[-1]:
            devices.append("cuda")
        ok &= check_config(args, name, cfg, devices, precision)
    if args.standin:
        for name, case in kernel_modules().items():
            if not args.only or name in args.only.split(","):
                ok &= check_kernel_module(args, name, *case)
    print("attention numerics:", "ok" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

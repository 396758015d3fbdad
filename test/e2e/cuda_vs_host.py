#!/usr/bin/python3
"""The CUDA device against the host device, without a GPU (issue 9).

For one model (--model), compile an inference package and a training
package with dlc, then run both with `dlrt` on the host device and on the
CUDA device backed by the test-only stand-in (DLRT_CUDA_STANDIN: the driver,
NVRTC, cuBLASLt and cuDNN emulated on the host, every generated CUDA kernel
compiled for the host and launched with the runtime's grid and block). It
compares:
  - the inference outputs,
  - every training step's loss (5 steps on one batch),
  - every step's gradients and the checkpoint after every step (parameters
    and optimizer state); in fp32 each step runs in its own process from the
    host's state after the previous one (train_stepwise), so both devices
    take it at identical weights,
each as max |cuda - host| <= tol * max |host| (per tensor). The default
tolerance is 1e-5: both devices compute in fp32, and the only differences
are the order of sums inside GEMMs and convolutions (oneDNN on the host,
whose kernels and so orders depend on the CPU's instruction set, and the
stand-in's loops on the CUDA path). A gradient that is zero or cancels
(conditioning.py: found with PyTorch's float64 gradients at the exported
weights), with its optimizer state, is compared against the largest tensor
of its kind in the step instead of its own size: its values are rounding
noise. A model whose training amplifies the difference of well-conditioned
tensors states its looser bound and the reason in TOLERANCES.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import ARCHITECTURES  # noqa: E402
from architectures import export  # noqa: E402
from conditioning import ill_conditioned, parameter_of, role  # noqa: E402
from models import MODELS  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

# Per model and check: (tolerance, reason). Everything not listed: 1e-5.
_RESNET_REASON = (
    "ill-conditioned: batch norm over 2 samples (8 values per channel in "
    "layer4) amplifies summation-order differences; the host device alone, "
    "1 thread against 2, differs by up to 2.7e-5 in these gradients")
_ADAM_EPS_REASON = (
    "Adam near its eps: a few weights of 1.weight (the worst at (47, 227)) "
    "have gradients of ~1.5e-8, sums that cancel to 1e-6 of their terms, so "
    "the GEMMs' summation order changes them by ~1e-2 relative, and near "
    "eps = 1e-8 Adam's step lr*m/(sqrt(v)+eps) follows that: one step from "
    "identical states leaves 1.weight differing by ~1e-5 absolute (of the "
    "lr = 1e-3 Adam can move it), measured 2.9e-4 of its largest entry with "
    "oneDNN's AVX-512 kernels, 8.9e-5 with AVX2, 1.0e-4 with SSE4.1 (issue "
    "33; the 2.2e-5 measured before was against a scale of 0.5 that the step "
    "counter lent every parameter)")
_CNN_REASON = (
    "the host's own variation is larger: since its convolution backward runs "
    "oneDNN's blocked-layout kernels (8c6e2f1), the host device alone, 1 "
    "thread against 2, differs by up to 1.0e-5 in step 5's gradients and "
    "1.5e-5 in the checkpoint (0.weight's momentum buffer), against the "
    "stand-in's 9.0e-6 and 1.3e-5")
TOLERANCES = {
    ("mlp", "checkpoint parameters"): (1e-3, _ADAM_EPS_REASON),
    ("cnn", "later gradients"): (5e-5, _CNN_REASON),
    ("cnn", "checkpoint"): (5e-5, _CNN_REASON),
    ("resnet18", "gradients"): (1e-4, _RESNET_REASON),
    ("resnet18", "later gradients"): (1e-4, _RESNET_REASON),
    ("resnet18", "checkpoint"): (1e-4, _RESNET_REASON),
}

# Per model, precision and check, bounds looser than the low-precision
# default.
_ATTENTION_BF16_REASON = (
    "the CUDA attention kernels are tensor-core bodies (FlashAttention-2): "
    "they round P (and the backward's dS) to bf16 before their products, "
    "where the host's portable body keeps them in f32; one bf16 ulp is "
    "3.9e-3 relative. Measured 4.7e-3 on the logits and 3.9e-3 in step 1's "
    "gradients (head.weight); with P split into two bf16 terms (an "
    "experiment) the logits agree exactly and the gradients within 4.8e-4")
_ATTENTION_BF16_LOSS_REASON = (
    "the attention's bf16 rounding of P and dS on CUDA (above) moves each "
    "step's weights a little differently from the host's, and the "
    "difference compounds over the steps: measured 1.19e-3 at step 5 with "
    "the host limited to SSE4.1 (numerics_isa_sse41; 2.5e-4 at step 4), "
    "within 1e-3 with AVX-512")
LOW_PRECISION_TOLERANCES = {
    ("gpt", "bf16", "inference"): (1e-2, _ATTENTION_BF16_REASON),
    ("gpt", "bf16", "gradients"): (1e-2, _ATTENTION_BF16_REASON),
    ("gpt", "bf16", "later loss"): (5e-3, _ATTENTION_BF16_LOSS_REASON),
}


def run(cmd, env=None):
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL: exit status {r.returncode}\n{r.stdout}")
    return r.stdout, time.time() - start


def rel_error(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        return float("inf")
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    diff = np.max(np.abs(ours - ref)) if ref.size else 0.0
    if not np.all(np.isfinite(ours)):
        return float("inf")
    return float(diff / scale) if scale > 0 else float(diff)


def build(args, w):
    """Exports the model and writes batch.npz/inputs.npz; returns the batch
    size, the ONNX paths for inference and training, dlc's training flags
    and the model with its batch (at the exported weights)."""
    if args.model in MODELS:
        model = MODELS[args.model]()
        batch = args.batch or 16
        x = torch.rand(batch, 1, 28, 28, generator=torch.Generator().manual_seed(3))
        y = torch.randint(0, 10, (batch,), generator=torch.Generator().manual_seed(4))
        path = w(f"{args.model}.onnx")
        torch.onnx.export(model.eval(), x, path, input_names=["input"],
                          output_names=["logits"], opset_version=17,
                          training=torch.onnx.TrainingMode.PRESERVE)
        infer_onnx = train_onnx = path
        lr = 0.05 if args.optimizer == "sgd" else 1e-3  # as train_vs_torch.py
        train_flags = ["--optimizer", args.optimizer, "--lr", repr(lr)]
    else:
        batch = args.batch or 2
        model, x, y = ARCHITECTURES[args.model](batch)
        infer_onnx, train_onnx = w("infer.onnx"), w("train.onnx")
        export(model, x, infer_onnx, training=False)
        export(model, x, train_onnx, training=True)
        # ResNet-18 at architectures.py's lr 0.01 is chaotic on 2 samples:
        # the host device alone, on 1 thread against 2 (oneDNN's summation
        # order), differs by 0.13 in step 3's gradients. At 1e-3 the host's
        # own variation stays below 3e-5 over 5 steps and the loss still
        # falls from 2.60 to 0.15.
        lr = {"resnet18": 1e-3, "gpt": 0.1, "transformer": 0.1}[args.model]
        train_flags = ["--optimizer", args.optimizer, "--lr", repr(lr)]
    if args.optimizer == "sgd":
        train_flags += ["--momentum", "0.9"]
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())
    np.savez(w("inputs.npz"), input=x.numpy())
    return batch, infer_onnx, train_onnx, train_flags, (model, x, y)


def read_losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def train_continuously(args, w, device, denv):
    """--steps steps in one dlrt process: (output, seconds, losses, final
    checkpoint)."""
    for f in [w(f"{device}.jsonl"), w(f"{device}.safetensors")]:
        if os.path.exists(f):
            os.remove(f)
    out, secs = run([args.dlrt, "train", w("train.dlcp"), "--data",
                     w("batch.npz"), "--steps", str(args.steps),
                     "--no-shuffle", "--log-jsonl", w(f"{device}.jsonl"),
                     "--save", w(f"{device}.safetensors"),
                     "--save-gradients", w(f"grad-{device}"),
                     "--device", device], denv)
    return (out, secs, read_losses(w(f"{device}.jsonl")),
            read_safetensors(w(f"{device}.safetensors"))[0])


def train_stepwise(args, w, device, denv):
    """One dlrt process per step, step i resumed from the HOST's checkpoint
    after step i-1 (the host runs first), so that both devices take every
    step at identical weights: what differs is the kernels, not two
    trajectories that chaotic training pulls apart (issue 33: ResNet-18's
    weights as PyTorch draws them without AVX2 make the two trajectories
    differ by 5e-2 in step 3's gradients after a ReLU or max-pool decision
    flips). Returns (output, seconds, losses, [checkpoint after each step])."""
    outs, total, losses, ckpts = [], 0.0, [], []
    for i in range(1, args.steps + 1):
        log, ckpt = w(f"{device}-{i}.jsonl"), w(f"{device}-{i}.safetensors")
        for f in [log, ckpt]:
            if os.path.exists(f):
                os.remove(f)
        resume = ["--resume", w(f"host-{i - 1}.safetensors")] if i > 1 else []
        out, secs = run([args.dlrt, "train", w("train.dlcp"), "--data",
                         w("batch.npz"), "--steps", str(i), "--no-shuffle",
                         "--log-jsonl", log, "--save", ckpt,
                         "--save-gradients", w(f"grad-{device}"),
                         "--device", device] + resume, denv)
        outs.append(out)
        total += secs
        step_losses = read_losses(log)
        if len(step_losses) != 1:
            sys.exit(f"FAIL: {device} step {i} logged {len(step_losses)} losses")
        losses += step_losses
        ckpts.append(read_safetensors(ckpt)[0])
    return "\n".join(outs), total, losses, ckpts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(MODELS) + sorted(ARCHITECTURES),
                    required=True)
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                    help="dlc --precision of both packages; bf16/fp16 compare "
                         "within 1e-3 (issue 10)")
    ap.add_argument("--target", default="",
                    help="also embed real cubins for these archs (dlc --target): "
                         "the stand-in must reject them and the runtime "
                         "recompile the CUDA source")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--standin", required=True,
                    help="libdlrt-cuda-standin.so")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    batch, infer_onnx, train_onnx, train_flags, (model, x, y) = build(args, w)
    ill = (ill_conditioned(model, x, y,
                           TOLERANCES.get((args.model, "gradients"), (1e-5,))[0])
           if args.precision == "fp32" else {})
    for name, why in sorted(ill.items()):
        print(f"compared against the step's scale: {name}: {why}")
    target = ["--target", args.target] if args.target else []
    precision = ["--precision", args.precision]
    run([args.dlc, infer_onnx, "--batch-size", str(batch), "--quiet",
         "-o", w("infer.dlcp")] + target + precision)
    run([args.dlc, train_onnx, "--train", "--loss", "softmax-cross-entropy",
         "--expose-gradients", "--batch-size", str(batch), "--quiet",
         "-o", w("train.dlcp")] + train_flags + target + precision)

    env = dict(os.environ)
    env["DLRT_CUDA_STANDIN"] = args.standin
    env.setdefault("DLRT_CACHE_DIR", w("cubin-cache"))
    results = {}
    for device in ["host", "cuda"]:
        denv = env if device == "cuda" else None
        out, secs = run([args.dlrt, "run", w("infer.dlcp"), "--inputs",
                         w("inputs.npz"), "--outputs", w(f"out-{device}.npz"),
                         "--device", device], denv)
        if args.precision == "fp32":
            out2, secs2, losses, ckpt = train_stepwise(args, w, device, denv)
        else:
            out2, secs2, losses, ckpt = train_continuously(args, w, device, denv)
        announced = [line for line in (out + out2).splitlines()
                     if line.startswith("device:") or "DLRT_CUDA_STANDIN" in line]
        print(f"{device}: run {secs:.1f} s, train {secs2:.1f} s; "
              + " | ".join(sorted(set(announced))))
        if device == "cuda" and not any("stand-in" in line for line in announced):
            sys.exit("FAIL: dlrt did not say that the CUDA device is the stand-in")
        grads = [read_safetensors(os.path.join(w(f"grad-{device}"),
                                               f"step-{i}.safetensors"))[0]
                 for i in range(1, args.steps + 1)]
        results[device] = (dict(np.load(w(f"out-{device}.npz"))), losses, ckpt, grads)

    ok = True

    def check(what, err, key):
        nonlocal ok
        default = (1e-5, "") if args.precision == "fp32" else (
            1e-3, f"{args.precision}: both devices round each GEMM/conv result "
            "once from f32 sums taken in different orders, which can land on "
            "either side of a rounding boundary (issue 10's bound)")
        tol, reason = TOLERANCES.get(
            (args.model, key),
            TOLERANCES.get((args.model, key.split(" ")[0]), default))
        if args.precision != "fp32":
            tol, reason = max(tol, default[0]), reason or default[1]
            tol, reason = LOW_PRECISION_TOLERANCES.get(
                (args.model, args.precision, key), (tol, reason))
        flag = "ok" if err <= tol else "MISMATCH"
        ok &= err <= tol
        print(f"{what}: rel {err:.3g} (tol {tol:g}{'; ' + reason if reason else ''}) {flag}")

    (out_h, loss_h, ckpt_h, grad_h), (out_c, loss_c, ckpt_c, grad_c) = \
        results["host"], results["cuda"]
    for name in out_h:
        check(f"inference output {name}", rel_error(out_c.get(name), out_h[name]),
              "inference")
    if len(loss_h) != args.steps or len(loss_c) != args.steps:
        sys.exit(f"FAIL: {len(loss_h)} host and {len(loss_c)} cuda losses, "
                 f"expected {args.steps}")
    for i, (a, b) in enumerate(zip(loss_c, loss_h), 1):
        print(f"step {i}: cuda {a:.8f} host {b:.8f}")
        check(f"loss step {i}", rel_error(a, b), "loss" if i == 1 else "later loss")
    # fp32: every step is taken at identical weights on both devices
    # (train_stepwise). Low precision: step 1's gradients are; later steps
    # also carry the trajectories' divergence.
    if args.precision == "fp32":
        unknown = sorted(set(ill) - set(grad_h[0]))
        if unknown:
            sys.exit(f"FAIL: PyTorch parameters {unknown} have no gradient in "
                     "dlrt's --save-gradients (names differ?)")
        for i, (gc, gh) in enumerate(zip(grad_c, grad_h), 1):
            err, name = worst_tensor(gc, gh, ill)
            check(f"gradients step {i} ({len(gh)} tensors; worst {name})", err,
                  "gradients" if i == 1 else "later gradients")
        # The checkpoint after each step (one update from identical states),
        # each kind on its own line: parameters, each optimizer state.
        if any(sorted(c) != sorted(h) for c, h in zip(ckpt_c, ckpt_h)):
            check("checkpoint tensor names", float("inf"), "checkpoint")
        for kind in sorted({role(n) for n in ckpt_h[-1]}):
            worst, worst_name = -1.0, ""
            for i, (cc, ch) in enumerate(zip(ckpt_c, ckpt_h), 1):
                names = [n for n in ch if role(n) == kind]
                err, name = worst_tensor({n: cc[n] for n in names if n in cc},
                                         {n: ch[n] for n in names}, ill)
                if err > worst:
                    worst, worst_name = err, f"{name} after step {i}"
            what = kind.lstrip("_") or "parameters"
            check(f"checkpoint {what} (worst {worst_name})", worst,
                  f"checkpoint {what}")
    else:
        # Low precision: a gradient that cancels to about 0 (a convolution
        # bias before BatchNorm) is rounding noise, so each gradient is
        # compared relative to the largest gradient of the step, not to its
        # own size. Only step 1 (identical weights) is asserted: Adam's and
        # momentum SGD's steps turn a rounding-level difference in a
        # near-zero gradient element into an lr-sized weight difference
        # (measured on cnn fp16/Adam: 6e-4 of the peak gradient at step 1,
        # 2e-2 at step 3, while every loss stayed within 1e-4), so later
        # gradients and the checkpoint compare trajectories, not kernels;
        # they are printed, and the losses above cover every step.
        for i, (gc, gh) in enumerate(zip(grad_c, grad_h), 1):
            err, name = worst_vs_peak(gc, gh)
            if i == 1:
                check(f"gradients step 1 ({len(gh)} tensors; worst {name}, "
                      "relative to the peak gradient)", err, "gradients")
            else:
                print(f"gradients step {i}: {err:.3g} of the peak gradient "
                      f"(worst {name}; not asserted, see above)")
        bad = [k for k, t in ckpt_c.items()
               if t.dtype.kind == "f" and not np.all(np.isfinite(t))]
        if sorted(ckpt_c) != sorted(ckpt_h) or bad:
            ok = False
            print(f"checkpoint: tensor names differ or non-finite {bad} MISMATCH")
        err, name = worst_tensor(ckpt_c, ckpt_h, ill)
        print(f"checkpoint: {len(ckpt_h)} tensors, all finite; worst {name} "
              f"{err:.3g} (not asserted, see above)")
    if not ok:
        sys.exit("FAIL: the CUDA device (stand-in) differs from the host device")
    print("PASS")


def worst_vs_peak(ours, ref):
    """The largest |ours - ref| over all tensors divided by the largest
    |ref| over all float tensors, and the tensor it is in (inf for missing,
    misshapen or non-finite tensors)."""
    if sorted(ours) != sorted(ref):
        return float("inf"), "(different tensor names)"
    peak = max((float(np.max(np.abs(t))) for t in ref.values()
                if t.dtype.kind == "f" and t.size), default=0.0)
    worst, worst_name = 0.0, ""
    for name in sorted(ref):
        r, g = ref[name].astype(np.float64), ours[name].astype(np.float64)
        if g.shape != r.shape or not np.all(np.isfinite(g)):
            return float("inf"), name
        d = float(np.max(np.abs(g - r))) if r.size else 0.0
        if d >= worst:
            worst, worst_name = d, name
    return (worst / peak if peak > 0 else worst), worst_name


def worst_tensor(ours, ref, ill):
    """The largest per-tensor error of |ours| against |ref| and the tensor's
    name (inf for a missing, misshapen, non-finite or unequal integer one).

    A tensor is compared relative to its own largest magnitude, unless it
    belongs to a parameter in |ill| (gradient zero or unresolved by fp32,
    conditioning.py): then relative to the largest tensor of the same role
    in |ref|, since its values are rounding noise whose size follows the
    sums' terms, not their result. A wrong index in such a tensor still
    shows when it errs by more than 1e-5 of the step's largest."""
    if sorted(ours) != sorted(ref):
        return float("inf"), "(different tensor names)"
    peak = {}
    for name, t in ref.items():
        if t.dtype.kind == "f" and t.size:
            peak[role(name)] = max(peak.get(role(name), 0.0), float(np.max(np.abs(t))))
    worst, worst_name = 0.0, ""
    for name in sorted(ref):
        r, g = ref[name], ours[name]
        if r.dtype.kind != "f":
            err = 0.0 if np.array_equal(r, g) else float("inf")
        elif g.shape != r.shape or not np.all(np.isfinite(g)):
            err = float("inf")
        elif r.size == 0:
            err = 0.0
        else:
            r, g = r.astype(np.float64), g.astype(np.float64)
            scale = (peak[role(name)] if parameter_of(name) in ill
                     else float(np.max(np.abs(r))))
            err = float(np.max(np.abs(g - r))) / scale if scale > 0 else 0.0
        if err >= worst:
            worst, worst_name = err, name
    return worst, worst_name


if __name__ == "__main__":
    main()

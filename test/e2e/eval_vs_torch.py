#!/usr/bin/python3
"""Inference check of dlc + dlrt on torchvision models exported by PyTorch
(issue 8: swin_t).

Exports the model in eval mode at opset 17 (the exporter's own constant
folding off, so dlc sees the shape arithmetic and the window-attention mask
construction as PyTorch writes them), then:
  1. `dlc --check` must report every op type supported and no import error
     (the check is what a user runs first; it must tell the truth);
  2. `dlc` compiles the model, `dlrt run` runs it on the host, and the
     outputs must match PyTorch's eval outputs within 1e-4 relative to the
     largest reference magnitude (max |ours - ref| <= 1e-4 * max |ref|): both
     are fp32 computations that differ only in the order of floating-point
     sums (GEMMs, softmax and layer-norm reductions).
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torchvision

OUT_TOL = 1e-4


def swin_t(size):
    torch.manual_seed(0)
    model = torchvision.models.swin_t(num_classes=10).eval()
    x = torch.randn(1, 3, size, size)
    return model, x


MODELS = {"swin_t": swin_t}


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="", flush=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    torch.set_num_threads(1)

    model, x = MODELS[args.model](args.size)
    torch.onnx.export(model, x, w("model.onnx"), input_names=["input"],
                      output_names=["logits"], opset_version=17,
                      do_constant_folding=False)
    np.savez(w("inputs.npz"), input=x.numpy())
    with torch.no_grad():
        ref = model(x).numpy()

    ok = True
    check = run([args.dlc, "--check", w("model.onnx")])
    lines = check.stdout.splitlines()
    unsupported = [l for l in lines if "unsupported" in l]
    if check.returncode != 0 or unsupported or any("error" in l for l in lines):
        print(f"FAIL: dlc --check does not report {args.model} fully supported")
        ok = False

    if run([args.dlc, w("model.onnx"), "--quiet", "-o", w("model.dlcp")]).returncode:
        sys.exit("FAIL: dlc could not compile the model")
    if run([args.dlrt, "run", w("model.dlcp"), "--inputs", w("inputs.npz"),
            "--outputs", w("outputs.npz")]).returncode:
        sys.exit("FAIL: dlrt run failed")
    ours = np.load(w("outputs.npz"))["logits"]
    if ours.shape != ref.shape:
        sys.exit(f"FAIL: output shape {ours.shape}, expected {ref.shape}")
    err = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))
    print(f"{args.model} eval: max |ours - torch| / max |torch| = {err:.3g} "
          f"(tolerance {OUT_TOL})")
    ok = ok and err <= OUT_TOL
    if not ok:
        sys.exit(f"FAIL: {args.model}")
    print("PASS")


if __name__ == "__main__":
    main()

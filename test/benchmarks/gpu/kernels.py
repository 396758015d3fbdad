#!/usr/bin/env python3
"""dlc's kernels against the memory system and cuBLAS on one GPU (issue 14
item 5), as ratios measured in one run on the same card.

Two halves, as train_step.py (dlc is built on the development machine; the
GPU machine has PyTorch and CUDA but no MLIR):

  kernels.py prepare --dlc build/bin/dlc --out DIR
      (development machine) exports each case below with PyTorch as an ONNX
      model whose inputs are the tensors (no weights travel) and compiles its
      forward with `dlc --target sm_90`: DIR/<case>.dlcp and DIR/cases.json.
  kernels.py run --dlrt .../dlrt --dir DIR [--json FILE]
      (GPU machine) for each case: `dlrt run --device cuda --repeat R` on
      random inputs (the median wall time of one forward, each run waiting
      for the device; from the second run on a replayed CUDA graph), and in
      the same process PyTorch on the same GPU: a device-to-device copy of
      the bytes the case must move (one read of every input and one write of
      every output) timed the same way, and PyTorch eager's own version of
      the case (torch.compile is not used here; train_step.py measures it).

  kernels.py check --dlrt .../dlrt --dir DIR [--device host|cuda]
      (development machine, ctest; DIR from `prepare --small`) the host-side
      check of what `run` measures: each case's package has the kernels the
      case is about (one kernel for each elementwise chain and reduction, no
      kernel and one library call for the GEMM), `dlrt run --repeat` prints
      the timing line `run` parses, and its output matches NumPy's (float64)
      within 1e-4 of max |ref|. --device cuda runs the CUDA device on the
      stand-in libraries (DLRT_CUDA_STANDIN), thread order randomised.

Printed per case: dlrt's time, the copy's, the effective bandwidth of each
(bytes moved / time) and dlrt/copy as "fraction of copy bandwidth" (the
issue's targets: elementwise >= 0.85, reductions >= 0.7); for the GEMM,
dlrt's TFLOP/s against PyTorch's matmul (cuBLAS; TF32 off on both sides,
as dlc's fp32 GEMMs use none; target >= 0.95).

The cases (fp32):
  elementwise   relu(x * 1.5 + 0.25) on 2^27 elements (one fused kernel)
  silu          x * sigmoid(x) on 2^27 elements
  softmax       softmax over the last axis of [2^17, 1024]
  layernorm     LayerNorm over the last axis of [2^17, 1024] with weight and
                bias (the importer decomposes it; --dlexec-fuse-layer-norm
                makes it one layer_norm kernel again)
  row_sum       sum over the last axis of [2^17, 1024]
  col_sum       sum over the first axis of [1024, 2^17]
  gemm          [4096, 4096] x [4096, 4096] (cuBLASLt through dlc's library
                call)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROWS, COLS = 1 << 17, 1024
ELEMS = 1 << 27
GEMM = 4096


def use_small_sizes():
    """Sizes for the host-side check: rows of the same length (1024, so the
    reductions keep their launch shape), few of them; a small GEMM."""
    global ROWS, ELEMS, GEMM
    ROWS, ELEMS, GEMM = 64, 1 << 16, 128


def cases():
    """name -> (input shapes, FLOPs or 0, kind)."""
    return {
        "elementwise": ([[ELEMS]], 0, "elementwise"),
        "silu": ([[ELEMS]], 0, "elementwise"),
        "softmax": ([[ROWS, COLS]], 0, "reduction"),
        "layernorm": ([[ROWS, COLS]], 0, "reduction"),
        "row_sum": ([[ROWS, COLS]], 0, "reduction"),
        "col_sum": ([[COLS, ROWS]], 0, "reduction"),
        "gemm": ([[GEMM, GEMM], [GEMM, GEMM]], 2 * GEMM ** 3, "gemm"),
    }


def torch_fn(name, torch):
    """PyTorch eager's version of |name| on CUDA tensors."""
    F = torch.nn.functional
    ln_w = ln_b = None
    if name == "layernorm":
        ln_w = torch.ones(COLS, device="cuda")
        ln_b = torch.zeros(COLS, device="cuda")
    return {
        "elementwise": lambda x: torch.relu(x * 1.5 + 0.25),
        "silu": lambda x: x * torch.sigmoid(x),
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "layernorm": lambda x: F.layer_norm(x, (COLS,), ln_w, ln_b),
        "row_sum": lambda x: x.sum(dim=-1),
        "col_sum": lambda x: x.sum(dim=0),
        "gemm": lambda a, b: a @ b,
    }[name]


def prepare(args):
    import torch
    from torch import nn

    class Case(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            if name == "layernorm":
                self.ln = nn.LayerNorm(COLS)

        def forward(self, *xs):
            if self.name == "layernorm":
                return self.ln(xs[0])
            return torch_fn(self.name, torch)(*xs)

    if args.small:
        use_small_sizes()
    os.makedirs(args.out, exist_ok=True)
    meta = {}
    for name, (shapes, flops, kind) in cases().items():
        if args.cases and name not in args.cases.split(","):
            continue
        onnx_path = os.path.join(args.out, f"{name}.onnx")
        # Exported with dim 0 dynamic on a small batch (tracing runs the
        # model once); `dlc --batch-size` fixes dim 0 of every input. The
        # cases are shaped so that every input's dim 0 is the same.
        # (The GEMM's second input keeps its static [K, N], K = M.)
        small = [torch.rand(8, *s[1:]) if i == 0 else torch.rand(*s)
                 for i, s in enumerate(shapes)]
        names = [f"x{i}" for i in range(len(shapes))]
        torch.onnx.export(Case(name), tuple(small), onnx_path, input_names=names,
                          output_names=["y"], opset_version=17,
                          do_constant_folding=False,
                          dynamic_axes={names[0]: {0: "n"}})
        pkg = os.path.join(args.out, f"{name}.dlcp")
        cmd = [args.dlc, onnx_path, "--batch-size", str(shapes[0][0]), "--target", "sm_90",
               "--quiet", "-o", pkg]
        print("+ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        os.remove(onnx_path)
        meta[name] = dict(shapes=shapes, flops=flops, kind=kind, inputs=names)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)


def time_torch(fn, repeat, torch):
    """Median wall time (ms) of one call of |fn| followed by a device
    synchronize, as dlrt run --repeat times one forward."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def run(args):
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(args.dir, "cases.json")) as f:
        meta = json.load(f)
    print(f"GPU: {torch.cuda.get_device_name()}; PyTorch {torch.__version__}")
    results = {}
    for name, m in meta.items():
        rng = np.random.default_rng(0)
        arrays = {n: rng.standard_normal(s, dtype=np.float32)
                  for n, s in zip(m["inputs"], m["shapes"])}
        npz = os.path.join(args.dir, f"{name}-in.npz")
        np.savez(npz, **arrays)
        out = os.path.join(args.dir, f"{name}-out.npz")
        r = subprocess.run([args.dlrt, "run", os.path.join(args.dir, f"{name}.dlcp"),
                            "--inputs", npz, "--outputs", out, "--device", "cuda",
                            "--repeat", str(args.repeat)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        mt = re.search(r"forward: \d+ runs, median ([\d.]+) ms", r.stdout)
        if r.returncode != 0 or not mt:
            print(f"!! {name}: dlrt run failed:\n{r.stdout}")
            results[name] = dict(error=r.stdout[-2000:])
            continue
        dlrt_ms = float(mt.group(1))
        xs = [torch.from_numpy(arrays[n]).cuda() for n in m["inputs"]]
        fn = torch_fn(name, torch)
        with torch.no_grad():
            ref = fn(*xs)
            y = np.load(out)["y"]
            err = float((torch.from_numpy(y).cuda() - ref).abs().max())
            scale = float(ref.abs().max())
            torch_ms = time_torch(lambda: fn(*xs), args.repeat, torch)
        in_bytes = sum(x.numel() * 4 for x in xs)
        out_bytes = ref.numel() * 4
        moved = in_bytes + out_bytes
        # A copy of the same bytes: read and write (in + out) / 2 each.
        src = torch.empty(moved // 8, dtype=torch.float32, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = time_torch(lambda: dst.copy_(src), args.repeat, torch)
        del src, dst
        row = dict(dlrt_ms=dlrt_ms, torch_eager_ms=torch_ms, copy_ms=copy_ms,
                   bytes_moved=moved, max_abs_err=err, max_abs_ref=scale)
        if m["flops"]:
            row["dlrt_tflops"] = m["flops"] / dlrt_ms / 1e9
            row["torch_tflops"] = m["flops"] / torch_ms / 1e9
            row["ratio"] = torch_ms / dlrt_ms
            print(f"{name:>12}: dlrt {dlrt_ms:.3f} ms ({row['dlrt_tflops']:.1f} TFLOP/s), "
                  f"PyTorch matmul {torch_ms:.3f} ms ({row['torch_tflops']:.1f} TFLOP/s); "
                  f"dlrt speed / cuBLAS via PyTorch = {row['ratio']:.3f} (target >= 0.95); "
                  f"max |err| {err:.3g} of {scale:.3g}")
        else:
            row["dlrt_gbps"] = moved / dlrt_ms / 1e6
            row["copy_gbps"] = moved / copy_ms / 1e6
            row["ratio"] = copy_ms / dlrt_ms
            target = 0.85 if m["kind"] == "elementwise" else 0.7
            print(f"{name:>12}: dlrt {dlrt_ms:.3f} ms ({row['dlrt_gbps']:.0f} GB/s), copy of "
                  f"{moved / 2**20:.0f} MiB {copy_ms:.3f} ms ({row['copy_gbps']:.0f} GB/s), "
                  f"PyTorch eager {torch_ms:.3f} ms; fraction of copy bandwidth "
                  f"{row['ratio']:.3f} (target >= {target}); max |err| {err:.3g} of {scale:.3g}")
        results[name] = row
        os.remove(npz)
        os.remove(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def numpy_ref(name, xs, np):
    """Float64 NumPy version of |name| (LayerNorm with PyTorch's initial
    weight 1 and bias 0, eps 1e-5)."""
    x = xs[0].astype(np.float64)
    if name == "elementwise":
        return np.maximum(x * 1.5 + 0.25, 0)
    if name == "silu":
        return x / (1 + np.exp(-x))
    if name == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if name == "layernorm":
        m = x.mean(axis=-1, keepdims=True)
        return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    if name == "row_sum":
        return x.sum(axis=-1)
    if name == "col_sum":
        return x.sum(axis=0)
    return x @ xs[1].astype(np.float64)


def check(args):
    """Exits non-zero unless every case of cases.json passes (see the
    module doc)."""
    import numpy as np
    with open(os.path.join(args.dir, "cases.json")) as f:
        meta = json.load(f)
    failures = []
    if sorted(meta) != sorted(cases()):
        failures.append(f"cases.json has {sorted(meta)}, expected {sorted(cases())}")
    for name, m in meta.items():
        pkg = os.path.join(args.dir, f"{name}.dlcp")
        info = subprocess.run([args.dlrt, "info", pkg], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True).stdout
        launches = re.search(r"kernel launches: (\d+)", info)
        calls = re.search(r"library calls: (\d+)", info)
        # LayerNorm too: --dlexec-fuse-layer-norm makes the decomposed
        # mean, centered values, variance and affine one layer_norm kernel.
        want = (0, 1) if m["kind"] == "gemm" else (1, 0)
        got = (int(launches.group(1)), int(calls.group(1))) if launches and calls else None
        if want and got != want:
            failures.append(f"{name}: (kernel launches, library calls) {got}, expected {want}")
        rng = np.random.default_rng(0)
        arrays = {n: rng.standard_normal(s, dtype=np.float32)
                  for n, s in zip(m["inputs"], m["shapes"])}
        npz = os.path.join(args.dir, f"{name}-in.npz")
        out = os.path.join(args.dir, f"{name}-out.npz")
        np.savez(npz, **arrays)
        r = subprocess.run([args.dlrt, "run", pkg, "--inputs", npz, "--outputs", out,
                            "--device", args.device, "--repeat", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=600)
        # The line run() parses.
        if r.returncode != 0 or not re.search(r"forward: \d+ runs, median ([\d.]+) ms", r.stdout):
            failures.append(f"{name}: dlrt run failed or printed no timing line:\n{r.stdout}")
            continue
        y = np.load(out)["y"]
        ref = numpy_ref(name, [arrays[n] for n in m["inputs"]], np)
        err = float(np.abs(y - ref).max()) / float(np.abs(ref).max())
        ok = y.shape == ref.shape and err <= 1e-4
        print(f"{name:>12}: {got} kernel launches / library calls, "
              f"max |dlrt - numpy| / max |numpy| = {err:.2e} {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{name}: output {y.shape} differs from NumPy's {ref.shape} by {err:.2e}")
        os.remove(npz)
        os.remove(out)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("PASS")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dlc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cases", default="", help="comma-separated subset")
    p.add_argument("--small", action="store_true",
                   help="small sizes, for `check` (ctest)")
    r = sub.add_parser("run")
    r.add_argument("--dlrt", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--repeat", type=int, default=20)
    r.add_argument("--json", default="")
    c = sub.add_parser("check")
    c.add_argument("--dlrt", required=True)
    c.add_argument("--dir", required=True)
    c.add_argument("--device", default="host")
    args = ap.parse_args()
    if args.cmd == "prepare":
        return prepare(args)
    return run(args) if args.cmd == "run" else check(args)


if __name__ == "__main__":
    sys.exit(main())

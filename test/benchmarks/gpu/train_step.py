#!/usr/bin/env python3
"""Training-step time of dlc + dlrt against PyTorch eager and torch.compile on
one GPU (issue 14 item 5), in one run on the same card.

Two halves, because dlc (MLIR) is built on the development machine and the
GPU machine has PyTorch but no MLIR:

  train_step.py prepare --dlc build/bin/dlc --out DIR [--models gpt,resnet18]
      (development machine) exports each model with PyTorch, compiles its
      training step with `dlc --train --target sm_90` (fp32, and bf16 with
      --precision bf16) and writes DIR/<model>/{fp32,bf16}.dlcp.noweights
      and .weights.json (below), batch.npz and config.json.
  train_step.py run --dlrt .../dlrt --dir DIR [--models gpt,resnet18]
      (GPU machine) for each package (of the named models, default all): dlrt's steady-state step time on
      --device cuda; PyTorch's on the same model, seeded identically (the
      same initial weights: arch_models' factories seed torch's CPU generator;
      the check is that the first-step losses of dlrt and PyTorch fp32 agree
      to 1e-4 relative), the same batch and the same optimizer, in eager mode
      and under torch.compile (default mode, and mode="reduce-overhead",
      which replays CUDA graphs; compile times kept in the JSON); dlrt with
      and without its own CUDA graph (--no-cuda-graph); and a
      profile of one dlrt step (CUDA_LAUNCH_BLOCKING=1 and dlrt's trace: the
      kernels and library calls that take the time).

  train_step.py check --dlrt .../dlrt --dir DIR
      (development machine, ctest) the host-side check of what `run`
      compares: each prepared model's first-step loss (before any update)
      from `dlrt train --device host` on its fp32 package against PyTorch's
      on the CPU (the same factory, weights and batch), within the 1e-4
      relative that `run` expects of the GPU; every prepared package loads
      (`dlrt info`).

The packages travel without their initial weights (ResNet-18's are 45 MB a
package, more than the GPU machine's 64 MiB carry holds beside the rest):
`prepare` cuts the tensor data out of each package's `weights` safetensors
blob (<precision>.dlcp.noweights) and records in <precision>.weights.json
where each tensor's bytes come from: a tensor of the seeded PyTorch model's
state_dict (matched by content, in the package's dtype) or, for the few
that are not (small constants), the bytes themselves; and the SHA-256 of
the whole package. `run` and `check` rebuild <precision>.dlcp from the same
seeded model and refuse to go on unless the SHA-256 matches, so the package
that runs is byte for byte the one dlc wrote.

Fairness, stated: PyTorch fp32 runs with TF32 off (dlc's fp32 GEMMs and
convolutions use no TF32), bf16 under torch.autocast; Adam with fused=True
(PyTorch's fastest); both read the loss back every step (dlrt train does);
PyTorch keeps the batch on the GPU while dlrt train copies it in each step.
Step times are medians of windows of steps after warm-up.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# arch_models.py: beside this script in the GPU bundle, else in test/e2e.
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "e2e")]

# Sizes: big enough that the GPU is not idle between launches for PyTorch,
# small enough that each package's weights fit the GPU machine's carry.
MODELS = {
    "gpt": dict(factory="gpt", batch=16,
                kwargs=dict(seq=128, vocab=512, embed=256, heads=4, layers=4)),
    "resnet18": dict(factory="resnet18", batch=32, kwargs={}),
}
LR = 1e-3


def make(name):
    from arch_models import make_gpt, make_resnet18
    spec = MODELS[name]
    if spec["factory"] == "gpt":
        return make_gpt(spec["batch"], **spec["kwargs"])
    return make_resnet18(spec["batch"])


# runtime/schema/package.fbs: `weights` is field 8 of table Package.
PACKAGE_WEIGHTS_FIELD = 8
# Bytes of weights that `prepare` may keep inline in the manifest (tensors
# that match no state_dict entry) before it calls the package unstrippable.
MAX_INLINE_BYTES = 1 << 20


def weights_region(data):
    """(start, end) of the tensor data inside the package's `weights`
    safetensors blob in |data| (a .dlcp file: a FlatBuffer whose root table
    is Package), or None when it has no weights. Raises ValueError for a
    file that is not a package."""
    import struct
    if len(data) < 8 or data[4:8] != b"DLCP":
        raise ValueError("not a dlc package (no DLCP file identifier)")
    root = struct.unpack_from("<I", data, 0)[0]
    vtable = root - struct.unpack_from("<i", data, root)[0]
    vtable_bytes = struct.unpack_from("<H", data, vtable)[0]
    slot = 4 + 2 * PACKAGE_WEIGHTS_FIELD
    if slot + 2 > vtable_bytes:
        return None
    field = struct.unpack_from("<H", data, vtable + slot)[0]
    if field == 0:
        return None
    at = root + field
    vector = at + struct.unpack_from("<I", data, at)[0]
    size = struct.unpack_from("<I", data, vector)[0]
    blob = vector + 4
    header = struct.unpack_from("<Q", data, blob)[0]
    start = blob + 8 + header
    if start > blob + size:
        raise ValueError("the weights blob's safetensors header overruns it")
    return start, blob + size, json.loads(data[blob + 8:start])


SAFETENSORS_TORCH_DTYPES = {"F32": "float32", "F64": "float64", "BF16": "bfloat16",
                            "F16": "float16", "I64": "int64", "I32": "int32",
                            "U8": "uint8", "BOOL": "bool"}


def state_bytes(state, key, st_dtype):
    """The little-endian bytes of state_dict entry |key| in safetensors
    dtype |st_dtype|."""
    import torch
    t = state[key].detach().to(getattr(torch, SAFETENSORS_TORCH_DTYPES[st_dtype]))
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def strip_weights(pkg, state):
    """Writes |pkg|.noweights (the package without its weights' tensor data)
    and the manifest <pkg minus .dlcp>.weights.json, and removes |pkg|."""
    import base64
    import hashlib
    data = open(pkg, "rb").read()
    region = weights_region(data)
    if region is None:
        raise ValueError(f"{pkg} has no weights to strip")
    start, end, header = region
    by_content = {}
    tensors, inline = [], 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[start + b:start + e]
        digest = hashlib.sha256(raw).hexdigest()
        entry = {"name": name, "offsets": [b, e]}
        if (digest, info["dtype"]) not in by_content:
            for key in state:
                if tuple(state[key].shape) == tuple(info["shape"]) and \
                        state_bytes(state, key, info["dtype"]) == raw:
                    by_content[(digest, info["dtype"])] = key
                    break
            else:
                by_content[(digest, info["dtype"])] = None
        key = by_content[(digest, info["dtype"])]
        if key is not None:
            entry.update(key=key, dtype=info["dtype"])
        else:
            entry["base64"] = base64.b64encode(raw).decode()
            inline += len(raw)
        tensors.append(entry)
    if inline > MAX_INLINE_BYTES:
        raise ValueError(f"{pkg}: {inline} bytes of weights match no state_dict tensor")
    base = pkg[:-len(".dlcp")]
    with open(base + ".weights.json", "w") as f:
        json.dump({"sha256": hashlib.sha256(data).hexdigest(), "data_start": start,
                   "data_bytes": end - start, "inline_bytes": inline,
                   "tensors": tensors}, f)
    with open(pkg + ".noweights", "wb") as f:
        f.write(data[:start] + data[end:])
    os.remove(pkg)
    return end - start, inline


def restore_weights(pkg, state):
    """Rebuilds |pkg| from |pkg|.noweights, its manifest and the seeded
    model's |state|; raises RuntimeError unless it is the package dlc wrote
    (SHA-256)."""
    import base64
    import hashlib
    base = pkg[:-len(".dlcp")]
    manifest = json.load(open(base + ".weights.json"))
    stripped = open(pkg + ".noweights", "rb").read()
    region = bytearray(manifest["data_bytes"])
    for t in manifest["tensors"]:
        b, e = t["offsets"]
        raw = (state_bytes(state, t["key"], t["dtype"]) if "key" in t
               else base64.b64decode(t["base64"]))
        if len(raw) != e - b:
            raise RuntimeError(f"{pkg}: tensor {t['name']} is {len(raw)} bytes, "
                               f"the package's {e - b}")
        region[b:e] = raw
    at = manifest["data_start"]
    data = stripped[:at] + bytes(region) + stripped[at:]
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise RuntimeError(
            f"{pkg}: the rebuilt package differs from the one dlc wrote: this "
            "PyTorch initialises the seeded model with other weights than the "
            "compile machine's did; carry the package whole instead")
    tmp = pkg + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, pkg)


def restore_packages(d, name, precisions):
    """Rebuilds each of |precisions|' packages of model |name| in |d|."""
    state = make(name)[0].state_dict()
    for precision in precisions:
        pkg = os.path.join(d, f"{precision}.dlcp")
        if os.path.exists(pkg + ".noweights"):
            restore_weights(pkg, state)


def prepare(args):
    import numpy as np
    import torch
    from architectures import export
    for name in args.models.split(","):
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        model, x, y = make(name)
        export(model, x, os.path.join(d, "train.onnx"), training=True)
        np.savez(os.path.join(d, "batch.npz"), input=x.numpy(), labels=y.numpy())
        for precision in args.precisions.split(","):
            cmd = [args.dlc, os.path.join(d, "train.onnx"), "--train",
                   "--loss", "softmax-cross-entropy", "--optimizer", "adam",
                   "--lr", repr(LR), "--batch-size", str(MODELS[name]["batch"]),
                   "--precision", precision, "--target", "sm_90", "--quiet",
                   "-o", os.path.join(d, f"{precision}.dlcp")]
            print("+ " + " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
            pkg = os.path.join(d, f"{precision}.dlcp")
            size = os.path.getsize(pkg)
            data_bytes, inline = strip_weights(pkg, make(name)[0].state_dict())
            print(f"{pkg}: {size} bytes, {data_bytes} of them weights, left out "
                  f"({inline} bytes kept inline)", flush=True)
        os.remove(os.path.join(d, "train.onnx"))
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"model": name, "batch": MODELS[name]["batch"], "lr": LR,
                       "precisions": args.precisions.split(",")}, f)
        print(f"prepared {d}")


def dlrt_step_ms(args, pkg, batch_npz, batch, steps, window, extra=()):
    """Median step time (ms) over windows of |window| steps after the first
    window, from dlrt train's samples/s lines; and the first logged loss."""
    jsonl = pkg + ".jsonl"
    if os.path.exists(jsonl):
        os.remove(jsonl)
    cmd = [args.dlrt, "train", pkg, "--data", batch_npz, "--steps", str(steps),
           "--no-shuffle", "--device", "cuda", "--log-every", str(window),
           "--log-jsonl", jsonl, *extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=args.timeout)
    if r.returncode != 0:
        print(r.stdout)
        raise RuntimeError(f"dlrt train {pkg} failed ({r.returncode})")
    rates = [float(m) for m in re.findall(r"loss \S+\s+([0-9.]+) samples/s", r.stdout)]
    if len(rates) < 2:
        print(r.stdout)
        raise RuntimeError("dlrt train printed too few throughput lines")
    losses = [json.loads(l)["loss"] for l in open(jsonl) if l.strip()]
    return statistics.median(1e3 * batch / v for v in rates[1:]), losses


def torch_step_ms(name, precision, steps, window, compiled):
    """(median ms/step over windows after warm-up, first loss, compile s).
    |compiled|: False (eager), or a torch.compile mode ("default",
    "reduce-overhead": CUDA graphs through cudagraph trees)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, x, y = make(name)
    model = model.cuda().train()
    x, y = x.cuda(), y.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=LR, fused=True)
    fwd = torch.compile(model, mode=compiled) if compiled else model

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits = fwd(x)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    t0 = time.perf_counter()
    first = step()
    compile_s = time.perf_counter() - t0
    for _ in range(window - 1):
        step()
    times = []
    for _ in range(max(1, steps // window - 1)):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(window):
            step()
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - t) / window)
    return statistics.median(times), first, compile_s


def profile(args, pkg, batch_npz, top):
    """One dlrt step's kernels and library calls with synchronous launches,
    from dlrt's trace: (steps' total ms, rows of (name, count, ms))."""
    trace = pkg + ".trace.json"
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
    cmd = [args.dlrt, "train", pkg, "--data", batch_npz, "--steps", "3",
           "--no-shuffle", "--device", "cuda", "--trace", trace, "--quiet"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=args.timeout)
    if r.returncode != 0 or not os.path.exists(trace):
        print(r.stdout)
        return None
    events = json.load(open(trace))
    events = events.get("traceEvents", events)
    steps = [e for e in events if e.get("cat") == "step" and e.get("ph") == "X"]
    if not steps:
        return None
    last = steps[-1]
    lo, hi = last["ts"], last["ts"] + last["dur"]
    agg = {}
    count = 0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") in ("step",) or not lo <= e["ts"] < hi:
            continue
        count += 1
        base = re.sub(r"_k\d+_", "_", e["name"])
        n, t = agg.get((e.get("cat"), base), (0, 0.0))
        agg[(e.get("cat"), base)] = (n + 1, t + e["dur"] / 1e3)
    rows = sorted(agg.items(), key=lambda kv: -kv[1][1])[:top]
    return last["dur"] / 1e3, count, rows


def run(args):
    results = []
    for name in sorted(os.listdir(args.dir)):
        d = os.path.join(args.dir, name)
        cfg_path = os.path.join(d, "config.json")
        if not os.path.exists(cfg_path):
            continue
        if args.models and name not in args.models.split(","):
            continue
        cfg = json.load(open(cfg_path))
        batch = cfg["batch"]
        try:
            restore_packages(d, name, cfg["precisions"])
        except Exception as e:
            print(f"{name}: cannot rebuild its packages: {e}")
            continue
        for precision in cfg["precisions"]:
            pkg = os.path.join(d, f"{precision}.dlcp")
            row = {"model": name, "precision": precision}
            for key, extra in (("dlrt_ms", ()), ("dlrt_nograph_ms", ("--no-cuda-graph",))):
                try:
                    row[key], losses = dlrt_step_ms(
                        args, pkg, os.path.join(d, "batch.npz"), batch, args.steps,
                        args.window, extra)
                    row["dlrt_loss1"] = losses[0]
                except Exception as e:  # report and go on with the others
                    print(f"{name} {precision}: dlrt {' '.join(extra)} failed: {e}")
            for mode, compiled in (("eager", False), ("compile", "default"),
                                   ("compile_ro", "reduce-overhead")):
                try:
                    ms, first, cs = torch_step_ms(name, precision, args.steps,
                                                  args.window, compiled)
                    row[f"{mode}_ms"], row[f"{mode}_loss1"] = ms, first
                    if compiled:
                        row[f"{mode}_s"] = cs
                except Exception as e:
                    print(f"{name} {precision}: torch {mode} failed: {e}")
            prof = profile(args, pkg, os.path.join(d, "batch.npz"), args.top)
            if prof:
                total, count, rows = prof
                print(f"\n{name} {precision}: one dlrt step with synchronous launches: "
                      f"{total:.2f} ms, {count} kernels and library calls")
                for (cat, base), (n, t) in rows:
                    print(f"  {t:8.3f} ms {n:5d}x {cat:8s} {base}")
            results.append(row)
            print(json.dumps(row), flush=True)
    print("\nms per training step (median of windows); dlrt: CUDA graph replay, "
          "no-graph: --no-cuda-graph; compile: torch.compile default mode, "
          "compile-ro: mode='reduce-overhead' (CUDA graphs)")
    print("model     prec  dlrt   no-graph  eager   compile  compile-ro  "
          "dlrt/eager  dlrt/compile  dlrt/compile-ro  loss1 dlrt vs torch")
    for r in results:
        def f(k):
            return f"{r[k]:.3f}" if k in r else "-"
        ratio = lambda k: f"{r['dlrt_ms'] / r[k]:.2f}" if k in r and "dlrt_ms" in r else "-"  # noqa: E731
        agree = "-"
        if "dlrt_loss1" in r and "eager_loss1" in r:
            agree = f"{abs(r['dlrt_loss1'] - r['eager_loss1']) / abs(r['eager_loss1']):.1e}"
        print(f"{r['model']:9s} {r['precision']:5s} {f('dlrt_ms'):>6} {f('dlrt_nograph_ms'):>8} "
              f"{f('eager_ms'):>7} {f('compile_ms'):>8} {f('compile_ro_ms'):>10} "
              f"{ratio('eager_ms'):>10} {ratio('compile_ms'):>13} {ratio('compile_ro_ms'):>16}"
              f"  {agree}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def check(args):
    """Exits non-zero unless every prepared model passes (see the module
    doc)."""
    import torch
    torch.set_num_threads(1)
    failures = []
    models = [n for n in sorted(os.listdir(args.dir))
              if os.path.exists(os.path.join(args.dir, n, "config.json"))]
    if not models:
        failures.append(f"no prepared model in {args.dir}")
    for name in models:
        d = os.path.join(args.dir, name)
        cfg = json.load(open(os.path.join(d, "config.json")))
        try:
            restore_packages(d, name, cfg["precisions"])
        except Exception as e:
            failures.append(f"{name}: cannot rebuild its packages: {e}")
            continue
        # The rebuild must refuse other weights: one tensor changed by one.
        state = dict(make(name)[0].state_dict())
        pkg = os.path.join(d, "fp32.dlcp")
        manifest = json.load(open(pkg[:-len(".dlcp")] + ".weights.json"))
        key = next(t["key"] for t in manifest["tensors"] if "key" in t)
        state[key] = state[key] + 1
        try:
            restore_weights(pkg, state)
            failures.append(f"{name}: the rebuild accepted a changed '{key}'")
        except RuntimeError as e:
            print(f"{name}: a changed '{key}' is refused: {str(e).split(':')[1].strip()}")
        for precision in cfg["precisions"]:
            pkg = os.path.join(d, f"{precision}.dlcp")
            r = subprocess.run([args.dlrt, "info", pkg], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0 or "function train_step" not in r.stdout:
                failures.append(f"{name} {precision}: dlrt info failed:\n{r.stdout}")
        jsonl = os.path.join(d, "check.jsonl")
        if os.path.exists(jsonl):
            os.remove(jsonl)
        r = subprocess.run([args.dlrt, "train", os.path.join(d, "fp32.dlcp"), "--data",
                            os.path.join(d, "batch.npz"), "--steps", "1", "--no-shuffle",
                            "--device", "host", "--quiet", "--log-jsonl", jsonl],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=600)
        if r.returncode != 0 or not os.path.exists(jsonl):
            failures.append(f"{name}: dlrt train failed:\n{r.stdout}")
            continue
        ours = json.loads(open(jsonl).readline())["loss"]
        model, x, y = make(name)
        logits = model.train()(x)
        ref = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()
        rel = abs(ours - ref) / abs(ref)
        print(f"{name}: first-step loss dlrt (host) {ours:.8f}, PyTorch (CPU) {ref:.8f}, "
              f"relative difference {rel:.1e} (at most 1e-4)")
        if rel > 1e-4:
            failures.append(f"{name}: first-step losses differ by {rel:.1e}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("PASS")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dlc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="gpt")
    p.add_argument("--precisions", default="fp32,bf16")
    r = sub.add_parser("run")
    r.add_argument("--dlrt", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--steps", type=int, default=120)
    r.add_argument("--window", type=int, default=20)
    r.add_argument("--top", type=int, default=12)
    r.add_argument("--timeout", type=int, default=300)
    r.add_argument("--json", default=None)
    r.add_argument("--models", default=None,
                   help="comma-separated prepared models to run (default: all)")
    c = sub.add_parser("check")
    c.add_argument("--dlrt", required=True)
    c.add_argument("--dir", required=True)
    args = ap.parse_args()
    if args.cmd == "check":
        return check(args)
    prepare(args) if args.cmd == "prepare" else run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

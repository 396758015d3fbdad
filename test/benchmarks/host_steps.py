#!/usr/bin/python3
"""Host training-step benchmark (issue 15 items 4 and 5): dlc + dlrt on the
host device against PyTorch eager on the CPU, on the same machine, in one run.

    /usr/bin/python3 test/benchmarks/host_steps.py --dlc build/bin/dlc \\
        --dlrt build/bin/dlrt --workdir /tmp/host-steps [--quick] [--models a,b]

Models (--models picks some; --quick is mlp,cnn with 3 measured steps):
  mlp           the bundled MLP (examples/mlp/export_mlp.py), batch 64, Adam
  cnn           test/e2e/models.py's CNN with BatchNorm, batch 64, SGD momentum
  resnet18      torchvision ResNet-18 (10 classes), batch 8 of 3x64x64, SGD momentum
  mobilenet_v2  torchvision MobileNetV2 (classifier dropout removed: dlc's
                dropout mask is not PyTorch's), batch 8 of 3x64x64, SGD momentum
  densenet121   torchvision DenseNet-121, batch 2 of 3x64x64, SGD (issue 15's case)
  vit           a small ViT defined here (torchvision 0.14 has only ViT-B and
                larger): 32x32 images, 4x4 patches, width 192, 6 pre-norm
                encoder layers of 3 heads, batch 8, AdamW
  gpt2          test/e2e/arch_models.py's TinyGPT at GPT-2 size (12 layers, d 768,
                12 heads, vocab 50,257, sequence 128; 162 M parameters), batch 2, AdamW

Both sides start from the same weights (the model is built from a seeded
factory, exported to ONNX for dlc, and built again for PyTorch), train on the
same batch with the same optimizer and hyper-parameters, and the first step's
losses are compared (they must agree to --loss-tol relative, else the row is
marked MISMATCH and the script exits 1): the comparison is of the same
computation. torchvision is Debian's python3-torchvision 0.14.

Fairness, stated:
  threads   both sides run with the same thread count (--threads, default the
            machine's cores): OMP_NUM_THREADS and OPENBLAS_NUM_THREADS in both
            commands' environments, and torch.set_num_threads in PyTorch's.
  BLAS      Debian's python3-torch is built with BLAS_INFO=generic: its GEMMs
            run on whatever libblas.so.3 the alternatives point to. The
            PyTorch command prints the BLAS library it loaded (from
            /proc/self/maps) and the GFLOP/s of a 1024x1024 matmul; with the
            reference BLAS (no libopenblas0-pthread) the script refuses to run
            (--allow-reference-blas overrides). OPENBLAS_CORETYPE and
            OPENBLAS_L2_SIZE are removed from PyTorch's environment only.
  step time dlrt: from `dlrt train --trace`, the interval between the starts
            of consecutive train_step calls (so it includes the batch copy-in
            and the loss read-back between calls) after --warmup steps;
            PyTorch: wall time of zero_grad, forward, loss, backward, step and
            loss.item() per step after the same warm-up. Median and minimum
            (on a shared machine the minimum is the less disturbed figure).
  waiting   OMP_WAIT_POLICY=PASSIVE on both sides (dlrt sets it for itself
            unless given; PyTorch's steps with OpenMP's default spinning were
            10-40x slower whenever other processes took the cores).
  compile   wall time of `dlc --train` (the host library compiled by the
            system C++ compiler), kernels and library calls per train_step
            from `dlrt info`.
  why       where dlrt's median step is above PyTorch's, the table's last
            column names the (at most two) groups of GROUPS (conv forward,
            conv backward, gemm, pool forward/backward, optimizer, rest)
            where dlrt spends the most time more than PyTorch, with their
            share of dlrt's step and the ratio: dlrt's time per group from
            its trace of the measured steps, PyTorch's from torch.profiler
            on one extra step (outermost aten op per group), scaled to its
            median step.
Start-up (item 5): wall time of `dlrt train` on the bundled MLP's package for
1 step (process start, package load, first step) and for 5 steps, medians
of 5 traced runs (the first step's own time from the trace), and `dlrt --help`
alone.

The machine is shared: the 1-minute load average before each model is in
the table. Exits 0 when every model ran and the losses agree (speed is
measured, not judged), 1 otherwise.

Compile time: each model's `dlc --train` runs twice with a --cache-dir of
its own under the workdir, emptied first: cold (the compile cache empty) and
warm (the same model again, served by the cache).

--peers (never in the test suite: it downloads about 3 GB) adds PyTorch 2.x
and ONNX Runtime, installed from PyPI by pip into a virtualenv of their own
(--peers-venv, default ~/.cache/dlc-bench-peers/venv; made by this Python's
venv module, reused while it holds the pinned versions, PEER_PINS; PyPI's
Linux torch wheel pulls in NVIDIA's CUDA libraries, unused here). This
script keeps running under /usr/bin/python3; each peer runs in a subprocess
of the virtualenv's Python with PyTorch's environment above (threads, wait
policy). Per model:
  eager     PyTorch 2.x eager training steps, timed as the PyTorch column;
  compiled  the same with the model wrapped in torch.compile (Inductor,
            default mode; forward and backward compiled, optimizer eager),
            with a fresh, empty TORCHINDUCTOR_CACHE_DIR: its compile time is
            the first step's wall time minus the median later step, beside
            dlc's cold compile;
  both start from the weights of the 1.13 model (saved by this process and
  loaded into the same factory's model), on the same batch, and their
  first-step losses are compared with dlrt's (--loss-tol);
  inference the model exported in eval mode, compiled by dlc without --train
            and run by `dlrt run --repeat` (its printed median), beside an ONNX
            Runtime CPU session on the same ONNX file and input (intra-op
            threads = --threads, inter-op 1, spinning off under PASSIVE),
            median of as many runs after 2 warm-up runs; the outputs must
            agree to --out-tol (max |dlrt - ORT| / max |ORT|).
PyPI's torch uses MKL (BLAS_INFO=mkl, linked in) and oneDNN: the peers' line
prints their versions and the same 1024x1024 matmul rate. Where pip cannot
install them, the peers' table says why and the rest of the run stands.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "test", "e2e"), os.path.join(ROOT, "examples", "mlp")]

# name: batch, optimizer flags for dlc, steps measured in a full run.
MODELS = {
    "mlp": dict(batch=64, opt="adam", lr=1e-3, steps=20),
    "cnn": dict(batch=64, opt="sgd", lr=0.01, momentum=0.9, steps=10),
    "resnet18": dict(batch=8, opt="sgd", lr=0.01, momentum=0.9, steps=5),
    "mobilenet_v2": dict(batch=8, opt="sgd", lr=0.01, momentum=0.9, steps=5),
    "densenet121": dict(batch=2, opt="sgd", lr=0.01, steps=5),
    "vit": dict(batch=8, opt="adamw", lr=1e-3, steps=5),
    "gpt2": dict(batch=2, opt="adamw", lr=1e-4, steps=2),
}
QUICK = ["mlp", "cnn"]
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# --peers: versions installed from PyPI (checked to install and run here on
# 2026-11-27: Python 3.11, x86-64; torch's wheel is the CUDA 13.2 build).
PEER_PINS = {"torch": "2.15.0", "torchvision": "0.29.2", "onnxruntime": "1.32.0",
             "numpy": "2.4.6"}


def build(name):
    """(model, x, y) for |name|, seeded: the same weights every call."""
    import torch
    import torchvision
    from torch import nn
    if name == "mlp":
        from export_mlp import make_model
        model = make_model()
        gen = torch.Generator().manual_seed(40)
        return model, torch.rand(64, 1, 28, 28, generator=gen), torch.randint(
            0, 10, (64,), generator=gen)
    if name == "cnn":
        from models import make_cnn
        model = make_cnn()
        gen = torch.Generator().manual_seed(41)
        return model, torch.rand(64, 1, 28, 28, generator=gen), torch.randint(
            0, 10, (64,), generator=gen)
    batch = MODELS[name]["batch"]
    if name in ("resnet18", "mobilenet_v2", "densenet121"):
        torch.manual_seed(7)
        if name == "mobilenet_v2":
            model = torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0)
            model.classifier[0] = nn.Identity()
        else:
            model = getattr(torchvision.models, name)(num_classes=10)
        gen = torch.Generator().manual_seed(42)
        return model, torch.rand(batch, 3, 64, 64, generator=gen), torch.randint(
            0, 10, (batch,), generator=gen)
    from arch_models import distinct_layer_norms
    if name == "vit":
        torch.manual_seed(8)
        model = SmallViT()
        distinct_layer_norms(model)
        gen = torch.Generator().manual_seed(43)
        return model, torch.rand(batch, 3, 32, 32, generator=gen), torch.randint(
            0, 10, (batch,), generator=gen)
    if name == "gpt2":
        from arch_models import make_gpt
        model, x, y = make_gpt(batch, seq=128, vocab=50257, embed=768, heads=12, layers=12)
        distinct_layer_norms(model)
        return model, x, y
    raise ValueError(name)


def _vit_class():
    import torch
    from torch import nn

    class _SmallViT(nn.Module):
        """ViT (Dosovitskiy et al. 2021) at ViT-Tiny width, 6 layers, on 32x32
        images: Conv2d patch embedding, class token, learned positions,
        pre-LayerNorm encoder layers with GELU MLPs, LayerNorm + linear head
        on the class token."""

        def __init__(self, image=32, patch=4, dim=192, depth=6, heads=3, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, dim, patch, stride=patch)
            tokens = (image // patch) ** 2 + 1
            self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
            self.layers = nn.ModuleList([
                nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.patch(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x[:, 0]))
    return _SmallViT


def SmallViT():  # noqa: N802 (a class made on demand: torch is imported late)
    return _vit_class()()


def blas_info(threads):
    """The BLAS this process's torch uses: library paths from /proc/self/maps,
    OpenBLAS's config string and threads, and a 1024^2 matmul's GFLOP/s."""
    import torch
    a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
    a @ b
    times = []
    for _ in range(3):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f
                       if re.search(r"/lib(open)?blas[^/]*\.so", line)})
    config = None
    for lib in libs:
        if "openblas" in lib:
            try:
                so = ctypes.CDLL(lib)
                so.openblas_get_config.restype = ctypes.c_char_p
                so.openblas_get_corename.restype = ctypes.c_char_p
                # The config names the build's base target; the core name is
                # the kernel set DYNAMIC_ARCH chose for this CPU.
                config = f"{so.openblas_get_config().decode()}; core " \
                         f"{so.openblas_get_corename().decode()}, " \
                         f"{so.openblas_get_num_threads()} threads"
            except OSError:
                pass
    return {"libs": [os.path.realpath(x) for x in libs], "openblas": config,
            "matmul_gflops": 2 * 1024 ** 3 / min(times) / 1e9,
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "blas_info": re.search(r"BLAS_INFO=(\w+)", torch.__config__.show()).group(1)}


def torch_child(args):
    """PyTorch side of one model (runs in its own process, see run_torch)."""
    import torch
    torch.set_num_threads(args.threads)
    spec = MODELS[args.torch_child]
    model, x, y = build(args.torch_child)
    model.train()
    times, losses = timed_steps(args, spec, model, model, x, y)
    print(json.dumps({"times": times, "losses": losses, "blas": blas_info(args.threads),
                      "profile": torch_profile(spec, model, x, y)}))


# Where a step's time goes, in groups both sides can name. PyTorch's ops by
# the names torch.profiler gives them (the outermost op of each group: its
# total time includes what it calls), dlrt's from its trace (library calls by
# name, kernels by the op name after `<function>_k<N>_`).
TORCH_GROUPS = {
    "conv forward": ("aten::convolution",),
    "conv backward": ("aten::convolution_backward",),
    "gemm": ("aten::addmm", "aten::mm", "aten::bmm"),
    "pool forward": ("aten::max_pool2d_with_indices", "aten::avg_pool2d",
                     "aten::adaptive_avg_pool2d"),
    "pool backward": ("aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward",
                      "aten::_adaptive_avg_pool2d_backward"),
}
GROUPS = list(TORCH_GROUPS) + ["optimizer", "rest"]


def dlrt_group(cat, name):
    """The group of one dlrt trace event (category |cat|, name |name|) and
    its short name (the library call, or the kernel's op name)."""
    if cat == "library":
        short = name
        group = ("conv forward" if name.startswith("conv2d_forward") else
                 "conv backward" if name.startswith("conv2d_backward") else
                 "gemm" if name.startswith("gemm") else "rest")
        return group, short
    short = re.sub(r"^.*?_k\d+_", "", name)
    if "pool" in short:
        group = "pool backward" if "grad" in short else "pool forward"
    elif "update" in short:
        group = "optimizer"
    else:
        group = "rest"
    return group, short


def torch_profile(spec, model, x, y):
    """One more training step of |model| under torch.profiler: seconds per
    group of TORCH_GROUPS, "optimizer" (Optimizer.step), "step" (the
    profiled step's wall time) and "rest" (step minus the groups)."""
    from torch.profiler import ProfilerActivity, profile
    opt = make_optimizer(spec, model.parameters())
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t = time.perf_counter()
        torch_step(opt, model, x, y).item()
        wall = time.perf_counter() - t
    totals = {e.key: e.cpu_time_total * 1e-6 for e in prof.key_averages()}
    out = {g: sum(totals.get(k, 0.0) for k in keys) for g, keys in TORCH_GROUPS.items()}
    out["optimizer"] = sum(v for k, v in totals.items() if k.startswith("Optimizer.step"))
    out["step"] = wall
    out["rest"] = max(0.0, wall - sum(out[g] for g in GROUPS if g != "rest"))
    return out


def make_optimizer(spec, params):
    import torch
    if spec["opt"] == "adam":
        return torch.optim.Adam(params, lr=spec["lr"])
    if spec["opt"] == "adamw":
        return torch.optim.AdamW(params, lr=spec["lr"])
    return torch.optim.SGD(params, lr=spec["lr"], momentum=spec.get("momentum", 0.0))


def torch_step(opt, step_model, x, y):
    """One PyTorch training step of |step_model| (the model itself, or
    torch.compile of it) on the batch (x, y): zero_grad, forward,
    cross-entropy, backward and the optimizer's step; returns the loss
    tensor."""
    import torch
    opt.zero_grad()
    logits = step_model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             y.reshape(-1))
    loss.backward()
    opt.step()
    return loss


def timed_steps(args, spec, model, step_model, x, y):
    """(seconds per step, losses) of --warmup + --steps training steps of
    |model| (its optimizer from |spec|), the forward run by |step_model|
    (the model itself, or torch.compile of it): zero_grad, forward,
    cross-entropy, backward, step and loss.item() each."""
    opt = make_optimizer(spec, model.parameters())
    times, losses = [], []
    for _ in range(args.warmup + args.steps):
        t = time.perf_counter()
        losses.append(torch_step(opt, step_model, x, y).item())
        times.append(time.perf_counter() - t)
    return times, losses


def run(cmd, env=None, timeout=None):
    """(rc, combined output, wall seconds) of |cmd|."""
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=timeout)
    return r.returncode, r.stdout, time.perf_counter() - t


def thread_env(args, baseline=False):
    """The environment of dlrt's commands, or with |baseline| PyTorch's: the
    same threads and OpenMP wait policy on both sides; PyTorch's without the
    inherited OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, with the core type chosen
    by pick_coretype (if any)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY=args.omp_wait_policy)
    if baseline:
        for k in BLAS_ENV:
            env.pop(k, None)
        if args.coretype:
            env["OPENBLAS_CORETYPE"] = args.coretype
    return env


PROBE = """
import ctypes, json, re, time, torch
a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
a @ b
best = 1e9
for _ in range(3):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
core = None
for line in open("/proc/self/maps"):
    if re.search(r"/libopenblas[^/]*[.]so", line):
        so = ctypes.CDLL(line.split()[-1])
        so.openblas_get_corename.restype = ctypes.c_char_p
        core = so.openblas_get_corename().decode()
        break
print(json.dumps({"gflops": 2 * 1024 ** 3 / best / 1e9, "core": core}))
"""


def pick_coretype(args):
    """OpenBLAS's kernel set for the baseline. OpenBLAS 0.3.21's DYNAMIC_ARCH
    does not know every CPU (on this machine's Xeon, family 6 model 207, it
    falls back to Prescott's SSE3 kernels at a fraction of the speed), so the
    autodetected choice, SkylakeX (AVX-512) and Haswell (AVX2) are timed on a
    1024^2 matmul in PyTorch and the fastest is used: the baseline runs at
    its best. Returns (OPENBLAS_CORETYPE or None for autodetect, lines)."""
    lines, best = [], (0.0, None)
    for ct in (None, "SkylakeX", "Haswell"):
        env = dict(thread_env(args, baseline=True))
        env.pop("OPENBLAS_CORETYPE", None)
        if ct:
            env["OPENBLAS_CORETYPE"] = ct
        rc, out, _ = run([sys.executable, "-c", PROBE], env=env)
        if rc != 0:
            lines.append(f"{ct or 'autodetect'}: failed")
            continue
        r = json.loads(out.strip().splitlines()[-1])
        if r["core"] is None:
            return None, ["PyTorch has no OpenBLAS loaded: no core type to choose"]
        lines.append(f"OPENBLAS_CORETYPE={ct or '(unset: autodetect)'} -> core {r['core']}, "
                     f"{r['gflops']:.1f} GFLOP/s")
        if r["gflops"] > best[0] * 1.05:  # autodetect unless clearly slower
            best = (r["gflops"], ct)
    return best[1], lines


def run_torch(args, name, steps):
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-child", name,
           "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--steps", str(steps)]
    rc, out, _ = run(cmd, env=thread_env(args, baseline=True))
    if rc != 0:
        raise RuntimeError(f"PyTorch exit status {rc}:\n{out[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def export(name, w, peers=False):
    """Exports |name| in training mode; (onnx path, batch npz path). With
    |peers| also its weights and buffers (state_dict, {name}-weights.npz) for
    the peers, and the eval-mode model ({name}-infer.onnx) with its input
    ({name}-inputs.npz) for the inference comparison."""
    import numpy as np
    from architectures import export as export_onnx
    model, x, y = build(name)
    onnx_path, batch = w(f"{name}.onnx"), w(f"{name}-batch.npz")
    if peers:
        np.savez(w(f"{name}-weights.npz"),
                 **{k: v.detach().numpy() for k, v in model.state_dict().items()})
        export_onnx(model, x, w(f"{name}-infer.onnx"), training=False)
        np.savez(w(f"{name}-inputs.npz"), input=x.numpy())
    export_onnx(model, x, onnx_path, training=True)
    np.savez(batch, input=x.numpy(), labels=y.numpy())
    return onnx_path, batch


def compile_dlc(args, name, onnx_path, pkg, cache, train=True):
    """Wall seconds of `dlc` compiling |onnx_path| to |pkg| with the compile
    cache in |cache|; for training (--train with |name|'s optimizer) or, with
    |train| False, for inference."""
    spec = MODELS[name]
    cmd = [args.dlc, onnx_path, "--batch-size", str(spec["batch"]), "--quiet",
           "--cache-dir", cache, "-o", pkg]
    if train:
        cmd += ["--train", "--loss", "softmax-cross-entropy", "--optimizer", spec["opt"],
                "--lr", repr(spec["lr"])]
        if "momentum" in spec:
            cmd += ["--momentum", repr(spec["momentum"])]
    rc, out, secs = run(cmd)
    if rc != 0:
        lines = [ln for ln in out.splitlines() if "error" in ln] or out.splitlines()[-1:]
        raise RuntimeError("dlc: " + (lines[0] if lines else f"exit {rc}"))
    return secs


def package_counts(args, pkg):
    """(kernel launches, library calls text) of train_step from dlrt info."""
    rc, out, _ = run([args.dlrt, "info", pkg])
    part = out[out.find("function train_step:"):]
    k = re.search(r"kernel launches: (\d+)", part)
    lib = re.search(r"library calls: (\d+)(?: \(([^)]*)\))?", part)
    return (int(k.group(1)) if k else None,
            (f"{lib.group(1)}" + (f" ({lib.group(2)})" if lib.group(2) else "")) if lib else "?")


def run_dlrt(args, pkg, batch, steps, w, name):
    """(median step seconds, first loss, kernels and library calls per step
    counted in the trace) of `dlrt train` on the host."""
    trace, log = w(f"{name}-trace.json"), w(f"{name}.jsonl")
    for p in (trace, log):
        if os.path.exists(p):
            os.remove(p)
    rc, out, _ = run([args.dlrt, "train", pkg, "--data", batch, "--no-shuffle",
                      "--steps", str(args.warmup + steps), "--device", "host", "--quiet",
                      "--trace", trace, "--log-jsonl", log], env=thread_env(args))
    if rc != 0:
        raise RuntimeError(f"dlrt train exit status {rc}:\n{out[-2000:]}")
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    starts = sorted(e["ts"] for e in events if e["cat"] == "step")
    last = max(e["ts"] + e["dur"] for e in events if e["cat"] == "step")
    bounds = starts + [last]
    # Intervals between consecutive step starts (the last: to its end).
    intervals = [(bounds[i + 1] - bounds[i]) * 1e-6 for i in range(args.warmup, len(starts))]
    lo = starts[-1]
    per_step = {c: sum(1 for e in events if e["cat"] == c and e["ts"] >= lo)
                for c in ("kernel", "library")}
    # Where the measured steps' time goes: seconds per step of each group
    # and of each library call / kernel op name, from the events inside them.
    first = starts[args.warmup] if len(starts) > args.warmup else starts[0]
    measured = len(starts) - starts.index(first)
    groups, names = {g: 0.0 for g in GROUPS}, {}
    for e in events:
        if e["cat"] in ("kernel", "library") and e["ts"] >= first:
            g, short = dlrt_group(e["cat"], e["name"])
            groups[g] += e["dur"] * 1e-6 / measured
            key = (g, short)
            names[key] = names.get(key, 0.0) + e["dur"] * 1e-6 / measured
    per_step["groups"] = groups
    per_step["top"] = [[g, n, t] for (g, n), t in
                       sorted(names.items(), key=lambda kv: -kv[1])[:12]]
    with open(log) as f:
        loss1 = json.loads(f.readline())["loss"]
    return intervals, loss1, per_step


def startup(args, w):
    """Start-up of the bundled MLP's package (issue 15 item 5)."""
    import numpy as np
    pkg = w("startup-mlp.dlcp")
    rc, out, _ = run([args.dlc, os.path.join(ROOT, "examples/mlp/mlp.onnx"), "--train",
                      "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "64",
                      "--quiet", "-o", pkg])
    if rc != 0:
        raise RuntimeError(out)
    gen = np.random.default_rng(5)
    data = w("startup-batch.npz")
    np.savez(data, input=gen.random((64, 1, 28, 28), dtype=np.float32),
             labels=gen.integers(0, 10, 64))
    env = thread_env(args)
    trace = w("startup-trace.json")
    res = {}
    # Each run traced, so that its own first step is known: the rest of its
    # wall time is process start, package load, data loading and exit.
    for key, cmd in (("version", [args.dlrt, "--help"]),
                     ("1 step", [args.dlrt, "train", pkg, "--data", data, "--steps", "1",
                                 "--device", "host", "--quiet", "--trace", trace]),
                     ("5 steps", [args.dlrt, "train", pkg, "--data", data, "--steps", "5",
                                  "--device", "host", "--quiet", "--trace", trace])):
        walls, firsts, laters = [], [], []
        for _ in range(5):
            rc, out, secs = run(cmd, env=env)
            if rc != 0:
                raise RuntimeError(out)
            walls.append(secs)
            if key != "version":
                with open(trace) as f:
                    steps = sorted((e["ts"], e["dur"]) for e in json.load(f)["traceEvents"]
                                   if e.get("ph") == "X" and e.get("cat") == "step")
                firsts.append(steps[0][1] * 1e-6)
                laters += [d * 1e-6 for _, d in steps[1:]]
        res[key] = statistics.median(walls)
        if key == "1 step":
            # The first train_step pays for oneDNN's primitive creation and JIT.
            res["first step"] = statistics.median(firsts)
            res["outside steps"] = statistics.median(w_ - f for w_, f in zip(walls, firsts))
        if key == "5 steps":
            res["later steps"] = statistics.median(laters)
    return res


PEER_PROBE = """
import json, re, time, torch, torchvision, onnxruntime, numpy
a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
a @ b
best = 1e9
for _ in range(3):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
par = torch.__config__.parallel_info()
mkl = re.search(r"Math Kernel Library Version ([^\\n]*?)(?: for |\\n)", par)
dnn = re.search(r"MKL-DNN (v[0-9.]+)", par)
# CUDA's libraries (cuBLAS among them) load with torch and go unused here.
libs = sorted({line.split()[-1] for line in open("/proc/self/maps")
               if re.search(r"/lib[^/]*(blas|mkl|omp)[^/]*[.]so", line)
               and "/nvidia/" not in line})
print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__,
                  "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__,
                  "blas_info": re.search(r"BLAS_INFO=(\\w+)", torch.__config__.show()).group(1),
                  "mkl": mkl.group(1) if mkl else None, "onednn": dnn.group(1) if dnn else None,
                  "libs": libs, "threads": torch.get_num_threads(),
                  "matmul_gflops": 2 * 1024 ** 3 / best / 1e9}))
"""


def setup_peers(args):
    """The virtualenv's Python with PEER_PINS installed, made or reused in
    --peers-venv; (python or None, lines to print, probe dict or reason)."""
    venv = os.path.expanduser(args.peers_venv)
    python = os.path.join(venv, "bin", "python")
    env = thread_env(args, baseline=True)
    lines = []

    def probe():
        if not os.path.exists(python):
            return None
        try:
            rc, out, _ = run([python, "-c", PEER_PROBE], env=env, timeout=300)
        except subprocess.TimeoutExpired:
            return None
        if rc != 0:
            return None
        r = json.loads(out.strip().splitlines()[-1])
        have = {k: r[k].split("+")[0] for k in PEER_PINS}
        return r if have == PEER_PINS else None

    info = probe()
    if info:
        lines.append(f"reusing the virtualenv {venv}")
    else:
        t = time.perf_counter()
        if not os.path.exists(python):
            rc, out, _ = run([sys.executable, "-m", "venv", venv])
            if rc != 0:
                return None, lines, f"python3 -m venv failed: {first_error(out)}"
        pins = [f"{k}=={v}" for k, v in PEER_PINS.items()]
        print(f"  peers: pip install {' '.join(pins)} into {venv} ...", flush=True)
        rc, out, _ = run([python, "-m", "pip", "install", "--retries", "2", "--timeout", "60",
                          *pins])
        if rc != 0:
            errs = [ln for ln in out.splitlines() if ln.startswith("ERROR")]
            return None, lines, ("pip could not install them (PyPI unreachable?): "
                                 + (errs[0] if errs else first_error(out))[:300])
        rc, out, _ = run(["du", "-sh", venv])
        lines.append(f"installed into {venv} in {time.perf_counter() - t:.0f} s, "
                     f"{out.split()[0] if rc == 0 else '?'} on disk")
        info = probe()
        if not info:
            return None, lines, "installed, but the virtualenv's torch/onnxruntime do not import"
    return python, lines, info


def peer_child(args):
    """One peer of one model, run by the virtualenv's Python (see run_peer):
    --peer-mode eager or compile trains as torch_child does, from the
    weights and batch the main process saved; ort times ONNX Runtime on the
    eval-mode model. Prints one JSON line."""
    import numpy as np
    name, mode = args.peer_child, args.peer_mode
    w = lambda f: os.path.join(args.workdir, f)  # noqa: E731
    if mode == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if args.omp_wait_policy.upper() == "PASSIVE":
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        t = time.perf_counter()
        sess = ort.InferenceSession(w(f"{name}-infer.onnx"), so,
                                    providers=["CPUExecutionProvider"])
        create = time.perf_counter() - t
        x = np.load(w(f"{name}-inputs.npz"))["input"]
        feed = {sess.get_inputs()[0].name: x}
        times, out = [], None
        for _ in range(2 + args.steps):
            t = time.perf_counter()
            res = sess.run(None, feed)
            times.append(time.perf_counter() - t)
            out = res[0] if out is None else out
        np.save(w(f"{name}-ort-out.npy"), out)
        print(json.dumps({"times": times[2:], "create_s": create}))
        return
    import torch
    torch.set_num_threads(args.threads)
    spec = MODELS[name]
    model, _, _ = build(name)
    weights = np.load(w(f"{name}-weights.npz"))
    model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files})
    data = np.load(w(f"{name}-batch.npz"))
    x, y = torch.from_numpy(data["input"]), torch.from_numpy(data["labels"])
    model.train()
    step_model = torch.compile(model) if mode == "compile" else model
    times, losses = timed_steps(args, spec, model, step_model, x, y)
    res = {"times": times, "losses": losses}
    if mode == "compile":
        from torch._dynamo.utils import counters
        res["graph_breaks"] = sum(counters["graph_break"].values())
        res["graphs"] = counters["stats"].get("unique_graphs", None)
    print(json.dumps(res))


def run_peer(args, python, name, mode, steps):
    """Runs peer_child for |name| in |mode| under |python| (the virtualenv's)
    with PyTorch's environment; its JSON."""
    env = thread_env(args, baseline=True)
    inductor = os.path.join(args.workdir, f"{name}-inductor-cache")
    shutil.rmtree(inductor, ignore_errors=True)
    env["TORCHINDUCTOR_CACHE_DIR"] = inductor  # empty: a cold torch.compile
    env.pop("PYTHONPATH", None)
    cmd = [python, os.path.abspath(__file__), "--peer-child", name, "--peer-mode", mode,
           "--workdir", args.workdir, "--threads", str(args.threads),
           "--warmup", str(args.warmup), "--steps", str(steps),
           "--omp-wait-policy", args.omp_wait_policy]
    try:
        rc, out, secs = run(cmd, env=env, timeout=args.peer_timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{mode}: timed out after {args.peer_timeout} s (--peer-timeout)")
    if rc != 0:
        raise RuntimeError(f"{mode} exit status {rc}:\n{out[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["wall_s"] = secs
    return res


def dlrt_forward(args, name, pkg, w, repeat):
    """(median seconds of `dlrt run --repeat`, first output array) on the host."""
    import numpy as np
    out = w(f"{name}-dlrt-out.npz")
    rc, text, _ = run([args.dlrt, "run", pkg, "--inputs", w(f"{name}-inputs.npz"),
                       "--outputs", out, "--device", "host", "--repeat", str(repeat)],
                      env=thread_env(args))
    if rc != 0:
        raise RuntimeError(f"dlrt run exit status {rc}:\n{text[-2000:]}")
    m = re.search(r"forward: \d+ runs, median ([0-9.]+) ms, fastest ([0-9.]+) ms", text)
    if not m:
        raise RuntimeError(f"dlrt run printed no forward times:\n{text[-500:]}")
    with np.load(out) as f:
        first = f[f.files[0]]
    return float(m.group(1)) * 1e-3, float(m.group(2)) * 1e-3, first


def peers_row(args, python, name, row, steps, w):
    """Fills |row|'s peer_* fields; raises on the first failure (the caller
    records it), after filling what it could."""
    import numpy as np
    errors = []
    for mode in ("eager", "compile"):
        try:
            r = run_peer(args, python, name, mode, steps)
            row[f"peer_{mode}_steps_s"] = r["times"][args.warmup:]
            row[f"peer_{mode}_loss1"] = r["losses"][0]
            ref = row.get("dlrt_loss1", row.get("torch_loss1"))
            if ref is not None:
                row[f"peer_{mode}_loss_rel"] = abs(r["losses"][0] - ref) / abs(ref)
            if mode == "compile":
                # The first step compiles forward and backward (Dynamo, AOT
                # Autograd, Inductor, the C++ compiler) and then runs.
                row["peer_compile_s"] = r["times"][0] - statistics.median(
                    row["peer_compile_steps_s"])
                row["peer_graph_breaks"] = r.get("graph_breaks")
        except Exception as e:
            errors.append(first_error(e))
            row[f"peer_{mode}_error"] = errors[-1]
    try:
        pkg, cache = w(f"{name}-infer.dlcp"), w(f"{name}-dlc-cache")
        row["infer_compile_s"] = compile_dlc(args, name, w(f"{name}-infer.onnx"), pkg, cache,
                                             train=False)
        repeat = max(5, steps)
        row["dlrt_run_s"], row["dlrt_run_min_s"], ours = dlrt_forward(args, name, pkg, w, repeat)
        r = run_peer(args, python, name, "ort", repeat)
        row["ort_steps_s"] = r["times"]
        row["ort_s"] = statistics.median(r["times"])
        theirs = np.load(w(f"{name}-ort-out.npy"))
        if ours.shape != theirs.shape:
            raise RuntimeError(f"output shapes differ: dlrt {ours.shape}, ORT {theirs.shape}")
        row["out_rel"] = float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))
    except Exception as e:
        errors.append(first_error(e))
        row["ort_error"] = errors[-1]
    return errors


def first_error(e):
    """The line of |e|'s text that says what failed: the first naming an
    error, else its last line."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    named = [ln for ln in lines if re.search(r"error|Error|unsupported", ln)]
    return (named[0] if named else lines[-1] if lines else "failed")[:300]


def slower_because(r):
    """For a row where dlrt's median step is above PyTorch's: the groups of
    GROUPS where dlrt spends the most time more than PyTorch does, each as
    'share of dlrt's step, dlrt / PyTorch', with the largest library call or
    kernel op of the group; from this run's dlrt trace and PyTorch profile.
    None where dlrt is not slower or a side was not measured."""
    prof, tr = r.get("torch_profile"), r.get("traced") or {}
    if "dlrt_s" not in r or "torch_s" not in r or not prof or "groups" not in tr:
        return None
    if r["dlrt_s"] <= r["torch_s"]:
        return None
    ours = dict(tr["groups"])
    # dlrt's rest: kernels outside the groups and the time between calls.
    ours["rest"] = max(0.0, r["dlrt_s"] - sum(v for g, v in ours.items() if g != "rest"))
    # PyTorch's profiled step runs slower than its timed ones (the profiler's
    # own cost): its groups are scaled to its median step.
    scale = r["torch_s"] / prof["step"] if prof.get("step") else 1.0
    theirs = {g: prof.get(g, 0.0) * scale for g in GROUPS}
    excess = sorted(GROUPS, key=lambda g: -(ours[g] - theirs[g]))
    parts = []
    for g in excess[:2]:
        if ours[g] - theirs[g] <= 0.02 * r["dlrt_s"] and parts:
            break
        top = [n for gg, n, _ in tr["top"] if gg == g]
        ratio = (f"{ours[g] / theirs[g]:.1f}x PyTorch's" if theirs[g] > 0
                 else "PyTorch: none")
        parts.append(f"{g}{' (' + ', '.join(top[:3]) + ')' if top else ''} "
                     f"{ours[g] / r['dlrt_s']:.0%} of the step, {fmt_ms(ours[g])} ms, "
                     f"{ratio} ({fmt_ms(theirs[g])} ms)")
    return "; ".join(parts)


def fmt_ms(s):
    if s is None:
        return "-"
    return f"{s * 1e3:.2f}" if s < 1e-3 else f"{s * 1e3:.1f}" if s < 10 else f"{s * 1e3:.0f}"


def fmt_steps(r, key):
    """'median (min)' ms of the measured steps of row |r|'s |key| side."""
    steps = r.get(f"{key}_steps_s")
    return f"{fmt_ms(statistics.median(steps))} ({fmt_ms(min(steps))})" if steps else "-"


def print_peers(args, rows, python, info):
    """The peers' table (--peers)."""
    print(f"\npeers: PyTorch {info['torch']} eager and torch.compile (Inductor) training "
          "steps, ms after warm-up, median (min); dlrt's ratios of the medians; compile s: "
          "dlc --train cold, torch.compile's first step minus a later one (cold Inductor "
          "cache); loss1: first-step loss vs dlrt's, relative; inference: `dlrt run "
          "--repeat` median (fastest) ms vs ONNX Runtime "
          f"{info['onnxruntime']} median (min) ms on the eval-mode model, output: max "
          "|dlrt - ORT| / max |ORT|" if python else f"\npeers: not run: {info}")
    if not python:
        return
    print("| model | batch | dlc compile s | torch.compile compile s | dlrt ms | eager ms "
          "| compiled ms | dlrt / eager | dlrt / compiled | loss1 rel diff eager, compiled "
          "| dlrt run ms | ORT ms | dlrt run / ORT | output rel diff | load avg |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: "
          "| ---: | ---: | ---: |")
    for r in rows:
        def cell(key):
            err = r.get(f"peer_{key}_error")
            return f"failed: {err}" if err else fmt_steps(r, f"peer_{key}")

        def ratio(key):
            steps = r.get(f"peer_{key}_steps_s")
            return (f"{r['dlrt_s'] / statistics.median(steps):.2f}x"
                    if steps and "dlrt_s" in r else "-")

        def rel(key, tol):
            v = r.get(key)
            return "-" if v is None else f"{v:.1e}" + ("" if v <= tol else " MISMATCH")
        comp = f"{r['compile_s']:.1f}" if "compile_s" in r else "-"
        tc = f"{r['peer_compile_s']:.1f}" if "peer_compile_s" in r else "-"
        if r.get("peer_graph_breaks"):
            tc += f" ({r['peer_graph_breaks']} graph breaks)"
        dl = fmt_steps(r, "dlrt") if "error" not in r else "failed"
        if "ort_error" in r:
            run_ms, ort_ms, ort_ratio, out = f"failed: {r['ort_error']}", "-", "-", "-"
        else:
            run_ms = f"{fmt_ms(r['dlrt_run_s'])} ({fmt_ms(r['dlrt_run_min_s'])})"
            ort_ms = fmt_steps(r, "ort")
            ort_ratio = f"{r['dlrt_run_s'] / r['ort_s']:.2f}x"
            out = rel("out_rel", args.out_tol)
        print(f"| {r['model']} | {r['batch']} | {comp} | {tc} | {dl} | {cell('eager')} "
              f"| {cell('compile')} | {ratio('eager')} | {ratio('compile')} "
              f"| {rel('peer_eager_loss_rel', args.loss_tol)}, "
              f"{rel('peer_compile_loss_rel', args.loss_tol)} | {run_ms} | {ort_ms} "
              f"| {ort_ratio} | {out} | {r['load']:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dlc")
    ap.add_argument("--dlrt")
    ap.add_argument("--workdir", default="/tmp/dlc-host-steps")
    ap.add_argument("--models", default=None, help=f"comma list of {','.join(MODELS)}")
    ap.add_argument("--quick", action="store_true", help="mlp,cnn; 3 measured steps")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=None, help="measured steps (default per model)")
    ap.add_argument("--loss-tol", type=float, default=1e-4,
                    help="first-step loss agreement, relative (fp32, same weights and batch)")
    ap.add_argument("--no-startup", action="store_true")
    ap.add_argument("--allow-reference-blas", action="store_true")
    ap.add_argument("--omp-wait-policy", default=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
                    help="OMP_WAIT_POLICY of both sides (default PASSIVE, dlrt's own default)")
    ap.add_argument("--coretype", default="auto",
                    help="OPENBLAS_CORETYPE of the baseline: auto (time the candidates and "
                         "take the fastest), '' for OpenBLAS's autodetection, or a name")
    ap.add_argument("--out-tol", type=float, default=1e-4,
                    help="--peers: dlrt run vs ONNX Runtime output agreement, max abs "
                         "difference relative to ORT's max abs output (fp32)")
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    ap.add_argument("--peers", action="store_true",
                    help="add PyTorch 2.x eager, torch.compile and ONNX Runtime columns "
                         "(installs them from PyPI into --peers-venv; not for the test suite)")
    ap.add_argument("--peers-venv", default="~/.cache/dlc-bench-peers/venv",
                    help="the peers' virtualenv, made here or reused")
    ap.add_argument("--peer-timeout", type=float, default=1800,
                    help="seconds one peer run of one model may take")
    ap.add_argument("--torch-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--peer-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--peer-mode", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_child:
        return torch_child(args)
    if args.peer_child:
        return peer_child(args)
    if not args.dlc or not args.dlrt:
        ap.error("--dlc and --dlrt are required")
    names = args.models.split(",") if args.models else (QUICK if args.quick else list(MODELS))
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model '{n}' (known: {', '.join(MODELS)})")
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    t0 = time.time()
    print(f"host_steps: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, {args.threads} threads on both sides "
          f"(OMP_NUM_THREADS={args.threads}, OPENBLAS_NUM_THREADS={args.threads}, "
          f"torch.set_num_threads({args.threads})); {args.warmup} warm-up steps")
    print(f"  OMP_WAIT_POLICY={args.omp_wait_policy} on both sides (dlrt's default: with "
          f"the default spinning, PyTorch's steps on a busy 2-core machine were 10-40x slower)")
    removed = [k for k in BLAS_ENV if k in os.environ]
    if removed:
        print(f"  removed from PyTorch's environment only: {', '.join(removed)}")
    if args.coretype == "auto":
        args.coretype, lines = pick_coretype(args)
        for line in lines:
            print(f"  OpenBLAS probe: {line}")
    print(f"  PyTorch runs with OPENBLAS_CORETYPE={args.coretype or '(unset)'}", flush=True)
    peer_python, peer_info = None, None
    if args.peers:
        peer_python, lines, peer_info = setup_peers(args)
        for line in lines:
            print(f"  peers: {line}")
        if peer_python:
            p = peer_info
            print(f"  peers: PyTorch {p['torch']} (BLAS_INFO={p['blas_info']}, MKL "
                  f"{p['mkl']}, oneDNN {p['onednn']}), torchvision {p['torchvision']}, "
                  f"ONNX Runtime {p['onnxruntime']}, NumPy {p['numpy']}; "
                  f"{p['threads']} threads; BLAS/OpenMP libraries loaded: "
                  f"{', '.join(p['libs']) or 'none (linked in)'}; 1024x1024 fp32 matmul: "
                  f"{p['matmul_gflops']:.1f} GFLOP/s", flush=True)
        else:
            print(f"  peers: not run: {peer_info}", flush=True)

    rows, failed, blas = [], False, None
    for name in names:
        spec = MODELS[name]
        steps = args.steps or (3 if args.quick else spec["steps"])
        row = {"model": name, "batch": spec["batch"], "optimizer": spec["opt"],
               "load": os.getloadavg()[0]}
        rows.append(row)
        print(f"{name}: batch {spec['batch']}, {spec['opt']}, {steps} measured steps "
              f"(load average {row['load']:.2f})", flush=True)
        try:
            onnx_path, batch = export(name, w, peers=bool(peer_python))
            pkg, cache = w(f"{name}.dlcp"), w(f"{name}-dlc-cache")
            shutil.rmtree(cache, ignore_errors=True)
            row["compile_s"] = compile_dlc(args, name, onnx_path, pkg, cache)
            row["compile_warm_s"] = compile_dlc(args, name, onnx_path, pkg, cache)
            row["kernels"], row["library"] = package_counts(args, pkg)
            row["dlrt_steps_s"], row["dlrt_loss1"], row["traced"] = run_dlrt(
                args, pkg, batch, steps, w, name)
            row["dlrt_s"] = statistics.median(row["dlrt_steps_s"])
            os.remove(onnx_path)
        except Exception as e:  # the table names the failure
            row["error"] = first_error(e)
            failed = True
            print(f"  {name}: {row['error']}", flush=True)
        try:
            ref = run_torch(args, name, steps)
            blas = ref["blas"]
            row["torch_steps_s"] = ref["times"][args.warmup:]
            row["torch_s"] = statistics.median(row["torch_steps_s"])
            row["torch_loss1"] = ref["losses"][0]
            row["torch_profile"] = ref.get("profile")
        except Exception as e:
            row["torch_error"] = first_error(e)
            failed = True
            print(f"  {name}: {row['torch_error']}", flush=True)
        if "dlrt_loss1" in row and "torch_loss1" in row:
            row["loss_rel"] = abs(row["dlrt_loss1"] - row["torch_loss1"]) / abs(
                row["torch_loss1"])
            if not row["loss_rel"] <= args.loss_tol:
                failed = True
        if peer_python:
            for err in peers_row(args, peer_python, name, row, steps, w):
                failed = True
                print(f"  {name} peers: {err}", flush=True)
            for k in ("peer_eager_loss_rel", "peer_compile_loss_rel"):
                if k in row and not row[k] <= args.loss_tol:
                    failed = True
            if "out_rel" in row and not row["out_rel"] <= args.out_tol:
                failed = True
        print(f"  {json.dumps(row)}", flush=True)
        if blas and not args.allow_reference_blas and not any(
                "openblas" in x for x in blas["libs"]):
            print(f"host_steps: PyTorch runs on the reference BLAS ({blas['libs']}): install "
                  f"libopenblas0-pthread (tools/setup.sh) or pass --allow-reference-blas")
            sys.exit(1)

    if blas:
        print(f"\nPyTorch {blas['torch']} (BLAS_INFO={blas['blas_info']}), "
              f"{blas['torch_threads']} threads; BLAS loaded: {', '.join(blas['libs'])}"
              + (f" ({blas['openblas']})" if blas["openblas"] else "")
              + f"; 1024x1024 fp32 matmul: {blas['matmul_gflops']:.1f} GFLOP/s")
    print("\nms per training step after warm-up: median (min) of the measured steps; "
          "ratio of the medians (of the minima); kernels and library calls per "
          "train_step (dlrt info); loss1: first-step losses, relative difference; load avg: "
          "1-minute load average before the model")
    print("slower because: where dlrt's median step is above PyTorch's, the (at most two) "
          "groups where dlrt spends the most time more than PyTorch: dlrt's time per step "
          "from its trace (its largest calls/kernels in parentheses), PyTorch's from "
          "torch.profiler on one more step, scaled to its median step; groups: "
          + ", ".join(GROUPS) + " (rest: other kernels and ops, and the time between them)")
    print("| model | batch | optimizer | dlc compile s cold (warm) | kernels | library calls "
          "| dlrt ms | PyTorch ms | dlrt / PyTorch | loss1 rel diff | load avg "
          "| slower because |")
    print("| --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        ratio = (f"{r['dlrt_s'] / r['torch_s']:.2f}x ("
                 f"{min(r['dlrt_steps_s']) / min(r['torch_steps_s']):.2f}x)"
                 if "dlrt_s" in r and "torch_s" in r else "-")
        rel = f"{r['loss_rel']:.1e}" if "loss_rel" in r else "-"
        if "loss_rel" in r and not r["loss_rel"] <= args.loss_tol:
            rel += " MISMATCH"
        dl = fmt_steps(r, "dlrt") if "error" not in r else f"failed: {r['error']}"
        tr = fmt_steps(r, "torch") if "torch_error" not in r else \
            f"failed: {r['torch_error']}"
        comp = f"{r['compile_s']:.1f} ({r['compile_warm_s']:.1f})" if "compile_s" in r else "-"
        print(f"| {r['model']} | {r['batch']} | {r['optimizer']} | {comp} "
              f"| {r.get('kernels', '-')} | {r.get('library', '-')} | {dl} | {tr} | {ratio} "
              f"| {rel} | {r['load']:.2f} | {slower_because(r) or '-'} |")

    if args.peers:
        print_peers(args, rows, peer_python, peer_info)

    if not args.no_startup:
        try:
            s = startup(args, w)
            print(f"\nstart-up, bundled MLP (batch 64, Adam), wall, median of 5: "
                  f"`dlrt --help` {fmt_ms(s['version'])} ms; `dlrt train --steps 1` "
                  f"(process start + package load + first step) {fmt_ms(s['1 step'])} ms; "
                  f"`--steps 5` {fmt_ms(s['5 steps'])} ms: the 1-step run is "
                  f"{s['1 step'] / s['5 steps']:.0%} of the 5-step run; from the runs' "
                  f"traces: the first train_step {fmt_ms(s['first step'])} ms, later ones "
                  f"{fmt_ms(s['later steps'])} ms, the rest of a 1-step run (process start, "
                  f"package load, data, exit) {fmt_ms(s['outside steps'])} ms")
            rows.append({"startup": s})
        except Exception as e:
            print(f"\nstart-up: failed: {e}")
            failed = True
    print(f"\nhost_steps: {time.time() - t0:.0f} s; {'FAIL' if failed else 'ok'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Rematerialization is exact and memory is predicted truthfully (issue 11).

For one model (--model mlp | cnn | gpt | resnet18), exported by PyTorch in
this script, trained with momentum SGD:
  - compiles the training step with `--remat none` and `--remat sqrt` and
    parses `dlc --stats`'s memory lines (a missing line fails the test);
  - asks for an impossible budget (--impossible-budget, default 1KiB) and
    checks dlc's one-line error (exit status 1, no package) naming the
    smallest reachable peak N: persistent + inputs + workspace < N <= none's
    peak, N <= sqrt's predicted peak (sqrt is a plan dlc reaches), and
    `--memory-budget N` compiles with a predicted peak <= N;
  - compiles with `--memory-budget B`, B = half of none's predicted peak (the
    issue's); its predicted peak must be <= B;
  - checks that sqrt and the budget plan lower the predicted peak and the
    arena, recompute something, and keep persistent and input bytes;
  - trains each package --steps steps (default 5) on one fixed batch with
    `dlrt train --no-shuffle --log-jsonl --save --memory-report`;
  - checks that every step's loss is bit-identical to none's (the JSONL
    text: dlrt prints an f32 loss with 9 significant digits, which round
    trips exactly) and that the final checkpoints are bit-identical (every
    persistent tensor: parameters, momentum, BatchNorm running statistics,
    the step counter that drives dropout);
  - checks memory: the budget run's measured peak (dlrt's memory report) is
    at most B, for every run the predicted peak is within --peak-tol (10%,
    the issue's bound) of the measured one, and the report's predicted
    figures equal `dlc --stats`'s;
  - prints a table of the runs.

Bit-identity is the right bound: recomputation evaluates the same kernels on
the same values, so any difference is a bug (a dropout mask drawn again from
another counter, BatchNorm running statistics updated twice, a recomputed
value read before it is written).

The models are sized so that held activations dominate the step's memory
and half of none's peak is reachable: a deep, narrow MLP (32 layers of 64
at batch 4096); a CNN with BatchNorm, models.py's with seven more
Conv+BatchNorm+ReLU blocks (models.py's own reaches only 86% of its peak);
arch_models.py's GPT with 4 layers, dropout 0.1 (13 Dropout modules:
embeddings, attention probabilities, attention and MLP outputs) and 32
tokens at batch 32; torchvision's ResNet-18 at batch 64 of 128x128.

ResNet-18's parameters and momentum buffers (89.5 MB) are persistent, and
its stem's backward needs its largest tensors (64x64x64 per sample) live at
once, so half of none's peak is reachable only where the activations are
most of the step: at batch 64 of 128x128 none plans 547.8 MB (arena 428.9
MB) and the smallest reachable peak is 270.4 MB (49%). It gets there
because max pooling's backward reads the argmax indices saved in the forward
(dlgraph.max_pool_indices) instead of its input when anything is recomputed
(docs/remat.md). At batch 8 of 64x64 the parameters alone are 72% of none's
peak.

With --device cuda (the CUDA stand-in, DLRT_CUDA_STANDIN) the same checks
hold on dlrt's CUDA path, where measured is the memory pool's reserved
high-water mark.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from arch_models import make_gpt, make_resnet18  # noqa: E402
from architectures import export  # noqa: E402
from safetensors_np import read_safetensors  # noqa: E402

# Per model: batch size (activations dominate the predicted peak at these
# sizes), learning rate (the 5 losses fall without diverging).
DEFAULT_BATCH = {"mlp": 4096, "cnn": 64, "gpt": 32, "resnet18": 64}
LR = {"mlp": 0.1, "cnn": 0.01, "gpt": 0.05, "resnet18": 0.01}
GPT_SEQ = 32
GPT_LAYERS = 4
GPT_DROPOUT = 0.1


def run(cmd, check=True):
    """Runs |cmd|; returns (exit status, stdout + stderr). With |check| a
    non-zero exit is a failure of the test."""
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        sys.exit(f"FAIL: exit status {r.returncode}: {' '.join(cmd)}\n{r.stdout}")
    return r.returncode, r.stdout


def make_deep_mlp():
    """A deep, narrow MLP on 32 features: 32 hidden layers of 64, so that at
    batch 4096 the held activations (1 MiB per layer) dwarf the parameters
    and momentum (~1 MB) and the input buffers (~0.5 MB each). A chain this
    long is where Chen's sqrt(n) checkpointing pays: `--remat sqrt` plans
    43% of none's peak."""
    torch.manual_seed(4)
    layers = [nn.Linear(32, 64), nn.ReLU()]
    for _ in range(31):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def make_deep_cnn():
    """models.py's CNN with seven more Conv+BatchNorm+ReLU blocks at 28x28.
    models.py's own CNN cannot reach half of its peak: its first block's
    backward alone needs about three 8x28x28 tensors live (1.6 MB each at
    batch 64), and its smallest reachable peak is 86% of none's. Here the
    held activations of eight blocks (about 4.8 MB each) dominate, and the
    smallest reachable peak is 47% of none's."""
    torch.manual_seed(2)
    layers = [nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()]
    for _ in range(7):
        layers += [nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU()]
    return nn.Sequential(
        *layers, nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def make(name, batch, image):
    """(model, x, y, export in training mode?) with seeded weights and batch."""
    if name == "gpt":
        model, x, y = make_gpt(batch, seq=GPT_SEQ, dropout=GPT_DROPOUT, layers=GPT_LAYERS)
        return model, x, y, True
    if name == "resnet18":
        model, _, _ = make_resnet18(batch)
        gen = torch.Generator().manual_seed(12)
        x = torch.rand(batch, 3, image, image, generator=gen)
        y = torch.randint(0, 10, (batch,), generator=gen)
        return model, x, y, True
    gen = torch.Generator().manual_seed(3)
    if name == "mlp":
        model = make_deep_mlp()
        x = torch.rand(batch, 32, generator=gen)
    else:
        model = make_deep_cnn()
        x = torch.rand(batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    return model, x, y, False


NUM = r"([\d,]+)"
# "N bytes (1.23 MiB) (persistent P + ...)": the human-readable size is
# optional.
BYTES = NUM + r" bytes(?: \([\d.]+ [KMG]?i?B\))?"
SPLIT = (r"\(persistent " + NUM + r" \+ inputs " + NUM + r" \+ arena " + NUM +
         r" \+ workspace " + NUM + r"\)")


def num(s):
    return int(s.replace(",", ""))


def parse_size(text):
    """Bytes of a --memory-budget SIZE as given (an integer, optionally with
    a KiB/MiB/GiB suffix) or as dlc echoes it ("1024 bytes (1.00 KiB)"), or
    None."""
    m = re.match(r"([\d.]+)\s*(KiB|MiB|GiB)?", text.replace(",", ""))
    if not m:
        return None
    scale = {None: 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    return int(float(m.group(1)) * scale)


def parse_stats(text, remat):
    """The memory lines of `dlc --stats`; a missing line fails the test."""
    def need(pattern, what):
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit(f"FAIL: dlc --stats printed no '{what}' line "
                     f"(pattern {pattern!r}):\n{text}")
        return [num(g) for g in m.groups()]

    s = {}
    p = need(r"^predicted peak memory: " + BYTES + " " + SPLIT,
             "predicted peak memory")
    s.update(peak=p[0], persistent=p[1], inputs=p[2], arena=p[3], workspace=p[4])
    if sum(p[1:]) != p[0]:
        sys.exit(f"FAIL: predicted peak {p[0]} is not the sum of its parts {p[1:]}")
    if remat:
        b = need(r"^before rematerialization: " + BYTES + " " + SPLIT,
                 "before rematerialization")
        s.update(before=b[0], before_arena=b[3])
        m = re.search(r"^recomputed: " + NUM + r" ops, " + NUM +
                      r" FLOPs added \(([\d.]+)% of the step", text, re.M)
        if not m:
            sys.exit(f"FAIL: dlc --stats printed no 'recomputed' line:\n{text}")
        s.update(ops=num(m.group(1)), flops=num(m.group(2)), flops_pct=float(m.group(3)))
    else:
        s.update(ops=0, flops=0, flops_pct=0.0)
    return s


def parse_budget_error(text):
    """(budget as written, smallest reachable peak) from the one-line
    error of an impossible --memory-budget; fails the test otherwise."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        sys.exit(f"FAIL: an impossible budget must give exactly one line, got "
                 f"{len(lines)}:\n{text}")
    m = re.fullmatch(r"dlc: error: --memory-budget (.+?) cannot be met: the smallest "
                     r"planned peak this model reaches is " + BYTES + " " + SPLIT + ".*",
                     lines[0])
    if not m:
        sys.exit(f"FAIL: unexpected impossible-budget message:\n{lines[0]}")
    return m.group(1), num(m.group(2))


def train(args, pkg, w, tag):
    """Trains |pkg|; returns (JSONL loss lines, parsed losses, checkpoint
    path, memory report)."""
    jsonl, ckpt, report = w(f"{tag}.jsonl"), w(f"{tag}.st"), w(f"{tag}-memory.json")
    for f in (jsonl, ckpt, report):
        if os.path.exists(f):
            os.remove(f)
    run([args.dlrt, "train", pkg, "--data", w("batch.npz"), "--steps", str(args.steps),
         "--no-shuffle", "--log-jsonl", jsonl, "--save", ckpt,
         "--memory-report", report, "--device", args.device])
    with open(jsonl) as f:
        lines = [line.strip() for line in f if line.strip()]
    losses = [json.loads(line)["loss"] for line in lines]
    if len(losses) != args.steps:
        sys.exit(f"FAIL: {tag}: dlrt logged {len(losses)} steps, expected {args.steps}")
    with open(report) as f:
        mem = json.load(f)
    keys = ["predicted_peak_bytes", "measured_peak_bytes", "persistent_bytes",
            "input_bytes", "arena_bytes", "workspace_bytes", "used_peak_bytes", "device"]
    missing = [k for k in keys if k not in mem]
    if missing:
        sys.exit(f"FAIL: {tag}: the memory report lacks {missing}: {mem}")
    return lines, losses, ckpt, mem


def same_checkpoints(a_path, b_path):
    """(identical?, tensor count, first differing tensor or None)."""
    a = read_safetensors(a_path)[0]
    b = read_safetensors(b_path)[0]
    if sorted(a) != sorted(b):
        return False, len(a), f"names differ: {sorted(set(a) ^ set(b))}"
    for k in sorted(a):
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or \
                a[k].tobytes() != b[k].tobytes():
            return False, len(a), k
    return True, len(a), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn", "gpt", "resnet18"], required=True)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--image", type=int, default=128, help="ResNet-18 input size")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--peak-tol", type=float, default=0.10,
                    help="|predicted - measured| <= this * measured (the issue's 10%%)")
    ap.add_argument("--impossible-budget", default="1KiB")
    ap.add_argument("--device", choices=["host", "cuda"], default="host")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    batch = args.batch or DEFAULT_BATCH[args.model]
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    t0 = time.time()
    torch.set_num_threads(1)

    model, x, y, training = make(args.model, batch, args.image)
    onnx_path = w(f"{args.model}.onnx")
    export(model, x, onnx_path, training)
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())
    n_dropout = sum(isinstance(m, nn.Dropout) for m in model.modules())
    n_bn = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    nodes = [n.op_type for n in onnx.load(onnx_path).graph.node]
    print(f"{args.model}: batch {batch}, {n_bn} BatchNorm, {n_dropout} Dropout modules")
    # The exactness this test is about needs the ops in the graph: training-mode
    # Dropout nodes (the GPT) and BatchNormalization nodes (CNN, ResNet-18).
    if nodes.count("Dropout") != n_dropout or nodes.count("BatchNormalization") != n_bn:
        sys.exit(f"FAIL: the export has {nodes.count('Dropout')} Dropout and "
                 f"{nodes.count('BatchNormalization')} BatchNormalization nodes, expected "
                 f"{n_dropout} and {n_bn}")

    base = [args.dlc, onnx_path, "--train", "--optimizer", "sgd", "--momentum", "0.9",
            "--lr", repr(LR[args.model]), "--batch-size", str(batch), "--stats", "--quiet"]
    ok = True

    def check(cond, msg):
        nonlocal ok
        print(f"{'ok' if cond else 'MISMATCH'}: {msg}", flush=True)
        ok = ok and cond

    stats = {}
    for tag, flags in [("none", ["--remat", "none"]), ("sqrt", ["--remat", "sqrt"])]:
        _, out = run(base + flags + ["-o", w(f"{tag}.dlcp")])
        stats[tag] = parse_stats(out, remat=tag != "none")
    none = stats["none"]

    # The impossible budget, and the smallest reachable peak it names.
    status, out = run(base[:-2] + ["--quiet", "--memory-budget", args.impossible_budget,
                                   "-o", w("impossible.dlcp")], check=False)
    print(out, end="")
    check(status == 1, f"--memory-budget {args.impossible_budget}: exit status {status} "
          f"(expected 1)")
    check(not os.path.exists(w("impossible.dlcp")), "no package written for it")
    smallest = None
    if status == 1:
        written, smallest = parse_budget_error(out)
        check(parse_size(written) == parse_size(args.impossible_budget),
              f"the message names the budget given ({written} = "
              f"{parse_size(args.impossible_budget)} B)")
        floor = none["persistent"] + none["inputs"] + none["workspace"]
        check(floor < smallest <= none["peak"],
              f"smallest reachable peak {smallest} B in (persistent + inputs + "
              f"workspace {floor} B, none's peak {none['peak']} B]")
        check(smallest <= stats["sqrt"]["peak"],
              f"smallest reachable {smallest} B <= the peak --remat sqrt reaches "
              f"({stats['sqrt']['peak']} B)")
        status, out = run(base + ["--memory-budget", str(smallest), "-o",
                                  w("smallest.dlcp")], check=False)
        check(status == 0, f"--memory-budget {smallest} (the smallest named) compiles")
        if status == 0:
            s = parse_stats(out, remat=True)
            check(s["peak"] <= smallest, f"its predicted peak {s['peak']} B <= {smallest} B")
        else:
            print(out, end="")

    # The budget run: half of none's predicted peak (the issue's).
    budget = none["peak"] // 2
    modes = ["none", "sqrt"]
    status, out = run(base + ["--memory-budget", str(budget), "-o", w("budget.dlcp")],
                      check=False)
    check(status == 0, f"--memory-budget {budget} (half of none's peak) compiles")
    if status == 0:
        stats["budget"] = parse_stats(out, remat=True)
        modes.append("budget")
    else:
        print(out, end="")

    for tag in modes[1:]:
        s = stats[tag]
        check(s["before"] == none["peak"],
              f"{tag}: 'before rematerialization' {s['before']} B = none's predicted "
              f"peak {none['peak']} B")
        check(s["peak"] < none["peak"] and s["arena"] < none["arena"],
              f"{tag}: predicted peak {s['peak']} B < none's {none['peak']} B (arena "
              f"{s['arena']} B < {none['arena']} B)")
        check(s["persistent"] == none["persistent"] and s["inputs"] == none["inputs"],
              f"{tag}: persistent {s['persistent']} B and input {s['inputs']} B as none's")
        check(s["ops"] > 0 and s["flops"] > 0,
              f"{tag}: recomputes {s['ops']} ops, {s['flops']} FLOPs")
    if "budget" in stats:
        check(stats["budget"]["peak"] <= budget,
              f"budget: predicted peak {stats['budget']['peak']} B <= budget {budget} B")

    runs = {}
    for tag in modes:
        runs[tag] = train(args, w(f"{tag}.dlcp"), w, tag)

    lines0, losses0, ckpt0, _ = runs["none"]
    for tag in modes[1:]:
        lines, losses, ckpt, _ = runs[tag]
        for i, (a, b) in enumerate(zip(lines0, lines), 1):
            check(a == b, f"{tag} step {i}: {b} vs none {a}")
        same, count, first = same_checkpoints(ckpt0, ckpt)
        check(same, f"{tag}: final checkpoint ({count} tensors) bit-identical to none's"
              + ("" if same else f" (first difference: {first})"))
    check(losses0[-1] < losses0[0],
          f"training moves: loss {losses0[0]:.6f} -> {losses0[-1]:.6f}")

    for tag in modes:
        mem, s = runs[tag][3], stats[tag]
        pred, meas = mem["predicted_peak_bytes"], mem["measured_peak_bytes"]
        check(args.device in str(mem["device"]).lower(),
              f"{tag}: memory report device '{mem['device']}' is {args.device}")
        check(pred == s["peak"] and mem["persistent_bytes"] == s["persistent"] and
              mem["input_bytes"] == s["inputs"] and mem["arena_bytes"] == s["arena"] and
              mem["workspace_bytes"] == s["workspace"],
              f"{tag}: memory report's predicted figures equal dlc --stats's")
        check(0 < meas and abs(pred - meas) <= args.peak_tol * meas,
              f"{tag}: |predicted {pred} - measured {meas}| = {abs(pred - meas)} B "
              f"<= {args.peak_tol:.0%} of measured")
    if "budget" in runs:
        meas = runs["budget"][3]["measured_peak_bytes"]
        check(meas <= budget, f"budget: measured peak {meas} B <= budget {budget} B")

    print(f"\n{args.model} on {args.device}, batch {batch}, {args.steps} steps:")
    print(f"{'mode':>10} {'predicted B':>12} {'measured B':>12} {'pred/meas':>9} "
          f"{'arena B':>11} {'persist. B':>11} {'inputs B':>10} {'recomp. ops':>11} "
          f"{'FLOPs added':>12} {'final loss':>11}")
    for tag in modes:
        s, mem, losses = stats[tag], runs[tag][3], runs[tag][1]
        label = f"{tag}" if tag != "budget" else f"{budget}"
        print(f"{label:>10} {s['peak']:>12} {mem['measured_peak_bytes']:>12} "
              f"{s['peak'] / mem['measured_peak_bytes']:>9.3f} {s['arena']:>11} "
              f"{s['persistent']:>11} {s['inputs']:>10} {s['ops']:>11} "
              f"{s['flops']:>12} {losses[-1]:>11.7f}")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu = children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime
    print(f"{args.model}: {time.time() - t0:.1f} s wall, {cpu:.1f} s CPU")
    if not ok:
        sys.exit("FAIL")
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Memory/time curve of rematerialization on a deep transformer (issue 11 item 3).

Exports a GPT-style decoder (default 12 pre-LayerNorm layers, d 256, 4 heads,
sequence 128, batch 8, vocabulary 512; test/e2e/arch_models.py's TinyGPT)
with PyTorch, compiles its training step (`dlc --train`, SGD) at
`--remat none`, `--remat sqrt`, the smallest reachable budget and a sweep of
`--memory-budget`s given as fractions of none's predicted peak, and trains
each package on the host for a few steps on one fixed batch. Prints a table:

  mode/budget, predicted peak, measured peak (dlrt --memory-report), the
  activation arena, arena ratio none/this, step time ratio this/none and the
  FLOPs rematerialization adds (dlc --stats)

and the issue's two targets: the best arena reduction at <= 1.3x none's step
time (target >= 4x), and for every run measured <= budget and
|predicted - measured| <= 10% of measured. A budget below the smallest
reachable peak shows dlc's one-line error. With matplotlib (Debian's
python3-matplotlib) it writes the curve, peak memory against step time
ratio, as a PNG (--plot).

Step time: dlrt logs no per-step time, so each package is trained twice,
1 step and 1 + --steps steps, and the step time is the difference of the two
wall times divided by --steps (the first step, start-up and package loading
cancel). Each run is repeated --repeats times, interleaving the modes, and
the fastest wall time of each is used: on a shared machine the minimum is
the measurement least disturbed by other processes. All runs use
--threads OpenMP threads (default 1, so the ratios do not depend on how many
cores other processes leave free).

A person runs this; it is not a ctest. About 15 minutes on one core at the
defaults (most of it compiling). Example:

  /usr/bin/python3 test/benchmarks/remat.py --dlc build/bin/dlc \\
      --dlrt build/bin/dlrt --workdir /tmp/remat-bench
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from arch_models import make_gpt  # noqa: E402

NUM = r"([\d,]+)"
# "N bytes (1.23 MiB) (persistent P + ...)": the human-readable size is
# optional.
BYTES = NUM + r" bytes(?: \([\d.]+ [KMG]?i?B\))?"
SPLIT = (r"\(persistent " + NUM + r" \+ inputs " + NUM + r" \+ arena " + NUM +
         r" \+ workspace " + NUM + r"\)")
TIME_RATIO_TARGET = 1.3
ARENA_RATIO_TARGET = 4.0
PEAK_TOL = 0.10


def num(s):
    return int(s.replace(",", ""))


def mib(n):
    return n / (1 << 20)


def run(cmd, env=None, check=True):
    """(exit status, stdout + stderr, wall seconds) of |cmd|."""
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env)
    wall = time.perf_counter() - t
    if check and r.returncode != 0:
        sys.exit(f"error: exit status {r.returncode}: {' '.join(cmd)}\n{r.stdout}")
    return r.returncode, r.stdout, wall


def parse_stats(text):
    """The memory lines of `dlc --stats` (a missing line is an error)."""
    m = re.search(r"^predicted peak memory: " + BYTES + " " + SPLIT, text, re.M)
    if not m:
        sys.exit(f"error: dlc --stats printed no 'predicted peak memory' line:\n{text}")
    p = [num(g) for g in m.groups()]
    s = dict(peak=p[0], persistent=p[1], inputs=p[2], arena=p[3], workspace=p[4],
             ops=0, flops=0, flops_pct=0.0)
    m = re.search(r"^recomputed: " + NUM + r" ops, " + NUM +
                  r" FLOPs added \(([\d.]+)% of the step", text, re.M)
    if m:
        s.update(ops=num(m.group(1)), flops=num(m.group(2)), flops_pct=float(m.group(3)))
    return s


def budget_error(text):
    """The smallest reachable peak named by dlc's impossible-budget error,
    or None when |text| is not that one-line error."""
    lines = [line for line in text.splitlines() if line.strip()]
    m = re.fullmatch(r"dlc: error: --memory-budget .+? cannot be met: the smallest "
                     r"planned peak this model reaches is " + BYTES + " " + SPLIT + ".*",
                     lines[0]) if len(lines) == 1 else None
    return num(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--embed", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs per package; the fastest is used")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of dlrt")
    ap.add_argument("--budgets", default="0.9,0.75,0.6,0.5,0.4,0.3",
                    help="comma-separated fractions of none's predicted peak")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--plot", default=None,
                    help="PNG of the curve (default WORKDIR/remat.png; '' for none)")
    ap.add_argument("--strict", action="store_true",
                    help="exit status 1 when a target is not met")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda name: os.path.join(args.workdir, name)  # noqa: E731
    plot = w("remat.png") if args.plot is None else args.plot
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    torch.set_num_threads(1)

    # The model, exported in training mode (no dropout: the benchmark
    # measures recomputation of the transformer's own activations).
    model, x, y = make_gpt(args.batch, seq=args.seq, vocab=args.vocab, embed=args.embed,
                           heads=args.heads, layers=args.layers)
    params = sum(p.numel() for p in model.parameters())
    model.train()
    onnx_path = w("transformer.onnx")
    torch.onnx.export(model, x, onnx_path, input_names=["input"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    np.savez(w("batch.npz"), input=x.numpy(), labels=y.numpy())
    print(f"transformer: {args.layers} pre-LN decoder layers, d {args.embed}, "
          f"{args.heads} heads, seq {args.seq}, batch {args.batch}, vocab {args.vocab}, "
          f"{params} parameters; dlrt on the host with {args.threads} thread(s)", flush=True)

    base = [args.dlc, onnx_path, "--train", "--optimizer", "sgd", "--lr", repr(args.lr),
            "--batch-size", str(args.batch), "--quiet"]

    def compile_(tag, flags):
        t = time.perf_counter()
        status, out, _ = run(base + ["--stats"] + flags + ["-o", w(f"{tag}.dlcp")],
                             check=False)
        print(f"compiled {tag} ({' '.join(flags)}) in {time.perf_counter() - t:.0f} s",
              flush=True)
        return status, out

    # (tag, flags, budget or None)
    runs = [("none", ["--remat", "none"], None), ("sqrt", ["--remat", "sqrt"], None)]
    stats = {}
    for tag, flags, _ in runs:
        _, out = compile_(tag, flags)
        stats[tag] = parse_stats(out)
    none_peak = stats["none"]["peak"]

    # The smallest reachable peak, from the error of a budget below it.
    status, out = compile_("impossible", ["--memory-budget", "1KiB"])
    smallest = budget_error(out) if status == 1 else None
    print(f"--memory-budget 1KiB: exit status {status}: {out.strip()}")
    if smallest is None:
        sys.exit("error: an impossible budget did not give the one-line error")
    status, out = compile_("below", ["--memory-budget", str(smallest - 1)])
    print(f"--memory-budget {smallest - 1} (one byte below the smallest): exit status "
          f"{status}" + (f": {out.strip()}" if status else ""))
    below_ok = status == 1 and budget_error(out) == smallest

    unreachable = []
    budgets = [(f"{float(f):.0%}", int(none_peak * float(f)))
               for f in args.budgets.split(",") if f]
    budgets.append(("min", smallest))
    for label, b in budgets:
        tag = f"budget-{b}"
        status, out = compile_(tag, ["--memory-budget", str(b)])
        if status == 0:
            stats[tag] = parse_stats(out)
            runs.append((tag, ["--memory-budget", str(b)], (label, b)))
        elif budget_error(out) is not None:
            unreachable.append((label, b))
        else:
            sys.exit(f"error: --memory-budget {b} failed:\n{out}")

    # Training: 1 and 1 + steps steps of each package, interleaved, repeated.
    best = {}
    for rep in range(args.repeats):
        for tag, _, _ in runs:
            pkg = w(f"{tag}.dlcp")
            for steps in (1, 1 + args.steps):
                report = w(f"{tag}-memory.json")
                cmd = [args.dlrt, "train", pkg, "--data", w("batch.npz"), "--steps",
                       str(steps), "--no-shuffle", "--device", "host", "--memory-report",
                       report, "--log-jsonl", w(f"{tag}-{steps}.jsonl")]
                if os.path.exists(w(f"{tag}-{steps}.jsonl")):
                    os.remove(w(f"{tag}-{steps}.jsonl"))
                _, _, wall = run(cmd, env=env)
                key = (tag, steps)
                best[key] = min(best.get(key, wall), wall)
            with open(report) as f:
                stats[tag]["report"] = json.load(f)
        print(f"repeat {rep + 1}/{args.repeats} done", flush=True)

    step_time = {tag: (best[(tag, 1 + args.steps)] - best[(tag, 1)]) / args.steps
                 for tag, _, _ in runs}
    with open(w("none-1.jsonl")) as f:
        loss_none = [json.loads(line)["loss"] for line in f if line.strip()]

    print(f"\n{'mode/budget':>18} {'predicted MiB':>13} {'measured MiB':>12} "
          f"{'budget MiB':>10} {'arena MiB':>9} {'arena none/this':>15} "
          f"{'time this/none':>14} {'step s':>7} {'FLOPs added':>16}")
    rows, bad = [], []
    t_none, a_none = step_time["none"], stats["none"]["arena"]
    for tag, _, budget in runs:
        s = stats[tag]
        rep = s["report"]
        pred, meas = rep["predicted_peak_bytes"], rep["measured_peak_bytes"]
        label = tag if budget is None else f"{budget[0]} of none" if budget[0] != "min" \
            else "smallest"
        arena_ratio = a_none / s["arena"] if s["arena"] else float("inf")
        time_ratio = step_time[tag] / t_none
        rows.append(dict(label=label, pred=pred, meas=meas, arena=s["arena"],
                         arena_ratio=arena_ratio, time_ratio=time_ratio))
        print(f"{label:>18} {mib(pred):>13.2f} {mib(meas):>12.2f} "
              f"{(f'{mib(budget[1]):.2f}' if budget else '-'):>10} {mib(s['arena']):>9.2f} "
              f"{arena_ratio:>15.2f} {time_ratio:>14.3f} {step_time[tag]:>7.3f} "
              f"{s['flops']:>9} ({s['flops_pct']:.1f}%)")
        if abs(pred - meas) > PEAK_TOL * meas:
            bad.append(f"{label}: |predicted {pred} - measured {meas}| > "
                       f"{PEAK_TOL:.0%} of measured")
        if budget and meas > budget[1]:
            bad.append(f"{label}: measured {meas} > budget {budget[1]}")
        if pred != s["peak"]:
            bad.append(f"{label}: the memory report's predicted {pred} differs from "
                       f"dlc --stats's {s['peak']}")
    for label, b in unreachable:
        print(f"{label + ' of none':>18}  {mib(b):.2f} MiB: unreachable (below the "
              f"smallest, {mib(smallest):.2f} MiB)")
    print(f"none: predicted peak {none_peak} B, step {t_none:.3f} s "
          f"(fastest of {args.repeats}: 1 and {1 + args.steps} steps), first loss "
          f"{loss_none[0]:.6f}")
    print(f"smallest reachable peak: {smallest} B ({smallest / none_peak:.1%} of none's); "
          f"a budget one byte below it "
          f"{'gives the one-line error naming it' if below_ok else 'DID NOT give the error'}")

    fits = [r for r in rows if r["time_ratio"] <= TIME_RATIO_TARGET]
    top = max(fits, key=lambda r: r["arena_ratio"]) if fits else None
    target1 = top is not None and top["arena_ratio"] >= ARENA_RATIO_TARGET
    print(f"\ntarget 1 (arena reduction >= {ARENA_RATIO_TARGET:g}x at <= "
          f"{TIME_RATIO_TARGET:g}x step time): best "
          + (f"{top['arena_ratio']:.2f}x at {top['time_ratio']:.3f}x ({top['label']})"
             if top else "none within the time bound")
          + f": {'MET' if target1 else 'NOT MET'}")
    target2 = not bad and below_ok
    print(f"target 2 (measured <= budget and |predicted - measured| <= "
          f"{PEAK_TOL:.0%} of measured, every run): {'MET' if target2 else 'NOT MET'}")
    for b in bad:
        print(f"  {b}")

    if plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("no plot: matplotlib is missing (Debian: apt-get install "
                  "python3-matplotlib)")
        else:
            fig, ax = plt.subplots(figsize=(7, 4.5))
            xs = [r["time_ratio"] for r in rows]
            ax.plot(xs, [mib(r["pred"]) for r in rows], "o", label="predicted peak")
            ax.plot(xs, [mib(r["meas"]) for r in rows], "x", label="measured peak")
            ax.plot(xs, [mib(r["arena"]) for r in rows], "s", markersize=4,
                    label="activation arena (planned)")
            for r in rows:
                ax.annotate(r["label"], (r["time_ratio"], mib(r["meas"])),
                            textcoords="offset points", xytext=(4, 4), fontsize=7)
            ax.axvline(TIME_RATIO_TARGET, color="gray", linestyle=":", linewidth=1)
            ax.set_xlabel("step time / step time of --remat none")
            ax.set_ylabel("memory (MiB)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"dlc rematerialization: {args.layers}-layer transformer, "
                         f"batch {args.batch}, seq {args.seq}")
            ax.legend()
            ax.grid(True, alpha=0.3)
            fig.tight_layout()
            fig.savefig(plot, dpi=120)
            print(f"plot: {plot}")
    if args.strict and not (target1 and target2):
        sys.exit(1)


if __name__ == "__main__":
    main()

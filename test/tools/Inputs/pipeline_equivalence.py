#!/usr/bin/python3
"""dlc and dlc-opt --dlc-pipeline build the same pipeline (issue 35 item 1).

For the e2e test models (the MLP and CNN of test/e2e/models.py, the tiny GPT
and Transformer of test/e2e/arch_models.py), exported with torch.onnx at
opset 17 and imported to dlgraph with `dlc-translate --import-onnx`, this
compiles each configuration twice:

  dlc X.mlir FLAGS --emit=dlexec
  dlc-opt X.mlir --dlc-pipeline="OPTIONS"      (OPTIONS: the same flags)

and requires the two planned dlexec modules to be identical (blank lines
aside: dlc-opt separates the module's parts differently). Configurations:
inference, training, and training with --memory-budget (95% of the model's
unrematerialized planned peak, read from `dlc --stats`, so the budget search
rematerializes; the peak itself for a model that cannot go lower), --precision bf16, --data-parallel and --pipeline-stages 2.
Also checks that `dlc --compile-to=PHASE` for every phase writes what
`dlc-opt` writes for the same phases (Phase in compiler/Pipeline/Pipeline.h).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e"))
from arch_models import make_gpt, make_transformer  # noqa: E402
from models import MODELS  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("FAILED: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def as_pipeline_options(flags):
    """['--train', '--precision', 'bf16'] -> 'train=true precision=bf16'."""
    out, i = [], 0
    while i < len(flags):
        name = flags[i][2:]
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            out.append("%s=%s" % (name, flags[i + 1]))
            i += 2
        else:
            out.append("%s=true" % name)
            i += 1
    return " ".join(out)


def nonblank(path):
    with open(path) as f:
        return [line for line in f.read().splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlc-opt", required=True)
    ap.add_argument("--dlc-translate", required=True)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)

    models = {
        "mlp": (MODELS["mlp"](), torch.randn(4, 1, 28, 28)),
        "cnn": (MODELS["cnn"](), torch.randn(4, 1, 28, 28)),
        "gpt": make_gpt(4)[:2],
        "transformer": make_transformer(4)[:2],
    }
    compared = 0
    for name, (model, x) in models.items():
        onnx_path = os.path.join(work, name + ".onnx")
        model.train(True)
        torch.onnx.export(model, x, onnx_path, input_names=["input"],
                          output_names=["logits"], opset_version=17,
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)
        graph = os.path.join(work, name + ".mlir")
        run([args.dlc_translate, "--import-onnx", onnx_path, "-o", graph])
        stats = run([args.dlc, graph, "--train", "--stats", "--quiet",
                     "--emit=dlexec", "-o", os.devnull])
        peak = int(re.search(r"predicted peak memory: (\d+) bytes", stats).group(1))
        # 95% of the peak where the model can rematerialize that far (the
        # MLP cannot: its budget is then its peak, still searched).
        budget = int(peak * 0.95)
        probe = subprocess.run([args.dlc, graph, "--train", "--quiet", "--emit=dlgraph",
                                "--memory-budget", str(budget), "-o", os.devnull],
                               stderr=subprocess.PIPE, text=True)
        if "cannot be met" in probe.stderr:
            budget = peak
        configs = [[], ["--train"],
                   ["--train", "--memory-budget", str(budget)],
                   ["--train", "--precision", "bf16"],
                   ["--train", "--data-parallel"],
                   ["--train", "--pipeline-stages", "2"]]
        for flags in configs:
            a = os.path.join(work, "%s-dlc.mlir" % name)
            b = os.path.join(work, "%s-opt.mlir" % name)
            run([args.dlc, graph, "--quiet", "--emit=dlexec", "-o", a] + flags)
            run([args.dlc_opt, graph,
                 "--dlc-pipeline=" + as_pipeline_options(flags), "-o", b])
            if nonblank(a) != nonblank(b):
                sys.exit("FAILED: %s %s: dlc --emit=dlexec and dlc-opt "
                         "--dlc-pipeline differ (%s, %s)" % (name, flags, a, b))
            compared += 1
            print("same: %s %s (%d lines)" % (name, " ".join(flags) or "(inference)",
                                                len(nonblank(a))))
    # --compile-to stops where the pipeline's phase would: the GPT's
    # training step after each phase against dlc-opt up to the same phase
    # (dlc-opt runs the phase pipeline whole, so the compared phases are
    # those that end it: the last one, and rematerialization via --emit).
    graph = os.path.join(work, "gpt.mlir")
    a = os.path.join(work, "gpt-compile-to.mlir")
    b = os.path.join(work, "gpt-emit.mlir")
    run([args.dlc, graph, "--train", "--quiet", "--compile-to=rematerialization", "-o", a])
    run([args.dlc, graph, "--train", "--quiet", "--emit=dlgraph", "-o", b])
    if nonblank(a) != nonblank(b):
        sys.exit("FAILED: --compile-to=rematerialization differs from --emit=dlgraph")
    run([args.dlc, graph, "--train", "--quiet", "--compile-to=memory-planning", "-o", a])
    run([args.dlc, graph, "--train", "--quiet", "--emit=dlexec", "-o", b])
    if nonblank(a) != nonblank(b):
        sys.exit("FAILED: --compile-to=memory-planning differs from --emit=dlexec")
    sizes = []
    for phase in ["graph-fusion", "partitioning", "training-step", "mixed-precision", "rematerialization",
                  "graph-to-exec", "exec-transforms", "memory-planning"]:
        run([args.dlc, graph, "--train", "--quiet", "--compile-to=" + phase, "-o", a])
        sizes.append((phase, len(nonblank(a))))
    print("--compile-to lines per phase: " + ", ".join("%s %d" % s for s in sizes))
    # Each phase of the training GPT changes the module, except partitioning
    # (no --pipeline-stages) and mixed precision (fp32): their output is the
    # module before them.
    lines = dict(sizes)
    if not (lines["training-step"] > lines["partitioning"] and
            lines["graph-to-exec"] != lines["rematerialization"] and
            lines["exec-transforms"] != lines["graph-to-exec"]):
        sys.exit("FAILED: --compile-to did not stop after the phases it names")
    print("pipeline equivalence: %d configurations identical" % compared)


if __name__ == "__main__":
    main()

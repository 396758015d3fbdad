#!/usr/bin/env python3
"""transformers models from today's exporter, trained by dlc + dlrt against
PyTorch (issue 34 item 6). Runs with the test virtualenv's python
(tools/test-venv.sh: torch 2.15, transformers 5.25, onnx 1.23).

For each architecture (--arch: a 2-layer random-weight GPT-2 and Llama) and
each opset (--opsets: 18, the exporter's oldest, and 25, the newest it
writes: torch 2.15 asked for 26, 27 or 28 silently writes an opset-18 model,
so every model's opset import is checked against the one asked for):

1. export `logits = model(input_ids, use_cache=False).logits` with
   `torch.onnx.export(..., dynamo=True, opset_version=V, optimize=False)`,
   weights in an external data file (the exporter's default);
2. write the trainable parameters, named_parameters() names, which are the
   ONNX initializer names (every one is checked to be an initializer), for
   `dlc --trainable`;
3. compile with `dlc --train --loss softmax-cross-entropy --optimizer sgd
   --momentum 0.9 --trainable FILE` and train --steps steps on one batch
   (random token ids, next-token-style random labels) with `dlrt train`;
4. train a copy of the same PyTorch module (fp32) the same steps and compare
   every step's loss: |dlrt - torch| <= 1e-5 * |torch|.

Tolerance: both sides are fp32 computations of the same function that differ
only in the order of floating-point sums; with no dropout (every dropout
probability is 0) and two layers at width 32, PyTorch's own fp32 and fp64
losses agree to ~1e-7 relative over the five steps (printed as "torch fp32
vs fp64"), so 1e-5 leaves two orders of margin without hiding a wrong
gradient (one wrong step moves the next loss by ~lr * |grad|^2, ~1e-3).

Prints one line per step and PASS, or FAIL with the reason (exit 1).
"""
import argparse
import copy
import json
import os
import sys
import time

import numpy as np
import onnx
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import run, torch_losses  # noqa: E402

LOSS_TOL = 1e-5
VOCAB = 64
SEQ = 16


def gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=SEQ,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        bos_token_id=None, eos_token_id=None))


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, vocab_size=VOCAB,
        max_position_embeddings=SEQ, attention_dropout=0.0))


ARCHS = {"gpt2": gpt2, "llama": llama}


class Logits(torch.nn.Module):
    """input_ids [batch, seq] int64 -> logits [batch, seq, vocab] f32."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def export(module, ids, path, opset, input_names=("input_ids",), dynamo=True):
    """Exports |module| applied to |ids| (a tensor, or a tuple of tensors
    named |input_names|) with the dynamo exporter (or, dynamo=False, the
    TorchScript one, without constant folding); returns the ONNX model (without its external data).
    Fails unless the model's default-domain opset is |opset|."""
    module.eval()
    args = ids if isinstance(ids, tuple) else (ids,)
    # TorchScript's constant folding would rename transposed weights.
    kwargs = {"optimize": False} if dynamo else {"do_constant_folding": False}
    torch.onnx.export(module, args, path, dynamo=dynamo, opset_version=opset,
                      input_names=list(input_names), output_names=["logits"],
                      **kwargs)
    model = onnx.load(path, load_external_data=False)
    got = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if got != [opset]:
        sys.exit(f"FAIL: asked torch.onnx.export for opset {opset}, the model "
                 f"imports opset {got}")
    return model


def write_trainable(module, model, path):
    """Writes the ONNX initializer name of each of |module|'s parameters, one
    a line. That is its named_parameters() name, except for a tied weight
    (GPT-2's wte and lm_head): the exporter writes it once, under one of its
    names (lm_head's), so that alias is taken. Fails when a parameter has no
    initializer under any of its names."""
    inits = {t.name for t in model.graph.initializer}
    aliases = {}
    for n, p in module.named_parameters(remove_duplicate=False):
        if p.requires_grad:
            aliases.setdefault(id(p), []).append(n)
    names, missing = [], []
    for group in aliases.values():
        found = [n for n in group if n in inits]
        if found:
            names.append(found[0])
        else:
            missing.append(group[0])
    if missing:
        sys.exit(f"FAIL: parameters without an ONNX initializer of the same "
                 f"name: {missing[:5]} (initializers: {sorted(inits)[:5]}...)")
    with open(path, "w") as f:
        f.write("".join(n + "\n" for n in names))
    return names


def check(arch, opset, args):
    tag = f"{arch} opset {opset}"
    w = lambda name: os.path.join(args.workdir, f"{arch}-{opset}-{name}")  # noqa: E731
    torch.manual_seed(0)
    module = Logits(ARCHS[arch]())
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (args.batch, SEQ), generator=gen)
    labels = torch.randint(0, VOCAB, (args.batch, SEQ), generator=gen)

    t0 = time.time()
    reference = copy.deepcopy(module)  # the export must not touch its weights
    model = export(module, ids, w("model.onnx"), opset)
    names = write_trainable(module, model, w("trainable.txt"))
    print(f"{tag}: exported in {time.time() - t0:.1f} s, {len(model.graph.node)} "
          f"nodes, {len(names)} trainable parameters", flush=True)
    if args.export_only:
        return True

    np.savez(w("batch.npz"), input_ids=ids.numpy(), labels=labels.numpy())
    run([args.dlc, w("model.onnx"), "--train", "--loss", "softmax-cross-entropy",
         "--optimizer", "sgd", "--momentum", repr(args.momentum), "--lr",
         repr(args.lr), "--trainable", w("trainable.txt"), "--quiet",
         "-o", w("train.dlcp")])
    if os.path.exists(w("train.jsonl")):
        os.remove(w("train.jsonl"))
    run([args.dlrt, "train", w("train.dlcp"), "--data", w("batch.npz"),
         "--steps", str(args.steps), "--no-shuffle", "--log-jsonl",
         w("train.jsonl"), "--device", args.device])
    with open(w("train.jsonl")) as f:
        ours = [json.loads(line)["loss"] for line in f if line.strip()]

    ref64 = torch_losses(copy.deepcopy(reference).double(), ids, labels, "sgd",
                         args.lr, args.momentum, args.steps)
    ref = torch_losses(reference, ids, labels, "sgd", args.lr, args.momentum,
                       args.steps)
    spread = max(abs(a - b) / abs(b) for a, b in zip(ref, ref64))
    print(f"{tag}: torch fp32 vs fp64 losses differ by up to {spread:.2e} relative")
    if len(ours) != len(ref):
        print(f"{tag}: dlrt logged {len(ours)} steps, expected {len(ref)}")
        return False
    ok = True
    for i, (a, b) in enumerate(zip(ours, ref), 1):
        rel = abs(a - b) / abs(b)
        flag = "ok" if rel <= LOSS_TOL else "MISMATCH"
        print(f"{tag} step {i}: dlrt {a:.8f}  torch {b:.8f}  rel {rel:.2e}  {flag}")
        ok = ok and rel <= LOSS_TOL
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=sorted(ARCHS) + ["all"], default="all")
    ap.add_argument("--opsets", default="18,25",
                    help="comma-separated opsets to export (default %(default)s)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--device", default="host")
    ap.add_argument("--export-only", action="store_true",
                    help="export and write the trainable lists only")
    ap.add_argument("--dlc")
    ap.add_argument("--dlrt")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    if not args.export_only and not (args.dlc and args.dlrt):
        ap.error("--dlc and --dlrt are required unless --export-only")
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)

    archs = sorted(ARCHS) if args.arch == "all" else [args.arch]
    failed = [f"{a} opset {v}" for a in archs
              for v in (int(s) for s in args.opsets.split(",") if s)
              if not check(a, v, args)]
    if failed:
        sys.exit("FAIL: " + ", ".join(failed) + " differ from PyTorch beyond "
                 f"{LOSS_TOL} relative")
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Real transformer exports through the fused attention (issue 36 part 2).

Runs with the test virtualenv's python (tools/test-venv.sh: torch,
transformers, onnx). Each architecture is built in code from a small
config with random weights (nothing is downloaded), with its default
attention implementation and every dropout probability 0: GPT-2, Llama
(grouped-query), BERT (a padding mask), ViT (non-causal), Whisper and BART
(encoder, causal decoder and cross-attention). Each is exported by both
PyTorch exporters, the dynamo one (opset 18) and the TorchScript one
(opset 17); where PyTorch's exporter itself fails (Whisper's TorchScript
export: aten::diff), that is printed as SKIP with its error. Then:

  - `dlc --stats` must print `fused attentions: N of N` with N the model's
    attention count (every softmax between two matmuls fused);
  - `dlc --train` (softmax cross-entropy, SGD with momentum 0.9) and
    `dlrt train` for --steps steps on one batch must give PyTorch's fp32
    losses within 1e-5 relative (dynamo_export.LOSS_TOL and its reason).

Padding is trailing (the batch's second row), so no query row has every key
masked: there PyTorch's SDPA and the exported graph disagree with each other
(transformers_zoo.py's causal()). Prints PASS or FAIL (exit 1).
"""
import argparse
import copy
import json
import os
import re
import sys
import time

import numpy as np
import torch
import transformers as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dynamo_export import LOSS_TOL, export, write_trainable  # noqa: E402
from train_vs_torch import run, torch_losses  # noqa: E402
from transformers_zoo import Logits, Packed  # noqa: E402

VOCAB, SEQ, BATCH, IMAGE, CLASSES = 64, 12, 2, 32, 10
NO_TOKENS = {"pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def lm_inputs(gen):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, -4:] = 0
    return (ids, mask), ("input_ids", "attention_mask")


def seq2seq_inputs(gen):
    (ids, mask), names = lm_inputs(gen)
    dec = torch.randint(0, VOCAB, (BATCH, SEQ // 2), generator=gen)
    return (ids, mask, dec), names + ("decoder_input_ids",)


def whisper_inputs(gen):
    feats = torch.randn(BATCH, 8, 16, generator=gen)
    dec = torch.randint(4, VOCAB, (BATCH, SEQ // 2), generator=gen)
    return (feats, dec), ("input_features", "decoder_input_ids")


def image_inputs(gen):
    return (torch.randn(BATCH, 3, IMAGE, IMAGE, generator=gen),), ("pixel_values",)


# name: (build, inputs, attentions, keyword arguments of the call)
MODELS = {
    "gpt2": (lambda: T.GPT2LMHeadModel(T.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=SEQ,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=None,
        eos_token_id=None)), lm_inputs, 2, {"use_cache": False}),
    "llama": (lambda: T.LlamaForCausalLM(T.LlamaConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, vocab_size=VOCAB,
        max_position_embeddings=SEQ, **NO_TOKENS)), lm_inputs, 2,
        {"use_cache": False}),
    "bert": (lambda: T.BertForMaskedLM(T.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=SEQ,
        type_vocab_size=2, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, pad_token_id=None)), lm_inputs, 2, {}),
    "vit": (lambda: T.ViTForImageClassification(T.ViTConfig(
        image_size=IMAGE, patch_size=8, num_hidden_layers=2, hidden_size=32,
        num_attention_heads=4, intermediate_size=64, num_labels=CLASSES,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)),
        image_inputs, 2, {}),
    "whisper": (lambda: T.WhisperForConditionalGeneration(T.WhisperConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
        max_source_positions=8, max_target_positions=SEQ, dropout=0.0,
        attention_dropout=0.0, pad_token_id=1, bos_token_id=2, eos_token_id=2,
        decoder_start_token_id=3, suppress_tokens=[], begin_suppress_tokens=[])),
        whisper_inputs, 3, {"use_cache": False}),
    "bart": (lambda: T.BartForConditionalGeneration(T.BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=SEQ,
        dropout=0.0, attention_dropout=0.0, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2)), seq2seq_inputs, 3,
        {"use_cache": False}),
}


def check(name, dynamo, args):
    build, make_inputs, attentions, kwargs = MODELS[name]
    tag = f"{name} {'dynamo' if dynamo else 'torchscript'}"
    w = lambda f: os.path.join(args.workdir, f"{tag.replace(' ', '-')}-{f}")  # noqa: E731
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    inputs, names = make_inputs(gen)
    module = Logits(build(), names, kwargs)
    module.eval()
    # The TorchScript exporter merges initializers of equal values (every
    # LayerNorm's ones and zeros, zero biases) into one; a little noise
    # keeps each parameter its own initializer.
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=gen))
    reference = copy.deepcopy(module)
    with torch.no_grad():
        out = module(*inputs)
    labels = torch.randint(0, out.shape[-1], out.shape[:-1], generator=gen)
    try:
        model = export(module, inputs, w("model.onnx"), 18 if dynamo else 17,
                       names, dynamo=dynamo)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - PyTorch's exporter
        print(f"SKIP {tag}: PyTorch's exporter fails: {type(e).__name__}: "
              f"{str(e).splitlines()[0] if str(e) else ''}", flush=True)
        return True
    write_trainable(module, model, w("trainable.txt"))
    np.savez(w("batch.npz"), labels=labels.numpy(),
             **{n: t.numpy() for n, t in zip(names, inputs)})
    rc, out = run([args.dlc, w("model.onnx"), "--train", "--loss",
                   "softmax-cross-entropy", "--optimizer", "sgd", "--momentum",
                   "0.9", "--lr", repr(args.lr), "--trainable", w("trainable.txt"),
                   "--stats", "--quiet", "-o", w("train.dlcp")], check=False)
    fused = re.search(r"fused attentions: (\d+) of (\d+)", out)
    ok = rc == 0 and fused is not None and \
        fused.group(1) == fused.group(2) == str(attentions)
    print(f"{'ok' if ok else 'FAIL'} {tag}: "
          + (fused.group(0) if fused else "no 'fused attentions' line")
          + f" (expected {attentions} of {attentions})", flush=True)
    if rc:
        return False
    if os.path.exists(w("train.jsonl")):
        os.remove(w("train.jsonl"))
    rc, _ = run([args.dlrt, "train", w("train.dlcp"), "--data", w("batch.npz"),
                 "--steps", str(args.steps), "--no-shuffle", "--log-jsonl",
                 w("train.jsonl"), "--device", "host"], check=False)
    if rc:
        print(f"FAIL {tag}: dlrt train failed")
        return False
    ours = [json.loads(l)["loss"] for l in open(w("train.jsonl")) if l.strip()]
    ref = torch_losses(Packed(reference), inputs, labels, "sgd", args.lr, 0.9,
                       args.steps)
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, ref))
    good = len(ours) == len(ref) and worst <= LOSS_TOL
    print(f"{'ok' if good else 'FAIL'} {tag}: {len(ours)} steps, losses "
          f"{ours[0]:.6f} .. {ours[-1]:.6f}, worst {worst:.2e} relative to PyTorch "
          f"(tolerance {LOSS_TOL:g})", flush=True)
    return ok and good


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)
    ok = True
    t0 = time.time()
    for name in args.model or MODELS:
        for dynamo in (True, False):
            ok &= check(name, dynamo, args)
    print(f"{'PASS' if ok else 'FAIL'} ({time.time() - t0:.0f} s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

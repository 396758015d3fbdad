#!/usr/bin/python3
"""A package over 2 GiB (issue 34 item 2): peak memory of compiling and
running a model whose weights are external data.

Writes a GPT-2-style decoder as ONNX with onnx.helper directly (not torch:
each weight is drawn and written to the external data file one tensor at a
time, so this script never holds more than one tensor): token and position
embeddings, --layers pre-LayerNorm blocks (one-head attention through a
[d, 3d] MatMul, Softmax over the scores, a [d, d] output MatMul; an MLP of
[d, 4d] and [4d, d] MatMuls with Relu), a final LayerNorm and logits against
the tied token embedding. Every initializer is float32 in one external file
(model.onnx + model.bin, each tensor at an offset aligned to 64 bytes). At
the defaults (d 1600, 24 layers, vocabulary 50257: GPT-2 XL's widths) the
weights are 3.28 GB, more than one FlatBuffer holds, so the package keeps
them in its weights section (docs/package-format.md).

Then compiles it for inference with `dlc --time-phases --batch-size 1
--no-cache` and prints dlc's phase times, its peak resident memory (the
`peak resident memory` line of --time-phases, and the same from the wait
status of the process, which also counts what follows the phase clock) as a
ratio of the weights' bytes (target: under 2x), runs the package once with
`dlrt run --device host` on --seq tokens (its peak resident memory from the
wait status, and the ratio), and compares the logits with a float64 NumPy
evaluation of the same model from model.bin: the largest difference must be
under 1e-3 (the logits are about 1 in size; f32 sums of at most 6400
products of such values are off by about 1e-5). Exit status 0 when all of
it passes.

A person runs this; it is not a ctest (minutes, and 7 GB of disk: the
external file and the package). --keep keeps the files (they are deleted
otherwise). Example:

  /usr/bin/python3 test/benchmarks/external_data.py --dlc build/bin/dlc \\
      --dlrt build/bin/dlrt --workdir /tmp/extdata-bench
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
from onnx import TensorProto, helper


class Writer:
    """Appends float32 tensors to one external data file and makes their
    TensorProtos (data_location EXTERNAL, location/offset/length)."""

    def __init__(self, folder, name, seed):
        self.location = name
        self.file = open(os.path.join(folder, name), "wb")
        self.rng = np.random.default_rng(seed)
        self.bytes = 0
        self.where = {}  # name -> (offset, shape)

    def tensor(self, name, shape, init="normal"):
        if init == "ones":
            arr = np.ones(shape, np.float32)
        elif init == "zeros":
            arr = np.zeros(shape, np.float32)
        else:
            arr = self.rng.standard_normal(shape, dtype=np.float32)
            arr *= np.float32(0.02)
        pad = -self.file.tell() % 64
        self.file.write(b"\0" * pad)
        offset = self.file.tell()
        arr.tofile(self.file)
        self.where[name] = (offset, tuple(shape))
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.location), ("offset", str(offset)),
                     ("length", str(arr.nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.bytes += arr.nbytes
        return t

    def close(self):
        self.file.close()


def build(folder, d, layers, vocab, positions, seq):
    """Writes folder/model.onnx and folder/model.bin; returns the weights'
    bytes and where each tensor is in model.bin (Writer.where)."""
    w = Writer(folder, "model.bin", seed=0)
    inits, nodes = [], []

    def init(name, shape, kind="normal"):
        inits.append(w.tensor(name, shape, kind))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def const(name, arr):
        nodes.append(helper.make_node(
            "Constant", [], [name], name=name,
            value=helper.make_tensor(name, TensorProto.INT64 if arr.dtype ==
                                     np.int64 else TensorProto.FLOAT,
                                     arr.shape, arr.flatten().tolist())))
        return name

    wte = init("wte", [vocab, d])
    wpe = init("wpe", [positions, d])
    pos = const("pos", np.arange(seq, dtype=np.int64))
    h = node("Add", [node("Gather", [wte, "ids"], "tok", axis=0),
                     node("Gather", [wpe, pos], "posemb", axis=0)], "h0")
    scale = const("scale", np.array(1.0 / np.sqrt(d), np.float32))
    split = const("split", np.array([d, d, d], np.int64))
    for i in range(layers):
        p = f"h{i}."
        a = node("LayerNormalization",
                 [h, init(p + "ln1.weight", [d], "ones"),
                  init(p + "ln1.bias", [d], "zeros")], p + "ln1", axis=-1)
        qkv = node("Add", [node("MatMul", [a, init(p + "attn.weight",
                                                   [d, 3 * d])],
                                p + "qkv0"),
                           init(p + "attn.bias", [3 * d], "zeros")],
                   p + "qkv")
        nodes.append(helper.make_node("Split", [qkv, split],
                                      [p + "q", p + "k", p + "v"],
                                      name=p + "split", axis=-1))
        kt = node("Transpose", [p + "k"], p + "kt", perm=[0, 2, 1])
        s = node("Mul", [node("MatMul", [p + "q", kt], p + "s0"), scale],
                 p + "s")
        att = node("MatMul", [node("Softmax", [s], p + "pr", axis=-1),
                              p + "v"], p + "att")
        o = node("MatMul", [att, init(p + "proj.weight", [d, d])], p + "o")
        h = node("Add", [h, o], p + "r1")
        m = node("LayerNormalization",
                 [h, init(p + "ln2.weight", [d], "ones"),
                  init(p + "ln2.bias", [d], "zeros")], p + "ln2", axis=-1)
        f = node("Relu", [node("MatMul", [m, init(p + "fc.weight",
                                                  [d, 4 * d])],
                               p + "fc")], p + "act")
        h = node("Add", [h, node("MatMul", [f, init(p + "mlp.weight",
                                                    [4 * d, d])],
                                 p + "mlp")], p + "r2")
    hf = node("LayerNormalization",
              [h, init("lnf.weight", [d], "ones"),
               init("lnf.bias", [d], "zeros")], "lnf", axis=-1)
    flat = node("Reshape", [hf, const("flat", np.array([-1, d], np.int64))],
                "hflat")
    nodes.append(helper.make_node("Gemm", [flat, wte], ["logits"],
                                  name="lm_head", transB=1))
    w.close()
    graph = helper.make_graph(
        nodes, "gpt2_external",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [seq, vocab])],
        initializer=inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    return w.bytes, w.where


def reference(folder, where, ids, d, layers):
    """The logits [seq, vocab] of build's model for |ids| [1, seq], in
    float64, from the weights in folder/model.bin (memory-mapped; one
    tensor converted at a time). LayerNormalization's epsilon is ONNX's
    default, 1e-5."""
    data = np.memmap(os.path.join(folder, "model.bin"), np.uint8, "r")

    def w(name):
        offset, shape = where[name]
        n = int(np.prod(shape))
        return np.frombuffer(data, np.float32, n, offset).reshape(
            shape).astype(np.float64)

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * w(p + ".weight") + w(
            p + ".bias")

    seq = ids.shape[1]
    h = w("wte")[ids[0]] + w("wpe")[:seq]  # [seq, d]
    for i in range(layers):
        p = f"h{i}."
        qkv = ln(h, p + "ln1") @ w(p + "attn.weight") + w(p + "attn.bias")
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        s = q @ k.T * np.float64(np.float32(1.0 / np.sqrt(d)))
        e = np.exp(s - s.max(-1, keepdims=True))
        h = h + (e / e.sum(-1, keepdims=True)) @ v @ w(p + "proj.weight")
        f = np.maximum(ln(h, p + "ln2") @ w(p + "fc.weight"), 0)
        h = h + f @ w(p + "mlp.weight")
    return ln(h, "lnf") @ w("wte").T


def measure(args):
    """Builds, compiles, runs and checks the model; prints the figures.
    Returns 0 when every check passes."""
    start = time.time()
    weights, where = build(args.workdir, args.d, args.layers, args.vocab,
                           args.positions, args.seq)
    print(f"model: d {args.d}, {args.layers} layers, vocabulary {args.vocab}: "
          f"{weights / 1e9:.2f} GB of float32 weights in model.bin (written "
          f"in {time.time() - start:.1f} s)")
    onnx_path = os.path.join(args.workdir, "model.onnx")
    pkg = os.path.join(args.workdir, "model.dlcp")
    names = ("model.onnx", "model.bin", "model.dlcp", "ids.npz",
             "logits.npz")
    failed = []
    try:
        for name in names[2:]:
            if os.path.exists(os.path.join(args.workdir, name)):
                os.remove(os.path.join(args.workdir, name))
        start = time.time()
        # A fresh process per command: RUSAGE_CHILDREN is the largest peak
        # of the children so far, so each runs from a child of its own.
        res = subprocess.run(
            [sys.executable, "-c", CHILD, args.dlc, onnx_path, pkg],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.time() - start
        sys.stdout.write(res.stderr)
        whole = int(res.stdout.strip() or 0)
        m = re.search(r"peak resident memory: ([0-9.]+) MiB", res.stderr)
        peak = float(m.group(1)) * 1048576 if m else 0
        verdict = ("no package" if res.returncode else
                   "PASS" if 0 < peak < 2 * weights else "MISS")
        if verdict != "PASS":
            failed.append("dlc peak memory")
        print(f"dlc: exit {res.returncode}, {wall:.1f} s wall; peak resident "
              f"memory {peak / 1e9:.2f} GB = {peak / weights:.2f}x the "
              f"weights (target < 2x: {verdict}); whole "
              f"process (wait status) {whole / 1e9:.2f} GB = "
              f"{whole / weights:.2f}x")
        if res.returncode:
            return 1
        print(f"package: {os.path.getsize(pkg) / 1e9:.2f} GB")
        ids = np.random.default_rng(1).integers(
            0, args.vocab, (1, args.seq)).astype(np.int64)
        inputs = os.path.join(args.workdir, "ids.npz")
        outputs = os.path.join(args.workdir, "logits.npz")
        np.savez(inputs, ids=ids)
        start = time.time()
        res = subprocess.run(
            [sys.executable, "-c", CHILD_RUN, args.dlrt, pkg, inputs,
             outputs], stdout=subprocess.PIPE, text=True)
        if res.returncode:
            print(f"dlrt run failed ({res.returncode})")
            return 1
        logits = np.load(outputs)["logits"]
        peak = int(res.stdout.strip())
        print(f"dlrt run --device host: {time.time() - start:.1f} s wall, "
              f"peak resident memory {peak / 1e9:.2f} GB = "
              f"{peak / weights:.2f}x the weights; logits "
              f"{list(logits.shape)}, finite: "
              f"{bool(np.isfinite(logits).all())}")
        start = time.time()
        want = reference(args.workdir, where, ids, args.d, args.layers)
        err = float(np.abs(logits - want).max()) if logits.shape == \
            want.shape else float("inf")
        verdict = "PASS" if err < 1e-3 else "MISS"
        if verdict != "PASS":
            failed.append("logits")
        print(f"NumPy reference (float64, {time.time() - start:.1f} s): "
              f"largest |dlrt - reference| {err:.2e} over logits of largest "
              f"size {float(np.abs(want).max()):.2f} (target < 1e-3: "
              f"{verdict})")
        if failed:
            print("FAILED: " + ", ".join(failed))
            return 1
        return 0
    finally:
        if not args.keep:
            for name in names:
                path = os.path.join(args.workdir, name)
                if os.path.exists(path):
                    os.remove(path)


# Runs one command and prints its peak resident memory (bytes) from its wait
# status: what dlc or dlrt held at most, including after dlc's phase clock.
CHILD = """
import resource, subprocess, sys
dlc, model, pkg = sys.argv[1:4]
rc = subprocess.run([dlc, model, "--time-phases", "--batch-size", "1",
                     "--no-cache", "--quiet", "-o", pkg]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(rc)
"""
CHILD_RUN = """
import resource, subprocess, sys
dlrt, pkg, inputs, outputs = sys.argv[1:5]
rc = subprocess.run([dlrt, "run", pkg, "--device", "host", "--inputs",
                     inputs, "--outputs", outputs],
                    stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(rc)
"""

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlc", default="dlc")
    ap.add_argument("--dlrt", default="dlrt")
    ap.add_argument("--workdir", default="/tmp/extdata-bench")
    ap.add_argument("--d", type=int, default=1600)
    ap.add_argument("--layers", type=int, default=24,
                    help="blocks (24: 3.28 GB of weights)")
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--keep", action="store_true",
                    help="keep the last model, its data and the package")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    return measure(args)


if __name__ == "__main__":
    sys.exit(main())

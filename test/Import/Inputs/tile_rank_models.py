"""Writes and runs the models of import-tile-rank.test: ONNX Tile nodes
whose view through dlgraph.broadcast_to must stay within a package's buffer
rank (runtime/schema/Limits.h, 8).

Usage: tile_rank_models.py OUT_DIR [--run [--break]]
Writes OUT_DIR/<name>.onnx and <name>.in.npz for each model below. With
--run compiles each model but rank16 with dlc, runs it with `dlrt run
--device host` and prints "ok <name>" when the output equals np.tile of the
input exactly (Tile only moves elements), else "MISMATCH <name>". --break
perturbs one reference value so that the check must fail (a self-test).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS = {
    # GPT-J's case: rank 5, only the last (size-1) axis repeats; this made a
    # rank-10 buffer that dlrt refused as corrupt.
    "gptj": ([2, 3, 1, 4, 1], [1, 1, 1, 1, 2]),
    # Every axis repeats, sizes 1 and larger: rank 5 -> an 8-dim view.
    "all": ([2, 3, 1, 4, 1], [2, 2, 2, 1, 3]),
    # Rank 8 with two tiled ends and an untiled run between them.
    "rank8": ([1, 2, 3, 2, 1, 2, 3, 2], [2, 1, 1, 1, 1, 1, 1, 3]),
    # Rank 8, every dimension of size 2 tiled: a 16-dim view, over the
    # limit: dlc must refuse it, naming the node.
    "rank16": ([2] * 8, [2] * 8),
}


def build(name, shape, reps, out):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [s * r for s, r in zip(shape, reps)])
    node = helper.make_node("Tile", ["x", "reps"], ["y"], name=f"{name}/Tile")
    graph = helper.make_graph(
        [node], name, [x], [y],
        [numpy_helper.from_array(np.array(reps, np.int64), "reps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, name + ".onnx"))
    rng = np.random.default_rng(len(name))
    np.savez(os.path.join(out, name + ".in.npz"),
             x=rng.standard_normal(shape).astype(np.float32))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (shape, reps) in MODELS.items():
        build(name, shape, reps, out)
    if "--run" not in sys.argv:
        return
    for name, (shape, reps) in MODELS.items():
        if name == "rank16":
            continue
        base = os.path.join(out, name)
        subprocess.run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"],
                       check=True)
        subprocess.run(["dlrt", "run", base + ".dlcp", "--device", "host",
                        "--inputs", base + ".in.npz", "--outputs",
                        base + ".out.npz"], check=True, stdout=subprocess.DEVNULL)
        want = np.tile(np.load(base + ".in.npz")["x"], reps)
        if "--break" in sys.argv:
            want.flat[want.size // 2] += 1
        got = np.load(base + ".out.npz")["y"]
        same = got.shape == want.shape and np.array_equal(got, want)
        print(("ok " if same else "MISMATCH ") + name)


if __name__ == "__main__":
    main()

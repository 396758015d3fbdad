"""Writes and runs the model of import-input-shape.test: a graph input with
symbolic dimensions ['batch', 'seq', 16] through MatMul and a Softmax over
the sequence axis, so the sequence length changes every output value.

Usage: input_shape_models.py OUT_DIR [--run PKG B T [--break]]
Without --run writes OUT_DIR/sym.onnx. With --run PKG B T runs the package
PKG (compiled with x = B x T x 16) with `dlrt run --device host` on a seeded
input and prints "ok B x T" when its output matches NumPy's within 1e-6
relative to its largest value (both f32; the sums differ only in order),
else "MISMATCH". --break perturbs the reference (a self-test).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
             helper.make_node("Softmax", ["h"], ["y"], name="attn", axis=1)]
    graph = helper.make_graph(nodes, "sym", [x], [y], [numpy_helper.from_array(W, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(out, "sym.onnx"))
    if "--run" not in sys.argv:
        return
    i = sys.argv.index("--run")
    pkg, b, t = sys.argv[i + 1], int(sys.argv[i + 2]), int(sys.argv[i + 3])
    xv = np.random.default_rng(1).standard_normal((b, t, 16)).astype(np.float32)
    np.savez(os.path.join(out, "in.npz"), x=xv)
    subprocess.run(["dlrt", "run", pkg, "--device", "host", "--inputs",
                    os.path.join(out, "in.npz"), "--outputs",
                    os.path.join(out, "out.npz")], check=True, stdout=subprocess.DEVNULL)
    h = xv.astype(np.float64) @ W.astype(np.float64)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    if "--break" in sys.argv:
        want[0, 0, 0] += 1e-3
    got = np.load(os.path.join(out, "out.npz"))["y"]
    ok = got.shape == want.shape and np.max(np.abs(got - want)) <= 1e-6 * np.max(np.abs(want))
    print(f"{'ok' if ok else 'MISMATCH'} {b} x {t}")


if __name__ == "__main__":
    main()

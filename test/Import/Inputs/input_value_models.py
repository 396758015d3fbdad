"""Writes and runs the model of import-input-value.test: y = ReduceSum(x,
axes) with keepdims 0 (opset 18, where axes is an input), x a [2, 3, 4] f32
graph input and axes a [1] int64 graph input, so the value of axes fixes the
output's shape. Also writes the value files --input-value reads.

Usage: input_value_models.py OUT_DIR [--run PKG AXIS [--break]]
Without --run writes OUT_DIR/reduce.onnx, indirect.onnx (the same with
axes negated twice before the ReduceSum), axis1.pb (TensorProto [1]),
axis2.npy ([1] int64), wrongtype.npy ([1] f32) and wrongshape.pb ([2] int64).
With --run PKG AXIS runs PKG (compiled with axes = [AXIS]) with `dlrt run
--device host` on a seeded x and prints "ok AXIS" when its output equals
NumPy's x.sum(AXIS) within 1e-6 relative to its largest value (the sums
differ only in order), else "MISMATCH". --break perturbs the reference.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    axes = helper.make_tensor_value_info("axes", TensorProto.INT64, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum",
                            keepdims=0)
    graph = helper.make_graph([node], "reduce", [x, axes], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              os.path.join(out, "reduce.onnx"))
    # The axes computed from the input (-(-axes)): dlc names the input.
    nodes = [helper.make_node("Neg", ["axes"], ["n1"], name="neg1"),
             helper.make_node("Neg", ["n1"], ["n2"], name="neg2"),
             helper.make_node("ReduceSum", ["x", "n2"], ["y"], name="sum",
                              keepdims=0)]
    graph = helper.make_graph(nodes, "indirect", [x, axes], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              os.path.join(out, "indirect.onnx"))
    with open(os.path.join(out, "axis1.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.array([1], np.int64)).SerializeToString())
    with open(os.path.join(out, "wrongshape.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.array([0, 1], np.int64)).SerializeToString())
    np.save(os.path.join(out, "axis2.npy"), np.array([2], np.int64))
    np.save(os.path.join(out, "wrongtype.npy"), np.array([2], np.float32))
    if "--run" not in sys.argv:
        return
    i = sys.argv.index("--run")
    pkg, axis = sys.argv[i + 1], int(sys.argv[i + 2])
    xv = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.savez(os.path.join(out, "in.npz"), x=xv)
    subprocess.run(["dlrt", "run", pkg, "--device", "host", "--inputs",
                    os.path.join(out, "in.npz"), "--outputs",
                    os.path.join(out, "out.npz")], check=True)
    got = np.load(os.path.join(out, "out.npz"))["y"]
    want = xv.astype(np.float64).sum(axis)
    if "--break" in sys.argv:
        want = want + 1e-3
    ok = got.shape == want.shape and \
        np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    print("ok %d" % axis if ok else "MISMATCH %s %s" % (got.shape, want.shape))


if __name__ == "__main__":
    main()

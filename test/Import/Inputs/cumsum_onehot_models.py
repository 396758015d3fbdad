"""Writes the ONNX CumSum and OneHot models of import-cumsum-onehot.test into
OUT_DIR: small models whose imported IR and errors the test checks, and with
--run, one model with every CumSum variant (axes 0, 1, -1 and one given at
run time; exclusive and reverse; f32, f64 and int64) and OneHot variant (negative and out-of-range
indices, axes 0, 1, -1, float indices, int32 values) that dlc compiles and
`dlrt run --device host` runs, compared with NumPy.

Usage: cumsum_onehot_models.py OUT_DIR [--run [--break]]
With --run prints "ok cumsum_onehot max_err <e>" when every output has the
reference's dtype and shape and is within 1e-5 * (1 + |want|) of it (f32
sums of at most 5 terms of size ~1 differ from the f64 reference by ~1e-7;
integers must be equal), else "MISMATCH ...". --break perturbs one reference
value so that the check must fail (a self-test).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlc_compare import run_and_compare  # noqa: E402


def const(name, dtype, dims, vals):
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, dtype, dims, vals))


def save(out, name, nodes, inputs, outputs, opset=14):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))


F, D, I32, I64, B = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32,
                     TensorProto.INT64, TensorProto.BOOL)


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def write_models(out):
    x = vi("x", F, [2, 3, 4])
    y = lambda shape, t=F: vi("y", t, shape)
    save(out, "cumsum", [const("a", I64, [], [1]),
                         helper.make_node("CumSum", ["x", "a"], ["y"])],
         [x], [y([2, 3, 4])], opset=11)
    save(out, "cumsum_rev_excl", [
        const("a", I32, [1], [-1]),
        helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)],
        [x], [y([2, 3, 4])])
    save(out, "cumsum_runtime_axis", [
        helper.make_node("CumSum", ["x", "a"], ["y"])],
        [x, vi("a", I64, [])], [y([2, 3, 4])])
    save(out, "cumsum_float_axis", [
        helper.make_node("CumSum", ["x", "a"], ["y"])],
        [x, vi("a", F, [])], [y([2, 3, 4])])
    save(out, "cumsum_axis_range", [
        const("a", I64, [], [3]),
        helper.make_node("CumSum", ["x", "a"], ["y"])], [x], [y([2, 3, 4])])
    save(out, "cumsum_axis_shape", [
        const("a", I64, [2], [0, 1]),
        helper.make_node("CumSum", ["x", "a"], ["y"])], [x], [y([2, 3, 4])])
    save(out, "cumsum_bool", [
        const("a", I64, [], [0]),
        helper.make_node("CumSum", ["b", "a"], ["y"])], [vi("b", B, [4])],
        [y([4], B)])
    save(out, "cumsum_flag", [
        const("a", I64, [], [0]),
        helper.make_node("CumSum", ["x", "a"], ["y"], reverse=2)], [x],
        [y([2, 3, 4])])

    i = vi("i", I64, [2, 3])
    save(out, "onehot", [
        const("d", I64, [], [5]), const("v", F, [2], [0.0, 1.0]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [i],
        [y([2, 3, 5])], opset=11)
    save(out, "onehot_axis0", [
        const("d", F, [1], [4.0]), const("v", I32, [2], [-1, 3]),
        helper.make_node("OneHot", ["f", "d", "v"], ["y"], axis=0)],
        [vi("f", F, [3])], [y([4, 3], I32)])
    save(out, "onehot_runtime_depth", [
        const("v", F, [2], [0.0, 1.0]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
        [i, vi("d", I64, [])], [y([2, 3, 5])])
    save(out, "onehot_runtime_values", [
        const("d", I64, [], [5]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
        [i, vi("v", F, [2])], [y([2, 3, 5])])
    save(out, "onehot_values_shape", [
        const("d", I64, [], [5]), const("v", F, [3], [0.0, 1.0, 2.0]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [i],
        [y([2, 3, 5])])
    save(out, "onehot_depth_zero", [
        const("d", I64, [], [0]), const("v", F, [2], [0.0, 1.0]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [i],
        [y([2, 3, 0])])
    save(out, "onehot_axis_range", [
        const("d", I64, [], [5]), const("v", F, [2], [0.0, 1.0]),
        helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=-4)], [i],
        [y([2, 3, 5])])


def ref_cumsum(x, axis, exclusive, reverse):
    """CumSum as ONNX specifies it, in the dtype of |x| (float64 for floats)."""
    acc = x.astype(np.float64) if x.dtype.kind == "f" else x
    if reverse:
        acc = np.flip(acc, axis)
    s = np.cumsum(acc, axis=axis)
    if exclusive:
        s = s - acc
    if reverse:
        s = np.flip(s, axis)
    return s.astype(x.dtype)


def ref_onehot(idx, depth, axis, off, on, dtype):
    k = np.trunc(idx).astype(np.int64)
    k = np.where(k < 0, k + depth, k)
    rank = idx.ndim
    axis = axis + rank + 1 if axis < 0 else axis
    shape = [1] * (rank + 1)
    shape[axis] = depth
    pos = np.arange(depth).reshape(shape)
    hit = np.expand_dims(k, axis) == pos
    return np.where(hit, on, off).astype(dtype)


def run_numerics(out, broken):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xd = rng.standard_normal((6,)).astype(np.float64)
    xi = rng.integers(-50, 50, (2, 5)).astype(np.int64)
    idx = np.array([[0, 3, -1], [4, 7, -5], [-6, 2, 1]], np.int64)  # 7, -6 out
    fidx = np.array([1.7, -1.2, 3.9, 5.0], np.float32)
    nodes, outs, wants = [], [], []

    def output(name, t, shape):
        outs.append(vi(name, t, shape))

    cases = [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (2, 1, 1), (1, 0, 1),
             (-3, 1, 0)]
    for k, (axis, excl, rev) in enumerate(cases):
        nodes += [const(f"a{k}", I64 if k % 2 else I32, [], [axis]),
                  helper.make_node("CumSum", ["x", f"a{k}"], [f"cs{k}"],
                                   exclusive=excl, reverse=rev)]
        output(f"cs{k}", F, [3, 4, 5])
        wants.append(ref_cumsum(x, axis, excl, rev))
    # An axis given at run time (-2 here).
    nodes.append(helper.make_node("CumSum", ["x", "ax"], ["csr"], reverse=1))
    output("csr", F, [3, 4, 5])
    wants.append(ref_cumsum(x, -2, 0, 1))
    nodes += [const("a_d", I64, [], [0]),
              helper.make_node("CumSum", ["xd", "a_d"], ["csd"], reverse=1),
              const("a_i", I64, [], [1]),
              helper.make_node("CumSum", ["xi", "a_i"], ["csi"], exclusive=1)]
    output("csd", D, [6])
    wants.append(ref_cumsum(xd, 0, 0, 1))
    output("csi", I64, [2, 5])
    wants.append(ref_cumsum(xi, 1, 1, 0))
    for k, (axis, depth) in enumerate([(-1, 5), (0, 6), (1, 4)]):
        nodes += [const(f"d{k}", I64, [], [depth]),
                  const(f"v{k}", F, [2], [-0.5, 2.0]),
                  helper.make_node("OneHot", ["idx", f"d{k}", f"v{k}"],
                                   [f"oh{k}"], axis=axis)]
        shape = [3, 3]
        shape.insert(axis if axis >= 0 else 3 + axis, depth)
        output(f"oh{k}", F, shape)
        wants.append(ref_onehot(idx, depth, axis, -0.5, 2.0, np.float32))
    nodes += [const("df", D, [1], [5.0]), const("vals_i", I32, [2], [0, 9]),
              helper.make_node("OneHot", ["fidx", "df", "vals_i"], ["ohf"])]
    output("ohf", I32, [4, 5])
    wants.append(ref_onehot(fidx, 5, -1, 0, 9, np.int32))

    base = os.path.join(out, "cumsum_onehot")
    g = helper.make_graph(nodes, "cumsum_onehot",
                          [vi("x", F, [3, 4, 5]), vi("xd", D, [6]),
                           vi("xi", I64, [2, 5]), vi("idx", I64, [3, 3]),
                           vi("fidx", F, [4]), vi("ax", I32, [])], outs)
    onnx.save(helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 14)]), base + ".onnx")
    np.savez(base + ".in.npz", x=x, xd=xd, xi=xi, idx=idx, fidx=fidx,
             ax=np.array(-2, np.int32))
    subprocess.run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"],
                   check=True)
    if broken:
        wants[3].flat[5] += 1e-2
    return run_and_compare(base, [o.name for o in outs], wants,
                           "cumsum_onehot")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--run" not in sys.argv:
        write_models(out)
        return
    sys.exit(0 if run_numerics(out, "--break" in sys.argv) else 1)


if __name__ == "__main__":
    main()

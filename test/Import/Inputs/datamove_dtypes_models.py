"""Writes and runs the model of import-datamove-dtypes.test: graph inputs of
dtype int64, int32, float64 and bool, each flowing at run time through every
data-movement op (Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat,
Expand, Tile, DepthToSpace in both modes, SpaceToDepth, Gather,
GatherElements, Slice, Split, Pad in constant, edge and reflect mode,
Identity).

Usage: datamove_dtypes_models.py OUT_DIR [--run [--break]]
Without --run writes OUT_DIR/datamove_dtypes.onnx and its inputs
(OUT_DIR/datamove_dtypes.in.npz), and OUT_DIR/pad_big_value.onnx (an int64
Pad whose constant_value an f64 cannot hold exactly). With --run also compiles it with dlc, runs
it with `dlrt run --device host` and prints "ok datamove_dtypes <n> outputs"
when every output has the reference's dtype and shape and equals it exactly
(the ops only move elements, so any difference is a bug), else "MISMATCH
...". --break perturbs one reference value so that the check must fail (a
self-test).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402

DTYPES = [("i64", TensorProto.INT64, np.int64),
          ("i32", TensorProto.INT32, np.int32),
          ("f64", TensorProto.DOUBLE, np.float64),
          ("b", TensorProto.BOOL, np.bool_)]
SHAPE = (2, 4, 2, 2)


def const(name, vals, dtype=np.int64):
    arr = np.array(vals, dtype)
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(arr, name))


def depth_to_space(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x, b):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def build(out):
    """Returns (model, inputs, output names, references)."""
    rng = np.random.default_rng(0)
    nodes, inputs, outputs, wants, feeds = [], [], [], [], {}
    gidx = np.array([[3, -1], [0, 2], [-4, 1]], np.int64)
    eidx = rng.integers(-2, 2, (2, 4, 2, 2)).astype(np.int32)
    feeds["gidx"] = gidx
    feeds["eidx"] = eidx
    inputs += [helper.make_tensor_value_info("gidx", TensorProto.INT64,
                                             gidx.shape),
               helper.make_tensor_value_info("eidx", TensorProto.INT32,
                                             eidx.shape)]
    nodes += [const("shape_r", [4, -1, 2]), const("axes_u", [1, 3]),
              const("axes_s", [1, 3]), const("shape_e", [3, 1, 1, 1, 1]),
              const("reps", [1, 2, 1, 3]), const("starts", [1, -1, 0]),
              const("ends", [3, -100, 2]), const("sl_axes", [1, 2, 3]),
              const("steps", [1, -2, 2]), const("split", [1, 3]),
              const("pads", [0, 1, -1, 2, 1, 0, 1, 1]),
              const("pads_er", [0, 1, 1, 0, 0, 1, 0, 1])]

    def out(name, tensor_type, want):
        outputs.append(helper.make_tensor_value_info(name, tensor_type,
                                                     want.shape))
        wants.append(want)

    for tag, tt, npt in DTYPES:
        if npt == np.bool_:
            x = rng.integers(0, 2, SHAPE).astype(np.bool_)
            y = rng.integers(0, 2, (2, 1, 2, 2)).astype(np.bool_)
            padv, padn = True, True
        elif npt == np.float64:
            x = rng.standard_normal(SHAPE) * 1e10
            y = rng.standard_normal((2, 1, 2, 2))
            padv, padn = -2.5e300, -2.5e300
        else:
            lim = 2**62 if npt == np.int64 else 2**30
            x = rng.integers(-lim, lim, SHAPE).astype(npt)
            y = rng.integers(-lim, lim, (2, 1, 2, 2)).astype(npt)
            padv = padn = -7
        xn, yn = "x_" + tag, "y_" + tag
        feeds[xn], feeds[yn] = x, y
        inputs += [helper.make_tensor_value_info(xn, tt, SHAPE),
                   helper.make_tensor_value_info(yn, tt, y.shape)]

        def node(op, ins, name, want, **attrs):
            o = f"{name}_{tag}"
            nodes.append(helper.make_node(op, ins, [o], **attrs))
            out(o, tt, want)

        node("Reshape", [xn, "shape_r"], "reshape", x.reshape(4, -1, 2))
        node("Flatten", [xn], "flatten", x.reshape(2, -1), axis=1)
        node("Transpose", [xn], "transpose", x.transpose(2, 0, 3, 1),
             perm=[2, 0, 3, 1])
        nodes.append(helper.make_node("Unsqueeze", [xn, "axes_u"],
                                      ["unsq_" + tag]))
        out("unsq_" + tag, tt, x.reshape(2, 1, 4, 1, 2, 2))
        node("Squeeze", ["unsq_" + tag, "axes_s"], "squeeze", x)
        node("Concat", [xn, yn, xn], "concat",
             np.concatenate([x, y, x], axis=1), axis=1)
        node("Expand", [yn, "shape_e"], "expand",
             np.broadcast_to(y, (3, 2, 1, 2, 2)).copy())
        node("Tile", [yn, "reps"], "tile", np.tile(y, (1, 2, 1, 3)))
        node("DepthToSpace", [xn], "d2s_dcr", depth_to_space(x, 2, "DCR"),
             blocksize=2)
        node("DepthToSpace", [xn], "d2s_crd", depth_to_space(x, 2, "CRD"),
             blocksize=2, mode="CRD")
        node("SpaceToDepth", [xn], "s2d", space_to_depth(x, 2), blocksize=2)
        node("Gather", [xn, "gidx"], "gather", np.take(x, gidx % 4, axis=1),
             axis=1)
        node("GatherElements", [xn, "eidx"], "gather_el",
             np.take_along_axis(x, eidx.astype(np.int64) % 2, axis=3),
             axis=3)
        node("Slice", [xn, "starts", "ends", "sl_axes", "steps"], "slice",
             x[:, 1:3, ::-2, 0:2:2])
        o0, o1 = "split0_" + tag, "split1_" + tag
        nodes.append(helper.make_node("Split", [xn, "split"], [o0, o1],
                                      axis=1))
        out(o0, tt, x[:, :1])
        out(o1, tt, x[:, 1:])
        nodes.append(const("padv_" + tag, padv, npt))
        cropped = x[:, :, 1:, :]
        node("Pad", [xn, "pads", "padv_" + tag], "pad_const",
             np.pad(cropped, [(0, 1), (1, 0), (0, 1), (2, 1)],
                    constant_values=padn))
        er = [(0, 0), (1, 1), (1, 0), (0, 1)]
        node("Pad", [xn, "pads_er"], "pad_edge", np.pad(x, er, mode="edge"),
             mode="edge")
        node("Pad", [xn, "pads_er"], "pad_reflect",
             np.pad(x, er, mode="reflect"), mode="reflect")
        node("Identity", [xn], "identity", x)
    g = helper.make_graph(nodes, "datamove_dtypes", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(m)
    return m, feeds, [o.name for o in outputs], wants


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "datamove_dtypes")
    m, feeds, names, wants = build(out)
    onnx.save(m, base + ".onnx")
    np.savez(base + ".in.npz", **feeds)
    g = helper.make_graph(
        [const("pads", [1, 0]), const("v", 2**60 + 1),
         helper.make_node("Pad", ["x", "pads", "v"], ["y"])], "pad_big_value",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [4])])
    onnx.save(helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 14)]),
        os.path.join(out, "pad_big_value.onnx"))
    if "--run" not in sys.argv:
        return
    if "--break" in sys.argv:
        # A copy: many references are views of the same input.
        w = wants[len(wants) // 2] = wants[len(wants) // 2].copy()
        w.flat[1] = not w.flat[1] if w.dtype == np.bool_ else w.flat[1] + 1
    run_and_compare(base, "datamove_dtypes", names, wants)

if __name__ == "__main__":
    main()

"""Writes and runs the model of import-opset18.test: the opset-18/19 forms of
the ops whose inputs or attributes changed after opset 17, and the ops that
the dynamo exporter writes into training exports, on run-time inputs:

  GatherND     constant index tuples (negative, repeated), run-time index
               tuples, batch_dims = 1
  ScatterND    run-time data and updates, constant indices writing a row
               twice (the last write wins)
  Split        num_outputs = 3 over 7 elements (3, 3, 1)
  SplitToSequence / SequenceAt  a scalar split of 2 over 5 (2, 2, 1),
               positions 0 and -1; no split with keepdims = 0
  ReduceMax    axes as input 1; ReduceMin with noop_with_empty_axes = 1
  Pad          axes = [-1]
  Resize       nearest, axes = [2, 3] with scales, and sizes with
               keep_aspect_ratio_policy = not_larger

Every output moves or selects elements, so the NumPy references (written
here from the ONNX operator definitions) are exact.

Usage: opset18_models.py OUT_DIR [--break | --write-unmapped]: writes OUT_DIR/opset18.onnx and
its inputs, compiles it with dlc, runs it with `dlrt run` and prints "ok
opset18 <n> outputs" when every output equals its reference, else
"MISMATCH ...". --break perturbs one reference (a self-test).
--write-unmapped only writes OUT_DIR/unmapped_version.onnx (SpaceToDepth at
opset 28, a version the importer once did not map).
"""
import os
import sys

import numpy as np
from onnx import helper, mapping, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_outputs import run_and_compare  # noqa: E402


def const(name, array):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(array, name))


def gather_nd(data, idx, batch_dims=0):
    """ONNX GatherND, from its definition: each index tuple (after
    batch_dims leading batch axes) picks a slice of data."""
    bshape = idx.shape[:batch_dims]
    out = []
    d = data.reshape((-1,) + data.shape[batch_dims:])
    ix = idx.reshape((-1,) + idx.shape[batch_dims:])
    for b in range(d.shape[0]):
        tuples = ix[b].reshape(-1, idx.shape[-1])
        out.append(np.stack([d[b][tuple(t)] for t in tuples]))
    rest = data.shape[batch_dims + idx.shape[-1]:]
    return np.stack(out).reshape(bshape + idx.shape[batch_dims:-1] + rest)


def write_unmapped(out):
    """SpaceToDepth at opset 28, whose `mode` attribute (new in 28) the
    importer does not map yet."""
    x = helper.make_tensor_value_info("x", 1, [1, 4, 2, 2])
    y = helper.make_tensor_value_info("y", 1, [1, 16, 1, 1])
    graph = helper.make_graph(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2,
                          name="s2d")], "unmapped", [x], [y])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 28)])
    model.ir_version = 8
    with open(os.path.join(out, "unmapped_version.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--write-unmapped" in sys.argv:
        write_unmapped(out)
        return
    rng = np.random.default_rng(0)
    f32 = np.float32
    x = rng.standard_normal((3, 4, 2)).astype(f32)
    h = rng.standard_normal((2, 7)).astype(f32)
    img = rng.standard_normal((1, 2, 3, 4)).astype(f32)
    data = rng.standard_normal((4, 3)).astype(f32)
    upd = rng.standard_normal((3, 3)).astype(f32)
    ids = np.array([[1, -1], [0, 2], [-3, 0]], np.int64)

    nodes, outs, wants = [], [], []

    def output(name, want):
        outs.append(helper.make_tensor_value_info(
            name, mapping.NP_TYPE_TO_TENSOR_TYPE[want.dtype], want.shape))
        wants.append(want)

    tuples = np.array([[[0, 1], [2, -1], [0, 1]], [[1, 0], [2, 3], [-3, 0]]],
                      np.int64)
    nodes += [const("tuples", tuples),
              helper.make_node("GatherND", ["x", "tuples"], ["gnd_const"])]
    output("gnd_const", gather_nd(x, tuples))
    nodes.append(helper.make_node("GatherND", ["x", "ids"], ["gnd_runtime"]))
    output("gnd_runtime", gather_nd(x, ids))
    bidx = np.array([[[2], [0], [-1]], [[6], [1], [0]]], np.int64)
    nodes += [const("bidx", bidx),
              helper.make_node("GatherND", ["h", "bidx"], ["gnd_batch"],
                               batch_dims=1)]
    output("gnd_batch", gather_nd(h, bidx, 1))

    rows = np.array([[1], [0], [1]], np.int64)
    nodes += [const("rows", rows),
              helper.make_node("ScatterND", ["data", "rows", "upd"],
                               ["scatter"])]
    want = data.copy()
    for u, r in enumerate(rows[:, 0]):
        want[r] = upd[u]
    output("scatter", want)

    nodes.append(helper.make_node("Split", ["h"], ["s0", "s1", "s2"], axis=1,
                                  num_outputs=3))
    for i, (a, b) in enumerate([(0, 3), (3, 6), (6, 7)]):
        output(f"s{i}", h[:, a:b])
    nodes += [const("two", np.array(2, np.int64)),
              helper.make_node("SplitToSequence", ["x", "two"], ["seq"],
                               axis=1),
              const("first", np.array(0, np.int64)),
              const("lastpos", np.array(-1, np.int64)),
              helper.make_node("SequenceAt", ["seq", "first"], ["seq_first"]),
              helper.make_node("SequenceAt", ["seq", "lastpos"], ["seq_last"]),
              helper.make_node("SplitToSequence", ["x"], ["rows_seq"], axis=2,
                               keepdims=0),
              helper.make_node("SequenceAt", ["rows_seq", "first"],
                               ["seq_squeezed"])]
    output("seq_first", x[:, 0:2])
    output("seq_last", x[:, 2:4])
    output("seq_squeezed", x[:, :, 0])

    nodes += [const("axis1", np.array([1], np.int64)),
              helper.make_node("ReduceMax", ["x", "axis1"], ["rmax"],
                               keepdims=0),
              helper.make_node("ReduceMin", ["x"], ["rmin_noop"],
                               noop_with_empty_axes=1)]
    output("rmax", x.max(axis=1))
    output("rmin_noop", x)

    nodes += [const("pads", np.array([2, 1], np.int64)),
              const("padval", np.array(0.5, f32)),
              const("lastaxis", np.array([-1], np.int64)),
              helper.make_node("Pad", ["h", "pads", "padval", "lastaxis"],
                               ["padded"])]
    output("padded", np.pad(h, ((0, 0), (2, 1)), constant_values=f32(0.5)))

    nodes += [const("scales", np.array([2, 3], f32)),
              helper.make_node("Resize", ["img", "", "scales"], ["up"],
                               mode="nearest", axes=[2, 3],
                               nearest_mode="floor",
                               coordinate_transformation_mode="asymmetric"),
              const("sizes", np.array([6, 12], np.int64)),
              helper.make_node("Resize", ["img", "", "", "sizes"], ["fit"],
                               mode="nearest", axes=[2, 3],
                               keep_aspect_ratio_policy="not_larger",
                               nearest_mode="floor",
                               coordinate_transformation_mode="asymmetric")]
    output("up", img.repeat(2, axis=2).repeat(3, axis=3))
    # not_larger: scale = min(6 / 3, 12 / 4) = 2 on both axes -> [6, 8].
    output("fit", img.repeat(2, axis=2).repeat(2, axis=3))

    inputs = [("x", x), ("h", h), ("img", img), ("data", data), ("upd", upd),
              ("ids", ids)]
    graph = helper.make_graph(
        nodes, "opset18",
        [helper.make_tensor_value_info(
            n, mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape)
         for n, v in inputs], outs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    base = os.path.join(out, "opset18")
    with open(base + ".onnx", "wb") as f:
        f.write(model.SerializeToString())
    np.savez(base + ".in.npz", **dict(inputs))
    if "--break" in sys.argv:
        wants[3] = wants[3].copy()
        wants[3].flat[0] += 1
    run_and_compare(base, "opset18", [o.name for o in outs], wants)


if __name__ == "__main__":
    main()

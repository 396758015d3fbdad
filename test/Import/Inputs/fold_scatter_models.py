"""Writes the small ONNX models of import-fold-scatternd.test (ScatterND and
the folding of nodes whose inputs are all compile-time constants) into
OUT_DIR."""
import os
import sys

import onnx
from onnx import TensorProto, helper


def const(name, dtype, dims, vals):
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, dtype, dims, vals))


def save(out, name, nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    vi = helper.make_tensor_value_info
    # ScatterND on constants (reduction none): rows 0 and 2 of a 3x2 zero
    # matrix replaced; then reduction add on the same indices.
    scatter = [
        const("d", F, [3, 2], [0] * 6),
        const("i", I64, [2, 1], [2, 0]),
        const("u", F, [2, 2], [1, 2, 3, 4]),
    ]
    save(out, "scatter_const", scatter + [
        helper.make_node("ScatterND", ["d", "i", "u"], ["s"], name="sc"),
        helper.make_node("Add", ["x", "s"], ["y"])],
        [vi("x", F, [3, 2])], [vi("y", F, [3, 2])])
    # Element-level indices (k = rank), a negative index, reduction mul.
    save(out, "scatter_mul", [
        const("d", I64, [2, 2], [1, 2, 3, 4]),
        const("i", I64, [2, 2], [0, 1, -1, -1]),
        const("u", I64, [2], [10, 100]),
        helper.make_node("ScatterND", ["d", "i", "u"], ["y"], name="sc",
                         reduction="mul")], [], [vi("y", I64, [2, 2])])
    # Data computed at run time, constant indices: imported as a select
    # (import-opset18.test checks the values).
    save(out, "scatter_runtime", scatter[1:] + [
        helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc")],
        [vi("x", F, [3, 2])], [vi("y", F, [3, 2])])
    # Indices computed at run time, and a reduction on run-time data: errors
    # that name the node and the input.
    save(out, "scatter_runtime_indices", [
        const("u", F, [2, 2], [1, 2, 3, 4]),
        helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="sc")],
        [vi("x", F, [3, 2]), vi("idx", I64, [2, 1])], [vi("y", F, [3, 2])])
    save(out, "scatter_runtime_add", scatter[1:] + [
        helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc",
                         reduction="add")],
        [vi("x", F, [3, 2])], [vi("y", F, [3, 2])])
    save(out, "scatter_runtime_mul", scatter[1:] + [
        helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc",
                         reduction="mul")],
        [vi("x", F, [3, 2])], [vi("y", F, [3, 2])])
    save(out, "scatter_oob", [
        const("d", F, [3, 2], [0] * 6), const("i", I64, [1, 1], [3]),
        const("u", F, [1, 2], [1, 2]),
        helper.make_node("ScatterND", ["d", "i", "u"], ["y"], name="sc")],
        [], [vi("y", F, [3, 2])])
    # An int64 chain that only folds through the op folders (Mod, Sub,
    # Transpose of a non-f32 constant), as in torchvision's Swin window
    # shifts: Transpose requires f32 unless every input is a constant.
    save(out, "fold_chain", [
        const("a", I64, [2], [7, -7]), const("b", I64, [], [3]),
        helper.make_node("Mod", ["a", "b"], ["m"]),
        helper.make_node("Sub", ["b", "m"], ["s"]),
        const("ax", I64, [1], [0]),
        helper.make_node("Unsqueeze", ["s", "ax"], ["su"]),
        helper.make_node("Concat", ["su", "su"], ["c"], axis=0),
        helper.make_node("Transpose", ["c"], ["y"], perm=[1, 0])],
        [], [vi("y", I64, [2, 2])])
    # Transpose of a run-time int64 input: a dlgraph.transpose, not folded.
    save(out, "transpose_i64", [
        helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
        [vi("x", I64, [2, 3])], [vi("y", I64, [3, 2])])

    # ScatterElements on constants, axis 1 with a negative index: row 0
    # gets 2 at 0 and 1 at 2, row 1 gets 3 at 1 and 4 at 2.
    elements = [
        const("ei", I64, [2, 2], [2, 0, 1, -1]),
        const("eu", F, [2, 2], [1, 2, 3, 4]),
    ]
    save(out, "scatter_elements_const", elements + [
        const("ed", F, [2, 3], [0] * 6),
        helper.make_node("ScatterElements", ["ed", "ei", "eu"], ["s"],
                         name="se", axis=1),
        helper.make_node("Add", ["x", "s"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    # Axis 0, reduction add, element (1, 0) written twice:
    # [[1, 2], [3, 4]] -> [[1, 2 + 40], [3 + 10 + 30, 4 + 20]].
    save(out, "scatter_elements_add", [
        const("d", I64, [2, 2], [1, 2, 3, 4]),
        const("i", I64, [2, 2], [1, 1, 1, 0]),
        const("u", I64, [2, 2], [10, 20, 30, 40]),
        helper.make_node("ScatterElements", ["d", "i", "u"], ["y"],
                         name="se", reduction="add")],
        [], [vi("y", I64, [2, 2])])
    # Run-time data, constant indices and updates (indices smaller than
    # data): elements (0, 2) and (1, 0) are selected from the updates.
    save(out, "scatter_elements_runtime", [
        const("i", I64, [2, 1], [2, 0]), const("u", F, [2, 1], [5, 6]),
        helper.make_node("ScatterElements", ["x", "i", "u"], ["y"],
                         name="se", axis=1)],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    save(out, "scatter_elements_oob", [
        const("i", I64, [1, 1], [3]), const("u", F, [1, 1], [5]),
        helper.make_node("ScatterElements", ["x", "i", "u"], ["y"],
                         name="se", axis=1)],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    # Integer reductions of constants fold (dlgraph reductions are float
    # only): ReduceSum over axis 1 without keepdims, ReduceProd over axis 0.
    save(out, "reduce_int_const", [
        const("a", I64, [2, 3], [1, 2, 3, 4, 5, 6]),
        const("ax1", I64, [1], [1]),
        helper.make_node("ReduceSum", ["a", "ax1"], ["s"], keepdims=0),
        helper.make_node("ReduceProd", ["a"], ["p"], axes=[0])],
        [], [vi("s", I64, [2]), vi("p", I64, [1, 3])])


if __name__ == "__main__":
    main()

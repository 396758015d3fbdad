"""Writes the small ONNX models of import-misc-ops.test (ArgMax, Range,
Dropout, Resize) into OUT_DIR."""
import os
import sys

import onnx
from onnx import TensorProto, helper


def const(name, dtype, dims, vals):
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, dtype, dims, vals))


def save(out, name, nodes, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    x = helper.make_tensor_value_info("x", F, [2, 3, 4, 5])
    y = lambda shape, t=F: helper.make_tensor_value_info("y", t, shape)
    save(out, "argmax", [helper.make_node(
        "ArgMax", ["x"], ["y"], axis=-3, keepdims=0, select_last_index=1)],
        [x], [y([2, 4, 5], I64)])
    save(out, "range_const", [
        const("s", I64, [], [1]), const("l", I64, [], [10]),
        const("d", I64, [], [3]),
        helper.make_node("Range", ["s", "l", "d"], ["y"])], [], [y([3], I64)])
    save(out, "range_runtime", [
        const("l", I64, [], [10]), const("d", I64, [], [3]),
        helper.make_node("Range", ["s", "l", "d"], ["y"])],
        [helper.make_tensor_value_info("s", I64, [])], [y([3], I64)])
    save(out, "dropout_train", [
        const("r", F, [], [0.25]), const("t", B, [], [True]),
        helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=3)],
        [x], [y([2, 3, 4, 5]), helper.make_tensor_value_info(
            "m", B, [2, 3, 4, 5])])
    save(out, "dropout_runtime_mode", [
        helper.make_node("Dropout", ["x", "", "t"], ["y"])],
        [x, helper.make_tensor_value_info("t", B, [])], [y([2, 3, 4, 5])])
    save(out, "resize_cubic", [
        const("sc", F, [4], [1, 1, 2, 2]),
        helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="cubic")],
        [x], [y([2, 3, 8, 10])])
    save(out, "resize_bad_mode", [
        const("sc", F, [4], [1, 1, 2, 2]),
        helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="bicubic")],
        [x], [y([2, 3, 8, 10])])
    save(out, "resize_runtime_scales", [
        helper.make_node("Resize", ["x", "", "sc"], ["y"])],
        [x, helper.make_tensor_value_info("sc", F, [4])], [y([2, 3, 8, 10])])
    save(out, "resize_sizes", [
        const("sz", I64, [4], [2, 3, 7, 3]),
        helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                         coordinate_transformation_mode="align_corners")],
        [x], [y([2, 3, 7, 3])])


if __name__ == "__main__":
    main()

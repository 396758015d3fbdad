"""Writes the small ONNX models of import-conv.test (auto_pad SAME_*,
ConvTranspose, 3-D pooling and their errors) into OUT_DIR."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F = TensorProto.FLOAT
    vi = lambda n, s: helper.make_tensor_value_info(n, F, s)  # noqa: E731
    w = lambda n, s: numpy_helper.from_array(  # noqa: E731
        np.ones(s, np.float32), n)
    # 5 -> ceil(5 / 2) = 3 with a 2-wide kernel: 1 padding element, at the
    # end (SAME_UPPER) or the beginning (SAME_LOWER).
    for mode in ("SAME_UPPER", "SAME_LOWER"):
        save(out, "conv_" + mode.lower(), [helper.make_node(
            "Conv", ["x", "w"], ["y"], auto_pad=mode, strides=[2, 2])],
            [vi("x", [1, 1, 5, 5])], [vi("y", [1, 1, 3, 3])],
            [w("w", (1, 1, 2, 2))])
    save(out, "maxpool_same_lower", [helper.make_node(
        "MaxPool", ["x"], ["y"], auto_pad="SAME_LOWER", kernel_shape=[3, 2],
        strides=[1, 2])], [vi("x", [1, 1, 5, 5])], [vi("y", [1, 1, 5, 3])])
    # [1, 4, 3, 3] -> [1, 6, 7, 7]: 2 * 2 + 1 + 3 - 1 - 0 per axis.
    save(out, "convtranspose", [helper.make_node(
        "ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
        pads=[1, 1, 0, 0], output_padding=[1, 1], group=2)],
        [vi("x", [1, 4, 3, 3])], [vi("y", [1, 6, 7, 7])],
        [w("w", (4, 3, 3, 3)), w("b", (6,))])
    save(out, "convtranspose_outpad", [helper.make_node(
        "ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
        output_padding=[2, 0])],
        [vi("x", [1, 1, 3, 3])], [vi("y", [1, 1, 9, 7])],
        [w("w", (1, 1, 3, 3))])
    save(out, "maxpool3d", [helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[2, 3, 3], strides=[2, 1, 2],
        pads=[1, 0, 1, 0, 1, 1])],
        [vi("x", [2, 3, 4, 5, 6])], [vi("y", [2, 3, 2, 4, 3])])


if __name__ == "__main__":
    main()

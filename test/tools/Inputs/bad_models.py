"""Writes ONNX models that dlc must reject (an unsupported op, a bad opset)
and models for `dlc --check`."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
x3 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
y3 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 1])
g = helper.make_graph([helper.make_node("GlobalLpPool", ["x"], ["y"], name="lppool1")], "g", [x3], [y3])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "unsupported.onnx"))
# HardSwish exists only from opset 14, so no opset-9 definition is mapped
# (Relu at opset 9 is imported since older opsets are mapped op by op).
g = helper.make_graph([helper.make_node("HardSwish", ["x"], ["y"], name="r")], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]),
          os.path.join(out, "opset9.onnx"))

# For --check: supported ops, an op with a listed alternative (GlobalLpPool), an op
# of another domain, an op with data-dependent output shape (NonZero), and a
# supported op with an unsupported attribute value (Gemm with broadcast).
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 4])
nodes = [
    helper.make_node("Relu", ["x"], ["r1"], name="relu1"),
    helper.make_node("Relu", ["r1"], ["r2"]),
    helper.make_node("GlobalLpPool", ["r2"], ["c"], name="lppool1"),
    helper.make_node("FusedGelu", ["c"], ["f"], name="fg", domain="com.example"),
    helper.make_node("NonZero", ["f"], ["nz"], name="nz1"),
    helper.make_node("Add", ["r2", "r2"], ["z"], name="add1"),
]
g = helper.make_graph(nodes, "g", [x3], [z])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                              helper.make_opsetid("com.example", 1)]),
          os.path.join(out, "check_mixed.onnx"))
# Every op supported, but an attribute value is not: the import reports it.
g = helper.make_graph([helper.make_node("Softmax", ["x"], ["z"], name="sm", axis=5)],
                      "g", [x], [z])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "check_attr.onnx"))
# Supported op types whose nodes do not import: ScatterND adding into a graph
# input (a reduction needs compile-time constants) and Relu on int64 data; the Neg after
# the ScatterND is not checked, the independent Relu 'ok' is.
xi = helper.make_tensor_value_info("xi", TensorProto.INT64, [2, 3])
w = helper.make_tensor_value_info("w", TensorProto.INT64, [2, 3])
v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 3])
nodes = [
    helper.make_node("Constant", [], ["i"], value=helper.make_tensor(
        "i", TensorProto.INT64, [1, 1], [1])),
    helper.make_node("Constant", [], ["u"], value=helper.make_tensor(
        "u", TensorProto.FLOAT, [1, 3], [1, 2, 3])),
    helper.make_node("ScatterND", ["x", "i", "u"], ["s"], name="scatter",
                     reduction="mul"),
    helper.make_node("Neg", ["s"], ["z"], name="after"),
    helper.make_node("Relu", ["xi"], ["w"], name="int_relu"),
    helper.make_node("Relu", ["x"], ["v"], name="ok"),
]
g = helper.make_graph(nodes, "g", [x, xi], [z, w, v])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "check_nodes.onnx"))

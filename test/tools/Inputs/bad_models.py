"""Writes ONNX models that dlc must reject: an unsupported op and a bad opset."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
g = helper.make_graph([helper.make_node("Hardmax", ["x"], ["y"], name="hm")], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "unsupported.onnx"))
# HardSwish exists only from opset 14, so no opset-9 definition is mapped
# (Relu at opset 9 is imported since older opsets are mapped op by op).
g = helper.make_graph([helper.make_node("HardSwish", ["x"], ["y"], name="r")], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]),
          os.path.join(out, "opset9.onnx"))

"""Builds small ONNX models with onnx.helper for the importer's lit tests.

Usage: make_models.py OUT_DIR   (writes OUT_DIR/<name>.onnx for every model)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def f32(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(name, nodes, inputs, outputs, inits=(), opset=OPSET):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="dlc-tests")
    m.ir_version = 8
    return m


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def build():
    models = {}
    # MLP: Gemm(transB) -> Relu -> Gemm, symbolic batch.
    models["mlp"] = model(
        "mlp",
        [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
         helper.make_node("Relu", ["h"], ["r"], name="relu1"),
         helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["logits"], name="fc2",
                          transB=1, alpha=0.5, beta=2.0)],
        [vi("x", ["batch", 784])], [vi("logits", ["batch", 10])],
        [f32("fc1.weight", (32, 784)), f32("fc1.bias", (32,), 1),
         f32("fc2.weight", (10, 32), 2), f32("fc2.bias", (10,), 3)])

    # CNN: Conv -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm.
    models["cnn"] = model(
        "cnn",
        [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv1",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                          ["b"], name="bn1", epsilon=1e-3, momentum=0.8),
         helper.make_node("Relu", ["b"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2],
                          strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"], name="flat", axis=1),
         helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)],
        [vi("x", [4, 1, 8, 8])], [vi("y", [4, 10])],
        [f32("conv.weight", (6, 1, 3, 3)), f32("conv.bias", (6,)),
         f32("bn.scale", (6,)), f32("bn.bias", (6,)), f32("bn.mean", (6,)),
         numpy_helper.from_array(np.ones(6, np.float32), "bn.var"),
         f32("fc.weight", (10, 96)), f32("fc.bias", (10,))])

    # Broadcasting Add/Mul/Sub/Div with a rank-1 initializer and a scalar Constant.
    models["broadcast"] = model(
        "broadcast",
        [helper.make_node("Constant", [], ["two"], name="two", value_float=2.0),
         helper.make_node("Add", ["x", "bias"], ["a"], name="add"),
         helper.make_node("Mul", ["a", "two"], ["m"], name="mul"),
         helper.make_node("Sub", ["m", "y"], ["s"], name="sub"),
         helper.make_node("Div", ["s", "two"], ["d"], name="div")],
        [vi("x", [2, 3, 4]), vi("y", [3, 1])], [vi("d", [2, 3, 4])],
        [f32("bias", (4,))])

    # Reshape with 0 and -1, and the torch x.view(x.size(0), -1) shape subgraph.
    models["reshape"] = model(
        "reshape",
        [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape0"),
         helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Constant", [], ["zero"], value=i64("zero", 0)),
         helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq"),
         helper.make_node("Concat", ["n1", "minus1"], ["shape2"], name="concat", axis=0),
         helper.make_node("Reshape", ["r", "shape2"], ["y"], name="view"),
         helper.make_node("Transpose", ["y"], ["t"], name="tr"),
         helper.make_node("Softmax", ["y"], ["sm"], name="sm"),
         helper.make_node("LogSoftmax", ["y"], ["lsm"], name="lsm", axis=0)],
        [vi("x", [2, 3, 4, 5])], [vi("t", [60, 2]), vi("sm", [2, 60]), vi("lsm", [2, 60])],
        [i64("shape", [0, -1, 5]), i64("axes", [0]), i64("minus1", [-1])])

    # Integer shape arithmetic folded at import time: [2] from Shape/Gather/
    # Unsqueeze/Cast/Squeeze, [60] from (240 - 120) / 2 + 0 * 7; Reshape(x, [2, 60]).
    models["fold"] = model(
        "fold",
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Constant", [], ["i0"], value_int=0),
         helper.make_node("Gather", ["s", "i0"], ["n"]),
         helper.make_node("Constant", [], ["ax0"], value_ints=[0]),
         helper.make_node("Unsqueeze", ["n", "ax0"], ["u"]),
         helper.make_node("Cast", ["u"], ["uf"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["uf"], ["ui"], to=TensorProto.INT64),
         helper.make_node("Unsqueeze", ["ui", "ax0"], ["u2"]),
         helper.make_node("Squeeze", ["u2", "ax0"], ["sq"]),
         helper.make_node("Constant", [], ["c240"], value_ints=[240]),
         helper.make_node("Constant", [], ["c120"], value_ints=[120]),
         helper.make_node("Constant", [], ["two"], value_int=2),
         helper.make_node("Constant", [], ["seven"], value_int=7),
         helper.make_node("Constant", [], ["zero"], value_int=0),
         helper.make_node("Sub", ["c240", "c120"], ["d"]),
         helper.make_node("Div", ["d", "two"], ["q"]),
         helper.make_node("Mul", ["zero", "seven"], ["z"]),
         helper.make_node("Add", ["q", "z"], ["w"]),
         helper.make_node("Concat", ["sq", "w"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"], name="fold_reshape")],
        [vi("x", [2, 3, 4, 5])], [vi("y", [2, 60])])

    # Pooling and Clip variants, Dropout/Identity pass-through.
    models["pool"] = model(
        "pool",
        [helper.make_node("AveragePool", ["x"], ["a"], name="avg", kernel_shape=[3, 3],
                          strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
         helper.make_node("MaxPool", ["x"], ["m"], name="maxc", kernel_shape=[2, 2],
                          strides=[2, 2], ceil_mode=1),
         helper.make_node("GlobalAveragePool", ["m"], ["g"], name="gap"),
         helper.make_node("Constant", [], ["six"], value_float=6.0),
         helper.make_node("Clip", ["a", "", "six"], ["c"], name="clip"),
         helper.make_node("Dropout", ["c"], ["d"], name="drop"),
         helper.make_node("Identity", ["d"], ["i"], name="id")],
        [vi("x", [1, 2, 7, 7])], [vi("i", [1, 2, 4, 4]), vi("g", [1, 2, 1, 1])])

    # MatMul 2-D with an initializer.
    models["matmul"] = model(
        "matmul",
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [vi("x", [3, 4])], [vi("y", [3, 5])], [f32("w", (4, 5))])

    # BatchNorm whose running statistics share initializers with its scale/bias
    # (as exporters' deduplication produces), followed by a second BatchNorm on
    # the same initializers; Gemm with transA and a [1, N] C.
    models["bn_shared"] = model(
        "bn_shared",
        [helper.make_node("BatchNormalization", ["x", "ones", "zeros", "zeros", "ones"], ["b1"],
                          name="bn1"),
         helper.make_node("BatchNormalization", ["b1", "ones", "zeros", "zeros", "ones"], ["b2"],
                          name="bn2", training_mode=1),
         helper.make_node("Gemm", ["b2", "w"], ["y"], name="fc", transA=1)],
        [vi("x", [5, 3])], [vi("y", [3, 2])],
        [numpy_helper.from_array(np.ones(3, np.float32), "ones"),
         numpy_helper.from_array(np.zeros(3, np.float32), "zeros"),
         f32("w", (5, 2))])

    # Errors.
    models["bad_op"] = model(
        "bad_op", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                   helper.make_node("GlobalLpPool", ["r"], ["y"], name="lppool1")],
        [vi("x", [2, 3, 4])], [vi("y", [2, 3, 1])])
    models["bad_opset"] = model(
        "bad_opset", [helper.make_node("Relu", ["x"], ["y"])],
        [vi("x", [2, 3])], [vi("y", [2, 3])], opset=29)
    # Element types the importer does not take (FLOAT16 and BFLOAT16 it
    # does: import-half.test).
    models["uint8"] = model(
        "uint8", [helper.make_node("Relu", ["x"], ["y"])],
        [vi("x", [2, 3], TensorProto.UINT8)], [vi("y", [2, 3], TensorProto.UINT8)])
    models["bad_attr"] = model(
        "bad_attr",
        [helper.make_node("RNN", ["x", "w", "r"], ["", "y"], name="rnn_clip",
                          hidden_size=3, clip=1.0)],
        [vi("x", [2, 1, 2])], [vi("y", [1, 1, 3])],
        [f32("w", (1, 3, 2)), f32("r", (1, 3, 3))])
    models["symbolic_hw"] = model(
        "symbolic_hw", [helper.make_node("Relu", ["x"], ["y"])],
        [vi("x", [2, "H"])], [vi("y", [2, "H"])])
    models["bad_bcast"] = model(
        "bad_bcast", [helper.make_node("Add", ["x", "y"], ["z"], name="add")],
        [vi("x", [2, 3]), vi("y", [4])], [vi("z", [2, 3])])
    models["bad_conv"] = model(
        "bad_conv",
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv4d")],
        [vi("x", [1, 1, 4, 4, 4, 4])], [vi("y", [1, 1, 2, 2, 2, 2])],
        [f32("w", (1, 1, 3, 3, 3, 3))])
    # Windows that do not fit, reported at the node before the op is built
    # (the op would infer its type with the same formula).
    models["conv_big_kernel"] = model(
        "conv_big_kernel",
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                          pads=[0, 1, 0, 1])],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 1, 1])],
        [f32("w", (1, 1, 3, 7))])
    models["conv_empty_kernel"] = model(
        "conv_empty_kernel",
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 4, 2])],
        [f32("w", (1, 1, 0, 3))])
    models["pool_big_kernel"] = model(
        "pool_big_kernel",
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                          kernel_shape=[2, 6], ceil_mode=1)],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 3, 1])])
    models["convtranspose_empty"] = model(
        "convtranspose_empty",
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct")],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 3, 6])],
        [f32("w", (1, 1, 0, 3))])
    models["undefined_input"] = model(
        "undefined_input", [helper.make_node("Relu", ["nope"], ["y"], name="r")],
        [vi("x", [2])], [vi("y", [2])])
    models["bn_training_outputs"] = model(
        "bn_training_outputs",
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                          ["y", "rm", "rv"], name="bn", training_mode=1),
         helper.make_node("Add", ["rm", "rm"], ["z"])],
        [vi("x", [2, 3])], [vi("y", [2, 3]), vi("z", [3])],
        [f32("s", (3,)), f32("b", (3,)), f32("m", (3,)), f32("v", (3,))])
    models["reshape_f32_shape"] = model(
        "reshape_f32_shape", [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
        [vi("x", [2, 3])], [vi("y", [3, 2])], [f32("s", (2,))])
    models["clip_dynamic"] = model(
        "clip_dynamic", [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")],
        [vi("x", [2, 3]), vi("lo", [])], [vi("y", [2, 3])])
    models["and_float"] = model(
        "and_float", [helper.make_node("And", ["x", "x"], ["y"], name="and")],
        [vi("x", [2, 3])], [vi("y", [2, 3], TensorProto.BOOL)])
    models["cast_uint8"] = model(
        "cast_uint8", [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.UINT8)],
        [vi("x", [2, 3])], [vi("y", [2, 3], TensorProto.UINT8)])
    models["where_types"] = model(
        "where_types", [helper.make_node("Where", ["c", "x", "i"], ["y"], name="where")],
        [vi("c", [2, 3], TensorProto.BOOL), vi("x", [2, 3]), vi("i", [2, 3], TensorProto.INT64)],
        [vi("y", [2, 3])])
    models["old_opset_unmapped"] = model(
        "old_opset_unmapped", [helper.make_node("Elu", ["x"], ["y"], name="elu"),
                               helper.make_node("Greater", ["y", "x"], ["z"], name="gt")],
        [vi("x", [2, 3])], [vi("z", [2, 3], TensorProto.BOOL)], opset=6)
    models["old_dropout_train"] = model(
        "old_dropout_train", [helper.make_node("Dropout", ["x"], ["y"], name="drop", is_test=0)],
        [vi("x", [2, 3])], [vi("y", [2, 3])], opset=6)
    models["old_bn_spatial"] = model(
        "old_bn_spatial",
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn",
                          is_test=1, spatial=0)],
        [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])],
        [f32("s", (3,)), f32("b", (3,)), f32("m", (3,)), f32("v", (3,))], opset=6)
    models["old_add_nobroadcast"] = model(
        "old_add_nobroadcast", [helper.make_node("Add", ["x", "b"], ["y"], name="add")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], [f32("b", (3,))], opset=6)
    models["old_opset_elu"] = model(
        "old_opset_elu", [helper.make_node("Elu", ["x"], ["y"], name="elu"),
                          helper.make_node("Relu", ["y"], ["z"], name="relu")],
        [vi("x", [2, 3])], [vi("z", [2, 3])], opset=6)
    models["clip_vector_bound"] = model(
        "clip_vector_bound", [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")],
        [vi("x", [2, 3]), vi("lo", [3])], [vi("y", [2, 3])])
    models["maxpool_indices"] = model(
        "maxpool_indices",
        [helper.make_node("MaxPool", ["x"], ["y", "idx"], name="mp", kernel_shape=[2, 2, 2])],
        [vi("x", [1, 1, 4, 4, 4])],
        [vi("y", [1, 1, 3, 3, 3]), vi("idx", [1, 1, 3, 3, 3], TensorProto.INT64)])
    models["matmul_batched"] = model(
        "matmul_batched", [helper.make_node("MatMul", ["x", "w"], ["y"], name="bmm")],
        [vi("x", [2, 3, 4])], [vi("y", [2, 3, 5])], [f32("w", (3, 4, 5))])
    models["uint8_init"] = model(
        "uint8_init", [helper.make_node("Add", ["x", "h"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", [2])],
        [numpy_helper.from_array(np.ones(2, np.uint8), "h")])
    bad = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0, 2.0])
    models["bad_init"] = model(
        "bad_init", [helper.make_node("Add", ["x", "w"], ["y"])],
        [vi("x", [3])], [vi("y", [3])], [bad])
    huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10**12])
    models["huge_init"] = model(
        "huge_init", [helper.make_node("Add", ["x", "w"], ["y"])],
        [vi("x", [3])], [vi("y", [3])], [huge])
    # training_mode as a runtime flag (a graph input) cannot be compiled.
    models["dropout_train"] = model(
        "dropout_train",
        [helper.make_node("Constant", [], ["ratio"], value_float=0.5),
         helper.make_node("Dropout", ["x", "ratio", "on"], ["y"], name="drop")],
        [vi("x", [2, 3]), vi("on", [], TensorProto.BOOL)], [vi("y", [2, 3])])
    models["dropout_eval"] = model(
        "dropout_eval",
        [helper.make_node("Constant", [], ["off"],
                          value=helper.make_tensor("off", TensorProto.BOOL, [], [False])),
         helper.make_node("Dropout", ["x", "", "off"], ["y"], name="drop")],
        [vi("x", [2, 3])], [vi("y", [2, 3])])
    # Exported with a static batch of 2 that a constant Reshape target repeats.
    models["static_batch_view"] = model(
        "static_batch_view",
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="view")],
        [vi("x", [2, 3, 4])], [vi("y", [2, 12])], [i64("shape", [2, -1])])
    return models


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in build().items():
        onnx.save(m, os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()

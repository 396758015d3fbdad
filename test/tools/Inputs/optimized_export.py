"""Writes two small token models for `dlc --check --train`'s warnings about
an exporter's graph optimizer (test/tools/dlc-check-optimized.test): the
shapes torch.onnx.export(dynamo=True) gives a GPT-2 with optimize=True
(optimized.onnx, and optimized-external.onnx with its weights in an external
data file) and with optimize=False (plain.onnx), in miniature:

optimized: the position-embedding rows folded into an initializer named like
  the exporter's value (`embedding_1`), one all-ones norm weight and one
  all-zeros bias shared by two LayerNormalizations (identical initializers
  merged), the tied output weight folded into its transpose (`val_7`) and
  a folded scalar (`val_3`, as the attention scale 1/sqrt(sqrt(d)) is);
plain: a position table gathered by constant positions, one weight and bias
  per LayerNormalization, the tied weight read by Gather and Transpose.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
V, T, D = 8, 4, 4
wte = rng.standard_normal((V, D)).astype(np.float32)
wpe = rng.standard_normal((T, D)).astype(np.float32)
ones, zeros = np.ones(D, np.float32), np.zeros(D, np.float32)
ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [2, T])
logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, T, V])
init = numpy_helper.from_array


def save(nodes, inits, name, external=False):
    g = helper.make_graph(nodes, "g", [ids], [logits], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(out, name)
    if external:
        onnx.save_model(model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=name + ".data",
                        size_threshold=0)
    else:
        onnx.save(model, path)


optimized = [
    helper.make_node("Gather", ["model.wte.weight", "input_ids"], ["tok"], name="wte"),
    helper.make_node("Add", ["tok", "embedding_1"], ["h0"], name="add_pos"),
    helper.make_node("LayerNormalization", ["h0", "model.ln_1.weight", "model.ln_1.bias"],
                     ["h1"], name="ln_1", axis=-1),
    helper.make_node("LayerNormalization", ["h1", "model.ln_1.weight", "model.ln_1.bias"],
                     ["h2"], name="ln_2", axis=-1),
    helper.make_node("Mul", ["h2", "val_3"], ["h3"], name="scale"),
    helper.make_node("MatMul", ["h3", "val_7"], ["logits"], name="lm_head"),
]
optimized_inits = [init(wte, "model.wte.weight"), init(wpe[None], "embedding_1"),
                   init(ones, "model.ln_1.weight"), init(zeros, "model.ln_1.bias"),
                   init(np.ascontiguousarray(wte.T), "val_7"),
                   init(np.array(0.5, np.float32), "val_3")]
save(optimized, optimized_inits, "optimized.onnx")
save(optimized, optimized_inits, "optimized-external.onnx", external=True)

positions = helper.make_node("Constant", [], ["positions"], name="positions",
                             value=init(np.arange(T, dtype=np.int64)))
plain = [
    helper.make_node("Gather", ["model.wte.weight", "input_ids"], ["tok"], name="wte"),
    positions,
    helper.make_node("Gather", ["model.wpe.weight", "positions"], ["pos"], name="wpe"),
    helper.make_node("Add", ["tok", "pos"], ["h0"], name="add_pos"),
    helper.make_node("LayerNormalization", ["h0", "model.ln_1.weight", "model.ln_1.bias"],
                     ["h1"], name="ln_1", axis=-1),
    helper.make_node("LayerNormalization", ["h1", "model.ln_2.weight", "model.ln_2.bias"],
                     ["h2"], name="ln_2", axis=-1),
    helper.make_node("Transpose", ["model.wte.weight"], ["wte_t"], name="tie", perm=[1, 0]),
    helper.make_node("MatMul", ["h2", "wte_t"], ["logits"], name="lm_head"),
]
save(plain, [init(wte, "model.wte.weight"), init(wpe, "model.wpe.weight"),
             init(ones, "model.ln_1.weight"), init(zeros, "model.ln_1.bias"),
             init(ones, "model.ln_2.weight"), init(zeros, "model.ln_2.bias")],
     "plain.onnx", external=True)

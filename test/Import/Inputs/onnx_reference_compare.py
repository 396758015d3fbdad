"""Compares a model's dlrt outputs with ONNX's own reference evaluator
(onnx.reference) and ONNX Runtime, for Python environments that have a
newer onnx and onnxruntime than the system's (the opset-23 ops need onnx
>= 1.18). Run by attention_models.py --reference-python PYTHON; not a test
of its own until ctest has such an interpreter (DLC_TEST_VENV_PYTHON).

Usage: onnx_reference_compare.py BASE OUTPUTS [--skip-ort NODE...]
Reads BASE.onnx and BASE.in.npz and the dlrt outputs OUTPUTS (.npz); prints
per output the largest absolute difference to each reference and "ok
onnx-reference <n> outputs" when all are within 1e-5 (absolute below 1,
relative above), else "MISMATCH ..." and exits 1. Nodes named after
--skip-ort are left out of the ONNX Runtime session (its CPU kernel rejects
some inputs the operator allows, e.g. Attention masks broadcast over
queries).
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator


def within(a, b):
    err = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return bool(np.all(err <= 1e-5 * np.maximum(1, np.abs(b)))), err.max()


def main():
    base, outputs = sys.argv[1], sys.argv[2]
    skip = set()
    if "--skip-ort" in sys.argv:
        skip = set(sys.argv[sys.argv.index("--skip-ort") + 1:])
    model = onnx.load(base + ".onnx")
    feeds = dict(np.load(base + ".in.npz"))
    got = np.load(outputs)
    names = [o.name for o in model.graph.output]
    refs = {"onnx.reference": dict(zip(
        names, ReferenceEvaluator(model).run(names, feeds)))}

    # ONNX Runtime on the model without the skipped nodes.
    keep = [n for n in model.graph.node if n.name not in skip]
    kept_outs = {o for n in keep for o in n.output}
    used = {i for n in keep for i in n.input}
    del model.graph.node[:]
    model.graph.node.extend(keep)
    outs = [o for o in model.graph.output if o.name in kept_outs]
    del model.graph.output[:]
    model.graph.output.extend(outs)
    ins = [i for i in model.graph.input if i.name in used]
    del model.graph.input[:]
    model.graph.input.extend(ins)
    ort_names = [o.name for o in outs]
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    refs["onnxruntime " + ort.__version__] = dict(zip(
        ort_names, sess.run(ort_names, {i.name: feeds[i.name] for i in ins})))

    bad = 0
    for name in names:
        line = f"  {name}:"
        for label, ref in refs.items():
            if name not in ref:
                continue
            ok, err = within(got[name], ref[name])
            bad += not ok
            line += f" {label} {err:.2g}{'' if ok else ' MISMATCH'}"
        print(line)
    if bad:
        print(f"MISMATCH onnx-reference {bad} comparisons")
        sys.exit(1)
    print(f"ok onnx-reference {len(names)} outputs "
          f"(onnx {onnx.__version__})")


if __name__ == "__main__":
    main()

"""Checks dlgraph.resize against the ONNX backend tests' reference outputs,
for resize-reference.test.

The node/test_resize_* and test_upsample_* models of libonnx-testdata feed
scales/sizes as graph inputs (which dlc rejects: no static output shape), so
this script turns those inputs into initializers holding the test data's
values, compiles with dlc, runs with dlrt on the host and compares with the
reference output (rtol 1e-3, atol 1e-7, ONNX's tolerances). Cubic and
tf_crop_and_resize tests are skipped (unsupported). Prints one line per test.
Usage: resize_reference.py OUT_DIR [--break]  (--break perturbs the scales:
the check must fail)
"""
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DATA = "/usr/share/libonnx-testdata/data/node"


def main():
    out = sys.argv[1]
    broken = "--break" in sys.argv
    os.makedirs(out, exist_ok=True)
    tests = sorted(glob.glob(DATA + "/test_resize_*") +
                   glob.glob(DATA + "/test_upsample_*"))
    passed = 0
    for t in tests:
        name = os.path.basename(t)
        if "cubic" in name or "crop" in name:
            continue
        model = onnx.load(os.path.join(t, "model.onnx"))
        g = model.graph
        ds = os.path.join(t, "test_data_set_0")
        ins = [numpy_helper.to_array(onnx.load_tensor(f)) for f in
               sorted(glob.glob(ds + "/input_*.pb"))]
        ref = numpy_helper.to_array(onnx.load_tensor(ds + "/output_0.pb"))
        inputs = list(g.input)
        del g.input[:]
        feeds = {}
        for vi, v in zip(inputs, ins):
            if vi.name in ("X", "x") or v.ndim == 4 and v.dtype == np.float32 \
                    and v.size > 4:
                g.input.append(vi)
                feeds[vi.name] = v
            else:
                if broken and v.dtype == np.float32:
                    v = v * np.float32(1.01)
                g.initializer.append(numpy_helper.from_array(v, vi.name))
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        r = subprocess.run(["dlc", path, "--quiet", "-o", path + ".dlcp"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"MISMATCH {name}: dlc: {r.stderr.strip()}")
            continue
        np.savez(path + ".in.npz", **feeds)
        r = subprocess.run(["dlrt", "run", path + ".dlcp", "--inputs",
                            path + ".in.npz", "--outputs", path + ".out.npz",
                            "--device", "host"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(f"MISMATCH {name}: dlrt: {r.stderr.strip()}")
            continue
        with np.load(path + ".out.npz") as z:
            got = z[g.output[0].name]
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-3,
                                                     atol=1e-7):
            print(f"MISMATCH {name}: shape {got.shape} vs {ref.shape}")
            continue
        passed += 1
        print(f"ok {name}")
    print(f"passed {passed}")


if __name__ == "__main__":
    main()

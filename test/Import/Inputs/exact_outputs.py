"""Shared by the Import tests' model generators: compile a model with dlc,
run it with `dlrt run`, and require every output to equal its reference
exactly (ops that move elements or compute on integers have one right
answer) or, for float computations, within a stated tolerance."""
import subprocess
import sys

import numpy as np


def run_and_compare(base, label, names, wants, device="host", outputs=None,
                    tolerance=0.0):
    """Compiles BASE.onnx to BASE.dlcp, runs it on BASE.in.npz with `dlrt
    run --device DEVICE` into |outputs| (default BASE.out.npz), then prints
    "ok LABEL <n> outputs" when each output named in |names| has the dtype,
    shape and values of the matching |wants| entry, else one line per bad
    output and "MISMATCH LABEL <bad> of <n> outputs", exiting 1. With a
    |tolerance| > 0 a value matches when |got - want| <= tolerance *
    max(1, |want|) (absolute for values below 1, relative above)."""
    outputs = outputs or base + ".out.npz"
    subprocess.run(["dlc", base + ".onnx", "--quiet", "-o", base + ".dlcp"],
                   check=True)
    subprocess.run(["dlrt", "run", base + ".dlcp", "--device", device,
                    "--inputs", base + ".in.npz", "--outputs", outputs],
                   check=True, stdout=subprocess.DEVNULL)
    got = np.load(outputs)
    bad = 0
    for name, want in zip(names, wants):
        g = got[name]
        if g.dtype != want.dtype or g.shape != want.shape:
            differ = None
        elif tolerance > 0:
            w = want.astype(np.float64)
            err = np.abs(g.astype(np.float64) - w)
            differ = int(np.sum(~(err <= tolerance * np.maximum(1, np.abs(w)))))
        else:
            differ = int(np.sum(g != want))
        if differ != 0:
            bad += 1
            print(f"  {name}: got {g.dtype} {g.shape}, want {want.dtype} "
                  f"{want.shape}" + ("" if differ is None else
                                     f", {differ} differ"))
    if bad:
        print(f"MISMATCH {label} {bad} of {len(names)} outputs")
        sys.exit(1)
    print(f"ok {label} {len(names)} outputs")

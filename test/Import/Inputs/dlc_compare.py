"""Shared by the torch_*.py import checks: runs a compiled package with
`dlrt run` on the host and compares its outputs with reference values."""
import subprocess

import numpy as np


def run_and_compare(base, outs, wants, label):
    """Runs BASE.dlcp on BASE.in.npz and compares output OUTS[k] with WANTS[k]
    (float64 references): dtype and shape must match and every element must be
    within 1e-5 * (1 + |want|). Prints 'ok LABEL ...' or 'MISMATCH LABEL ...'
    and returns whether all outputs matched."""
    subprocess.run(["dlrt", "run", base + ".dlcp", "--device", "host",
                    "--inputs", base + ".in.npz", "--outputs",
                    base + ".out.npz"], check=True,
                   stdout=subprocess.DEVNULL)
    results = np.load(base + ".out.npz")
    ok, worst = True, 0.0
    for k, want in enumerate(wants):
        got = results[outs[k]]
        err = np.abs(got.astype(np.float64) - want)
        good = (got.shape == want.shape and got.dtype == want.dtype and
                bool(np.all(err <= 1e-5 * (1 + np.abs(want)))))
        if not good:
            print(f"  output {k}: dtype {got.dtype} shape {got.shape}"
                  f" want {want.shape} max_err {err.max():.3g}")
        ok &= good
        worst = max(worst, float(err.max()))
    print(f"{'ok' if ok else 'MISMATCH'} {label} max_err {worst:.3g}")
    return ok

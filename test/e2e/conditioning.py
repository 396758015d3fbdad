"""Which gradients fp32 can resolve (issue 33): a float64 reference that tells
the e2e comparisons which tensors to hold to their own size.

Two fp32 computations of the same gradient (two devices, two thread counts,
oneDNN's AVX-512 and AVX2 kernels) differ by the rounding of their sums,
and that rounding scales with the sums' terms, not with their result. Where
a gradient cancels -- the bias of a convolution followed by a training-mode
BatchNorm, which removes any per-channel constant, is exactly zero -- the
two results are rounding noise of different orders of summation, and their
difference relative to their own size says nothing about either (seen: the
CNN's 0.bias gradient, 1.9e-5 of its own size between host and stand-in on
an AVX2 CPU, 3e-6 on AVX-512). Such a tensor is compared against the scale
of the step: the largest tensor of its kind (gradients with gradients,
momentum buffers with momentum buffers).

Which tensors those are is decided here, independently of the two results
being compared: PyTorch computes the first step's gradients at the exported
weights in float64 (the truth) and in float32 on this CPU. A parameter's
gradient is
  - zero when its float64 value is at most ZERO of the step's largest
    float64 gradient entry (exact zeros come out ~1e-17 of it), or
  - unresolved when PyTorch fp32's own error, max |g32 - g64| / max |g64|,
    exceeds the comparison's tolerance for gradients: fp32 itself cannot
    compute it that closely, so neither can either side of a comparison.
    (Well-conditioned gradients come out well below: the CNN's 0.weight, a
    convolution's weight gradient summed over 12,544 terms, at 2.9e-6 with
    oneDNN's AVX-512 kernels and 3.2e-6 with its AVX2 ones against 1e-5;
    ResNet-18's worst, on 2 samples, at 2.7e-5 against its 1e-4.)
Every other gradient is well-conditioned and keeps its own size as scale.
"""
import copy

import numpy as np
import torch
import torch.nn.functional as F

ZERO = 1e-10

# Optimizer-state suffixes of checkpoint tensor names (dlrt's naming, as
# torch.optim's state keys).
STATE_SUFFIXES = ("momentum_buffer", "exp_avg", "exp_avg_sq")


def parameter_of(name):
    """The parameter a checkpoint or gradient tensor belongs to."""
    head, _, last = name.rpartition(".")
    return head if head and last in STATE_SUFFIXES else name


def role(name):
    """Parameters (or gradients), momentum buffers, Adam moments and dlrt's
    own counters (`__step`) are compared among their own kind: "" for
    parameters and gradients, else the suffix or the counter's name. (The
    step counter once counted as a parameter: its 5.0 made every small
    parameter's scale 0.5, hiding a 1e-5 difference in the MLP's 1.weight.)"""
    if name.startswith("__"):
        return name
    last = name.rsplit(".", 1)[-1]
    return last if last in STATE_SUFFIXES else ""


def reference_gradients(model, x, y, dtype):
    """The gradients of the mean softmax cross-entropy (classes on the last
    axis, as dlc's loss) of a training-mode copy of |model| in |dtype|, at
    its current weights, as float64 arrays by parameter name."""
    m = copy.deepcopy(model).to(dtype).train()
    xx = x.to(dtype) if x.is_floating_point() else x
    out = m(xx)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    m.zero_grad()
    loss.backward()
    return {n: p.grad.detach().to(torch.float64).numpy()
            for n, p in m.named_parameters() if p.grad is not None}


def ill_conditioned(model, x, y, tolerance):
    """{parameter name: why} for the parameters whose gradient at |model|'s
    weights on batch (x, y) is zero, or unresolved by fp32 to |tolerance|
    of its own size (module doc)."""
    g64 = reference_gradients(model, x, y, torch.float64)
    g32 = reference_gradients(model, x, y, torch.float32)
    peak = max(float(np.max(np.abs(g))) for g in g64.values() if g.size)
    why = {}
    for name, g in g64.items():
        size = float(np.max(np.abs(g))) if g.size else 0.0
        if size <= ZERO * peak:
            why[name] = (f"zero in float64 ({size / peak:.1e} of the step's "
                         "largest gradient)")
            continue
        err = float(np.max(np.abs(g32[name] - g))) / size
        if err > tolerance:
            why[name] = (f"cancels: PyTorch fp32 is {err:.1e} of its size "
                         "from float64")
    return why

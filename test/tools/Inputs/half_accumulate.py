"""half-accumulate.test: inputs exactly representable in f16 and bf16, and the
check that each f16/bf16 output is the f32 package's output on the same
values, rounded once to nearest even (bit for bit; NaN as 0x7fff, CUDA's
__float2half_rn / __float2bfloat16_rn), and that the integer outputs (indices,
dropout masks) are equal.

  half_accumulate.py make IN.npz
  half_accumulate.py check F32.npz BF16.npz F16.npz IN.npz
"""
import sys

import numpy as np


def bf16_bits(f32):
    """f32 -> bf16 bit patterns, rounded to nearest even; NaN -> 0x7fff."""
    bits = np.asarray(f32, np.float32).view(np.uint32).astype(np.uint64)
    out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    out[np.isnan(f32)] = 0x7FFF
    return out


def f16_bits(f32):
    """f32 -> f16 bit patterns, rounded to nearest even (NumPy's conversion
    rounds so); NaN -> 0x7fff."""
    out = np.asarray(f32, np.float32).astype(np.float16).view(np.uint16).copy()
    out[np.isnan(f32)] = 0x7FFF
    return out


def make(path):
    r = np.random.default_rng(5)
    # Multiples of 1/16 with at most 8 significant bits: exact in f16 and in
    # bf16, so all three packages read the same values.
    x = (r.integers(-120, 121, (2, 3, 6, 6)) / 16).astype(np.float32)
    # Ties inside windows (the first maximum wins, in scan order) and a NaN
    # (a NaN wins the window; the sums through it are NaN).
    x[0, 0, 0, 0] = x[0, 0, 0, 1] = 7.5
    x[1, 2, 3, 3] = x[1, 2, 3, 4] = x[1, 2, 4, 3] = 7.5
    x[0, 1, 2, 2] = np.nan
    dy = (r.integers(-120, 121, (2, 3, 3, 3)) / 16).astype(np.float32)
    v = (r.integers(-120, 121, (4, 6)) / 16).astype(np.float32)
    v[2, 1] = v[2, 4] = v.max() + 1  # an arg_max tie: the first index
    v[0, 3] = v[3, 3] = v.min() - 1  # an arg_min tie: the last index
    w = (r.integers(-120, 121, (4, 6)) / 16).astype(np.float32)
    np.savez(path, x=x, dy=dy, v=v, w=w, step=np.float32(3),
             labels=np.array([5, 0, 3, 1], np.int64))


def check(f32_path, bf16_path, f16_path, in_path):
    ref, bf, hf = np.load(f32_path), np.load(bf16_path), np.load(f16_path)
    failed = False
    for name in sorted(ref):
        want = ref[name]
        if name.startswith("f32_"):  # f32 in every package: the same bits
            for kind, got in (("bf16", bf[name]), ("f16", hf[name])):
                same = got.dtype == want.dtype and np.array_equal(
                    got.view(np.uint32), want.view(np.uint32))
                print(name, kind, "equal" if same else "DIFFERS")
                failed |= not same
            continue
        if want.dtype != np.float32:
            for kind, got in (("bf16", bf[name]), ("f16", hf[name])):
                same = got.dtype == want.dtype and np.array_equal(got, want)
                print(name, kind, "equal" if same else "DIFFERS")
                failed |= not same
            continue
        # dlrt writes bf16 outputs as float32, exactly widened.
        got_bf = bf[name].astype(np.float32).view(np.uint32)
        widened = not np.any(got_bf & 0xFFFF)
        exact = widened and np.array_equal((got_bf >> 16).astype(np.uint16),
                                           bf16_bits(want))
        print(name, "bf16", "exact" if exact else "DIFFERS")
        failed |= not exact
        got_h = hf[name]
        exact = got_h.dtype == np.float16 and np.array_equal(
            got_h.view(np.uint16), f16_bits(want))
        print(name, "f16", "exact" if exact else "DIFFERS")
        failed |= not exact
    # The inputs exercise what the kernels must get right: rounding that a
    # per-step 16-bit accumulation would change, NaN, kept and dropped
    # elements.
    avg = ref["avg_pool"][np.isfinite(ref["avg_pool"])]
    print("avg_pool values not exact in bf16:",
          int(np.sum(bf16_bits(avg).astype(np.uint32) << 16 !=
                     avg.view(np.uint32))))
    # A kernel that rounded its accumulator to bf16 after every step (as the
    # dlexec body literally reads) and scaled by a bf16 1/36 would differ.
    def to_f32(b):
        return (b.astype(np.uint32) << 16).view(np.float32)
    planes = np.load(in_path)["x"].reshape(6, 36)
    scale = to_f32(bf16_bits(np.array([1 / 36], np.float32)))[0]
    steps = np.zeros(6, np.float32)
    for k in range(36):
        term = to_f32(bf16_bits(planes[:, k] * scale))
        steps = to_f32(bf16_bits(steps + term))
    gavg = ref["global_avg"].reshape(6)
    ok = np.isfinite(gavg)
    print("global_avg per-step bf16 sums that differ:",
          int(np.sum(bf16_bits(steps[ok]) != bf16_bits(gavg[ok]))), "of",
          int(ok.sum()))
    print("NaN outputs:", int(np.isnan(ref["max_pool"]).sum()),
          int(np.isnan(ref["global_avg"]).sum()))
    print("dropout kept:", int(ref["dropout_mask"].sum()), "of",
          ref["dropout_mask"].size)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(*sys.argv[2:6])

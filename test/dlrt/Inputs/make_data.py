# Writes the small .npz files the dlrt CLI tests train and run on:
#   d.npz      x [20, 4] f32 + labels [20] i64 (5 batches of 4)
#   nolabels.npz  x only
#   d5.npz     x [20, 5] (for the F = 5 test package)
#   in.npz     x [4, 4] f64 (one forward batch; converted to f32)
import sys
import numpy as np

out = sys.argv[1]
r = np.random.RandomState(0)
x = r.randn(20, 4).astype(np.float32)
labels = (r.rand(20) * 3).astype(np.int64)
np.savez(out + "/d.npz", x=x, labels=labels)
np.savez(out + "/nolabels.npz", x=x)
np.savez(out + "/d5.npz", x=r.randn(20, 5).astype(np.float32), labels=labels)
np.savez(out + "/in.npz", x=np.arange(16, dtype=np.float64).reshape(4, 4) / 8)

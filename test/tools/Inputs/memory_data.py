# Writes OUT.npz for memory_mlp.mlir's training step: x [64, 32] f32 and
# labels [64] i64 in [0, 10) (4 batches of 16).
import sys
import numpy as np

r = np.random.RandomState(0)
np.savez(sys.argv[1], x=r.randn(64, 32).astype(np.float32),
         labels=(r.rand(64) * 10).astype(np.int64))

"""`dlrt train --eval-data` with dlrt-test-package's softmax regression
(x [4, 4] -> logits [4, 3], logits = x @ w + b).
  make DIR: e.npz (10 samples: two batches of 4 and one of 2, padded) and
            files that are wrong in one way each.
  check CKPT E.NPZ JSONL: the last evaluation record of JSONL against NumPy
            float64 on the checkpoint's weights (loss within 1e-6: the
            logits are fp32; accuracy exactly)."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "e2e"))
from safetensors_np import read_safetensors  # noqa: E402

if sys.argv[1] == "make":
    d = sys.argv[2]
    r = np.random.RandomState(5)
    x = r.randn(10, 4).astype(np.float32)
    labels = r.randint(0, 3, 10)
    np.savez(d + "/e.npz", x=x, labels=labels)
    np.savez(d + "/e32.npz", x=x.astype(np.float64), labels=labels.astype(np.int32),
             unused=np.zeros(3))
    np.savez(d + "/misnamed.npz", image=x, label=labels)
    np.savez(d + "/nolabels.npz", x=x)
    np.savez(d + "/float.npz", x=x, labels=labels.astype(np.float32))
    np.savez(d + "/range.npz", x=x, labels=np.where(np.arange(10) == 6, 3, labels))
    np.savez(d + "/negative.npz", x=x, labels=np.where(np.arange(10) == 2, -1, labels))
    np.savez(d + "/shape.npz", x=r.randn(10, 5).astype(np.float32), labels=labels)
    np.savez(d + "/labelshape.npz", x=x, labels=np.stack([labels, labels], axis=1))
    np.savez(d + "/count.npz", x=x[:9], labels=labels)
    np.savez(d + "/empty.npz", x=x[:0], labels=labels[:0])
    np.savez(d + "/scalar.npz", x=x, labels=np.int64(1))
    with open(d + "/e.npz", "rb") as f:
        data = f.read()
    with open(d + "/truncated.npz", "wb") as f:
        f.write(data[:200])
    sys.exit(0)

tensors, meta = read_safetensors(sys.argv[2])
e = np.load(sys.argv[3])
x, y = e["x"].astype(np.float64), e["labels"]
z = x @ tensors["w"].astype(np.float64) + tensors["b"].astype(np.float64)
m = z.max(axis=1, keepdims=True)
lse = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))[:, 0]
loss = float(np.mean(lse - z[np.arange(len(y)), y]))
accuracy = float(np.mean(z.argmax(axis=1) == y))
rec = [json.loads(line) for line in open(sys.argv[4]) if "eval_loss" in line][-1]
ok = abs(rec["eval_loss"] - loss) <= 1e-6 and rec["eval_accuracy"] == accuracy
print(f"step {rec['step']} (checkpoint step {meta['step']}): {'ok' if ok else 'MISMATCH'} "
      f"loss {rec['eval_loss']:.9f} numpy {loss:.9f}, accuracy {rec['eval_accuracy']} "
      f"numpy {accuracy}, samples {rec['eval_samples']}")

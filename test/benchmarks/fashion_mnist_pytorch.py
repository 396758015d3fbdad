#!/usr/bin/python3
"""PyTorch reference for the main job's recipe: the bundled MLP on
Fashion-MNIST, Adam lr 1e-3, batch 64, one epoch, final partial batch
dropped (as dlrt does). Prints JSON: epoch seconds, mean loss, test accuracy,
threads, and the BLAS torch loaded (host_steps.blas_info). DLC_BENCH_THREADS
sets torch's threads (fashion_mnist_epoch.py sets it to dlrt's).

    /usr/bin/python3 test/benchmarks/fashion_mnist_pytorch.py [DATASET_DIR]
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "mlp"))
from export_mlp import make_model  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_steps import blas_info  # noqa: E402


def read_idx(path: str) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
    threads = int(os.environ.get("DLC_BENCH_THREADS", "0"))
    if threads:
        torch.set_num_threads(threads)
    x = torch.from_numpy(read_idx(f"{root}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    y = torch.from_numpy(read_idx(f"{root}/train-labels-idx1-ubyte.gz").astype(np.int64))
    tx = torch.from_numpy(read_idx(f"{root}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    ty = torch.from_numpy(read_idx(f"{root}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    x = x.reshape(-1, 1, 28, 28)
    tx = tx.reshape(-1, 1, 28, 28)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = 64
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(x.shape[0], generator=g)
    steps = x.shape[0] // batch
    losses = []
    start = time.perf_counter()
    model.train()
    for s in range(steps):
        idx = perm[s * batch:(s + 1) * batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        acc = (model(tx).argmax(dim=1) == ty).float().mean().item()
    print(json.dumps({"epoch_seconds": seconds, "steps": steps,
                      "mean_loss": float(np.mean(losses)), "test_accuracy": acc,
                      "threads": torch.get_num_threads(),
                      "blas": blas_info(torch.get_num_threads())}))


if __name__ == "__main__":
    main()

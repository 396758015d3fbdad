#!/usr/bin/python3
"""Measures the `host` device model of the pipeline cost model (docs/pipeline.md).

One pipeline stage on the host is one dlrt rank with one thread (issue 13
runs the ranks of a host pipeline one thread each, so they do not share a
core), so every figure is for one core, OMP_NUM_THREADS=1:

  peak_fp32_flops   a 1024x1024 by 1024x1024 f32 GEMM (dlgraph.gemm, compiled
                    by dlc, run by `dlrt run --repeat` on the host):
                    2 * 1024^3 FLOP / fastest run
  peak_half_flops   the same GEMM in bf16
  memory_bandwidth  a 64 Mi-element f32 add (x + y, 3 x 256 MiB moved):
                    3 * 256 MiB / fastest run
  link_bandwidth    the best busbw of a 2-rank Gloo all-reduce on loopback
  all_reduce_busbw  over sizes 1 KiB .. 64 MiB (dlrt-allreduce-bench, as
                    allreduce.py runs it): with W = 2 each rank sends and
                    receives the message once, so busbw is the one-direction
                    rate of the link
  link_latency      the fastest 2-rank all-reduce of <= 16 KiB (two messages
                    each way, so an upper bound on one message's latency)

Prints the six figures as the JSON `--device-model FILE.json` reads, and the
measurements behind them. A person runs this on an otherwise idle machine and
copies the figures into hostDeviceModel() (compiler/Partition/
DeviceModel.cpp). About a minute:

  /usr/bin/python3 test/benchmarks/host_device_model.py --build build \\
      --workdir /tmp/host-model
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allreduce import run as run_allreduce  # noqa: E402

GEMM = """module {{
  dlgraph.variable @w : tensor<{n}x{n}x{t}> = dense<0.5> : tensor<{n}x{n}x{t}>
  func.func @main(%x: tensor<{n}x{n}x{t}> {{dlgraph.name = "x"}})
      -> (tensor<{n}x{n}x{t}> {{dlgraph.name = "y"}}) {{
    %w = dlgraph.read_variable @w : tensor<{n}x{n}x{t}>
    %y = dlgraph.gemm %x, %w : (tensor<{n}x{n}x{t}>, tensor<{n}x{n}x{t}>) -> tensor<{n}x{n}x{t}>
    return %y : tensor<{n}x{n}x{t}>
  }}
}}
"""

ADD = """module {{
  func.func @main(%x: tensor<{n}xf32> {{dlgraph.name = "x"}}, %y: tensor<{n}xf32> {{dlgraph.name = "y"}})
      -> (tensor<{n}xf32> {{dlgraph.name = "z"}}) {{
    %z = dlgraph.add %x, %y : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
    return %z : tensor<{n}xf32>
  }}
}}
"""


def sh(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit(f"host_device_model.py: exit status {r.returncode}: {' '.join(cmd)}\n"
                 f"{r.stdout}")
    return r.stdout


def fastest_ms(args, name, text, inputs, repeat):
    """Compiles |text| and returns dlrt run --repeat's fastest run, ms."""
    w = lambda f: os.path.join(args.workdir, f)  # noqa: E731
    with open(w(name + ".mlir"), "w") as f:
        f.write(text)
    sh([os.path.join(args.build, "bin", "dlc"), w(name + ".mlir"), "--quiet",
        "-o", w(name + ".dlcp")])
    np.savez(w(name + "-in.npz"), **inputs)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = sh([os.path.join(args.build, "bin", "dlrt"), "run", w(name + ".dlcp"),
              "--device", "host", "--inputs", w(name + "-in.npz"),
              "--outputs", w(name + "-out.npz"), "--repeat", str(repeat)], env=env)
    m = re.search(r"fastest ([\d.]+) ms", out)
    if not m:
        sys.exit(f"host_device_model.py: no 'fastest ... ms' in dlrt run's output:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--gemm", type=int, default=1024, help="GEMM size n (n x n x n)")
    ap.add_argument("--add", type=int, default=64 << 20, help="elements of the add")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    n = args.gemm
    x = np.full((n, n), 0.25, np.float32)
    gemm_flop = 2.0 * n ** 3
    t32 = fastest_ms(args, "gemm-f32", GEMM.format(n=n, t="f32"), {"x": x}, args.repeat)
    t16 = fastest_ms(args, "gemm-bf16", GEMM.format(n=n, t="bf16"), {"x": x}, args.repeat)
    k = args.add
    ones = np.ones(k, np.float32)
    tadd = fastest_ms(args, "add", ADD.format(n=k), {"x": ones, "y": ones}, args.repeat)
    add_bytes = 3.0 * 4 * k

    bench = os.path.join(args.build, "bin", "dlrt-allreduce-bench")
    rows = run_allreduce(bench, 2, 1024, 64 << 20, 4)
    small = min((r for r in rows if r[0] <= 16384), key=lambda r: r[2])
    large = max(rows, key=lambda r: r[4])

    model = {
        "peak_fp32_flops": gemm_flop / (t32 * 1e-3),
        "peak_half_flops": gemm_flop / (t16 * 1e-3),
        "memory_bandwidth": add_bytes / (tadd * 1e-3),
        "link_bandwidth": large[4] * 1e9,
        "link_latency": small[2] * 1e-6,
        "all_reduce_busbw": large[4] * 1e9,
    }
    print(f"# {os.cpu_count()} CPUs, OMP_NUM_THREADS=1")
    print(f"# f32 GEMM {n}^3: fastest {t32:.3f} ms; bf16: {t16:.3f} ms")
    print(f"# f32 add of {k} elements: fastest {tadd:.3f} ms")
    print(f"# Gloo all-reduce W=2: {small[0]} B in {small[2]:.1f} us; "
          f"{large[0]} B busbw {large[4]:.3f} GB/s")
    print(json.dumps({k: float(f"{v:.3g}") for k, v in model.items()}, indent=2))


if __name__ == "__main__":
    main()

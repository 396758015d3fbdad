#!/usr/bin/python3
"""The numerics tests again as a CPU without AVX-512 would run them (issue 33).

Users' CPUs are not the development machine (AVX-512 with AMX): an AMD Zen 2
has AVX2 and FMA but no AVX-512, older machines SSE4.1 alone. What changes
results with the instruction set, and how each is limited here (--isa):

| what                                  | avx2                  | sse41                      |
| oneDNN (dlrt's host GEMMs and         | ONEDNN_MAX_CPU_ISA    | ONEDNN_MAX_CPU_ISA=SSE41   |
|   convolutions; PyTorch's too)        |   =AVX2               |                            |
| PyTorch's own CPU kernels (and its    | ATEN_CPU_CAPABILITY   | ATEN_CPU_CAPABILITY        |
|   vectorized normal_: initial weights)|   =avx2               |   =default                 |
| OpenBLAS (PyTorch's GEMMs through     | OPENBLAS_CORETYPE     | OPENBLAS_CORETYPE=Penryn   |
|   Debian's libblas.so.3)              |   =Haswell            |                            |
| glibc's ifunc variants (libm's FMA /  | GLIBC_TUNABLES: no    | GLIBC_TUNABLES: no AVX,    |
|   AVX2 exp, log, pow; string ops)     |   AVX512F             |   AVX2, FMA, SSE4.2, POPCNT|

dlc's own host kernels and libdlrt are compiled without -march (SSE2, the
x86-64 baseline): the same code on every x86-64, nothing to limit.

This runs the selected CTest tests (--tests, a regex over test names) in
--build under that environment, then the ONNX conformance tests matching
--conformance-filter against the same expected outcomes. It exits 1 when
any of them fails. Which tests form the sample, and why, is in
test/e2e/CMakeLists.txt beside the tests that call this.
"""
import argparse
import os
import re
import subprocess
import sys

LIMITS = {
    "avx2": {
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "ATEN_CPU_CAPABILITY": "avx2",
        "OPENBLAS_CORETYPE": "Haswell",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F",
    },
    "sse41": {
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "ATEN_CPU_CAPABILITY": "default",
        "OPENBLAS_CORETYPE": "Penryn",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX2,-FMA,-AVX,-SSE4_2,-POPCNT",
    },
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--isa", choices=sorted(LIMITS), required=True)
    ap.add_argument("--build", required=True, help="the CMake build folder")
    ap.add_argument("--tests", required=True, help="regex of CTest test names")
    ap.add_argument("--conformance-filter", default="",
                    help="regex of ONNX backend tests ('' for none)")
    ap.add_argument("--dlc", required=True)
    ap.add_argument("--dlrt", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    env = dict(os.environ)
    env.update(LIMITS[args.isa])
    print("environment: " + " ".join(f"{k}={v}" for k, v in LIMITS[args.isa].items()),
          flush=True)
    ok = True
    cmd = ["ctest", "--test-dir", args.build, "-R", args.tests,
           "--output-on-failure", f"-j{args.jobs}", "--no-tests=error"]
    print("+ " + " ".join(cmd), flush=True)
    ok &= subprocess.run(cmd, env=env).returncode == 0
    if args.conformance_filter:
        here = os.path.dirname(os.path.abspath(__file__))
        conformance = os.path.join(here, "..", "conformance")
        cmd = ["/usr/bin/python3", os.path.join(conformance, "run_conformance.py"),
               "--dlc", args.dlc, "--dlrt", args.dlrt, "--jobs", str(args.jobs),
               "--filter", args.conformance_filter,
               "--expected", os.path.join(conformance, "expected.txt")]
        print("+ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        # The per-suite totals and the verdict; every line on failure.
        lines = r.stdout.splitlines()
        keep = lines if r.returncode else [
            line for line in lines if not re.match(r"\S+/\S+: ", line)]
        print("\n".join(keep), flush=True)
        ok &= r.returncode == 0
    if not ok:
        sys.exit(f"FAIL: the numerics sample fails with the {args.isa} limits")
    print(f"PASS: the numerics sample with the {args.isa} limits")


if __name__ == "__main__":
    main()

# %% [markdown]
# # Tensor cores: every rung of the bf16 ladder, checked and timed
#
# This script computes C = A W^T in bf16 (fp32 sums) with every kernel of
# `gpukit.tensor_cores` (CUDA C through CuPy, Triton, Gluon) and with cuBLAS,
# checks each result against float64, and times each with CUDA events. It then
# prints what rounding the inputs to each low precision costs. On a machine
# without an NVIDIA GPU, the Triton kernel runs in Triton's CPU interpreter at a
# small size and the other kernels are skipped.
#
# Run it: `python examples/tensor_cores.py --m 4096 --n 4096 --k 4096 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import os
import sys

from gpukit import device

GPU = device.has_gpu()
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"       # before triton is imported

import torch  # noqa: E402

from gpukit import bench  # noqa: E402
from gpukit.tensor_cores import (KERNELS, check_product, linear,  # noqa: E402
                                 rounding_error)
# --8<-- [end:setup]


# %% [markdown]
# ## Verify, then time, every kernel
#
# Random normal inputs in bf16; each kernel writes into an output filled with
# NaN, so an element it skipped fails the check. A product does 2 M N K
# floating-point operations: that turns a time into TFLOP/s.

# %%
# --8<-- [start:run]
def run(m: int, n: int, k: int, repeat: int) -> list[dict]:
    where = "cuda" if GPU else "cpu"
    kernels = KERNELS if GPU else ("04-triton",)
    a = torch.randn((m, k), device=where).to(torch.bfloat16)
    w = torch.randn((n, k), device=where).to(torch.bfloat16)
    rows = []
    for kernel in kernels:
        c = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=where)
        call = lambda: linear(a, w, kernel=kernel, out=c)  # noqa: E731
        t = bench.bench(call, timer="torch" if GPU else "cpu", name=kernel,
                        repeat=repeat, flops=2.0 * m * n * k)
        c.fill_(float("nan"))
        call()
        if GPU:
            torch.cuda.synchronize()
        err = check_product(c, a, w, what=kernel)   # raises on a mismatch
        rows.append({"kernel": kernel, "median_s": t.median_s, "tflops": t.tflops,
                     "first_call_s": t.first_call_s, "error": err})
    return rows
# --8<-- [end:run]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bf16 tensor-core kernels vs cuBLAS")
    size = 4096 if GPU else 40
    parser.add_argument("--m", type=int, default=size, help="rows of A and C")
    parser.add_argument("--n", type=int, default=size if GPU else 24,
                        help="rows of W, columns of C")
    parser.add_argument("--k", type=int, default=size if GPU else 50,
                        help="columns of A and W")
    parser.add_argument("--repeat", type=int, default=20 if GPU else 1)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 1 or args.repeat < 1:
        parser.error("--m, --n, --k and --repeat must be >= 1")
    if GPU and torch.cuda.get_device_capability() < (9, 0):
        parser.error("the wgmma and Gluon kernels need a Hopper GPU "
                     "(compute capability 9.0)")
    try:
        rows = run(args.m, args.n, args.k, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = (device.describe(device.machine_record()) if GPU
             else "Triton's CPU interpreter (no GPU; times are the interpreter's)")
    print(f"C = A W^T, A {args.m} x {args.k}, W {args.n} x {args.k}, bf16, on {where}")
    lib = next((r for r in rows if r["kernel"] == "cublas"), None)
    print(f"{'kernel':<16}{'first call':>14}{'median':>14}{'TFLOP/s':>10}"
          f"{'% cuBLAS':>10}{'error':>10}")
    for r in rows:
        pct = f"{100 * r['tflops'] / lib['tflops']:9.1f}%" if lib else f"{'-':>10}"
        print(f"{r['kernel']:<16}{r['first_call_s'] * 1e3:>11.2f} ms"
              f"{r['median_s'] * 1e3:>11.4f} ms{r['tflops']:>10.3f}{pct}"
              f"{r['error']:>10.1e}")
    print("every kernel verified against the float64 reference")
    accuracy = [rounding_error(p, args.k) for p in ("tf32", "bf16", "e4m3", "e5m2")]
    print(f"rounding the inputs, K = {args.k}: largest error relative to |A||W|^T")
    for r in accuracy:
        print(f"  {r['precision']:<6}{r['max']:>10.1e}"
              f"   (worst-case bound {r['bound']:.1e})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "tensor_cores", "m": args.m, "n": args.n, "k": args.k,
                       "gpu": GPU, "machine": device.machine_record(), "rows": rows,
                       "accuracy": accuracy}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

# %% [markdown]
# # Matrix multiplication, kernel by kernel, against cuBLAS
#
# This script multiplies two float32 matrices with every kernel of
# `gpukit.kernels.matmul` (numba kernels, then CUDA C kernels compiled by CuPy;
# the code is in `gpukit/matmul/kernels.py` and `matmul.cu`), checks each result
# against a float64 reference, and times each kernel with CUDA events next to
# cuBLAS. On a machine without an NVIDIA GPU the numba
# kernels run on numba's CUDA simulator at a small size, and the CUDA C kernels
# and cuBLAS are skipped.
#
# Run it: `python examples/matmul.py --m 2048 --n 2048 --k 2048 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # must run before numba is imported

from gpukit import bench  # noqa: E402
from gpukit.matmul import CUDA_C_KERNELS, NUMBA_KERNELS, check_matmul, matmul  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## Inputs, reference and a poisoned output
#
# Random normal data. The reference is computed in float64 on the host; each
# kernel writes into an output filled with NaN, so an element it skipped fails.
# The error of each element is measured relative to `|A| @ |B|`, the size of the
# rounding error any order of summation can make.

# %%
# --8<-- [start:inputs]
def make_inputs(m: int, n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b
# --8<-- [end:inputs]


# %% [markdown]
# ## Verify, then time, every kernel
#
# On the GPU the matrices are copied over once (CuPy arrays; numba kernels take
# them as they are). A matmul does 2 M N K floating-point operations: that turns
# a time into TFLOP/s, and cuBLAS measured in the same run into a percentage.

# %%
# --8<-- [start:run]
def run(m: int, n: int, k: int, repeat: int) -> list[dict]:
    a, b = make_inputs(m, n, k)
    if SIMULATED:
        from numba import cuda
        da, db = cuda.to_device(a), cuda.to_device(b)
        kernels = list(NUMBA_KERNELS)
        new_out = lambda: cuda.to_device(np.full((m, n), np.nan, np.float32))  # noqa: E731
    else:
        import cupy
        da, db = cupy.asarray(a), cupy.asarray(b)
        kernels = ["cublas", *NUMBA_KERNELS, *CUDA_C_KERNELS]
        new_out = lambda: cupy.full((m, n), cupy.nan, dtype=cupy.float32)  # noqa: E731
    rows = []
    for kernel in kernels:
        out = new_out()                                   # NaN: an unwritten element fails
        timer = "cpu" if SIMULATED else ("numba" if kernel in NUMBA_KERNELS else "cupy")
        t = bench.bench(lambda: matmul(da, db, kernel=kernel, out=out), timer=timer,
                        name=kernel, repeat=repeat, warmup=0 if SIMULATED else 2,
                        flops=2.0 * m * n * k)            # its first call compiles
        err = check_matmul(out, a, b, what=kernel)         # raises on NaN or a wrong value
        rows.append({"kernel": kernel, "max_err": err, **t.to_dict()})
    base = next((r["tflops"] for r in rows if r["kernel"] == "cublas"), None)
    for r in rows:
        r["pct_of_cublas"] = 100 * r["tflops"] / base if base else None
    return rows
# --8<-- [end:run]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fp32 matmul kernels vs cuBLAS")
    size = 48 if SIMULATED else 2048
    parser.add_argument("--m", type=int, default=size, help="rows of A and C")
    parser.add_argument("--n", type=int, default=size, help="columns of B and C")
    parser.add_argument("--k", type=int, default=size + (3 if SIMULATED else 0),
                        help="columns of A, rows of B")
    parser.add_argument("--repeat", type=int, default=1 if SIMULATED else 20)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 1 or args.repeat < 1:
        parser.error("--m, --n, --k and --repeat must be >= 1")
    try:
        rows = run(args.m, args.n, args.k, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = ("numba CUDA simulator (no GPU; times are the simulator's, not a GPU's)" if SIMULATED
             else device.describe(device.machine_record()))
    print(f"C = A @ B, {args.m} x {args.k} times {args.k} x {args.n}, float32, on {where}")
    print(f"{'kernel':<22}{'first call':>14}{'median':>14}{'TFLOP/s':>10}{'% cuBLAS':>10}"
          f"{'max err':>10}")
    for r in rows:
        pct = f"{r['pct_of_cublas']:9.1f}%" if r["pct_of_cublas"] is not None else f"{'-':>10}"
        print(f"{r['kernel']:<22}{r['first_call_s'] * 1e3:>11.2f} ms{r['median_s'] * 1e3:>11.4f} ms"
              f"{r['tflops']:>10.3f}{pct}{r['max_err']:>10.1e}")
    print("every kernel verified against the float64 reference")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "matmul", "m": args.m, "n": args.n, "k": args.k,
                       "simulated": SIMULATED, "machine": device.machine_record(),
                       "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

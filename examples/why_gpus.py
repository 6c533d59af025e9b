# %% [markdown]
# # CPU or GPU? The same two computations on every backend, verified and timed
#
# SAXPY (`out = a*x + y`, memory-bound) and a degree-128 polynomial per element
# (Horner's rule, compute-bound), each with NumPy, numba on one core, numba on
# all cores, and a numba CUDA kernel, timed alone and with the copies to and
# from the GPU. Every result is checked against a float64 reference. Without an
# NVIDIA GPU the kernel runs on numba's CUDA simulator at a tiny size, only to
# check it; its time means nothing.
#
# Run it: `python examples/why_gpus.py --n 1000000 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # must run before numba is imported

from gpukit import bench  # noqa: E402
from gpukit.why_gpus import DEGREE, RTOL, compute, reference  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## One size, every backend
#
# Inputs are random floats in [0, 1), never zeros; outputs start as NaN so an
# element nobody wrote fails the check. The first call of each backend
# (compilation) is kept apart from the median of the calls after it.

# %%
# --8<-- [start:measure]
def measure(work: str, n: int, repeat: int, gpu_n: int) -> list[dict]:
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    ref = reference(work, x, y)
    rows = []
    for backend in ["numpy", "numba-1core", "numba-parallel", "gpu"]:
        size = gpu_n if backend == "gpu" else n
        xs, ys = x[:size], y[:size]
        t0 = time.perf_counter()
        # the first call compiles, and copies to the GPU and back
        out = compute(work, backend, xs, ys)
        first = time.perf_counter() - t0
        err = float(np.max(np.abs(out - ref[:size]) / ref[:size])) if size else 0.0
        if not np.all(np.isfinite(out)) or not err <= RTOL[work]:
            raise AssertionError(f"{work} {backend}: max relative error {err:.3g}")
        slow = SIMULATED and backend == "gpu"
        t = bench.bench(lambda: compute(work, backend, xs, ys), timer="cpu",
                        warmup=0 if slow else 3, repeat=1 if slow else repeat)
        rows.append({"work": work, "backend": backend, "n": size, "first_call_s": first,
                     "median_s": t.median_s, "max_rel_err": err})
    return rows
# --8<-- [end:measure]


# %% [markdown]
# `compute()` allocates its output and, for the GPU, copies the inputs in and the
# result out on every call: these are end-to-end times, what a program whose
# data lives in host memory pays. The chapter's benchmark
# (`gpukit bench why-gpus`) also times the kernel alone, over sizes 1e3 to 1e9.

# %%
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        print(f"why_gpus.py: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(description="SAXPY and a polynomial on CPU and GPU, verified and timed")
    parser.add_argument("--n", type=int, default=10**6,
                        help="elements per array")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.n < 0 or args.repeat < 1:
        parser.error("--n must be >= 0 and --repeat >= 1")
    gpu_n = min(args.n, 512) if SIMULATED else args.n
    try:
        rows = measure("saxpy", args.n, args.repeat, gpu_n) + measure("poly", args.n, args.repeat, gpu_n)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "no GPU: numba CUDA simulator" if SIMULATED else device.describe(device.machine_record())
    print(f"SAXPY and a degree-{DEGREE} polynomial, float32, on {where}")
    print(f"{'work':<7}{'backend':<16}{'n':>12}{'first call':>14}{'median':>14}{'max rel err':>13}")
    for r in rows:
        note = "  (simulator: checks only)" if SIMULATED and r["backend"] == "gpu" else ""
        print(f"{r['work']:<7}{r['backend']:<16}{r['n']:>12,}{r['first_call_s'] * 1e3:>11.2f} ms"
              f"{r['median_s'] * 1e3:>11.3f} ms{r['max_rel_err']:>13.2g}{note}")
    print("all backends verified against the float64 reference (GPU times include the copies)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "why_gpus", "n": args.n, "simulated": SIMULATED,
                       "machine": device.machine_record(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

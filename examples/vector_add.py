# %% [markdown]
# # Vector add on every backend, verified and timed
#
# This script adds two float32 arrays with each backend of
# `gpukit.kernels.vector_add`, checks every element against a float64
# reference, and times each one with `gpukit.bench` (first call apart from the
# steady state). On a machine without an NVIDIA GPU the numba kernel runs on
# numba's CUDA simulator at a small size, and CuPy is skipped.
#
# Run it: `python examples/vector_add.py --n 100000000 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # must run before numba is imported

from numba import cuda  # noqa: E402

from gpukit import bench  # noqa: E402
from gpukit.kernels import vector_add  # noqa: E402
from gpukit.verify import check_close  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## Inputs, a float64 reference, and poisoned outputs
#
# Random data, never zeros: zeros hide unwritten outputs. Each output buffer is
# filled with NaN before the run, so an element the kernel skipped fails the check.

# %%
# --8<-- [start:inputs]
def make_inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    reference = x.astype(np.float64) + y.astype(np.float64)
    return x, y, reference
# --8<-- [end:inputs]


# %% [markdown]
# ## One function per backend
#
# Each returns a zero-argument callable that does the addition into a
# poisoned output, plus that output. Copies to the GPU happen here, once,
# outside anything that is timed.

# %%
# --8<-- [start:backends]
def prepare(backend: str, x, y):
    if backend in ("numpy", "numba-cpu"):
        out = np.full_like(x, np.nan)
        return (lambda: vector_add(x, y, backend=backend, out=out)), out, "cpu"
    if backend == "numba-cuda":
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        out = cuda.to_device(np.full_like(x, np.nan))
        return (lambda: vector_add(dx, dy, out=out)), out, "numba"
    if backend == "cupy":
        import cupy
        cx, cy = cupy.asarray(x), cupy.asarray(y)
        out = cupy.full_like(cx, cupy.nan)
        return (lambda: vector_add(cx, cy, out=out)), out, "cupy"
    if backend == "torch":
        import torch
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        tx, ty = torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)
        out = torch.full_like(tx, float("nan"))
        return (lambda: vector_add(tx, ty, out=out)), out, "torch" if dev == "cuda" else "cpu"
    raise ValueError(backend)
# --8<-- [end:backends]


def available_backends() -> list[str]:
    names = ["numpy", "numba-cpu", "numba-cuda"]
    if not SIMULATED:
        names.append("cupy")
    try:
        import torch  # noqa: F401
        names.append("torch")
    except ImportError:
        pass
    return names


# %% [markdown]
# ## Verify, then time
#
# The first call compiles (numba) or loads (CuPy) the kernel; `bench` reports it
# separately, so it runs before anything else calls the kernel; the check follows. Bandwidth counts 12 bytes per element: two float32 reads, one write.

# %%
# --8<-- [start:run]
def run(n: int, repeat: int) -> list[dict]:
    x, y, reference = make_inputs(n)
    rows = []
    for backend in available_backends():
        fn, out, timer = prepare(backend, x, y)
        # bench's first call is the program's first call (it compiles): timed on its own
        timing = bench.bench(fn, timer=timer, name=backend, repeat=repeat, bytes=12 * n)
        # raises on a NaN (an element never written) or on a miss
        err = check_close(out, reference, what=backend)
        rows.append({"backend": backend, "max_rel_err": err, **timing.to_dict()})
    return rows
# --8<-- [end:run]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    default_n = 2**12 if SIMULATED else 2**26
    parser.add_argument("--n", type=int, default=default_n, help="elements per array")
    parser.add_argument("--repeat", type=int, default=3 if SIMULATED else 30)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.n < 0 or args.repeat < 1:
        parser.error("--n must be >= 0 and --repeat >= 1")
    try:
        rows = run(args.n, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "numba CUDA simulator (no GPU)" if SIMULATED else device.describe(device.machine_record())
    print(f"vector add, n = {args.n:,} float32, on {where}")
    print(f"{'backend':<12}{'first call':>14}{'median':>14}{'GB/s':>10}{'max rel err':>14}")
    for r in rows:
        print(f"{r['backend']:<12}{r['first_call_s'] * 1e3:>11.2f} ms{r['median_s'] * 1e3:>11.4f} ms"
              f"{(r['gbs'] or 0):>10.1f}{r['max_rel_err']:>14.2g}")
    print("all backends verified against the float64 reference")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "vector_add", "n": args.n, "simulated": SIMULATED,
                       "machine": device.machine_record(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

# %% [markdown]
# # Mandelbrot on every backend, compile time and run time apart
#
# Computes the same Mandelbrot image with each backend of
# `gpukit.kernels.mandelbrot`, checks that every pixel's iteration count equals
# a float64 reference, and reports the first call (which compiles) apart from
# the steady state. Without an NVIDIA GPU the numba CUDA kernel runs on numba's
# simulator at a small size, and CuPy is skipped.
#
# Run it: `python examples/mandelbrot.py --size 2048 --max-iter 256 --png mandel.png`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # before numba is imported

from gpukit import bench  # noqa: E402
from gpukit.mandelbrot import colorize, mandelbrot, write_png  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## The backends to compare
#
# `numba-cpu-1core` and `numba-cpu` (all cores) are the fair CPU baselines. On the
# simulator the numba CUDA kernel runs one Python thread per GPU thread, so it
# gets a much smaller image there.

# %%
def backends() -> list[str]:
    names = ["numpy", "numba-cpu-1core", "numba-cpu", "numba-cuda"]
    if not SIMULATED:
        names += ["cupy", "torch"]
    return names


def timer_for(backend: str) -> str:
    return {"numba-cuda": "numba", "cupy": "cupy", "torch": "torch"}.get(backend, "cpu")


# %% [markdown]
# ## Verify, then time
#
# The reference is the float64 result of the all-cores CPU kernel. In float64
# every backend must match it exactly; `to_host=False` keeps GPU results on the
# GPU while timing, so the copy back is not counted as kernel time.

# %%
# --8<-- [start:run]
def run(size: int, max_iter: int, repeat: int) -> list[dict]:
    rows = []
    for backend in backends():
        n = size
        if backend == "numba-cuda" and SIMULATED:
            n = min(size, 48)        # the simulator runs one Python thread per GPU thread
        elif backend in ("numpy", "numba-cpu-1core"):
            n = min(size, 512)       # the slow baselines get a smaller image; Mpixel/s compare
        timing = bench.bench(        # its first call is the backend's first: it compiles
            lambda: mandelbrot(n, n, max_iter=max_iter, backend=backend, to_host=False),
            timer=timer_for(backend), name=backend, warmup=1,
            repeat=repeat if backend not in ("numpy", "torch") else min(repeat, 3))
        reference = mandelbrot(n, n, max_iter=max_iter, backend="numba-cpu")
        counts = mandelbrot(n, n, max_iter=max_iter, backend=backend)
        differing = int(np.count_nonzero(counts != reference))
        if differing:
            raise AssertionError(f"{backend}: {differing} pixels differ from the float64 reference")
        rows.append({"backend": backend, "size": n, **timing.to_dict(),
                     "mpixels_per_s": n * n / timing.median_s / 1e6})
    return rows
# --8<-- [end:run]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mandelbrot on every backend, verified and timed.")
    parser.add_argument("--size", type=int, default=256 if SIMULATED else 2048)
    parser.add_argument("--max-iter", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3 if SIMULATED else 10)
    parser.add_argument("--png", help="also write the image (all-cores CPU result) here")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.size <= 0 or args.max_iter <= 0 or args.repeat <= 0:
        parser.error("--size, --max-iter and --repeat must be > 0")
    try:
        rows = run(args.size, args.max_iter, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "numba CUDA simulator (no GPU)" if SIMULATED else device.describe(device.machine_record())
    print(f"Mandelbrot, {args.max_iter} iterations, float64, on {where}")
    print(f"{'backend':<17}{'size':>6}{'first call':>13}{'median':>13}{'Mpixel/s':>11}")
    for r in rows:
        print(f"{r['backend']:<17}{r['size']:>6}{r['first_call_s'] * 1e3:>10.1f} ms"
              f"{r['median_s'] * 1e3:>10.3f} ms{r['mpixels_per_s']:>11.1f}")
    print("every backend's counts equal the float64 reference")
    if args.png:
        counts = mandelbrot(args.size, args.size, max_iter=args.max_iter, backend="numba-cpu")
        write_png(colorize(counts, args.max_iter), args.png)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "mandelbrot", "simulated": SIMULATED, "max_iter": args.max_iter,
                       "machine": device.machine_record(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

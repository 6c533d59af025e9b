# %% [markdown]
# # Path tracing the final scene of *Ray Tracing in One Weekend*, on CPU and GPU
#
# Renders the book's final scene (about 480 spheres; Peter Shirley,
# https://raytracing.github.io/books/RayTracingInOneWeekend.html) with the same path tracer
# compiled twice: numba on all CPU cores and numba CUDA on the GPU. Both use the same random
# numbers, but a path can take another turn on one of them, so the images are compared as a
# whole, by the chapter's one criterion (`images_agree`: at most 3 % of the pixels may differ by
# more than 1e-3, and the mean difference must stay within 1e-3); the script exits non-zero
# otherwise. Without an NVIDIA GPU the CUDA kernel runs on numba's simulator at a tiny size.
#
# Run it: `python examples/graphics.py --width 640 --height 360 --spp 4 --png scene.png`

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
from gpukit.graphics import final_scene, images_agree, render, write_png  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## Verify, then time
#
# Both backends render the same scene, size, samples and seed. `stats` receives the number of
# ray segments traced (camera rays and bounces), the unit of work for the speed.

# %%
# --8<-- [start:run]
def run(width: int, height: int, spp: int, depth: int, repeat: int) -> tuple[list[dict], np.ndarray]:
    scene = final_scene(0)
    images, rows = {}, []
    for backend in ("numba-cpu", "numba-cuda"):
        timing = bench.bench(lambda: render(scene, width, height, spp=spp, max_depth=depth, seed=1,
                                            backend=backend), timer="cpu", name=backend,
                             warmup=0, repeat=repeat)      # its first call compiles
        stats: dict = {}
        images[backend] = render(scene, width, height, spp=spp, max_depth=depth, seed=1,
                                 backend=backend, linear=True, stats=stats)
        rows.append({"backend": backend, "segments": stats["segments"], **timing.to_dict(),
                     "msegments_per_s": stats["segments"] / timing.median_s / 1e6})
    check = images_agree(images["numba-cuda"], images["numba-cpu"])
    if not check["ok"]:
        raise AssertionError(f"{100 * check['pixels_over_atol']:.2f} % of pixels differ by more "
                             f"than {check['atol']}, mean difference {check['mean_abs']:.2g}")
    return rows, images["numba-cpu"]
# --8<-- [end:run]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The final scene on CPU and GPU, verified and timed.")
    parser.add_argument("--width", type=int, default=16 if SIMULATED else 640)
    parser.add_argument("--height", type=int, default=9 if SIMULATED else 360)
    parser.add_argument("--spp", type=int, default=1 if SIMULATED else 4)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1 if SIMULATED else 3)
    parser.add_argument("--png", help="also write the image here")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if min(args.width, args.height, args.spp, args.depth, args.repeat) <= 0:
        parser.error("--width, --height, --spp, --depth and --repeat must be > 0")
    try:
        rows, image = run(args.width, args.height, args.spp, args.depth, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "numba CUDA simulator (no GPU)" if SIMULATED else device.describe(device.machine_record())
    print(f"{args.width} x {args.height}, {args.spp} spp, up to {args.depth} segments, on {where}")
    print(f"{'backend':<12}{'first call':>13}{'median':>13}{'M segments/s':>15}")
    for r in rows:
        print(f"{r['backend']:<12}{r['first_call_s']:>11.2f} s{r['median_s'] * 1e3:>10.1f} ms"
              f"{r['msegments_per_s']:>15.2f}")
    print("CPU and GPU images agree (host time per call, copies included)")
    if args.png:
        write_png(np.sqrt(np.clip(image, 0, 1)), args.png)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "graphics", "simulated": SIMULATED, "machine": device.machine_record(),
                       "width": args.width, "height": args.height, "spp": args.spp, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

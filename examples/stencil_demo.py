"""A 3-point average on the GPU, checked against NumPy and timed.

Without an NVIDIA GPU the kernel runs on numba's CUDA simulator at a small size.
Run it: `python examples/stencil_demo.py --n 1000000 --json stencil.json`
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # before numba is imported

from gpukit import bench  # noqa: E402
from gpukit.stencil_demo import average3, average3_cpu  # noqa: E402


# --8<-- [start:check]
def check(n: int) -> float:
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    got = average3(x).copy_to_host()
    want = average3_cpu(x)
    err = float(np.max(np.abs(got - want)))
    if err > 1e-6:
        raise AssertionError(f"the GPU average differs from NumPy by {err:.3g}")
    return err
# --8<-- [end:check]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A 3-point average, checked and timed.")
    parser.add_argument("--n", type=int, default=1000 if SIMULATED else 1 << 24)
    parser.add_argument("--repeat", type=int, default=2 if SIMULATED else 20)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.n < 3:
        parser.error("--n must be at least 3")
    try:
        err = check(args.n)
    except AssertionError as e:
        print(e, file=sys.stderr)
        return 1
    x = np.random.default_rng(2).random(args.n, dtype=np.float32)
    t = bench.bench(lambda: average3(x), timer="cpu" if SIMULATED else "numba",
                    name="average3", repeat=args.repeat, bytes=8 * args.n)
    print(f"n = {args.n:,}: max error {err:.2g}, median {t.median_s * 1e3:.3f} ms")
    if args.json:
        record = {"machine": device.machine_record(), "n": args.n, "max_abs_err": err,
                  "timing": t.to_dict()}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

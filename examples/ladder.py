# %% [markdown]
# # One softmax, every level of the stack
#
# This script computes `y = softmax(scale * x + bias)` over each row of a float32 matrix with
# every implementation in `gpukit.ladder` that this machine can run: PyTorch,
# CuPy array code, CuPy's kernel templates, a numba.cuda kernel, CUDA C and Triton. Each result
# is checked against a float64 NumPy reference (outputs that a kernel writes into are filled
# with NaN first), then timed: the first call (which compiles) apart from the steady state.
#
# Without an NVIDIA GPU, PyTorch runs on the CPU, the numba kernel on numba's CUDA simulator and
# Triton in its interpreter, on a small matrix; CuPy and CUDA C are skipped. `torch.compile` is
# left out unless you ask for it (`--compile`): its first call alone can take longer than the
# rest of the script. `gpukit bench ladder` runs every level, each in a fresh process.
#
# Run it: `python examples/ladder.py --rows 8192 --cols 4096 --json out.json` (the defaults on a
# GPU; `gpukit bench ladder` times a matrix of 32768 rows)

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import os
import sys

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # must run before numba is imported
if SIMULATED:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton runs on the CPU, before its import

from gpukit.ladder import LEVELS, Skip, level_loc, measure_level  # noqa: E402
# --8<-- [end:setup]


# %% [markdown]
# ## Which levels run here
#
# `measure_level` imports a level's library (raising `Skip` with a reason when it
# cannot run), copies the inputs where the level works, calls it once, checks the output and
# times it.

# %%
# --8<-- [start:levels]
def levels_here(with_compile: bool) -> list[str]:
    names = ["torch-eager", "torch-softmax", "numba-cuda", "triton"]
    if with_compile:
        names.insert(2, "torch-compile")
    if not SIMULATED:
        names += ["cupy-array", "cupy-kernels", "cuda-c"]
    return names


def run(rows: int, cols: int, repeat: int, with_compile: bool) -> tuple[list, list]:
    measured, skipped = [], []
    for level in levels_here(with_compile):
        small = SIMULATED and level in ("numba-cuda", "triton")   # simulated: tiny shape
        shape = (min(rows, 4), min(cols, 300)) if small else (rows, cols)
        try:
            res = measure_level(level, [shape], repeat=2 if small else repeat)
        except Skip as exc:
            skipped.append({"level": level, "reason": str(exc)})
            continue
        measured.append({"level": level, "label": LEVELS[level][0], "simulated": small,
                         "loc": level_loc(level), **res["shapes"][0]})
    return measured, skipped
# --8<-- [end:levels]


# %%
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # bad input: one line, exit status 2, no usage block
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(description="softmax(scale * x + bias) per row, at every level")
    parser.add_argument("--rows", type=int, default=512 if SIMULATED else 8192)
    parser.add_argument("--cols", type=int, default=1024 if SIMULATED else 4096)
    parser.add_argument("--repeat", type=int, default=5 if SIMULATED else 30)
    parser.add_argument("--compile", action="store_true", help="also run torch.compile (slow first call)")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.cols < 1 or args.repeat < 1:
        parser.error("--rows, --cols and --repeat must be >= 1")
    try:
        rows, skipped = run(args.rows, args.cols, args.repeat, args.compile)
    except AssertionError as exc:                      # gpukit.verify.Mismatch
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "no GPU (PyTorch on the CPU, numba simulator, Triton interpreter)" if SIMULATED \
        else device.describe(device.machine_record())
    print(f"softmax(scale * x + bias) per row, {args.rows} x {args.cols} float32, on {where}")
    print(f"{'level':<44}{'lines':>6}{'first call':>13}{'median':>13}{'GB/s':>9}{'max rel err':>13}")
    for r in rows:
        rate = "sim." if r["simulated"] else f"{r['gbs']:.1f}"
        print(f"{r['label']:<44}{r['loc']:>6}{r['first_call_s'] * 1e3:>10.1f} ms"
              f"{r['median_s'] * 1e3:>10.3f} ms{rate:>9}{r['max_rel_err']:>13.2g}")
    for s in skipped:
        print(f"{LEVELS[s['level']][0]:<44} skipped: {s['reason']}")
    print(f"all {len(rows)} levels verified against the float64 reference")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "ladder", "rows": args.rows, "cols": args.cols, "simulated": SIMULATED,
                       "machine": device.machine_record(), "results": rows, "skipped": skipped},
                      fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

# %% [markdown]
# # Timing mistakes, reproduced
#
# This script times one workload, SAXPY (`out = 2 * x + y` in float32), the wrong
# ways and the right way, side by side, and checks every result. Each mistake
# prints the wrong number, the right number and their ratio. The chapter
# "Timing GPU code honestly" shows the same measurements at full size on an H200.
#
# Without an NVIDIA GPU, torch runs on the CPU (where every call is synchronous,
# so the missing-synchronisation trap cannot show) and numba's kernels run on its
# CUDA simulator at a small size: the numbers there only show the mechanics.
#
# Run it: `python examples/timing.py --n 67108864 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # must run before numba is imported

import torch  # noqa: E402
from numba import cuda  # noqa: E402

from gpukit import bench  # noqa: E402
from gpukit.timing import (A, check_saxpy, graph_time, implied_gbs, is_impossible,  # noqa: E402
                           launch_saxpy, make_inputs, poison_demo, saxpy_bytes, single_runs,
                           spread, time_without_sync, torch_saxpy)
from gpukit.verify import Mismatch  # noqa: E402

GPU = not SIMULATED and torch.cuda.is_available()
DEV = "cuda" if GPU else "cpu"
TIMER = "torch" if GPU else "cpu"            # whose clock gpukit.bench uses
sync = torch.cuda.synchronize if GPU else (lambda: None)
# --8<-- [end:setup]


# %% [markdown]
# ## The workload, on the device, with a poisoned output

# %%
# --8<-- [start:workload]
def workload(n: int):
    x, y = make_inputs(n)                      # random float32, never zeros
    dx, dy = torch.from_numpy(x).to(DEV), torch.from_numpy(y).to(DEV)
    out = torch.full_like(dx, float("nan"))    # poisoned: an unwritten element fails the check
    return x, y, (lambda: torch_saxpy(dx, dy, out)), out
# --8<-- [end:workload]


# %% [markdown]
# ## Mistake 1: a host clock and no synchronisation
#
# A GPU launch returns as soon as the work is queued. A clock stopped then
# measures the launch, and the bandwidth it implies can be far above what
# the memory can deliver. `is_impossible` compares it with a copy ceiling
# measured in the same run.

# %%
# --8<-- [start:mistake1]
def mistake_no_sync(n: int, repeat: int) -> dict:
    x, y, fn, out = workload(n)
    fn()
    sync()
    wrong = time_without_sync(fn)              # stops the clock at the launch
    sync()
    right = bench.bench(fn, timer=TIMER, repeat=repeat).median_s
    check_saxpy(out, x, y)
    nbytes = saxpy_bytes(n)
    ceiling = bench.copy_ceiling(TIMER, nbytes=n * 4).gbs
    return {"mistake": "no synchronisation", "wrong_s": wrong, "right_s": right,
            "wrong_gbs": implied_gbs(nbytes, wrong), "right_gbs": implied_gbs(nbytes, right),
            "ceiling_gbs": ceiling,
            "wrong_is_impossible": is_impossible(implied_gbs(nbytes, wrong), ceiling)}
# --8<-- [end:mistake1]


# %% [markdown]
# ## Mistake 2: the first call included
#
# numba compiles a kernel on its first call. `gpukit.bench` times that call
# apart from the steady state.

# %%
# --8<-- [start:mistake2]
def mistake_first_call(n: int, repeat: int) -> dict:
    x, y = make_inputs(n)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    out = cuda.to_device(np.full_like(x, np.nan))
    t = bench.bench(lambda: launch_saxpy(A, dx, dy, out),
                    timer="cpu" if SIMULATED else "numba", repeat=repeat)
    check_saxpy(out, x, y, what="numba saxpy")
    return {"mistake": "first call (JIT compile) included", "wrong_s": t.first_call_s,
            "right_s": t.median_s}
# --8<-- [end:mistake2]


# %% [markdown]
# ## Mistake 4: transfers, in or out
#
# "How fast is the kernel?" and "how long until my NumPy array has the answer?"
# are two questions with two different times.

# %%
# --8<-- [start:mistake4]
def mistake_transfers(n: int, repeat: int) -> dict:
    x, y, fn, out = workload(n)

    def numpy_to_numpy():
        gx, gy = torch.from_numpy(x).to(DEV), torch.from_numpy(y).to(DEV)
        return torch_saxpy(gx, gy, torch.empty_like(gx)).cpu().numpy()

    kernel = bench.bench(fn, timer=TIMER, repeat=repeat).median_s
    box = {}
    answer = bench.bench(lambda: box.update(r=numpy_to_numpy()), timer=TIMER,
                         warmup=1, repeat=3).median_s
    check_saxpy(out, x, y)
    check_saxpy(box["r"], x, y, what="numpy to numpy")
    return {"mistake": "transfers counted for the kernel", "wrong_s": answer, "right_s": kernel}
# --8<-- [end:mistake4]


# %% [markdown]
# ## Mistake 5: one run
#
# Time 100 calls one by one and look at the spread before trusting any single one.

# %%
# --8<-- [start:mistake5]
def mistake_one_run(n: int) -> dict:
    x, y, fn, out = workload(n)
    runs = single_runs(fn, sync, count=100, idle_s=0.2)["host_s"]
    check_saxpy(out, x, y)
    st = spread(runs)
    return {"mistake": "one run", "wrong_s": st["first_s"], "right_s": st["median_s"],
            "min_s": st["min_s"], "max_s": st["max_s"]}
# --8<-- [end:mistake5]


# %% [markdown]
# ## Mistake 6: data that sits in a cache
#
# A 24 MiB working set (x + y + out; 3 MiB on a CPU) fits in the cache: run back to back, it
# is served from there and looks faster than memory can deliver. A working set far larger than
# any cache (at least 192 MiB) shows the memory's real speed. Both are timed the same way, many
# launches back to back; on a GPU they are replayed from a CUDA graph, because a kernel of a few
# microseconds timed one call at a time also measures the host's launch gap (mistake 5), which
# can be longer than the kernel and hides the cache. Much smaller sets would hide it too: their
# kernels are so short that the fixed cost of each launch dominates, even in a graph.

# %%
# --8<-- [start:mistake6]
def back_to_back(fn, launches: int, repeat: int) -> float:
    """Seconds per call of ``fn``, ``launches`` calls in a row with no gap between them
    (the median over ``repeat`` runs of them)."""
    if GPU:   # one CUDA graph of all the launches, replayed
        return graph_time(fn, launches, replays=repeat)
    return bench.bench(fn, timer="cpu", batch=launches, repeat=repeat).median_s


def mistake_cache(n: int, repeat: int) -> dict:
    rates = {}
    for m, launches in (((24 if GPU else 3) * 2**20 // 12, 200), (max(n, 2**24), 10)):
        x, y, fn, out = workload(m)
        seconds = back_to_back(fn, launches, repeat)
        check_saxpy(out, x, y)
        rates[m] = implied_gbs(saxpy_bytes(m), seconds)
    small, large = rates.values()
    return {"mistake": "cache-resident data", "wrong_gbs": small, "right_gbs": large}
# --8<-- [end:mistake6]


# %% [markdown]
# ## Zeros hide unwritten outputs; NaN poison does not
#
# `launch_saxpy_buggy` rounds the block count down and never writes the
# last `n % 256` elements. Checked against zeros it passes; against a
# NaN-poisoned output it fails, as it should.

# %%
# --8<-- [start:poison]
def poison_check(n: int) -> dict:
    demo = poison_demo(n)
    by_case = {c["case"]: c for c in demo["cases"]}
    hidden = not by_case["zeros in, zero-filled output"]["caught"]
    caught = by_case["random in, NaN-poisoned output"]["caught"]
    if not (hidden and caught):
        raise Mismatch(f"poison demo did not behave as expected: {demo['cases']}")
    return {"mistake": "zeros hide an unwritten tail", "unwritten": demo["unwritten"],
            "caught_by_poison": caught, "hidden_by_zeros": hidden}
# --8<-- [end:poison]


# %%
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        print(f"timing.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(description="Timing mistakes, reproduced and measured against the right way.")
    parser.add_argument("--n", type=int, default=2**26 if GPU else 2**20, help="elements per array")
    parser.add_argument("--repeat", type=int, default=20 if GPU else 5)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.n < 256 or args.repeat < 1:
        parser.error("--n must be >= 256 and --repeat >= 1")
    # numba's simulator runs each thread in Python: keep its part tiny
    n_numba, r_numba = (min(args.n, 1024), min(args.repeat, 3)) if SIMULATED else (args.n, args.repeat)
    try:
        rows = [mistake_no_sync(args.n, args.repeat),
                mistake_first_call(n_numba, r_numba)]
        if GPU:
            rows.append(mistake_transfers(args.n, args.repeat))
        rows += [mistake_one_run(args.n), mistake_cache(args.n, args.repeat),
                 poison_check(600 if SIMULATED else 2**20 + 100)]
    except Mismatch as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "CPU + numba CUDA simulator (no GPU)" if SIMULATED else device.describe(device.machine_record())
    print(f"SAXPY timing mistakes, n = {args.n:,} float32, on {where}")
    print(f"{'mistake':<36}{'wrong':>14}{'right':>14}{'wrong/right':>12}")
    for r in rows:
        if "wrong_s" in r:
            print(f"{r['mistake']:<36}{r['wrong_s'] * 1e3:>11.4f} ms{r['right_s'] * 1e3:>11.4f} ms"
                  f"{r['wrong_s'] / r['right_s']:>11.3g}x")
        elif "wrong_gbs" in r:
            print(f"{r['mistake']:<36}{r['wrong_gbs']:>9.1f} GB/s{r['right_gbs']:>9.1f} GB/s"
                  f"{r['wrong_gbs'] / r['right_gbs']:>11.3g}x")
        else:
            print(f"{r['mistake']:<36} {r['unwritten']} unwritten elements: hidden by zeros, "
                  "caught by NaN poison")
    if rows[0]["wrong_is_impossible"]:
        print(f"the unsynchronised time implies {rows[0]['wrong_gbs']:,.0f} GB/s, above the "
              f"{rows[0]['ceiling_gbs']:,.0f} GB/s copy ceiling: impossible")
    print("every result verified against the float64 reference")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "timing", "n": args.n, "simulated": SIMULATED,
                       "machine": device.machine_record(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

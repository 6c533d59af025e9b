# %% [markdown]
# # What a GPU is made of: query it, then watch three of its rules at work
#
# This script prints the GPU's device query next to the same facts for the host CPU, then runs
# three kernels of `gpukit.gpu_anatomy` and checks every output: a streaming read
# (bandwidth needs many warps), a strided copy (neighbouring threads should touch neighbouring
# addresses) and a kernel whose warps take several paths (divergence). On a GPU each kernel is
# timed with CUDA events; without one, the kernels run on numba's CUDA simulator at small sizes
# to check them, and nothing is timed.
#
# Run it: `python examples/gpu_anatomy.py --n 67108864 --json out.json`

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
from gpukit.gpu_anatomy import (DIVERGENCE_MODES, PATHS, fill_random, host_facts,  # noqa: E402
                                paths_kernel, paths_reference, read_sum, strided_copy)
# --8<-- [end:setup]


# %% [markdown]
# ## The device query, next to the host's facts

# %%
# --8<-- [start:query]
def query() -> dict:
    # None without a GPU (or on the simulator)
    gpu = device.gpu_properties()
    host = host_facts()
    caches = [c["bytes"] for c in host["caches"]]
    print(f"host: {host['model']}, {host['physical_cores']} cores, "
          f"{host['float32_lanes']} float32 lanes per SIMD instruction, "
          f"caches {caches} bytes")
    if gpu:
        print(f"GPU:  {gpu['name']}, {gpu['multiprocessors']} SMs, "
              f"warps of {gpu['warp_size']}, "
              f"up to {gpu['max_threads_per_multiprocessor']} resident threads per SM, "
              f"{gpu['l2_cache_bytes'] / 2**20:.0f} MiB L2, "
              f"{gpu['memory_bytes'] / 1e9:.0f} GB")
    return {"gpu": gpu, "host": host}
# --8<-- [end:query]


# %% [markdown]
# ## Three kernels, each checked, then timed on a GPU

# %%
def _time(fn, name, nbytes=None, repeat=10):
    if SIMULATED:
        return {"name": name}
    return bench.bench(fn, timer="numba", name=name, warmup=2, repeat=repeat, bytes=nbytes).to_dict()


# --8<-- [start:experiments]
def experiments(n: int, k_paths: int, iters: int) -> list[dict]:
    rows = []
    x = cuda.device_array(n, dtype=np.float32)
    fill_random[(n + 255) // 256, 256](x, 1)
    hx = x.copy_to_host()

    # 1. A streaming read: 1 and 4 blocks of 256 threads per multiprocessor.
    sms = 1 if SIMULATED else cuda.get_current_device().MULTIPROCESSOR_COUNT
    for blocks_per_sm in (1, 4):
        grid = sms * blocks_per_sm
        partial = cuda.to_device(np.full(grid * 256, np.nan, dtype=np.float32))
        read_sum[grid, 256](x, partial)
        got = partial.copy_to_host().astype(np.float64).sum()
        ref = hx.astype(np.float64).sum()
        if not abs(got - ref) <= 1e-4 * ref:
            raise AssertionError(f"read sum: {got} != {ref}")
        rows.append(_time(lambda: read_sum[grid, 256](x, partial),
                          f"read, {blocks_per_sm * 8} warps per SM", nbytes=4 * n))

    # 2. Strided copies: thread i reads element i * stride.
    for stride in (1, 8, 32):
        m = n // stride
        out = cuda.to_device(np.full(m, np.nan, dtype=np.float32))
        strided_copy[(m + 255) // 256, 256](x, out, stride)
        if not np.array_equal(out.copy_to_host(), hx[: m * stride: stride]):
            raise AssertionError(f"strided copy, stride {stride}: wrong elements")
        rows.append(_time(lambda: strided_copy[(m + 255) // 256, 256](x, out, stride),
                          f"strided copy, stride {stride}", nbytes=8 * m))

    # 3. Divergence: k paths inside each warp, one path per warp, no branch.
    #    All three give the same results.
    nd = min(n, 1024 if SIMULATED else 2**20) // 1024 * 1024
    xd, outs = x[:nd], []
    for mode, label in enumerate(DIVERGENCE_MODES):
        out = cuda.to_device(np.full(nd, np.nan, dtype=np.float32))
        paths_kernel[nd // 256, 256](xd, out, k_paths, iters, mode)
        outs.append(out.copy_to_host())
        launch = paths_kernel[nd // 256, 256]
        rows.append(_time(lambda: launch(xd, out, k_paths, iters, mode),
                          f"{k_paths} paths, {label}"))
    ref = paths_reference(hx[:nd], k_paths, iters)
    if not all(np.array_equal(outs[0], o) for o in outs[1:]):
        raise AssertionError("the three divergence kernels disagree")
    if not np.allclose(outs[0], ref, rtol=1e-3):
        raise AssertionError("the divergence kernels differ from the float64 reference")
    return rows
# --8<-- [end:experiments]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="device query and three small GPU experiments")
    parser.add_argument("--n", type=int, default=4096 if SIMULATED else 2**26,
                        help="float32 elements of the array read (a multiple of 1024)")
    parser.add_argument("--paths", type=int, default=8, choices=PATHS,
                        help="different paths inside a warp in the divergence kernel")
    parser.add_argument("--iters", type=int, default=4 if SIMULATED else 1024,
                        help="multiply-adds per element in the divergence kernel")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    problem = ("--n must be a positive multiple of 1024" if args.n < 1024 or args.n % 1024 else
               "--iters must be >= 1" if args.iters < 1 else None)
    if problem:
        print(f"gpu_anatomy.py: error: {problem}", file=sys.stderr)   # one line, no traceback
        return 2
    facts = query()
    try:
        rows = experiments(args.n, args.paths, args.iters)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "numba CUDA simulator (no GPU): checked, not timed" if SIMULATED else \
        device.describe(device.machine_record())
    print(f"\n{args.n:,} float32 elements, on {where}")
    for r in rows:
        timing = f"{r['median_s'] * 1e3:9.4f} ms" if "median_s" in r else "checked"
        rate = f"{r['gbs']:9.1f} GB/s" if r.get("gbs") else ""
        print(f"  {r['name']:<58}{timing}{rate}")
    print("all kernels verified")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "gpu_anatomy", "n": args.n, "simulated": SIMULATED, "facts": facts,
                       "machine": device.machine_record(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

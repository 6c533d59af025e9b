# %% [markdown]
# # Copies and kernels overlapped on CUDA streams, checked and timed
#
# Copies a float32 array to the GPU, evaluates a polynomial on every element and copies the
# result back, first on one stream and then in chunks spread over several streams, from pinned
# host memory. Both results are checked against a float64 reference (the output is poisoned
# with NaN first) and against each other, and the timeline of the pipelined run is printed from
# its CUDA events. Without an NVIDIA GPU the same scheduler runs on a NumPy stand-in at a small
# size: the answer is checked, the times mean nothing.
#
# Run it: `python examples/profiling.py --n 67108864 --chunks 8 --streams 4`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gpukit import device
from gpukit.profiling import CupyOps, HostOps, poly_kernel, reference, rtol, run, timeline

GPU = device.has_gpu()
# --8<-- [end:setup]


# %% [markdown]
# ## Buffers: pinned host memory on a GPU, plain NumPy arrays without one

# %%
def make_ops(x, out, degree, streams):
    if not GPU:
        return HostOps(x, out, degree)
    import cupy
    import cupyx
    pinned_in, pinned_out = cupyx.empty_pinned(x.size, np.float32), out
    pinned_in[:] = x
    d_in, d_out = cupy.empty(x.size, cupy.float32), cupy.empty(x.size, cupy.float32)
    poly_kernel()(d_in[:1], np.int32(degree), d_out[:1])       # compile before timing
    return CupyOps(pinned_in, pinned_out, d_in, d_out, degree, streams)


def host_buffer(n):
    if GPU:
        import cupyx
        return cupyx.empty_pinned(n, np.float32)
    return np.empty(n, np.float32)


# %% [markdown]
# ## Serial, then pipelined: check each, then time it

# %%
# --8<-- [start:run]
def check(out, x, degree):
    if not np.isfinite(out).all():
        raise AssertionError("some elements were never written")
    sample = slice(0, x.size, max(1, x.size // 4096))
    ref = reference(x[sample], degree)
    err = float(np.max(np.abs(out[sample] - ref) / np.abs(ref)))
    if err > rtol(degree):
        raise AssertionError(f"relative error {err:.3g} above {rtol(degree):.3g}")
    return err


def compare(n, degree, chunks, streams, repeat):
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    results = {}
    for name, count, nstreams in (("serial", 1, 1), ("pipelined", chunks, streams)):
        out = host_buffer(n)
        out[:] = np.nan
        ops = make_ops(x, out, degree, nstreams)
        run(ops, n, count, nstreams)                            # warm-up, then check
        err = check(out, x, degree)
        walls = [run(ops, n, count, nstreams)["wall_s"] for _ in range(repeat)]
        results[name] = {"chunks": count, "streams": nstreams, "median_s": float(np.median(walls)),
                         "max_rel_err": err, "out": out.copy(),
                         "bars": timeline(run(ops, n, count, nstreams)["chunks"])}
    if not np.array_equal(results["serial"].pop("out"), results["pipelined"].pop("out")):
        raise AssertionError("the pipelined result differs from the serial one")
    return results
# --8<-- [end:run]


# %%
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Copies overlapped with a kernel on streams.")
    parser.add_argument("--n", type=int, default=2**26 if GPU else 4096)
    parser.add_argument("--degree", type=int, default=1024 if GPU else 16)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if min(args.n, args.degree, args.chunks, args.streams, args.repeat) <= 0:
        parser.error("--n, --degree, --chunks, --streams and --repeat must be > 0")
    try:
        res = compare(args.n, args.degree, args.chunks, args.streams, args.repeat)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = device.describe(device.machine_record()) if GPU else "NumPy stand-in (no GPU): times mean nothing"
    print(f"{args.n:,} float32 elements, degree {args.degree}, on {where}")
    for name, r in res.items():
        print(f"{name:<10} {r['chunks']:>3} chunks on {r['streams']} stream(s): {r['median_s'] * 1e3:9.3f} ms")
    print("pipelined timeline (ms after the start event):")
    for b in res["pipelined"]["bars"]:
        print(f"  chunk {b['chunk']:>2} stream {b['stream']} {b['kind']:<8} "
              f"{b['start'] * 1e3:8.3f} -> {b['stop'] * 1e3:8.3f}")
    print("both results match the float64 reference and each other")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "profiling", "gpu": GPU, "n": args.n, "degree": args.degree,
                       "machine": device.machine_record(), "results": res}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))

"""The matrix-multiplication benchmark: what ``gpukit bench matmul --save`` records.

``run(n, repeat)`` verifies and times every kernel of :mod:`gpukit.kernels.matmul` against
cuBLAS fp32 (TF32 off) in the same run, sweeps sizes for the fastest kernels, closes with
what TF32 and bf16 tensor cores give through the library, and runs ``compute-sanitizer``
(memcheck and racecheck, :mod:`gpukit.matmul.sanitize`) on every CUDA C kernel. The
compiler's register report is recorded apart (:mod:`gpukit.matmul.ptxas`).

How results are checked (:mod:`gpukit.matmul.check`): every output is poisoned with NaN
before the run; the error of each element is measured against a float64 reference and
divided by ``(|A| @ |B|)``, the scale of the rounding error of any summation order; it must
stay below ``error_bound(K)``. At the benchmark size the float64 reference is computed on
the GPU (``cupy.matmul`` in float64); in the size sweep kernels are compared with cuBLAS
fp32 under twice the bound.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from .. import bench, device
from ..verify import Mismatch
from .check import check_matmul, error_bound, matmul_error
from .meta import AWKWARD
from .sanitize import sanitize

DEFAULT_N = 4096
SWEEP = (512, 1024, 2048, 4096, 8192)


# ------------------------------------------------------------------ the GPU benchmark

def _cupy_inputs(m, n, k, seed):
    import cupy
    rng = cupy.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=cupy.float32),
            rng.standard_normal((k, n), dtype=cupy.float32))


def _reference(a, b):
    """float64 product and error scale, computed on the GPU."""
    import cupy
    a64, b64 = a.astype(cupy.float64), b.astype(cupy.float64)
    return a64 @ b64, cupy.abs(a64) @ cupy.abs(b64)


def _check_device(got, ref, scale, k, what, factor=1.0):
    import cupy
    err = matmul_error(got, ref, scale, xp=cupy)
    bound = factor * error_bound(k)
    if err > bound:
        raise Mismatch(f"{what}: error {err:.3g} (relative to |A| @ |B|) exceeds {bound:.3g}")
    return err


def _timer_for(kernel: str) -> str:
    from . import kernels as mm
    return "numba" if kernel in mm.NUMBA_KERNELS else "cupy"


def _sync(kernel: str):
    if _timer_for(kernel) == "numba":
        from numba import cuda
        cuda.synchronize()
    else:
        import cupy
        cupy.cuda.Device().synchronize()


def _registers(kernel: str, m: int, n: int, k: int, vec: bool) -> dict:
    """Registers, shared and local memory per thread of the kernel as compiled here."""
    from . import kernels as mm
    try:
        if kernel in mm.NUMBA_KERNELS:
            fn = mm.numba_launch(kernel, m, n)[0]
            regs = fn.get_regs_per_thread()
            smem = fn.get_shared_mem_per_block()
            local = fn.get_local_mem_per_thread()
            pick = (lambda v: max(v.values()) if isinstance(v, dict) else v)
            threads = math.prod(mm.numba_launch(kernel, m, n)[2])
            return {"registers": pick(regs), "shared_bytes": pick(smem),
                    "local_bytes": pick(local), "threads": threads}
        if kernel == "cublas":
            return {}
        import cupy
        name, grid, block, extra = mm.cuda_c_launch(kernel, m, n, k, vec)
        fn = mm.cupy_module(cupy.cuda.Device().id).get_function(name)
        attrs = getattr(fn, "attributes", {}) or {}
        return {"function": name, "threads": block[0] * block[1],
                "registers": attrs.get("num_regs", getattr(fn, "num_regs", None)),
                "shared_bytes": (attrs.get("shared_size_bytes") or 0)
                + mm.pipelined_shared_bytes(kernel),
                "local_bytes": attrs.get("local_size_bytes", getattr(fn, "local_size_bytes", None))}
    except Exception as exc:  # a missing attribute must not sink the benchmark
        return {"registers_error": f"{type(exc).__name__}: {exc}"}


def occupancy(registers: int | None, threads: int | None, shared_bytes: int | None,
              gpu: dict | None) -> dict | None:
    """Theoretical blocks and warps per SM allowed by registers, shared memory and threads.

    Registers are allocated per warp in units of 256; each block also reserves 1 KiB of
    shared memory (CUDA occupancy calculator rules for compute capability 9.0).
    """
    if not (registers and threads and gpu):
        return None
    warps = math.ceil(threads / 32)
    regs_per_warp = math.ceil(registers * 32 / 256) * 256
    by_regs = (gpu["registers_per_multiprocessor"] // regs_per_warp) // warps
    by_threads = gpu["max_threads_per_multiprocessor"] // threads
    smem_sm = gpu.get("shared_memory_per_multiprocessor_bytes") or 0
    by_smem = smem_sm // ((shared_bytes or 0) + 1024) if smem_sm else by_threads
    limit = gpu.get("max_blocks_per_multiprocessor") or 32
    blocks = max(0, min(by_regs, by_threads, by_smem, limit))
    max_warps = gpu["max_threads_per_multiprocessor"] // 32
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps / max_warps,
            "limited_by": min((by_regs, "registers"), (by_smem, "shared memory"),
                              (by_threads, "threads"), (limit, "blocks"))[1]}


def _bench_kernel(kernel, a, b, out, flops, repeat, ref, scale, awk):
    """Verify at an awkward shape and at full size, then time; returns a row."""
    import cupy

    from . import kernels as mm
    row = {"name": kernel}
    # 1. awkward shape, first call: compilation (numba) or module load (CUDA C) + a launch
    (aa, ab), (ref_a, scale_a) = awk
    small = cupy.full((aa.shape[0], ab.shape[1]), cupy.nan, dtype=cupy.float32)
    t0 = time.perf_counter()
    mm.matmul(aa, ab, kernel=kernel, out=small)
    _sync(kernel)
    row["first_call_s"] = time.perf_counter() - t0
    row["awkward_shape"] = [aa.shape[0], ab.shape[1], aa.shape[1]]
    row["awkward_err"] = _check_device(small, ref_a, scale_a, aa.shape[1], f"{kernel} awkward")
    # 2. full size, poisoned output
    out.fill(cupy.nan)
    t0 = time.perf_counter()
    mm.matmul(a, b, kernel=kernel, out=out)
    _sync(kernel)
    estimate = time.perf_counter() - t0
    row["max_err"] = _check_device(out, ref, scale, a.shape[1], kernel)
    # 3. steady state: `repeat` calls, fewer (but at least 10) for slow kernels
    reps = repeat if estimate < 0.2 else max(10 if estimate < 1 else 3, min(repeat, int(4 / estimate)))
    ta, tb, tout = a, b, out
    if kernel in mm.NUMBA_KERNELS:
        # wrap the CuPy arrays for numba once, not on every timed call (the wrapping
        # synchronises with CuPy's stream, which would put host time between the events)
        from numba import cuda
        ta, tb, tout = cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(out)
    timing = bench.bench(lambda: mm.matmul(ta, tb, kernel=kernel, out=tout),
                         timer=_timer_for(kernel), name=kernel, warmup=1 if estimate > 0.05 else 3,
                         repeat=reps, flops=flops)
    # the bench's first call came after compilation: the row keeps ours
    row.update(bench.row(timing, drop=("first_call_s", "samples_s")))
    m, k = a.shape
    n = b.shape[1]
    vec = mm.vector_ok(m, n, k, (a.data.ptr, b.data.ptr, out.data.ptr))
    if kernel in mm.CUDA_C_KERNELS:
        row["vector_path"] = bool(vec) and (mm.CUDA_C_LAUNCH[kernel][4] or
                                            mm.CUDA_C_LAUNCH[kernel][5] is not None)
    row.update(_registers(kernel, m, n, k, vec))
    return row


def tune(a, b, out, flops, repeat, ref, scale, awk) -> list[dict]:
    """Kernel 12 and its other shapes (``CUDA_C_TUNING``): each checked at the awkward
    shape and at full size, then timed like the rungs."""
    import cupy

    from . import kernels as mm
    rows = []
    (aa, ab), (ref_a, scale_a) = awk
    for kernel in ("12-pipelined", *mm.CUDA_C_TUNING):
        bm, bn, bk, stages = mm.PIPELINED_SHAPES[kernel]
        row = {"name": kernel, "block_tile": [bm, bn], "bk": bk, "stages": stages,
               "shared_bytes": mm.pipelined_shared_bytes(kernel)}
        try:
            small = cupy.full((aa.shape[0], ab.shape[1]), cupy.nan, dtype=cupy.float32)
            mm.launch_cuda_c(kernel, aa, ab, small)
            row["awkward_err"] = _check_device(small, ref_a, scale_a, aa.shape[1], kernel)
            out.fill(cupy.nan)
            mm.launch_cuda_c(kernel, a, b, out)
            row["max_err"] = _check_device(out, ref, scale, a.shape[1], kernel)
            t = bench.bench(lambda: mm.launch_cuda_c(kernel, a, b, out), timer="cupy",
                            name=kernel, warmup=3, repeat=repeat, flops=flops)
            row.update(bench.row(t, only=("median_s", "tflops")))
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


class _Precision:
    """torch's fp32 matmul precision, set for a block and restored after it."""

    def __init__(self, tf32: bool):
        self.tf32 = tf32

    def __enter__(self):
        import torch
        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):       # torch >= 2.9: the new API only
            self.old = ("new", mm.fp32_precision)
            mm.fp32_precision = "tf32" if self.tf32 else "ieee"
        else:
            self.old = ("old", mm.allow_tf32)
            mm.allow_tf32 = self.tf32

    def __exit__(self, *exc):
        import torch
        kind, value = self.old
        if kind == "new":
            torch.backends.cuda.matmul.fp32_precision = value
        else:
            torch.backends.cuda.matmul.allow_tf32 = value


def tensor_cores(a, b, ref, scale, repeat) -> list[dict]:
    """cuBLAS through torch: fp32 (TF32 off), TF32 and bf16, at the benchmark size."""
    import torch
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    n = a.shape[0]
    flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    cases = [("fp32, TF32 off (torch)", torch.float32, False),
             ("TF32 tensor cores (torch)", torch.float32, True),
             ("bf16 tensor cores (torch, fp32 accumulate)", torch.bfloat16, False)]
    rows = []
    for label, dtype, tf32 in cases:
        try:
            x, y = ta.to(dtype), tb.to(dtype)
            with _Precision(tf32):
                got = x @ y
                torch.cuda.synchronize()
                import cupy
                err = matmul_error(cupy.asarray(got.float()), ref, scale, xp=cupy)
                t = bench.bench(lambda: x @ y, timer="torch", name=label, repeat=repeat,
                                flops=flops)
            rows.append(bench.row(t, drop=("samples_s",), dtype=str(dtype).replace("torch.", ""),
                                  tf32=tf32, n=n, max_err=err))
        except Exception as exc:
            rows.append({"name": label, "error": f"{type(exc).__name__}: {exc}"})
    return rows


def sweep_batch(n: int) -> int:
    """Launches timed back to back per sample at size n x n x n: enough that a sample lasts
    well over the few microseconds a launch costs the host (one per call above 2048)."""
    return 50 if n <= 1024 else 5 if n <= 2048 else 1


def size_sweep(kernels: list[str], sizes=SWEEP, repeat: int = 10) -> list[dict]:
    """TFLOP/s of cuBLAS and the given kernels at each n x n x n size."""
    import cupy

    from . import kernels as mm
    rows = []
    for s in sizes:
        try:
            a, b = _cupy_inputs(s, s, s, seed=s)
            ref = mm.matmul(a, b, kernel="cublas")
            scale = cupy.abs(a) @ cupy.abs(b)
            out = cupy.empty_like(ref)
        except Exception as exc:
            rows.append({"n": s, "error": f"{type(exc).__name__}: {exc}"})
            continue
        for kernel in ["cublas", *kernels]:
            entry = {"n": s, "name": kernel}
            try:
                out.fill(cupy.nan)
                mm.matmul(a, b, kernel=kernel, out=out)
                entry["max_err_vs_cublas"] = _check_device(out, ref, scale, s, kernel, factor=2)
                # small sizes run for microseconds: time many launches back to back between
                # one pair of events, or a pair per call would time the launch gaps
                t = bench.bench(lambda: mm.matmul(a, b, kernel=kernel, out=out),
                                timer=_timer_for(kernel), name=kernel,
                                repeat=repeat if s <= 4096 else max(3, repeat // 2),
                                flops=2.0 * s**3, batch=sweep_batch(s))
                entry.update(bench.row(t, only=("median_s", "tflops", "batch", *bench.FLAGS)))
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(entry)
        a = b = ref = scale = out = None  # free the memory before the next size
        cupy.get_default_memory_pool().free_all_blocks()
    for r in rows:
        base = next((x for x in rows if x["n"] == r["n"] and x.get("name") == "cublas"), None)
        if base and base.get("tflops"):
            r.update(bench.shares(r, {"pct_of_cublas": bench.Roof("tflops", base["tflops"])}))
    return rows


def gpu_part(n: int = DEFAULT_N, repeat: int = 30, sweep=SWEEP) -> dict:
    import cupy

    from . import kernels as mm
    flops = 2.0 * n**3
    a, b = _cupy_inputs(n, n, n, seed=0)
    ref, scale = _reference(a, b)
    out = cupy.empty((n, n), dtype=cupy.float32)
    m_, n_, k_ = AWKWARD
    aa, ab = _cupy_inputs(m_, n_, k_, seed=1)
    awk = ((aa, ab), _reference(aa, ab))

    t0 = time.perf_counter()
    mm.cupy_module(cupy.cuda.Device().id)
    compile_s = time.perf_counter() - t0
    try:
        copy_gbs = bench.copy_ceiling("cupy").gbs       # the memory roof, same run
    except Exception:
        copy_gbs = None

    rows, failed = [], []         # a kernel that fails its check is recorded, not timed
    for kernel in ("cublas",) + mm.NUMBA_KERNELS + mm.CUDA_C_KERNELS:
        try:
            rows.append(_bench_kernel(kernel, a, b, out, flops, repeat, ref, scale, awk))
            print(f"  {kernel:<22}{rows[-1]['tflops']:8.2f} TFLOP/s", file=sys.stderr, flush=True)
        except Exception as exc:
            failed.append({"name": kernel, "error": f"{type(exc).__name__}: {exc}"})
            print(f"  {kernel:<22}FAILED {failed[-1]['error']}", file=sys.stderr, flush=True)
    cublas = next((r for r in rows if r["name"] == "cublas" and r.get("tflops")), None)
    roofs = {"pct_of_cublas": bench.Roof("tflops", cublas["tflops"])} if cublas else {}
    gpu = device.gpu_properties()
    for r in rows:
        r.update(bench.shares(r, roofs))
        occ = occupancy(r.get("registers"), r.get("threads"), r.get("shared_bytes"), gpu)
        if occ:
            r["occupancy"] = occ
        if r.get("tflops"):
            # bytes each kernel must at least move: A, B read once, C written once
            r["arithmetic_intensity_min"] = flops / (3 * n * n * 4)
    try:
        tuning = tune(a, b, out, flops, repeat, ref, scale, awk)
    except Exception as exc:
        tuning = [{"name": "12-pipelined", "error": f"{type(exc).__name__}: {exc}"}]
    for r in tuning:
        r.update(bench.shares(r, roofs))
    hand = sorted((r for r in rows if r.get("tflops") and r["name"] != "cublas"),
                  key=lambda r: -r["tflops"])
    best = hand[0]["name"] if hand else None
    sweep_kernels = [r["name"] for r in hand[:2]]
    try:
        sweep_rows = size_sweep(sweep_kernels, sweep, repeat=max(5, repeat // 3)) if sweep else []
    except Exception as exc:
        sweep_rows = [{"n": 0, "error": f"{type(exc).__name__}: {exc}"}]
    try:
        tc = tensor_cores(a, b, ref, scale, repeat=max(5, repeat // 3))
    except Exception as exc:
        tc = [{"name": "torch", "error": f"{type(exc).__name__}: {exc}"}]
    return {"n": n, "dtype": "float32", "flops": flops, "rows": rows, "failed": failed,
            "best_kernel": best, "best_pct_of_cublas": hand[0].get("pct_of_cublas") if hand else None,
            "module_compile_s": compile_s, "cublas_tf32": _tf32_state(),
            "copy_ceiling_gbs": copy_gbs,
            "check": f"max |C - C64| / (|A| @ |B|) <= 16 sqrt(K) 2^-24; C64 = cupy float64 "
                     f"matmul on the GPU; output poisoned with NaN; awkward shape {AWKWARD} too",
            "sweep": sweep_rows, "tensor_cores": tc, "tuning": tuning}


def _tf32_state() -> str:
    return "off (CUPY_TF32 unset)" if os.environ.get("CUPY_TF32", "0") in ("", "0") else "ON"


def cpu_part(n: int, repeat: int = 3) -> dict:
    """NumPy's matmul (its BLAS, on every core): the CPU baseline."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.full((n, n), np.nan, np.float32)
    np.matmul(a, b, out=out)
    err = check_matmul(out, a, b, what="numpy")
    t = bench.bench(lambda: np.matmul(a, b, out=out), timer="cpu", name="NumPy matmul",
                    warmup=1, repeat=repeat, flops=2.0 * n**3)
    return {"n": n, "rows": [bench.row(t, drop=("samples_s",), max_err=err)],
            "blas": _blas_name()}


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        return cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        return "BLAS"


def run(n: int | None = None, repeat: int = 30) -> dict:
    """The ``gpukit bench matmul`` entry point: GPU part, CPU baseline, sanitizer."""
    data: dict = {}
    if device.has_gpu() and not device.simulator_enabled():
        n = n or DEFAULT_N
        data["gpu"] = gpu_part(n, repeat)
        data["gpu"]["sanitizer"] = sanitize()
        data["cpu"] = cpu_part(n, repeat=3)
    else:
        data["cpu"] = cpu_part(min(n or 1024, 2048), repeat=3)
    return data

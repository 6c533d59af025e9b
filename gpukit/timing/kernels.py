"""The chapter's workload: SAXPY in float32, ``out = a * x + y`` with ``a = 2``.

It moves 12 bytes per element (read x, read y, write out) and does almost no arithmetic, so
its honest speed is a bandwidth, and a bandwidth has a ceiling: a number above the memory's
peak is not fast, it is wrong. Here: the numbers that judge a time (:func:`saxpy_bytes`,
:func:`implied_gbs`, :func:`is_impossible`, :func:`spread`), the inputs and the check of every
element (:func:`make_inputs`, :func:`check_saxpy`), the kernels (numba.cuda, a buggy launch
that skips the tail, numba on the CPU, CuPy, torch) and :func:`poison_demo`, where a zero-filled
output hides that bug and a NaN-poisoned one catches it.

Importing this module imports NumPy only; numba, CuPy and torch on first use.
"""

from __future__ import annotations

import functools
import statistics

import numpy as np

from .meta import implied_gbs, is_impossible, saxpy_bytes  # noqa: F401  (public here)

#: SAXPY's constant. 2 is a power of two, so ``a * x`` is exact in float32 and the
#: result is one correctly rounded addition: within 2**-24 of the float64 reference.
A = 2.0


# ----------------------------------------------------------------- numbers and checks

# saxpy_bytes, implied_gbs and is_impossible live in .meta (the views use them too)
def spread(samples: list[float]) -> dict:
    """Statistics of single-run times: what one run could have told you."""
    if not samples:
        raise ValueError("no samples")
    s = sorted(samples)
    med = statistics.median(s)
    return {"count": len(s), "first_s": samples[0], "first5_s": list(samples[:5]),
            "min_s": s[0], "median_s": med, "max_s": s[-1],
            "p95_s": s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))],
            "max_over_min": s[-1] / s[0] if s[0] > 0 else float("inf"),
            "worst_error_pct": 100 * max(abs(v - med) for v in s) / med if med > 0 else 0.0}


def make_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 x and y (never zeros). Large arrays repeat a 2**20-element block:
    caches work by address, not by value, so the repetition changes no timing.
    The arrays are shared between calls with the same arguments: do not write to them."""
    if n < 0:
        raise ValueError("n must be >= 0")
    return _inputs(int(n), int(seed))


@functools.lru_cache(maxsize=2)
def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    block = min(n, 2**20)
    x = rng.standard_normal(block, dtype=np.float32)
    y = rng.standard_normal(block, dtype=np.float32)
    if block < n:
        x, y = np.resize(x, n), np.resize(y, n)
    return x, y


def check_saxpy(out, x: np.ndarray, y: np.ndarray, a: float = A, *, chunk: int = 2**24,
                what: str = "saxpy") -> float:
    """Check every element of ``out`` against ``a * x + y``; raise on NaN, inf or a miss.

    Fast and still exact for ``a = 2``: ``2 * x`` is exact in float32, so the correctly
    rounded float32 result, computed here with NumPy, is within half an ulp of the float64
    value. Every element is compared with it; the ones that differ, and one in 64 of the
    rest, are then measured against the float64 reference with ``check_close``.
    """
    from gpukit.verify import Mismatch, check_close, to_host
    host = to_host(out)
    if host.shape != x.shape:
        raise Mismatch(f"{what}: shape {host.shape} != {x.shape}")
    worst = 0.0
    a32 = np.float32(a)
    for s in range(0, x.size, chunk):
        h, xs, ys = host[s:s + chunk], x[s:s + chunk], y[s:s + chunk]
        if not np.isfinite(h).all():
            bad = int(np.count_nonzero(~np.isfinite(h)))
            raise Mismatch(f"{what}: {bad} elements from index {s} on are NaN or inf "
                           "(never written, or computed wrongly)")
        idx = np.flatnonzero(h != a32 * xs + ys)
        for sel in (idx, slice(None, None, 64)):
            ref = a * xs[sel].astype(np.float64) + ys[sel]
            worst = max(worst, check_close(h[sel], ref, what=what))
    return worst


# ----------------------------------------------------------------- the kernels

@functools.cache
def numba_cuda_kernel():
    """The SAXPY kernel for numba.cuda: one element per thread, with a bounds check."""
    # numba's simulator swaps a *global* named cuda inside kernels, so bind it as one,
    # lazily: importing this module must not import numba (the simulator is chosen at import).
    global cuda
    from numba import cuda

    @cuda.jit
    def saxpy_kernel(a, x, y, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = a * x[i] + y[i]
    return saxpy_kernel


def launch_saxpy(a, x, y, out, threads: int = 256) -> None:
    """Launch numba's SAXPY with enough blocks to cover every element."""
    blocks = (x.shape[0] + threads - 1) // threads  # round up
    if blocks:
        numba_cuda_kernel()[blocks, threads](np.float32(a), x, y, out)


# --8<-- [start:buggy]
def launch_saxpy_buggy(a, x, y, out, threads: int = 256) -> None:
    """The classic bug: the block count rounds down, so the last n % threads
    elements are never written. Nothing fails; the tail keeps whatever was there."""
    blocks = x.shape[0] // threads  # should round up
    if blocks:
        numba_cuda_kernel()[blocks, threads](np.float32(a), x, y, out)
# --8<-- [end:buggy]


@functools.cache
def numba_cpu_kernel():
    """The fair CPU baseline: SAXPY on every core, vectorised by LLVM."""
    import numba

    @numba.njit(parallel=True)
    def saxpy_cpu(a, x, y, out):
        for i in numba.prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
    return saxpy_cpu


@functools.cache
def numba_cpu_kernel_1core():
    """SAXPY on one CPU core (for the cache sweep: no waiting on the slowest thread)."""
    import numba

    @numba.njit
    def saxpy_1core(a, x, y, out):
        for i in range(x.shape[0]):
            out[i] = a * x[i] + y[i]
    return saxpy_1core


@functools.cache
def cupy_kernel():
    """SAXPY as a CuPy ElementwiseKernel (compiled by NVRTC on first call)."""
    import cupy
    return cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                                  "out = a * x + y", "gpukit_saxpy")


def torch_saxpy(x, y, out):
    """SAXPY in torch: y + 2 * x in one kernel."""
    import torch
    return torch.add(y, x, alpha=A, out=out)


# ----------------------------------------------------------------- poisoned outputs

def poison_demo(n: int, threads: int = 256) -> dict:
    """The tail-skipping kernel against three output buffers; what the check says each time."""
    from numba import cuda

    from gpukit.verify import Mismatch, check_close
    if n % threads == 0:
        raise ValueError("pick an n that is not a multiple of threads, or the bug has no effect")
    x, y = make_inputs(n, seed=4)
    ref = A * x.astype(np.float64) + y
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    cases = []

    def check(label, out, reference):
        try:
            check_close(out, reference, what=label)
            return {"case": label, "caught": False, "message": "check passed: the bug is hidden"}
        except Mismatch as exc:
            return {"case": label, "caught": True, "message": str(exc)}

    # 1. zeros in, a zero-filled output: 2 * 0 + 0 = 0, the unwritten tail looks right
    zx, zy = cuda.to_device(np.zeros_like(x)), cuda.to_device(np.zeros_like(y))
    out = cuda.to_device(np.zeros_like(x))
    launch_saxpy_buggy(A, zx, zy, out, threads)
    cases.append(check("zeros in, zero-filled output", out, np.zeros(n)))
    # 2. random data, but the output still holds a previous, correct result
    out = cuda.to_device(np.full_like(x, np.nan))
    launch_saxpy(A, dx, dy, out, threads)
    launch_saxpy_buggy(A, dx, dy, out, threads)
    cases.append(check("random in, output left from a correct run", out, ref))
    # 3. random data, output poisoned with NaN before the run
    out = cuda.to_device(np.full_like(x, np.nan))
    launch_saxpy_buggy(A, dx, dy, out, threads)
    cases.append(check("random in, NaN-poisoned output", out, ref))
    cuda.synchronize()
    return {"n": n, "threads": threads, "unwritten": n % threads, "rows": [], "cases": cases}

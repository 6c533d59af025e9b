"""The two workloads of the chapter, written once per backend, and their float64 reference.

* **SAXPY**, ``out = a * x + y``: 2 FLOPs and 12 bytes per element (read x and y,
  write out). Memory-bound on every processor.
* **Horner**, a degree-:data:`DEGREE` polynomial per element: 2 FLOPs per degree
  (one multiply-add) and 8 bytes (read x, write out) per element, 32 FLOPs per
  byte: compute-bound on every processor.

Backends: pure Python (on lists), NumPy, numba on one core, numba on all cores
(``parallel=True`` with ``prange``) and a numba CUDA kernel (numba's simulator without a
GPU). :func:`compute` runs any of them on NumPy arrays. numba is imported on first use.
"""

from __future__ import annotations

import math

import numpy as np

from .meta import DEGREE  # the polynomial's degree: DEGREE multiply-adds per element
#: Coefficients, highest power first: all positive, so with x in [0, 1) nothing cancels
#: and float32 stays within a few ulps per step of the float64 reference.
COEFFS = (1.0 / np.arange(1, DEGREE + 2)).astype(np.float32)
SAXPY_A = np.float32(2.0)
#: Relative error allowed against float64 (SAXPY: a few ulps; Horner: DEGREE roundings).
RTOL = {"saxpy": 1e-6, "poly": 2e-5}
BYTES_PER_ELEMENT = {"saxpy": 12, "poly": 8}
FLOPS_PER_ELEMENT = {"saxpy": 2, "poly": 2 * DEGREE}
#: Elements per block of the SIMD-friendly Horner loop (128 float32 = 8 AVX-512 registers).
BLOCK = 128


# --8<-- [start:python]
def saxpy_python(a, x, y, out):
    for i in range(len(x)):
        out[i] = a * x[i] + y[i]


def horner_python(x, c, out):
    for i in range(len(x)):
        xi = x[i]
        p = c[0]
        for k in range(1, len(c)):
            p = p * xi + c[k]      # one multiply-add per degree
        out[i] = p
# --8<-- [end:python]


# --8<-- [start:numpy]
def saxpy_numpy(a, x, y, out):
    np.multiply(x, a, out=out)     # one pass over memory...
    np.add(out, y, out=out)        # ...and a second one


def horner_numpy(x, c, out):
    out.fill(c[0])
    # 2 passes over the whole array per degree
    for k in range(1, len(c)):
        np.multiply(out, x, out=out)
        np.add(out, c[k], out=out)
# --8<-- [end:numpy]


def numba_cpu() -> dict:
    """The numba CPU kernels and the benchmark's fill and check helpers by name, plus numba's
    thread count under ``"threads"``; compiled on first use (numba is imported then)."""
    global _CPU
    if _CPU is not None:
        return _CPU
    import numba
    from numba import njit, prange

    # --8<-- [start:numba_cpu]
    @njit(fastmath=True)
    def saxpy_1core(a, x, y, out):
        # LLVM vectorises this loop by itself
        for i in range(x.size):
            out[i] = a * x[i] + y[i]

    @njit(fastmath=True, parallel=True)
    def saxpy_parallel(a, x, y, out):
        # split over all cores, then vectorised
        for i in prange(x.size):
            out[i] = a * x[i] + y[i]

    # The same loop as horner_python: the innermost loop is the chain p -> p*x + c,
    # each step waiting for the last, so the compiler cannot spread it over SIMD lanes.
    @njit(fastmath=True)
    def horner_1core_naive(x, c, out):
        for i in range(x.size):
            xi = x[i]
            p = c[0]
            for k in range(1, c.size):
                p = p * xi + c[k]
            out[i] = p

    # SIMD-friendly: the innermost loop runs across BLOCK elements, which are
    # independent, so LLVM turns it into AVX-512/AVX2 multiply-adds on whole registers.
    @njit(fastmath=True, inline="always")
    def horner_range(x, c, out, start, stop):
        p = np.empty(BLOCK, np.float32)
        xs = np.empty(BLOCK, np.float32)
        full = start + (stop - start) // BLOCK * BLOCK
        for s in range(start, full, BLOCK):
            for j in range(BLOCK):
                xs[j] = x[s + j]
                p[j] = c[0]
            for k in range(1, c.size):
                ck = c[k]
                # 16 lanes x 8 registers per step
                for j in range(BLOCK):
                    p[j] = p[j] * xs[j] + ck
            for j in range(BLOCK):
                out[s + j] = p[j]
        # the last partial block, one element at a time
        for i in range(full, stop):
            xi = x[i]
            q = c[0]
            for k in range(1, c.size):
                q = q * xi + c[k]
            out[i] = q

    @njit(fastmath=True)
    def horner_1core(x, c, out):
        horner_range(x, c, out, 0, x.size)

    @njit(fastmath=True, parallel=True)
    def horner_parallel(x, c, out):
        chunk = 64 * BLOCK
        for b in prange((x.size + chunk - 1) // chunk):
            horner_range(x, c, out, b * chunk, min((b + 1) * chunk, x.size))
    # --8<-- [end:numba_cpu]

    @njit(parallel=True)
    def fill_uniform(out, seed):
        """Fill with floats in [0, 1) from a counter-based hash (splitmix64), in parallel."""
        for i in prange(out.size):
            z = np.uint64(i) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            out[i] = np.float32(z >> np.uint64(40)) * np.float32(1.0 / 16777216.0)

    @njit(parallel=True)
    def fill_nan(out):
        for i in prange(out.size):
            out[i] = np.nan

    @njit(parallel=True)
    def count_nonfinite(out):
        bad = 0
        for i in prange(out.size):
            if not np.isfinite(out[i]):
                bad += 1
        return bad

    _CPU = {"saxpy_1core": saxpy_1core, "saxpy_parallel": saxpy_parallel,
            "horner_1core_naive": horner_1core_naive, "horner_1core": horner_1core,
            "horner_parallel": horner_parallel, "fill_uniform": fill_uniform,
            "fill_nan": fill_nan, "count_nonfinite": count_nonfinite,
            "threads": numba.get_num_threads()}
    return _CPU


_CPU = None
_GPU = None
cuda = None  # numba.cuda, imported on first use


def _numba_cuda():
    """Compile-on-first-call numba CUDA kernels (real GPU, or numba's simulator)."""
    global _GPU, cuda
    if _GPU is not None:
        return _GPU
    from numba import cuda  # a module global: numba's simulator swaps it inside kernels

    # --8<-- [start:cuda]
    @cuda.jit
    def saxpy_kernel(a, x, y, out):
        # one thread per element; the last block runs past the end
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    @cuda.jit
    def horner_kernel(x, out):
        # the coefficients, in constant memory
        c = cuda.const.array_like(COEFFS)
        i = cuda.grid(1)
        if i < x.size:
            xi = x[i]
            p = c[0]
            # the per-element loop of horner_python
            for k in range(1, c.size):
                p = p * xi + c[k]
            out[i] = p
    # --8<-- [end:cuda]

    _GPU = {"saxpy": saxpy_kernel, "poly": horner_kernel}
    return _GPU


THREADS_PER_BLOCK = 256

# --8<-- [start:cuda_c]
# The same polynomial in CUDA C, written for the hardware: the coefficients sit in
# constant memory and the degree loop is unrolled, so the compiler can take each
# coefficient as an operand of its FFMA instruction instead of a load. Each thread
# evaluates ELEMS elements, ELEMS independent chains of multiply-adds; indices are
# 32-bit.
HORNER_CUDA_C = r"""
__constant__ float coeffs[TERMS];

template <int ELEMS>
__global__ void horner(const float* __restrict__ x, float* __restrict__ out,
                       unsigned int n)
{
    unsigned int stride = gridDim.x * blockDim.x;
    unsigned int first = blockIdx.x * blockDim.x + threadIdx.x;
    float xs[ELEMS], p[ELEMS];
    #pragma unroll
    for (int j = 0; j < ELEMS; ++j) {
        // neighbouring threads, neighbouring elements
        unsigned int i = first + j * stride;
        xs[j] = i < n ? x[i] : 0.0f;
        p[j] = coeffs[0];
    }
    #pragma unroll
    for (int d = 1; d < TERMS; ++d) {
        #pragma unroll
        for (int j = 0; j < ELEMS; ++j)
            p[j] = fmaf(p[j], xs[j], coeffs[d]);
    }
    #pragma unroll
    for (int j = 0; j < ELEMS; ++j) {
        unsigned int i = first + j * stride;
        if (i < n) out[i] = p[j];
    }
}
"""
# --8<-- [end:cuda_c]
#: elements per thread tried by the benchmark (it keeps the fastest)
CUDA_C_ELEMS = (1, 2, 4)
_CUDA_C = None


def horner_cuda_c(n: int, x, out, elems: int = 2) -> None:
    """Launch the CUDA C polynomial kernel (compiled by CuPy) on ``n`` elements of device
    arrays ``x`` and ``out`` (numba's or CuPy's: only their addresses are passed)."""
    global _CUDA_C
    if elems not in CUDA_C_ELEMS:
        raise ValueError(f"elems must be one of {CUDA_C_ELEMS}, got {elems!r}")
    if n == 0:
        return
    if n >= 2**32:
        raise ValueError("the CUDA C kernel uses 32-bit indices: n must be below 2**32")
    import cupy
    if _CUDA_C is None:
        module = cupy.RawModule(code=HORNER_CUDA_C.replace("TERMS", str(DEGREE + 1)),
                                options=("-std=c++17",),
                                name_expressions=[f"horner<{e}>" for e in CUDA_C_ELEMS])
        cupy.ndarray((DEGREE + 1,), cupy.float32, module.get_global("coeffs")).set(COEFFS)
        _CUDA_C = module
    threads = (n + elems - 1) // elems
    blocks = (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    _CUDA_C.get_function(f"horner<{elems}>")((blocks,), (THREADS_PER_BLOCK,),
                                             (np.uint64(_address(x)), np.uint64(_address(out)), np.uint32(n)))


def _address(a) -> int:
    """The device address of a numba or CuPy array (read from the array interface: no wrapping,
    so none of the stream synchronisation that wrapping one library's array in the other does)."""
    return a.__cuda_array_interface__["data"][0]


def launch(work: str, n: int, *args) -> None:
    """Launch the ``work`` kernel ("saxpy" or "poly") over n elements of device arrays."""
    if n == 0:
        return
    blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    _numba_cuda()[work][blocks, THREADS_PER_BLOCK](*args)


def compute(work: str, backend: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """One result of ``work`` ("saxpy" or "poly") with ``backend``, as a float32 NumPy array.

    Convenience for tests and small examples: allocates, copies, computes. Backends:
    ``python``, ``numpy``, ``numba-1core``, ``numba-1core-naive`` (poly only),
    ``numba-parallel``, ``gpu`` (numba CUDA; the simulator without a GPU).
    """
    if work not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown work {work!r}; choose saxpy or poly")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 1:
        raise ValueError("x must be one-dimensional")
    if work == "saxpy":
        if y is None:
            raise ValueError("saxpy needs y")
        y = np.ascontiguousarray(y, dtype=np.float32)
        if y.shape != x.shape:
            raise ValueError(f"x and y differ in shape: {x.shape} vs {y.shape}")
    out = np.full_like(x, np.nan)
    if backend == "python":
        res = [math.nan] * x.size
        if work == "saxpy":
            saxpy_python(float(SAXPY_A), x.tolist(), y.tolist(), res)
        else:
            horner_python(x.tolist(), COEFFS.tolist(), res)
        out[:] = res
    elif backend == "numpy":
        saxpy_numpy(SAXPY_A, x, y, out) if work == "saxpy" else horner_numpy(x, COEFFS, out)
    elif backend == "gpu":
        if x.size == 0:
            return out
        from numba import cuda
        dx, dout = cuda.to_device(x), cuda.to_device(out)
        if work == "saxpy":
            launch("saxpy", x.size, SAXPY_A, dx, cuda.to_device(y), dout)
        else:
            launch("poly", x.size, dx, dout)
        out = dout.copy_to_host()
    else:
        fn = cpu_kernel(work, backend)
        fn(SAXPY_A, x, y, out) if work == "saxpy" else fn(x, COEFFS, out)
    return out


def cpu_kernel(work: str, backend: str):
    """The numba CPU kernel of ``work`` for a ``numba-*`` backend; ValueError for any other."""
    k = numba_cpu()
    table = {("saxpy", "numba-1core"): k["saxpy_1core"], ("saxpy", "numba-parallel"): k["saxpy_parallel"],
             ("poly", "numba-1core-naive"): k["horner_1core_naive"], ("poly", "numba-1core"): k["horner_1core"],
             ("poly", "numba-parallel"): k["horner_parallel"]}
    if (work, backend) not in table:
        raise ValueError(f"no backend {backend!r} for {work}")
    return table[(work, backend)]


def reference(work: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """The float64 result (Horner in float64 with the same float32 coefficients)."""
    x64 = np.asarray(x, dtype=np.float64)
    if work == "saxpy":
        return float(SAXPY_A) * x64 + np.asarray(y, dtype=np.float64)
    p = np.full_like(x64, float(COEFFS[0]))
    for ck in COEFFS[1:].astype(np.float64):
        p = p * x64 + ck
    return p


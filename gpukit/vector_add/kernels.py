"""Adding two arrays, four ways: NumPy, numba.cuda, CuPy (elementwise and CUDA C), torch.

``vector_add(x, y)`` picks the backend from where the arrays live; it never
copies between host and device behind your back (a hidden copy would cost more
than the addition itself), so arrays on the wrong side are refused.
"""

from __future__ import annotations

import functools

import numpy as np
import numba
from numba import cuda

from .. import device, launch
from ..arrays import as_numba, device_empty, kind

BACKENDS = ("numpy", "numba-cpu", "numba-cuda", "cupy", "torch")
#: CuPy implementations: ElementwiseKernel, a one-element-per-thread RawKernel,
#: and a RawKernel that moves 16 bytes per load (float32 only).
CUPY_IMPLS = ("elementwise", "raw", "raw-vec4")
#: numba CUDA implementations: the grid-stride loop, the same loop with four independent
#: pairs of loads per thread issued before their stores, and a loop over 16-byte vectors.
NUMBA_IMPLS = ("grid-stride", "grid-stride-x4", "vec16")
#: the numba implementation ``vector_add`` uses unless told otherwise: 16-byte vectors where
#: the arrays allow them (float32 or float64, every pointer 16-byte aligned), else the loop
NUMBA_DEFAULT = "vec16"


def _check_pair(x, y, out):
    if x.shape != y.shape:
        raise ValueError(f"shape mismatch: x has shape {tuple(x.shape)}, y has {tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise TypeError(f"dtype mismatch: x is {x.dtype}, y is {y.dtype}; convert one "
                        "explicitly (gpukit does not promote silently)")
    if out is not None:
        if tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype:
            raise ValueError(f"out must have shape {tuple(x.shape)} and dtype {x.dtype}, "
                             f"got {tuple(out.shape)} {out.dtype}")


def _need(kind_x, kind_y, allowed, backend, hint):
    for label, where_kind in (("x", kind_x), ("y", kind_y)):
        if where_kind not in allowed:
            where = {"numpy": "host (NumPy) memory", "torch-cpu": "host (torch CPU) memory",
                     "cupy": "GPU memory (CuPy)", "torch-cuda": "GPU memory (torch)",
                     "cuda": "GPU memory"}.get(where_kind, "an unsupported type")
            raise TypeError(f"backend {backend!r} needs {hint}, but {label} is in {where}")


def vector_add(x, y, *, backend: str = "auto", out=None, impl: str | None = None):
    """Return ``x + y`` computed by ``backend``; both arrays must match in shape and dtype.

    backend: ``"numpy"`` (host arrays), ``"numba-cpu"`` (host arrays, all cores), ``"numba-cuda"`` (any CUDA array: numba
    device arrays, CuPy, torch CUDA tensors), ``"cupy"`` (CuPy arrays), ``"torch"``
    (tensors on one device), or ``"auto"`` to choose from the arrays' type.
    impl: for ``backend="cupy"``, one of ``CUPY_IMPLS`` (default ``"raw-vec4"``); for
    ``backend="numba-cuda"``, one of ``NUMBA_IMPLS`` (default ``"vec16"``, which runs the
    grid-stride loop where 16-byte vectors do not fit: other dtypes, misaligned views).
    out: optional pre-allocated result of the same kind, shape and dtype.
    """
    kx, ky = kind(x), kind(y)
    if backend == "auto":
        backend = {"numpy": "numpy", "cupy": "cupy", "torch-cpu": "torch",
                   "torch-cuda": "torch", "cuda": "numba-cuda"}.get(kx)
        if backend is None:
            raise TypeError(f"x is a {type(x).__name__}; pass a NumPy, CuPy, torch or numba array")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "numpy":
        _need(kx, ky, {"numpy"}, backend, "NumPy arrays (copy GPU data back first)")
        _check_pair(x, y, out)
        return np.add(x, y, out=out)
    if backend == "numba-cpu":
        _need(kx, ky, {"numpy"}, backend, "NumPy arrays")
        _check_pair(x, y, out)
        if out is None:
            out = np.empty_like(x, order="C")
        if x.size:
            add_parallel(np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1),
                         out.reshape(-1))
        return out
    if backend == "torch":
        _need(kx, ky, {"torch-cpu", "torch-cuda"}, backend, "torch tensors")
        if x.device != y.device:
            raise ValueError(f"x is on {x.device} but y is on {y.device}; move one with .to()")
        _check_pair(x, y, out)
        import torch
        return torch.add(x, y, out=out)
    if backend == "cupy":
        _need(kx, ky, {"cupy"}, backend, "CuPy arrays (cupy.asarray copies host data over)")
        _check_pair(x, y, out)
        return _cupy_add(x, y, out, impl or "raw-vec4")
    _need(kx, ky, {"cupy", "torch-cuda", "cuda"}, backend,
          "arrays in GPU memory (numba.cuda.to_device copies host data over)")
    _check_pair(x, y, out)
    impl = impl or NUMBA_DEFAULT
    if impl not in NUMBA_IMPLS:
        raise ValueError(f"unknown numba impl {impl!r}; choose one of {', '.join(NUMBA_IMPLS)}")
    return _numba_add(x, y, out, impl)


# --8<-- [start:numba_cpu]
@numba.njit(parallel=True, cache=True)
def add_parallel(x, y, out):
    # The fair CPU baseline: every core, SIMD vectorised by LLVM.
    for i in numba.prange(x.shape[0]):
        out[i] = x[i] + y[i]
# --8<-- [end:numba_cpu]


# --8<-- [start:numba]
@cuda.jit
def add_kernel(x, y, out):
    # A grid-stride loop: each thread starts at its global index and steps by the
    # total number of threads, so a grid of any size covers an array of any length.
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        out[i] = x[i] + y[i]
# --8<-- [end:numba]


# --8<-- [start:numba_x4]
@cuda.jit
def add_kernel_x4(x, y, out):
    # The same loop, four elements per step: all eight loads come before the first
    # store, so each thread can have four times the bytes in flight while it waits.
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = x.shape[0]
    i = start
    while i + 3 * stride < n:
        a0, b0 = x[i], y[i]
        a1, b1 = x[i + stride], y[i + stride]
        a2, b2 = x[i + 2 * stride], y[i + 2 * stride]
        a3, b3 = x[i + 3 * stride], y[i + 3 * stride]
        out[i] = a0 + b0
        out[i + stride] = a1 + b1
        out[i + 2 * stride] = a2 + b2
        out[i + 3 * stride] = a3 + b3
        i += 4 * stride
    while i < n:                      # the last < 4 steps
        out[i] = x[i] + y[i]
        i += stride
# --8<-- [end:numba_x4]


# --8<-- [start:add16]
if device.simulator_enabled():
    def add16(x, y, out, v):
        # the simulator runs kernels as Python: the lanes one by one
        lanes = 16 // x.itemsize
        for k in range(v * lanes, (v + 1) * lanes):
            out[k] = x[k] + y[k]
else:
    from llvmlite import ir
    from numba.cuda import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def add16(typingctx, x, y, out, v):
        """out's 16-byte vector number v = x's + y's: one 16-byte load from each input,
        one vector add, one 16-byte store (ld.global.v4.f32 for float32)."""
        def codegen(context, builder, sig, args):
            # LLVM IR: <4 x float> (or <2 x double>) values, loaded and stored 16-byte aligned
            ty = sig.args[0]
            elem = context.get_value_type(ty.dtype)
            lanes = 16 // context.get_abi_sizeof(elem)
            vec = ir.VectorType(elem, lanes)
            v = context.cast(builder, args[3], sig.args[3], nbtypes.intp)
            index = builder.mul(v, ir.Constant(ir.IntType(64), lanes))

            def pointer(i):
                data = context.make_array(sig.args[i])(context, builder, args[i]).data
                return builder.bitcast(builder.gep(data, [index]), vec.as_pointer())
            a = builder.load(pointer(0), align=16)
            b = builder.load(pointer(1), align=16)
            builder.store(builder.fadd(a, b), pointer(2), align=16)
            return context.get_dummy_value()
        return nbtypes.void(x, y, out, v), codegen
# --8<-- [end:add16]


# --8<-- [start:numba_vec16]
@cuda.jit
def add_kernel_vec16(x, y, out):
    # The grid-stride loop over 16-byte vectors (4 float32 or 2 float64 each): one
    # load instruction brings 16 bytes, four times what x[i] brings. The caller
    # checks that every array starts on a 16-byte boundary.
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    lanes = 16 // x.itemsize
    vectors = x.shape[0] // lanes
    for v in range(start, vectors, stride):
        add16(x, y, out, v)
    i = vectors * lanes + start       # the last n % lanes elements, one per thread
    if i < x.shape[0]:
        out[i] = x[i] + y[i]
# --8<-- [end:numba_vec16]


@functools.cache
def _sm_count() -> int:
    return device.sm_count()  # a driver query: asked once per process


def _launch_config(n: int, threads: int = 256) -> tuple[int, int]:
    blocks = min((n + threads - 1) // threads, 32 * _sm_count())
    return max(blocks, 1), threads


#: dtypes the 16-byte vector kernel handles (4 or 2 lanes per vector)
VEC16_DTYPES = ("float32", "float64")


def _address(a) -> int:
    """Where an array's data starts (the simulator's arrays live in host memory)."""
    pointer = getattr(a, "device_ctypes_pointer", None)
    if pointer is not None:
        return pointer.value or 0
    return a.__array_interface__["data"][0]


def _vec16_fits(arrays) -> bool:
    return (arrays[0].dtype.name in VEC16_DTYPES
            and all(_address(a) % 16 == 0 for a in arrays))


@functools.cache
def _launcher(kernel, dtype) -> launch.Launcher:
    """``kernel`` with its three arguments named 1-D C-contiguous arrays of ``dtype``."""
    return launch.Launcher(kernel, (launch.array_type(dtype, 1),) * 3)


def _flat(a, n):
    return a if a.ndim == 1 else a.reshape(n)  # reshape builds a new device array object


def _numba_add(x, y, out, impl="grid-stride"):
    dx, dy = as_numba(x), as_numba(y)
    if not (dx.is_c_contiguous() and dy.is_c_contiguous()):
        raise ValueError("numba-cuda backend needs contiguous arrays; pass a contiguous copy")
    shape = dx.shape
    dout = device_empty(shape, dx.dtype) if out is None else as_numba(out)
    if out is not None and not dout.is_c_contiguous():
        raise ValueError("numba-cuda backend needs a contiguous out; pass a contiguous array")
    n = dx.size
    if n:
        args = (_flat(dx, n), _flat(dy, n), _flat(dout, n))
        if impl == "vec16" and _vec16_fits(args):
            threads = 256
            vectors = n * dx.dtype.itemsize // 16
            # one vector per thread; the grid-stride loop covers grids of any size
            blocks = max((vectors + threads - 1) // threads, 1)
            kernel = add_kernel_vec16
        else:
            blocks, threads = _launch_config(n)
            kernel = add_kernel_x4 if impl == "grid-stride-x4" else add_kernel
        # the argument types are known from the checks above: no typing per call
        _launcher(kernel, dx.dtype)(blocks, threads, args)
    return dout if out is None else out


# --8<-- [start:cuda_c]
_CUDA_SOURCE = r"""
extern "C" __global__
void add_f32(const float* __restrict__ x, const float* __restrict__ y,
             float* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];           // one element per thread
}

extern "C" __global__
void add_f64(const double* __restrict__ x, const double* __restrict__ y,
             double* __restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" __global__
void add_f32x4(const float* __restrict__ x, const float* __restrict__ y,
               float* __restrict__ out, long long n)
{
    // Each thread moves 16 bytes per load: fewer, wider memory transactions.
    long long n4 = n / 4;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 a = reinterpret_cast<const float4*>(x)[i];
        float4 b = reinterpret_cast<const float4*>(y)[i];
        reinterpret_cast<float4*>(out)[i] =
            make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    long long tail = n4 * 4 + i;                // the last n % 4 elements
    if (i < n - n4 * 4) out[tail] = x[tail] + y[tail];
}
"""
# --8<-- [end:cuda_c]


@functools.cache
def _cupy_module():
    import cupy
    return cupy.RawModule(code=_CUDA_SOURCE, options=("-std=c++17",))


@functools.cache
def _cupy_elementwise():
    import cupy
    # --8<-- [start:elementwise]
    add = cupy.ElementwiseKernel(
        "T x, T y",          # inputs, any one dtype T
        "T out",             # output
        "out = x + y",       # the body, run once per element
        "gpukit_add")
    # --8<-- [end:elementwise]
    return add


def _cupy_add(x, y, out, impl):
    import cupy
    if impl not in CUPY_IMPLS:
        raise ValueError(f"unknown CuPy impl {impl!r}; choose one of {', '.join(CUPY_IMPLS)}")
    if out is None:
        out = cupy.empty_like(x, order="C")
    n = x.size
    if n == 0:
        return out
    raw_ok = (x.flags.c_contiguous and y.flags.c_contiguous and out.flags.c_contiguous
              and x.dtype in (cupy.float32, cupy.float64))
    if impl == "elementwise" or not raw_ok:
        return _cupy_elementwise()(x, y, out)
    mod = _cupy_module()
    threads = 256
    aligned = all(a.data.ptr % 16 == 0 for a in (x, y, out))
    if impl == "raw-vec4" and x.dtype == cupy.float32 and aligned:
        work = max(n // 4, n % 4)
        kernel = mod.get_function("add_f32x4")
    else:
        work = n
        kernel = mod.get_function("add_f32" if x.dtype == cupy.float32 else "add_f64")
    blocks = (work + threads - 1) // threads
    kernel((blocks,), (threads,), (x, y, out, cupy.int64(n)))
    return out

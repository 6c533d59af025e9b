"""The Mandelbrot set on five backends that agree pixel for pixel.

Every backend runs the same arithmetic in the same order:

    zr2 = zr*zr;  zi2 = zi*zi
    if zr2 + zi2 > 4: escaped after `count` iterations
    zi = (2*zr)*zi + ci;  zr = (zr2 - zi2) + cr

and reports, per pixel, how many iterations ran before |z| > 2 (``max_iter``
for points that never escape). GPU compilers fuse a multiply and an add into
one FMA instruction by default, which rounds once instead of twice; in a
chaotic iteration that changes the counts of pixels near the set's edge. So
the GPU kernels here use explicitly rounded operations (CuPy: ``--fmad=false``;
numba: libdevice's ``*_rn`` functions), and float64 results are identical on
every backend. ``contract=True`` gives the faster fused versions instead.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import cuda

from .. import device, launch
from .meta import BACKENDS, COUNTERS, DEFAULT_BOUNDS, DISPATCHES, validate


def _steps(width, height, bounds, dtype):
    """Pixel spacing, computed once in the working dtype (all backends share it)."""
    xmin, xmax, ymin, ymax = (np.dtype(dtype).type(b) for b in bounds)
    dx = (xmax - xmin) / np.dtype(dtype).type(width)
    dy = (ymax - ymin) / np.dtype(dtype).type(height)
    return xmin, ymin, dx, dy


def mandelbrot(width: int, height: int, *, max_iter: int = 256, bounds=DEFAULT_BOUNDS,
               backend: str = "numpy", dtype="float64", contract: bool = False,
               to_host: bool = True, out=None, counter: str = "int32",
               dispatch: str = "resolved"):
    """Iteration counts of a ``height`` x ``width`` grid over ``bounds``, as int32.

    Pixel (row, col) is the point ``xmin + col*dx + i*(ymin + row*dy)`` with
    ``dx = (xmax - xmin)/width`` and ``dy = (ymax - ymin)/height``.
    backend: one of ``BACKENDS``; ``numba-cpu`` uses every core, ``numba-cpu-1core`` one,
    ``numba-cpu-simd`` every core with blocks of pixels that iterate together in SIMD lanes.
    contract: let GPU compilers fuse multiply-adds (faster; counts may differ near the edge).
    to_host: return a NumPy array; False returns the GPU backends' device array.
    out: for ``numba-cuda`` and ``cupy``, a ``height`` x ``width`` int32 device array of that
    library to write into, instead of allocating one per call.
    counter: for ``numba-cuda``, the iteration counter's width in the kernel: ``"int32"``, or
    ``"int64"``, the earlier kernels, where numba widened a 32-bit counter to 64 bits.
    dispatch: for ``numba-cuda``, ``"resolved"`` launches the compiled kernel for the known
    argument types (found once per process), ``"numba"`` lets numba's dispatcher type the
    arguments on every call.
    """
    width, height, max_iter, bounds, dtype = validate(width, height, max_iter, bounds, dtype)
    if counter not in COUNTERS:
        raise ValueError(f"counter must be one of {', '.join(COUNTERS)}, got {counter!r}")
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    xmin, ymin, dx, dy = _steps(width, height, bounds, dtype)
    if out is not None and (backend not in ("numba-cuda", "cupy") or tuple(out.shape) != (height, width)
                            or np.dtype(out.dtype) != np.int32):
        raise ValueError(f"out must be a {height} x {width} int32 array of the numba-cuda or cupy backend")
    if backend == "numpy":
        return _numpy(width, height, max_iter, xmin, ymin, dx, dy)
    if backend in ("numba-cpu", "numba-cpu-1core"):
        out = np.empty((height, width), dtype=np.int32)
        fn = mandel_cpu_parallel if backend == "numba-cpu" else mandel_cpu_serial
        cr, ci = coordinates(width, height, xmin, ymin, dx, dy)
        fn(out, cr, ci, max_iter)
        return out
    if backend == "numba-cpu-simd":
        out = np.empty((height, width), dtype=np.int32)
        cr, ci = coordinates(width, height, xmin, ymin, dx, dy)
        mandel_cpu_simd(out, cr, ci, max_iter, dx.dtype.type(4))
        return out
    if backend == "numba-cuda":
        out = _numba_cuda(width, height, max_iter, xmin, ymin, dx, dy, dtype, contract, out,
                          counter, dispatch)
        return out.copy_to_host() if to_host else out
    if backend == "cupy":
        out = _cupy(width, height, max_iter, xmin, ymin, dx, dy, dtype, contract, out)
        return out.get() if to_host else out
    out = _torch(width, height, max_iter, xmin, ymin, dx, dy, dtype)
    return out.cpu().numpy() if to_host else out


def coordinates(width, height, xmin, ymin, dx, dy):
    """Real parts of each column and imaginary parts of each row, in the working dtype."""
    return (xmin + np.arange(width, dtype=dx.dtype) * dx,
            ymin + np.arange(height, dtype=dy.dtype) * dy)


# --8<-- [start:numpy]
def _numpy(width, height, max_iter, xmin, ymin, dx, dy):
    # Every pixel advances one iteration per pass; escaped ones are masked out.
    cr, ci = coordinates(width, height, xmin, ymin, dx, dy)
    cr = np.broadcast_to(cr, (height, width)).copy()
    ci = np.broadcast_to(ci[:, None], (height, width)).copy()
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    count = np.full((height, width), max_iter, dtype=np.int32)
    alive = np.ones((height, width), dtype=bool)
    four = dx.dtype.type(4)
    for i in range(max_iter):
        zr2, zi2 = zr * zr, zi * zi
        escaped = alive & (zr2 + zi2 > four)
        count[escaped] = i
        alive &= ~escaped
        if not alive.any():
            break
        zi = np.where(alive, (zr + zr) * zi + ci, zi)
        zr = np.where(alive, (zr2 - zi2) + cr, zr)
    return count
# --8<-- [end:numpy]


# --8<-- [start:numba_cpu]
@numba.njit(inline="always")
def escape_count(cr, ci, max_iter):
    zr = cr - cr  # zero in the working dtype (cr * 0 would promote float32 to float64)
    zi = cr - cr
    for i in range(max_iter):
        zr2 = zr * zr
        zi2 = zi * zi
        if zr2 + zi2 > 4:
            return i
        zi = (zr + zr) * zi + ci
        zr = (zr2 - zi2) + cr
    return max_iter


@numba.njit(parallel=True, cache=True)
def mandel_cpu_parallel(out, cr, ci, max_iter):
    for row in numba.prange(out.shape[0]):          # rows spread over all cores
        for col in range(out.shape[1]):
            out[row, col] = escape_count(cr[col], ci[row], max_iter)


@numba.njit(cache=True)
def mandel_cpu_serial(out, cr, ci, max_iter):
    for row in range(out.shape[0]):                 # one core
        for col in range(out.shape[1]):
            out[row, col] = escape_count(cr[col], ci[row], max_iter)
# --8<-- [end:numba_cpu]


# --8<-- [start:numba_cpu_simd]
LANES = 64  # pixels of a row that iterate together (a few SIMD registers' worth)


@numba.njit(parallel=True, cache=True)
def mandel_cpu_simd(out, cr, ci, max_iter, four):
    height, width = out.shape
    cores = numba.get_num_threads()
    # one task per core, rows dealt like cards: core k takes rows k, k + cores, ...,
    # so every core gets a fair share of the expensive rows that cross the set
    for core in numba.prange(cores):
        zr = np.empty(LANES, cr.dtype)
        zi = np.empty(LANES, cr.dtype)
        c = np.empty(LANES, cr.dtype)
        count = np.empty(LANES, np.int32)
        for row in range(core, height, cores):
            for col0 in range(0, width, LANES):
                # the last block repeats the last column
                for k in range(LANES):
                    c[k] = cr[min(col0 + k, width - 1)]
                    zr[k] = 0
                    zi[k] = 0
                    count[k] = 0
                for i in range(max_iter):
                    alive = 0
                    # no branch inside: LLVM makes it SIMD
                    for k in range(LANES):
                        x = zr[k]
                        y = zi[k]
                        x2 = x * x
                        y2 = y * y
                        # an escaped pixel stops counting and keeps its z:
                        # a select, not a jump
                        inside = x2 + y2 <= four
                        count[k] += inside
                        alive += inside
                        zi[k] = (x + x) * y + ci[row] if inside else y
                        zr[k] = (x2 - y2) + c[k] if inside else x
                    if alive == 0:                  # every pixel of the block escaped
                        break
                for k in range(min(LANES, width - col0)):
                    out[row, col0 + k] = count[k]
# --8<-- [end:numba_cpu_simd]


# --8<-- [start:numba_cuda]
# Round-to-nearest multiply and add that the compiler may not fuse into an FMA.
# The simulator runs kernels as Python, where plain * and + already behave so.
if device.simulator_enabled():
    def mul(a, b):
        return a * b

    def add(a, b):
        return a + b
    mul32, add32 = mul, add
else:
    from numba.cuda import libdevice
    mul, add = libdevice.dmul_rn, libdevice.dadd_rn
    mul32, add32 = libdevice.fmul_rn, libdevice.fadd_rn


@cuda.jit(cache=True)
def mandel_f64(out, xmin, ymin, dx, dy, max_iter):
    # one thread per pixel; neighbours in a warp share a row
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return                                    # the grid overhangs the image
    cr = add(xmin, mul(col, dx))
    ci = add(ymin, mul(row, dy))
    zr = 0.0
    zi = 0.0
    i = numba.int32(0)                            # a 32-bit iteration counter
    while i < max_iter:
        zr2 = mul(zr, zr)
        zi2 = mul(zi, zi)
        if add(zr2, zi2) > 4.0:
            break                                 # escaped after i iterations
        zi = add(mul(add(zr, zr), zi), ci)
        zr = add(add(zr2, -zi2), cr)
        i = numba.int32(i + 1)                    # int32 + int32 is int64 in numba
    out[row, col] = i
# --8<-- [end:numba_cuda]


@cuda.jit(cache=True)
def mandel_f32(out, xmin, ymin, dx, dy, max_iter):
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return
    cr = add32(xmin, mul32(numba.float32(col), dx))
    ci = add32(ymin, mul32(numba.float32(row), dy))
    zr = numba.float32(0)
    zi = numba.float32(0)
    i = numba.int32(0)
    while i < max_iter:
        zr2 = mul32(zr, zr)
        zi2 = mul32(zi, zi)
        if add32(zr2, zi2) > numba.float32(4):
            break
        zi = add32(mul32(add32(zr, zr), zi), ci)
        zr = add32(add32(zr2, -zi2), cr)
        i = numba.int32(i + 1)
    out[row, col] = i


# --8<-- [start:numba_cuda_fma]
@cuda.jit(cache=True)
def mandel_fma(out, xmin, ymin, dx, dy, max_iter):
    # The natural way to write it: the compiler fuses multiply-adds into FMAs.
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return
    cr = xmin + col * dx
    ci = ymin + row * dy
    zr = cr - cr
    zi = cr - cr
    i = numba.int32(0)
    while i < max_iter:
        zr2 = zr * zr
        zi2 = zi * zi
        if zr2 + zi2 > 4:
            break
        zi = (zr + zr) * zi + ci
        zr = (zr2 - zi2) + cr
        i = numba.int32(i + 1)
    out[row, col] = i
# --8<-- [end:numba_cuda_fma]


# The earlier kernels, kept as the "before": `i += numba.int32(1)` looks 32-bit, but numba
# types int32 + int32 as int64, so the counter lives in a 64-bit register.
# --8<-- [start:numba_cuda_int64]
@cuda.jit(cache=True)
def mandel_kernel_f64(out, xmin, ymin, dx, dy, max_iter):
    # one thread per pixel; neighbours in a warp share a row
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return                                    # the grid overhangs the image
    cr = add(xmin, mul(col, dx))
    ci = add(ymin, mul(row, dy))
    zr = 0.0
    zi = 0.0
    i = numba.int32(0)                            # a 32-bit iteration counter
    while i < max_iter:
        zr2 = mul(zr, zr)
        zi2 = mul(zi, zi)
        if add(zr2, zi2) > 4.0:
            break                                 # escaped after i iterations
        zi = add(mul(add(zr, zr), zi), ci)
        zr = add(add(zr2, -zi2), cr)
        i += numba.int32(1)                       # numba makes this sum an int64
    out[row, col] = i
# --8<-- [end:numba_cuda_int64]


@cuda.jit(cache=True)
def mandel_kernel_f32(out, xmin, ymin, dx, dy, max_iter):
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return
    cr = add32(xmin, mul32(numba.float32(col), dx))
    ci = add32(ymin, mul32(numba.float32(row), dy))
    zr = numba.float32(0)
    zi = numba.float32(0)
    i = numba.int32(0)
    while i < max_iter:
        zr2 = mul32(zr, zr)
        zi2 = mul32(zi, zi)
        if add32(zr2, zi2) > numba.float32(4):
            break
        zi = add32(mul32(add32(zr, zr), zi), ci)
        zr = add32(add32(zr2, -zi2), cr)
        i += numba.int32(1)
    out[row, col] = i


@cuda.jit(cache=True)
def mandel_kernel_fma(out, xmin, ymin, dx, dy, max_iter):
    col, row = cuda.grid(2)
    if row >= out.shape[0] or col >= out.shape[1]:
        return
    cr = xmin + col * dx
    ci = ymin + row * dy
    zr = cr - cr
    zi = cr - cr
    i = numba.int32(0)
    while i < max_iter:
        zr2 = zr * zr
        zi2 = zi * zi
        if zr2 + zi2 > 4:
            break
        zi = (zr + zr) * zi + ci
        zr = (zr2 - zi2) + cr
        i += numba.int32(1)
    out[row, col] = i

@cuda.jit(cache=True)
def warm_up_kernel(out):
    # A trivial kernel: its first call in a process pays numba's one-time CUDA set-up.
    out[0] = 1


BLOCK = (16, 16)  # (y, x): 16 rows of 16 pixels; threadIdx.x runs along a row


def _grid(width, height):
    """Blocks along x (columns), then y (rows): CUDA's x index varies fastest in a warp."""
    return ((width + BLOCK[1] - 1) // BLOCK[1], (height + BLOCK[0] - 1) // BLOCK[0])


#: numba-cuda kernels: (dtype or "fma", counter) -> kernel
_KERNELS = {("float64", "int32"): mandel_f64, ("float32", "int32"): mandel_f32,
            ("fma", "int32"): mandel_fma, ("float64", "int64"): mandel_kernel_f64,
            ("float32", "int64"): mandel_kernel_f32, ("fma", "int64"): mandel_kernel_fma}


@functools.cache
def _launcher(kernel, dtype: str) -> launch.Launcher:
    """``kernel`` with its arguments' types named: what numba's dispatcher finds by typing
    (out, xmin, ymin, dx, dy, max_iter) on each call."""
    from numba.cuda import types
    real = types.float64 if dtype == "float64" else types.float32
    return launch.Launcher(kernel, (launch.array_type(np.int32, 2), real, real, real, real,
                                    types.int32))


def _numba_cuda(width, height, max_iter, xmin, ymin, dx, dy, dtype, contract, out=None,
                counter="int32", dispatch="resolved"):
    if out is None:
        out = cuda.device_array((height, width), dtype=np.int32)
    kernel = _KERNELS["fma" if contract else dtype, counter]
    grid, block = _grid(width, height), (BLOCK[1], BLOCK[0])
    args = (out, xmin, ymin, dx, dy, np.int32(max_iter))
    if dispatch == "resolved" and hasattr(out, "is_c_contiguous") and out.is_c_contiguous():
        # xmin, ymin, dx, dy are NumPy scalars of ``dtype``; out a C-contiguous int32 array
        _launcher(kernel, dtype)(grid, block, args)
    else:
        kernel[grid, block](*args)
    return out


# --8<-- [start:cupy]
_CUDA_SOURCE = r"""
template <typename T>
__device__ void mandel(int* out, int width, int height, T xmin, T ymin, T dx, T dy,
                       int max_iter)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= height || col >= width) return;
    T cr = xmin + (T)col * dx, ci = ymin + (T)row * dy;
    T zr = 0, zi = 0;
    int count = max_iter;
    for (int i = 0; i < max_iter; ++i) {
        T zr2 = zr * zr, zi2 = zi * zi;
        if (zr2 + zi2 > (T)4) { count = i; break; }
        zi = (zr + zr) * zi + ci;
        zr = (zr2 - zi2) + cr;
    }
    out[(long long)row * width + col] = count;
}

extern "C" __global__ void mandel_f64(int* out, int w, int h, double xmin, double ymin,
                                      double dx, double dy, int max_iter)
{ mandel<double>(out, w, h, xmin, ymin, dx, dy, max_iter); }

extern "C" __global__ void mandel_f32(int* out, int w, int h, float xmin, float ymin,
                                      float dx, float dy, int max_iter)
{ mandel<float>(out, w, h, xmin, ymin, dx, dy, max_iter); }
"""


@functools.cache
def _cupy_module(contract: bool):
    import cupy
    # --fmad=false: no fused multiply-add, so every operation rounds like the CPU's.
    options = ("-std=c++17",) + (() if contract else ("--fmad=false",))
    return cupy.RawModule(code=_CUDA_SOURCE, options=options)
# --8<-- [end:cupy]


def _cupy(width, height, max_iter, xmin, ymin, dx, dy, dtype, contract, out=None):
    import cupy
    if out is None:
        out = cupy.empty((height, width), dtype=cupy.int32)
    kernel = _cupy_module(contract).get_function("mandel_f64" if dtype == "float64" else "mandel_f32")
    cast = np.float64 if dtype == "float64" else np.float32
    kernel(_grid(width, height), (BLOCK[1], BLOCK[0]), (out, np.int32(width), np.int32(height), cast(xmin),
                                        cast(ymin), cast(dx), cast(dy), np.int32(max_iter)))
    return out


def _torch(width, height, max_iter, xmin, ymin, dx, dy, dtype):
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tdt = torch.float64 if dtype == "float64" else torch.float32
    cr = xmin.item() + torch.arange(width, device=dev, dtype=tdt) * dx.item()
    ci = ymin.item() + torch.arange(height, device=dev, dtype=tdt) * dy.item()
    cr = cr.expand(height, width).contiguous()
    ci = ci[:, None].expand(height, width).contiguous()
    zr, zi = torch.zeros_like(cr), torch.zeros_like(ci)
    count = torch.full((height, width), max_iter, dtype=torch.int32, device=dev)
    alive = torch.ones((height, width), dtype=torch.bool, device=dev)
    for i in range(max_iter):
        zr2, zi2 = zr * zr, zi * zi
        escaped = alive & (zr2 + zi2 > 4)
        count[escaped] = i
        alive &= ~escaped
        zi = torch.where(alive, (zr + zr) * zi + ci, zi)
        zr = torch.where(alive, (zr2 - zi2) + cr, zr)
    return count

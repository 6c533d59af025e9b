"""One operation, many levels: ``y = softmax(scale * x + bias)`` row by row, PyTorch down to CUDA C.

``x`` is an R x C float32 matrix, ``bias`` a float32 vector of C elements added to every row,
``scale`` a number. Each row of ``y`` is ``exp(z - max(z)) / sum(exp(z - max(z)))`` with
``z = scale * x_row + bias``: two reductions per row (a max and a sum) around elementwise work.

The same operation is written at every level of the GPU software stack: PyTorch eager and
``torch.compile``, CuPy array code and CuPy's kernel templates, a numba.cuda kernel, CUDA C
(``ladder.cu``, compiled by CuPy's ``RawModule``) and Triton; JAX when it is installed. Also
here: the inputs and the check against a float64 NumPy reference, each level's lines of code
(read off its marked sections), and :func:`measure_level`, which runs one level in this
process: first call apart from the steady state, checked, timed.

Heavy libraries are imported inside functions, so this module loads (for the site's renderers)
without torch, CuPy, numba or Triton, and before numba chooses its simulator.
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import time

import numpy as np

from .meta import (CU_SOURCE, LEVELS, PASSES, count_loc, level_loc,  # noqa: F401
                   section)


#: relative error allowed per element against the float64 reference (see :func:`check`): a
#: float32 softmax rounds z = scale * x + bias, its exponential and the division, each
#: within 2**-24 relative, and exp magnifies an absolute error of z by its size
RTOL = 1e-5

# ================================================================== inputs and checking

# --8<-- [start:inputs]
def make_inputs(rows: int, cols: int, seed: int = 0):
    """Random float32 x (rows x cols) and bias (cols), and the scale."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    bias = (0.5 * rng.standard_normal(cols)).astype(np.float32)
    return x, np.float32(1.5), bias


def reference(x, scale, bias) -> np.ndarray:
    """softmax(scale * x + bias) per row, in float64 with NumPy."""
    z = np.float64(scale) * np.asarray(x, np.float64) + np.asarray(bias, np.float64)
    z -= z.max(axis=1, keepdims=True)   # without this, exp overflows for large z
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
# --8<-- [end:inputs]


def check(y, x, scale, bias, *, what: str = "softmax", sample_rows: int = 256) -> float:
    """Raise :class:`gpukit.verify.Mismatch` unless ``y`` is the softmax of ``scale * x + bias``.

    Every element must be finite (outputs are poisoned with NaN first), every row must sum
    to 1, and up to ``sample_rows`` rows spread over the matrix (always the first and last)
    are compared element by element with the float64 reference (relative error <= RTOL).
    Returns the largest relative error seen.
    """
    from gpukit.arrays import to_host
    from gpukit.verify import Mismatch, check_close
    host = to_host(y)
    x = to_host(x)
    if host.shape != x.shape:
        raise Mismatch(f"{what}: output shape {host.shape} != input shape {x.shape}")
    if host.size == 0:
        return 0.0
    if not np.all(np.isfinite(host)):
        bad = int(np.count_nonzero(~np.isfinite(host)))
        raise Mismatch(f"{what}: {bad} of {host.size} elements are NaN or inf")
    sums = host.sum(axis=1, dtype=np.float64)
    worst = float(np.max(np.abs(sums - 1.0)))
    if worst > 1e-4:
        raise Mismatch(f"{what}: a row sums to 1 {'+' if worst > 0 else ''}{worst:.3g}")
    rows = np.unique(np.linspace(0, x.shape[0] - 1, min(sample_rows, x.shape[0])).astype(int))
    return check_close(host[rows], reference(x[rows], scale, bias), rtol=RTOL, what=what)


def _check_shapes(x, bias, out=None) -> None:
    if len(x.shape) != 2:
        raise ValueError(f"x must be a matrix (2-D), not {len(x.shape)}-D")
    if tuple(bias.shape) != (x.shape[1],):
        raise ValueError(f"bias must have {x.shape[1]} elements (one per column), not shape "
                         f"{tuple(bias.shape)}")
    if out is not None and tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"out has shape {tuple(out.shape)}, x has {tuple(x.shape)}")


# ================================================================== the levels

# --8<-- [start:torch_eager]
def softmax_torch(x, scale, bias):
    z = scale * x + bias
    z = z - z.amax(dim=1, keepdim=True)
    e = z.exp()
    return e / e.sum(dim=1, keepdim=True)
# --8<-- [end:torch_eager]


# --8<-- [start:torch_softmax]
def softmax_torch_library(x, scale, bias):
    import torch
    return torch.softmax(scale * x + bias, dim=1)
# --8<-- [end:torch_softmax]


# --8<-- [start:torch_compile]
def softmax_torch_compiled():
    import torch
    return torch.compile(softmax_torch, dynamic=False)
# --8<-- [end:torch_compile]


# --8<-- [start:cupy_array]
def softmax_cupy(x, scale, bias):
    import cupy
    z = scale * x + bias
    z -= z.max(axis=1, keepdims=True)
    cupy.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z
# --8<-- [end:cupy_array]


# --8<-- [start:cupy_kernels]
@functools.cache
def _cupy_kernels():
    import cupy
    row_max = cupy.ReductionKernel(
        "float32 x, float32 scale, float32 bias", "float32 row_max",
        "scale * x + bias",                 # map each element
        "fmaxf(a, b)",                      # reduce two mapped values
        "row_max = a", "-3.402823466e+38f",  # store; start from the most negative float
        "ladder_row_max", reduce_type="float")
    row_sum = cupy.ReductionKernel(
        "float32 x, float32 scale, float32 bias, float32 row_max", "float32 total",
        "expf(scale * x + bias - row_max)", "a + b", "total = a", "0",
        "ladder_row_sum_exp", reduce_type="float")
    write = cupy.ElementwiseKernel(
        "float32 x, float32 scale, float32 bias, float32 row_max, float32 total",
        "float32 y",
        "y = expf(scale * x + bias - row_max) / total", "ladder_softmax_write")
    return row_max, row_sum, write


def softmax_cupy_kernels(x, scale, bias, out):
    row_max, row_sum, write = _cupy_kernels()
    scale = np.float32(scale)
    m = row_max(x, scale, bias, axis=1, keepdims=True)         # pass 1: read x
    total = row_sum(x, scale, bias, m, axis=1, keepdims=True)  # pass 2: read x
    return write(x, scale, bias, m, total, out)                # 3: read x, write y
# --8<-- [end:cupy_kernels]


# --8<-- [start:numba_kernel]
@functools.cache
def numba_softmax_kernel(threads: int):
    # a module global: numba's CUDA simulator swaps it in the kernel's globals
    global cuda
    from numba import cuda, float32

    @cuda.jit
    def kernel(x, bias, scale, y):
        row, t = cuda.blockIdx.x, cuda.threadIdx.x
        cols = x.shape[1]
        # 1. each thread: running max m and sum s of exp(z - m) over its columns
        m, s = float32(-math.inf), float32(0.0)
        for j in range(t, cols, threads):
            z = scale * x[row, j] + bias[j]
            if z > m:
                s = s * math.exp(m - z) + float32(1.0)
                m = z
            else:
                s += math.exp(z - m)
        # 2. merge the threads' (m, s) pairs in shared memory, halving each step
        sm = cuda.shared.array(threads, float32)
        ss = cuda.shared.array(threads, float32)
        sm[t], ss[t] = m, s
        cuda.syncthreads()
        step = threads // 2
        while step > 0:
            if t < step:
                m1, s1, m2, s2 = sm[t], ss[t], sm[t + step], ss[t + step]
                mm = max(m1, m2)
                if mm > float32(-math.inf):
                    ss[t] = s1 * math.exp(m1 - mm) + s2 * math.exp(m2 - mm)
                sm[t] = mm
            cuda.syncthreads()
            step //= 2
        # 3. read x again, write y
        row_max, inv = sm[0], float32(1.0) / ss[0]
        for j in range(t, cols, threads):
            y[row, j] = math.exp(scale * x[row, j] + bias[j] - row_max) * inv

    return kernel


def softmax_numba(x, scale, bias, out, threads: int = 256):
    _check_shapes(x, bias, out)
    if x.shape[0] > 0:
        kernel = numba_softmax_kernel(threads)
        kernel[x.shape[0], threads](x, bias, np.float32(scale), out)
    return out
# --8<-- [end:numba_kernel]


# --8<-- [start:cuda_c]
@functools.cache
def _cuda_c_function(name: str):
    import cupy
    module = cupy.RawModule(code=CU_SOURCE.read_text(encoding="utf-8"),
                            options=("-std=c++17",), name_expressions=[name])
    return module.get_function(name)


def cuda_c_config(cols: int, aligned: bool = True) -> tuple[str, int]:
    """The kernel instance and threads per block for rows of ``cols`` floats."""
    groups = cols // 4                              # float4 loads per row
    if cols % 4 == 0 and aligned and 0 < groups <= 8 * 1024:
        threads = max(1, math.ceil(groups / 4))
        block = min(1024, max(32, 1 << math.ceil(math.log2(threads))))
        vec = 1 << math.ceil(math.log2(math.ceil(groups / block)))   # 1, 2, 4 or 8
        return f"softmax_rows_regs<{block}, {vec}>", block
    block = min(256, max(32, 1 << math.ceil(math.log2(max(1, cols)))))
    return f"softmax_rows_loop<{block}>", block


def softmax_cuda_c(x, scale, bias, out):
    _check_shapes(x, bias, out)
    rows, cols = x.shape
    aligned = all(a.data.ptr % 16 == 0 and a.flags.c_contiguous for a in (x, bias, out))
    name, block = cuda_c_config(cols, aligned)
    if rows and cols:
        args = (x, bias, np.float32(scale), out, np.int32(cols))
        _cuda_c_function(name)((rows,), (block,), args)
    return out
# --8<-- [end:cuda_c]


# --8<-- [start:triton]
@functools.cache
def triton_softmax_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(x_ptr, bias_ptr, y_ptr, scale, cols, row_stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)                  # one program per row
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=0.0)
        b = tl.load(bias_ptr + offs, mask=mask, other=0.0)
        z = tl.where(mask, scale * x + b, -float("inf"))
        e = tl.exp(z - tl.max(z, axis=0))
        tl.store(y_ptr + row * row_stride + offs, e / tl.sum(e, axis=0), mask=mask)

    return kernel


def softmax_triton(x, scale, bias, out):
    import triton
    _check_shapes(x, bias, out)
    rows, cols = x.shape
    block = triton.next_power_of_2(max(cols, 1))
    if block > 65536:
        raise ValueError(f"rows of {cols} elements do not fit one Triton program "
                         "(at most 65536)")
    if rows:
        warps = min(16, max(4, block // 512))
        triton_softmax_kernel()[(rows,)](x, bias, out, float(scale), cols, x.stride(0),
                                         BLOCK=block, num_warps=warps)
    return out
# --8<-- [end:triton]


# --8<-- [start:jax]
@functools.cache
def softmax_jax():
    import jax
    return jax.jit(lambda x, scale, bias: jax.nn.softmax(scale * x + bias, axis=1))
# --8<-- [end:jax]


# ================================================================== running one level

class Skip(Exception):
    """A level that cannot run on this machine; the message says why."""


def real_gpu() -> bool:
    """Whether this process runs on an NVIDIA GPU (not on numba's CUDA simulator)."""
    from gpukit import device
    return device.has_gpu() and not device.simulator_enabled()


def _libraries(level: str, gpu: bool):
    """Import what the level needs; set up the GPU context. Returns (import_s, context_s)."""
    t0 = time.perf_counter()
    if level.startswith("torch") or level == "triton":
        if level == "triton" and not gpu:
            os.environ.setdefault("TRITON_INTERPRET", "1")   # before triton is imported
        import torch
        if level == "triton":
            importlib.import_module("triton")   # its import time is part of the level's
    elif level.startswith("cupy") or level == "cuda-c":
        if not gpu:
            raise Skip("needs an NVIDIA GPU: CuPy imports without one but cannot run")
        import cupy
    elif level == "numba-cuda":
        from gpukit import device
        device.use_simulator_if_no_gpu()
        from numba import cuda
    elif level == "jax":
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        try:
            import jax
        except ImportError:
            raise Skip("JAX is not installed on this machine") from None
        platforms = {d.platform for d in jax.devices()}
        if gpu and "gpu" not in platforms:
            raise Skip(f"this JAX has no GPU backend (devices: {', '.join(sorted(platforms))})")
    else:
        raise ValueError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    t_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    if gpu:
        if level.startswith("torch") or level == "triton":
            torch.ones(1, device="cuda").sum().item()
        elif level.startswith("cupy") or level == "cuda-c":
            cupy.ones(1).sum().get()
        elif level == "numba-cuda":
            cuda.current_context()
        elif level == "jax":
            jax.numpy.ones(1).block_until_ready()
    return t_import, time.perf_counter() - t0


def prepare(level: str, x: np.ndarray, scale, bias: np.ndarray, gpu: bool):
    """Copy the inputs where the level works; return (call, result, timer).

    ``call()`` runs the operation once; ``result()`` is its latest output. Levels that write
    into a given output get one poisoned with NaN, so an element they skip fails the check.
    """
    holder: dict = {}
    if level.startswith("torch") or level == "triton":
        import torch
        dev = "cuda" if gpu else "cpu"
        tx, tb = torch.from_numpy(x).to(dev), torch.from_numpy(bias).to(dev)
        timer = "torch" if gpu else "cpu"
        if level == "triton":
            out = torch.full_like(tx, float("nan"))
            return (lambda: softmax_triton(tx, scale, tb, out)), (lambda: out), timer
        fn = {"torch-eager": softmax_torch, "torch-softmax": softmax_torch_library,
              "torch-compile": None}[level] or softmax_torch_compiled()
        s = float(scale)
        return (lambda: holder.__setitem__("y", fn(tx, s, tb))), (lambda: holder["y"]), timer
    if level.startswith("cupy") or level == "cuda-c":
        import cupy
        cx, cb = cupy.asarray(x), cupy.asarray(bias)
        if level == "cupy-array":
            s = float(scale)
            return (lambda: holder.__setitem__("y", softmax_cupy(cx, s, cb))), (lambda: holder["y"]), "cupy"
        out = cupy.full(x.shape, cupy.nan, dtype=cupy.float32)
        fn = softmax_cupy_kernels if level == "cupy-kernels" else softmax_cuda_c
        return (lambda: fn(cx, scale, cb, out)), (lambda: out), "cupy"
    if level == "numba-cuda":
        from numba import cuda
        dx, db = cuda.to_device(x), cuda.to_device(bias)
        out = cuda.to_device(np.full(x.shape, np.nan, dtype=np.float32))
        threads = 256 if gpu else 32   # the simulator runs each thread as a Python thread
        return (lambda: softmax_numba(dx, scale, db, out, threads)), (lambda: out), \
            "numba" if gpu else "cpu"
    if level == "jax":
        import jax
        jx, jb = jax.device_put(x), jax.device_put(bias)
        fn, s = softmax_jax(), np.float32(scale)
        return (lambda: holder.__setitem__("y", fn(jx, s, jb).block_until_ready())), \
            (lambda: np.asarray(holder["y"])), "cpu"
    raise ValueError(f"unknown level {level!r}")


def measure_level(level: str, shapes, repeat: int, *, seed: int = 0) -> dict:
    """One level in this process: import its library and set up the GPU context (both timed),
    then for each ``(rows, cols)`` shape the first call, the check and the steady state.
    Raises :class:`Skip` when the level cannot run on this machine."""
    from gpukit import bench
    gpu = real_gpu()
    t_import, t_context = _libraries(level, gpu)
    result = {"level": level, "import_s": t_import, "context_s": t_context, "shapes": []}
    biggest = max(r * c for r, c in shapes)
    x_all, scale, bias_all = make_inputs(1, max(biggest, 1), seed)
    x_all = x_all.ravel()
    for rows, cols in shapes:
        x, bias = x_all[:rows * cols].reshape(rows, cols), bias_all[:cols].copy()
        call, out, timer = prepare(level, x, scale, bias, gpu)
        nbytes = (2 * rows * cols + cols) * 4
        t = bench.bench(call, timer=timer, name=level, warmup=2, repeat=repeat, bytes=nbytes)
        err = check(out(), x, scale, bias, what=f"{level} {rows}x{cols}")
        result["shapes"].append(bench.row(t, rows=rows, cols=cols, max_rel_err=err))
        del call, out
    return result


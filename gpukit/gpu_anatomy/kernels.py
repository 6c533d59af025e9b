"""The chapter's kernels, and the arithmetic around them.

* the constants the experiments, the example and the views share (sweeps, labels, paths);
* ``numba.cuda`` kernels: a fill with pseudo-random data, three streaming reads (one load in
  flight per thread, the plain loop, four independent loads), a strided copy, a kernel whose
  threads take ``k`` different paths, a pointer chase, and the empty and one-step kernels of the
  launch experiment (in CUDA C for CuPy, :data:`CUDA_SOURCE`, the same two and one that spins);
* host kernels (``numba.njit``, all cores): a read and a strided copy;
* pure arithmetic: :func:`occupancy` (blocks and warps one multiprocessor holds),
  :func:`littles_law` (bytes in flight), the references the kernels are checked against.

The numba kernels run on numba's CUDA simulator too (correctness only).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import cuda, float32

from .meta import (BLOCK_SIZES, BLOCKS_PER_SM, DIVERGENCE_MODES, PATHS,  # noqa: F401
                   READ_VARIANTS, STRIDES, littles_law)


# ----------------------------------------------------------------------------- kernels

@cuda.jit
def fill_random(x, seed):
    # Pseudo-random float32 values in [0.5, 1.5) from a hash of the index: never zeros.
    i = cuda.grid(1)
    if i < x.shape[0]:
        h = (i * 2654435761 + seed * 97531) & 0xFFFFFFFF
        h ^= h >> 16
        h = (h * 0x45D9F3B) & 0xFFFFFFFF
        h ^= h >> 16
        x[i] = float32(0.5) + float32(h & 0xFFFFFF) * float32(1.0 / 16777216.0)


# --8<-- [start:read]
@cuda.jit
def read_sum_dependent(x, partial):
    # One load in flight per thread: the next address waits for this value. (Our data
    # is positive, so s < 0 is never true and the address never changes; the hardware
    # cannot know that.)
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    s = float32(0.0)
    i = t
    while i < x.shape[0]:
        s += x[i]
        i += step + (s < float32(0.0))
    partial[t] = s


@cuda.jit
def read_sum(x, partial):
    # The plain grid-stride loop. The compiler unrolls it and issues several loads at
    # once.
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    s = float32(0.0)
    for i in range(t, x.shape[0], step):
        s += x[i]
    partial[t] = s


@cuda.jit
def read_sum_ilp4(x, partial):
    # The same sum with four independent loads per iteration: four loads in flight per
    # thread.
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    n = x.shape[0]
    s0 = s1 = s2 = s3 = float32(0.0)
    i = t
    while i + 3 * step < n:
        s0 += x[i]
        s1 += x[i + step]
        s2 += x[i + 2 * step]
        s3 += x[i + 3 * step]
        i += 4 * step
    while i < n:
        s0 += x[i]
        i += step
    partial[t] = (s0 + s1) + (s2 + s3)
# --8<-- [end:read]


# --8<-- [start:strided]
@cuda.jit
def strided_copy(x, out, stride):
    # Thread i reads element i * stride: neighbouring threads read addresses
    # 4 * stride bytes apart.
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i * stride]
# --8<-- [end:strided]


# --8<-- [start:divergence]
@cuda.jit
def paths_kernel(x, out, k, iters, mode):
    # Element e follows path e % k: the same arithmetic with constants of its own
    # (exact in float32).
    t = cuda.grid(1)
    if t >= x.shape[0]:
        return
    # the element this thread computes
    e = t
    if mode == 1:
        # renumber so that the 32 threads of a warp share e % k
        w = t // 32
        e = (w // k) * 32 * k + (t % 32) * k + w % k
    path = e % k
    v = x[e]
    b = float32(1.0 / 1024.0)
    if mode == 2:
        # no branch: the path only picks the constant
        a = float32(1.0) - float32(path + 1) * float32(1.0 / 8192.0)
        for _ in range(iters):
            v = v * a + b
    else:
        for p in range(k):
            # only the threads on path p run; the rest of the warp waits
            if path == p:
                a = float32(1.0) - float32(p + 1) * float32(1.0 / 8192.0)
                for _ in range(iters):
                    v = v * a + b
    out[e] = v
# --8<-- [end:divergence]


# --8<-- [start:chase]
@cuda.jit
def chase(nxt, steps, pos):
    # One thread follows a random cycle: each load needs the value of the one before.
    j = pos[0]
    for _ in range(steps):
        j = nxt[j]
    pos[0] = j
# --8<-- [end:chase]


READ_KERNELS = tuple(zip(READ_VARIANTS, (read_sum_dependent, read_sum, read_sum_ilp4)))


@cuda.jit
def empty_kernel():
    pass


@cuda.jit
def step_kernel(x, a, b):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * a + b


# CUDA C for the launch experiment: an empty kernel, a kernel that spins for a number of clock
# cycles (to queue work behind it), and one step of a chain of small dependent kernels.
CUDA_SOURCE = r"""
extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}

extern "C" __global__ void step(float* x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + b;
}
"""


# ----------------------------------------------------------------------- host kernels

@numba.njit(parallel=True, fastmath=True)
def cpu_read_sum(x):
    # fastmath lets LLVM reorder the additions, so the sum uses SIMD instructions
    s = 0.0
    for i in numba.prange(x.shape[0]):
        s += x[i]
    return s


@numba.njit(parallel=True)
def cpu_strided_copy(x, out, stride):
    for i in numba.prange(out.shape[0]):
        out[i] = x[i * stride]


# --------------------------------------------------------------------- pure arithmetic

# --8<-- [start:occupancy]
def occupancy(threads_per_block: int, registers_per_thread: int,
              shared_bytes_per_block: int, gpu: dict) -> dict:
    """Blocks and warps one multiprocessor can hold at once, and what limits them.

    Each limit is the number of whole blocks that fit: by threads (warps), by registers
    (allocated per warp in units of 256), by shared memory (each block also reserves
    1 KiB for the system on compute capability 8.0 and later) and by the hardware's
    block slots.
    """
    most = gpu["max_threads_per_block"]
    if threads_per_block < 1 or threads_per_block > most:
        raise ValueError(f"threads per block must be 1..{most}, "
                         f"got {threads_per_block}")
    if registers_per_thread < 0 or shared_bytes_per_block < 0:
        raise ValueError("registers and shared memory cannot be negative")
    warp = gpu["warp_size"]
    warps_per_block = math.ceil(threads_per_block / warp)
    max_warps = gpu["max_threads_per_multiprocessor"] // warp
    regs_per_warp = math.ceil(registers_per_thread * warp / 256) * 256
    regs = gpu["registers_per_multiprocessor"]
    smem = gpu["shared_memory_per_multiprocessor_bytes"]
    limits = {
        "threads": max_warps // warps_per_block,
        "registers": ((regs // regs_per_warp) // warps_per_block
                      if regs_per_warp else max_warps),
        "shared memory": smem // (shared_bytes_per_block + 1024),
        "block slots": gpu.get("max_blocks_per_multiprocessor") or 32,
    }
    limiter = min(limits, key=limits.get)
    blocks = limits[limiter]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps_per_block,
            "occupancy": blocks * warps_per_block / max_warps, "limited_by": limiter,
            "limits": limits}
# --8<-- [end:occupancy]





def window_elements(probe_gbs: float, *, target_s: float = 2e-3, minimum: int = 2**24,
                    maximum: int = 2**28, granule: int = 2**20) -> int:
    """Elements per timed call so that one call takes about ``target_s`` at ``probe_gbs``."""
    want = int(probe_gbs * 1e9 * target_s / 4)
    want = max(minimum, min(maximum, want))
    return max(granule, want // granule * granule)


def paths_reference(x: np.ndarray, k: int, iters: int, elements=None) -> np.ndarray:
    """What :func:`paths_kernel` computes for ``x`` (elements ``elements``, default 0..), in float64.

    The kernel's constants are exact in float32, so only the rounding of each step differs.
    """
    e = np.arange(x.shape[0]) if elements is None else np.asarray(elements)
    a = 1.0 - ((e % k) + 1) / 8192.0
    v = x.astype(np.float64)
    for _ in range(iters):
        v = v * a + 1.0 / 1024.0
    return v


def random_cycle(n: int, seed: int = 0, xp=np) -> object:
    """``nxt`` with one cycle through all of 0..n-1 in random order (``xp``: numpy or cupy)."""
    if n < 1:
        raise ValueError("a cycle needs at least one element")
    order = xp.random.default_rng(seed).permutation(n) if xp is np else xp.random.permutation(n)
    order = order.astype(xp.int32)
    nxt = xp.empty(n, dtype=xp.int32)
    nxt[order] = xp.roll(order, -1)
    return nxt


def walk(nxt: np.ndarray, start: int, steps: int) -> int:
    """Where ``steps`` steps along ``nxt`` from ``start`` end: what :func:`chase` computes."""
    j = int(start)
    for _ in range(steps):
        j = int(nxt[j])
    return j


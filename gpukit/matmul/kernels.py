"""Single-precision matrix multiplication, from a naive kernel to within reach of cuBLAS.

``matmul(a, b, kernel=...)`` computes ``a @ b`` for float32 matrices already in GPU
memory with one of a numbered progression of kernels (see ``KERNELS``):

* ``01``-``03b`` are numba ``@cuda.jit`` kernels (defined here; they also run on numba's
  CUDA simulator, which the tests use on machines without a GPU);
* ``04``-``11`` are CUDA C kernels in ``matmul.cu``, compiled by CuPy's ``RawModule``;
* ``"cublas"`` is the vendor library (``cupy.matmul``; CuPy keeps TF32 off unless the
  environment sets ``CUPY_TF32=1``, and we refuse to run the reference then).

Rules of the dispatcher, the same for every kernel:

* ``a`` (M x K) and ``b`` (K x N) must be 2-D float32 arrays in GPU memory (CuPy, torch
  CUDA tensors, numba device arrays or anything with ``__cuda_array_interface__``).
  Other dtypes raise ``TypeError``: no silent conversion. Host arrays raise ``TypeError``:
  no hidden copy to the GPU.
* CuPy and torch arrays must sit on the same GPU (``TypeError`` otherwise).
* Any M, N, K: kernels guard every load and store; K = 0 gives zeros, M or N = 0 an empty
  result.
* Non-contiguous input: the numba kernels index through strides and take it as it is;
  the CUDA C kernels and cuBLAS get a C-contiguous copy (``cupy.ascontiguousarray``),
  made only when needed. The 16-byte-load kernels use their vector path only when K and N
  are multiples of 4 and every pointer is 16-byte aligned, and a scalar path otherwise.
* The result is a new array of the same library as ``a`` (CuPy, torch or numba), or
  ``out`` if given (C-contiguous float32, shape M x N).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
from numba import cuda, float32, uint64

from ..device import simulator_enabled
from ..arrays import as_numba, kind

#: Kernel names, in the order the chapter introduces them.
NUMBA_KERNELS = ("01-naive-numba", "02-coalesced-numba", "03-smem-numba", "03b-smem-8x8-numba",
                 "03c-regtile-numba")
CUDA_C_KERNELS = ("04-smem-cuda", "05-1d-blocktile", "06-2d-blocktile", "07-vectorised",
                  "08-warptile", "09-warptile-128x64", "10-warptile-128x256", "11-warptile-bk8",
                  "12-pipelined")
KERNELS = NUMBA_KERNELS + CUDA_C_KERNELS + ("cublas",)
DEFAULT_KERNEL = "08-warptile"

SOURCE = Path(__file__).with_name("matmul.cu")


# ------------------------------------------------------------------ 01: naive (numba)

# --8<-- [start:naive]
@cuda.jit
def naive_kernel(a, b, c):
    # One thread per output element. threadIdx.x walks down the ROWS of C: the 32
    # threads of a warp read 32 different rows of A (addresses K floats apart) and
    # write 32 different rows of C: no two of their accesses share a transaction.
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
# --8<-- [end:naive]


# -------------------------------------------------------------- 02: coalesced (numba)

# --8<-- [start:coalesced]
@cuda.jit
def coalesced_kernel(a, b, c):
    # The same arithmetic with the thread index swapped: threadIdx.x now walks along
    # a ROW of C. A warp reads 32 neighbouring floats of B (one 128-byte transaction),
    # the same element of A (a broadcast), and writes 32 neighbouring floats of C.
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
# --8<-- [end:coalesced]


# ---------------------------------------------- 03: shared memory + registers (numba)

# --8<-- [start:smem_numba]
# A block of 16 x 16 threads computes a TILE x TILE tile of C, each thread a PER x PER
# set of outputs held in registers. Per step of BK along k, the block copies a TILE x BK
# tile of A and a BK x TILE tile of B into shared memory; each value copied is then used
# TILE times. The sizes must be compile-time constants (they size cuda.local.array and
# cuda.shared.array, and let the compiler unroll the loops over them), so a function
# builds one kernel per choice of sizes: its arguments are constants in the kernel.
THREADS = 16         # threads per block along each side (16 x 16 = 256)


def make_smem_kernel(tile: int, bk: int, launch_bounds=None):
    per = tile // THREADS        # outputs per thread along each side
    pad = tile + 1               # row length of the transposed A tile
    loads = tile * bk // (THREADS * THREADS)   # elements of each tile a thread copies

    # (numba's CUDA simulator takes no launch_bounds; it has no registers to budget)
    options = ({} if launch_bounds is None or simulator_enabled()
               else {"launch_bounds": launch_bounds})

    @cuda.jit(**options)
    def smem_kernel(a, b, c):
        # A is stored transposed (k first, padded by one column so that the transposing
        # stores hit different banks); B as it is.
        sa = cuda.shared.array((bk, pad), float32)
        sb = cuda.shared.array((bk, tile), float32)
        acc = cuda.local.array((per, per), float32)   # registers, once unrolled
        ra = cuda.local.array(per, float32)
        rb = cuda.local.array(per, float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * THREADS + tx
        row0, col0 = cuda.blockIdx.y * tile, cuda.blockIdx.x * tile
        m, n, kdim = c.shape[0], c.shape[1], a.shape[1]
        for i in range(per):
            for j in range(per):
                acc[i, j] = 0.0
        for k0 in range(0, kdim, bk):
            # Consecutive threads read consecutive addresses; zeros outside.
            for step in range(loads):
                e = tid + step * THREADS * THREADS
                # A tile: row r, column k
                r, k = e // bk, e % bk
                inside = row0 + r < m and k0 + k < kdim
                sa[k, r] = a[row0 + r, k0 + k] if inside else float32(0.0)
                # B tile: row k, column col
                k, col = e // tile, e % tile
                inside = k0 + k < kdim and col0 + col < n
                sb[k, col] = b[k0 + k, col0 + col] if inside else float32(0.0)
            cuda.syncthreads()
            for k in range(bk):
                # Thread (ty, tx) owns rows ty + 16 i and columns tx + 16 j:
                # neighbouring threads read neighbouring words of sb (no bank
                # conflicts) and write neighbouring elements of C (coalesced).
                for i in range(per):
                    ra[i] = sa[k, ty + i * THREADS]
                for j in range(per):
                    rb[j] = sb[k, tx + j * THREADS]
                for i in range(per):
                    for j in range(per):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(per):
            for j in range(per):
                r, col = row0 + ty + i * THREADS, col0 + tx + j * THREADS
                if r < m and col < n:
                    c[r, col] = acc[i, j]

    return smem_kernel


#: 64 x 64 tiles, 4 x 4 outputs per thread: 8 shared loads feed 16 multiply-adds.
smem_kernel = make_smem_kernel(64, 16)
#: 128 x 128 tiles, 8 x 8 outputs per thread: 16 shared loads feed 64 multiply-adds; at
#: most 128 registers a thread so that two blocks of 256 threads fit on an SM.
smem_kernel_8x8 = make_smem_kernel(128, 8, launch_bounds=(256, 2))
# --8<-- [end:smem_numba]


# ------------------------------------- 03c: register tiles read 16 bytes at a time (numba)

# --8<-- [start:regtile_numba]
# Kernel 03b with its loads rearranged. A thread owns 2 x 2 groups of 4 x 4 outputs:
# rows 4 ty + 64 g + i and columns 4 tx + 64 h + j. The 4 values of a group sit side by
# side in shared memory, in a row whose start is 16-byte aligned, so the compiler can
# fetch them with one 16-byte load: 4 shared loads per step along k instead of 16.
# Shared memory holds two tiles: while the block computes on one, the next tile's
# values wait in registers and are stored into the other buffer afterwards, so each
# step needs one barrier.
RT_TILE, RT_BK, RT_GROUP = 128, 8, 4
RT_PAD = RT_TILE + 4              # row length of the transposed A tile (see below)
RT_HALF = RT_TILE // 2            # 64: the second group of rows (columns) of a thread
RT_LOADS = RT_TILE * RT_BK // (THREADS * THREADS)    # 4 values of each tile a thread
RT_UNROLL = 2                     # steps along k per round of the k loop (see below)
RT_ASTEP = THREADS * THREADS // RT_BK     # 32: rows of A between a thread's copies
RT_BSTEP = THREADS * THREADS // RT_TILE   # 2: rows of B between a thread's copies
RT_SA, RT_SB = 2 * RT_BK * RT_PAD, 2 * RT_BK * RT_TILE   # two buffers of each tile
#: 16-byte aligned shared arrays (numba's simulator takes no alignment, and needs none)
RT_ALIGN = None if simulator_enabled() else 16


def make_regtile_kernel(launch_bounds=None):
    """The 03c kernel; ``launch_bounds`` caps its registers (None: the compiler's
    choice)."""
    options = ({} if launch_bounds is None or simulator_enabled()
               else {"launch_bounds": launch_bounds})
    return cuda.jit(**options)(_regtile)


def _regtile(a, b, c):
    # A is stored transposed and its rows padded by 4 floats: the 32 stores of a warp
    # (8 values of k for each of 4 rows) land in 32 different banks, and every row
    # still starts on a 16-byte boundary. Both tiles live in flat arrays indexed by
    # unsigned integers: an index that cannot be negative needs no wraparound test,
    # and the compiler then sees that the 4 loads of a group are neighbours.
    sa = cuda.shared.array(RT_SA, float32, alignment=RT_ALIGN)
    sb = cuda.shared.array(RT_SB, float32, alignment=RT_ALIGN)
    acc = cuda.local.array((8, 8), float32)
    ra = cuda.local.array(8, float32)
    rb = cuda.local.array(8, float32)
    na = cuda.local.array(RT_LOADS, float32)      # the next tile, in flight
    nb = cuda.local.array(RT_LOADS, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * THREADS + tx
    row0, col0 = cuda.blockIdx.y * RT_TILE, cuda.blockIdx.x * RT_TILE
    m, n, kdim = c.shape[0], c.shape[1], a.shape[1]
    for i in range(8):
        for j in range(8):
            acc[i, j] = 0.0
    # The elements of A and B this thread copies lie in the same rows and columns of
    # every tile; only k moves. A: column ak, rows ar + 32 s; B: column bc, rows
    # bk + 2 s.
    ak, ar = tid % RT_BK, row0 + tid // RT_BK
    bk, bc = tid // RT_TILE, col0 + tid % RT_TILE
    tiles = (kdim + RT_BK - 1) // RT_BK
    for t in range(tiles + 1):
        # fetch tile t into registers (nothing left to fetch in the last round)
        if t < tiles:
            k0 = t * RT_BK
            for s in range(RT_LOADS):
                r, k = ar + RT_ASTEP * s, k0 + ak
                inside = r < m and k < kdim
                na[s] = a[uint64(r), uint64(k)] if inside else float32(0.0)
                k = k0 + bk + RT_BSTEP * s
                inside = k < kdim and bc < n
                nb[s] = b[uint64(k), uint64(bc)] if inside else float32(0.0)
        # compute on tile t - 1, in buffer (t - 1) % 2
        if t > 0:
            cur = (t - 1) & 1
            for k2 in range(RT_BK // RT_UNROLL):
                for u in range(RT_UNROLL):
                    k = k2 * RT_UNROLL + u
                    for g in range(2):
                        ia = uint64((cur * RT_BK + k) * RT_PAD + 4 * ty + RT_HALF * g)
                        ib = uint64((cur * RT_BK + k) * RT_TILE + 4 * tx + RT_HALF * g)
                        for i in range(RT_GROUP):
                            ra[4 * g + i] = sa[ia + uint64(i)]
                            rb[4 * g + i] = sb[ib + uint64(i)]
                    for i in range(8):
                        for j in range(8):
                            acc[i, j] += ra[i] * rb[j]
        # store tile t into the other buffer: it was last read before the previous
        # barrier
        if t < tiles:
            nxt = t & 1
            for s in range(RT_LOADS):
                r, k = ar - row0 + RT_ASTEP * s, bk + RT_BSTEP * s
                sa[uint64((nxt * RT_BK + ak) * RT_PAD + r)] = na[s]
                sb[uint64((nxt * RT_BK + k) * RT_TILE + bc - col0)] = nb[s]
        cuda.syncthreads()
    for i in range(8):
        r = row0 + 4 * ty + RT_HALF * (i // 4) + i % 4
        for j in range(8):
            col = col0 + 4 * tx + RT_HALF * (j // 4) + j % 4
            if r < m and col < n:
                c[r, col] = acc[i, j]


#: no register cap: the compiler's choice, 128 registers a thread with this numba and
#: CUDA, lets two blocks of 256 threads share an SM without a spill
regtile_kernel = make_regtile_kernel()
# --8<-- [end:regtile_numba]


# ------------------------------------------------------------------------ dispatcher

def _device_id(x):
    where = kind(x)
    if where == "cupy":
        return x.device.id
    if where == "torch-cuda":
        return x.device.index
    return None


def _dtype_name(x) -> str:
    """'float32', 'float64', 'bfloat16', ... for NumPy, CuPy, numba and torch arrays."""
    return str(x.dtype).replace("torch.", "")


def _validate(a, b, kernel: str):
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    for label, x in (("a", a), ("b", b)):
        where = kind(x)
        if where in ("numpy", "torch-cpu"):
            raise TypeError(f"{label} is in host memory; matmul runs on the GPU and copies "
                            "nothing behind your back: move it first (cupy.asarray, "
                            "numba.cuda.to_device or tensor.cuda())")
        if where == "other":
            raise TypeError(f"{label} is a {type(x).__name__}; pass a CuPy array, a torch "
                            "CUDA tensor or a numba device array")
        if len(x.shape) != 2:
            raise ValueError(f"{label} must be 2-D, got shape {tuple(x.shape)}")
        if _dtype_name(x) != "float32":
            raise TypeError(f"{label} is {x.dtype}; these kernels are float32 only: "
                            "convert explicitly (a.astype(float32))")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is "
                         f"{tuple(b.shape)} (a's columns must equal b's rows)")
    da, db = _device_id(a), _device_id(b)
    if da is not None and db is not None and da != db:
        raise TypeError(f"a is on GPU {da} but b is on GPU {db}; put both on one device")


def _empty(like, shape):
    """An uninitialised float32 array of ``shape`` from the same library as ``like``."""
    where = kind(like)
    if where == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=cupy.float32)
    if where == "torch-cuda":
        import torch
        return torch.empty(shape, dtype=torch.float32, device=like.device)
    return cuda.device_array(shape, dtype=np.float32)


def _fill_zero(x):
    where = kind(x)
    if where == "torch-cuda":
        x.zero_()
    elif where == "cupy":
        x.fill(0.0)
    else:
        as_numba(x).copy_to_device(np.zeros(x.shape, np.float32))


def matmul(a, b, *, kernel: str = DEFAULT_KERNEL, out=None):
    """Return ``a @ b`` (float32, on the GPU) computed by ``kernel``, one of ``KERNELS``."""
    _validate(a, b, kernel)
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = _empty(a, (m, n))
    elif tuple(out.shape) != (m, n) or _dtype_name(out) != "float32":
        raise ValueError(f"out must be float32 of shape {(m, n)}, got {tuple(out.shape)} {out.dtype}")
    if m == 0 or n == 0:
        return out
    if k == 0:
        _fill_zero(out)
        return out
    if kernel in NUMBA_KERNELS:
        _numba_matmul(kernel, a, b, out)
    else:
        _cupy_matmul(kernel, a, b, out)
    return out


# ------------------------------------------------------------------- numba launches

def numba_launch(kernel: str, m: int, n: int):
    """(kernel function, blocks, threads) for one of the numba kernels."""
    if kernel == "01-naive-numba":
        threads = (32, 8)               # x -> rows: the uncoalesced mapping
        return naive_kernel, (math.ceil(m / 32), math.ceil(n / 8)), threads
    if kernel == "02-coalesced-numba":
        threads = (32, 8)               # x -> columns
        return coalesced_kernel, (math.ceil(n / 32), math.ceil(m / 8)), threads
    if kernel == "03c-regtile-numba":
        return regtile_kernel, (math.ceil(n / RT_TILE), math.ceil(m / RT_TILE)), (THREADS, THREADS)
    fn, tile = ((smem_kernel, 64) if kernel == "03-smem-numba" else (smem_kernel_8x8, 128))
    return fn, (math.ceil(n / tile), math.ceil(m / tile)), (THREADS, THREADS)


def _numba_matmul(kernel, a, b, out):
    fn, blocks, threads = numba_launch(kernel, a.shape[0], b.shape[1])
    fn[blocks, threads](as_numba(a), as_numba(b), as_numba(out))


# ---------------------------------------------------------------- CUDA C launches

#: CUDA C kernels: (function name(s), block tile rows BM, columns BN, threads (x, y),
#: takes the `vec` flag, has a separate scalar version).
CUDA_C_LAUNCH = {
    "04-smem-cuda":        ("mm04_smem", 32, 32, (32, 32), False, None),
    "05-1d-blocktile":     ("mm05_blocktile1d", 64, 64, (512, 1), False, None),
    "06-2d-blocktile":     ("mm06_blocktile2d", 128, 128, (256, 1), False, None),
    "07-vectorised":       ("mm07_vectorised", 128, 128, (256, 1), True, None),
    "08-warptile":         ("mm08_warptile", 128, 128, (256, 1), False, "mm08_warptile_scalar"),
    "09-warptile-128x64":  ("mm09_warptile_128x64", 128, 64, (128, 1), False,
                            "mm09_warptile_128x64_scalar"),
    "10-warptile-128x256": ("mm10_warptile_128x256", 128, 256, (256, 1), False,
                            "mm10_warptile_128x256_scalar"),
    "11-warptile-bk8":     ("mm11_warptile_bk8", 128, 128, (256, 1), False,
                            "mm11_warptile_bk8_scalar"),
    "12-pipelined":        ("mm12_pipelined", 128, 256, (256, 1), False, "mm12_pipelined_scalar"),
}

#: Other shapes of kernel 12, compiled alongside it; ``tune`` in ``measure.py`` times them
#: next to it (they are not rungs of the ladder).
CUDA_C_TUNING = {
    "12b-pipelined-2stage":  ("mm12b_pipelined_2stage", 128, 256, (256, 1), False,
                              "mm12b_pipelined_2stage_scalar"),
    "12c-pipelined-bk8":     ("mm12c_pipelined_bk8", 128, 256, (256, 1), False,
                              "mm12c_pipelined_bk8_scalar"),
    "12d-pipelined-bk32":    ("mm12d_pipelined_bk32", 128, 256, (256, 1), False,
                              "mm12d_pipelined_bk32_scalar"),
    "12e-pipelined-256x128": ("mm12e_pipelined_256x128", 256, 128, (256, 1), False,
                              "mm12e_pipelined_256x128_scalar"),
}

#: Shapes of the kernel-12 family as in matmul.cu: (BM, BN, BK, stages). They take
#: STAGES x BK x (BM + 4 + BN) floats of dynamic shared memory (A's rows padded by 4).
PIPELINED_SHAPES = {"12-pipelined": (128, 256, 16, 3), "12b-pipelined-2stage": (128, 256, 16, 2),
                    "12c-pipelined-bk8": (128, 256, 8, 3),
                    "12d-pipelined-bk32": (128, 256, 32, 2),
                    "12e-pipelined-256x128": (256, 128, 16, 2)}


def pipelined_shared_bytes(kernel: str) -> int:
    """Bytes of dynamic shared memory a launch of ``kernel`` needs (0 for the others)."""
    if kernel not in PIPELINED_SHAPES:
        return 0
    bm, bn, bk, stages = PIPELINED_SHAPES[kernel]
    return 4 * stages * bk * (bm + 4 + bn)


def vector_ok(m: int, n: int, k: int, pointers=()) -> bool:
    """True when 16-byte loads and stores are legal: rows of A, B and C are whole float4s
    (K and N multiples of 4) and every base pointer is 16-byte aligned."""
    return k % 4 == 0 and n % 4 == 0 and all(p % 16 == 0 for p in pointers)


def cuda_c_launch(kernel: str, m: int, n: int, k: int, vec: bool):
    """(function name, grid, block, extra arguments) of one CUDA C kernel launch."""
    name, bm, bn, block, takes_flag, scalar_name = (CUDA_C_LAUNCH.get(kernel)
                                                    or CUDA_C_TUNING[kernel])
    extra = ()
    if takes_flag:
        extra = (int(vec),)
    elif scalar_name and not vec:
        name = scalar_name               # the variant without 16-byte accesses
    grid = (math.ceil(n / bn), math.ceil(m / bm))
    return name, grid, block, extra


@functools.cache
def cupy_module(device_id: int = 0, tuning: bool = False):
    """The compiled CUDA C module (NVRTC, for the current GPU's architecture), one per GPU;
    ``tuning``: the module with the other shapes of kernel 12 (``CUDA_C_TUNING``) too."""
    import cupy
    options = ("-std=c++17",) + (("-DMATMUL_TUNING",) if tuning else ())
    with cupy.cuda.Device(device_id):
        mod = cupy.RawModule(code=SOURCE.read_text(encoding="utf-8"), options=options)
        mod.compile()
    return mod


def _as_cupy(x):
    import cupy
    return x if kind(x) == "cupy" else cupy.asarray(x)    # zero-copy view of a CUDA array


def _cupy_matmul(kernel, a, b, out):
    import cupy
    ca, cb, cout = _as_cupy(a), _as_cupy(b), _as_cupy(out)
    dev = ca.device.id
    with cupy.cuda.Device(dev):
        ca, cb = cupy.ascontiguousarray(ca), cupy.ascontiguousarray(cb)  # copies only if needed
        target = cout if cout.flags.c_contiguous else cupy.empty(cout.shape, cupy.float32)
        if kernel == "cublas":
            if _tf32_enabled():
                raise RuntimeError("CUPY_TF32 is set: cupy.matmul would use TF32 tensor cores, "
                                   "not fp32; unset it for the fp32 reference")
            cupy.matmul(ca, cb, out=target)
        else:
            launch_cuda_c(kernel, ca, cb, target)
        if target is not cout:
            cout[...] = target


def launch_cuda_c(kernel: str, a, b, out):
    """Launch CUDA C ``kernel`` (a rung, or a shape of ``CUDA_C_TUNING``) on C-contiguous
    CuPy float32 arrays of matching shapes, on the current GPU; no checks of the inputs."""
    import cupy
    m, k = a.shape
    n = b.shape[1]
    vec = vector_ok(m, n, k, (a.data.ptr, b.data.ptr, out.data.ptr))
    name, grid, block, extra = cuda_c_launch(kernel, m, n, k, vec)
    if grid[1] > 65535:
        raise ValueError(f"{m} rows need {grid[1]} blocks along y, more than CUDA's "
                         f"65535; split A into row blocks or use kernel='cublas'")
    fn = cupy_module(cupy.cuda.Device().id, kernel in CUDA_C_TUNING).get_function(name)
    shared = pipelined_shared_bytes(kernel)
    if shared > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared   # above 48 KiB: ask first
    fn(grid, block, (a, b, out, np.int32(m), np.int32(n), np.int32(k),
                     *(np.int32(e) for e in extra)), shared_mem=shared)


def _tf32_enabled() -> bool:
    import os
    return os.environ.get("CUPY_TF32", "0") not in ("", "0")

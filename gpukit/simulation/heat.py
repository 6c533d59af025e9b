"""Heat: the 2-D heat equation, explicit Jacobi steps of the 5-point stencil.

    u_new[y, x] = u[y, x] + r * (u[y-1, x] + u[y+1, x] + u[y, x-1] + u[y, x+1] - 4 u[y, x])

with r = alpha dt / dx^2, stable for r <= 1/4. The edges hold their values (Dirichlet). Two
buffers take turns. Each cell update does 8 floating-point operations on 8 bytes of memory
traffic in float32 (one read, one write; the neighbours come from caches): about one operation
per byte, far below what a GPU computes per byte it can move, so the stencil is memory-bound.

The first GPU kernel gives each thread a column of ``ROWS`` cells and slides down it, keeping
the cells above and below in registers; x runs along threadIdx.x, so a warp reads 32
neighbouring cells of a row at once (coalesced). Each cell's loads wait for the store of the
cell above: numba cannot tell that ``src`` and ``dst`` are different arrays, so the compiler
keeps every load after the earlier stores. The second kernel (:func:`make_loads_first`) loads
its whole column, and the neighbours left and right, before it stores anything: all of a
thread's loads are in flight at once. The third (:func:`make_pairs`) does the same on a float32
grid seen as 64-bit words, two cells each: 8-byte loads and stores, as in float64.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda, float32, float64, uint64

from .. import device
from .meta import backend_ok, check_r, whole

#: cells per thread, stacked in y
ROWS = 4
#: threads per block: 128 along x
BLOCK = (128, 2)


# --8<-- [start:gpu]
@cuda.jit
def heat_kernel(src, dst, r):
    ny, nx = src.shape
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y) * ROWS + 1
    if x < 1 or x >= nx - 1 or y >= ny - 1:
        # an edge cell, or past the grid
        return
    up, mid = src[y - 1, x], src[y, x]
    for _ in range(ROWS):                                # slide down the column
        down = src[y + 1, x]
        lap = (((up + down) + (src[y, x - 1] + src[y, x + 1]))
               - ((mid + mid) + (mid + mid)))
        dst[y, x] = mid + r * lap
        y += 1
        if y >= ny - 1:
            return
        up, mid = mid, down
# --8<-- [end:gpu]


# --8<-- [start:cpu]
@numba.njit(parallel=True, cache=True)
def heat_step_cpu(src, dst, r):
    ny, nx = src.shape
    for y in numba.prange(1, ny - 1):                   # rows spread over all cores
        for x in range(1, nx - 1):                      # contiguous x: SIMD lanes
            mid = src[y, x]
            lap = ((src[y - 1, x] + src[y + 1, x]) + (src[y, x - 1] + src[y, x + 1])) - ((mid + mid) + (mid + mid))
            dst[y, x] = mid + r * lap
# --8<-- [end:cpu]


# --8<-- [start:loads-first]
def make_loads_first(rows: int, dtype):
    """A heat kernel whose threads each load a column of ``rows`` cells, the rows above
    and below it, and its left and right neighbours, before storing anything."""
    R, R2 = rows, rows + 2

    @cuda.jit
    def heat_loads_first(src, dst, r):
        ny, nx = src.shape
        x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        y0 = (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y) * R + 1
        if x < 1 or x >= nx - 1 or y0 >= ny - 1:
            return
        # the last column of a grid moves up to end at the last inner row: it redoes a
        # few cells of the column above, writing the same values (needs ny >= R + 2)
        y0 = min(y0, ny - 1 - R)
        # unsigned indices: numba adds no wrap-around of negative ones
        top, xc, xl, xr = uint64(y0 - 1), uint64(x), uint64(x - 1), uint64(x + 1)
        col = cuda.local.array(R2, dtype)       # the column, a row above and below
        left = cuda.local.array(R, dtype)
        right = cuda.local.array(R, dtype)
        for k in range(R2):                     # every load first: all in flight
            col[k] = src[top + uint64(k), xc]
        for k in range(R):
            left[k] = src[top + uint64(k + 1), xl]
            right[k] = src[top + uint64(k + 1), xr]
        for k in range(R):                              # then the stores
            up, mid, down = col[k], col[k + 1], col[k + 2]
            lap = (((up + down) + (left[k] + right[k]))
                   - ((mid + mid) + (mid + mid)))
            dst[top + uint64(k + 1), xc] = mid + r * lap
    return heat_loads_first
# --8<-- [end:loads-first]


LOW = np.uint64(0xFFFFFFFF)
HIGH = np.uint64(32)
if device.simulator_enabled():                         # the simulator has no libdevice
    def as_float(i):
        return np.int32(i).view(np.float32)

    def as_int(f):
        return np.float32(f).view(np.int32)
else:
    from numba.cuda.libdevice import float_as_int as as_int   # bits, no conversion
    from numba.cuda.libdevice import int_as_float as as_float


@cuda.jit(device=True, inline=True)
def low(w):
    """The first float32 of a 64-bit word that holds two (little-endian)."""
    return as_float(numba.int32(w & LOW))


@cuda.jit(device=True, inline=True)
def high(w):
    return as_float(numba.int32(w >> HIGH))


@cuda.jit(device=True, inline=True)
def pair(a, b):
    """Two float32 as one 64-bit word, ``a`` first."""
    return uint64(numba.uint32(as_int(a))) | (uint64(numba.uint32(as_int(b))) << HIGH)


# --8<-- [start:pairs]
def make_pairs(rows: int):
    """The loads-first kernel on float32 grids of even width, seen as 64-bit words:
    each thread updates two neighbouring cells per row with 8-byte loads and
    stores, half as many memory instructions per byte as 4-byte ones."""
    R, R2 = rows, rows + 2

    @cuda.jit
    def heat_pairs(src, dst, r):                        # uint64 views: (ny, nx / 2)
        ny, npair = src.shape
        p = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        y0 = (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y) * R + 1
        if p >= npair or y0 >= ny - 1:
            return
        y0 = min(y0, ny - 1 - R)                         # as in heat_loads_first
        top, pc = uint64(y0 - 1), uint64(p)
        pl, pr = uint64(max(p - 1, 0)), uint64(min(p + 1, npair - 1))
        col = cuda.local.array(R2, uint64)
        left = cuda.local.array(R, uint64)
        right = cuda.local.array(R, uint64)
        for k in range(R2):
            col[k] = src[top + uint64(k), pc]
        for k in range(R):
            left[k] = src[top + uint64(k + 1), pl]
            right[k] = src[top + uint64(k + 1), pr]
        for k in range(R):
            m0, m1 = low(col[k + 1]), high(col[k + 1])  # this word's two cells
            lap0 = (((low(col[k]) + low(col[k + 2])) + (high(left[k]) + m1))
                    - ((m0 + m0) + (m0 + m0)))
            lap1 = (((high(col[k]) + high(col[k + 2])) + (m0 + low(right[k])))
                    - ((m1 + m1) + (m1 + m1)))
            if p > 0:                                   # cell 0 is the left edge
                m0 = m0 + r * lap0
            if p < npair - 1:                           # cell nx - 1, the right one
                m1 = m1 + r * lap1
            dst[top + uint64(k + 1), pc] = pair(m0, m1)
    return heat_pairs
# --8<-- [end:pairs]


#: the GPU kernels: (cells per thread, threads per block); "sliding column" is the first,
#: "pairs" runs on float32 grids of even width (others take "loads first")
VARIANTS = {"sliding column": (ROWS, BLOCK), "loads first": (8, (128, 2)),
            "pairs": (8, (128, 2))}
#: the kernel :class:`Heat` runs unless told otherwise
TUNED = "pairs"
_KERNELS: dict = {}


def kernel_for(variant: str, dtype):
    """The compiled kernel of one of :data:`VARIANTS` for ``dtype`` (made once per process)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown heat kernel {variant!r}; choose one of {', '.join(VARIANTS)}")
    if variant == "sliding column":
        return heat_kernel
    key = (variant, np.dtype(dtype).name)
    if key not in _KERNELS:
        rows = VARIANTS[variant][0]
        _KERNELS[key] = (make_pairs(rows) if variant == "pairs" else
                         make_loads_first(rows, float32 if key[1] == "float32" else float64))
    return _KERNELS[key]


def runs(variant: str, shape, dtype) -> str:
    """The kernel that runs for ``variant`` on a grid of ``shape`` and ``dtype``: a grid
    lower than a column takes the first kernel; "pairs" needs float32 and an even width."""
    if variant == "sliding column" or shape[0] < VARIANTS[variant][0] + 2:
        return "sliding column"
    if variant == "pairs" and (np.dtype(dtype) != np.float32 or shape[1] % 2):
        return "loads first"
    return variant


def grid_for(shape, rows: int = ROWS, block=BLOCK) -> tuple[int, int]:
    ny, nx = shape
    cols = (max(ny - 2, 1) + rows - 1) // rows
    return (nx + block[0] - 1) // block[0], (cols + block[1] - 1) // block[1]


class Heat:
    """A temperature grid on one backend; ``step(n)`` advances it, ``u`` reads it back."""

    def __init__(self, u0, *, r: float = 0.25, backend: str = "numba-cuda", kernel: str = TUNED):
        u0 = np.ascontiguousarray(u0)
        if u0.dtype not in (np.float32, np.float64):
            raise ValueError(f"the grid must be float32 or float64, got {u0.dtype}")
        if u0.ndim != 2 or min(u0.shape) < 3:
            raise ValueError(f"the grid must be 2-D with at least 3 x 3 cells, got shape {u0.shape}")
        self.backend, self.r = backend_ok(backend), u0.dtype.type(check_r(r))
        if kernel not in VARIANTS:
            raise ValueError(f"unknown heat kernel {kernel!r}; choose one of {', '.join(VARIANTS)}")
        self.kernel = kernel if backend == "numba-cuda" else "cpu"
        if backend == "numba-cuda":
            self._a, self._b = cuda.to_device(u0), cuda.to_device(u0)   # edges in both buffers
        else:
            self._a, self._b = u0.copy(), u0.copy()
        self.steps = 0

    @property
    def shape(self):
        return self._a.shape

    def step(self, n: int = 1) -> "Heat":
        n = whole("steps", n, 0)
        if self.backend == "numba-cuda":
            kernel = runs(self.kernel, self.shape, self._a.dtype)
            rows, block = VARIANTS[kernel]
            fn = kernel_for(kernel, self._a.dtype)
            a, b = self._a, self._b
            if kernel == "pairs":                       # two float32 cells per 64-bit word
                a, b = a.view(np.uint64), b.view(np.uint64)
            grid = grid_for(a.shape, rows, block)
            for _ in range(n):
                fn[grid, block](a, b, self.r)
                a, b = b, a
            if n % 2:
                self._a, self._b = self._b, self._a
        else:
            for _ in range(n):
                heat_step_cpu(self._a, self._b, self.r)
                self._a, self._b = self._b, self._a
        self.steps += n
        return self

    @property
    def u(self) -> np.ndarray:
        return self._a.copy_to_host() if hasattr(self._a, "copy_to_host") else self._a.copy()


def sine_mode(nx: int, ny: int, kx: int = 1, ky: int = 1, dtype="float32") -> np.ndarray:
    """sin(kx pi x/(nx-1)) sin(ky pi y/(ny-1)): zero on the edges, an eigenvector of the stencil."""
    x, y = np.arange(nx) / (nx - 1), np.arange(ny) / (ny - 1)
    return (np.sin(ky * np.pi * y)[:, None] * np.sin(kx * np.pi * x)[None, :]).astype(dtype)


def sine_decay(nx: int, ny: int, kx: int, ky: int, r: float, steps: int) -> float:
    """The factor by which the sine mode shrinks in ``steps`` exact steps of the discrete scheme:
    (1 + r lambda)^steps, lambda = -4 sin^2(kx pi / 2(nx-1)) - 4 sin^2(ky pi / 2(ny-1)), the
    stencil's eigenvalue (its continuous limit is exp(-k^2 alpha t))."""
    lam = -4 * np.sin(kx * np.pi / (2 * (nx - 1))) ** 2 - 4 * np.sin(ky * np.pi / (2 * (ny - 1))) ** 2
    return float((1 + r * lam) ** steps)


def hot_spots(nx: int, ny: int, dtype="float32", seed: int = 0) -> np.ndarray:
    """A cold plate with a few hot discs and a hot left edge: something to watch diffuse."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ny, 0:nx] / max(nx, ny)
    u = np.zeros((ny, nx))
    for _ in range(6):
        cx, cy, rad = rng.uniform(0.15, 0.85) * nx / max(nx, ny), rng.uniform(0.15, 0.85) * ny / max(nx, ny), rng.uniform(0.03, 0.08)
        u[(x - cx) ** 2 + (y - cy) ** 2 < rad ** 2] = 1.0
    u[:, 0] = 1.0
    return u.astype(dtype)


def heat(nx: int = 512, ny: int = 512, steps: int = 1000, *, r: float = 0.25, backend: str = "numba-cuda",
         dtype="float32", initial: str = "hot-spots") -> Heat:
    """``steps`` heat steps from a hot-spots or a sine-mode start; returns the :class:`Heat`."""
    nx, ny, steps = whole("nx", nx, 3), whole("ny", ny, 3), whole("steps", steps, 0)
    if initial == "hot-spots":
        u0 = hot_spots(nx, ny, dtype)
    elif initial == "sine":
        u0 = sine_mode(nx, ny, 1, 1, dtype)
    else:
        raise ValueError(f"initial must be 'hot-spots' or 'sine', got {initial!r}")
    return Heat(u0, r=r, backend=backend).step(steps)

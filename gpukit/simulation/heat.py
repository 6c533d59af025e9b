"""Heat: the 2-D heat equation, explicit Jacobi steps of the 5-point stencil.

    u_new[y, x] = u[y, x] + r * (u[y-1, x] + u[y+1, x] + u[y, x-1] + u[y, x+1] - 4 u[y, x])

with r = alpha dt / dx^2, stable for r <= 1/4. The edges hold their values (Dirichlet). Two
buffers take turns. Each cell update does 8 floating-point operations on 8 bytes of memory
traffic in float32 (one read, one write; the neighbours come from caches): about one operation
per byte, far below what a GPU computes per byte it can move, so the stencil is memory-bound.

The GPU kernel gives each thread a column of ``ROWS`` cells and slides down it, keeping the
cells above and below in registers; x runs along threadIdx.x, so a warp reads 32 neighbouring
cells of a row at once (coalesced).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

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


def grid_for(shape) -> tuple[int, int]:
    ny, nx = shape
    rows = (max(ny - 2, 1) + ROWS - 1) // ROWS
    return (nx + BLOCK[0] - 1) // BLOCK[0], (rows + BLOCK[1] - 1) // BLOCK[1]


class Heat:
    """A temperature grid on one backend; ``step(n)`` advances it, ``u`` reads it back."""

    def __init__(self, u0, *, r: float = 0.25, backend: str = "numba-cuda"):
        u0 = np.ascontiguousarray(u0)
        if u0.dtype not in (np.float32, np.float64):
            raise ValueError(f"the grid must be float32 or float64, got {u0.dtype}")
        if u0.ndim != 2 or min(u0.shape) < 3:
            raise ValueError(f"the grid must be 2-D with at least 3 x 3 cells, got shape {u0.shape}")
        self.backend, self.r = backend_ok(backend), u0.dtype.type(check_r(r))
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
            grid = grid_for(self.shape)
            for _ in range(n):
                heat_kernel[grid, BLOCK](self._a, self._b, self.r)
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

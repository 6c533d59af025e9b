"""Puzzle 17, 2-D stencil: the sum of each element and its four neighbours,
via a shared tile.
"""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4
# the tile with its border: a constant shape, computed out here
SIDE = TILE + 2


@cuda.jit
def stencil5(out, a):
    """Load the tile with a one-element border, then add five neighbours."""
    tile = cuda.shared.array((SIDE, SIDE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    top = cuda.blockIdx.y * TILE - 1
    left = cuda.blockIdx.x * TILE - 1
    k = ty * TILE + tx
    while k < SIDE * SIDE:
        y = k // SIDE
        x = k % SIDE
        r = top + y
        c = left + x
        if r >= 0 and r < rows and c >= 0 and c < cols:
            tile[y, x] = a[r, c]
        else:
            tile[y, x] = 0
        k += TILE * TILE
    cuda.syncthreads()
    r = top + 1 + ty
    c = left + 1 + tx
    if r < rows and c < cols:
        out[r, c] = (tile[ty + 1, tx + 1] + tile[ty, tx + 1] + tile[ty + 2, tx + 1]
                     + tile[ty + 1, tx] + tile[ty + 1, tx + 2])

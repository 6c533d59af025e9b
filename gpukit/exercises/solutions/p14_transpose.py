"""Puzzle 14, transpose through a padded shared tile: both global accesses coalesced."""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4
# one column more: no bank conflicts
PADDED = TILE + 1


@cuda.jit
def transpose(out, a):
    """Read a tile along rows, write it turned, along rows again."""
    tile = cuda.shared.array((TILE, PADDED), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * TILE + ty
    c = cuda.blockIdx.x * TILE + tx
    if r < a.shape[0] and c < a.shape[1]:
        tile[ty, tx] = a[r, c]
    cuda.syncthreads()
    r = cuda.blockIdx.x * TILE + ty          # a row of out is a column of a
    c = cuda.blockIdx.y * TILE + tx
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = tile[tx, ty]

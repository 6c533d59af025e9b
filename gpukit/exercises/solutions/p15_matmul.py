"""Puzzle 15, tiled matmul: c = a @ b, one TILE x TILE tile of c per block."""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4


@cuda.jit
def matmul(c, a, b):
    """Walk along K one tile at a time; each loaded element is used TILE times."""
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    m, k_total = a.shape
    n = b.shape[1]
    acc = numba.float32(0)
    for t in range((k_total + TILE - 1) // TILE):
        k = t * TILE + tx
        if row < m and k < k_total:
            sa[ty, tx] = a[row, k]
        else:
            sa[ty, tx] = 0
        k = t * TILE + ty
        if k < k_total and col < n:
            sb[ty, tx] = b[k, col]
        else:
            sb[ty, tx] = 0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc

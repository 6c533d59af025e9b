# puzzle: 15
# expect: fail: reached by different code paths
# class: 3 (careless: the guard around the loop keeps edge threads from the barriers)
import numba
from numba import cuda

TILE = 4


@cuda.jit
def matmul(c, a, b):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    m, k_total = a.shape
    n = b.shape[1]
    if row < m and col < n:
        acc = numba.float32(0)
        for t in range((k_total + TILE - 1) // TILE):
            k = t * TILE + tx
            sa[ty, tx] = a[row, k] if k < k_total else 0
            k = t * TILE + ty
            sb[ty, tx] = b[k, col] if k < k_total else 0
            cuda.syncthreads()
            for j in range(TILE):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        c[row, col] = acc

# puzzle: 15
# expect: pass
# legit: the tiled matmul with its inner product in a device function
import numba
from numba import cuda

TILE = 4


@cuda.jit(device=True)
def partial(sa, sb, ty, tx):
    acc = numba.float32(0)
    for j in range(TILE):
        acc += sa[ty, j] * sb[j, tx]
    return acc


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
    acc = numba.float32(0)
    for t in range((k_total + TILE - 1) // TILE):
        k = t * TILE + tx
        sa[ty, tx] = a[row, k] if row < m and k < k_total else 0
        k = t * TILE + ty
        sb[ty, tx] = b[k, col] if k < k_total and col < n else 0
        cuda.syncthreads()
        acc += partial(sa, sb, ty, tx)
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc

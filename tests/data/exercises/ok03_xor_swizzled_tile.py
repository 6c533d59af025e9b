# puzzle: 14
# expect: pass
# legit: a transpose through an XOR-swizzled tile instead of a padded one
import numba
from numba import cuda

TILE = 4


@cuda.jit
def transpose(out, a):
    tile = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * TILE + ty
    c = cuda.blockIdx.x * TILE + tx
    if r < a.shape[0] and c < a.shape[1]:
        tile[ty, tx ^ ty] = a[r, c]
    cuda.syncthreads()
    r = cuda.blockIdx.x * TILE + ty
    c = cuda.blockIdx.y * TILE + tx
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = tile[tx, ty ^ tx]

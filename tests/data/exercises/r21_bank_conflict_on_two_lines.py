# puzzle: 14
# expect: fail: bank conflict
# class: 5 (the conflicting read of an unpadded tile, split over two source lines)
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
        tile[ty, tx] = a[r, c]
    cuda.syncthreads()
    r = cuda.blockIdx.x * TILE + ty
    c = cuda.blockIdx.y * TILE + tx
    if r < out.shape[0] and c < out.shape[1]:
        if tx % 2 == 0:
            out[r, c] = tile[tx, ty]
        else:
            out[r, c] = tile[tx, ty]

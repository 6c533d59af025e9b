# puzzle: 17
# expect: fail: trial
# class: careless (no guard on the neighbours at the edges of the matrix)
from numba import cuda


@cuda.jit
def stencil5(out, a):
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + a[r - 1, c] + a[r + 1, c] + a[r, c - 1] + a[r, c + 1]

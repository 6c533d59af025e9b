"""Puzzle 9, dot product: out[0] = sum(a * b) with one block."""
import numba
from numba import cuda

# threads per block: the checker sets it
TPB = 8


@cuda.jit
def dot(out, a, b):
    """Each thread sums a strided part; thread 0 adds the partial sums."""
    s = cuda.shared.array(TPB, numba.float32)
    l = cuda.threadIdx.x
    acc = numba.float32(0)
    for i in range(l, a.shape[0], TPB):
        acc += a[i] * b[i]
    s[l] = acc
    cuda.syncthreads()
    if l == 0:
        total = numba.float32(0)
        for k in range(TPB):
            total += s[k]
        out[0] = total

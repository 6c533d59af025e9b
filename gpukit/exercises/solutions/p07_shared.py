"""Puzzle 7, shared memory: out[i] = a[i ^ 1],
each thread reading only its own element.
"""
import numba
from numba import cuda

# threads per block: the checker sets it
TPB = 8


@cuda.jit
def swap_pairs(out, a):
    """Exchange values through the block's shared memory."""
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    n = a.shape[0]
    if i < n:
        s[l] = a[i]
    cuda.syncthreads()
    if i < n:
        if (i ^ 1) < n:
            out[i] = s[l ^ 1]
        else:
            out[i] = s[l]

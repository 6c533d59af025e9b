"""Puzzle 10, block reduction: out[block] = the sum of the block's elements,
as a tree.
"""
import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def block_sum(out, a):
    """Halve the active threads at each step; thread 0 ends with the block's sum."""
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    s[l] = v
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if l < stride:
            v += s[l + stride]
            s[l] = v
        cuda.syncthreads()
        stride //= 2
    if l == 0:
        out[cuda.blockIdx.x] = v

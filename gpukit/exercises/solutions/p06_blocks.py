"""Puzzle 6, blocks: out[i] = a[i] + 10 over a grid of blocks."""
from numba import cuda


@cuda.jit
def blocks_add_ten(out, a):
    """One thread per element, in as many blocks as needed."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < a.shape[0]:
        out[i] = a[i] + 10

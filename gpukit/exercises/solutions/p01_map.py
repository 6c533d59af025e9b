"""Puzzle 1, map: out[i] = a[i] + 10, one thread per element, one block."""
from numba import cuda


@cuda.jit
def map_add_ten(out, a):
    """One thread per element."""
    i = cuda.threadIdx.x
    out[i] = a[i] + 10

"""Puzzle 2, zip: out[i] = a[i] + b[i], one thread per element, one block."""
from numba import cuda


@cuda.jit
def zip_add(out, a, b):
    """One thread per element."""
    i = cuda.threadIdx.x
    out[i] = a[i] + b[i]

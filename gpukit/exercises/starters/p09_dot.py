"""Puzzle 9, dot product: out[0] = sum(a * b) with one block.

Write the kernel's body, then check it: gpukit exercises check 9 p09_dot.py
"""
import numba
from numba import cuda

# threads per block: the checker sets it
TPB = 8


@cuda.jit
def dot(out, a, b):
    """Each thread sums a strided part; thread 0 adds the partial sums."""
    # your code here
    pass

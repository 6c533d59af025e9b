"""Puzzle 1, map: out[i] = a[i] + 10, one thread per element, one block.

Write the kernel's body, then check it: gpukit exercises check 1 p01_map.py
"""
from numba import cuda


@cuda.jit
def map_add_ten(out, a):
    """One thread per element."""
    # your code here
    pass

"""Puzzle 6, blocks: out[i] = a[i] + 10 over a grid of blocks.

Write the kernel's body, then check it: gpukit exercises check 6 p06_blocks.py
"""
from numba import cuda


@cuda.jit
def blocks_add_ten(out, a):
    """One thread per element, in as many blocks as needed."""
    # your code here
    pass

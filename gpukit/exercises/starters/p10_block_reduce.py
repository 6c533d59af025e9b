"""Puzzle 10, block reduction: out[block] = the sum of the block's elements, as a tree.

Write the kernel's body, then check it: gpukit exercises check 10 p10_block_reduce.py
"""
import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def block_sum(out, a):
    """Halve the active threads at each step; thread 0 ends with the block's sum."""
    # your code here
    pass

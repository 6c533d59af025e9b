"""Puzzle 20, warp shuffles: out[w] = the sum of warp w's 32 elements,
without shared memory.

Write the kernel's body, then check it: gpukit exercises check 20 p20_warp_reduce.py
"""
import numba
from numba import cuda


@cuda.jit
def warp_sum(out, a):
    """Halve the distance at each step; lane 0 ends with the warp's sum."""
    # your code here
    pass

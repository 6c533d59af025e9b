"""Puzzle 12, prefix scan: an inclusive scan inside each block (Hillis-Steele).

Write the kernel's body, then check it: gpukit exercises check 12 p12_scan.py
"""
import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def block_scan(out, a):
    """At step d, thread l adds the value d places to its left."""
    # your code here
    pass

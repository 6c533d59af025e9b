"""Puzzle 16, row softmax: one block per row, the maximum and the sum in one pass.

Write the kernel's body, then check it: gpukit exercises check 16 p16_softmax.py
"""
import math

import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def softmax_rows(out, a):
    """An online (max, sum) per thread, a tree over the block,
    then one pass to write."""
    # your code here
    pass

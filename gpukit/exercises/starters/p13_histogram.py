"""Puzzle 13, histogram: hist[v] counts the elements equal to v, with atomics.

Write the kernel's body, then check it: gpukit exercises check 13 p13_histogram.py
"""
from numba import cuda


@cuda.jit
def histogram(hist, values):
    """One thread per element, one atomic increment each."""
    # your code here
    pass

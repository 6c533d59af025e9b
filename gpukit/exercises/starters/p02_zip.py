"""Puzzle 2, zip: out[i] = a[i] + b[i], one thread per element, one block.

Write the kernel's body, then check it: gpukit exercises check 2 p02_zip.py
"""
from numba import cuda


@cuda.jit
def zip_add(out, a, b):
    """One thread per element."""
    # your code here
    pass

"""Puzzle 3, guard: out[i] = a[i] + 10 with more threads than elements.

Write the kernel's body, then check it: gpukit exercises check 3 p03_guard.py
"""
from numba import cuda


@cuda.jit
def guard_add_ten(out, a):
    """Threads past the end of `a` do nothing."""
    # your code here
    pass

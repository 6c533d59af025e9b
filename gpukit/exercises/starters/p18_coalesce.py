"""Puzzle 18, coalescing: out[r, c] = a[r, c] + bias[c],
neighbouring threads on neighbouring columns.

This kernel is right but slow: fix it, then check it:

    gpukit exercises check 18 p18_coalesce.py
"""
from numba import cuda


@cuda.jit
def add_bias(out, a, bias):
    """x picks the row here, so threads with neighbouring x
    are a whole row apart: fix it."""
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + bias[c]
